"""Single message transforms and predicates, with Kafka's and Debezium's class names and settings.

* :class:`ExtractNewRecordState` (``io.debezium.transforms.ExtractNewRecordState``): replaces a
  Debezium change event by its ``after`` state. ``delete.tombstone.handling.mode``: ``tombstone``
  (default: the delete event is dropped, the tombstone after it kept), ``drop`` (both dropped),
  ``rewrite`` (the delete becomes its ``before`` state with ``__deleted`` = ``"true"``, every other
  event gets ``"false"``; tombstones dropped), ``rewrite-with-tombstone`` (rewrite, tombstones kept),
  ``delete-to-tombstone`` (the delete event becomes a tombstone, the original tombstone is dropped).
  The older ``drop.tombstones`` (default true) and ``delete.handling.mode`` (``drop``, ``rewrite``,
  ``none``) are honoured when set and the newer setting is not. ``add.fields`` copies envelope or
  source fields into the value (``op,table,lsn,source.ts_ms`` gives ``__op``, ``__table``, ``__lsn``,
  ``__source_ts_ms``; ``field:name`` renames), ``add.headers`` into headers. Truncate events are
  dropped; records that are not Debezium envelopes pass unchanged.
* :class:`~zurau.connect.outbox_event_router.EventRouter`
  (``io.debezium.transforms.outbox.EventRouter``): Debezium's outbox event router, described in
  :mod:`zurau.connect.outbox_event_router`.
* :class:`RegexRouter`: ``regex`` (whole topic) and ``replacement`` (``$1`` groups).
* :class:`InsertField` (``$Key``/``$Value``): ``topic.field``, ``partition.field``, ``offset.field``,
  ``timestamp.field``, ``static.field``/``static.value``; a ``!`` suffix makes the field required.
* :class:`ReplaceField` (``$Key``/``$Value``): ``exclude``, ``include``, ``renames`` (``old:new``).
* :class:`Filter` drops records (use it with a predicate).
* Predicates: :class:`TopicNameMatches` (``pattern``), :class:`HasHeaderKey` (``name``),
  :class:`RecordIsTombstone`.

Transforms work on Struct values with schemas and on schemaless dict values alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from zurau.config import ConfigDef, ConfigException, ConfigType, Importance, valid_string
from zurau.connect.api import Predicate, Transformation
from zurau.connect.data import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    DataException,
    Schema,
    SchemaBuilder,
    Struct,
    Timestamp,
    Type,
)
from zurau.connect.outbox_event_router import EventRouter
from zurau.connect.records import ConnectRecord, SinkRecord

# --------------------------------------------------------------------------- helpers


def copy_struct_basics(schema: Schema) -> SchemaBuilder:
    """A struct builder with ``schema``'s name, version, doc, parameters and optionality."""
    b = SchemaBuilder.struct()
    if schema.name is not None:
        b.name(schema.name)
    if schema.version is not None:
        b.version(schema.version)
    if schema.doc is not None:
        b.doc(schema.doc)
    if schema.parameters is not None:
        b.parameters(schema.parameters)
    if schema.optional:
        b.optional()
    return b


def as_optional(schema: Schema) -> Schema:
    if schema.optional:
        return schema
    return Schema(**{**schema.__dict__, "optional": True})


class _KeyOrValue(Transformation):
    """Base for transforms with ``$Key``/``$Value`` variants: operate on the key or the value."""

    IS_KEY = False

    def _operand(self, record: ConnectRecord) -> tuple[Schema | None, Any]:
        return (record.key_schema, record.key) if self.IS_KEY else (record.value_schema, record.value)

    def _replace(self, record: ConnectRecord, schema: Schema | None, value: Any) -> ConnectRecord:
        if self.IS_KEY:
            return record.new_record(key_schema=schema, key=value)
        return record.new_record(value_schema=schema, value=value)


