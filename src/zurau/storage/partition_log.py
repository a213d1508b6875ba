"""The log of one topic-partition (Kafka's ``UnifiedLog``/``LocalLog``): segments, offsets, recovery.

Directory layout (Kafka's)::

    <log_dir>/<topic>-<partition>/
        00000000000000000000.log  .index  .timeindex     one segment (see log_segment.py)
        00000000000000004711.log  .index  .timeindex     the active (last) segment
        00000000000000004711.snapshot                    producer state (see producer_state.py)
        00000000000000004711.txnindex                    aborted transactions (see txn_index.py)
        leader-epoch-checkpoint                          epoch -> start offset (leader_epoch_cache.py)

A new partition's first segment has no ``.index``/``.timeindex`` file until its first index entry
(or its roll or close, if it holds data): an absent index file reads as an empty index
(``create_new``).

Offsets (Kafka's names and invariants)::

    log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset

* ``log_start_offset``: first offset a consumer may read; moved by retention and DeleteRecords.
  It may lie inside the first segment (whole segments are deleted only once entirely below it).
* ``local_log_start_offset``: first offset held in a local segment, ``max(log_start_offset,
  first segment's base offset)``. Equal to ``log_start_offset`` unless the log is tiered (below).

Tiered storage (KIP-405; ``config.remote_storage_enable``, the remote log manager of
zurau.replication.tiered drives it)::

    log_start_offset <= local_log_start_offset <= high_watermark
    highest_offset_in_remote < next base offset of every local segment not yet copied

* records in [log_start_offset, local_log_start_offset) exist only in remote storage: a read
  there raises OffsetMovedToTieredStorageError (never OffsetOutOfRangeError);
* ``highest_offset_in_remote`` (-1: nothing known) is the last offset copied, set by the remote
  log manager (``update_highest_offset_in_remote``), never lowered, not persisted (the manager
  sets it again from the remote log metadata after a restart);
* while copying is on (``config.remote_copy_enabled``), local retention (``local.retention.ms``
  / ``local.retention.bytes``, -2: the total ones) deletes only segments wholly at or below
  ``highest_offset_in_remote`` (or below the log start offset) and moves only the local log
  start offset; the total retention of such a log is the remote log manager's, which moves the
  log start offset with ``advance_log_start_offset``. With copying off (KIP-950), retention is
  Kafka's ordinary one (``retention.ms`` / ``retention.bytes``, the log start offset moves);
* at open, a checkpointed log start offset below the first local segment is kept (raised to the
  first segment only for a log that is not tiered), so a restart after SIGTERM or kill -9 keeps
  the remote part readable;
* producer snapshots of a log that copies are kept for every local segment
  (``<next base>.snapshot`` is uploaded with each segment) until the segment is deleted.
* ``log_end_offset``: the offset the next appended record gets.
* ``high_watermark``: last committed offset + 1; set by the caller (replication, or the single-node
  broker after each append); never above ``log_end_offset``.
* ``last_stable_offset``: the first offset of the oldest open transaction, capped at the high
  watermark; read_committed consumers read below it. Aborted transactions are indexed in
  ``.txnindex`` files (see txn_index.py) so fetches can name them.
* ``recovery_point``: every byte below this offset has been fsynced; opening after an unclean stop
  rescans (CRC-checks) segments from the one containing the recovery point.

Appends come in two kinds, both validated by ``log_validator`` and then written by the same
code (producer state, transaction index, leader-epoch cache, roll, write):

* ``append`` (the leader): offsets are assigned from the log end offset and the leader epoch is
  stamped; batches are stored as received with ``base_offset`` and ``partition_leader_epoch``
  patched in place;
* ``append_as_follower``: batches copied from the leader keep their offsets and epochs and are
  stored byte for byte.

Either way the bytes are handed to the OS before the call returns (so ``kill -9`` never loses an
acknowledged append). Batches are never split across segments. The leader-epoch cache gets an
entry whenever a batch with a new epoch is appended, is truncated with the log, and is rebuilt
from rescanned batches at recovery.

Not thread-safe: every call runs on the owning (event-loop) thread. Flushing off that thread is
split so that the worker never touches this object (see log_flush.py): ``prepare_flush`` captures
private descriptors and a target offset, the plan's ``run`` fsyncs them in any thread, and
``complete_flush`` advances the recovery point to that target. ``flush`` does all three inline.
"""

from __future__ import annotations

import os
import shutil
import uuid
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from zurau.protocol.errors import (
    InvalidRecordError,
    KafkaError,
    KafkaStorageError,
    OffsetMovedToTieredStorageError,
    OffsetOutOfRangeError,
)
from zurau.protocol.records.batch import TIMESTAMP_TYPE_MASK, BatchHeader, validate_batches
from zurau.protocol.records.control import ABORT, parse_control_key
from zurau.protocol.records.record import decode_batch_records
from zurau.storage import segment_swap
from zurau.storage.checkpoint import atomic_write, fsync_dir
from zurau.storage.leader_epoch_cache import EpochEntry, LeaderEpochCache, encode_leader_epoch_checkpoint
from zurau.storage.log_config import LogConfig
from zurau.storage.log_flush import FileSystemSync, FlushPlan, close_all, open_directory
from zurau.storage.log_segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    MAX_RELATIVE_OFFSET,
    TIME_INDEX_SUFFIX,
    LogSegment,
)
from zurau.storage.log_validator import ValidatedAppend, validate_and_assign_offsets, validate_replicated
from zurau.storage.producer_state import (
    SNAPSHOT_SUFFIX,
    ProducerStateEntry,
    ProducerStateManager,
    snapshot_file_name,
)
from zurau.storage.remote.remote_log_segment import LogSegmentData
from zurau.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, AbortedTxnIndex

DELETE_DIR_SUFFIX = "-delete"
# Opening a log replays the batches after its newest producer snapshot; it writes a new snapshot
# (so the next opening replays less) only when it replayed at least this many. Fewer are cheaper
# to replay again than a file is to write: a restart of 10,000 partitions that each got a few
# batches since their last roll would otherwise create 10,000 files.
SNAPSHOT_AFTER_REPLAYED_BATCHES = 1000
_STRAY_SUFFIXES = (".tmp", ".cleaned", ".deleted", ".swap")
#: Producer snapshots a log keeps while it copies segments to remote storage: one per segment
#: (each is uploaded with the segment it ends), deleted with the segment.
_TIERED_MAX_SNAPSHOTS = 2**31


class CopyCandidate(NamedTuple):
    """A closed local segment the remote log manager may copy (``segments_eligible_for_copy``).

    ``end_offset`` is the last offset it may hold (the next segment's base - 1);
    ``max_timestamp_ms`` its largest record timestamp (-1: none); ``size`` the ``.log`` bytes.
    """

    base_offset: int
    end_offset: int
    max_timestamp_ms: int
    size: int


