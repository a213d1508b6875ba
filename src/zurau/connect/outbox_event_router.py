"""Debezium's outbox event router (``io.debezium.transforms.outbox.EventRouter``): turns the change
events of an outbox table into the messages the application meant to publish.

An outbox row (Debezium's default column names; each is a setting)::

    id uuid | aggregatetype varchar | aggregateid varchar | type varchar | payload jsonb

becomes one record:

* topic: ``route.topic.replacement`` (default ``outbox.event.${routedByValue}``) where the value of
  ``route.by.field`` (default ``aggregatetype``) matches ``route.topic.regex`` (default
  ``(?<routedByValue>.*)``, Java syntax: named groups ``(?<name>...)``, references ``${name}`` and
  ``$1``); the value is used as it is (no change of case);
* key: the value of ``table.field.event.key`` (default ``aggregateid``) with that column's schema;
  a string-schema null when the column does not exist;
* value: the value of ``table.field.event.payload`` (default ``payload``) with its column's schema;
  when ``table.fields.additional.placement`` puts a column in the ``envelope``, the value is instead
  a struct ``{payload, <alias>...}`` named after the table's value schema with the routed value
  inserted before its last part (``srv.public.outbox.Order.Value``), versioned by
  ``table.field.event.schema.version`` when set;
* with ``table.expand.json.payload=true`` a string payload holding a JSON object (or array) is
  parsed and its schema deduced as Debezium does (strings, booleans, INT32 or INT64 for integers by
  size, FLOAT64 for other numbers, nested structs, arrays typed by their first non-null member, the
  members of arrays of objects sharing the union of their fields; null-valued fields left out); text
  that does not parse stays as it is;
* headers: ``id`` = the value of ``table.field.event.id`` (default ``id``), then one per
  ``header`` placement (``column:header[:alias]``); a ``partition`` placement
  (``column:partition``) sets the record's partition;
* timestamp: the envelope's ``ts_ms``, or the column ``table.field.event.timestamp``
  (``Timestamp`` milliseconds; ``MicroTimestamp``/``NanoTimestamp`` scaled down).

What is not routed, as in Debezium: tombstones are dropped; records that are not change events
(heartbeats) pass unchanged; delete events are dropped and logged; updates are dropped and
logged at warning (``table.op.invalid.behavior=warn``) or error (``error``), or fail the task
(``fatal``); truncate events are dropped. A null or blank payload with
``route.tombstone.on.empty.payload=true`` gives a tombstone (key kept, null value).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from zurau.config import ConfigDef, ConfigException, ConfigType, Importance, valid_string
from zurau.connect.api import ConnectException, Transformation
from zurau.connect.data import (
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaBuilder,
    Struct,
    Type,
)
from zurau.connect.records import ConnectRecord

log = logging.getLogger("zurau.connect.outbox")

PLACEMENTS = ("header", "envelope", "partition")
INVALID_OP_BEHAVIORS = ("warn", "error", "fatal")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def java_regex(pattern: str) -> re.Pattern[str]:
    """A Java regular expression as Python's: ``(?<name>`` named groups become ``(?P<name>``."""
    return re.compile(re.sub(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", r"(?P<\1>", pattern))


def java_replacement(replacement: str) -> str:
    """A Java ``Matcher.replaceFirst`` replacement as Python's: ``${name}`` and ``$1`` become
    ``\\g<name>`` and ``\\g<1>``; a literal backslash stays one."""
    out = replacement.replace("\\", "\\\\")
    out = re.sub(r"\$\{([A-Za-z][A-Za-z0-9]*)\}", r"\\g<\1>", out)
    return re.sub(r"\$(\d+)", r"\\g<\1>", out)


def _placement_list(name: str, value: Any) -> None:
    for entry in value or []:
        parts = entry.split(":")
        if len(parts) not in (2, 3) or parts[1].strip().lower() not in PLACEMENTS:
            raise ConfigException(
                f"Invalid value {entry} for configuration {name}: expected column:placement or "
                f"column:placement:alias with placement one of {', '.join(PLACEMENTS)}"
            )


# -- JSON payload expansion --------------------------------------------------------------------


def _json_schema(value: Any) -> Schema | None:
    """The Connect schema Debezium deduces for a JSON value (None for null: field left out)."""
    if isinstance(value, bool):
        return OPTIONAL_BOOLEAN_SCHEMA
    if isinstance(value, int):
        if _INT32[0] <= value <= _INT32[1]:
            return OPTIONAL_INT32_SCHEMA
        if _INT64[0] <= value <= _INT64[1]:
            return OPTIONAL_INT64_SCHEMA
        return OPTIONAL_FLOAT64_SCHEMA
    if isinstance(value, float):
        return OPTIONAL_FLOAT64_SCHEMA
    if isinstance(value, str):
        return OPTIONAL_STRING_SCHEMA
    if isinstance(value, list):
        return SchemaBuilder.array(_array_member_schema(value)).optional().build()
    if isinstance(value, dict):
        return _object_builder([value]).build()
    return None


def _object_builder(documents: list[dict[str, Any]]) -> SchemaBuilder:
    builder = SchemaBuilder.struct().optional()
    seen: set[str] = set()
    for document in documents:
        for name, member in document.items():
            schema = _json_schema(member)
            if schema is not None and name not in seen:
                builder.field(name, schema)
                seen.add(name)
    return builder


def _array_member_schema(values: list[Any]) -> Schema:
    present = [v for v in values if v is not None]
    if not present:
        return OPTIONAL_STRING_SCHEMA
    first = present[0]
    kind = _json_kind(first)
    for other in present[1:]:
        if _json_kind(other) != kind:
            raise ConnectException(f"Field is not a homogenous array ({first!r} x {other!r})")
    if isinstance(first, dict):
        return _object_builder(present).build()
    schema = _json_schema(first)
    assert schema is not None
    return schema


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _json_value(schema: Schema, value: Any) -> Any:
    """``value`` (parsed JSON) as a Connect value of ``schema``."""
    if value is None:
        return None
    if schema.type is Type.STRUCT:
        struct = Struct(schema)
        for f in schema.fields:
            struct.put(f.name, _json_value(f.schema, value.get(f.name)))
        return struct
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        return [_json_value(schema.value_schema, v) for v in value]
    if schema.type is Type.FLOAT64:
        return float(value)
    return value


def expand_json(text: str) -> tuple[Schema, Any] | None:
    """``(schema, value)`` of a JSON object or array held in ``text``; None when it is not one."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    schema = _json_schema(parsed)
    if schema is None:
        return None
    return schema, _json_value(schema, parsed)


# -- the transform -----------------------------------------------------------------------------


class EventRouter(Transformation):
    """``io.debezium.transforms.outbox.EventRouter`` (see the module docstring)."""

    CONFIG = (
        ConfigDef()
        .define(
            "table.op.invalid.behavior",
            ConfigType.STRING,
            "warn",
            validator=valid_string(*INVALID_OP_BEHAVIORS),
            importance=Importance.MEDIUM,
            documentation="An update of an outbox row: warn (log a warning, skip it), error (log an error, skip "
            "it) or fatal (fail).",
        )
        .define(
            "table.field.event.id",
            ConfigType.STRING,
            "id",
            importance=Importance.LOW,
            documentation="Column with the unique event id (sent as header 'id').",
        )
        .define(
            "table.field.event.key",
            ConfigType.STRING,
            "aggregateid",
            importance=Importance.LOW,
            documentation="Column with the event key (the message key).",
        )
        .define(
            "table.field.event.timestamp",
            ConfigType.STRING,
            None,
            importance=Importance.MEDIUM,
            documentation="Column with the message timestamp (default: the change event's ts_ms).",
        )
        .define(
            "table.field.event.payload",
            ConfigType.STRING,
            "payload",
            importance=Importance.LOW,
            documentation="Column with the event payload (the message value).",
        )
        .define(
            "table.expand.json.payload",
            ConfigType.BOOLEAN,
            False,
            importance=Importance.MEDIUM,
            documentation="Parse a string payload holding JSON into a struct with a deduced schema.",
        )
        .define(
            "table.fields.additional.placement",
            ConfigType.LIST,
            None,
            validator=_placement_list,
            importance=Importance.HIGH,
            documentation="More columns to send: column:header|envelope|partition[:alias], comma-separated.",
        )
        .define(
            "table.field.event.schema.version",
            ConfigType.STRING,
            None,
            importance=Importance.LOW,
            documentation="Column with the version of the envelope value schema.",
        )
        .define(
            "route.by.field",
            ConfigType.STRING,
            "aggregatetype",
            importance=Importance.HIGH,
            documentation="Column whose value names the topic (${routedByValue}).",
        )
        .define(
            "route.topic.regex",
            ConfigType.STRING,
            "(?<routedByValue>.*)",
            importance=Importance.LOW,
            documentation="Regular expression (Java syntax) matched against the route.by.field value.",
        )
        .define(
            "route.topic.replacement",
            ConfigType.STRING,
            "outbox.event.${routedByValue}",
            importance=Importance.HIGH,
            documentation="The topic; ${routedByValue} is the routed value.",
        )
        .define(
            "route.tombstone.on.empty.payload",
            ConfigType.BOOLEAN,
            False,
            importance=Importance.MEDIUM,
            documentation="Send a tombstone for a null or empty payload.",
        )
    )

    def __init__(self) -> None:
        self.additional: list[tuple[str, str, str]] = []

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        props = dict(config)
        if "table.op.invalid.behavior" not in props and "debezium.op.invalid.behavior" in props:
            props["table.op.invalid.behavior"] = props["debezium.op.invalid.behavior"]  # Debezium 1.x's name
        for value in self.CONFIG.validate({k: v for k, v in props.items() if k in self.CONFIG.names()}):
            if value.errors:
                raise ConfigException(value.errors[0])
        c = self.CONFIG.parse({k: v for k, v in props.items() if k in self.CONFIG.names()})
        self.invalid_op = str(c["table.op.invalid.behavior"]).lower()
        self.field_id: str = c["table.field.event.id"]
        self.field_key: str | None = c["table.field.event.key"] or None
        self.field_timestamp: str | None = c["table.field.event.timestamp"] or None
        self.field_payload: str = c["table.field.event.payload"]
        self.expand: bool = c["table.expand.json.payload"]
        self.field_schema_version: str | None = c["table.field.event.schema.version"] or None
        self.route_by: str = c["route.by.field"]
        try:
            self.route_regex = java_regex(c["route.topic.regex"])
        except re.error as e:
            raise ConfigException(
                f"Invalid value {c['route.topic.regex']} for configuration route.topic.regex: {e}"
            ) from e
        self.route_replacement = java_replacement(c["route.topic.replacement"])
        self.tombstone_on_empty: bool = c["route.tombstone.on.empty.payload"]
        self.additional = []
        for entry in c["table.fields.additional.placement"] or []:
            parts = [p.strip() for p in entry.split(":")]
            self.additional.append((parts[0], parts[1].lower(), parts[2] if len(parts) == 3 else parts[0]))
        self.envelope_fields = [
            (column, alias) for column, placement, alias in self.additional if placement == "envelope"
        ]
        self._schemas: dict[tuple[Schema, str, int | None], Schema] = {}

    @staticmethod
    def _is_change_event(value: Any) -> bool:
        if not isinstance(value, Struct):
            return False
        schema = value.schema
        return all(schema.field(f) is not None for f in ("op", "after", "before", "source"))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value is None:
            log.debug("Tombstone message ignored. Message key: %r", record.key)
            return None
        if not self._is_change_event(record.value):
            return record
        envelope: Struct = record.value
        op = envelope.get("op")
        if op == "d":
            log.info("Delete message %r ignored", record.key)
            return None
        if op == "u":
            if self.invalid_op == "fatal":
                raise ConnectException(f"Unexpected update message received {record.key!r}, fail.")
            (log.error if self.invalid_op == "error" else log.warning)(
                "Unexpected update message received %r and ignored", record.key
            )
            return None
        event: Struct | None = envelope.get("after")
        if event is None:  # a truncate, or an event without a row
            log.info("Outbox event without a row (op %s) ignored", op)
            return None
        return self._route(record, envelope, event)

    def _field(self, event: Struct, name: str, what: str) -> Schema:
        f = event.schema.field(name)
        if f is None:
            raise ConnectException(f"Unable to find {what} field {name} in event")
        return f.schema

    def _route(self, record: ConnectRecord, envelope: Struct, event: Struct) -> ConnectRecord | None:
        payload_schema: Schema | None = self._field(event, self.field_payload, "payload")
        self._field(event, self.field_id, "event-id")
        payload = event.get(self.field_payload)
        headers = list(record.headers)
        headers.append(("id", event.get(self.field_id)))
        if self.expand:
            if isinstance(payload, str):
                expanded = expand_json(payload)
                if expanded is not None:
                    payload_schema, payload = expanded
                else:
                    log.warning("JSON expansion of the payload of %r failed: kept as a string", record.key)
            elif payload is not None:
                log.warning("Expand JSON payload is turned on but payload is not a string in %r", record.key)
        routed_by = event.get(self.route_by) if event.schema.field(self.route_by) is not None else None
        if routed_by is None:
            raise ConnectException(f"Unable to find route field {self.route_by} in event")
        partition = record.kafka_partition
        value_schema: Schema | None = payload_schema
        value: Any = payload
        if self.envelope_fields:
            version = None
            if self.field_schema_version is not None:
                raw = event.get(self.field_schema_version)
                version = None if raw is None else int(raw)
            value_schema = self._envelope_schema(event.schema, str(routed_by), version, payload_schema)
            struct = Struct(value_schema).put("payload", payload)
            for column, alias in self.envelope_fields:
                self._field(event, column, "additional")
                struct.put(alias, event.get(column))
            value = struct
        for column, placement, alias in self.additional:
            self._field(event, column, "additional")
            if placement == "header":
                headers.append((alias, event.get(column)))
            elif placement == "partition":
                raw = event.get(column)
                partition = None if raw is None else int(raw)
        if self.tombstone_on_empty and (payload is None or str(payload).strip() == ""):
            value_schema, value = None, None
        key_field = event.schema.field(self.field_key) if self.field_key else None
        key_schema = key_field.schema if key_field is not None else STRING_SCHEMA
        key = event.get(self.field_key) if key_field is not None and self.field_key else None
        topic = str(routed_by)
        match = self.route_regex.fullmatch(topic)
        if match is not None:
            topic = match.expand(self.route_replacement)
        return record.new_record(
            topic=topic,
            kafka_partition=partition,
            key_schema=key_schema,
            key=key,
            value_schema=value_schema,
            value=value,
            timestamp=self._timestamp(envelope, event, record.timestamp),
            headers=headers,
        )

    def _envelope_schema(
        self, event_schema: Schema, routed: str, version: int | None, payload: Schema | None
    ) -> Schema:
        cache_key = (event_schema, routed, version)
        schema = self._schemas.get(cache_key)
        if schema is None:
            original = event_schema.name
            if original is None:
                name = routed
            elif "." in original:
                head, _, tail = original.rpartition(".")
                name = f"{head}.{routed}.{tail}"
            else:
                name = f"{routed}.{original}"
            builder = SchemaBuilder.struct().name(name)
            if version is not None:
                builder.version(version)
            builder.field("payload", payload if payload is not None else OPTIONAL_STRING_SCHEMA)
            for column, alias in self.envelope_fields:
                builder.field(alias, self._field_schema(event_schema, column))
            schema = self._schemas[cache_key] = builder.build()
        return schema

    @staticmethod
    def _field_schema(schema: Schema, column: str) -> Schema:
        f = schema.field(column)
        if f is None:
            raise ConnectException(f"Unable to find additional field {column} in event")
        return f.schema

    def _timestamp(self, envelope: Struct, event: Struct, fallback: int | None) -> int | None:
        ts_ms = envelope.get("ts_ms") if envelope.schema.field("ts_ms") is not None else fallback
        if self.field_timestamp is None:
            return ts_ms
        f = event.schema.field(self.field_timestamp)
        if f is None:
            raise ConnectException(f"Unable to find timestamp field {self.field_timestamp} in event")
        raw = event.get(self.field_timestamp)
        if raw is None:
            return ts_ms
        name = f.schema.name
        if name in ("org.apache.kafka.connect.data.Timestamp", "io.debezium.time.Timestamp"):
            if hasattr(raw, "timestamp"):
                return int(raw.timestamp() * 1000)
            return int(raw)
        if name == "io.debezium.time.MicroTimestamp":
            return int(raw) // 1_000
        if name == "io.debezium.time.NanoTimestamp":
            return int(raw) // 1_000_000
        raise ConnectException(f"Unsupported field type {name or f.schema.type.value} for event timestamp")


__all__ = ["EventRouter", "expand_json", "java_regex", "java_replacement"]
