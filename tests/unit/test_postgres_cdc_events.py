"""PostgreSQL CDC without a server: type mapping (Debezium's), configuration validation, and the
change event format as the JSON converter writes it."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

import pytest

from zurau.connect.api import ConfigException, Struct, Type
from zurau.connect.converters import JsonConverter
from zurau.connect.postgres import PostgresConnector
from zurau.connect.postgres.catalog import CatalogColumn, CatalogTable
from zurau.connect.postgres.change_events import SOURCE_SCHEMA, SourceInfo, TableSchema
from zurau.connect.postgres.config import PostgresConnectorConfig, validate_config
from zurau.connect.postgres.pgoutput import UNCHANGED_TOAST
from zurau.connect.postgres.type_mapping import (
    MappingOptions,
    PgType,
    column_mapping,
    format_zoned_time,
    format_zoned_timestamp,
    parse_array,
    parse_date_days,
    parse_interval_us,
    parse_timestamp_us,
    with_default,
)

PRECISE = MappingOptions()


def numeric(precision: int, scale: int) -> PgType:
    return PgType(1700, "numeric", ((precision << 16) | scale) + 4)


def test_temporal_texts() -> None:
    assert parse_date_days("1970-01-02") == 1
    assert parse_date_days("1969-12-31") == -1
    assert parse_date_days("2024-02-29") == (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days
    assert parse_date_days("0001-01-01 BC") == (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days - 366
    assert parse_date_days("infinity") == 2**31 - 1
    expected = int(dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC).timestamp()) * 1_000_000 + 123456
    assert parse_timestamp_us("2024-01-02 03:04:05.123456") == expected
    assert parse_timestamp_us("2024-01-02 08:34:05.123456+05:30") == expected
    assert format_zoned_timestamp("2024-01-02 08:34:05.5+05:30") == "2024-01-02T03:04:05.5Z"
    assert format_zoned_timestamp("2024-01-02 08:34:05.5+05:30", 6) == "2024-01-02T03:04:05.500000Z"
    assert format_zoned_timestamp("2024-01-02 03:04:05-01", 3) == "2024-01-02T04:04:05.000Z"
    assert format_zoned_timestamp("2024-01-02 03:04:05-01") == "2024-01-02T04:04:05Z"
    assert format_zoned_time("10:15:30.250+02") == "08:15:30.25Z"
    month = 30.4375 * 86_400 * 1_000_000
    assert parse_interval_us("1 year 2 mons 3 days 04:05:06.5") == int((14 * month) + 3 * 86_400_000_000) + 14_706_500_000
    assert parse_interval_us("-1 days +02:00:00") == -86_400_000_000 + 7_200_000_000
    assert parse_interval_us("00:00:01") == 1_000_000


def test_arrays() -> None:
    assert parse_array('{1,NULL,"a b","q\\"x",""}') == ["1", None, "a b", 'q"x', ""]
    assert parse_array("{}") == []
    mapping = column_mapping(PgType(1007, "_int4", element=PgType(23, "int4")), True, PRECISE)
    assert mapping.schema.type is Type.ARRAY and mapping.schema.value_schema.optional
    assert mapping.convert("{1,NULL,3}") == [1, None, 3]


@pytest.mark.parametrize(
    ("pg", "schema_type", "name", "text", "value"),
    [
        (PgType(16, "bool"), Type.BOOLEAN, None, "t", True),
        (PgType(21, "int2"), Type.INT16, None, "-3", -3),
        (PgType(20, "int8"), Type.INT64, None, "9007199254740993", 9007199254740993),
        (PgType(701, "float8"), Type.FLOAT64, None, "1.5", 1.5),
        (PgType(17, "bytea"), Type.BYTES, None, "\\x00ff", b"\x00\xff"),
        (PgType(1082, "date"), Type.INT32, "io.debezium.time.Date", "1970-01-11", 10),
        (PgType(1083, "time"), Type.INT64, "io.debezium.time.MicroTime", "00:00:01.5", 1_500_000),
        (PgType(1083, "time", 3), Type.INT32, "io.debezium.time.Time", "00:00:01.5", 1_500),
        (PgType(1114, "timestamp"), Type.INT64, "io.debezium.time.MicroTimestamp", "1970-01-01 00:00:01.000002", 1_000_002),
        (PgType(1114, "timestamp", 3), Type.INT64, "io.debezium.time.Timestamp", "1970-01-01 00:00:01.002", 1_002),
        (PgType(1184, "timestamptz"), Type.STRING, "io.debezium.time.ZonedTimestamp", "1970-01-01 01:00:00+01", "1970-01-01T00:00:00.000000Z"),
        (PgType(1184, "timestamptz", 0), Type.STRING, "io.debezium.time.ZonedTimestamp", "1970-01-01 01:00:00+01", "1970-01-01T00:00:00Z"),
        (PgType(2950, "uuid"), Type.STRING, "io.debezium.data.Uuid", "a0ee-bc99", "a0ee-bc99"),
        (PgType(3802, "jsonb"), Type.STRING, "io.debezium.data.Json", '{"a": 1}', '{"a": 1}'),
        (PgType(1186, "interval"), Type.INT64, "io.debezium.time.MicroDuration", "00:00:02", 2_000_000),
        (PgType(869, "inet"), Type.STRING, None, "10.0.0.1", "10.0.0.1"),
        (PgType(99999, "geometry"), Type.STRING, None, "POINT(1 2)", "POINT(1 2)"),
    ],
)
def test_type_mapping(pg: PgType, schema_type: Type, name: str | None, text: str, value: object) -> None:
    mapping = column_mapping(pg, False, PRECISE)
    assert (mapping.schema.type, mapping.schema.name, mapping.schema.optional) == (schema_type, name, False)
    assert mapping.convert(text) == value


def test_enum_and_optional() -> None:
    mapping = column_mapping(PgType(16400, "mood", kind="e", enum_values=("sad", "ok")), True, PRECISE)
    assert mapping.schema.name == "io.debezium.data.Enum" and mapping.schema.parameters == {"allowed": "sad,ok"}
    assert mapping.schema.optional and mapping.convert("ok") == "ok"


def test_decimal_handling_modes() -> None:
    precise = column_mapping(numeric(10, 2), False, PRECISE)
    assert precise.schema.name == "org.apache.kafka.connect.data.Decimal"
    assert precise.schema.parameters == {"scale": "2", "connect.decimal.precision": "10"}
    assert precise.convert("3.5") == decimal.Decimal("3.50")
    variable = column_mapping(PgType(1700, "numeric"), False, PRECISE)
    assert variable.schema.name == "io.debezium.data.VariableScaleDecimal"
    struct = variable.convert("-12.345")
    assert isinstance(struct, Struct) and struct.get("scale") == 3
    assert int.from_bytes(struct.get("value"), "big", signed=True) == -12345
    as_string = column_mapping(numeric(10, 2), True, MappingOptions(decimal_handling_mode="string"))
    assert (as_string.schema.type, as_string.convert("3.50")) == (Type.STRING, "3.50")
    as_double = column_mapping(numeric(10, 2), True, MappingOptions(decimal_handling_mode="double"))
    assert (as_double.schema.type, as_double.convert("3.50")) == (Type.FLOAT64, 3.5)
    money = column_mapping(PgType(790, "money"), False, PRECISE)
    assert money.convert("-$1,234.50") == decimal.Decimal("-1234.50")
    hexed = column_mapping(PgType(17, "bytea"), False, MappingOptions(binary_handling_mode="base64"))
    assert hexed.convert("\\x00ff") == base64.b64encode(b"\x00\xff").decode()


def test_connect_time_precision_mode() -> None:
    options = MappingOptions(time_precision_mode="connect")
    date = column_mapping(PgType(1082, "date"), False, options)
    assert date.schema.name == "org.apache.kafka.connect.data.Date" and date.convert("1970-01-03") == dt.date(1970, 1, 3)
    ts = column_mapping(PgType(1114, "timestamp"), False, options)
    assert ts.convert("1970-01-01 00:00:01.5") == dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC)


def props(**overrides: str) -> dict[str, str]:
    base = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "db",
        "database.user": "u",
        "database.password": "p",
        "database.dbname": "shop",
        "topic.prefix": "dbserver1",
    }
    base.update(overrides)
    return base


def errors(config: dict[str, str]) -> dict[str, list[str]]:
    return {v.name: v.errors for v in validate_config(config) if v.errors}


def test_debezium_configuration_is_accepted_with_its_defaults() -> None:
    cfg = PostgresConnectorConfig.from_props(props(**{"table.include.list": "public.orders,inventory\\..*"}))
    assert (cfg.port, cfg.slot_name, cfg.publication_name, cfg.snapshot_mode) == (5432, "debezium", "dbz_publication", "initial")
    assert (cfg.publication_autocreate_mode, cfg.decimal_handling_mode, cfg.tombstones_on_delete) == ("all_tables", "precise", True)
    assert cfg.skipped_operations == {"t"} and cfg.heartbeat_topic == "__debezium-heartbeat.dbserver1"
    f = cfg.table_filter
    assert f.includes("public", "orders") and f.includes("inventory", "items")
    assert not f.includes("public", "orders_archive") and not f.includes("pg_catalog", "pg_class")
    assert PostgresConnector().validate(props()) == validate_config(props())


def test_bad_configurations_get_errors_naming_the_setting() -> None:
    missing = dict(props())
    del missing["database.hostname"]
    assert errors(missing) == {"database.hostname": ['Missing required configuration "database.hostname" which has no default value.']}
    assert "only pgoutput is supported" in errors(props(**{"plugin.name": "decoderbufs"}))["plugin.name"][0]
    assert "String must be one of" in errors(props(**{"snapshot.mode": "sometimes"}))["snapshot.mode"][0]
    assert "not a regular expression" in errors(props(**{"table.include.list": "a(b"}))["table.include.list"][0]
    both = errors(props(**{"table.include.list": "a", "table.exclude.list": "b"}))
    assert "cannot both be set" in both["table.exclude.list"][0]
    assert "Not a 32-bit integer" in errors(props(**{"database.port": "x"}))["database.port"][0]
    assert "letters, digits" in errors(props(**{"topic.prefix": "a b"}))["topic.prefix"][0]
    with pytest.raises(ConfigException, match="slot.name"):
        PostgresConnectorConfig.from_props(props(**{"slot.name": "Bad-Name"}))


def orders_table() -> TableSchema:
    table = CatalogTable(
        16385,
        "public",
        "orders",
        "d",
        (
            CatalogColumn("id", PgType(23, "int4"), False, 0),
            CatalogColumn("note", PgType(25, "text"), False, None),
            CatalogColumn("amount", numeric(10, 2), True, None),
        ),
    )
    return TableSchema.for_table("shop", table, PRECISE, "__debezium_unavailable_value")


def test_change_event_json_is_debeziums() -> None:
    table = orders_table()
    source = SourceInfo("shop", "inventory", 1_700_000_000_123_456, "false", 100, 120, 555).struct("public", "orders")
    envelope = table.envelope("u", None, table.row(("7", UNCHANGED_TOAST, "1.25")), source)
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    doc = json.loads(converter.from_connect_data(table.topic, table.envelope_schema, envelope) or b"")
    assert doc["schema"]["name"] == "shop.public.orders.Envelope" and doc["schema"]["version"] == 2
    source_schema = doc["schema"]["fields"][2]
    assert source_schema["name"] == "io.debezium.connector.postgresql.Source"
    assert [(f["field"], f["type"], f["optional"]) for f in source_schema["fields"]] == [
        ("version", "string", False), ("connector", "string", False), ("name", "string", False),
        ("ts_ms", "int64", False), ("snapshot", "string", True), ("db", "string", False),
        ("sequence", "string", True), ("ts_us", "int64", True), ("ts_ns", "int64", True),
        ("schema", "string", False), ("table", "string", False), ("txId", "int64", True),
        ("lsn", "int64", True), ("xmin", "int64", True),
    ]
    payload = doc["payload"]
    assert payload["after"] == {"id": 7, "note": "__debezium_unavailable_value", "amount": "fQ=="}  # 125 unscaled = 0x7D
    assert payload["source"] == {
        "version": payload["source"]["version"], "connector": "postgresql", "name": "shop", "ts_ms": 1_700_000_000_123,
        "snapshot": "false", "db": "inventory", "sequence": '["100","120"]', "ts_us": 1_700_000_000_123_456,
        "ts_ns": 1_700_000_000_123_456_000, "schema": "public", "table": "orders", "txId": 555, "lsn": 120, "xmin": None,
    }
    assert payload["op"] == "u" and payload["before"] is None and payload["transaction"] is None
    assert payload["ts_us"] // 1000 == payload["ts_ms"]


def test_missing_values_of_required_columns_are_zero_values() -> None:
    table = orders_table()
    before = table.row(("7", None, None))  # a delete's key-only before-image
    assert before.as_dict() == {"id": 7, "note": "", "amount": None}
    assert table.key(("7", None, None)) == Struct(table.key_schema).put("id", 7)  # type: ignore[arg-type]
    assert SOURCE_SCHEMA.field("snapshot").schema.default_value == "false"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("pg", "expression", "default"),
    [
        (PgType(23, "int4"), "nextval('orders_id_seq'::regclass)", 0),  # serial: Debezium's stand-in 0
        (PgType(23, "int4"), "42", 42),
        (PgType(20, "int8"), "'9223372036854775807'::bigint", 9223372036854775807),
        (PgType(25, "text"), "'PENDING'::text", "PENDING"),
        (PgType(25, "text"), "NULL::text", None),
        (PgType(16, "bool"), "true", True),
        (numeric(8, 2), "1.5", decimal.Decimal("1.50")),
        (PgType(1114, "timestamp"), "now()", 0),
        (PgType(1114, "timestamp"), "CURRENT_TIMESTAMP", 0),
        (PgType(1082, "date"), "'2024-01-02'::date", 19724),
        (PgType(16400, "mood", kind="e", enum_values=("sad", "ok")), "'ok'::mood", "ok"),
        (PgType(17, "bytea"), "'\\x00'::bytea", None),  # bytea defaults are not carried
        (PgType(1700, "numeric"), "1.5", None),  # a struct (VariableScaleDecimal) cannot be a default
    ],
)
def test_column_defaults_as_debezium_reads_them(pg: PgType, expression: str, default: object) -> None:
    mapping = with_default(column_mapping(pg, False, PRECISE), pg, expression)
    assert mapping.schema.default_value == default


class _HandedStream:
    """What the task asks of a stream when it hands records over."""

    in_transaction = False
    processed_lsn = 250
    last_commit_lsn = 240

    def safe_position(self) -> int:
        return 300


def test_the_slot_is_never_acknowledged_past_a_record_kafka_has_not() -> None:
    from zurau.connect.postgres.source_task import PostgresSourceTask
    from zurau.connect.postgres.streaming import position_offset
    from zurau.connect.records import SourceRecord

    def record(offset: dict[str, int]) -> SourceRecord:
        return SourceRecord(source_partition={"server": "s"}, source_offset=offset, topic="t")

    records = [
        record({"lsn_commit": 100, "lsn": 90, "event_part": 0}),
        record({"lsn_commit": 200, "lsn": 150, "event_part": 0}),
        record({"lsn_commit": 200, "lsn": 160, "event_part": 0}),
        record(position_offset(240)),  # a heartbeat
    ]
    task = PostgresSourceTask()
    task._hand_over(records, _HandedStream())  # type: ignore[arg-type]
    flushed = []
    # Kafka acknowledges out of order (different partitions); the worker commits in between.
    for acked in ([1, 3], [0], [2]):
        for i in acked:
            task.commit_record(records[i], None)
        task.commit()
        flushed.append(task._flush_target())
    # Transaction 100 unacknowledged: nothing past it; then transaction 200 (resent whole after a
    # crash, its acknowledged part skipped); then everything handed over.
    assert flushed == [100, 200, 300]
