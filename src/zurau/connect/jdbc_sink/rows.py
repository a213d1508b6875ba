"""From a sink record to the row operation it stands for (no database access).

A record becomes a :class:`RowChange`: the target table, ``upsert`` (write the row, as the
connector's ``insert.mode`` says) or ``delete``, the columns with their Connect schemas and values,
and which of them form the primary key:

* ``primary.key.mode=none``: the value's fields, no key;
* ``kafka``: ``__connect_topic``, ``__connect_partition``, ``__connect_offset`` (or the three names
  in ``primary.key.fields``) then the value's fields;
* ``record_key``: the key's fields (all, or those in ``primary.key.fields``; a primitive key is one
  column named by ``primary.key.fields``, default ``__connect_key``) then the value's other fields;
* ``record_value``: the value's fields, keyed by ``primary.key.fields`` (default: all of them).

A tombstone (null value) is a delete when ``delete.enabled``, else skipped. A Debezium change event
that was not flattened (value schema ``*.Envelope`` with ``op``/``before``/``after``) is understood
as well: ``op=d`` deletes, any other op writes its ``after`` image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zurau.connect.api import ConnectException
from zurau.connect.data import INT32_SCHEMA, INT64_SCHEMA, STRING_SCHEMA, Schema, Struct, Type
from zurau.connect.jdbc_sink.config import SinkConfig
from zurau.connect.records import SinkRecord

KAFKA_COLUMNS = ("__connect_topic", "__connect_partition", "__connect_offset")
DEFAULT_KEY_COLUMN = "__connect_key"
WRITE, DELETE = "write", "delete"


@dataclass(frozen=True)
class Column:
    name: str
    schema: Schema
    value: Any


@dataclass(frozen=True)
class RowChange:
    """One row operation on ``(schema, table)`` (schema None: the connection's current schema)."""

    schema: str | None
    table: str
    op: str  # WRITE or DELETE
    columns: tuple[Column, ...]
    keys: tuple[str, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def table_name(config: SinkConfig, topic: str) -> tuple[str | None, str]:
    """``table.name.format`` with ``${topic}`` (dots as underscores), split at its first dot into
    schema and table."""
    resolved = config.table_name_format.replace("${topic}", topic.replace(".", "_"))
    schema, dot, table = resolved.partition(".")
    return (schema, table) if dot else (None, resolved)


def _is_envelope(schema: Schema | None) -> bool:
    return (schema is not None and schema.type is Type.STRUCT and (schema.name or "").endswith(".Envelope")
            and schema.field("op") is not None and schema.field("after") is not None)


def _struct_columns(struct: Struct, only: tuple[str, ...] = ()) -> list[Column]:
    fields = struct.schema.fields
    if only:
        by_name = {f.name: f for f in fields}
        missing = [n for n in only if n not in by_name]
        if missing:
            raise ConnectException(f"primary key field(s) {', '.join(missing)} not in the record "
                                   f"(fields: {', '.join(by_name)})")
        fields = tuple(by_name[n] for n in only)
    return [Column(f.name, f.schema, struct.get(f.name)) for f in fields]


def _key_columns(config: SinkConfig, record: SinkRecord) -> list[Column]:
    if record.key is None or record.key_schema is None:
        raise ConnectException(f"primary.key.mode=record_key needs a key with a schema; the record at "
                               f"{record.topic}-{record.kafka_partition}@{record.kafka_offset} has none "
                               "(set key.converter.schemas.enable=true)")
    if record.key_schema.type is Type.STRUCT:
        if not isinstance(record.key, Struct):
            raise ConnectException("the record key does not match its struct schema")
        return _struct_columns(record.key, config.pk_fields)
    if len(config.pk_fields) > 1:
        raise ConnectException("a primitive record key fills one column, but primary.key.fields names "
                               f"{len(config.pk_fields)}")
    name = config.pk_fields[0] if config.pk_fields else DEFAULT_KEY_COLUMN
    return [Column(name, record.key_schema, record.key)]


def row_change(config: SinkConfig, record: SinkRecord) -> RowChange | None:
    """What ``record`` does to its table, or None when it does nothing (a tombstone while deletes
    are disabled)."""
    schema_name, table = table_name(config, record.topic)
    value, value_schema = record.value, record.value_schema
    deleting = value is None
    if not deleting and _is_envelope(value_schema):
        assert isinstance(value, Struct)
        if value.get("op") == "d":
            deleting = True
        else:
            after = value.get("after")
            after_field = value.schema.field("after")
            assert after_field is not None
            value, value_schema = after, after_field.schema
            if value is None:
                return None
    if deleting:
        if not config.delete_enabled:
            return None
        keys = _key_columns(config, record)
        return RowChange(schema_name, table, DELETE, tuple(keys), tuple(c.name for c in keys))
    if value_schema is None or value_schema.type is not Type.STRUCT or not isinstance(value, Struct):
        raise ConnectException(
            f"the record at {record.topic}-{record.kafka_partition}@{record.kafka_offset} has no struct value "
            "schema; the sink needs one (JSON: value.converter.schemas.enable=true)")
    value_columns = _struct_columns(value)
    if config.pk_mode == "none":
        return RowChange(schema_name, table, WRITE, tuple(value_columns), ())
    if config.pk_mode == "kafka":
        names = config.pk_fields or KAFKA_COLUMNS
        coords = [Column(names[0], STRING_SCHEMA, record.topic),
                  Column(names[1], INT32_SCHEMA, record.kafka_partition),
                  Column(names[2], INT64_SCHEMA, record.kafka_offset)]
        rest = [c for c in value_columns if c.name not in names]
        return RowChange(schema_name, table, WRITE, tuple(coords + rest), tuple(names))
    if config.pk_mode == "record_key":
        keys = _key_columns(config, record)
        key_names = {c.name for c in keys}
        rest = [c for c in value_columns if c.name not in key_names]
        return RowChange(schema_name, table, WRITE, tuple(keys + rest), tuple(c.name for c in keys))
    # record_value
    key_names_t = config.pk_fields or tuple(c.name for c in value_columns)
    _struct_columns(value, key_names_t)  # every named field must exist
    return RowChange(schema_name, table, WRITE, tuple(value_columns), tuple(key_names_t))
