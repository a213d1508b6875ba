"""The REST proxy's splitter of streamed produce requests (concatenated JSON, fed in chunks) and
its record encodings, without sockets."""

from __future__ import annotations

import json
import random

import pytest

from zurau.rest_proxy.errors import RestProxyError
from zurau.rest_proxy.record_serialization import encode_plain, format_timestamp, parse_timestamp
from zurau.rest_proxy.v3_records import ConcatenatedJson

RECORDS = [
    {"value": {"type": "JSON", "data": {"a": [1, 2, {"b": "}{][\"\\"}]}}},
    {"key": {"type": "STRING", "data": "k\u00e9\U0001f600"}, "value": {"type": "BINARY", "data": "AAEC"}},
    {"value": {"type": "JSON", "data": "\\\\\\\""}},
    {"headers": [{"name": "h", "value": None}], "value": None},
]


def _split(chunks: list[bytes], limit: int = 1 << 20) -> list[object]:
    s = ConcatenatedJson(limit)
    out: list[object] = []
    for c in chunks:
        out.extend(s.feed(c))
    out.extend(s.finish())
    return out


@pytest.mark.parametrize("seed", range(20))
def test_any_chunking_gives_the_same_records(seed: int) -> None:
    rng = random.Random(seed)
    text = "".join(json.dumps(r, ensure_ascii=rng.random() < 0.5) + rng.choice(["", " ", "\n", "\r\n\t"]) for r in RECORDS).encode()
    cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, min(40, len(text) - 1))))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert _split(chunks) == RECORDS
    assert _split([bytes([b]) for b in text]) == RECORDS  # one byte at a time, UTF-8 split included


def test_malformed_json_ends_the_stream_with_a_400() -> None:
    out = _split([b'{"value": 1} {"value": tru} {"value": 2}'])
    assert out[0] == {"value": 1}
    assert isinstance(out[1], RestProxyError) and out[1].status == 400
    assert len(out) == 2


def test_scalar_at_top_level_and_truncated_body_are_400() -> None:
    out = _split([b'{"a": 1} 42 {"b": 2}'])
    assert out[0] == {"a": 1} and isinstance(out[1], RestProxyError) and out[1].status == 400 and len(out) == 2
    out = _split([b'{"a": 1} {"b": "unterminated'])
    assert out[0] == {"a": 1} and isinstance(out[1], RestProxyError) and out[1].status == 400


def test_arrays_are_values_the_caller_refuses_and_the_stream_goes_on() -> None:
    assert _split([b'[1, 2] {"a": 1}']) == [[1, 2], {"a": 1}]


def test_invalid_utf8_is_a_400() -> None:
    out = _split([b'{"a": "\xff"}'])
    assert len(out) == 1 and isinstance(out[0], RestProxyError) and out[0].status == 400


def test_a_record_over_the_limit_is_skipped_unbuffered_with_a_413_and_the_stream_goes_on() -> None:
    big = json.dumps({"value": {"type": "STRING", "data": "x" * 5000}}).encode()
    s = ConcatenatedJson(1000)
    out: list[object] = []
    out.extend(s.feed(b'{"a": 1}'))
    for i in range(0, len(big), 100):
        out.extend(s.feed(big[i : i + 100]))
        assert len(s._buf) <= 1100  # never holds the big record
    out.extend(s.feed(b'{"b": 2}'))
    out.extend(s.finish())
    assert out[0] == {"a": 1}
    assert isinstance(out[1], RestProxyError) and out[1].status == 413
    assert out[2] == {"b": 2}


def test_nesting_limit_applies() -> None:
    out = _split([b"[" * 100 + b"]" * 100])
    assert isinstance(out[0], RestProxyError) and out[0].status == 400


def test_plain_encodings() -> None:
    assert encode_plain("BINARY", "AAEC") == b"\x00\x01\x02"
    assert encode_plain("JSON", {"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()
    assert encode_plain("STRING", "é") == "é".encode()
    assert encode_plain("JSON", None) is None
    for fmt, data in (("BINARY", "not base64!"), ("BINARY", 1), ("STRING", 5)):
        with pytest.raises(RestProxyError) as e:
            encode_plain(fmt, data)
        assert e.value.status == 400


def test_timestamps() -> None:
    assert parse_timestamp("2021-02-05T19:14:42.123Z") == 1612552482123
    assert parse_timestamp("2021-02-05T20:14:42+01:00") == 1612552482000
    assert format_timestamp(1612552482123) == "2021-02-05T19:14:42.123Z"
    assert format_timestamp(1612552482000) == "2021-02-05T19:14:42Z"
    for bad in ("yesterday", 12, "2021-13-45T00:00:00Z"):
        with pytest.raises(RestProxyError):
            parse_timestamp(bad)
