"""Avro schema -> Spark type, as zurau.spark.avro maps them (no SparkSession needed)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from zurau.spark.avro import spark_type


def test_records_primitives_logical_types_and_nullable_unions() -> None:
    schema = {
        "type": "record",
        "name": "Reading",
        "namespace": "demo",
        "fields": [
            {"name": "device", "type": "string"},
            {"name": "temperature", "type": "double"},
            {"name": "count", "type": "long"},
            {"name": "ok", "type": "boolean"},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attrs", "type": {"type": "map", "values": ["null", "int"]}},
            {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
            {"name": "again", "type": "Inner"},
        ],
    }
    dt = spark_type(schema)
    assert isinstance(dt, T.StructType)
    by_name = {f.name: f for f in dt.fields}
    assert by_name["device"].dataType == T.StringType() and not by_name["device"].nullable
    assert by_name["ts"].dataType == T.TimestampType() and by_name["day"].dataType == T.DateType()
    assert by_name["price"].dataType == T.DecimalType(10, 2)
    assert by_name["note"].dataType == T.StringType() and by_name["note"].nullable
    assert by_name["kind"].dataType == T.StringType()
    assert by_name["tags"].dataType == T.ArrayType(T.StringType(), False)
    assert by_name["attrs"].dataType == T.MapType(T.StringType(), T.IntegerType(), True)
    inner = T.StructType([T.StructField("x", T.IntegerType(), False)])
    assert by_name["inner"].dataType == inner and by_name["again"].dataType == inner


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (["int", "string"], "unions of several non-null types"),
        ("Missing", "unknown Avro type"),
        (
            {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]},
            "recursive Avro record",
        ),
        ({"fields": []}, "not an Avro schema"),
    ],
)
def test_schemas_spark_cannot_hold_are_refused_clearly(schema: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spark_type(schema)
