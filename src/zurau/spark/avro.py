"""Avro with a schema registry in Spark: Confluent-framed Avro to columns and back.

``from_avro(col, registry_url, subject=...)`` decodes a binary column written by any
registry-aware Avro serializer (confluent-kafka's ``AvroSerializer``, Kafka's
``KafkaAvroSerializer``) into a struct column: each value names its writer schema by id
(:mod:`zurau.client.schema_registry` for the wire format); the writer schema is fetched once per
executor process and id, and the record is resolved into the *reader* schema with Avro's
schema-resolution rules (fields the reader adds take their defaults, fields it lacks are skipped).
The reader schema -- and so the column's Spark type -- is fixed when the query is defined: the
subject's latest version then, or ``reader_schema``. A producer that moves to a newer compatible
version while a query runs is therefore read on: old and new records come out in the reader's shape.

``to_avro(col, registry_url, subject, schema)`` encodes a struct column into framed Avro with the
schema's id, registering the schema under the subject first (its existing id when already there;
a change the subject's compatibility level refuses fails at definition time with the registry's
message).

Types, Avro -> Spark: boolean, int, long, float, double, string, bytes and fixed map to their Spark
twins; ``date`` to DateType, ``timestamp-millis``/``-micros`` to TimestampType, ``local-timestamp-*``
to TimestampNTZType, ``decimal`` to DecimalType, enum and ``uuid`` to StringType, records to
StructType, arrays to ArrayType, maps to MapType with string keys, ``["null", T]`` to a nullable T.
Unions of several non-null types are refused with a clear error. Schema references are not
followed (a schema must be self-contained).

``mode`` as Spark's ``from_avro``: ``FAILFAST`` (default) fails the task on a value that is not
framed Avro or names an unknown id; ``PERMISSIVE`` yields null for it.
"""

from __future__ import annotations

import io
import json
import threading
from typing import TYPE_CHECKING, Any

from zurau.client.schema_registry import SchemaRegistryClient, frame, unframe

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

MODES = ("FAILFAST", "PERMISSIVE")

# Per executor (Python worker) process: one registry client per URL, writer schemas by id.
_clients: dict[str, SchemaRegistryClient] = {}
_writers: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def _client(url: str) -> SchemaRegistryClient:
    with _lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = SchemaRegistryClient(url)
        return client


def _writer_schema(url: str, schema_id: int) -> Any:
    from fastavro import parse_schema

    key = (url, schema_id)
    with _lock:
        parsed = _writers.get(key)
    if parsed is None:
        registered = _client(url).schema_by_id(schema_id)
        if registered.schema_type != "AVRO":
            raise ValueError(f"schema id {schema_id} is {registered.schema_type}, not AVRO")
        parsed = parse_schema(json.loads(registered.schema))
        with _lock:
            _writers[key] = parsed
    return parsed


