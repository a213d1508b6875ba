"""Which remote segments a leader deletes (Kafka's ``RLMExpirationTask`` decisions; pure, no I/O).

:func:`plan_remote_retention` sorts one partition's remote segments into what the expiration task
deletes, in this order:

1. *Leftovers*: segments in COPY_SEGMENT_STARTED that this broker is not copying now (an upload
   abandoned by a crash, a failed copy whose clean-up failed, or a zombie leader's upload: moving
   it to DELETE_SEGMENT_STARTED fences the zombie, whose COPY_SEGMENT_FINISHED is then an invalid
   transition), and segments in DELETE_SEGMENT_STARTED (a deletion interrupted by a crash). They
   were never data: deleting them moves no offset.
2. *Below the log start*: COPY_SEGMENT_FINISHED segments whose end offset is below the log start
   offset (DeleteRecords, or a retention deletion whose remote part a crash interrupted).
3. *Expired*: COPY_SEGMENT_FINISHED segments of the leader's lineage, oldest first, while the
   oldest breaches ``retention.ms`` (its ``max_timestamp_ms`` <= now - retention.ms) or
   ``retention.bytes`` (the total size, remote segments of the lineage plus the local-only
   segments, stays >= retention.bytes without it). The first segment that breaches neither ends
   the run, so expired segments are always a prefix and the log start moves to the end of the
   last one + 1 (:attr:`RetentionPlan.new_log_start_offset`) *before* any of them is deleted.

Segments outside the lineage that are not below the log start are left alone (neither counted
nor deleted): they belong to a branch an unclean election cut off and the log start passes them
eventually.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from typing import NamedTuple

from zurau.replication.tiered.remote_lineage import in_lineage
from zurau.storage.remote.remote_log_segment import RemoteLogSegmentMetadata, RemoteLogSegmentState

_S = RemoteLogSegmentState


class RetentionPlan(NamedTuple):
    leftovers: list[RemoteLogSegmentMetadata]
    below_log_start: list[RemoteLogSegmentMetadata]
    expired: list[RemoteLogSegmentMetadata]
    #: The log start offset to set before deleting ``expired`` (None: nothing expired).
    new_log_start_offset: int | None
    #: Bytes of the lineage's COPY_SEGMENT_FINISHED segments kept (the remote size after the plan).
    remote_size_after: int

    @property
    def to_delete(self) -> list[RemoteLogSegmentMetadata]:
        return [*self.leftovers, *self.below_log_start, *self.expired]


def plan_remote_retention(
    segments: Iterable[RemoteLogSegmentMetadata],
    *,
    lineage: dict[int, tuple[int, int]],
    log_start_offset: int,
    only_local_size: int,
    retention_ms: int,
    retention_bytes: int,
    now_ms: int,
    copying: Collection[uuid.UUID] = (),
) -> RetentionPlan:
    """The deletions of one expiration run (see the module docstring). ``lineage`` is
    :func:`~zurau.replication.tiered.remote_lineage.cache_ranges` of the leader's cache;
    ``copying`` the ids of the uploads this broker has in flight."""
    leftovers: list[RemoteLogSegmentMetadata] = []
    below: list[RemoteLogSegmentMetadata] = []
    live: list[RemoteLogSegmentMetadata] = []
    for seg in sorted(segments, key=lambda s: (s.start_offset, s.end_offset)):
        if seg.state is _S.COPY_SEGMENT_STARTED:
            if seg.segment_id.id not in copying:
                leftovers.append(seg)
        elif seg.state is _S.DELETE_SEGMENT_STARTED:
            leftovers.append(seg)
        elif seg.state is _S.COPY_SEGMENT_FINISHED:
            if seg.end_offset < log_start_offset:
                below.append(seg)
            elif in_lineage(seg, lineage):
                live.append(seg)
    remote_size = sum(s.segment_size_in_bytes for s in live)
    breach = remote_size + only_local_size - retention_bytes if retention_bytes >= 0 else -1
    expired: list[RemoteLogSegmentMetadata] = []
    for seg in live:
        by_time = retention_ms >= 0 and seg.max_timestamp_ms <= now_ms - retention_ms
        by_size = breach >= seg.segment_size_in_bytes
        if not (by_time or by_size):
            break
        expired.append(seg)
        breach -= seg.segment_size_in_bytes
        remote_size -= seg.segment_size_in_bytes
    new_start = expired[-1].end_offset + 1 if expired else None
    if new_start is not None and new_start <= log_start_offset:
        new_start = None
    return RetentionPlan(leftovers, below, expired, new_start, remote_size)
