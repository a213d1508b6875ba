"""The edge services' shared input checks (:mod:`zurau.edge_requests`) and the registry's Avro
specification rules (:mod:`zurau.schema_formats.avro_spec_rules`), the latter against the Apache
Avro library as an oracle."""

from __future__ import annotations

import json

import avro.schema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zurau.edge_requests import (
    MAX_JSON_DEPTH,
    BadInput,
    kafka_int,
    nesting_exceeds,
    parse_json,
    parse_kafka_int,
    query_flag,
)
from zurau.schema_formats import schema_types
from zurau.schema_registry.errors import RegistryError


def _depth_of(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth_of(v) for v in value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\', max_size=3), inner,
                                                               max_size=3),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None, database=None)
@given(value=json_values, limit=st.integers(min_value=1, max_value=8))
def test_nesting_measured_on_the_text_matches_the_parsed_depth(value: object, limit: int) -> None:
    raw = json.dumps(value).encode()
    assert nesting_exceeds(raw, limit) == (_depth_of(value) > limit)


def test_parse_json_refuses_what_a_service_cannot_take() -> None:
    assert parse_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None
    for raw in (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), b"[" * 100_000, b"\xff{}",
                b'{"a": "\\ud800"}', b"{", b""):
        with pytest.raises(BadInput) as e:
            parse_json(raw)
        assert e.value.status == 400
    assert parse_json(b'["\\ud83d\\ude00", "[[[[["]') == ["\U0001f600", "[[[[["]


def test_kafka_integer_ranges() -> None:
    assert kafka_int(2**31 - 1, "int32", "p") == 2**31 - 1
    assert kafka_int(-(2**63), "int64", "o") == -(2**63)
    for value, kind in ((2**31, "int32"), (2**15, "int16"), (2**63, "int64"), (-(2**63) - 1, "int64"),
                        (True, "int32"), (1.0, "int32"), ("1", "int32")):
        with pytest.raises(BadInput):
            kafka_int(value, kind, "x")
    with pytest.raises(BadInput):
        kafka_int(-1, "int32", "x", minimum=0)
    assert parse_kafka_int(" -42 ", "int64", "t") == -42
    for text in ("9" * 5000, "1e5", "", "-", "٣", "0x10", str(2**63)):
        with pytest.raises(BadInput):
            parse_kafka_int(text, "int64", "t")


def test_boolean_query_parameters_as_jax_rs() -> None:
    assert query_flag({"a": "TRUE"}, "a") and query_flag({"a": "true"}, "a")
    assert not any(query_flag({"a": v}, "a", default=True) for v in ("yes", "1", "", "false", " true"))
    assert query_flag({}, "a", default=True) and not query_flag({}, "a")


def _registry_accepts(doc: object) -> bool:
    try:
        schema_types.parse("AVRO", json.dumps(doc), [])
    except RegistryError as e:
        assert e.error_code == 42201
        return False
    return True


def _avro_accepts(doc: object) -> bool:
    try:
        avro.schema.parse(json.dumps(doc))
    except Exception:
        return False
    return True


branches = st.sampled_from([
    "null", "int", "long", "string", {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "array", "items": "int"}, {"type": "map", "values": "string"},
    {"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "G", "size": 4},
    {"type": "enum", "name": "E", "symbols": ["A", "B"]}, ["int"],
])


@settings(max_examples=150, deadline=None, database=None)
@given(union=st.lists(branches, min_size=1, max_size=4))
def test_unions_as_avro_accepts_them(union: list[object]) -> None:
    # named types defined twice are a different rule (both parsers refuse a redefinition)
    names = [b["name"] for b in union if isinstance(b, dict) and "name" in b]
    if len(names) != len(set(names)):
        return
    assert _registry_accepts(union) == _avro_accepts(union), union


@pytest.mark.parametrize("doc", [
    {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "int"}]},
    {"type": "fixed", "name": "F", "size": -1},
    {"type": "enum", "name": "E", "symbols": ["A", "A"]},
    [["int"]],
    ["int", "int"],
])
def test_registry_refuses_what_avro_refuses(doc: object) -> None:
    assert not _avro_accepts(doc)
    assert not _registry_accepts(doc)
