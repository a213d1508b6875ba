"""JSON Schema compatibility verdicts, after Confluent's JSON Schema rules (open and closed
content models, properties added and removed, types narrowed and widened, bounds)."""

from __future__ import annotations

import pytest

from zurau.schema_formats.json_compatibility import check


def obj(props: dict, required: list[str] | None = None, additional: object = None) -> dict:
    out: dict = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if additional is not None:
        out["additionalProperties"] = additional
    return out


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741
N = {"type": "number"}

# (case, reader (new for BACKWARD), writer (old), compatible)
CASES = [
    ("identical", obj({"a": S}), obj({"a": S}), True),
    ("integer widened to number", obj({"a": N}), obj({"a": I}), True),
    ("number narrowed to integer", obj({"a": I}), obj({"a": N}), False),
    ("type changed", obj({"a": S}), obj({"a": I}), False),
    ("type union widened", {"type": ["string", "null"]}, S, True),
    ("type union narrowed", S, {"type": ["string", "null"]}, False),
    ("property added to a closed model", obj({"a": S, "b": S}, additional=False), obj({"a": S}, additional=False), True),
    ("required property added to a closed model",
     obj({"a": S, "b": S}, ["b"], additional=False), obj({"a": S}, additional=False), False),
    ("property added to an open model", obj({"a": S, "b": S}), obj({"a": S}), False),
    ("unconstrained property added to an open model", obj({"a": S, "b": {}}), obj({"a": S}), True),
    ("property removed from an open model", obj({"a": S}), obj({"a": S, "b": S}), True),
    ("property removed from a closed model", obj({"a": S}, additional=False), obj({"a": S, "b": S}, additional=False), False),
    ("model closed", obj({"a": S}, additional=False), obj({"a": S}), False),
    ("model opened", obj({"a": S}), obj({"a": S}, additional=False), True),
    ("required removed", obj({"a": S}), obj({"a": S}, ["a"]), True),
    ("required added", obj({"a": S}, ["a"]), obj({"a": S}), False),
    ("maxLength added", {"type": "string", "maxLength": 5}, S, False),
    ("maxLength increased", {"type": "string", "maxLength": 9}, {"type": "string", "maxLength": 5}, True),
    ("minimum increased", {"type": "integer", "minimum": 5}, {"type": "integer", "minimum": 1}, False),
    ("minimum removed", I, {"type": "integer", "minimum": 1}, True),
    ("enum extended", {"enum": ["a", "b", "c"]}, {"enum": ["a", "b"]}, True),
    ("enum narrowed", {"enum": ["a"]}, {"enum": ["a", "b"]}, False),
    ("array items widened", {"type": "array", "items": N}, {"type": "array", "items": I}, True),
    ("array items narrowed", {"type": "array", "items": I}, {"type": "array", "items": N}, False),
    ("oneOf branch added", {"oneOf": [S, I, {"type": "null"}]}, {"oneOf": [S, I]}, True),
    ("oneOf branch removed", {"oneOf": [S]}, {"oneOf": [S, I]}, False),
    ("plain type into oneOf", {"oneOf": [S, I]}, S, True),
    ("local $ref followed", {"$defs": {"x": N}, "type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}},
     obj({"a": I}), True),
    ("accept-everything reader", True, obj({"a": S}), True),
]


@pytest.mark.parametrize(("case", "reader", "writer", "expected"), CASES, ids=[c[0] for c in CASES])
def test_json_verdict(case: str, reader: object, writer: object, expected: bool) -> None:
    assert (not check(reader, writer)) is expected, check(reader, writer)


def test_open_model_property_added_is_named() -> None:
    (message,) = check(obj({"a": S, "b": S}), obj({"a": S}))
    assert message.startswith("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL") and "/properties/b" in message
