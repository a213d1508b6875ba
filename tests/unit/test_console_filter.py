"""The console's filter language (what it matches, what it refuses, and that it never evaluates
Python beyond its small grammar) and its record decoding without a registry."""

from __future__ import annotations

from typing import Any

import pytest

from zurau.console.filter_expr import MISSING, FilterError, compile_filter
from zurau.schema_formats.record_decoding import RecordDecoder, wire_schema_id


def env(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "key": "order-7",
        "value": {"op": "c", "after": {"id": 7, "total": 12.5, "tags": ["a", "b"]}, "source": {"table": "orders"}},
        "headers": {"trace": "abc", "kind": "heartbeat"},
        "timestamp": 1_700_000_000_000,
        "partition": 2,
        "offset": 41,
        "topic": "pg.public.orders",
    }
    base.update(over)
    return base


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ('value.op == "c"', True),
        ('value["op"] in ["c", "u"] and value.after.id == 7', True),
        ("value.after.total > 10 and value.after.total <= 12.5", True),
        ('value.after.tags[1] == "b"', True),
        ('value.before.id == 7', False),  # missing field: false, no error
        ('not exists(value.before) and exists(value.after)', True),
        ('headers.kind != "heartbeat"', False),
        ('contains(key, "order") and startswith(topic, "pg.") and endswith(key, "-7")', True),
        ('matches(key, "^order-[0-9]+$")', True),
        ("partition == 2 and offset >= 40 and offset < 42", True),
        ("timestamp > 1_699_999_999_999 and timestamp - 1000 < now()", True),
        ('lower(value.source.table) == "orders" and upper(key) == "ORDER-7"', True),
        ("len(value.after.tags) == 2 and len(value.nothing) == 0", True),
        ('"heart" in headers.kind', True),
        ("value == None", False),
        ("-offset < 0 and offset % 2 == 1 and offset * 2 == 82 and offset / 41 == 1", True),
        ('int(value.after.id) + 1 == 8 and str(partition) == "2"', True),
        ('key == "order-9" or value.x == 1 or value.op == "c"', True),
        ("1 < offset < 100", True),
    ],
)
def test_matches(expr: str, expected: bool) -> None:
    f = compile_filter(expr)
    assert f.matches(env()) is expected
    assert f.errors == 0


def test_names_used_are_reported_so_the_browser_decodes_only_those() -> None:
    assert compile_filter('key == "x" and offset > 3').names == {"key", "offset"}
    assert compile_filter("value.a == 1").names == {"value"}


def test_tombstones_and_plain_strings() -> None:
    assert compile_filter("value == None").matches(env(value=None))
    assert compile_filter('contains(value, "err")').matches(env(value="an error happened"))
    assert not compile_filter('value.op == "c"').matches(env(value="plain text"))
    assert not compile_filter('value.op == "c"').matches(env(value=None))


def test_evaluation_errors_do_not_match_and_are_counted() -> None:
    f = compile_filter("value.after.total > key")  # float > str
    assert not f.matches(env())
    assert not f.matches(env())
    assert f.errors == 2
    assert f.first_error is not None and "TypeError" in f.first_error


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("", "empty"),
        ("value ==", "syntax error"),
        ("__import__('os').system('true')", "unknown function"),
        ("open('/etc/passwd')", "unknown function"),
        ("key.__class__", "attribute '__class__' is not allowed"),
        ("value.__dict__", "not allowed"),
        ("[x for x in key]", "ListComp is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("password == 1", "unknown name 'password'"),
        ("key[1:2]", "slices are not allowed"),
        ("key ** 2", "operator Pow is not allowed"),
        ("len(key, key)", "takes 1 argument"),
        ('matches(key, "(")', "bad regular expression"),
        ("len(key=1)", "keyword arguments"),
        ("(key := 1)", "NamedExpr is not allowed"),
        ("x" * 2001, "at most 2000 characters"),
        (" or ".join(["offset == 1"] * 80), "at most 300 parts"),
    ],
)
def test_refused(expr: str, message: str) -> None:
    with pytest.raises(FilterError, match=message.replace("(", r"\(").replace("*", r"\*")):
        compile_filter(expr)


def test_string_multiplication_cannot_build_huge_strings() -> None:
    f = compile_filter('key * 100000000 == ""')
    assert not f.matches(env())
    assert f.errors == 1


def test_missing_is_falsy_and_only_equal_to_itself() -> None:
    assert not MISSING
    assert compile_filter("value.nope == value.other").matches(env())
    assert not compile_filter("value.nope == None").matches(env())
    assert not compile_filter("value.nope < 3").matches(env())


def test_decoder_modes_without_a_registry() -> None:
    d = RecordDecoder(None)
    assert d.decode(b'{"a": 1}').to_json() == {"encoding": "json", "data": {"a": 1}}
    assert d.decode(b"hello").data == "hello"
    assert d.decode(b"\xff\x00").to_json() == {"encoding": "hex", "data": "ff00"}
    assert d.decode(b"abc", "hex").data == "616263"
    assert d.decode(b"\xffabc", "string").data == "\ufffdabc"
    bad = d.decode(b"nope", "json")
    assert bad.encoding == "hex" and bad.error and "not JSON" in bad.error
    avro = d.decode(b"\x00\x00\x00\x00\x07\x02", "avro")
    assert avro.encoding == "hex" and avro.error and "--registry-url" in avro.error
    assert d.decode(None).encoding == "null"
    assert wire_schema_id(b"\x00\x00\x00\x01\x00rest") == 256
    assert wire_schema_id(b"{}") is None


def test_protobuf_message_indexes() -> None:
    from zurau.schema_formats.protobuf_decoding import message_indexes

    assert message_indexes(b"\x00\x0a\x01") == ([0], 1)  # the single 0 byte: the first message
    assert message_indexes(b"\x04\x00\x02rest") == ([0, 1], 3)  # zigzag: count 2, then 0 and 1
    with pytest.raises(ValueError, match="end early"):
        message_indexes(b"\x04\x00")
