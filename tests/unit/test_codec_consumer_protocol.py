"""The consumer protocol's subscription and assignment, v0-v3, against kio and kafka-python.

kio (generated from Kafka's ConsumerProtocol*.json) writes each version's struct; with the int16
version in front, our decoder must read it back field for field and our encoder reproduce the
bytes, for kio instances full of values, full of nulls, and at kio's defaults (those also encoded
with the defaulted keys left out).
"""

from __future__ import annotations

import importlib
import struct
from typing import Any

import pytest

from tests.unit.test_codec_kio import VARIANTS, _build_kio, _compare, _Counter, _kio_bytes, _strip_defaulted
from zurau.protocol import consumer_protocol as cp
from zurau.protocol.primitives import DecodeError
from zurau.protocol.schema import DataSchema

KINDS: dict[str, tuple[DataSchema, Any, Any]] = {
    "subscription": (cp.SUBSCRIPTION, cp.encode_subscription, cp.decode_subscription),
    "assignment": (cp.ASSIGNMENT, cp.encode_assignment, cp.decode_assignment),
}


def _kio_class(kind: str, version: int) -> type:
    name = f"consumer_protocol_{kind}"
    module = importlib.import_module(f"kio.schema.{name}.v{version}.data")
    return getattr(module, "ConsumerProtocol" + kind.capitalize())  # type: ignore[no-any-return]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("version", range(4))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kio_bytes_round_trip(kind: str, version: int, variant: str) -> None:
    schema, encode, decode = KINDS[kind]
    kio_obj = _build_kio(_kio_class(kind, version), variant, _Counter())
    data = struct.pack(">h", version) + _kio_bytes(kio_obj)
    decoded = decode(data)
    assert encode(decoded, version) == data
    _compare(kio_obj, decoded, schema.fields, version, False, f"{schema.name}v{version}")
    if variant == "defaults":
        _strip_defaulted(kio_obj, decoded, schema.fields, version, False)
        assert encode(decoded, version) == data


def test_newer_versions_are_read_with_the_newest_known_format() -> None:
    v3 = cp.encode_subscription(
        {"topics": ["a"], "owned_partitions": [{"topic": "a", "partitions": [0]}], "generation_id": 7,
         "rack_id": "r1"},
        3,
    )  # fmt: skip
    v9 = struct.pack(">h", 9) + v3[2:] + b"fields of v4..v9"
    assert cp.consumer_protocol_version(v9) == 9
    sub = cp.decode_subscription(v9)
    assert sub["generation_id"] == 7 and sub["rack_id"] == "r1" and sub["topics"] == ["a"]
    a = cp.encode_assignment({"assigned_partitions": [{"topic": "t", "partitions": [2, 1]}]}, 3)
    assert cp.decode_assignment(struct.pack(">h", 5) + a[2:] + b"\x00\x01")["assigned_partitions"] == [
        {"topic": "t", "partitions": [2, 1]}
    ]


def test_fields_absent_from_the_version_read_hold_kafkas_defaults() -> None:
    sub = cp.decode_subscription(cp.encode_subscription({"topics": ["x"]}))
    assert sub == {
        "topics": ["x"],
        "user_data": None,
        "owned_partitions": [],
        "generation_id": -1,
        "rack_id": None,
    }


def test_subscription_topics_needs_only_the_topics() -> None:
    full = cp.encode_subscription({"topics": ["a", "b"], "user_data": b"u"})
    assert cp.subscription_topics(full) == ["a", "b"]
    cut = full[: 2 + 4 + 3 + 3]  # version, count, two topics; no user data
    assert cp.subscription_topics(cut) == ["a", "b"]
    with pytest.raises(DecodeError):
        cp.decode_subscription(cut)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\xff\xff\x00\x00\x00\x00",  # negative version
        b"\x00\x00\x00\x00\x00\x01\x00\x09ab",  # a topic longer than the bytes
        b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe",  # not UTF-8
    ],
)
def test_malformed_bytes_raise_decode_error(data: bytes) -> None:
    for decode in (cp.decode_subscription, cp.decode_assignment, cp.subscription_topics):
        with pytest.raises(DecodeError):
            decode(data)


def test_an_unknown_version_cannot_be_written() -> None:
    with pytest.raises(ValueError, match="no version 4"):
        cp.encode_subscription({"topics": []}, 4)
