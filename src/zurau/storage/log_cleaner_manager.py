"""Which log to clean next, and how far each is clean (Kafka's ``LogCleanerManager``).

Per log dir, Kafka's ``cleaner-offset-checkpoint`` file (format in checkpoint.py: version 0, a
count, then ``topic partition offset`` lines) holds each compacted partition's *first dirty
offset*: everything below it was cleaned by a pass whose offset map covered it.

Choosing a log (:meth:`LogCleanerManager.grab_filthiest_log`), for every log with
``cleanup.policy`` including ``compact`` that is not being cleaned and not marked uncleanable:

* ``first_dirty_offset``: the checkpointed offset, reset to the log start offset if it lies
  outside ``[log_start_offset, log_end_offset]`` (retention, DeleteRecords or a truncation
  moved the log);
* ``first_uncleanable_offset``: the lowest of the last stable offset (the high watermark, or the
  first offset of the oldest open transaction), the active segment's base offset, and the base
  offset of the first dirty segment whose largest timestamp is within ``min.compaction.lag.ms``
  of now; rounded down to the base offset of the segment holding it, so that a pass only ever
  rewrites whole closed segments below it;
* cleanable ratio = dirty bytes / (clean + dirty bytes), counting whole segments;
* a log is cleanable if its ratio exceeds ``min.cleanable.dirty.ratio``, or if it has dirty bytes
  and its oldest dirty closed segment's first batch is older than ``max.compaction.lag.ms``.

The cleanable log with the highest ratio is taken (marked in progress) and snapshotted into a
:class:`~zurau.storage.cleaner.LogToClean`.

Threads: ``grab_filthiest_log`` and ``still_current`` read the logs and must run on the thread
that owns them (the broker's event loop); ``done_cleaning`` and ``release`` may run on a cleaner
thread. The in-progress set and the checkpoints are guarded by a lock.
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from pathlib import Path

from zurau.protocol.errors import KafkaStorageError
from zurau.storage.checkpoint import read_offsets_checkpoint, write_offsets_checkpoint
from zurau.storage.cleaner import LastRecord, LogToClean, SegmentToClean
from zurau.storage.log_manager import LogManager
from zurau.storage.log_segment import LogSegment
from zurau.storage.partition_log import PartitionLog
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.storage.cleaner")

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"


def _overlapping(segs: list[LogSegment], ends: list[int], lo: int, hi: int) -> list[int]:
    """Indexes of the segments overlapping ``[lo, hi)`` (a segment spans [base, next base))."""
    return [i for i, s in enumerate(segs) if s.base_offset < hi and ends[i] > lo]


class LogCleanerManager:
    """Cleaning state of every compacted log of a LogManager."""

    def __init__(self, log_manager: LogManager) -> None:
        self.log_manager = log_manager
        self._lock = threading.Lock()
        self._in_progress: set[TopicPartitionKey] = set()
        self._uncleanable: set[TopicPartitionKey] = set()
        self._checkpoints: dict[Path, dict[TopicPartitionKey, int]] = {}
        for d in log_manager.log_dirs:
            path = d / CLEANER_OFFSET_CHECKPOINT
            try:
                self._checkpoints[d] = read_offsets_checkpoint(path)
            except KafkaStorageError as e:
                # Only a hint: without it the next passes re-read the whole log, losing nothing.
                log.warning("ignoring %s: %s", path, e)
                self._checkpoints[d] = {}
        self.dirtiest_ratio = 0.0

    # -- any thread ------------------------------------------------------------------------------

    def checkpointed_offset(self, topic: str, partition: int) -> int | None:
        with self._lock:
            for offsets in self._checkpoints.values():
                if (topic, partition) in offsets:
                    return offsets[(topic, partition)]
        return None

    @property
    def in_progress(self) -> set[TopicPartitionKey]:
        with self._lock:
            return set(self._in_progress)

    @property
    def uncleanable(self) -> set[TopicPartitionKey]:
        with self._lock:
            return set(self._uncleanable)

    def done_cleaning(self, ltc: LogToClean, end_offset: int) -> None:
        """A pass over ``ltc`` cleaned everything below ``end_offset``: checkpoint it (fsynced)."""
        tp = (ltc.topic, ltc.partition)
        with self._lock:
            offsets = self._checkpoints.setdefault(ltc.log_dir, {})
            offsets[tp] = end_offset
            try:
                write_offsets_checkpoint(ltc.log_dir / CLEANER_OFFSET_CHECKPOINT, offsets)
            finally:
                self._in_progress.discard(tp)

    def release(self, ltc: LogToClean, *, uncleanable: bool = False) -> None:
        """A pass over ``ltc`` ended without completing; ``uncleanable`` keeps the log out of later
        passes (an unexpected error, as Kafka's ``markPartitionUncleanable``)."""
        tp = (ltc.topic, ltc.partition)
        with self._lock:
            self._in_progress.discard(tp)
            if uncleanable:
                self._uncleanable.add(tp)

    # -- the owner thread of the logs ------------------------------------------------------------

    def cleanable_offsets(self, plog: PartitionLog, now_ms: int) -> tuple[int, int]:
        """``(first_dirty_offset, first_uncleanable_offset)`` of a log, the latter aligned to a
        segment base offset (see the module docstring)."""
        segs = plog.log_segments()
        start, end = plog.log_start_offset, plog.log_end_offset
        checkpointed = self.checkpointed_offset(plog.topic, plog.partition)
        first_dirty = checkpointed if checkpointed is not None and start <= checkpointed <= end else start
        bound = min(plog.last_stable_offset, segs[-1].base_offset)
        lag = plog.config.min_compaction_lag_ms
        if lag > 0:
            for s in segs[:-1]:
                if s.next_offset > first_dirty and s.largest_timestamp > now_ms - lag:
                    bound = min(bound, s.base_offset)
                    break
        bound = max(bound, first_dirty)
        bases = [s.base_offset for s in segs]
        i = max(bisect_right(bases, bound) - 1, 0)
        return first_dirty, segs[i].base_offset

    def grab_filthiest_log(self, now_ms: int) -> LogToClean | None:
        """Choose the compacted log most in need of cleaning, mark it in progress and snapshot it
        (None if no log is cleanable)."""
        best: tuple[float, PartitionLog, int, int, bool, int, int] | None = None
        dirtiest = 0.0
        with self._lock:
            busy = self._in_progress | self._uncleanable
            live = {(lg.topic, lg.partition) for lg in self.log_manager.all_logs()}
            for offsets in self._checkpoints.values():
                for tp in [tp for tp in offsets if tp not in live]:
                    del offsets[tp]  # a deleted partition; dropped at the next write
        for plog in self.log_manager.all_logs():
            if plog.closed or not plog.config.compact_enabled or (plog.topic, plog.partition) in busy:
                continue
            segs = plog.log_segments()
            if len(segs) < 2:
                continue
            first_dirty, first_uncleanable = self.cleanable_offsets(plog, now_ms)
            ends = [s.base_offset for s in segs[1:]] + [plog.log_end_offset]
            clean = sum(segs[i].size for i in _overlapping(segs, ends, -1, first_dirty))
            dirty_idx = _overlapping(segs, ends, first_dirty, first_uncleanable)
            cleanable = sum(segs[i].size for i in dirty_idx)
            total = clean + cleanable
            if total == 0:
                continue
            ratio = cleanable / total
            dirtiest = max(dirtiest, ratio)
            now_needed = (
                cleanable > 0 and self._max_compaction_delay(plog, segs, ends, first_dirty, now_ms) > 0
            )
            if not (now_needed or ratio > plog.config.min_cleanable_dirty_ratio) or cleanable == 0:
                continue
            if best is None or ratio > best[0]:
                best = (ratio, plog, first_dirty, first_uncleanable, now_needed, clean, cleanable)
        self.dirtiest_ratio = dirtiest
        if best is None:
            return None
        _ratio, plog, first_dirty, first_uncleanable, now_needed, clean, cleanable = best
        ltc = self._snapshot(plog, first_dirty, first_uncleanable)
        ltc.clean_bytes, ltc.cleanable_bytes, ltc.needs_compaction_now = clean, cleanable, now_needed
        with self._lock:
            self._in_progress.add((plog.topic, plog.partition))
        return ltc

    @staticmethod
    def _max_compaction_delay(
        plog: PartitionLog, segs: list[LogSegment], ends: list[int], first_dirty: int, now_ms: int
    ) -> int:
        """How long past ``max.compaction.lag.ms`` the oldest dirty closed segment is (<= 0: not)."""
        lag = plog.config.max_compaction_lag_ms
        firsts = []
        for i, s in enumerate(segs[:-1]):
            if ends[i] > first_dirty:
                ts = s.rolling_base_timestamp()
                if ts is not None and ts > 0:
                    firsts.append(ts)
        if not firsts:
            return 0
        return (now_ms - max(lag, 0)) - min(firsts)

    def _snapshot(self, plog: PartitionLog, first_dirty: int, first_uncleanable: int) -> LogToClean:
        segs = plog.log_segments()
        n = next(i for i, s in enumerate(segs) if s.base_offset == first_uncleanable)
        views = []
        for s in segs[:n]:
            st = os.fstat(s.fd)
            views.append(
                SegmentToClean(
                    base_offset=s.base_offset,
                    next_offset=s.next_offset,
                    size=s.size,
                    path=s.log_path,
                    inode=st.st_ino,
                    mtime_ns=st.st_mtime_ns,
                    offset_index_bytes=s.offset_index.entries * s.offset_index.entry_size,
                    time_index_bytes=s.time_index.entries * s.time_index.entry_size,
                    segment=s,
                )
            )
        producers = {
            pid: LastRecord(e.batches[-1].last_offset if e.batches else None, e.producer_epoch)
            for pid, e in plog.producer_state.producers.items()
        }
        start = segs[0].base_offset
        log_dir = self.log_manager.log_dir_of(plog.topic, plog.partition) or plog.directory.parent
        return LogToClean(
            topic=plog.topic,
            partition=plog.partition,
            directory=plog.directory,
            config=plog.config,
            log=plog,
            log_dir=log_dir,
            segments=views,
            successor=segs[n],
            first_dirty_offset=first_dirty,
            first_uncleanable_offset=first_uncleanable,
            aborted=plog.aborted_transactions(start, first_uncleanable),
            active_producers=producers,
        )

    @staticmethod
    def still_current(ltc: LogToClean) -> bool:
        """True if the snapshotted segments are still the log's (the pass read what it meant to)."""
        plog = ltc.log
        if plog.closed:
            return False
        live = plog.log_segments()
        wanted = [s.segment for s in ltc.segments] + [ltc.successor]
        ids = {id(s) for s in live}
        return all(id(s) in ids for s in wanted)
