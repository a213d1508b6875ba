"""Debezium's change event format: topics, key and value schemas, the envelope and its ``source``
block, tombstones and heartbeats.

For table ``<schema>.<table>`` under ``topic.prefix=<p>``:

* topic ``<p>.<schema>.<table>``;
* key: a struct named ``<p>.<schema>.<table>.Key`` holding the primary key columns in key order
  (no key, and a null key schema, for a table without a primary key);
* value: a struct named ``<p>.<schema>.<table>.Envelope`` (version 2) with
  ``before`` and ``after`` (optional structs ``<p>.<schema>.<table>.Value`` with every column),
  ``source`` (``io.debezium.connector.postgresql.Source``: version, connector ``postgresql``,
  name, ts_ms, snapshot, db, sequence, ts_us, ts_ns, schema, table, txId, lsn, xmin), ``op``
  (``c`` create, ``u`` update, ``d`` delete, ``r`` snapshot read, ``t`` truncate), ``ts_ms``,
  ``ts_us``, ``ts_ns`` (when the connector processed the event) and ``transaction`` (null: no
  transaction metadata is emitted);
* a delete is followed by a tombstone (same key, null value) unless ``tombstones.on.delete=false``;
* heartbeats go to ``__debezium-heartbeat.<p>`` with key ``{serverName}``
  (``io.debezium.connector.common.ServerNameKey``) and value ``{ts_ms}``
  (``io.debezium.connector.common.Heartbeat``).

A column PostgreSQL did not send (an unchanged TOASTed value) holds
``unavailable.value.placeholder``. A required (NOT NULL) column without a value, such as a
non-key column of the before-image of a delete under ``REPLICA IDENTITY DEFAULT``, holds its
type's zero value (0, "", false, epoch), which is what Debezium writes there.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zurau.connect.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from zurau.connect.postgres.catalog import CatalogColumn, CatalogTable
from zurau.connect.postgres.pgoutput import UNCHANGED_TOAST, ColumnValue, Relation
from zurau.connect.postgres.type_mapping import (
    ColumnMapping,
    MappingOptions,
    PgType,
    column_mapping,
    unavailable_value,
    with_default,
)

#: The Debezium release whose event format this connector writes (``source.version``).
DEBEZIUM_VERSION = "2.7.4.Final"
CONNECTOR_NAME = "postgresql"
ENVELOPE_VERSION = 2

SNAPSHOT_ENUM_VALUES = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"

SOURCE_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.postgresql.Source")
    .field("version", Schema.STRING_SCHEMA)
    .field("connector", Schema.STRING_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field(
        "snapshot",
        SchemaBuilder.string()
        .name("io.debezium.data.Enum")
        .version(1)
        .parameter("allowed", SNAPSHOT_ENUM_VALUES)
        .default_value("false")
        .optional()
        .build(),
    )
    .field("db", Schema.STRING_SCHEMA)
    .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    .field("schema", Schema.STRING_SCHEMA)
    .field("table", Schema.STRING_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
    .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)

TRANSACTION_BLOCK_SCHEMA = (
    SchemaBuilder.struct()
    .name("event.block")
    .version(1)
    .optional()
    .field("id", Schema.STRING_SCHEMA)
    .field("total_order", Schema.INT64_SCHEMA)
    .field("data_collection_order", Schema.INT64_SCHEMA)
    .build()
)

HEARTBEAT_KEY_SCHEMA = (
    SchemaBuilder.struct().name("io.debezium.connector.common.ServerNameKey").field("serverName", Schema.STRING_SCHEMA).build()
)
HEARTBEAT_VALUE_SCHEMA = (
    SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").field("ts_ms", Schema.INT64_SCHEMA).build()
)


def now_ns() -> int:
    return time.time_ns()


def zero_value(schema: Schema) -> Any:
    """The value Debezium puts in a required field that has no value."""
    if schema.default_value is not None:
        return schema.default_value
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return decimal.Decimal(0).scaleb(-Decimal.scale(schema))
    if name == Date.LOGICAL_NAME:
        return dt.date(1970, 1, 1)
    if name == Time.LOGICAL_NAME:
        return dt.time(0)
    if name == Timestamp.LOGICAL_NAME:
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    t = schema.type
    if t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        return 0
    if t in (Type.FLOAT32, Type.FLOAT64):
        return 0.0
    if t is Type.BOOLEAN:
        return False
    if t is Type.STRING:
        return ""
    if t is Type.BYTES:
        return b""
    if t is Type.ARRAY:
        return []
    if t is Type.MAP:
        return {}
    struct = Struct(schema)
    for f in schema.fields:
        struct.put(f.name, None if f.schema.optional else zero_value(f.schema))
    return struct


@dataclass(frozen=True)
class _Column:
    name: str
    mapping: ColumnMapping
    key_position: int | None


class TableSchema:
    """How rows of one table (in one shape: a column added makes a new TableSchema) become
    Debezium events. ``columns`` follow the order of the tuples this schema reads (the Relation
    message's for streaming, the catalog's for snapshots)."""

    def __init__(
        self,
        topic_prefix: str,
        table: CatalogTable,
        columns: Sequence[tuple[str, PgType, bool, int | None, str | None]],
        options: MappingOptions,
        placeholder: str,
    ) -> None:
        self.schema_name = table.schema
        self.table_name = table.name
        self.oid = table.oid
        self.placeholder = placeholder
        base = f"{topic_prefix}.{table.schema}.{table.name}"
        self.topic = base
        self.columns = tuple(
            _Column(name, with_default(column_mapping(pg_type, nullable, options), pg_type, default), key_position)
            for name, pg_type, nullable, key_position, default in columns
        )
        value_builder = SchemaBuilder.struct().name(f"{base}.Value").optional()
        for c in self.columns:
            value_builder.field(c.name, c.mapping.schema)
        self.value_schema = value_builder.build()
        keyed = sorted((c for c in self.columns if c.key_position is not None), key=lambda c: c.key_position or 0)
        self.key_indexes = tuple(self.columns.index(c) for c in keyed)
        self.key_schema: Schema | None = None
        if keyed:
            key_builder = SchemaBuilder.struct().name(f"{base}.Key")
            for c in keyed:
                key_builder.field(c.name, c.mapping.schema)
            self.key_schema = key_builder.build()
        self.envelope_schema = (
            SchemaBuilder.struct()
            .name(f"{base}.Envelope")
            .version(ENVELOPE_VERSION)
            .field("before", self.value_schema)
            .field("after", self.value_schema)
            .field("source", SOURCE_SCHEMA)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
            .field("transaction", TRANSACTION_BLOCK_SCHEMA)
            .build()
        )

    @classmethod
    def for_relation(
        cls, topic_prefix: str, relation: Relation, table: CatalogTable | None, options: MappingOptions, placeholder: str
    ) -> TableSchema:
        """The schema of a streamed relation: the Relation message's columns and types, with
        nullability and the primary key from the catalog (a column the catalog does not know,
        for example dropped since, is optional and not part of the key)."""
        if table is None:
            table = CatalogTable(relation.oid, relation.namespace, relation.name, relation.replica_identity, ())
        columns = []
        for rc in relation.columns:
            known: CatalogColumn | None = table.column(rc.name)
            if known is not None and known.type.oid == rc.type_oid:
                pg_type = known.type
            else:
                pg_type = PgType.builtin(rc.type_oid, rc.type_modifier)
            columns.append(
                (
                    rc.name,
                    pg_type,
                    known.nullable if known else True,
                    known.key_position if known else None,
                    known.default_expression if known and known.type.oid == rc.type_oid else None,
                )
            )
        named = CatalogTable(relation.oid, relation.namespace, relation.name, relation.replica_identity, table.columns)
        return cls(topic_prefix, named, columns, options, placeholder)

    @classmethod
    def for_table(cls, topic_prefix: str, table: CatalogTable, options: MappingOptions, placeholder: str) -> TableSchema:
        """The schema of a table as the catalog describes it (snapshots)."""
        columns = [(c.name, c.type, c.nullable, c.key_position, c.default_expression) for c in table.columns]
        return cls(topic_prefix, table, columns, options, placeholder)

    # -- values ----------------------------------------------------------------------------------
    def _convert(self, column: _Column, raw: ColumnValue) -> Any:
        schema = column.mapping.schema
        if raw is UNCHANGED_TOAST:
            value = unavailable_value(schema, self.placeholder)
        elif raw is None:
            value = None
        elif isinstance(raw, bytes):
            value = column.mapping.convert(raw.decode("utf-8"))
        else:
            assert isinstance(raw, str)
            value = column.mapping.convert(raw)
        if value is None and not schema.optional:
            return zero_value(schema)
        return value

    def row(self, values: Sequence[ColumnValue]) -> Struct:
        """A ``<...>.Value`` struct from one tuple (text values in column order)."""
        if len(values) != len(self.columns):
            raise ValueError(f"{self.topic}: a tuple of {len(values)} columns for a table of {len(self.columns)}")
        struct = Struct(self.value_schema)
        for column, raw in zip(self.columns, values, strict=True):
            struct.put(column.name, self._convert(column, raw))
        return struct

    def key(self, values: Sequence[ColumnValue]) -> Struct | None:
        """The ``<...>.Key`` struct of a tuple (None for a table without a primary key)."""
        if self.key_schema is None:
            return None
        struct = Struct(self.key_schema)
        for index in self.key_indexes:
            column = self.columns[index]
            struct.put(column.name, self._convert(column, values[index]))
        return struct

    def key_values(self, values: Sequence[ColumnValue]) -> tuple[ColumnValue, ...]:
        return tuple(values[i] for i in self.key_indexes)

    def envelope(self, op: str, before: Struct | None, after: Struct | None, source: Struct) -> Struct:
        ns = now_ns()
        return (
            Struct(self.envelope_schema)
            .put("before", before)
            .put("after", after)
            .put("source", source)
            .put("op", op)
            .put("ts_ms", ns // 1_000_000)
            .put("ts_us", ns // 1_000)
            .put("ts_ns", ns)
            .put("transaction", None)
        )


@dataclass(frozen=True)
class SourceInfo:
    """Where an event comes from, written into the envelope's ``source`` block."""

    server_name: str
    db: str
    ts_us: int  # commit time (streaming) or read time (snapshot), microseconds since the epoch
    snapshot: str  # "false", "first", "first_in_data_collection", "true", "last_in_data_collection", "last"
    last_commit_lsn: int | None
    lsn: int | None
    tx_id: int | None

    def struct(self, schema_name: str, table_name: str) -> Struct:
        sequence = json.dumps(
            [None if self.last_commit_lsn is None else str(self.last_commit_lsn), None if self.lsn is None else str(self.lsn)],
            separators=(",", ":"),
        )
        return (
            Struct(SOURCE_SCHEMA)
            .put("version", DEBEZIUM_VERSION)
            .put("connector", CONNECTOR_NAME)
            .put("name", self.server_name)
            .put("ts_ms", self.ts_us // 1000)
            .put("snapshot", self.snapshot)
            .put("db", self.db)
            .put("sequence", sequence)
            .put("ts_us", self.ts_us)
            .put("ts_ns", self.ts_us * 1000)
            .put("schema", schema_name)
            .put("table", table_name)
            .put("txId", self.tx_id)
            .put("lsn", self.lsn)
            .put("xmin", None)
        )


def heartbeat_key(server_name: str) -> Struct:
    return Struct(HEARTBEAT_KEY_SCHEMA).put("serverName", server_name)


def heartbeat_value(ts_ms: int) -> Struct:
    return Struct(HEARTBEAT_VALUE_SCHEMA).put("ts_ms", ts_ms)


__all__ = [
    "DEBEZIUM_VERSION",
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "SOURCE_SCHEMA",
    "SourceInfo",
    "TableSchema",
    "heartbeat_key",
    "heartbeat_value",
    "zero_value",
]
