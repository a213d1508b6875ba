"""The PostgreSQL sink's pure parts: settings (Debezium names over Confluent aliases), record to
row change, and the type mapping."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from zurau.config import ConfigException
from zurau.connect.api import ConnectException
from zurau.connect.data import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Decimal,
    SchemaBuilder,
    Struct,
)
from zurau.connect.jdbc_sink.config import SinkConfig, parse_jdbc_url, validate_config
from zurau.connect.jdbc_sink.dialect import bind_value, column_type
from zurau.connect.jdbc_sink.rows import DELETE, WRITE, row_change, table_name
from zurau.connect.records import SinkRecord

URL = "jdbc:postgresql://db.example:5433/shop?currentSchema=replica&user=u1"


def config(**props: str) -> SinkConfig:
    return SinkConfig.from_props({"connection.url": URL, **props})


def test_jdbc_url_and_login_settings() -> None:
    target = parse_jdbc_url(URL)
    assert (target.host, target.port, target.dbname, target.user, target.current_schema) == (
        "db.example", 5433, "shop", "u1", "replica")
    assert parse_jdbc_url("jdbc:postgresql://[::1]/db").host == "::1"
    assert config(**{"connection.user": "confluent"}).target.user == "confluent"
    assert config(**{"connection.username": "dbz", "connection.user": "confluent"}).target.user == "dbz"
    with pytest.raises(ConfigException, match="only PostgreSQL"):
        parse_jdbc_url("jdbc:mysql://h/db")
    with pytest.raises(ConfigException, match="names no database"):
        parse_jdbc_url("jdbc:postgresql://h:5432")


def test_aliases_and_cross_checks() -> None:
    c = config(**{"pk.mode": "record_value", "pk.fields": "a,b", "insert.mode": "upsert", "auto.create": "true"})
    assert (c.pk_mode, c.pk_fields, c.auto_create, c.auto_evolve) == ("record_value", ("a", "b"), True, False)
    c = config(**{"schema.evolution": "basic", "auto.evolve": "false"})
    assert (c.auto_create, c.auto_evolve) == (True, True)
    with pytest.raises(ConfigException, match="needs a primary key"):
        config(**{"insert.mode": "update"})
    values = {cv.name: cv.errors for cv in validate_config(
        {"connection.url": URL, "delete.enabled": "true", "pk.mode": "record_value"})}
    assert values["delete.enabled"] == ["delete.enabled=true needs pk.mode=record_key"]
    assert not values["insert.mode"]


def test_table_name_format() -> None:
    assert table_name(config(), "srv.public.orders") == (None, "srv_public_orders")
    assert table_name(config(**{"table.name.format": "replica.${topic}_copy"}), "a.b") == ("replica", "a_b_copy")
    assert table_name(config(**{"collection.name.format": "x", "table.name.format": "y"}), "t") == (None, "x")


KEY = SchemaBuilder.struct().name("k").field("id", INT32_SCHEMA).build()
VALUE = SchemaBuilder.struct().name("v").field("id", INT32_SCHEMA).field("name", OPTIONAL_STRING_SCHEMA).build()


def record(value: Struct | None, key: object = None, key_schema: object = KEY, **kw: object) -> SinkRecord:
    if key is None:
        key = Struct(KEY).put("id", 7)
    return SinkRecord(topic="t", kafka_partition=0, kafka_offset=42, key_schema=key_schema, key=key,  # type: ignore[arg-type]
                      value_schema=value.schema if value is not None else None, value=value, **kw)  # type: ignore[arg-type]


def test_row_changes_per_primary_key_mode() -> None:
    value = Struct(VALUE).put("id", 7).put("name", "x")
    change = row_change(config(**{"primary.key.mode": "record_key"}), record(value))
    assert change is not None and change.op == WRITE and change.keys == ("id",)
    assert change.column_names == ("id", "name")
    change = row_change(config(**{"primary.key.mode": "kafka"}), record(value))
    assert change is not None and change.keys == ("__connect_topic", "__connect_partition", "__connect_offset")
    assert [c.value for c in change.columns] == ["t", 0, 42, 7, "x"]
    change = row_change(config(**{"primary.key.mode": "record_key", "primary.key.fields": "pk"}),
                        record(value, key=5, key_schema=INT64_SCHEMA))
    assert change is not None and change.column_names == ("pk", "id", "name")
    with pytest.raises(ConnectException, match="not in the record"):
        row_change(config(**{"primary.key.mode": "record_value", "primary.key.fields": "nope"}), record(value))
    # Tombstones delete only when enabled.
    assert row_change(config(**{"primary.key.mode": "record_key"}), record(None)) is None
    change = row_change(config(**{"primary.key.mode": "record_key", "delete.enabled": "true"}), record(None))
    assert change is not None and change.op == DELETE and [c.value for c in change.columns] == [7]
    with pytest.raises(ConnectException, match="no struct value schema"):
        row_change(config(), SinkRecord(topic="t", value={"id": 1}))


def test_unflattened_debezium_envelopes() -> None:
    envelope = (SchemaBuilder.struct().name("srv.public.t.Envelope")
                .field("before", SchemaBuilder.struct().name("v").field("id", INT32_SCHEMA)
                       .field("name", OPTIONAL_STRING_SCHEMA).optional().build())
                .field("after", SchemaBuilder.struct().name("v").field("id", INT32_SCHEMA)
                       .field("name", OPTIONAL_STRING_SCHEMA).optional().build())
                .field("op", STRING_SCHEMA).build())
    after_schema = envelope.field("after").schema  # type: ignore[union-attr]
    c = config(**{"primary.key.mode": "record_key", "delete.enabled": "true", "insert.mode": "upsert"})
    created = Struct(envelope).put("after", Struct(after_schema).put("id", 7).put("name", "n")).put("op", "c")
    change = row_change(c, record(created))
    assert change is not None and change.op == WRITE and [col.value for col in change.columns] == [7, "n"]
    deleted = Struct(envelope).put("before", Struct(after_schema).put("id", 7).put("name", "n")).put("op", "d")
    change = row_change(c, record(deleted))
    assert change is not None and change.op == DELETE


def test_type_mapping_and_bound_values() -> None:
    dec = Decimal.builder(2).parameter("connect.decimal.precision", "10").build()
    assert column_type(dec) == "numeric(10,2)"
    assert column_type(Decimal.schema(3)) == "numeric"
    micro_ts = SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").build()
    assert column_type(micro_ts) == "timestamp"
    assert bind_value(micro_ts, 1_000_001) == dt.datetime(1970, 1, 1, 0, 0, 1, 1)
    days = SchemaBuilder.int32().name("io.debezium.time.Date").build()
    assert column_type(days) == "date" and bind_value(days, 1) == dt.date(1970, 1, 2)
    micro_time = SchemaBuilder.int64().name("io.debezium.time.MicroTime").build()
    assert bind_value(micro_time, 3_600_000_001) == dt.time(1, 0, 0, 1)
    zoned = SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").build()
    assert column_type(zoned) == "timestamptz"
    assert column_type(SchemaBuilder.string().name("io.debezium.data.Json").build()) == "jsonb"
    assert column_type(SchemaBuilder.array(INT32_SCHEMA).build()) == "integer[]"
    vsd = (SchemaBuilder.struct().name("io.debezium.data.VariableScaleDecimal").field("scale", INT32_SCHEMA)
           .field("value", SchemaBuilder.bytes().build()).build())
    assert column_type(vsd) == "numeric"
    assert bind_value(vsd, Struct(vsd).put("scale", 3).put("value", (-12345).to_bytes(2, "big", signed=True))) \
        == decimal.Decimal("-12.345")
    assert bind_value(VALUE, Struct(VALUE).put("id", 1).put("name", None)) == '{"id":1,"name":null}'
    aware = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert bind_value(SchemaBuilder.int64().name("org.apache.kafka.connect.data.Timestamp").build(), aware) \
        == dt.datetime(2024, 1, 1, 10)
