"""Small value types shared by every layer (imports nothing from zurau).

``TopicPartition`` is the one definition of a topic-partition pair; it is a ``NamedTuple`` so that
it compares and hashes like the plain ``(topic, partition)`` tuples used as dict keys throughout.
The ``NewType`` ids document what an ``int`` means at an interface without any run-time cost.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple, NewType

NodeId = NewType("NodeId", int)
Offset = NewType("Offset", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ProducerId = NewType("ProducerId", int)
ProducerEpoch = NewType("ProducerEpoch", int)

NO_PRODUCER_ID = -1
NO_LEADER = -1
NO_LEADER_EPOCH = -1
ZERO_UUID = uuid.UUID(int=0)


TopicPartitionKey = tuple[str, int]
"""A plain ``(topic, partition)`` dict key; a :class:`TopicPartition` is one too."""


class TopicPartition(NamedTuple):
    """A partition of a topic; equal to (and hashing as) the tuple ``(topic, partition)``."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class TopicIdPartition(NamedTuple):
    """A partition named by topic id as well as by name (Fetch v13+ and KRaft records use ids)."""

    topic_id: uuid.UUID
    topic: str
    partition: int


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's text form of a Uuid: 16 bytes in URL-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """The inverse of :func:`kafka_uuid`; ValueError if ``text`` is not one."""
    import base64
    import binascii

    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(f"{text!r} is not a Kafka Uuid (22 characters of URL-safe base64)") from None
    if len(raw) != 16 or len(text) != 22:
        raise ValueError(f"{text!r} is not a Kafka Uuid (22 characters of URL-safe base64)")
    return uuid.UUID(bytes=raw)
