"""How a coordinator writes to and reads from partitions: the :class:`PartitionWriter` Protocol.

The coordinator runtime never touches a log. It appends a batch (or a transaction marker) to a
partition and learns the batch's last offset; the batch is *committed* once the partition's high
watermark is above that offset, and only then may the state machine see it and its requester
hear about it (docs/architecture.md: "Committed means below the high watermark"). On one node the high
watermark passes the batch inside the append itself; with replicas it passes when the ISR has
fetched it. Listeners hear of every advance, synchronously, possibly before ``append`` returns.

:class:`ReplicaManagerPartitionWriter` is the broker's implementation, over the
:class:`~zurau.replication.replica_manager.ReplicaManager` (the only door to a partition's log);
tests use an in-memory one that can also hold the high watermark back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from zurau.replication.replica_manager import AppendOrigin, ReplicaManager

# (topic, partition, new high watermark)
HighWatermarkListener = Callable[[str, int, int], None]


class PartitionWriter(Protocol):
    def append(self, topic: str, partition: int, records: bytearray) -> int:
        """Append ``records`` (whole v2 batches, given up by the caller) as the partition's leader,
        with acks=all; return the last offset written. Raises KafkaError (nothing was written)."""
        ...

    def append_markers(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> int:
        """Append a COMMIT (``commit``) or ABORT marker of the producer; return its offset.
        ``transaction_version`` >= 2: the marker's epoch must be above the producer's epoch in
        the partition. Raises KafkaError (nothing was written)."""
        ...

    def high_watermark(self, topic: str, partition: int) -> int:
        """Offsets below it are committed. Raises KafkaError if the partition is not led here."""
        ...

    def log_start_offset(self, topic: str, partition: int) -> int: ...

    def read_committed(self, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, all below the high watermark (at least
        one batch however large; ``b""`` at the high watermark)."""
        ...

    def add_high_watermark_listener(self, listener: HighWatermarkListener) -> None:
        """Call ``listener(topic, partition, high_watermark)`` synchronously on every advance."""
        ...


@runtime_checkable
class ResignNotifier(Protocol):
    """Optional part of a writer: tells when this broker stops leading a partition."""

    def add_resign_listener(self, listener: Callable[[str, int], None]) -> None: ...


class ReplicaManagerPartitionWriter:
    """:class:`PartitionWriter` over the broker's replica manager (coordinator-origin appends)."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager

    def append(self, topic: str, partition: int, records: bytearray) -> int:
        result = self.replica_manager.append_as_leader(
            topic,
            partition,
            memoryview(records),
            required_acks=-1,
            origin=AppendOrigin.COORDINATOR,
            in_place=True,
        )
        return result.last_offset

    def append_markers(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> int:
        result = self.replica_manager.append_markers(
            topic, partition, producer_id, producer_epoch, commit, coordinator_epoch, transaction_version
        )
        return result.last_offset

    def high_watermark(self, topic: str, partition: int) -> int:
        return self.replica_manager.high_watermark(topic, partition)

    def log_start_offset(self, topic: str, partition: int) -> int:
        return self.replica_manager.log_start_offset(topic, partition)

    def log_end_offset(self, topic: str, partition: int) -> int:
        return self.replica_manager.partition(topic, partition).log.log_end_offset

    def read_committed(self, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
        return self.replica_manager.read_committed(topic, partition, offset, max_bytes)

    def add_high_watermark_listener(self, listener: HighWatermarkListener) -> None:
        self.replica_manager.add_high_watermark_listener(listener)

    def add_resign_listener(self, listener: Callable[[str, int], None]) -> None:
        self.replica_manager.add_resign_listener(listener)


__all__ = ["HighWatermarkListener", "PartitionWriter", "ReplicaManagerPartitionWriter", "ResignNotifier"]
