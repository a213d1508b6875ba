"""The PostgreSQL CDC connector's settings: Debezium's PostgreSQL connector configuration names,
defaults and validation, so that a Debezium connector JSON posts unchanged.

:data:`CONFIG_DEF` declares every setting the connector reads; :func:`validate_config` adds the
checks that span settings (include and exclude lists together, regexes that do not compile);
:meth:`PostgresConnectorConfig.from_props` parses a string map into the typed form the connector
uses, raising :class:`~zurau.config.ConfigException` with the setting's name. Settings
Debezium has and this connector does not read are accepted and ignored, as Connect does with
unknown settings.

Differences from Debezium (written down so nobody is surprised):

* ``plugin.name`` defaults to ``pgoutput`` (Debezium: ``decoderbufs``) and only ``pgoutput`` is
  accepted: the other plugins need server extensions.
* ``snapshot.mode`` takes ``initial``, ``initial_only``, ``when_needed``, ``always``, ``never``
  and its Debezium 2 name ``no_data``; ``custom`` and ``configuration_based`` are refused.
* ``signal.enabled.channels`` knows ``source`` and ``kafka`` (not ``jmx`` or ``file``); the
  incremental snapshot's keys in the offsets are our own encoding (see :mod:`.incremental_snapshot`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zurau.config import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    non_empty_string,
    valid_string,
)

CONNECTOR_CLASS = "zurau.connect.postgres.PostgresConnector"
DEBEZIUM_CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"

SNAPSHOT_MODES = ("initial", "initial_only", "when_needed", "always", "never", "no_data")
DECIMAL_MODES = ("precise", "string", "double")
TIME_PRECISION_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
BINARY_MODES = ("bytes", "base64", "base64-url-safe", "hex")
AUTOCREATE_MODES = ("all_tables", "filtered", "disabled", "no_tables")
_TOPIC_PREFIX = re.compile(r"^[A-Za-z0-9._-]+$")
_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")

GROUP_CONNECTION = "Connection"
GROUP_CONNECTOR = "Connector"
GROUP_EVENTS = "Events"
GROUP_SIGNALS = "Signals"
SIGNAL_CHANNELS = ("source", "kafka")


def _topic_prefix(name: str, value: Any) -> None:
    if value is not None and not _TOPIC_PREFIX.match(str(value)):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: only letters, digits, '.', '_' and '-' may be used"
        )


def _regex_list(name: str, value: Any) -> None:
    for pattern in value or []:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigException(f"Invalid value {pattern} for configuration {name}: not a regular expression ({e})") from None


def _plugin(name: str, value: Any) -> None:
    if value is not None and str(value) != "pgoutput":
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: only pgoutput is supported "
            "(PostgreSQL's built-in logical decoding output plugin)"
        )


def _skipped_operations(name: str, value: Any) -> None:
    for op in value or []:
        if op not in ("c", "u", "d", "t", "none"):
            raise ConfigException(f"Invalid value {op} for configuration {name}: operations are c, u, d, t or none")


def _qualified_table(name: str, value: Any) -> None:
    if value is not None and len(str(value).split(".")) != 2:
        raise ConfigException(f"Invalid value {value} for configuration {name}: expected <schema>.<table>")


def _channels(name: str, value: Any) -> None:
    for channel in value or []:
        if channel not in SIGNAL_CHANNELS:
            raise ConfigException(
                f"Invalid value {channel} for configuration {name}: the channels are {', '.join(SIGNAL_CHANNELS)}"
            )


def _slot_name(name: str, value: Any) -> None:
    if value is not None and not re.fullmatch(r"[a-z0-9_]{1,63}", str(value)):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: a replication slot name has 1 to 63 "
            "lower-case letters, digits and underscores"
        )


CONFIG_DEF = (
    ConfigDef()
    .define("database.hostname", ConfigType.STRING, importance=Importance.HIGH, validator=non_empty_string,
            group=GROUP_CONNECTION, order_in_group=1, documentation="Host name or address of the PostgreSQL server.")
    .define("database.port", ConfigType.INT, 5432, validator=Range.between(1, 65535), importance=Importance.HIGH,
            group=GROUP_CONNECTION, order_in_group=2, documentation="Port of the PostgreSQL server.")
    .define("database.user", ConfigType.STRING, importance=Importance.HIGH, validator=non_empty_string,
            group=GROUP_CONNECTION, order_in_group=3,
            documentation="User with the REPLICATION attribute (and SELECT on the captured tables).")
    .define("database.password", ConfigType.PASSWORD, None, importance=Importance.HIGH, group=GROUP_CONNECTION,
            order_in_group=4, documentation="Password of database.user.")
    .define("database.dbname", ConfigType.STRING, importance=Importance.HIGH, validator=non_empty_string,
            group=GROUP_CONNECTION, order_in_group=5, documentation="The database to capture changes from.")
    .define("database.connect.timeout.ms", ConfigType.INT, 30000, validator=Range.at_least(1000),
            importance=Importance.LOW, group=GROUP_CONNECTION, documentation="Timeout of one connection attempt.")
    .define("topic.prefix", ConfigType.STRING, importance=Importance.HIGH, validator=_topic_prefix,
            group=GROUP_CONNECTOR, order_in_group=1,
            documentation="Logical name of the server: the prefix of every topic (<prefix>.<schema>.<table>).")
    .define("plugin.name", ConfigType.STRING, "pgoutput", validator=_plugin, importance=Importance.MEDIUM,
            group=GROUP_CONNECTOR, documentation="Logical decoding output plugin; only pgoutput.")
    .define("slot.name", ConfigType.STRING, "debezium", validator=_slot_name, importance=Importance.MEDIUM,
            group=GROUP_CONNECTOR, documentation="Name of the logical replication slot (created when missing).")
    .define("slot.drop.on.stop", ConfigType.BOOLEAN, False, importance=Importance.LOW, group=GROUP_CONNECTOR,
            documentation="Drop the slot when the task stops (for tests; a restart then loses changes).")
    .define("publication.name", ConfigType.STRING, "dbz_publication", validator=non_empty_string,
            importance=Importance.MEDIUM, group=GROUP_CONNECTOR, documentation="Name of the publication to stream.")
    .define("publication.autocreate.mode", ConfigType.STRING, "all_tables", validator=valid_string(*AUTOCREATE_MODES),
            importance=Importance.MEDIUM, group=GROUP_CONNECTOR,
            documentation="all_tables: create the publication FOR ALL TABLES when missing; filtered: create or "
            "update it for the tables the include/exclude lists select; disabled: it must exist; no_tables: "
            "create it without tables.")
    .define("table.include.list", ConfigType.LIST, None, validator=_regex_list, importance=Importance.HIGH,
            group=GROUP_CONNECTOR, documentation="Regular expressions matched against <schema>.<table>: "
            "only matching tables are captured.")
    .define("table.exclude.list", ConfigType.LIST, None, validator=_regex_list, importance=Importance.MEDIUM,
            group=GROUP_CONNECTOR, documentation="Regular expressions matched against <schema>.<table>: "
            "matching tables are not captured.")
    .define("schema.include.list", ConfigType.LIST, None, validator=_regex_list, importance=Importance.MEDIUM,
            group=GROUP_CONNECTOR, documentation="Regular expressions matched against schema names to capture.")
    .define("schema.exclude.list", ConfigType.LIST, None, validator=_regex_list, importance=Importance.MEDIUM,
            group=GROUP_CONNECTOR, documentation="Regular expressions matched against schema names not to capture.")
    .define("snapshot.mode", ConfigType.STRING, "initial", validator=valid_string(*SNAPSHOT_MODES),
            importance=Importance.MEDIUM, group=GROUP_CONNECTOR,
            documentation="initial: snapshot when no offset exists, then stream; initial_only: snapshot, "
            "no streaming; when_needed: also snapshot when the offset's position is gone; always: snapshot at "
            "every start; never/no_data: stream only.")
    .define("snapshot.fetch.size", ConfigType.INT, 10240, validator=Range.at_least(1), importance=Importance.LOW,
            group=GROUP_CONNECTOR, documentation="Rows fetched at a time while snapshotting.")
    .define("decimal.handling.mode", ConfigType.STRING, "precise", validator=valid_string(*DECIMAL_MODES),
            importance=Importance.MEDIUM, group=GROUP_EVENTS,
            documentation="numeric columns as Connect Decimal (precise), strings or doubles.")
    .define("time.precision.mode", ConfigType.STRING, "adaptive", validator=valid_string(*TIME_PRECISION_MODES),
            importance=Importance.MEDIUM, group=GROUP_EVENTS, documentation="Representation of temporal columns.")
    .define("binary.handling.mode", ConfigType.STRING, "bytes", validator=valid_string(*BINARY_MODES),
            importance=Importance.LOW, group=GROUP_EVENTS, documentation="bytea columns as bytes or encoded strings.")
    .define("tombstones.on.delete", ConfigType.BOOLEAN, True, importance=Importance.MEDIUM, group=GROUP_EVENTS,
            documentation="Follow each delete event with a tombstone (same key, null value).")
    .define("skipped.operations", ConfigType.LIST, "t", validator=_skipped_operations, importance=Importance.LOW,
            group=GROUP_EVENTS, documentation="Operations not emitted (c, u, d, t; none for all emitted).")
    .define("heartbeat.interval.ms", ConfigType.INT, 0, validator=Range.at_least(0), importance=Importance.MEDIUM,
            group=GROUP_EVENTS, documentation="Interval of heartbeat records (0: none).")
    .define("heartbeat.topics.prefix", ConfigType.STRING, "__debezium-heartbeat", validator=non_empty_string,
            importance=Importance.LOW, group=GROUP_EVENTS,
            documentation="Heartbeats go to <heartbeat.topics.prefix>.<topic.prefix>.")
    .define("unavailable.value.placeholder", ConfigType.STRING, "__debezium_unavailable_value",
            importance=Importance.LOW, group=GROUP_EVENTS,
            documentation="Stands for an unchanged TOASTed value that PostgreSQL did not send.")
    .define("max.batch.size", ConfigType.INT, 2048, validator=Range.at_least(1), importance=Importance.LOW,
            group=GROUP_CONNECTOR, documentation="Most records one poll returns.")
    .define("poll.interval.ms", ConfigType.INT, 500, validator=Range.between(1, 1000), importance=Importance.LOW,
            group=GROUP_CONNECTOR, documentation="Longest wait of one poll for new changes.")
    .define("retriable.restart.connector.wait.ms", ConfigType.INT, 10000, validator=Range.at_least(0),
            importance=Importance.LOW, group=GROUP_CONNECTOR,
            documentation="Wait between reconnection attempts after the server went away.")
    .define("signal.data.collection", ConfigType.STRING, None, validator=_qualified_table, importance=Importance.MEDIUM,
            group=GROUP_SIGNALS, order_in_group=1,
            documentation="The signaling table <schema>.<table> (columns id, type, data): rows inserted there are "
            "signals to the connector (execute-snapshot, stop-snapshot, pause-snapshot, resume-snapshot, log), and "
            "incremental snapshots write their watermarks there.")
    .define("signal.enabled.channels", ConfigType.LIST, "source", validator=_channels, importance=Importance.MEDIUM,
            group=GROUP_SIGNALS, order_in_group=2, documentation="Where signals come from: source (the signaling "
            "table, through the replication stream) and kafka (signal.kafka.topic).")
    .define("signal.kafka.topic", ConfigType.STRING, None, importance=Importance.MEDIUM, group=GROUP_SIGNALS,
            documentation="Topic of the kafka signal channel (default <topic.prefix>-signal); partition 0 is read, "
            "records keyed by topic.prefix with a JSON value {\"type\": ..., \"data\": {...}}.")
    .define("signal.kafka.bootstrap.servers", ConfigType.STRING, None, importance=Importance.MEDIUM,
            group=GROUP_SIGNALS, documentation="Brokers of the kafka signal channel.")
    .define("signal.kafka.poll.timeout.ms", ConfigType.INT, 100, validator=Range.at_least(0), importance=Importance.LOW,
            group=GROUP_SIGNALS, documentation="Longest wait for kafka signals in one poll.")
    .define("incremental.snapshot.chunk.size", ConfigType.INT, 1024, validator=Range.at_least(1),
            importance=Importance.MEDIUM, group=GROUP_SIGNALS,
            documentation="Rows read per chunk of an incremental snapshot.")
    .define("incremental.snapshot.watermarking.strategy", ConfigType.STRING, "insert_insert",
            validator=valid_string("insert_insert", "insert_delete"), importance=Importance.LOW, group=GROUP_SIGNALS,
            documentation="insert_insert: each chunk inserts an open and a close row into the signaling table; "
            "insert_delete: the close deletes the open row, so the table does not grow.")
    .define("errors.max.retries", ConfigType.INT, -1, validator=Range.at_least(-1), importance=Importance.LOW,
            group=GROUP_CONNECTOR, documentation="Reconnection attempts before the task fails (-1: no limit).")
)


def validate_config(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Every setting's :class:`ConfigValue`, with the cross-setting errors added."""
    values = CONFIG_DEF.validate(props)
    by_name = {v.name: v for v in values}
    for a, b in (("table.include.list", "table.exclude.list"), ("schema.include.list", "schema.exclude.list")):
        if props.get(a) and props.get(b):
            by_name[b].errors.append(f"\"{a}\" is already specified: {a} and {b} cannot both be set")
    channels = str(props.get("signal.enabled.channels") or "source").replace(" ", "").split(",")
    if "kafka" in channels and not props.get("signal.kafka.bootstrap.servers"):
        by_name["signal.kafka.bootstrap.servers"].errors.append(
            "signal.kafka.bootstrap.servers is required when signal.enabled.channels has kafka"
        )
    return values


