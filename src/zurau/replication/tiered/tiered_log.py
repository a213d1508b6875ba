"""What the remote log manager needs of one partition's local log (the ``TieredLog`` Protocol).

Kafka's ``RemoteLogManager`` works on a ``UnifiedLog``; Zurau's remote log manager works on this
narrow view, which the broker adapts :class:`~zurau.storage.partition_log.PartitionLog` to. Every
member is called on the broker's event loop (never from a worker thread), so the log needs no
locking for it; the members are cheap (no file I/O) except :meth:`TieredLog.segment_data`, which may
write the producer-state snapshot of the segment's end.

Offsets, for a log whose oldest segments are in the remote tier::

    log_start_offset <= local_log_start_offset <= highest_offset_in_remote + 1 <= log_end_offset
    |---- remote only ----|------ local (its head may also be remote) ------|

* ``log_start_offset``: the first offset of the partition across both tiers (ListOffsets EARLIEST,
  Fetch's ``log_start_offset``); DeleteRecords and remote retention move it forward, never back.
* ``local_log_start_offset``: the base offset of the oldest local segment (ListOffsets
  EARLIEST_LOCAL_TIMESTAMP); local retention moves it forward, and only past segments whose end is
  <= the highest offset in remote storage (a segment is never deleted locally before it is remote).
* the leader-epoch cache covers ``[log_start_offset, log_end_offset)``: it is truncated from the
  start at the *log* start offset, never at the local log start (reads of remote offsets and the
  lineage checks of remote segments look epochs up below the local start).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.remote.remote_log_segment import LogSegmentData
from zurau.storage.txn_index import AbortedTxn
from zurau.types import TopicIdPartition


class ClosedSegment(NamedTuple):
    """One closed (no longer appended to) local segment.

    ``end_offset`` is the next segment's base offset - 1 (so it covers offsets a compaction or an
    aborted producer left unused, and consecutive closed segments tile the log with no gap);
    ``size_in_bytes`` the size of its ``.log`` file; ``max_timestamp_ms`` its largest batch
    ``max_timestamp`` (-1 when it holds none).
    """

    base_offset: int
    end_offset: int
    size_in_bytes: int
    max_timestamp_ms: int


class EpochCacheView(Protocol):
    """The leader-epoch cache queries the remote log manager makes
    (:class:`~zurau.storage.leader_epoch_cache.LeaderEpochCache` has them)."""

    @property
    def entries(self) -> list[EpochEntry]:
        """Every entry ``(epoch, start_offset)``, ascending in both."""
        ...

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote ``offset`` (the latest entry starting at or before it), or -1."""
        ...


class TieredLogConfig(Protocol):
    """The topic configs the remote log manager honours (Kafka's names, snake_case)."""

    @property
    def remote_storage_enable(self) -> bool:
        """``remote.storage.enable``: copy to and serve from the remote tier."""
        ...

    @property
    def remote_log_copy_disable(self) -> bool:
        """``remote.log.copy.disable`` (KIP-950): stop copying; remote data is still read and
        expired."""
        ...

    @property
    def retention_ms(self) -> int:
        """``retention.ms`` over both tiers; -1: unlimited."""
        ...

    @property
    def retention_bytes(self) -> int:
        """``retention.bytes`` over both tiers; -1: unlimited."""
        ...


class TieredLog(Protocol):
    """One partition's local log, as the remote log manager sees it (see the module docstring)."""

    @property
    def topic_id_partition(self) -> TopicIdPartition: ...

    @property
    def config(self) -> TieredLogConfig:
        """The current topic config (re-read on every task run: config changes apply at once)."""
        ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def local_log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def last_stable_offset(self) -> int:
        """The LSO on the leader: <= the high watermark; only segments wholly below it are copied
        (Kafka copies up to the LSO, so a remote segment never holds an undecided transaction)."""
        ...

    @property
    def leader_epoch_cache(self) -> EpochCacheView: ...

    @property
    def only_local_size_in_bytes(self) -> int:
        """Bytes of the local segments not in remote storage: those whose base offset is above the
        highest offset in remote storage, the active segment included (Kafka's
        ``onlyLocalLogSegmentsSize``). Total retention by size counts these plus the remote size."""
        ...

    def closed_segments(self) -> Sequence[ClosedSegment]:
        """Every local segment but the active one, by base offset."""
        ...

    def segment_data(self, base_offset: int) -> LogSegmentData:
        """The files of the closed segment ``base_offset`` for an upload: its ``.log``, indexes,
        ``.txnindex`` (None when it has none), the producer snapshot at its end offset + 1 (taken
        now when missing) and the leader-epoch checkpoint text of the entries up to its end.

        Raises KeyError when the segment is no longer in the local log (deleted meanwhile)."""
        ...

    def update_highest_offset_in_remote(self, offset: int) -> None:
        """Everything up to ``offset`` (inclusive) is in remote storage for this leader's lineage
        (-1: nothing): local retention may delete segments whose end offset is <= it. Called by the
        leader after each copied segment and at every copy task run (a new leader learns it from
        the remote log metadata); never decreases while a replica stays leader."""
        ...

    def advance_log_start_offset(self, offset: int) -> None:
        """Move the log start offset forward to ``offset`` (no-op when it is already there or
        beyond): remote retention deleted the records below it. The log truncates its
        leader-epoch cache from the start, deletes local segments wholly below ``offset`` and
        persists the new start (``log-start-offset-checkpoint``), as after DeleteRecords."""
        ...

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions of the *local* segments overlapping ``[fetch_offset,
        upper_bound)`` (as :meth:`PartitionLog.aborted_transactions`); a remote read whose
        transaction search runs past the remote segments asks the local log for the rest."""
        ...