def _parse(definition: ConfigDef, config: Mapping[str, Any]) -> dict[str, Any]:
    return definition.parse({k: v for k, v in config.items() if k in definition.names()})


# --------------------------------------------------------------------------- Debezium unwrap

_ENVELOPE_FIELDS = ("op", "ts_ms", "ts_us", "ts_ns")
_TRANSACTION_FIELDS = ("id", "total_order", "data_collection_order")
_DELETE_MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")


class ExtractNewRecordState(Transformation):
    """Debezium's event flattening (see the module docstring)."""

    CONFIG = (ConfigDef()
              .define("delete.tombstone.handling.mode", ConfigType.STRING, None,
                      validator=valid_string(*_DELETE_MODES), importance=Importance.MEDIUM,
                      documentation="How delete events and tombstones are emitted: " + ", ".join(_DELETE_MODES))
              .define("drop.tombstones", ConfigType.BOOLEAN, None, importance=Importance.LOW,
                      documentation="Deprecated: drop tombstones (default true when delete.handling.mode is used).")
              .define("delete.handling.mode", ConfigType.STRING, None, validator=valid_string("drop", "rewrite", "none"),
                      importance=Importance.LOW, documentation="Deprecated: drop, rewrite or none.")
              .define("add.fields", ConfigType.LIST, "", importance=Importance.LOW,
                      documentation="Envelope or source fields to add to the value (field or struct.field[:name]).")
              .define("add.fields.prefix", ConfigType.STRING, "__", importance=Importance.LOW,
                      documentation="Prefix of added field names.")
              .define("add.headers", ConfigType.LIST, "", importance=Importance.LOW,
                      documentation="Envelope or source fields to add as headers.")
              .define("add.headers.prefix", ConfigType.STRING, "__", importance=Importance.LOW,
                      documentation="Prefix of added header names."))

    def __init__(self) -> None:
        self.mode = "tombstone"
        self.legacy_none_keep_tombstones = False
        self.fields: list[tuple[str | None, str, str]] = []
        self.headers: list[tuple[str | None, str, str]] = []

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        c = _parse(self.CONFIG, config)
        if c["delete.tombstone.handling.mode"] is not None:
            self.mode = str(c["delete.tombstone.handling.mode"]).lower()
        elif c["drop.tombstones"] is not None or c["delete.handling.mode"] is not None:
            drop_tombstones = c["drop.tombstones"] is not False
            legacy = str(c["delete.handling.mode"] or "drop").lower()
            if legacy == "drop":
                self.mode = "drop" if drop_tombstones else "tombstone"
            elif legacy == "rewrite":
                self.mode = "rewrite" if drop_tombstones else "rewrite-with-tombstone"
            else:  # none: the delete event becomes a tombstone
                self.mode = "delete-to-tombstone"
                self.legacy_none_keep_tombstones = not drop_tombstones
        self.fields = [self._reference(f, c["add.fields.prefix"]) for f in c["add.fields"] if f]
        self.headers = [self._reference(f, c["add.headers.prefix"]) for f in c["add.headers"] if f]

    @staticmethod
    def _reference(spec: str, prefix: str) -> tuple[str | None, str, str]:
        """``(struct or None for the envelope, field, output name)`` for an add.fields entry."""
        spec, _, rename = spec.partition(":")
        struct: str | None
        if "." in spec:
            struct, _, name = spec.partition(".")
            out = f"{struct}_{name}"
        else:
            name, out = spec, spec
            struct = None if spec in _ENVELOPE_FIELDS else "transaction" if spec in _TRANSACTION_FIELDS else "source"
        return struct, name, prefix + (rename or out)

    @staticmethod
    def _is_envelope(value: Any) -> bool:
        if not isinstance(value, Struct):
            return False
        s = value.schema
        return (s.name or "").endswith(".Envelope") or all(s.field(f) is not None for f in ("op", "after", "before"))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value is None:  # a tombstone
            keep = self.mode in ("tombstone", "rewrite-with-tombstone") or self.legacy_none_keep_tombstones
            return record if keep else None
        if not self._is_envelope(record.value):
            return record
        envelope: Struct = record.value
        op = envelope.get("op")
        if op == "t":
            return None
        headers = list(record.headers)
        for struct_name, name, out in self.headers:
            headers.append((out, self._lookup(envelope, struct_name, name)[1]))
        if op == "d":
            if self.mode in ("drop", "tombstone"):
                return None
            if self.mode == "delete-to-tombstone":
                return record.new_record(value_schema=None, value=None, headers=headers)
            state, deleted = envelope.get("before"), "true"
            state_schema = envelope.schema.field("before")
        else:
            state, deleted = envelope.get("after"), "false"
            state_schema = envelope.schema.field("after")
        assert state_schema is not None
        rewrite = self.mode in ("rewrite", "rewrite-with-tombstone")
        if state is None:
            return record.new_record(value_schema=state_schema.schema, value=None, headers=headers)
        if not self.fields and not rewrite:
            return record.new_record(value_schema=state.schema, value=state, headers=headers)
        builder = copy_struct_basics(state.schema)
        for f in state.schema.fields:
            builder.field(f.name, f.schema)
        extras: list[tuple[str, Any]] = []
        for struct_name, name, out in self.fields:
            schema, value = self._lookup(envelope, struct_name, name)
            builder.field(out, as_optional(schema) if schema is not None else OPTIONAL_STRING_SCHEMA)
            extras.append((out, value))
        if rewrite:
            builder.field("__deleted", OPTIONAL_STRING_SCHEMA)
            extras.append(("__deleted", deleted))
        new_schema = builder.build()
        new_value = Struct(new_schema)
        for f in state.schema.fields:
            new_value.put(f.name, state.get(f.name))
        for out, value in extras:
            new_value.put(out, value)
        return record.new_record(value_schema=new_schema, value=new_value, headers=headers)

    @staticmethod
    def _lookup(envelope: Struct, struct_name: str | None, name: str) -> tuple[Schema | None, Any]:
        container: Struct | None = envelope
        if struct_name is not None:
            f = envelope.schema.field(struct_name)
            container = envelope.get(struct_name) if f is not None else None
        if container is None:
            return None, None
        field = container.schema.field(name)
        if field is None:
            return None, None
        return field.schema, container.get(name)