class AppendResult(NamedTuple):
    """Outcome of ``PartitionLog.append`` (offsets of the whole append, inclusive)."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 unless message.timestamp.type=LogAppendTime
    log_start_offset: int
    duplicate: bool  # True: an idempotent retry; nothing was written, offsets are the original ones
    record_count: int


class LogReadSlice(NamedTuple):
    """A byte range of one segment file holding whole batches (for ``os.sendfile``).

    ``fd`` stays open at least ``file.delete.delay.ms`` after the segment is deleted, so a
    transfer started before a retention pass completes normally.
    """

    fd: int
    position: int
    size: int
    first_offset: int  # base offset of the first batch in the range


class PartitionLog:
    """The local log of one topic-partition. Build with ``PartitionLog.open``."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int,
        producer_state: ProducerStateManager,
        now_ms: int,
        leader_epoch_cache: LeaderEpochCache | None = None,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._high_watermark = high_watermark
        self._producer_state = producer_state
        self._unflushed_messages = 0
        self._last_flush_ms = now_ms
        self._last_now_ms = now_ms
        # Segment files created (rolls, restarts) and how many of those creations a completed
        # directory fsync covers; a truncation count that invalidates flush plans made before it.
        self._dir_changes = 0
        self._dir_synced = 0
        # Changes outside the segment files that the next directory fsync's plan also makes
        # durable: a log directory created by this process (its entry in the log dir) and a
        # leader-epoch checkpoint rewritten without fsync (``assign_leader_epoch``). Both are
        # page-cache writes until then, as acknowledged data is without flush.messages.
        self._parent_dir_unsynced = False
        self._epoch_checkpoint_unsynced = False
        self._generation = 0
        self._retired: list[tuple[LogSegment, int]] = []
        self._txn_index = AbortedTxnIndex(directory)
        self._ongoing_txns: dict[int, int] = {}  # producer id -> first offset of its open txn
        self._leader_epochs = (
            leader_epoch_cache if leader_epoch_cache is not None else LeaderEpochCache(directory)
        )
        self._name = f"{topic}-{partition}"
        self._highest_offset_in_remote = -1
        self._keep_snapshots_for_copy()
        self.closed = False

    # ------------------------------------------------------------------------------------------
    # Opening and recovery
    # ------------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        recovery_point: int = 0,
        log_start_offset: int | None = None,
        *,
        now_ms: int,
        high_watermark: int | None = None,
        had_clean_shutdown: bool = False,
    ) -> PartitionLog:
        """Open (creating if needed) the log in ``directory`` and recover it.

        Recovery: a cleaner swap a crash interrupted is completed (segment_swap), then stray
        ``.tmp/.cleaned/.deleted/.swap`` files and orphan indexes are removed;
        unless ``had_clean_shutdown``, every segment from the one containing ``recovery_point``
        on is rescanned batch by batch (magic, length, CRC-32C, offsets); at the first torn or
        corrupt batch that segment is truncated to its last whole batch and all later segments
        are deleted. Scanned segments get rebuilt indexes; a segment below the recovery point
        whose index is missing or fails its sanity check is rescanned too. Producer state is
        loaded from the newest snapshot at or below the log end offset and the log after it is
        replayed.
        """
        directory.mkdir(parents=True, exist_ok=True)
        bases = cls._clean_directory(directory)
        epochs, epochs_found = LeaderEpochCache.load(directory)
        before = epochs.entries

        def on_recovered_batch(h: BatchHeader) -> None:
            if h.partition_leader_epoch > epochs.latest_epoch:
                epochs.maybe_assign(h.partition_leader_epoch, h.base_offset, write=False)

        seg_args: dict[str, Any] = {
            "max_offset_index_entries": config.max_offset_index_entries,
            "max_time_index_entries": config.max_time_index_entries,
            "now_ms": now_ms,
        }
        segments = [LogSegment.open(directory, b, **seg_args) for b in bases]
        if not segments:
            start = max(log_start_offset or 0, 0)
            segments = [LogSegment.create(directory, start, **seg_args)]
            had_clean_shutdown = True  # nothing to recover
        base_list = [s.base_offset for s in segments]
        first_unflushed = (
            len(segments) if had_clean_shutdown else max(0, bisect_right(base_list, recovery_point) - 1)
        )
        i = 0
        while i < len(segments):
            seg = segments[i]
            if i >= first_unflushed:
                truncated = seg.recover(config.index_interval_bytes, on_recovered_batch)
                if truncated:
                    for later in segments[i + 1 :]:
                        later.delete()
                    del segments[i + 1 :]
            elif not seg.indexes_look_valid():
                seg.recover(config.index_interval_bytes)
            else:
                try:
                    seg.load()
                except KafkaStorageError:
                    seg.recover(config.index_interval_bytes)
            i += 1
        for seg in segments[:-1]:
            seg.on_become_inactive()
        log_end_offset = segments[-1].next_offset
        if config.remote_storage_enable:
            # The remote tier may hold what lies below the first local segment: keep the
            # checkpointed log start offset (Kafka's LogLoader; none checkpointed: 0, which the
            # remote log manager raises from the remote metadata).
            start_offset = log_start_offset if log_start_offset is not None else 0
        else:
            start_offset = (
                segments[0].base_offset
                if log_start_offset is None
                else max(log_start_offset, segments[0].base_offset)
            )
        if start_offset > log_end_offset:
            # Everything at or above the checkpointed log start offset is gone: start afresh there.
            for seg in segments:
                seg.delete()
            segments = [LogSegment.create(directory, start_offset, **seg_args)]
            log_end_offset = start_offset
            epochs = LeaderEpochCache(directory)
            epochs_found = True
        if not epochs_found and log_end_offset > segments[0].base_offset:
            # No (readable) checkpoint but data: rebuild the cache from every batch header.
            epochs = LeaderEpochCache(directory)
            for seg in segments:
                for _pos, h in seg.iter_headers():
                    on_recovered_batch(h)
        epochs.truncate_from_end(log_end_offset, write=False)
        epochs.truncate_from_start(start_offset, write=False)
        rewritten = epochs.entries != before or (not epochs_found and (len(epochs) or epochs.path.exists()))
        if rewritten:  # rebuilt, trimmed, or replacing an unreadable file
            # Without fsync (the log's next flush plan takes it): every partition whose leader
            # has not written in its epoch is trimmed here, and two fsyncs each made loading
            # thousands of partitions disk-bound. Losing the file to a power cut only means it
            # is rebuilt from the batches at the next load.
            epochs.write(fsync=False)
        local_start = max(start_offset, segments[0].base_offset)
        rp = log_end_offset if had_clean_shutdown else min(max(recovery_point, local_start), log_end_offset)
        hw = local_start if high_watermark is None else high_watermark
        hw = min(max(hw, local_start), log_end_offset)
        log = cls(
            directory,
            topic,
            partition,
            config,
            segments,
            log_start_offset=start_offset,
            recovery_point=rp,
            high_watermark=hw,
            producer_state=ProducerStateManager(directory),
            now_ms=now_ms,
            leader_epoch_cache=epochs,
        )
        if rewritten:
            log._epoch_checkpoint_unsynced = True
            log._dir_changes += 1
        log._rebuild_producer_state(take_snapshot=True)
        return log

    @classmethod
    def create_new(
        cls, directory: Path, topic: str, partition: int, config: LogConfig, *, now_ms: int
    ) -> PartitionLog | None:
        """Create the empty log of a partition whose directory does not exist yet; None (and
        nothing done) if it exists, in which case the caller opens it with :meth:`open`.

        What ``open`` would do for a missing directory, without looking for anything to recover
        (there is nothing: the directory is this call's own ``mkdir``), so thousands of partitions
        are created at once with two file creations each and no fsync. On disk, in order:

        1. ``mkdir <topic>-<partition>``;
        2. ``00000000000000000000.log`` created empty (its descriptor stays open).

        The ``.index`` and ``.timeindex`` files are created by their first entry (an absent index
        reads as empty; ``LogSegment.create(index_files=False)``), and the leader-epoch checkpoint
        when a replica manager assigns the first epoch (``assign_leader_epoch``: a ``.tmp`` file
        renamed over the final name). A process killed after any of these steps leaves a
        directory that the next start opens as an empty log (``open``: no ``.log`` file means a
        new empty segment, an absent index of an empty segment is an empty index, a ``.tmp`` file
        is removed, an unreadable epoch checkpoint is rebuilt), i.e. a usable partition.
        Nothing is fsynced here: the directory's entry in the log dir, the new files and the
        epoch checkpoint reach the disk with the log's next flush plan (``mark_created``), like
        acknowledged data without ``flush.messages``.
        """
        try:
            os.mkdir(directory)
        except FileExistsError:
            return None
        segment = LogSegment.create(
            directory,
            0,
            max_offset_index_entries=config.max_offset_index_entries,
            max_time_index_entries=config.max_time_index_entries,
            now_ms=now_ms,
            index_files=False,
        )
        log = cls(
            directory,
            topic,
            partition,
            config,
            [segment],
            log_start_offset=0,
            recovery_point=0,
            high_watermark=0,
            producer_state=ProducerStateManager(directory),
            now_ms=now_ms,
        )
        log.mark_created()
        return log

    @staticmethod
    def _clean_directory(directory: Path) -> list[int]:
        """Remove stray files; return the base offsets of the .log files, ascending.

        Swaps of cleaned segments that a crash interrupted are completed first (segment_swap).
        """
        names = os.listdir(directory)
        if any(n.endswith(segment_swap.SWAP_SUFFIX) for n in names):  # else there is nothing to do
            segment_swap.recover_interrupted_swaps(directory)
            names = os.listdir(directory)
        bases: list[int] = []
        for name in names:
            if name.endswith(_STRAY_SUFFIXES):
                p = directory / name
                if p.is_file():
                    p.unlink()
                continue
            stem, suffix = os.path.splitext(name)
            if suffix == LOG_SUFFIX and stem.isdigit():
                bases.append(int(stem))
        have = set(bases)
        for name in names:
            stem, suffix = os.path.splitext(name)
            if suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX) and stem.isdigit() and int(stem) not in have:
                (directory / name).unlink(missing_ok=True)
        return sorted(bases)

    def _rebuild_producer_state(self, *, take_snapshot: bool) -> None:
        """Load the newest snapshot <= log end offset and replay the log after it."""
        leo = self.log_end_offset
        snap = self._producer_state.load_latest(leo)
        start = snap if snap is not None else self._segments[0].base_offset
        # Aborted-txn entries at or above the replay start are recomputed from the log below.
        self._txn_index.load(self._bases, keep_below=start)
        replayed = 0  # batches read
        if start < leo:
            i = max(0, bisect_right(self._bases, start) - 1)
            producers = self._producer_state.producers
            for seg in self._segments[i:]:
                pos = seg.offset_index.lookup(start).position if seg.base_offset <= start else 0
                for bpos, h in seg.iter_headers(pos):
                    replayed += 1
                    if h.producer_id >= 0 and h.base_offset + h.last_offset_delta >= start:
                        if h.is_control:
                            entry = producers.get(h.producer_id)
                            first = entry.current_txn_first_offset if entry is not None else -1
                            if first >= 0 and self._control_type(seg.read(bpos, h.size)) == ABORT:
                                lso = h.last_offset + 1
                                for other in producers.values():
                                    f = other.current_txn_first_offset
                                    if other.producer_id != h.producer_id and 0 <= f < lso:
                                        lso = f
                                self._txn_index.append(
                                    AbortedTxn(h.producer_id, first, h.last_offset, lso), seg.base_offset
                                )
                        self._producer_state.replay(h)
        self._producer_state.evict_below(self._log_start_offset)
        self._ongoing_txns = {
            pid: e.current_txn_first_offset
            for pid, e in self._producer_state.producers.items()
            if e.current_txn_first_offset >= 0
        }
        if take_snapshot and replayed >= SNAPSHOT_AFTER_REPLAYED_BATCHES:
            self._producer_state.take_snapshot(leo)

    # ------------------------------------------------------------------------------------------
    # Offsets and properties
    # ------------------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        """The first offset a local segment holds: ``max(log_start_offset, first segment's base)``
        (Kafka's ``localLogStartOffset``). Below it, down to ``log_start_offset``, records are
        in remote storage only."""
        first = self._segments[0].base_offset
        return first if first > self._log_start_offset else self._log_start_offset

    @property
    def remote_log_enabled(self) -> bool:
        """This log is tiered (``config.remote_storage_enable``: the topic's ``remote.storage.enable``
        on a broker with ``remote.log.storage.system.enable``)."""
        return self.config.remote_storage_enable

    @property
    def highest_offset_in_remote(self) -> int:
        """The last offset copied to remote storage (inclusive), -1 when none is known. Set by
        the remote log manager; local retention deletes only segments at or below it."""
        return self._highest_offset_in_remote

    def update_highest_offset_in_remote(self, offset: int) -> int:
        """The remote log manager copied (or found in the remote metadata) every offset up to
        ``offset`` inclusive. Never lowers the value (Kafka's ``updateHighestOffsetInRemoteStorage``);
        ignored for a log that is not tiered. Returns the value now held."""
        if self.config.remote_storage_enable and offset > self._highest_offset_in_remote:
            self._highest_offset_in_remote = offset
        return self._highest_offset_in_remote

    def advance_log_start_offset(self, offset: int) -> int:
        """Raise the log start offset to ``offset`` (the remote tier's retention deleted what lies
        below it; Kafka's ``updateLogStartOffsetFromRemoteTier``); return the log start offset.

        An offset at or below the current log start changes nothing; one above the high
        watermark raises OffsetOutOfRangeError (the log start never passes it). Local segments
        wholly below ``offset`` are deleted at once, producers and leader epochs below it are
        forgotten. The new value reaches the disk with the log manager's next
        ``log-start-offset-checkpoint`` (as DeleteRecords' does); a crash before that reopens
        the log at the older, lower value, which the remote log manager raises again.
        """
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition {self._name} since it "
                f"is larger than the high watermark {self._high_watermark}"
            )
        if offset <= self._log_start_offset:
            return self._log_start_offset
        self._log_start_offset = offset
        self._recovery_point = max(self._recovery_point, min(offset, self.log_end_offset))
        self._delete_oldest_while(lambda seg, nxt: nxt is not None and nxt.base_offset <= offset)
        self._producer_state.evict_below(offset)
        self._leader_epochs.truncate_from_start(offset)
        return self._log_start_offset

    def _keep_snapshots_for_copy(self) -> None:
        """A log that copies segments keeps one producer snapshot per segment (each is uploaded
        with its segment); any other log keeps the few newest."""
        if self.config.remote_copy_enabled:
            self._producer_state.max_snapshots = max(
                self._producer_state.max_snapshots, _TIERED_MAX_SNAPSHOTS
            )

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Set the high watermark (clamped to [log_start_offset, log_end_offset]; may go down)."""
        self._high_watermark = min(max(offset, self._log_start_offset), self.log_end_offset)

    def update_high_watermark(self, offset: int) -> int:
        """Advance the high watermark to ``offset`` (clamped, never backwards); return it."""
        new = min(max(offset, self._log_start_offset), self.log_end_offset)
        if new > self._high_watermark:
            self._high_watermark = new
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """First offset of the oldest open transaction, capped at the high watermark."""
        if self._ongoing_txns:
            return min(self._high_watermark, min(self._ongoing_txns.values()))
        return self._high_watermark

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), for read_committed fetches."""
        return self._txn_index.collect(fetch_offset, upper_bound)

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each open transaction in this partition."""
        return dict(self._ongoing_txns)

    @staticmethod
    def _control_type(batch: bytes | bytearray | memoryview) -> int:
        """The control type (0 ABORT, 1 COMMIT, ...) of a control batch's single record."""
        records = decode_batch_records(batch, check_crc=False)
        if not records or records[0].key is None:
            raise InvalidRecordError("control batch carries no control record")
        return parse_control_key(records[0].key)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def unflushed_messages(self) -> int:
        return self._unflushed_messages

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def needs_flush(self) -> bool:
        """True if data above the recovery point or a new segment file has not been fsynced."""
        return self._recovery_point < self.log_end_offset or self._dir_changes != self._dir_synced

    @property
    def directory_sync_pending(self) -> bool:
        """True if a segment file was created since the last completed directory fsync."""
        return self._dir_changes != self._dir_synced

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producer_state

    def producer_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producer_state.producers.get(producer_id)

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        return self._leader_epochs

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end offset)`` (see ``LeaderEpochCache.end_offset_for``)."""
        return self._leader_epochs.end_offset_for(leader_epoch, self.log_end_offset)

    # ------------------------------------------------------------------------------------------
    # Append
    # ------------------------------------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int,
        now_ms: int,
        validated: list[tuple[int, BatchHeader]] | None = None,
        in_place: bool = False,
    ) -> AppendResult:
        """Append a produced records payload as the leader; all-or-nothing.

        ``in_place=True`` hands ``records`` (a writable buffer) over to the log: offsets and
        epochs are patched into it directly instead of into a copy. The broker does this with
        the request buffer it received, which nothing reads after the append.

        Checks, in Kafka's order: batch validity (``validate_batches`` unless ``validated`` is
        given), then ``log_validator.validate_and_assign_offsets`` (offset range vs record count,
        ``segment.bytes``, ``max.message.bytes``, CreateTime timestamps), then idempotent-producer
        state (InvalidProducerEpochError, OutOfOrderSequenceNumberError; a duplicate returns the
        original offsets with ``duplicate=True`` and writes nothing). Offsets from the log end
        offset and ``leader_epoch`` are patched in (LogAppendTime batches also get the
        timestamp-type bit, ``max_timestamp = now_ms`` and a new CRC), the segment rolls if
        needed, and the bytes are written.
        """
        if self.closed:
            raise KafkaStorageError(f"log {self._name} is closed")
        self._last_now_ms = now_ms
        buf: bytearray | memoryview
        if in_place and (
            isinstance(records, bytearray) or (isinstance(records, memoryview) and not records.readonly)
        ):
            buf = records
        else:
            buf = bytearray(records)
        batches = validated if validated is not None else validate_batches(buf)
        appended = validate_and_assign_offsets(
            buf,
            batches,
            config=self.config,
            first_offset=self.log_end_offset,
            leader_epoch=leader_epoch,
            now_ms=now_ms,
            where=self._name,
        )
        return self._append_validated(buf, appended, now_ms, check_producers=True)

    def append_as_follower(
        self,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        validated: list[tuple[int, BatchHeader]] | None = None,
    ) -> AppendResult:
        """Append batches copied from the leader, keeping their offsets and leader epochs.

        Checks (``log_validator.validate_replicated``): integrity (magic, lengths, CRC-32C unless
        ``validated`` is given), offsets increasing from at least the log end offset, payload
        <= ``segment.bytes``. Producer state is updated without sequence checks (the leader made
        them) and the bytes are stored unchanged, so a follower's log is byte-identical to its
        leader's. An empty payload appends nothing.
        """
        if self.closed:
            raise KafkaStorageError(f"log {self._name} is closed")
        self._last_now_ms = now_ms
        if len(records) == 0:
            leo = self.log_end_offset
            return AppendResult(leo, leo - 1, -1, self._log_start_offset, False, 0)
        appended = validate_replicated(
            records, config=self.config, log_end_offset=self.log_end_offset, where=self._name, batches=validated
        )
        return self._append_validated(records, appended, now_ms, check_producers=False)

    def _append_validated(
        self,
        buf: bytes | bytearray | memoryview,
        appended: ValidatedAppend,
        now_ms: int,
        *,
        check_producers: bool,
    ) -> AppendResult:
        """Producer state, write, transaction index and leader epochs of a validated append.

        With ``check_producers`` (leader appends) every batch with a producer id is checked
        against the producer state first and a duplicate ends the append without writing.
        """
        cfg = self.config
        final = appended.batches
        info = self._producer_state.begin_append()
        aborts: list[AbortedTxn] = []
        for pos, h in final:
            if h.producer_id < 0:
                continue
            if check_producers:
                duplicate = info.check(h)
                if duplicate is not None:
                    return AppendResult(
                        duplicate.first_offset,
                        duplicate.last_offset,
                        duplicate.timestamp if appended.log_append_time_ms >= 0 else -1,
                        self._log_start_offset,
                        True,
                        duplicate.last_offset - duplicate.first_offset + 1,
                    )
            if h.is_control:
                prior = info._entry(h.producer_id)
                txn_first = prior.current_txn_first_offset if prior is not None else -1
                if txn_first >= 0 and self._control_type(memoryview(buf)[pos : pos + h.size]) == ABORT:
                    aborts.append(AbortedTxn(h.producer_id, txn_first, h.last_offset, -1))
            info.update(h)

        if self._should_roll(len(buf), appended.max_timestamp, appended.last_offset, now_ms):
            self.roll(now_ms)
        self._segments[-1].append(buf, final, index_interval_bytes=cfg.index_interval_bytes)
        info.commit()
        epochs = self._leader_epochs
        for _pos, h in final:
            if h.partition_leader_epoch != epochs.latest_epoch and h.partition_leader_epoch >= 0:
                epochs.maybe_assign(h.partition_leader_epoch, h.base_offset)
        for _pos, h in final:
            if h.producer_id < 0 or not h.is_transactional:
                continue
            if h.is_control:
                self._ongoing_txns.pop(h.producer_id, None)
            else:
                self._ongoing_txns.setdefault(h.producer_id, h.base_offset)
        for a in aborts:
            # Kafka's ProducerStateManager.lastStableOffset(completedTxn): the first offset of the
            # oldest other open transaction, else the offset after the marker (so leader and
            # followers index the same value, whatever their high watermarks).
            lso = a.last_offset + 1
            for pid, first in self._ongoing_txns.items():
                if pid != a.producer_id and first < lso:
                    lso = first
            self._txn_index.append(a._replace(last_stable_offset=lso), self._bases[-1])
        self._unflushed_messages += appended.record_count
        if self._unflushed_messages >= cfg.flush_messages:
            self.flush(now_ms=now_ms)
        return AppendResult(
            appended.first_offset,
            appended.last_offset,
            appended.log_append_time_ms,
            self._log_start_offset,
            False,
            appended.record_count,
        )

    def _should_roll(self, size: int, max_timestamp: int, last_offset: int, now_ms: int) -> bool:
        """Kafka's roll conditions for appending ``size`` bytes ending at ``last_offset``."""
        seg = self._segments[-1]
        if seg.size == 0:
            return False
        cfg = self.config
        if seg.size > cfg.segment_bytes - size:
            return True
        base_ts = seg.rolling_base_timestamp()
        waited = max_timestamp - base_ts if base_ts is not None and base_ts >= 0 else now_ms - seg.created_ms
        # Kafka draws a random jitter in [0, segment.jitter.ms) per segment; derive it from the
        # base offset instead so that rolls stay deterministic (and reproducible in tests).
        jitter = (seg.base_offset * 2654435761) % cfg.segment_jitter_ms if cfg.segment_jitter_ms > 0 else 0
        if waited > cfg.max_segment_ms - jitter:
            return True
        if (
            seg.offset_index.entries >= cfg.max_offset_index_entries
            or seg.time_index.entries >= cfg.max_time_index_entries
        ):
            return True
        return last_offset - seg.base_offset > MAX_RELATIVE_OFFSET

    def roll(self, now_ms: int) -> LogSegment:
        """Start a new active segment at the log end offset (no-op if the active one is empty)."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        new_base = self.log_end_offset
        active.on_become_inactive()
        self._producer_state.take_snapshot(new_base)
        seg = LogSegment.create(
            self.directory,
            new_base,
            max_offset_index_entries=self.config.max_offset_index_entries,
            max_time_index_entries=self.config.max_time_index_entries,
            now_ms=now_ms,
        )
        self._segments.append(seg)
        self._bases.append(new_base)
        self._dir_changes += 1
        return seg

    # ------------------------------------------------------------------------------------------
    # Read
    # ------------------------------------------------------------------------------------------

    def _check_fetch_offset(self, fetch_offset: int) -> None:
        if fetch_offset < self._log_start_offset or fetch_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} is out of range [{self._log_start_offset}, {self.log_end_offset}] "
                f"for {self.topic}-{self.partition}"
            )
        if fetch_offset < self._segments[0].base_offset:
            raise OffsetMovedToTieredStorageError(
                f"offset {fetch_offset} of {self.topic}-{self.partition} is in remote storage only "
                f"(local log start offset {self.local_log_start_offset})"
            )

    def _locate(
        self, fetch_offset: int, max_bytes: int, max_offset: int, min_one_batch: bool
    ) -> tuple[LogSegment, int, int, int] | None:
        """``(segment, position, size, first batch base offset)`` of a read, or None if empty."""
        self._check_fetch_offset(fetch_offset)
        if fetch_offset >= min(max_offset, self.log_end_offset):
            return None
        i = max(bisect_right(self._bases, fetch_offset) - 1, 0)
        for seg in self._segments[i:]:
            found = seg.find_batch(fetch_offset)
            if found is not None:
                break
        else:
            return None
        pos, h = found
        if h.base_offset >= max_offset:
            return None
        limit = seg.position_for_upper_bound(max_offset)
        target = pos + max(max_bytes, 0)
        end = limit if target >= limit else seg.last_batch_end_within(pos, target)
        if end <= pos:
            if not min_one_batch:
                return None
            end = pos + h.size
        return seg, pos, end - pos, h.base_offset

    def read_slice(
        self, fetch_offset: int, max_bytes: int, *, max_offset: int, min_one_batch: bool = True
    ) -> LogReadSlice | None:
        """The bytes ``read`` would return, as a range of one segment file; None if empty.

        Cost: a bisect over segments, a bisect in the sparse offset index and header scans of
        about ``index.interval.bytes`` — independent of the log's size and segment count. Like
        Kafka, one read returns bytes of one segment only.
        """
        loc = self._locate(fetch_offset, max_bytes, max_offset, min_one_batch)
        if loc is None:
            return None
        seg, pos, size, first = loc
        return LogReadSlice(seg.fd, pos, size, first)

    def read(
        self, fetch_offset: int, max_bytes: int, *, max_offset: int, min_one_batch: bool = True
    ) -> bytes:
        """Whole batches from the one containing ``fetch_offset``, below ``max_offset``.

        At most ``max_bytes`` unless ``min_one_batch`` and the first batch alone is larger (then
        exactly that batch: KIP-74). ``fetch_offset`` outside [log_start_offset, log_end_offset]
        raises OffsetOutOfRangeError, one in [log_start_offset, local_log_start_offset) (a tiered
        log) OffsetMovedToTieredStorageError; ``fetch_offset == log_end_offset`` gives ``b""``. The first
        batch may start before ``fetch_offset`` (consumers skip records below it, as with Kafka).
        Batches whose base offset is >= ``max_offset`` (the high watermark or last stable
        offset) are not returned. Data comes from one segment per call (see ``read_slice``).
        """
        loc = self._locate(fetch_offset, max_bytes, max_offset, min_one_batch)
        if loc is None:
            return b""
        seg, pos, size, _first = loc
        return seg.read(pos, size)

    # ------------------------------------------------------------------------------------------
    # Timestamps (ListOffsets)
    # ------------------------------------------------------------------------------------------

    def _first_record_at_or_after(
        self, seg: LogSegment, pos: int, h: BatchHeader, keep: Callable[[int, int], bool]
    ) -> tuple[int, int] | None:
        """Decode one batch and return ``(offset, timestamp)`` of its first record passing ``keep``."""
        try:
            records = decode_batch_records(seg.read(pos, h.size), check_crc=False)
        except KafkaError:
            return None
        for r in records:
            if keep(r.offset, r.timestamp):
                return r.offset, r.timestamp
        return None

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp``, or None.

        Finds the first segment whose largest timestamp reaches ``timestamp``, then the first
        batch there whose max timestamp does, and decodes that batch to return the exact first
        record (Kafka's semantics); if the batch cannot be decoded, its base offset and max
        timestamp are returned. Records below the log start offset are skipped.
        """
        lso = self._log_start_offset
        for seg in self._segments:
            if seg.size == 0 or seg.max_timestamp < timestamp or seg.next_offset <= lso:
                continue
            found = seg.find_batch_by_timestamp(timestamp, lso)
            if found is None:
                continue
            pos, h = found
            if not h.attributes & TIMESTAMP_TYPE_MASK:
                exact = self._first_record_at_or_after(seg, pos, h, lambda o, t: o >= lso and t >= timestamp)
                if exact is not None:
                    return exact
            return max(h.base_offset, lso), h.max_timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the largest timestamp (ListOffsets -3)."""
        best: LogSegment | None = None
        for seg in self._segments:
            if (
                seg.size
                and seg.max_timestamp >= 0
                and (best is None or seg.max_timestamp > best.max_timestamp)
            ):
                best = seg
        if best is None:
            return None
        found = best.find_batch(best.offset_of_max_timestamp)
        if found is None:
            return None
        pos, h = found
        lso = self._log_start_offset
        if not h.attributes & TIMESTAMP_TYPE_MASK:
            exact = self._first_record_at_or_after(best, pos, h, lambda o, t: t == h.max_timestamp)
            if exact is not None:
                return max(exact[0], lso), exact[1]
        return max(h.base_offset, lso), h.max_timestamp

    # ------------------------------------------------------------------------------------------
    # Deletion: DeleteRecords, retention, truncation
    # ------------------------------------------------------------------------------------------

    def _retire(self, seg: LogSegment) -> None:
        """Unlink a segment's files now; close its descriptor after ``file.delete.delay.ms``."""
        seg.unlink()
        self._txn_index.drop_segment(seg.base_offset)
        self._retired.append((seg, self._last_now_ms + self.config.file_delete_delay_ms))

    def purge_retired(self, now_ms: int, *, force: bool = False) -> None:
        """Close descriptors of deleted segments whose delay has passed."""
        keep = []
        for seg, due in self._retired:
            if force or due <= now_ms:
                seg.close_fd()
            else:
                keep.append((seg, due))
        self._retired = keep

    def _delete_oldest_while(
        self,
        predicate: Callable[[LogSegment, LogSegment | None], bool],
        *,
        roll_breached_active: bool = False,
    ) -> int:
        """Delete segments from the oldest while ``predicate(segment, next_segment)`` holds.

        Never the active segment, and only segments entirely below the high watermark. While
        the log copies to remote storage, only segments copied (their last offset <=
        ``highest_offset_in_remote``) or wholly below the log start offset (Kafka's
        ``deletableSegments``). With ``roll_breached_active`` (retention) a tiered log whose
        every older segment went rolls its active segment when it, too, breaches the predicate
        and lies below the high watermark, so that it is copied and deleted in a later pass.
        """
        n = 0
        copying = self.config.remote_copy_enabled
        while True:
            if len(self._segments) == 1:
                active = self._segments[0]
                if (
                    roll_breached_active
                    and self.config.remote_storage_enable
                    and active.size > 0
                    and self._high_watermark >= self.log_end_offset
                    and predicate(active, None)
                ):
                    self.roll(self._last_now_ms)
                break
            seg, nxt = self._segments[0], self._segments[1]
            if nxt.base_offset > self._high_watermark or not predicate(seg, nxt):
                break
            if (
                copying
                and nxt.base_offset - 1 > self._highest_offset_in_remote
                and self._log_start_offset < nxt.base_offset
            ):
                break  # not copied yet
            self._retire(seg)
            del self._segments[0]
            del self._bases[0]
            n += 1
        if n:
            self._after_head_deletion()
        return n

    def _after_head_deletion(self) -> None:
        """Head segments were deleted: the log start offset follows the first segment unless
        the log copies to remote storage (then only the local log start offset moves, Kafka's
        ``incrementStartOffset``)."""
        first = self._segments[0].base_offset
        if first > self._log_start_offset and not self.config.remote_copy_enabled:
            self._log_start_offset = first
        local_start = self.local_log_start_offset
        self._high_watermark = max(self._high_watermark, local_start)
        self._recovery_point = max(self._recovery_point, local_start)
        self._producer_state.evict_below(self._log_start_offset)
        self._producer_state.delete_snapshots_below(first)
        self._leader_epochs.truncate_from_start(self._log_start_offset)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset``; return the new low watermark.

        ``offset == -1`` means the high watermark (as in the DeleteRecords API). An offset beyond
        the high watermark (or negative) raises OffsetOutOfRangeError; an offset at or below the
        current log start offset changes nothing. Segments entirely below the new log start
        offset are deleted.
        """
        if offset == -1:
            offset = self._high_watermark
        if offset < 0 or offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {offset}: high watermark of {self.topic}-{self.partition} "
                f"is {self._high_watermark}"
            )
        return self.advance_log_start_offset(offset)

    def apply_retention(self, now_ms: int) -> int:
        """Delete old segments by ``retention.ms`` then ``retention.bytes`` (when
        ``cleanup.policy`` includes delete), and segments below the log start offset. Returns
        the number of segments deleted.

        Time retention uses each segment's largest timestamp (its mtime if it has none); size
        retention deletes the oldest segments while the rest still exceed ``retention.bytes``.
        The active segment and segments not entirely below the high watermark are never deleted.

        A log that copies to remote storage applies its local retention instead
        (``local.retention.ms`` / ``local.retention.bytes``, -2: the total ones) to its local
        segments, deletes only copied ones, moves only the local log start offset, and rolls an
        active segment that breaches it (see ``_delete_oldest_while``); its total retention is
        the remote log manager's (``advance_log_start_offset``).
        """
        self._last_now_ms = now_ms
        cfg = self.config
        tiered = cfg.remote_copy_enabled
        retention_ms = cfg.effective_local_retention_ms if tiered else cfg.retention_ms
        retention_bytes = cfg.effective_local_retention_bytes if tiered else cfg.retention_bytes
        deleted = 0
        if cfg.delete_enabled and retention_ms >= 0:
            deleted += self._delete_oldest_while(
                lambda seg, nxt: now_ms - seg.largest_timestamp > retention_ms,
                roll_breached_active=True,
            )
        if cfg.delete_enabled and retention_bytes >= 0:
            excess = self.size_in_bytes - retention_bytes

            def over_size(seg: LogSegment, nxt: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size >= 0:
                    excess -= seg.size
                    return True
                return False

            if excess > 0:
                deleted += self._delete_oldest_while(over_size, roll_breached_active=True)
        lso = self._log_start_offset
        deleted += self._delete_oldest_while(lambda seg, nxt: nxt is not None and nxt.base_offset <= lso)
        self.purge_retired(now_ms)
        return deleted

    def truncate_to(self, offset: int) -> None:
        """Remove every record at ``offset`` and above (a follower diverging from its leader).

        A batch straddling ``offset`` is removed whole. The high watermark and recovery point are
        lowered to the new log end offset; producer state is rebuilt from snapshots <= it.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            # Nothing to remove, but the leader-epoch cache may end with an epoch that starts at
            # the log end: this replica led it and wrote nothing before another leader took over.
            # Left in place, its next Fetch names that epoch again and diverges forever (Kafka's
            # UnifiedLog.truncateTo drops it the same way).
            if self._leader_epochs.truncate_from_end(self.log_end_offset, write=False):
                self._leader_epochs.write(fsync=False)
                self._epoch_checkpoint_unsynced = True
                self._dir_changes += 1
            return
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
            self._retire(self._segments.pop())
            self._bases.pop()
        self._segments[-1].truncate_to(offset)
        leo = self.log_end_offset
        self._log_start_offset = min(self._log_start_offset, leo)
        self._recovery_point = min(self._recovery_point, leo)
        self._high_watermark = min(self._high_watermark, leo)
        self._unflushed_messages = 0
        self._generation += 1
        self._leader_epochs.truncate_from_end(leo)
        self._producer_state.delete_snapshots_above(leo)
        self._rebuild_producer_state(take_snapshot=False)

    def truncate_fully_and_start_at(self, offset: int, log_start_offset: int | None = None) -> None:
        """Delete every segment and restart the log empty at ``offset``.

        ``log_start_offset`` (a tiered log's follower that starts at its leader's local log
        start, Kafka's ``truncateFullyAndStartAt(newOffset, logStartOffsetOpt)``): the log start
        offset to keep below ``offset`` (the records between are in remote storage); default
        ``offset``. It is used only for a tiered log and never above ``offset``.
        """
        self._remove_everything()
        self._start_empty_at(offset, log_start_offset)

    def _remove_everything(self) -> None:
        """Unlink every segment, producer snapshot, transaction index and leader epoch (the
        first half of :meth:`truncate_fully_and_start_at`; :meth:`_start_empty_at` follows)."""
        for seg in self._segments:
            self._retire(seg)
        self._producer_state.clear()
        self._producer_state.delete_all_snapshots()
        self._txn_index.delete_all()
        self._ongoing_txns.clear()
        self._leader_epochs.clear()

    def _start_empty_at(self, offset: int, log_start_offset: int | None) -> None:
        """Create the one empty segment at ``offset`` and set the offsets (see
        :meth:`truncate_fully_and_start_at`)."""
        seg = LogSegment.create(
            self.directory,
            offset,
            max_offset_index_entries=self.config.max_offset_index_entries,
            max_time_index_entries=self.config.max_time_index_entries,
            now_ms=self._last_now_ms,
        )
        self._segments = [seg]
        self._bases = [offset]
        self._log_start_offset = self._recovery_point = self._high_watermark = offset
        if log_start_offset is not None and self.config.remote_storage_enable:
            self._log_start_offset = min(max(log_start_offset, 0), offset)
        self._unflushed_messages = 0
        self._generation += 1
        self._dir_changes += 1

    def install_remote_aux_state(
        self,
        next_offset: int,
        log_start_offset: int,
        epochs: Sequence[EpochEntry],
        producer_snapshot: bytes,
    ) -> None:
        """Restart this follower's log at ``next_offset`` with the state of the records below it,
        which are in remote storage only (Kafka's ``ReplicaFetcherTierStateMachine``: the leader
        answered OFFSET_MOVED_TO_TIERED_STORAGE; see
        ``zurau.replication.tiered.remote_log_aux_state``).

        * ``next_offset``: the new log end and local log start (the end of the remote segment
          holding the leader's local start - 1, plus one);
        * ``log_start_offset``: the leader's log start offset, kept below ``next_offset`` (a
          tiered log only; otherwise the log starts at ``next_offset``);
        * ``epochs``: the remote segment's leader-epoch entries; those starting at or above
          ``next_offset`` are dropped and the one covering the log start is moved to it;
        * ``producer_snapshot``: the remote segment's producer snapshot (producer_state.py's
          format), which must be the state at ``next_offset``.

        Everything is checked before anything changes (ValueError: a negative offset, a log start
        above ``next_offset``, epochs negative or not strictly increasing, a snapshot that does
        not parse or holds another offset's state). On disk, in order: the old segments,
        snapshots and transaction indexes are unlinked; ``leader-epoch-checkpoint`` and
        ``%020d.snapshot`` of ``next_offset`` are written and fsynced; then the empty segment at
        ``next_offset`` is created. A crash before that last step reopens an empty log at the
        checkpointed log start offset (the snapshot above it is discarded, the follower
        bootstraps again); after it, the log reopens at ``next_offset`` with this producer state
        and these epochs. The producer state is reloaded from the file written.
        """
        if next_offset < 0 or log_start_offset > next_offset:
            raise ValueError(
                f"{self._name}: cannot start at {next_offset} with log start offset {log_start_offset}"
            )
        entries = list(epochs)
        if any(e.epoch < 0 or e.start_offset < 0 for e in entries):
            raise ValueError(f"{self._name}: negative leader epoch entry in {entries}")
        for a, b in zip(entries, entries[1:], strict=False):
            if not (a.epoch < b.epoch and a.start_offset < b.start_offset):
                raise ValueError(f"{self._name}: leader epochs not strictly increasing: {entries}")
        try:
            snapshot_offset, producers = ProducerStateManager.decode(producer_snapshot)
        except ValueError as err:
            raise ValueError(f"{self._name}: bad producer snapshot: {err}") from err
        if snapshot_offset != next_offset:
            raise ValueError(
                f"{self._name}: the producer snapshot holds the state at {snapshot_offset}, not {next_offset}"
            )
        self._remove_everything()
        start = (
            min(max(log_start_offset, 0), next_offset) if self.config.remote_storage_enable else next_offset
        )
        cache = self._leader_epochs
        for entry in entries:
            if entry.start_offset < next_offset:
                cache.maybe_assign(entry.epoch, entry.start_offset, write=False)
        cache.truncate_from_start(start, write=False)
        cache.write(fsync=True)
        self._producer_state.producers = producers
        self._producer_state.take_snapshot(next_offset, fsync=True)
        self._start_empty_at(next_offset, start)
        self._rebuild_producer_state(take_snapshot=False)
        self.update_highest_offset_in_remote(next_offset - 1)

    # ------------------------------------------------------------------------------------------
    # Tiered storage: what the remote log manager copies
    # ------------------------------------------------------------------------------------------

    def segments_eligible_for_copy(self, upper_bound: int | None = None) -> list[CopyCandidate]:
        """The closed segments that may be copied to remote storage, oldest first.

        A segment qualifies when the next segment's base offset (its end + 1) is <= ``min(high
        watermark, last stable offset)`` (and <= ``upper_bound`` when given): its records are
        committed and no open transaction starts in it, so a copied segment never changes and
        never holds an offset a reader may not see (Kafka's ``candidateLogSegments``). The active
        segment never qualifies, nor a segment whose records all lie at or below
        ``highest_offset_in_remote`` (copied already). Empty for a log that does not copy.
        """
        if not self.config.remote_copy_enabled:
            return []
        limit = min(self._high_watermark, self.last_stable_offset)
        if upper_bound is not None:
            limit = min(limit, upper_bound)
        out: list[CopyCandidate] = []
        segs = self._segments
        for seg, nxt in zip(segs, segs[1:], strict=False):
            if nxt.base_offset > limit:
                break
            if nxt.base_offset - 1 <= self._highest_offset_in_remote:
                continue
            out.append(CopyCandidate(seg.base_offset, nxt.base_offset - 1, seg.max_timestamp, seg.size))
        return out

    def leader_epochs_in_range(self, start_offset: int, end_offset: int) -> tuple[tuple[int, int], ...]:
        """``(epoch, first offset)`` of every leader epoch whose records may lie in
        [start_offset, end_offset], ascending; the first entry is the epoch that wrote
        ``start_offset`` with that epoch's own start (which may lie below ``start_offset``),
        as RemoteLogSegmentMetadata.segment_leader_epochs expects."""
        entries = self._leader_epochs.entries
        out: list[tuple[int, int]] = []
        for e in entries:
            if e.start_offset > end_offset:
                break
            if e.start_offset <= start_offset:
                out = [(e.epoch, e.start_offset)]
            else:
                out.append((e.epoch, e.start_offset))
        return tuple(out)

    def segment_upload_data(self, base_offset: int) -> LogSegmentData:
        """The files of the closed segment starting at ``base_offset``, for a remote copy.

        ``producer_snapshot`` is ``<next base>.snapshot``, the producer state after the segment's
        last offset (written at the roll; written now, by replaying the log from the newest
        snapshot below it, if it was pruned). ``leader_epoch_index`` is the leader-epoch
        checkpoint text of the entries that start at or below the segment's end. The paths stay
        valid until the segment is deleted (retention deletes it only once copied, so during the
        copy only a truncation or a topic deletion can remove them; a plugin then fails the copy).
        KeyError if no segment starts at ``base_offset``; ValueError for the active segment.
        """
        i = bisect_right(self._bases, base_offset) - 1
        if i < 0 or self._bases[i] != base_offset:
            raise KeyError(f"{self._name} has no segment at {base_offset}")
        if i == len(self._segments) - 1:
            raise ValueError(f"segment {base_offset} of {self._name} is the active segment")
        seg = self._segments[i]
        next_base = self._bases[i + 1]
        txn = self.directory / f"{base_offset:020d}{TXN_INDEX_SUFFIX}"
        epochs = [e for e in self._leader_epochs.entries if e.start_offset < next_base]
        return LogSegmentData(
            log_segment=seg.log_path,
            offset_index=seg.offset_index.path,
            time_index=seg.time_index.path,
            transaction_index=txn if txn.exists() and txn.stat().st_size > 0 else None,
            producer_snapshot=self._producer_snapshot_at(next_base),
            leader_epoch_index=encode_leader_epoch_checkpoint(
                [EpochEntry(e.epoch, e.start_offset) for e in epochs]
            ),
        )

    def _producer_snapshot_at(self, offset: int) -> Path:
        """The path of the producer snapshot at ``offset`` (a segment base), made if missing:
        the newest snapshot below it plus the batches between, replayed into a scratch state
        (the log's own state and its other snapshot files are untouched)."""
        path = self.directory / snapshot_file_name(offset)
        if path.exists():
            return path
        scratch = ProducerStateManager(self.directory)
        start = self._segments[0].base_offset
        for o in reversed(self._producer_state.snapshot_offsets()):
            if start <= o < offset:
                try:
                    _off, scratch.producers = ProducerStateManager.decode(
                        (self.directory / snapshot_file_name(o)).read_bytes()
                    )
                except (OSError, ValueError):
                    continue
                start = o
                break
        i = max(0, bisect_right(self._bases, start) - 1)
        for seg in self._segments[i:]:
            if seg.base_offset >= offset:
                break
            pos = seg.offset_index.lookup(start).position if seg.base_offset <= start else 0
            for _bpos, h in seg.iter_headers(pos):
                if h.base_offset >= offset:
                    break
                if h.base_offset + h.last_offset_delta >= start:
                    scratch.replay(h)
        atomic_write(path, scratch.encode(offset), fsync=False)
        return path

    # ------------------------------------------------------------------------------------------
    # Compaction: what the log cleaner reads and its swap (see cleaner.py, segment_swap.py)
    # ------------------------------------------------------------------------------------------

    def log_segments(self) -> list[LogSegment]:
        """The segments, oldest first (a copy; the last one is the active segment)."""
        return list(self._segments)

    def replace_segments(
        self,
        old: list[LogSegment],
        successor: LogSegment,
        base_offset: int,
        aborted: list[AbortedTxn],
        *,
        now_ms: int,
    ) -> bool:
        """Swap the cleaned segment ``<base_offset>.*.cleaned`` in for ``old`` (Kafka's
        ``replaceSegments``); True if done.

        ``old`` must still be a run of this log's segments followed by ``successor`` (so none of
        them is active, and none was truncated, deleted or replaced since the cleaner read it:
        truncation pops the segments after the one it cuts, retention and DeleteRecords remove
        segments from the head, and deletion closes the log). Otherwise nothing is touched and
        False is returned; the caller deletes its cleaned files. The files are swapped with
        segment_swap's crash-safe protocol; the old segments leave the log like retention's
        (files unlinked at once, descriptors closed after ``file.delete.delay.ms``), so a read
        or sendfile that already holds one completes on the old bytes.
        """
        segs = self._segments
        if self.closed or not old or old[0].base_offset != base_offset:
            return False
        i = next((j for j, s in enumerate(segs) if s is old[0]), -1)
        k = len(old)
        if (
            i < 0
            or i + k >= len(segs)
            or any(segs[i + j] is not old[j] for j in range(k))
            or segs[i + k] is not successor
        ):
            return False
        self._last_now_ms = max(self._last_now_ms, now_ms)
        directory = self.directory
        segment_swap.promote_cleaned(directory, base_offset)
        deleted: list[Path] = []
        for seg in old:
            moved = segment_swap.mark_deleted(segment_swap.segment_files(directory, seg.base_offset))
            seg.log_path, seg.offset_index.path, seg.time_index.path = moved[0], moved[1], moved[2]
            deleted.extend(moved[3:])
        segment_swap.finish_swap(directory, base_offset)
        cleaned = LogSegment.open(
            directory,
            base_offset,
            max_offset_index_entries=self.config.max_offset_index_entries,
            max_time_index_entries=self.config.max_time_index_entries,
            now_ms=self._last_now_ms,
        )
        try:
            cleaned.load()
        except KafkaStorageError:
            cleaned.recover(self.config.index_interval_bytes)
        cleaned.on_become_inactive()
        self._segments = segs[:i] + [cleaned] + segs[i + k :]
        self._bases = [s.base_offset for s in self._segments]
        self._dir_changes += 1  # the renames reach the disk with the next flush's directory fsync
        self._txn_index.replace_segments([s.base_offset for s in old], base_offset, aborted)
        due = self._last_now_ms + self.config.file_delete_delay_ms
        for seg in old:
            seg.unlink()
            self._retired.append((seg, due))
        for p in deleted:
            p.unlink(missing_ok=True)
        return True

    # ------------------------------------------------------------------------------------------
    # Config, flush, lifecycle
    # ------------------------------------------------------------------------------------------

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic configs; segment shape settings affect the active segment's rolls."""
        self.config = config
        self._keep_snapshots_for_copy()
        active = self._segments[-1]
        active.offset_index.max_entries = config.max_offset_index_entries
        active.time_index.max_entries = config.max_time_index_entries

    def remove_expired_producers(self, now_ms: int, expiration_ms: int = 86_400_000) -> int:
        """Forget producers idle longer than ``producer.id.expiration.ms``; return the count."""
        return self._producer_state.expire(now_ms, expiration_ms)

    def mark_created(self) -> None:
        """This log's directory was just created: its entry in the log dir becomes durable with
        the log's next directory fsync (a flush plan), not before (LogManager.get_or_create)."""
        self._parent_dir_unsynced = True
        self._dir_changes += 1

    def assign_leader_epoch(self, epoch: int, start_offset: int) -> bool:
        """A leader's new epoch starts at ``start_offset``: record it in the leader-epoch cache
        and rewrite the checkpoint atomically but without fsync, so that becoming leader of
        thousands of partitions costs no fsync on the caller's thread (as Kafka since 3.7,
        KAFKA-15046). The checkpoint reaches the disk with the next flush plan; after a crash
        before that, recovery rebuilds the entry from the batches' partition leader epochs."""
        if not self._leader_epochs.maybe_assign(epoch, start_offset, write=False):
            return False
        self._leader_epochs.write(fsync=False)
        self._epoch_checkpoint_unsynced = True
        self._dir_changes += 1  # the checkpoint's rename: covered by the next directory fsync
        return True

    @property
    def created_unsynced(self) -> bool:
        """True while the directory this process created for the log (``mark_created``) may not
        be durable yet: no flush plan covering it has completed."""
        return self._parent_dir_unsynced

    def prepare_flush(
        self, offset: int | None = None, *, now_ms: int | None = None, group: FileSystemSync | None = None
    ) -> FlushPlan:
        """Capture a flush of the segments holding offsets in [recovery_point, offset) (default:
        up to the log end offset) and of the directory if a segment file was created since its
        last fsync. Run the plan anywhere, then pass it to ``complete_flush`` (log_flush.py).

        With ``group`` (opened before this call) the plan holds no descriptor of its own: the
        group's one ``syncfs``, which runs after this call, covers every byte and file-system
        change of the log made so far (log_flush.py, grouped creation sync)."""
        leo = self.log_end_offset
        target = leo if offset is None else min(offset, leo)
        if group is not None:
            return FlushPlan(
                [],
                target,
                dir_changes=self._dir_changes,
                generation=self._generation,
                messages=self._unflushed_messages if target >= leo else 0,
                now_ms=now_ms,
                group=group,
            )
        fds: list[int] = []
        try:
            included: set[int] = set()
            if target > self._recovery_point:
                for seg in self._segments:
                    if seg.next_offset > self._recovery_point and seg.base_offset < target:
                        fds.extend(seg.open_for_sync())
                        included.add(seg.base_offset)
            if self._dir_changes != self._dir_synced:
                active = self._segments[-1]
                if active.base_offset not in included:
                    fds.extend(active.open_for_sync())
                if self._epoch_checkpoint_unsynced and self._leader_epochs.path.exists():
                    fds.append(os.open(self._leader_epochs.path, os.O_RDONLY))
                fds.append(open_directory(self.directory))
                if self._parent_dir_unsynced:
                    fds.append(open_directory(self.directory.parent))
        except BaseException:
            close_all(fds)
            raise
        return FlushPlan(
            fds,
            target,
            dir_changes=self._dir_changes,
            generation=self._generation,
            messages=self._unflushed_messages if target >= leo else 0,
            now_ms=now_ms,
        )

    def complete_flush(self, plan: FlushPlan) -> None:
        """Apply a plan that ran to the end: the recovery point moves up to its target (unless
        the log was truncated since it was prepared) and the directory changes it covered are
        synced. An unsynced plan (failed or discarded) changes nothing."""
        if not plan.synced:
            return
        if plan.dir_changes > self._dir_synced:
            self._dir_synced = plan.dir_changes
        if plan.dir_changes >= self._dir_changes:  # nothing created or rewritten since the plan
            self._parent_dir_unsynced = False
            self._epoch_checkpoint_unsynced = False
        if plan.generation == self._generation:
            self._recovery_point = max(self._recovery_point, min(plan.target, self.log_end_offset))
            self._unflushed_messages = max(0, self._unflushed_messages - plan.messages)
        if plan.now_ms is not None:
            self._last_flush_ms = plan.now_ms

    def flush(self, offset: int | None = None, *, now_ms: int | None = None) -> None:
        """fsync segments holding offsets in [recovery_point, offset) and advance the recovery
        point to ``offset`` (default: the log end offset), all on the calling thread."""
        plan = self.prepare_flush(offset, now_ms=now_ms)
        plan.run()
        self.complete_flush(plan)

    def close(self) -> None:
        """Write a producer snapshot, fsync everything, close all files. Idempotent."""
        if self.closed:
            return
        self._segments[-1].on_become_inactive()
        self._producer_state.take_snapshot(self.log_end_offset, fsync=True)
        self.flush()
        for seg in self._segments:
            seg.close()
        self.purge_retired(0, force=True)
        self.closed = True

    def delete(self) -> None:
        """Close every descriptor and remove the partition directory with all its files.

        The directory is first renamed to ``<topic>-<partition>.<hex>-delete`` (Kafka's scheme),
        so a crash mid-removal leaves a dir the LogManager removes at the next start.
        """
        for seg in self._segments:
            seg.close_fd()
        self.purge_retired(0, force=True)
        self.closed = True
        if self.directory.exists():
            doomed = self.directory.with_name(f"{self.directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
            os.rename(self.directory, doomed)
            fsync_dir(doomed.parent)
            shutil.rmtree(doomed, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, log_start_offset={self._log_start_offset}, "
            f"log_end_offset={self.log_end_offset}, high_watermark={self._high_watermark}, "
            f"segments={len(self._segments)})"
        )


__all__ = ["AppendResult", "CopyCandidate", "LogReadSlice", "PartitionLog", "SNAPSHOT_SUFFIX"]
