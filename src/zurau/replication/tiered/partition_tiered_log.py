"""A :class:`~zurau.storage.partition_log.PartitionLog` as the remote log manager's
:class:`~zurau.replication.tiered.tiered_log.TieredLog`.

The adapter holds no state of its own: every member reads the log (and its current config) at
the time of the call, so a config change, a truncation or a restart's new log object is seen at
once. ``topic_id_partition`` is fixed at construction: a re-created topic has a new id and gets a
new adapter.
"""

from __future__ import annotations

from collections.abc import Sequence

from zurau.replication.tiered.tiered_log import ClosedSegment, EpochCacheView, TieredLogConfig
from zurau.storage.partition_log import PartitionLog
from zurau.storage.remote.remote_log_segment import LogSegmentData
from zurau.storage.txn_index import AbortedTxn
from zurau.types import TopicIdPartition


class PartitionTieredLog:
    """``TieredLog`` over one PartitionLog."""

    __slots__ = ("_tip", "log")

    def __init__(self, tip: TopicIdPartition, log: PartitionLog) -> None:
        self._tip = tip
        self.log = log

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self._tip

    @property
    def config(self) -> TieredLogConfig:
        return self.log.config

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        return self.log.local_log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return min(self.log.last_stable_offset, self.log.high_watermark)

    @property
    def leader_epoch_cache(self) -> EpochCacheView:
        return self.log.leader_epoch_cache

    @property
    def only_local_size_in_bytes(self) -> int:
        highest = self.log.highest_offset_in_remote
        return sum(seg.size for seg in self.log.log_segments() if seg.base_offset > highest)

    def closed_segments(self) -> Sequence[ClosedSegment]:
        segs = self.log.log_segments()
        return [
            ClosedSegment(seg.base_offset, nxt.base_offset - 1, seg.size, seg.max_timestamp)
            for seg, nxt in zip(segs, segs[1:], strict=False)
        ]

    def segment_data(self, base_offset: int) -> LogSegmentData:
        return self.log.segment_upload_data(base_offset)

    def update_highest_offset_in_remote(self, offset: int) -> None:
        self.log.update_highest_offset_in_remote(offset)

    def advance_log_start_offset(self, offset: int) -> None:
        self.log.advance_log_start_offset(offset)

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        return self.log.aborted_transactions(fetch_offset, upper_bound)
