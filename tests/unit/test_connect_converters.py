"""Converters against Kafka's JSON converter output: byte-exact envelopes (key order and number
forms as Jackson writes them), logical types, schemaless JSON, string and bytes converters."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest

from zurau.connect.api import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    DataException,
    Date,
    Decimal,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
)
from zurau.connect.converters import ByteArrayConverter, JsonConverter, StringConverter
from zurau.connect.json_text import java_double


def json_converter(schemas: bool = True, **extra: str) -> JsonConverter:
    c = JsonConverter()
    c.configure({"schemas.enable": "true" if schemas else "false", **extra}, is_key=False)
    return c


def test_debezium_tutorial_key_is_byte_identical() -> None:
    # The key Kafka Connect writes for Debezium's tutorial table (docs: "Viewing change events").
    schema = SchemaBuilder.struct().name("dbserver1.inventory.customers.Key").field("id", INT32_SCHEMA).build()
    out = json_converter().from_connect_data("t", schema, Struct(schema).put("id", 1001))
    assert out == (b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
                   b'"optional":false,"name":"dbserver1.inventory.customers.Key"},"payload":{"id":1001}}')


def test_schema_attributes_follow_jacksons_order() -> None:
    schema = (SchemaBuilder.struct().name("v").version(2).doc("a row")
              .field("ts", Timestamp.schema())
              .field("amount", Decimal.schema(2, optional=True))
              .field("tags", SchemaBuilder.array(STRING_SCHEMA).optional().build())
              .field("attrs", SchemaBuilder.map(STRING_SCHEMA, INT64_SCHEMA).build())
              .field("flag", SchemaBuilder.boolean().default_value(True).build())
              .build())
    value = (Struct(schema).put("ts", dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC))
             .put("amount", decimal.Decimal("1.56")).put("tags", ["a", "b"]).put("attrs", {"k": 7}))
    text = json_converter().from_connect_data("t", schema, value).decode()
    assert text == (
        '{"schema":{"type":"struct","fields":['
        '{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"ts"},'
        '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        '"parameters":{"scale":"2"},"field":"amount"},'
        '{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"tags"},'
        '{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int64","optional":false},'
        '"optional":false,"field":"attrs"},'
        '{"type":"boolean","optional":false,"default":true,"field":"flag"}],'
        '"optional":false,"name":"v","version":2,"doc":"a row"},'
        '"payload":{"ts":1704164645678,"amount":"AJw=","tags":["a","b"],"attrs":{"k":7},"flag":true}}')


def test_round_trip_of_every_type() -> None:
    schema = (SchemaBuilder.struct()
              .field("i8", SchemaBuilder.int8().build()).field("i16", SchemaBuilder.int16().build())
              .field("i32", INT32_SCHEMA).field("i64", INT64_SCHEMA)
              .field("f32", FLOAT32_SCHEMA).field("f64", FLOAT64_SCHEMA).field("b", BOOLEAN_SCHEMA)
              .field("s", OPTIONAL_STRING_SCHEMA).field("raw", SchemaBuilder.bytes().build())
              .field("date", Date.schema()).field("time", Time.schema()).field("dec", Decimal.schema(3))
              .field("pairs", SchemaBuilder.map(INT32_SCHEMA, STRING_SCHEMA).build())
              .build())
    value = (Struct(schema).put("i8", -128).put("i16", 32767).put("i32", -5).put("i64", 2**62).put("f32", 1.5)
             .put("f64", 1e20).put("b", False).put("s", None).put("raw", b"\x00\xff")
             .put("date", dt.date(2024, 2, 29)).put("time", dt.time(13, 14, 15, 500000))
             .put("dec", decimal.Decimal("-12.345")).put("pairs", {1: "one", 2: "two"}))
    c = json_converter()
    data = c.from_connect_data("t", schema, value)
    payload = json.loads(data)["payload"]
    assert payload["f64"] == 1e20 and b'"f64":1.0E20' in data  # Java's Double.toString form
    assert payload["pairs"] == [[1, "one"], [2, "two"]]  # non-string keys: an array of pairs
    assert payload["date"] == 19782 and payload["time"] == 47655500
    back = c.to_connect_data("t", data)
    assert back.schema == schema
    assert back.value == value


@pytest.mark.parametrize(("value", "single", "text"), [
    (1.0, False, "1.0"), (0.001, False, "0.001"), (0.0001, False, "1.0E-4"), (1e7, False, "1.0E7"),
    (9999999.0, False, "9999999.0"), (-2.5, False, "-2.5"), (0.1, True, "0.1"), (12345678.9, True, "1.2345679E7"),
])
def test_numbers_are_written_as_java_writes_them(value: float, single: bool, text: str) -> None:
    assert java_double(value, single) == text


def test_tombstones_and_null_payloads() -> None:
    c = json_converter()
    assert c.from_connect_data("t", None, None) is None
    assert c.from_connect_data("t", OPTIONAL_STRING_SCHEMA, None) == (
        b'{"schema":{"type":"string","optional":true},"payload":null}')
    back = c.to_connect_data("t", None)
    assert back.schema is None and back.value is None
    with pytest.raises(DataException):
        c.from_connect_data("t", STRING_SCHEMA, None)


def test_schemaless_json() -> None:
    c = json_converter(schemas=False)
    assert c.from_connect_data("t", None, {"a": [1, 2.5, "x", None], "b": True}) == b'{"a":[1,2.5,"x",null],"b":true}'
    assert c.to_connect_data("t", b'{"n":1,"f":0.5,"l":[true]}').value == {"n": 1, "f": 0.5, "l": [True]}
    schema = SchemaBuilder.struct().field("id", INT32_SCHEMA).build()
    assert c.from_connect_data("t", schema, Struct(schema).put("id", 3)) == b'{"id":3}'


def test_envelope_required_when_schemas_enabled() -> None:
    with pytest.raises(DataException, match="schemas.enable"):
        json_converter().to_connect_data("t", b'{"id":1}')
    with pytest.raises(DataException):
        json_converter().to_connect_data("t", b"not json")


def test_decimal_numeric_format() -> None:
    schema = Decimal.schema(2)
    c = json_converter(**{"decimal.format": "NUMERIC"})
    data = c.from_connect_data("t", schema, decimal.Decimal("156.1"))
    assert data.endswith(b'"payload":156.10}')
    assert c.to_connect_data("t", data).value == decimal.Decimal("156.10")


def test_string_and_bytes_converters() -> None:
    s = StringConverter()
    s.configure({}, is_key=True)
    assert s.from_connect_data("t", None, "héllo") == "héllo".encode()
    assert s.from_connect_data("t", None, 42) == b"42"
    assert s.to_connect_data("t", b"abc").value == "abc"
    assert s.to_connect_data("t", b"abc").schema == OPTIONAL_STRING_SCHEMA
    b = ByteArrayConverter()
    assert b.from_connect_data("t", None, b"\x01") == b"\x01"
    assert b.to_connect_data("t", b"\x02").value == b"\x02"
    with pytest.raises(DataException):
        b.from_connect_data("t", STRING_SCHEMA, "text")


def test_struct_rejects_invalid_values() -> None:
    schema = SchemaBuilder.struct().field("id", SchemaBuilder.int8().build()).build()
    with pytest.raises(DataException):
        Struct(schema).put("id", 300)
    with pytest.raises(DataException):
        Struct(schema).put("missing", 1)
    with pytest.raises(DataException):
        Decimal.from_logical(Decimal.schema(1), decimal.Decimal("1.25"))


def test_values_print_as_java_prints_them() -> None:
    from zurau.connect.data import java_text

    assert java_text({"a": 1, "l": [True, None, 2.5]}) == "{a=1, l=[true, null, 2.5]}"
    schema = SchemaBuilder.struct().field("id", INT32_SCHEMA).field("note", OPTIONAL_STRING_SCHEMA).build()
    assert str(Struct(schema).put("id", 7)) == "Struct{id=7}"