def _compile(patterns: list[str] | None) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns or [])


@dataclass(frozen=True)
class TableFilter:
    """Which ``<schema>.<table>`` are captured (Debezium's rules: each regex must match the whole
    name; system schemas are never captured)."""

    table_include: tuple[re.Pattern[str], ...] = ()
    table_exclude: tuple[re.Pattern[str], ...] = ()
    schema_include: tuple[re.Pattern[str], ...] = ()
    schema_exclude: tuple[re.Pattern[str], ...] = ()

    def includes(self, schema: str, table: str) -> bool:
        if schema in _SYSTEM_SCHEMAS or schema.startswith("pg_temp"):
            return False
        if self.schema_include and not any(p.fullmatch(schema) for p in self.schema_include):
            return False
        if any(p.fullmatch(schema) for p in self.schema_exclude):
            return False
        name = f"{schema}.{table}"
        if self.table_include:
            return any(p.fullmatch(name) for p in self.table_include)
        return not any(p.fullmatch(name) for p in self.table_exclude)


@dataclass(frozen=True)
class PostgresConnectorConfig:
    """The parsed settings (see :data:`CONFIG_DEF` for their meaning)."""

    hostname: str
    port: int
    user: str
    password: str | None
    dbname: str
    connect_timeout_ms: int
    topic_prefix: str
    slot_name: str
    slot_drop_on_stop: bool
    publication_name: str
    publication_autocreate_mode: str
    table_filter: TableFilter
    snapshot_mode: str
    snapshot_fetch_size: int
    decimal_handling_mode: str
    time_precision_mode: str
    binary_handling_mode: str
    tombstones_on_delete: bool
    skipped_operations: frozenset[str]
    heartbeat_interval_ms: int
    heartbeat_topics_prefix: str
    unavailable_value_placeholder: str
    max_batch_size: int
    poll_interval_ms: int
    retry_wait_ms: int
    max_retries: int
    signal_data_collection: str | None = None
    signal_channels: tuple[str, ...] = ("source",)
    signal_kafka_topic: str = ""
    signal_kafka_bootstrap_servers: str | None = None
    signal_kafka_poll_timeout_ms: int = 100
    incremental_snapshot_chunk_size: int = 1024
    watermarking_strategy: str = "insert_insert"

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> PostgresConnectorConfig:
        """Parse and validate; :class:`ConfigException` names the first bad setting."""
        for value in validate_config(props):
            if value.errors:
                raise ConfigException(value.errors[0])
        p = CONFIG_DEF.parse(props)
        return cls(
            hostname=p["database.hostname"],
            port=p["database.port"],
            user=p["database.user"],
            password=p["database.password"],
            dbname=p["database.dbname"],
            connect_timeout_ms=p["database.connect.timeout.ms"],
            topic_prefix=p["topic.prefix"],
            slot_name=p["slot.name"],
            slot_drop_on_stop=p["slot.drop.on.stop"],
            publication_name=p["publication.name"],
            publication_autocreate_mode=p["publication.autocreate.mode"].lower(),
            table_filter=TableFilter(
                _compile(p["table.include.list"]),
                _compile(p["table.exclude.list"]),
                _compile(p["schema.include.list"]),
                _compile(p["schema.exclude.list"]),
            ),
            snapshot_mode=p["snapshot.mode"].lower(),
            snapshot_fetch_size=p["snapshot.fetch.size"],
            decimal_handling_mode=p["decimal.handling.mode"].lower(),
            time_precision_mode=p["time.precision.mode"].lower(),
            binary_handling_mode=p["binary.handling.mode"].lower(),
            tombstones_on_delete=p["tombstones.on.delete"],
            skipped_operations=frozenset(op for op in p["skipped.operations"] or [] if op != "none"),
            heartbeat_interval_ms=p["heartbeat.interval.ms"],
            heartbeat_topics_prefix=p["heartbeat.topics.prefix"],
            unavailable_value_placeholder=p["unavailable.value.placeholder"],
            max_batch_size=p["max.batch.size"],
            poll_interval_ms=p["poll.interval.ms"],
            retry_wait_ms=p["retriable.restart.connector.wait.ms"],
            max_retries=p["errors.max.retries"],
            signal_data_collection=p["signal.data.collection"],
            signal_channels=tuple(p["signal.enabled.channels"] or ()),
            signal_kafka_topic=p["signal.kafka.topic"] or f"{p['topic.prefix']}-signal",
            signal_kafka_bootstrap_servers=p["signal.kafka.bootstrap.servers"],
            signal_kafka_poll_timeout_ms=p["signal.kafka.poll.timeout.ms"],
            incremental_snapshot_chunk_size=p["incremental.snapshot.chunk.size"],
            watermarking_strategy=p["incremental.snapshot.watermarking.strategy"].lower(),
        )

    def connect_kwargs(self) -> dict[str, Any]:
        """psycopg2/libpq connection parameters."""
        kwargs: dict[str, Any] = {
            "host": self.hostname,
            "port": self.port,
            "user": self.user,
            "dbname": self.dbname,
            "connect_timeout": max(1, self.connect_timeout_ms // 1000),
            "application_name": f"zurau-cdc-{self.topic_prefix}",
        }
        if self.password:
            kwargs["password"] = self.password
        return kwargs

    @property
    def heartbeat_topic(self) -> str:
        return f"{self.heartbeat_topics_prefix}.{self.topic_prefix}"

    @property
    def source_partition(self) -> dict[str, str]:
        """The one source partition of the connector (Debezium's ``{"server": <topic.prefix>}``)."""
        return {"server": self.topic_prefix}


__all__ = [
    "CONFIG_DEF",
    "CONNECTOR_CLASS",
    "DEBEZIUM_CONNECTOR_CLASS",
    "PostgresConnectorConfig",
    "TableFilter",
    "validate_config",
]