# --------------------------------------------------------------------------- Kafka's transforms


class RegexRouter(Transformation):
    """Rename the topic when ``regex`` matches it entirely (``replacement`` may use ``$1``)."""

    CONFIG = (ConfigDef()
              .define("regex", ConfigType.STRING, importance=Importance.HIGH, documentation="Regular expression for the topic.")
              .define("replacement", ConfigType.STRING, importance=Importance.HIGH, documentation="Replacement string."))

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        c = _parse(self.CONFIG, config)
        try:
            self.regex = re.compile(c["regex"])
        except re.error as e:
            raise ConfigException(f"Invalid value {c['regex']} for configuration regex: {e}") from e
        self.replacement = re.sub(r"\$(\d+)", r"\\g<\1>", c["replacement"])

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if self.regex.fullmatch(record.topic):
            return record.new_record(topic=self.regex.sub(self.replacement, record.topic, count=1))
        return record


class InsertField(_KeyOrValue):
    """Add record metadata or a static value as fields (``field!`` required, ``field?`` optional)."""

    CONFIG = (ConfigDef()
              .define("topic.field", ConfigType.STRING, None, importance=Importance.MEDIUM,
                      documentation="Field name for the topic.")
              .define("partition.field", ConfigType.STRING, None, importance=Importance.MEDIUM,
                      documentation="Field name for the partition.")
              .define("offset.field", ConfigType.STRING, None, importance=Importance.MEDIUM,
                      documentation="Field name for the offset (sink connectors only).")
              .define("timestamp.field", ConfigType.STRING, None, importance=Importance.MEDIUM,
                      documentation="Field name for the record timestamp.")
              .define("static.field", ConfigType.STRING, None, importance=Importance.MEDIUM,
                      documentation="Field name for the static value.")
              .define("static.value", ConfigType.STRING, None, importance=Importance.MEDIUM,
                      documentation="Static field value."))

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        c = _parse(self.CONFIG, config)

        def spec(key: str) -> tuple[str, bool] | None:
            raw = c[key]
            if not raw:
                return None
            if raw.endswith("!"):
                return raw[:-1], False
            return raw.rstrip("?"), True

        self.topic = spec("topic.field")
        self.partition = spec("partition.field")
        self.offset = spec("offset.field")
        self.timestamp = spec("timestamp.field")
        self.static = spec("static.field")
        self.static_value = c["static.value"]
        if not any((self.topic, self.partition, self.offset, self.timestamp, self.static)):
            raise ConfigException("No field insertion configured")
        if self.static is not None and self.static_value is None:
            raise ConfigException("static.value is required with static.field")

    def _additions(self, record: ConnectRecord) -> list[tuple[str, Schema, Any]]:
        out: list[tuple[str, Schema, Any]] = []
        if self.topic:
            out.append((self.topic[0], OPTIONAL_STRING_SCHEMA if self.topic[1] else STRING_SCHEMA, record.topic))
        if self.partition:
            out.append((self.partition[0], OPTIONAL_INT32_SCHEMA if self.partition[1] else INT32_SCHEMA,
                        record.kafka_partition))
        if self.offset:
            if not isinstance(record, SinkRecord):
                raise DataException("offset.field is only supported for sink connectors")
            out.append((self.offset[0], OPTIONAL_INT64_SCHEMA if self.offset[1] else INT64_SCHEMA, record.kafka_offset))
        if self.timestamp:
            ts = None if record.timestamp is None else Timestamp.to_logical(record.timestamp)
            out.append((self.timestamp[0], Timestamp.schema(optional=self.timestamp[1]), ts))
        if self.static:
            out.append((self.static[0], OPTIONAL_STRING_SCHEMA if self.static[1] else STRING_SCHEMA, self.static_value))
        return out

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema, value = self._operand(record)
        additions = self._additions(record)
        if schema is None:
            if value is None:
                return record
            if not isinstance(value, Mapping):
                raise DataException(f"InsertField requires a map or struct, got {type(value).__name__}")
            new_map = dict(value)
            for name, _, v in additions:
                new_map[name] = v
            if self.timestamp:  # schemaless: the raw epoch milliseconds, as Kafka's
                new_map[self.timestamp[0]] = record.timestamp
            return self._replace(record, None, new_map)
        if value is None:
            return record
        if schema.type is not Type.STRUCT or not isinstance(value, Struct):
            raise DataException("InsertField requires a struct value when a schema is present")
        builder = copy_struct_basics(schema)
        for f in schema.fields:
            builder.field(f.name, f.schema)
        for name, field_schema, _ in additions:
            builder.field(name, field_schema)
        new_schema = builder.build()
        out = Struct(new_schema)
        for f in schema.fields:
            out.put(f.name, value.get(f.name))
        for name, _, v in additions:
            out.put(name, v)
        return self._replace(record, new_schema, out)


