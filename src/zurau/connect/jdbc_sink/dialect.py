"""PostgreSQL's side of the sink: column types for Connect schemas, Python values psycopg2 binds,
and the statements (all identifiers quoted, so names keep their case).

Type mapping (a logical or Debezium semantic name decides before the base type)::

    int8, int16 -> smallint     int32 -> integer     int64 -> bigint
    float32 -> real             float64 -> double precision
    boolean -> boolean          string -> text       bytes -> bytea
    Decimal (scale s, connect.decimal.precision p) -> numeric(p, s), numeric without p
    io.debezium.data.VariableScaleDecimal -> numeric
    Date, io.debezium.time.Date -> date
    Time, io.debezium.time.Time/MicroTime/NanoTime -> time
    Timestamp, io.debezium.time.Timestamp/MicroTimestamp/NanoTimestamp -> timestamp
    io.debezium.time.ZonedTimestamp -> timestamptz      io.debezium.time.ZonedTime -> timetz
    io.debezium.time.MicroDuration -> interval
    io.debezium.data.Json/Jsonb -> jsonb   io.debezium.data.Uuid -> uuid   io.debezium.data.Xml -> xml
    array of a primitive -> that type's array;  other arrays, maps and structs -> jsonb

Values: timestamps are bound as naive UTC ``datetime`` (a ``timestamp`` column stores UTC, as
Debezium's sink does); jsonb columns get compact JSON text; strings of the semantic types are bound
as text, which PostgreSQL casts to the column's type.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Sequence
from typing import Any

import psycopg2
from psycopg2 import sql

from zurau.connect.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from zurau.connect.postgres.type_mapping import (
    DEBEZIUM_DATE,
    DEBEZIUM_JSON,
    DEBEZIUM_MICRO_DURATION,
    DEBEZIUM_MICRO_TIME,
    DEBEZIUM_MICRO_TIMESTAMP,
    DEBEZIUM_TIME,
    DEBEZIUM_TIMESTAMP,
    DEBEZIUM_UUID,
    DEBEZIUM_XML,
    DEBEZIUM_ZONED_TIME,
    DEBEZIUM_ZONED_TIMESTAMP,
    DECIMAL_PRECISION_PARAMETER,
    VARIABLE_SCALE_DECIMAL,
)

DEBEZIUM_NANO_TIME = "io.debezium.time.NanoTime"
DEBEZIUM_NANO_TIMESTAMP = "io.debezium.time.NanoTimestamp"
DEBEZIUM_JSONB = "io.debezium.data.Jsonb"

_BASE_TYPES: dict[Type, str] = {
    Type.INT8: "smallint", Type.INT16: "smallint", Type.INT32: "integer", Type.INT64: "bigint",
    Type.FLOAT32: "real", Type.FLOAT64: "double precision", Type.BOOLEAN: "boolean", Type.STRING: "text",
    Type.BYTES: "bytea", Type.MAP: "jsonb", Type.STRUCT: "jsonb",
}
_NAMED_TYPES: dict[str, str] = {
    VARIABLE_SCALE_DECIMAL: "numeric",
    Date.LOGICAL_NAME: "date", DEBEZIUM_DATE: "date",
    Time.LOGICAL_NAME: "time", DEBEZIUM_TIME: "time", DEBEZIUM_MICRO_TIME: "time", DEBEZIUM_NANO_TIME: "time",
    Timestamp.LOGICAL_NAME: "timestamp", DEBEZIUM_TIMESTAMP: "timestamp", DEBEZIUM_MICRO_TIMESTAMP: "timestamp",
    DEBEZIUM_NANO_TIMESTAMP: "timestamp", DEBEZIUM_ZONED_TIMESTAMP: "timestamptz", DEBEZIUM_ZONED_TIME: "timetz",
    DEBEZIUM_MICRO_DURATION: "interval", DEBEZIUM_JSON: "jsonb", DEBEZIUM_JSONB: "jsonb", DEBEZIUM_UUID: "uuid",
    DEBEZIUM_XML: "xml",
}
_EPOCH = dt.datetime(1970, 1, 1)


def column_type(schema: Schema) -> str:
    """The PostgreSQL column type for values of ``schema``."""
    if schema.name == Decimal.LOGICAL_NAME:
        params = schema.parameters or {}
        precision = params.get(DECIMAL_PRECISION_PARAMETER)
        return f"numeric({int(precision)},{Decimal.scale(schema)})" if precision else "numeric"
    if schema.name in _NAMED_TYPES:
        return _NAMED_TYPES[schema.name]
    if schema.type is Type.ARRAY:
        element = schema.value_schema
        if element is not None and element.type.is_primitive:
            return column_type(element) + "[]"
        return "jsonb"
    return _BASE_TYPES[schema.type]


def _json_ready(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: _json_ready(value.get(f.name)) for f in value.schema.fields}
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return value


def _naive_utc(value: dt.datetime) -> dt.datetime:
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo is not None else value


def bind_value(schema: Schema, value: Any) -> Any:
    """``value`` (Connect's Python form for ``schema``) as psycopg2 binds it into the column of
    :func:`column_type(schema) <column_type>`."""
    if value is None:
        return None
    name = schema.name
    if name == VARIABLE_SCALE_DECIMAL and isinstance(value, Struct):
        unscaled = int.from_bytes(value.get("value"), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-int(value.get("scale")))
    if name in (DEBEZIUM_DATE, Date.LOGICAL_NAME) and isinstance(value, int):
        return Date.to_logical(value)
    if name == Time.LOGICAL_NAME and isinstance(value, int):
        return Time.to_logical(value)
    if name in (DEBEZIUM_TIME, DEBEZIUM_MICRO_TIME, DEBEZIUM_NANO_TIME) and isinstance(value, int):
        per_second = {DEBEZIUM_TIME: 1_000, DEBEZIUM_MICRO_TIME: 1_000_000, DEBEZIUM_NANO_TIME: 1_000_000_000}[name]
        micros = value * 1_000_000 // per_second
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time()
    if name in (DEBEZIUM_TIMESTAMP, DEBEZIUM_MICRO_TIMESTAMP, DEBEZIUM_NANO_TIMESTAMP, Timestamp.LOGICAL_NAME) \
            and isinstance(value, int):
        per_second = {DEBEZIUM_MICRO_TIMESTAMP: 1_000_000, DEBEZIUM_NANO_TIMESTAMP: 1_000_000_000}.get(name, 1_000)
        return _EPOCH + dt.timedelta(microseconds=value * 1_000_000 // per_second)
    if name == DEBEZIUM_MICRO_DURATION and isinstance(value, int):
        return dt.timedelta(microseconds=value)
    if isinstance(value, dt.datetime):
        return _naive_utc(value)
    if isinstance(value, (bytes, bytearray)):
        return psycopg2.Binary(bytes(value))
    if column_type(schema) == "jsonb":
        if isinstance(value, str) and name in (DEBEZIUM_JSON, DEBEZIUM_JSONB):
            return value
        return json.dumps(_json_ready(value), separators=(",", ":"))
    if isinstance(value, (list, tuple)) and schema.value_schema is not None:
        return [bind_value(schema.value_schema, v) for v in value]
    return value


# --------------------------------------------------------------------------- statements


def table_identifier(schema_name: str | None, table: str) -> sql.Composable:
    return sql.Identifier(schema_name, table) if schema_name else sql.Identifier(table)


def _names(columns: Sequence[str]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(c) for c in columns)


def _placeholders(n: int) -> sql.Composable:
    return sql.SQL(", ").join(sql.Placeholder() * n)


def _where(keys: Sequence[str]) -> sql.Composable:
    return sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in keys)


def create_table(table: sql.Composable, columns: Sequence[tuple[str, str, bool]], keys: Sequence[str]) -> sql.Composed:
    """``CREATE TABLE IF NOT EXISTS`` with ``(name, type, nullable)`` columns and the primary key."""
    parts = [sql.SQL("{} {}{}").format(sql.Identifier(name), sql.SQL(pg_type), sql.SQL("" if nullable else " NOT NULL"))
             for name, pg_type, nullable in columns]
    if keys:
        parts.append(sql.SQL("PRIMARY KEY ({})").format(_names(keys)))
    return sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(table, sql.SQL(", ").join(parts))


def add_column(table: sql.Composable, name: str, pg_type: str) -> sql.Composed:
    """Added columns are nullable: rows already there have no value for them."""
    return sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}").format(table, sql.Identifier(name), sql.SQL(pg_type))


def insert(table: sql.Composable, columns: Sequence[str]) -> sql.Composed:
    return sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(table, _names(columns), _placeholders(len(columns)))


def upsert(table: sql.Composable, columns: Sequence[str], keys: Sequence[str]) -> sql.Composed:
    """INSERT .. ON CONFLICT (keys) DO UPDATE SET every other column (DO NOTHING when all columns are
    key columns)."""
    others = [c for c in columns if c not in keys]
    action = (sql.SQL("DO UPDATE SET {}").format(sql.SQL(", ").join(
        sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in others)) if others else sql.SQL("DO NOTHING"))
    return sql.SQL("{} ON CONFLICT ({}) {}").format(insert(table, columns), _names(keys), action)


def update(table: sql.Composable, columns: Sequence[str], keys: Sequence[str]) -> sql.Composed:
    """UPDATE of the non-key ``columns``; parameters: those values, then the key values."""
    others = [c for c in columns if c not in keys]
    assignments = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in others)
    return sql.SQL("UPDATE {} SET {} WHERE {}").format(table, assignments, _where(keys))


def delete(table: sql.Composable, keys: Sequence[str]) -> sql.Composed:
    return sql.SQL("DELETE FROM {} WHERE {}").format(table, _where(keys))
