"""Small value types shared by the client modules."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from zurau.types import TopicPartition  # the one definition, re-exported for the client's users


def partitions_by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """``{topic: [partition, ...]}``, topics and partitions in the order first given."""
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


class RecordMetadata(NamedTuple):
    """Where an acknowledged record was written (offset -1 with acks=0: no answer to read it from)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class ConsumerRecord(NamedTuple):
    """One consumed record. ``timestamp_type`` is 0 CreateTime or 1 LogAppendTime."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    leader_epoch: int = -1
