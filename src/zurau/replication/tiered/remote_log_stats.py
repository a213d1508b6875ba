"""Counters of the remote tier, read by the metrics layer at scrape time (Kafka's
``RemoteCopyBytesPerSec``, ``RemoteFetchBytesPerSec``, ``RemoteDeleteRequestsPerSec``,
``RemoteCopyLagBytes``/``Segments``, ``RemoteLogSizeBytes``, ... as plain numbers).

Totals are monotonic counters since the broker started (a rate is their derivative); the
per-partition values are gauges of the partitions this broker leads (dropped when it stops leading
one). Every field is written on the event loop only, so a scrape reads a consistent-enough view
without locks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zurau.types import TopicIdPartition


@dataclass(slots=True)
class PartitionTierStats:
    """Gauges of one led partition."""

    #: Bytes / segments closed below the LSO and not yet copied (Kafka's RemoteCopyLag*).
    copy_lag_bytes: int = 0
    copy_lag_segments: int = 0
    #: Bytes / segments of the partition's COPY_SEGMENT_FINISHED remote segments in the lineage.
    remote_size_bytes: int = 0
    remote_segments: int = 0
    #: The highest offset in remote storage (-1: none).
    highest_offset_in_remote: int = -1


@dataclass(slots=True)
class RemoteLogStats:
    """Totals of one broker's remote log manager and reader."""

    copy_requests: int = 0
    copy_failures: int = 0
    bytes_copied: int = 0
    segments_copied: int = 0
    delete_requests: int = 0
    delete_failures: int = 0
    bytes_deleted: int = 0
    segments_deleted: int = 0
    fetch_requests: int = 0
    fetch_failures: int = 0
    bytes_read: int = 0
    #: KIP-956 quotas: segment copies that waited for the copy quota, and the ms they waited
    #: (Kafka's ``remote-copy-throttle-time`` sensor); fetches answered without their remote
    #: read because the fetch quota was exceeded, and the throttle times that quota gave them
    #: (Kafka's ``remote-fetch-throttle-time``).
    copy_throttles: int = 0
    copy_throttle_time_ms: int = 0
    fetch_throttles: int = 0
    fetch_throttle_time_ms: int = 0
    partitions: dict[TopicIdPartition, PartitionTierStats] = field(default_factory=dict)

    def partition(self, tip: TopicIdPartition) -> PartitionTierStats:
        st = self.partitions.get(tip)
        if st is None:
            st = self.partitions[tip] = PartitionTierStats()
        return st

    @property
    def copy_lag_bytes(self) -> int:
        return sum(p.copy_lag_bytes for p in self.partitions.values())

    @property
    def copy_lag_segments(self) -> int:
        return sum(p.copy_lag_segments for p in self.partitions.values())

    @property
    def remote_size_bytes(self) -> int:
        return sum(p.remote_size_bytes for p in self.partitions.values())
