"""The source's fixed schema, as Spark DDL and as the Arrow schema ``read()`` must yield.

``key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
timestampType int`` and, with ``includeHeaders=true``, ``headers array<struct<key: string,
value: binary>>`` -- Spark's Kafka source schema, every column nullable. ``timestampType`` uses
Kafka's (Java) ids: 0 CreateTime, 1 LogAppendTime, -1 none.

Arrow: Spark checks that a yielded ``RecordBatch`` schema equals
``to_arrow_schema(schema, timezone="UTC")`` exactly (timestamps in microseconds, UTC; list
children named ``element``); :func:`arrow_schema` builds that same schema without needing a
Spark session.
"""

from __future__ import annotations

import functools

import pyarrow as pa

SCHEMA_DDL = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_TYPE))


def schema_ddl(include_headers: bool) -> str:
    """Spark DDL of the source schema."""
    return f"{SCHEMA_DDL}, {HEADERS_DDL}" if include_headers else SCHEMA_DDL


@functools.cache
def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects from ``read()`` (see the module docstring)."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)
