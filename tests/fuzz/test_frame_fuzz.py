"""Fuzz the wire layer: decoders and a live broker fed random and mutated frames.

Two halves:

* ``test_decode_*``: ``codec.decode`` of random and mutated bodies for every (api, version, kind)
  in ``zurau.protocol.schemas.ALL`` raises nothing but ``DecodeError``.
* ``test_broker_*``: an in-process broker (one per module) is sent random byte strings and
  mutated valid requests over fresh connections; after every example a well-behaved
  ApiVersions + Metadata round trip on a separate connection must succeed, and at the end a
  confluent-kafka producer/consumer round trip must still work. Plus the specific answers the
  broker owes to a handful of bad inputs (oversized frame, unknown ApiVersions version, bad CRC,
  oversized batch, bad topic name).
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.component.kafka_wire import KafkaWireClient
from zurau.protocol import codec
from zurau.protocol.primitives import DecodeError, skip_tagged_fields
from zurau.protocol.records.builder import build_batch
from zurau.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    RECORDS,
    STRING,
    UUID,
    Array,
    Field,
    Struct,
    in_range,
)
from zurau.protocol.schemas import ALL

_I32 = struct.Struct(">i")

# Error codes (Kafka's numbers).
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35

SOCKET_REQUEST_MAX_BYTES = 1_048_576
MAX_MESSAGE_BYTES = 65_536

SAMPLE_BATCH = build_batch([(b"k", b"v" * 20, [("h", b"x")], 1_700_000_000_000), (None, b"w", [], 1_700_000_000_001)])


# =========================================================================== sample bodies


def _sample_value(t: Any, version: int, name: str) -> Any:
    if isinstance(t, Array):
        return [_sample_value(t.of, version, name), _sample_value(t.of, version, name)]
    if isinstance(t, Struct):
        return _sample_struct(t.fields, version)
    if t == STRING:
        return f"s-{name}"
    if t == BYTES:
        return b"\x01\x02\x03"
    if t == RECORDS:
        return SAMPLE_BATCH
    if t == UUID:
        return uuid.UUID(int=0x1234)
    if t == BOOL:
        return True
    if t == FLOAT64:
        return 1.5
    return 1


def _sample_struct(fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    return {f.name: _sample_value(f.type, version, f.name) for f in fields if in_range(version, f.version_range)}


def sample_body(api_key: int, version: int, kind: str) -> bytes:
    """A valid body for (api, version, kind) with every present field set and arrays of two."""
    schema = ALL[api_key]
    fields = schema.request if kind == "request" else schema.response
    return codec.encode(api_key, version, kind, _sample_struct(fields, version))  # type: ignore[arg-type]


CASES = [
    (key, v, kind)
    for key, schema in sorted(ALL.items())
    for v in range(schema.min_version, schema.max_version + 1)
    for kind in ("request", "response")
]


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """Apply one to four mutations: bit flips, truncation, insertion, deletion, int overwrites."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "int32", "int16", "varint"]))
        n = len(data)
        if op == "flip" and n:
            i = draw(st.integers(0, n - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[draw(st.integers(0, n)) :]
        elif op == "insert":
            i = draw(st.integers(0, n))
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del data[i : i + draw(st.integers(1, 8))]
        elif op == "int32" and n >= 4:
            i = draw(st.integers(0, n - 4))
            value = draw(st.sampled_from([-1, -2, -(2**31), 2**31 - 1, 0x7FFF, 1 << 20, 0]))
            data[i : i + 4] = _I32.pack(value)
        elif op == "int16" and n >= 2:
            i = draw(st.integers(0, n - 2))
            data[i : i + 2] = struct.pack(">h", draw(st.sampled_from([-1, -2, -32768, 32767, 0])))
        elif op == "varint" and n:
            i = draw(st.integers(0, n - 1))
            data[i : i + 1] = draw(st.sampled_from([b"\xff\xff\xff\xff\x0f", b"\x80" * 11, b"\xff\xff\xff\xff\xff", b"\x00"]))
    return bytes(data)


def _decode_only_decode_error(api_key: int, version: int, kind: str, body: bytes) -> None:
    try:
        codec.decode(api_key, version, kind, body)  # type: ignore[arg-type]
    except DecodeError:
        pass


def test_decode_sample_bodies_round_trip() -> None:
    """The seeds themselves are valid: every sample body decodes (guards the fuzz's premise)."""
    for key, v, kind in CASES:
        codec.decode(key, v, kind, sample_body(key, v, kind))  # type: ignore[arg-type]


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), body=st.binary(max_size=64))
def test_decode_random_bytes_raise_only_decode_error(case: tuple[int, int, str], body: bytes) -> None:
    _decode_only_decode_error(*case, body)


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_decode_mutated_bodies_raise_only_decode_error(data: st.DataObject, case: tuple[int, int, str]) -> None:
    body = data.draw(mutated(sample_body(*case)))
    _decode_only_decode_error(*case, body)


def test_decode_every_truncation_raises_only_decode_error() -> None:
    """Exhaustive: every prefix of every sample body."""
    for key, v, kind in CASES:
        body = sample_body(key, v, kind)
        for n in range(len(body)):
            _decode_only_decode_error(key, v, kind, body[:n])
