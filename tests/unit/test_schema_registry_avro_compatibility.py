"""Avro compatibility verdicts: the table follows Confluent's documented schema-evolution rules
(Avro's schema resolution) and every row is cross-checked against the Apache Avro library's own
``ReaderWriterCompatibilityChecker`` (an independent oracle)."""

from __future__ import annotations

import json

import avro.schema
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from zurau.schema_formats.schema_types import AVRO, parse


def rec(*fields: dict, name: str = "User", **extra: object) -> dict:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


A_INT = {"name": "a", "type": "int"}
B_STR = {"name": "b", "type": "string"}
B_STR_DEFAULT = {"name": "b", "type": "string", "default": "x"}
COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}

# (case, reader, writer, reader can read writer's data)
CASES = [
    ("identical", rec(A_INT), rec(A_INT), True),
    ("reader adds a field with a default", rec(A_INT, B_STR_DEFAULT), rec(A_INT), True),
    ("reader adds a field without a default", rec(A_INT, B_STR), rec(A_INT), False),
    ("reader drops a field", rec(A_INT), rec(A_INT, B_STR), True),
    ("int widened to long", rec({"name": "a", "type": "long"}), rec(A_INT), True),
    ("long narrowed to int", rec(A_INT), rec({"name": "a", "type": "long"}), False),
    ("int to double", rec({"name": "a", "type": "double"}), rec(A_INT), True),
    ("float to double", "double", "float", True),
    ("string to bytes", "bytes", "string", True),
    ("int to string", rec({"name": "a", "type": "string"}), rec(A_INT), False),
    ("field renamed with an alias", rec({"name": "z", "type": "int", "aliases": ["a"]}), rec(A_INT), True),
    ("field renamed without an alias", rec({"name": "z", "type": "int"}), rec(A_INT), False),
    ("record renamed with an alias", rec(A_INT, name="Person", aliases=["User"]), rec(A_INT), True),
    ("record renamed", rec(A_INT, name="Person"), rec(A_INT), False),
    ("enum symbol added", {**COLOR, "symbols": ["RED", "GREEN", "BLUE"]}, COLOR, True),
    ("enum symbol removed", {**COLOR, "symbols": ["RED"]}, COLOR, False),
    ("enum symbol removed, reader default", {**COLOR, "symbols": ["RED"], "default": "RED"}, COLOR, True),
    ("type to a union containing it", ["null", "int"], "int", True),
    ("union to one of its branches", "int", ["null", "int"], False),
    ("union branch added", ["null", "int", "string"], ["null", "int"], True),
    ("array items widened", {"type": "array", "items": "long"}, {"type": "array", "items": "int"}, True),
    ("map values narrowed", {"type": "map", "values": "int"}, {"type": "map", "values": "long"}, False),
    ("fixed size changed", {"type": "fixed", "name": "F", "size": 8}, {"type": "fixed", "name": "F", "size": 4}, False),
    ("nested record gains a defaulted field",
     rec({"name": "addr", "type": rec({"name": "zip", "type": "int", "default": 0}, name="Addr")}),
     rec({"name": "addr", "type": rec(name="Addr")}), True),
]


def ours(reader: object, writer: object) -> bool:
    r = parse(AVRO, json.dumps(reader), [])
    w = parse(AVRO, json.dumps(writer), [])
    return not r.can_read(w)


def oracle(reader: object, writer: object) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(reader)), avro.schema.parse(json.dumps(writer))
    )
    return result.compatibility == SchemaCompatibilityType.compatible


@pytest.mark.parametrize(("case", "reader", "writer", "expected"), CASES, ids=[c[0] for c in CASES])
def test_avro_verdict(case: str, reader: object, writer: object, expected: bool) -> None:
    assert ours(reader, writer) is expected
    assert oracle(reader, writer) is expected  # the table itself agrees with Apache Avro


def test_recursive_record_terminates() -> None:
    node = rec({"name": "next", "type": ["null", "Node"], "default": None}, name="Node")
    assert ours(node, node)


def test_incompatibility_names_the_field() -> None:
    r = parse(AVRO, json.dumps(rec(A_INT, B_STR)), [])
    w = parse(AVRO, json.dumps(rec(A_INT)), [])
    (message,) = r.can_read(w)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in message and "'b'" in message
