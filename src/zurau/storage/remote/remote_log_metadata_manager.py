"""The remote log metadata Protocol (Kafka's ``RemoteLogMetadataManager``).

It records which segments of which partitions are in the remote tier and in what state. Zurau's
implementation (:mod:`zurau.replication.tiered.topic_based_metadata_manager`) is Kafka's
topic-based one: every event is a record in the replicated internal topic ``__remote_log_metadata``
(partition chosen by the topic-partition, so one partition's events stay in order), and every broker
hosting a replica of a partition reads its events into a local cache, so a new leader knows what is
remote.

Writes are async and return once the event is durable (acknowledged by the ISR) *and* applied to
this broker's cache (read-your-writes); a rejected transition (ValueError) is never written.
Queries are answered from the local cache, synchronously, and see only events applied so far;
:meth:`ready` says whether the cache of a partition has read all events published before this
broker started serving it (before that, a leader neither copies nor deletes remote segments).

Query semantics, for a partition with COPY_SEGMENT_FINISHED segments S:

* :meth:`segment_for` ``(tip, epoch, offset)``: the segment of S whose leader-epoch map gives
  ``epoch`` for ``offset`` (so, after an unclean election, the branch of the right lineage), or None.
* :meth:`highest_offset_for_epoch` ``(tip, epoch)``: the largest offset ever copied among the
  records of leader epochs <= ``epoch``: for each such epoch, the last offset of its records in a
  segment that reached COPY_SEGMENT_FINISHED (the next epoch's start in that segment - 1, or the
  segment's end offset), the highest of those across the epochs. As in Kafka, deleting segments
  (retention, clean-up) does not lower it: it says where copying resumes, and what was copied
  once is never copied again. None when no segment with records of such an epoch ever finished
  copying (or the partition is not hosted, or its remote data was deleted:
  DELETE_PARTITION_FINISHED empties the cache).
* :meth:`list_segments` ``(tip)``: every segment in any state, by start offset (retention, deletion
  and size accounting iterate it; only COPY_SEGMENT_FINISHED counts as data).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentMetadata,
    RemotePartitionDeleteState,
)
from zurau.types import TopicIdPartition


class RemoteLogMetadataManager(Protocol):
    """What the remote log manager needs of the remote log metadata."""

    async def add_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Publish a new upload (state COPY_SEGMENT_STARTED)."""
        ...

    async def update_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Publish a state change of a known upload (ValueError: unknown id or bad transition)."""
        ...

    async def put_partition_delete(
        self,
        tip: TopicIdPartition,
        state: RemotePartitionDeleteState,
        *,
        broker_id: int,
        event_timestamp_ms: int,
    ) -> None:
        """Publish a deleted partition's remote-data deletion progress."""
        ...

    def segment_for(
        self, tip: TopicIdPartition, epoch: int, offset: int
    ) -> RemoteLogSegmentMetadata | None: ...

    def highest_offset_for_epoch(self, tip: TopicIdPartition, epoch: int) -> int | None:
        """The largest offset ever copied of leader epochs <= ``epoch`` (deletions do not lower
        it; see the module docstring), or None."""
        ...

    def list_segments(self, tip: TopicIdPartition) -> Sequence[RemoteLogSegmentMetadata]: ...

    def remote_size(self, tip: TopicIdPartition) -> int:
        """Bytes of the partition's COPY_SEGMENT_FINISHED segments."""
        ...

    def ready(self, tip: TopicIdPartition) -> bool: ...

    def on_partitions_hosted(self, tips: Iterable[TopicIdPartition]) -> None:
        """This broker now hosts replicas of ``tips``: start reading their events."""
        ...

    def on_partitions_stopped(self, tips: Iterable[TopicIdPartition]) -> None:
        """This broker no longer hosts ``tips``: drop their cache."""
        ...

    async def close(self) -> None: ...
