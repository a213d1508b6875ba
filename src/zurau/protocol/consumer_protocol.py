"""Encode and decode the consumer protocol's subscription and assignment bytes.

The layout (see :mod:`zurau.protocol.schemas.consumer_protocol`) is ``version int16`` followed by
the struct of that version. Decoding follows Kafka's rule for forward compatibility: a version
newer than the newest known (3) is read with the newest known format and the bytes after it are
ignored; a negative version is malformed. Every malformed input raises
:class:`~zurau.protocol.primitives.DecodeError` (a ``ValueError``).

The decoded dicts are :class:`~zurau.protocol.messages.ConsumerProtocolSubscription` and
:class:`~zurau.protocol.messages.ConsumerProtocolAssignment`; like every decoded message they hold
every field, those absent from the version read holding their default (``owned_partitions`` is
``[]``, ``generation_id`` -1, ``rack_id`` and ``user_data`` None).
"""

from __future__ import annotations

from typing import cast

from zurau.protocol.codec import decode_data, encode_data
from zurau.protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from zurau.protocol.primitives import I16, DecodeError
from zurau.protocol.schema import DataSchema
from zurau.protocol.schemas.consumer_protocol import ASSIGNMENT, SUBSCRIPTION

__all__ = [
    "ASSIGNMENT",
    "SUBSCRIPTION",
    "consumer_protocol_version",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "subscription_topics",
]

# Every subscription version starts with the topics; reading only them needs nothing after.
_TOPICS_ONLY = DataSchema(
    name="ConsumerProtocolSubscription(topics)", valid="0", flexible="none", fields=SUBSCRIPTION.fields[:1]
)


def consumer_protocol_version(data: bytes | bytearray | memoryview) -> int:
    """The int16 version in front of a subscription or assignment (DecodeError if negative)."""
    if len(data) < 2:
        raise DecodeError("consumer protocol bytes are too short for a version")
    (version,) = I16.unpack_from(data, 0)
    if version < 0:
        raise DecodeError(f"negative consumer protocol version {version}")
    return int(version)


def _encode(schema: DataSchema, version: int, obj: object) -> bytes:
    if not schema.min_version <= version <= schema.max_version:
        raise ValueError(f"{schema.name} has no version {version}")
    out = bytearray(I16.pack(version))
    encode_data(schema, version, cast(dict, obj), out)
    return bytes(out)


def encode_subscription(subscription: ConsumerProtocolSubscription, version: int = 0) -> bytes:
    """``version`` then the subscription (fields the version lacks are left out)."""
    return _encode(SUBSCRIPTION, version, subscription)


def decode_subscription(data: bytes | bytearray | memoryview) -> ConsumerProtocolSubscription:
    version = min(consumer_protocol_version(data), SUBSCRIPTION.max_version)
    obj, _end = decode_data(SUBSCRIPTION, version, data, 2)
    return cast(ConsumerProtocolSubscription, obj)


def subscription_topics(data: bytes | bytearray | memoryview) -> list[str]:
    """Only the subscribed topics: the one field every version starts with.

    Tolerates anything after the topics, even bytes too short for the rest of the struct.
    """
    consumer_protocol_version(data)
    obj, _end = decode_data(_TOPICS_ONLY, 0, data, 2)
    topics: list[str] = obj["topics"]
    return topics


def encode_assignment(assignment: ConsumerProtocolAssignment, version: int = 0) -> bytes:
    """``version`` then the assignment."""
    return _encode(ASSIGNMENT, version, assignment)


def decode_assignment(data: bytes | bytearray | memoryview) -> ConsumerProtocolAssignment:
    version = min(consumer_protocol_version(data), ASSIGNMENT.max_version)
    obj, _end = decode_data(ASSIGNMENT, version, data, 2)
    return cast(ConsumerProtocolAssignment, obj)