class InsertFieldKey(InsertField):
    IS_KEY = True


class InsertFieldValue(InsertField):
    IS_KEY = False


class ReplaceField(_KeyOrValue):
    """Keep (``include``), drop (``exclude``) and rename (``renames`` ``old:new``) fields."""

    CONFIG = (ConfigDef()
              .define("exclude", ConfigType.LIST, "", importance=Importance.MEDIUM, documentation="Fields to drop.")
              .define("include", ConfigType.LIST, "", importance=Importance.MEDIUM,
                      documentation="Fields to keep; when set, all others are dropped.")
              .define("renames", ConfigType.LIST, "", importance=Importance.MEDIUM,
                      documentation="Field renames, as old:new pairs.")
              .define("blacklist", ConfigType.LIST, None, importance=Importance.LOW, documentation="Deprecated: exclude.")
              .define("whitelist", ConfigType.LIST, None, importance=Importance.LOW, documentation="Deprecated: include."))

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        c = _parse(self.CONFIG, config)
        self.exclude = set(c["exclude"] or c["blacklist"] or [])
        self.include = set(c["include"] or c["whitelist"] or [])
        self.renames: dict[str, str] = {}
        for pair in c["renames"]:
            old, sep, new = pair.partition(":")
            if not sep or not old or not new:
                raise ConfigException(f"Invalid rename mapping: {pair}")
            self.renames[old] = new

    def _keep(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        schema, value = self._operand(record)
        if value is None:
            return record
        if schema is None:
            if not isinstance(value, Mapping):
                raise DataException(f"ReplaceField requires a map or struct, got {type(value).__name__}")
            return self._replace(record, None,
                                 {self.renames.get(k, k): v for k, v in value.items() if self._keep(k)})
        if not isinstance(value, Struct):
            raise DataException("ReplaceField requires a struct value when a schema is present")
        builder = copy_struct_basics(schema)
        kept = [f for f in schema.fields if self._keep(f.name)]
        for f in kept:
            builder.field(self.renames.get(f.name, f.name), f.schema)
        new_schema = builder.build()
        out = Struct(new_schema)
        for f in kept:
            out.put(self.renames.get(f.name, f.name), value.get(f.name))
        return self._replace(record, new_schema, out)


class ReplaceFieldKey(ReplaceField):
    IS_KEY = True


class ReplaceFieldValue(ReplaceField):
    IS_KEY = False


class Filter(Transformation):
    """Drops every record it applies to: combine with ``predicate`` (and ``negate``)."""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        return None


# --------------------------------------------------------------------------- predicates


class TopicNameMatches(Predicate):
    CONFIG = ConfigDef().define("pattern", ConfigType.STRING, importance=Importance.MEDIUM,
                                documentation="A Java-style regular expression matched against the whole topic name.")

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        pattern = _parse(self.CONFIG, config)["pattern"]
        try:
            self.pattern = re.compile(pattern)
        except re.error as e:
            raise ConfigException(f"Invalid value {pattern} for configuration pattern: {e}") from e

    def test(self, record: ConnectRecord) -> bool:
        return self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Predicate):
    CONFIG = ConfigDef().define("name", ConfigType.STRING, importance=Importance.MEDIUM,
                                documentation="The header name.")

    def config_def(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        self.name = _parse(self.CONFIG, config)["name"]

    def test(self, record: ConnectRecord) -> bool:
        return any(k == self.name for k, _ in record.headers)


class RecordIsTombstone(Predicate):
    def test(self, record: ConnectRecord) -> bool:
        return record.value is None


TRANSFORM_ALIASES: dict[str, type[Transformation]] = {
    "io.debezium.transforms.ExtractNewRecordState": ExtractNewRecordState,
    "io.debezium.transforms.outbox.EventRouter": EventRouter,
    "org.apache.kafka.connect.transforms.RegexRouter": RegexRouter,
    "org.apache.kafka.connect.transforms.InsertField$Value": InsertFieldValue,
    "org.apache.kafka.connect.transforms.InsertField$Key": InsertFieldKey,
    "org.apache.kafka.connect.transforms.ReplaceField$Value": ReplaceFieldValue,
    "org.apache.kafka.connect.transforms.ReplaceField$Key": ReplaceFieldKey,
    "org.apache.kafka.connect.transforms.Filter": Filter,
}

PREDICATE_ALIASES: dict[str, type[Predicate]] = {
    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": TopicNameMatches,
    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": HasHeaderKey,
    "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone": RecordIsTombstone,
}