def spark_type(schema: Any) -> DataType:
    """The Spark type of an Avro schema (JSON-decoded: dict, list or type name)."""
    from pyspark.sql import types as T

    named: dict[str, DataType] = {}
    defining: set[str] = set()

    def convert(s: Any, namespace: str | None) -> tuple[DataType, bool]:
        """(type, nullable)."""
        if isinstance(s, list):
            branches = [b for b in s if b != "null"]
            if len(branches) != 1:
                raise ValueError(f"unions of several non-null types are not supported: {s}")
            dt, _ = convert(branches[0], namespace)
            return dt, len(branches) < len(s)
        if isinstance(s, str):
            primitive = {
                "boolean": T.BooleanType(), "int": T.IntegerType(), "long": T.LongType(),
                "float": T.FloatType(), "double": T.DoubleType(), "string": T.StringType(),
                "bytes": T.BinaryType(), "null": T.NullType(),
            }  # fmt: skip
            if s in primitive:
                return primitive[s], s == "null"
            full = s if "." in s or namespace is None else f"{namespace}.{s}"
            if full in defining or s in defining:
                raise ValueError(f"recursive Avro record {s!r}: Spark types cannot nest themselves")
            for candidate in (full, s):
                if candidate in named:
                    return named[candidate], False
            raise ValueError(f"unknown Avro type {s!r}")
        if not isinstance(s, dict) or "type" not in s:
            raise ValueError(f"not an Avro schema: {s!r}")
        kind, logical = s["type"], s.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return T.DecimalType(int(s["precision"]), int(s.get("scale", 0))), False
        if logical == "date" and kind == "int":
            return T.DateType(), False
        if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
            return T.TimestampType(), False
        if logical in ("local-timestamp-millis", "local-timestamp-micros") and kind == "long":
            return T.TimestampNTZType(), False
        if kind == "record":
            ns = s.get("namespace", namespace)
            name = s["name"] if "." in s["name"] or ns is None else f"{ns}.{s['name']}"
            defining.update((name, s["name"]))
            fields = []
            for f in s.get("fields", []):
                dt, nullable = convert(f["type"], ns)
                fields.append(T.StructField(f["name"], dt, nullable))
            defining.difference_update((name, s["name"]))
            struct = T.StructType(fields)
            named[name] = named[s["name"]] = struct
            return struct, False
        if kind == "enum":
            named[s["name"]] = T.StringType()
            return T.StringType(), False
        if kind == "fixed":
            named[s["name"]] = T.BinaryType()
            return T.BinaryType(), False
        if kind == "array":
            dt, nullable = convert(s["items"], namespace)
            return T.ArrayType(dt, nullable), False
        if kind == "map":
            dt, nullable = convert(s["values"], namespace)
            return T.MapType(T.StringType(), dt, nullable), False
        return convert(kind, namespace)

    dt, _ = convert(schema, None)
    return dt


def _reader(registry_url: str, subject: str | None, reader_schema: str | None) -> str:
    if reader_schema is not None:
        return reader_schema
    if subject is None:
        raise ValueError("from_avro needs a subject (its latest version is the reader schema) or reader_schema")
    return _client(registry_url).latest(subject).schema


def from_avro(
    col: Column | str,
    registry_url: str,
    subject: str | None = None,
    reader_schema: str | None = None,
    mode: str = "FAILFAST",
) -> Column:
    """A struct column decoded from Confluent-framed Avro in ``col`` (see the module docstring)."""
    from fastavro import parse_schema, schemaless_reader
    from pyspark.sql import functions as F

    if mode.upper() not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    permissive = mode.upper() == "PERMISSIVE"
    reader_text = _reader(registry_url, subject, reader_schema)
    reader_json = json.loads(reader_text)
    return_type = spark_type(reader_json)
    reader_parsed = parse_schema(reader_json)

    def decode(data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            schema_id, payload = unframe(data)
            writer = _writer_schema(registry_url, schema_id)
            return schemaless_reader(io.BytesIO(payload), writer, reader_parsed)
        except Exception:
            if permissive:
                return None
            raise

    return F.udf(decode, return_type, useArrow=True)(F.col(col) if isinstance(col, str) else col)


def to_avro(col: Column | str, registry_url: str, subject: str, schema: str) -> Column:
    """A binary column of Confluent-framed Avro encoding the struct ``col`` with ``schema``,
    registered under ``subject`` now (see the module docstring)."""
    from fastavro import parse_schema, schemaless_writer
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema_id = _client(registry_url).register(subject, schema)
    parsed = parse_schema(json.loads(schema))

    def encode(row: Any) -> bytes | None:
        if row is None:
            return None
        record = row.asDict(recursive=True) if hasattr(row, "asDict") else row
        buf = io.BytesIO()
        schemaless_writer(buf, parsed, record)
        return frame(schema_id, buf.getvalue())

    return F.udf(encode, T.BinaryType(), useArrow=True)(F.col(col) if isinstance(col, str) else col)
