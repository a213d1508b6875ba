"""Reading a topic back in tests with confluent-kafka (librdkafka), the way a user's consumer
would: assigned partitions from offset 0 (no group rebalance to wait for), until the reader has
been idle for a while.

* :func:`read_records` — every record's (key, value) of some partitions, as a reader with the
  given isolation level sees them; an error record fails the test.
* :func:`read_values` — the same, values only (a null value fails the test).
* :func:`committed_offset` — a group's committed offset of one partition; read_committed asks for
  stable offsets (KIP-447), which a pending transactional offset commit holds back.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from confluent_kafka import Consumer, TopicPartition


def _consumer(bootstrap: str, isolation: str, group: str | None = None) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )


def read_records(
    bootstrap: str,
    topic: str,
    *,
    isolation: str = "read_committed",
    partitions: Iterable[int] = (0,),
    idle_polls: int = 3,
) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``partitions`` of ``topic`` in partition-then-arrival order, until
    ``idle_polls`` polls of 0.5 s in a row returned nothing."""
    c = _consumer(bootstrap, isolation)
    try:
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        seen: list[tuple[bytes | None, bytes | None]] = []
        idle = 0
        while idle < idle_polls:
            m = c.poll(0.5)
            if m is None:
                idle += 1
                continue
            assert m.error() is None, m.error()
            idle = 0
            seen.append((m.key(), m.value()))
        return seen
    finally:
        c.close()


def read_values(
    bootstrap: str,
    topic: str,
    *,
    isolation: str = "read_committed",
    partitions: Iterable[int] = (0,),
    idle_polls: int = 3,
) -> list[bytes]:
    """The values of :func:`read_records` (none may be null)."""
    values = [
        v
        for _, v in read_records(
            bootstrap, topic, isolation=isolation, partitions=partitions, idle_polls=idle_polls
        )
    ]
    assert all(v is not None for v in values), values
    return [v for v in values if v is not None]


def committed_offset(
    bootstrap: str, group: str, topic: str, partition: int = 0, isolation: str = "read_committed"
) -> int:
    """``group``'s committed offset of the partition (negative when it has none)."""
    c = _consumer(bootstrap, isolation, group)
    try:
        (tp,) = c.committed([TopicPartition(topic, partition)], timeout=10)
        return int(tp.offset)
    finally:
        c.close()
