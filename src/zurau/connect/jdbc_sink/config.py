"""The PostgreSQL sink's settings: Debezium's JDBC sink names, with Confluent's JDBC sink names as
aliases where they mean the same thing.

=========================  ==============================  ==========================================
Debezium                   Confluent alias                 meaning
=========================  ==============================  ==========================================
``connection.url``         (same)                          ``jdbc:postgresql://host[:port]/db[?k=v]``
``connection.username``    ``connection.user``             login (else ``user=`` in the URL)
``connection.password``    (same)                          password (else ``password=`` in the URL)
``insert.mode``            (same)                          ``insert``, ``upsert`` or ``update``
``primary.key.mode``       ``pk.mode``                     ``none``, ``kafka``, ``record_key``,
                                                           ``record_value``
``primary.key.fields``     ``pk.fields``                   which fields form the key
``delete.enabled``         (same)                          tombstones (and Debezium ``op=d``) delete
``schema.evolution``       ``auto.create``/``auto.evolve``  ``basic``: create tables, add columns
``table.name.format``      (same); ``collection.name.      the target table; ``${topic}`` is the topic
                           format`` (Debezium 2.7)         with ``.`` replaced by ``_``
=========================  ==============================  ==========================================

When both names of a setting are given the Debezium one wins. ``table.name.format`` may name a
schema (``replica.${topic}``); otherwise the table goes to the connection's current schema
(``currentSchema=`` in the URL sets it). ``delete.enabled`` needs ``primary.key.mode=record_key``
and ``upsert``/``update`` need a primary key mode other than ``none``, as in Debezium.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zurau.config import ConfigDef, ConfigException, ConfigType, ConfigValue, Importance, Range, valid_string

INSERT_MODES = ("insert", "upsert", "update")
PK_MODES = ("none", "kafka", "record_key", "record_value")
EVOLUTION_MODES = ("none", "basic")
URL_PREFIX = "jdbc:postgresql://"
GROUP_CONNECTION = "Connection"
GROUP_WRITES = "Writes"
GROUP_DDL = "DDL"


def _url(name: str, value: Any) -> None:
    if value is None:
        return
    try:
        parse_jdbc_url(str(value))
    except ConfigException as e:
        raise ConfigException(f"Invalid value {value} for configuration {name}: {e}") from None


def _optional_choice(*allowed: str) -> Any:
    check = valid_string(*allowed)

    def validate(name: str, value: Any) -> None:
        if value is not None:
            check(name, value)
    return validate


CONFIG_DEF = (
    ConfigDef()
    .define("connection.url", ConfigType.STRING, validator=_url, importance=Importance.HIGH, group=GROUP_CONNECTION,
            documentation="The PostgreSQL JDBC URL: jdbc:postgresql://host[:port]/database[?user=..&password=..]")
    .define("connection.username", ConfigType.STRING, None, importance=Importance.HIGH, group=GROUP_CONNECTION,
            documentation="The database user (Debezium's name).")
    .define("connection.user", ConfigType.STRING, None, importance=Importance.LOW, group=GROUP_CONNECTION,
            documentation="Confluent's name of connection.username.")
    .define("connection.password", ConfigType.PASSWORD, None, importance=Importance.HIGH, group=GROUP_CONNECTION,
            documentation="The database password.")
    .define("insert.mode", ConfigType.STRING, "insert", validator=valid_string(*INSERT_MODES),
            importance=Importance.HIGH, group=GROUP_WRITES,
            documentation="insert: plain INSERT; upsert: INSERT .. ON CONFLICT (key) DO UPDATE; update: UPDATE by key.")
    .define("primary.key.mode", ConfigType.STRING, None, validator=_optional_choice(*PK_MODES),
            importance=Importance.HIGH, group=GROUP_WRITES,
            documentation="Where the primary key comes from: none, kafka (topic/partition/offset), record_key, "
                          "record_value (default none).")
    .define("pk.mode", ConfigType.STRING, None, validator=_optional_choice(*PK_MODES), importance=Importance.LOW,
            group=GROUP_WRITES, documentation="Confluent's name of primary.key.mode.")
    .define("primary.key.fields", ConfigType.LIST, None, importance=Importance.MEDIUM, group=GROUP_WRITES,
            documentation="The key's fields (record_key, record_value) or the three column names (kafka); "
                          "empty: every field.")
    .define("pk.fields", ConfigType.LIST, None, importance=Importance.LOW, group=GROUP_WRITES,
            documentation="Confluent's name of primary.key.fields.")
    .define("delete.enabled", ConfigType.BOOLEAN, False, importance=Importance.MEDIUM, group=GROUP_WRITES,
            documentation="Delete the row of a tombstone's key (needs primary.key.mode=record_key).")
    .define("schema.evolution", ConfigType.STRING, None, validator=_optional_choice(*EVOLUTION_MODES),
            importance=Importance.MEDIUM, group=GROUP_DDL,
            documentation="basic: create missing tables and add missing columns; none: neither (default).")
    .define("auto.create", ConfigType.BOOLEAN, None, importance=Importance.LOW, group=GROUP_DDL,
            documentation="Confluent: create missing tables.")
    .define("auto.evolve", ConfigType.BOOLEAN, None, importance=Importance.LOW, group=GROUP_DDL,
            documentation="Confluent: add missing columns.")
    .define("table.name.format", ConfigType.STRING, "${topic}", importance=Importance.MEDIUM, group=GROUP_DDL,
            documentation="The target table (optionally schema.table); ${topic} is the topic, dots as underscores.")
    .define("collection.name.format", ConfigType.STRING, None, importance=Importance.LOW, group=GROUP_DDL,
            documentation="Debezium 2.7's name of table.name.format.")
    .define("max.retries", ConfigType.INT, 10, validator=Range.at_least(0), importance=Importance.LOW,
            group=GROUP_CONNECTION, documentation="Times a batch is retried after the connection to PostgreSQL "
                                                  "broke (Confluent's name).")
    .define("retry.backoff.ms", ConfigType.INT, 3000, validator=Range.at_least(0), importance=Importance.LOW,
            group=GROUP_CONNECTION, documentation="Wait before reconnecting and retrying a batch.")
    .define("batch.size", ConfigType.INT, 500, validator=Range.at_least(1), importance=Importance.LOW,
            group=GROUP_WRITES, documentation="Most rows sent to the server in one round trip.")
)


@dataclass(frozen=True)
class ConnectionTarget:
    """Where to connect, from a JDBC URL and the login settings (psycopg2 keyword arguments)."""

    host: str
    port: int
    dbname: str
    user: str | None = None
    password: str | None = None
    current_schema: str | None = None

    def connect_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"host": self.host, "port": self.port, "dbname": self.dbname,
                               "application_name": "zurau-jdbc-sink"}
        if self.user:
            out["user"] = self.user
        if self.password:
            out["password"] = self.password
        if self.current_schema:
            out["options"] = f"-c search_path={self.current_schema}"
        return out


def parse_jdbc_url(url: str) -> ConnectionTarget:
    """``jdbc:postgresql://host[:port]/database[?user=..&password=..&currentSchema=..]`` (the first
    host of a multi-host URL is used)."""
    if not url.startswith(URL_PREFIX):
        raise ConfigException(f"only PostgreSQL URLs ({URL_PREFIX}host[:port]/database) are supported")
    rest = url[len(URL_PREFIX):]
    hosts, slash, tail = rest.partition("/")
    dbname, _, query = tail.partition("?")
    if not slash or not dbname:
        raise ConfigException("the URL names no database (jdbc:postgresql://host[:port]/database)")
    first = hosts.split(",")[0]
    if first.startswith("["):  # [ipv6]:port
        host, _, port_text = first[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, _, port_text = first.partition(":")
    host = host or "localhost"
    try:
        port = int(port_text) if port_text else 5432
    except ValueError:
        raise ConfigException(f"invalid port {port_text!r}") from None
    params = dict(urllib.parse.parse_qsl(query))
    return ConnectionTarget(host, port, urllib.parse.unquote(dbname), params.get("user"), params.get("password"),
                            params.get("currentSchema"))


@dataclass(frozen=True)
class SinkConfig:
    """The parsed settings (Debezium names resolved over Confluent aliases)."""

    target: ConnectionTarget
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    delete_enabled: bool
    auto_create: bool
    auto_evolve: bool
    table_name_format: str
    batch_size: int
    max_retries: int = 10
    retry_backoff_ms: int = 3000

    @staticmethod
    def from_props(props: Mapping[str, Any]) -> SinkConfig:
        """Parse ``props``; raises :class:`ConfigException` naming the first bad setting."""
        c = CONFIG_DEF.parse(props)
        errors = _cross_check(c)
        if errors:
            name, message = errors[0]
            raise ConfigException(f"Invalid value {c.get(name)} for configuration {name}: {message}")
        base = parse_jdbc_url(c["connection.url"])
        user = c["connection.username"] or c["connection.user"] or base.user
        password = c["connection.password"] if c["connection.password"] is not None else base.password
        target = ConnectionTarget(base.host, base.port, base.dbname, user, password, base.current_schema)
        evolution = c["schema.evolution"]
        basic = evolution == "basic"
        return SinkConfig(
            target=target,
            insert_mode=str(c["insert.mode"]).lower(),
            pk_mode=_pk_mode(c),
            pk_fields=tuple(f for f in (_pk_fields(c) or []) if f),
            delete_enabled=bool(c["delete.enabled"]),
            auto_create=basic or (evolution is None and bool(c["auto.create"])),
            auto_evolve=basic or (evolution is None and bool(c["auto.evolve"])),
            table_name_format=c["collection.name.format"] or c["table.name.format"],
            batch_size=c["batch.size"],
            max_retries=c["max.retries"],
            retry_backoff_ms=c["retry.backoff.ms"],
        )


def _pk_mode(c: Mapping[str, Any]) -> str:
    return str(c.get("primary.key.mode") or c.get("pk.mode") or "none").lower()


def _pk_fields(c: Mapping[str, Any]) -> list[str] | None:
    fields = c.get("primary.key.fields")
    return fields if fields is not None else c.get("pk.fields")


def _cross_check(c: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Errors that span settings, as ``(setting, message)``."""
    errors: list[tuple[str, str]] = []
    pk_mode = _pk_mode(c)
    pk_key = "primary.key.mode" if c.get("primary.key.mode") or not c.get("pk.mode") else "pk.mode"
    if str(c.get("insert.mode", "insert")).lower() in ("upsert", "update") and pk_mode == "none":
        errors.append(("insert.mode", f"insert.mode {c.get('insert.mode')} needs a primary key: set {pk_key} "
                                      "to kafka, record_key or record_value"))
    if c.get("delete.enabled") and pk_mode != "record_key":
        errors.append(("delete.enabled", f"delete.enabled=true needs {pk_key}=record_key"))
    fields = _pk_fields(c) or []
    if pk_mode == "kafka" and fields and len([f for f in fields if f]) != 3:
        errors.append(("primary.key.fields", "primary.key.mode=kafka takes three column names "
                                             "(topic, partition, offset) or none"))
    return errors


def validate_config(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Connect's per-setting validation plus the cross-setting checks."""
    values = CONFIG_DEF.validate(props)
    if any(cv.errors for cv in values):
        return values
    try:
        parsed = CONFIG_DEF.parse(props)
    except ConfigException:
        return values
    by_name = {cv.name: cv for cv in values}
    for name, message in _cross_check(parsed):
        by_name[name].errors.append(message)
    return values
