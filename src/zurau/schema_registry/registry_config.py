"""The registry's configuration, with Confluent Schema Registry's property names.

* ``listeners`` (default ``http://127.0.0.1:8081``): the first listener is served (http only);
* ``kafkastore.bootstrap.servers`` (default ``127.0.0.1:9092``; a ``PLAINTEXT://`` prefix is
  accepted and dropped);
* ``kafkastore.topic`` (default ``_schemas``), ``kafkastore.topic.replication.factor`` (default 3,
  capped at the number of live brokers when the topic is created);
* ``kafkastore.timeout.ms`` (default 500 in Confluent; here the time a write waits to be read
  back, default 10000), ``kafkastore.init.timeout.ms`` (default 60000);
* ``schema.compatibility.level`` (default ``backward``; Confluent also reads the older
  ``avro.compatibility.level``);
* ``max.request.bytes`` (Zurau's, default 16 MiB): larger request bodies get HTTP 413.

The store's Kafka clients (producer, reader and group membership) connect with Confluent's
``kafkastore.``-prefixed client security settings: ``kafkastore.security.protocol`` (PLAINTEXT,
SSL, SASL_PLAINTEXT, SASL_SSL), ``kafkastore.ssl.truststore.location`` /
``kafkastore.ssl.keystore.location`` with ``kafkastore.ssl.*.type=PEM`` (or librdkafka's
``kafkastore.ssl.ca.location``, ``kafkastore.ssl.certificate.location``,
``kafkastore.ssl.key.location``), ``kafkastore.ssl.key.password``,
``kafkastore.ssl.endpoint.identification.algorithm``, ``kafkastore.sasl.mechanism`` and
``kafkastore.sasl.jaas.config`` (or ``kafkastore.sasl.username``/``password``); see
:mod:`zurau.client.security`. Empty values count as unset (Confluent's defaults are empty
strings); a security setting the client does not understand (a JKS store, Kerberos) is refused at
start-up rather than ignored.

Several instances (:mod:`.leader_election`, :mod:`.forwarding`), Confluent's names and defaults:

* ``schema.registry.group.id`` (default ``schema-registry``): the group the instances of one
  registry cluster join to elect the primary;
* ``leader.eligibility`` (or the older ``master.eligibility``; default true): whether this
  instance may become the primary;
* ``host.name`` / ``host.port`` (default the listener's host, this machine's name for a wildcard
  listener, and port): where the other instances reach this one; ``inter.instance.protocol`` (or
  ``schema.registry.inter.instance.protocol``; only ``http``);
* ``inter.instance.headers.whitelist``: request headers forwarded to the primary besides
  ``Content-Type``, ``Accept`` and ``Authorization``;
* ``kafkagroup.session.timeout.ms`` (10000), ``kafkagroup.heartbeat.interval.ms`` (3000),
  ``kafkagroup.rebalance.timeout.ms`` (300000); ``leader.election.sticky`` (false);
* ``leader.connect.timeout.ms`` / ``leader.read.timeout.ms`` (60000): forwarding timeouts.

Unknown keys are kept in ``extra`` and otherwise ignored, as Confluent ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity
from zurau.config import (
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    Importance,
    Range,
    ValidString,
    non_empty_string,
)
from zurau.config.config_def import parse_type

STORE_PREFIX = "kafkastore."  # Confluent's prefix of the store's Kafka client settings
COMPATIBILITY_LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)


class RegistryConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RegistryConfig:
    host: str = "127.0.0.1"
    port: int = 8081
    bootstrap_servers: str = "127.0.0.1:9092"
    topic: str = "_schemas"
    replication_factor: int = 3
    compatibility_level: str = "BACKWARD"
    store_timeout_ms: int = 10_000
    init_timeout_ms: int = 60_000
    max_request_bytes: int = 16 * 1024 * 1024
    group_id: str = "schema-registry"
    leader_eligibility: bool = True
    host_name: str | None = None
    host_port: int | None = None
    inter_instance_protocol: str = "http"
    headers_whitelist: tuple[str, ...] = ()
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 300_000
    leader_election_sticky: bool = False
    leader_connect_timeout_ms: int = 60_000
    leader_read_timeout_ms: int = 60_000
    kafkastore_security: ClientSecurity = field(default_factory=ClientSecurity)
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> RegistryConfig:
        kw: dict[str, object] = {}
        extra: dict[str, str] = {}
        security: dict[str, str] = {}
        for key, raw in props.items():
            value = raw.strip()
            if _is_store_security(key):
                if value:
                    security[key[len(STORE_PREFIX):]] = value
            elif key == "listeners":
                first = value.split(",")[0].strip()
                url = urlsplit(first if "://" in first else f"http://{first}")
                if url.scheme != "http":
                    raise RegistryConfigError(f"listeners={value}: only http listeners are supported")
                if url.port is None:
                    raise RegistryConfigError(f"listeners={value}: a port is required")
                kw["host"] = url.hostname or "0.0.0.0"
                kw["port"] = url.port
            elif key == "kafkastore.bootstrap.servers":
                servers = [s.strip().split("://", 1)[-1] for s in value.split(",") if s.strip()]
                if not servers:
                    raise RegistryConfigError("kafkastore.bootstrap.servers is empty")
                kw["bootstrap_servers"] = ",".join(servers)
            elif (name := _ALIASES.get(key, key)) in _FIELDS:
                kw[_FIELDS[name]] = _typed(name, _parse(key, value, REGISTRY_CONFIG.get(name)))
            else:
                extra[key] = value
        kw["extra"] = extra
        try:
            kw["kafkastore_security"] = ClientSecurity.from_props(security)
        except ClientConfigError as e:
            raise RegistryConfigError(f"the store's client security ({STORE_PREFIX}*): {e}") from None
        return cls(**kw)  # type: ignore[arg-type]


_INT, _STR, _BOOL, _LIST = ConfigType.INT, ConfigType.STRING, ConfigType.BOOLEAN, ConfigType.LIST

#: The registry's own settings (``listeners``, ``kafkastore.bootstrap.servers`` and the store's
#: client security settings are read apart: see :meth:`RegistryConfig.from_props`).
REGISTRY_CONFIG = (
    ConfigDef()
    .define("kafkastore.topic", _STR, "_schemas", validator=non_empty_string, importance=Importance.HIGH,
            documentation="The topic that stores the schemas.")
    .define("kafkastore.topic.replication.factor", _INT, 3, validator=Range.at_least(1), importance=Importance.HIGH,
            documentation="Replication factor of the schemas topic (capped at the live brokers).")
    .define("schema.compatibility.level", _STR, "BACKWARD",
            validator=ValidString(COMPATIBILITY_LEVELS, case_insensitive=True), importance=Importance.HIGH,
            documentation="The global compatibility level (also read as avro.compatibility.level).")
    .define("kafkastore.timeout.ms", _INT, 10_000, validator=Range.at_least(1),
            documentation="How long a write waits to be read back.")
    .define("kafkastore.init.timeout.ms", _INT, 60_000, validator=Range.at_least(1),
            documentation="How long start-up waits for the store.")
    .define("max.request.bytes", _INT, 16 * 1024 * 1024, validator=Range.at_least(1024),
            documentation="Largest request body (larger ones get HTTP 413).")
    .define("schema.registry.group.id", _STR, "schema-registry", validator=non_empty_string,
            documentation="The group the instances of one registry cluster join to elect the primary.")
    .define("leader.eligibility", _BOOL, True, documentation="Whether this instance may become the primary "
            "(also read as master.eligibility).")
    .define("leader.election.sticky", _BOOL, False, documentation="Keep the primary across rebalances.")
    .define("host.name", _STR, None, documentation="Where the other instances reach this one.")
    .define("host.port", _INT, None, validator=Range.at_least(1), documentation="The port of host.name.")
    .define("inter.instance.protocol", _STR, "http", validator=ValidString(("http",), case_insensitive=True),
            documentation="Protocol between instances (also read as schema.registry.inter.instance.protocol).")
    .define("inter.instance.headers.whitelist", _LIST, "",
            documentation="Request headers forwarded to the primary besides Content-Type, Accept, Authorization.")
    .define("kafkagroup.session.timeout.ms", _INT, 10_000, validator=Range.at_least(1),
            documentation="Session timeout of the instances' group.")
    .define("kafkagroup.heartbeat.interval.ms", _INT, 3_000, validator=Range.at_least(1),
            documentation="Heartbeat interval of the instances' group.")
    .define("kafkagroup.rebalance.timeout.ms", _INT, 300_000, validator=Range.at_least(1),
            documentation="Rebalance timeout of the instances' group.")
    .define("leader.connect.timeout.ms", _INT, 60_000, validator=Range.at_least(1),
            documentation="Connect timeout of a request forwarded to the primary.")
    .define("leader.read.timeout.ms", _INT, 60_000, validator=Range.at_least(1),
            documentation="Read timeout of a request forwarded to the primary.")
)

#: Older names Confluent still reads.
_ALIASES = {
    "avro.compatibility.level": "schema.compatibility.level",
    "master.eligibility": "leader.eligibility",
    "schema.registry.inter.instance.protocol": "inter.instance.protocol",
}
#: Setting -> RegistryConfig field.
_FIELDS = {
    "kafkastore.topic": "topic",
    "kafkastore.topic.replication.factor": "replication_factor",
    "schema.compatibility.level": "compatibility_level",
    "kafkastore.timeout.ms": "store_timeout_ms",
    "kafkastore.init.timeout.ms": "init_timeout_ms",
    "max.request.bytes": "max_request_bytes",
    "schema.registry.group.id": "group_id",
    "leader.eligibility": "leader_eligibility",
    "leader.election.sticky": "leader_election_sticky",
    "host.name": "host_name",
    "host.port": "host_port",
    "inter.instance.protocol": "inter_instance_protocol",
    "inter.instance.headers.whitelist": "headers_whitelist",
    "kafkagroup.session.timeout.ms": "session_timeout_ms",
    "kafkagroup.heartbeat.interval.ms": "heartbeat_interval_ms",
    "kafkagroup.rebalance.timeout.ms": "rebalance_timeout_ms",
    "leader.connect.timeout.ms": "leader_connect_timeout_ms",
    "leader.read.timeout.ms": "leader_read_timeout_ms",
}


def _parse(key: str, value: str, definition: ConfigKey | None) -> Any:
    """``value`` parsed and validated by ``definition``; errors in the registry's own words
    (``key=value: must be at least 1``)."""
    assert definition is not None
    try:
        typed = parse_type(key, definition.type, value)
    except ConfigError:
        rule = "not an integer" if definition.type is ConfigType.INT else "must be true or false"
        raise RegistryConfigError(f"{key}={value}: {rule}") from None
    try:
        if definition.validator is not None:
            definition.validator(key, typed)
    except ConfigError:
        raise RegistryConfigError(_broken_rule(key, value, definition.validator)) from None
    return typed


def _broken_rule(key: str, value: str, validator: object) -> str:
    if isinstance(validator, Range):
        return f"{key}={value}: must be at least {validator.min}"
    if isinstance(validator, ValidString) and validator.options == ("http",):
        return f"{key}={value}: only http is supported"
    if isinstance(validator, ValidString):
        return f"{key}={value}: must be one of {', '.join(validator.options)}"
    return f"{key} is empty"


def _typed(name: str, value: Any) -> object:
    """A parsed setting as its RegistryConfig field holds it."""
    if name == "schema.compatibility.level":
        return value.upper()
    if name == "host.name":
        return value or None
    if name == "inter.instance.protocol":
        return "http"
    if name == "inter.instance.headers.whitelist":
        return tuple(h for h in value if h)
    return value


def _is_store_security(key: str) -> bool:
    """A ``kafkastore.``-prefixed Kafka client security setting (module docstring)."""
    if not key.startswith(STORE_PREFIX):
        return False
    rest = key[len(STORE_PREFIX):]
    return rest in ("security.protocol", "enable.sasl.oauthbearer.unsecure.jwt") or rest.startswith(("ssl.", "sasl."))
