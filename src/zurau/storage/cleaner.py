"""One compaction pass over one log (Kafka's ``Cleaner`` and ``CleanedTransactionMetadata``).

A pass gets a :class:`LogToClean`: a snapshot, taken on the log's owner thread, of the log's
closed segments from its first one up to (not including) the segment holding the first
uncleanable offset, plus what the pass needs to know about the log (aborted transactions,
producers, offsets). The pass itself may run on any thread because it only

* **reads** the files of those closed segments, which are immutable once rolled (nothing appends
  to them; retention, DeleteRecords, truncation and deletion never rewrite them in place: they
  remove whole files or make the segment active again first, and the swap notices that), through
  descriptors of its own, checked to be the same files (inode) and read up to their snapshot
  size only; and
* **writes** new files named ``<base>.<kind>.cleaned`` (see :mod:`zurau.storage.segment_swap`).

It hands each finished segment to a ``swap`` callback, which the caller runs on the owner thread
(``PartitionLog.replace_segments``) and which refuses if the log changed meanwhile.

The pass, as in Kafka:

1. **Offset map**: read the dirty part ``[first_dirty_offset, first_uncleanable_offset)`` and map
   each key to the offset of its latest record (records of aborted transactions are skipped, so
   they never hide a committed value). If the :class:`~zurau.storage.offset_map.OffsetMap` fills
   up, the pass ends where it filled: ``end_offset`` = the last completely mapped offset + 1.
2. **Groups**: the segments below ``end_offset`` (the clean ones too: their records may be
   superseded by dirty ones) are grouped into runs whose total size fits ``segment.bytes`` (and
   whose indexes fit ``segment.index.bytes`` and offsets an int32 relative offset).
3. **Clean each group** into one new segment with the base offset of its first segment. A
   record is kept if it lies beyond the map's latest offset, or if it is the latest for its key
   and it has a value or it is a tombstone still within its delete horizon. Records keep their
   offsets and timestamps; a batch keeps its base offset, last offset delta (so the producer's
   last sequence survives), producer id, epoch, base sequence, leader epoch, compression codec
   and transactional/control bits. A batch that keeps all its records and needs no new delete
   horizon is copied byte for byte; otherwise it is rebuilt from its retained records.
4. **Batches kept empty** (records count 0, header only): the batch holding an active producer's
   last data offset (or its last marker, for its epoch), so that producer state rebuilt from the
   log still knows the producer's sequence and epoch; and the last batch of each group, so that
   a cleaned segment ends exactly where its group ended (which makes crash recovery exact, see
   segment_swap).

Tombstones and transaction markers (KIP-534): the first pass that keeps a tombstone (or a marker
whose transaction has no data left) rewrites its batch with the delete-horizon attribute bit and
``base_timestamp`` = now + ``delete.retention.ms`` (record timestamp deltas are rebased so that
every record keeps its timestamp); a later pass after that time drops it. Transactions: batches
of aborted transactions (from the partition's aborted-transaction index) are dropped; an
ABORT marker is kept while this pass saw data of its transaction (it is then indexed in the new
segment's ``.txnindex``), a COMMIT marker while this pass saw data of its transaction; once no
data is left, the marker gets a delete horizon and goes when it passes. So a marker is removed
two passes after its data at the earliest, and never while data of its transaction remains.

The pass sleeps 20 us after every 0.5 ms of work, so that the broker's event loop, waiting for
the GIL, gets it within about half a millisecond (CPython would make it wait up to its 5 ms
switch interval; ``os.sched_yield`` does not hand the GIL over reliably), and honours
``log.cleaner.io.max.bytes.per.second``.
"""

from __future__ import annotations

import heapq
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.records.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_START,
    DELETE_HORIZON_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
)
from zurau.protocol.records.compression import compress
from zurau.protocol.records.control import ABORT, COMMIT, parse_control_key
from zurau.protocol.records.record import Record, decode_batch_records, encode_record
from zurau.storage.log_config import LONG_MAX, LogConfig
from zurau.storage.log_segment import MAX_RELATIVE_OFFSET
from zurau.storage.offset_index import OffsetIndex
from zurau.storage.offset_map import OffsetMap
from zurau.storage.segment_swap import cleaned_files
from zurau.storage.time_index import NO_TIMESTAMP, TimeIndex
from zurau.storage.txn_index import AbortedTxn, encode_entries

if TYPE_CHECKING:
    from zurau.storage.log_segment import LogSegment
    from zurau.storage.partition_log import PartitionLog

log = logging.getLogger("zurau.storage.cleaner")

_EMPTY_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_KEPT_ATTRIBUTES = COMPRESSION_MASK | TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK
_YIELD_EVERY_S = 0.0005  # at most this much work between GIL releases (see BENCHMARKS.md)
_YIELD_SLEEP_S = 0.00002


class CleaningAbortedError(Exception):
    """The pass stopped before its end (shutdown, or the log changed under it); nothing of it
    is left behind but the groups already swapped in, which are complete and correct."""


class OffsetMapTooSmallError(Exception):
    """Not even one batch of the dirty part fits the offset map."""


class LastRecord(NamedTuple):
    """What a pass must keep of an active producer (Kafka's ``LastRecord``)."""

    last_data_offset: int | None  # last offset of its last data batch; None if it wrote markers only
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class SegmentToClean:
    """A closed segment as the owner thread saw it when the pass was planned."""

    base_offset: int
    next_offset: int
    size: int
    path: Path
    inode: int
    mtime_ns: int
    offset_index_bytes: int
    time_index_bytes: int
    segment: LogSegment  # the live segment: compared by identity at swap, never used by the pass


@dataclass(slots=True)
class LogToClean:
    """A log chosen for cleaning, snapshotted on its owner thread (Kafka's ``LogToClean``)."""

    topic: str
    partition: int
    directory: Path
    config: LogConfig
    log: PartitionLog  # only the swap, on the owner thread, uses it
    log_dir: Path
    segments: list[SegmentToClean]  # closed segments, oldest first, all below the uncleanable one
    successor: LogSegment  # the live segment right after ``segments`` (it holds the uncleanable offset)
    first_dirty_offset: int
    first_uncleanable_offset: int  # the base offset of ``successor``
    aborted: list[AbortedTxn]
    active_producers: dict[int, LastRecord]
    clean_bytes: int = 0
    cleanable_bytes: int = 0
    needs_compaction_now: bool = False

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(slots=True)
class CleanedSegment:
    """A finished ``.cleaned`` segment, ready to replace ``replaces``."""

    base_offset: int
    next_offset: int
    size: int
    replaces: list[SegmentToClean]
    successor: LogSegment
    aborted: list[AbortedTxn]  # entries of its .txnindex


@dataclass(slots=True)
class CleanerStats:
    """What one pass did (logged at INFO, Kafka's ``CleanerStats``)."""

    end_offset: int = -1
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    map_records: int = 0
    map_utilization: float = 0.0
    segments_before: int = 0
    segments_after: int = 0
    groups_swapped: int = 0
    started: float = field(default_factory=time.monotonic)
    map_done: float = 0.0
    finished: float = 0.0

    @property
    def records_removed(self) -> int:
        return self.records_read - self.records_retained

    @property
    def elapsed_s(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    @property
    def map_s(self) -> float:
        return (self.map_done or self.started) - self.started


# ------------------------------------------------------------------------------ transactions


class _AbortedTxnState:
    __slots__ = ("txn", "observed")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.observed = False  # some batch of the transaction was read by this pass


class CleanedTransactionMetadata:
    """Transaction state while a pass walks the log in offset order (Kafka's class of the name).

    Fed the aborted transactions of the range (first offset order), it tells for each data batch
    whether it belongs to an aborted transaction (drop it) and for each marker whether it may be
    discarded (no batch of its transaction was seen by this pass). Retained ABORT markers whose
    transaction was seen are appended to ``cleaned_index``.
    """

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._pending = [(t.first_offset, t.last_offset, t.producer_id, t) for t in aborted]
        heapq.heapify(self._pending)
        self._committed: set[int] = set()
        self._aborted: dict[int, _AbortedTxnState] = {}
        self.cleaned_index: list[AbortedTxn] | None = None

    def _consume_up_to(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[0][0] <= offset:
            txn = heapq.heappop(pending)[3]
            self._aborted.setdefault(txn.producer_id, _AbortedTxnState(txn))

    def on_control_batch(self, h: BatchHeader, control_type: int | None) -> bool:
        """True if the marker may be discarded (``control_type`` None: an already emptied one)."""
        self._consume_up_to(h.last_offset)
        if control_type is None:
            return True
        if control_type == ABORT:
            state = self._aborted.pop(h.producer_id, None)
            if state is not None and state.observed:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.txn)
                return False
            return True
        if control_type == COMMIT:
            if h.producer_id in self._committed:
                self._committed.discard(h.producer_id)
                return False
            return True
        return False  # other control records (KRaft's) are kept

    def on_batch(self, h: BatchHeader) -> bool:
        """True if the data batch belongs to an aborted transaction."""
        self._consume_up_to(h.last_offset)
        if not h.is_transactional:
            return False
        state = self._aborted.get(h.producer_id)
        if state is not None:
            state.observed = True
            return True
        self._committed.add(h.producer_id)
        return False


# ------------------------------------------------------------------------------ batches


def control_type_of(batch: bytes | memoryview) -> int | None:
    """The control type of a control batch's record, None if the batch holds none."""
    records = decode_batch_records(batch, check_crc=False)
    if not records:
        return None
    return parse_control_key(records[0].key)


def _finish_batch(header_fields: tuple[int, ...], body: bytes | bytearray) -> bytes:
    out = bytearray(HEADER_SIZE)
    HEADER.pack_into(out, 0, *header_fields)
    out += body
    HEADER.pack_into(out, 0, *header_fields[:4], crc32c(memoryview(out)[CRC_START:]), *header_fields[5:])
    return bytes(out)


def empty_batch(h: BatchHeader) -> bytes:
    """A header-only batch standing for ``h``: same offsets, producer fields, leader epoch and
    transactional/control bits, no records (Kafka's ``writeEmptyHeader``)."""
    attributes = h.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    return _finish_batch(
        (
            h.base_offset,
            _EMPTY_BATCH_LENGTH,
            h.partition_leader_epoch,
            2,
            0,
            attributes,
            h.last_offset_delta,
            h.max_timestamp,
            h.max_timestamp,
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            0,
        ),
        b"",
    )


def rebuild_batch(h: BatchHeader, records: list[Record], delete_horizon_ms: int | None) -> bytes:
    """A batch like ``h`` holding only ``records`` (at least one), each at its own offset and
    timestamp. With ``delete_horizon_ms`` the delete-horizon bit is set and the base timestamp
    holds the horizon (KIP-534); record timestamp deltas are taken against it."""
    log_append_time = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    elif log_append_time:
        base_ts = h.base_timestamp
    else:
        base_ts = records[0].timestamp
    max_ts = NO_TIMESTAMP
    section = bytearray()
    for r in records:
        ts_delta = 0 if log_append_time else r.timestamp - base_ts
        section += encode_record(r.offset - h.base_offset, ts_delta, r.key, r.value, r.headers)
        if r.timestamp > max_ts:
            max_ts = r.timestamp
    if log_append_time:
        max_ts = h.max_timestamp
    body = compress(h.compression, section) if h.compression else section
    attributes = (h.attributes & _KEPT_ATTRIBUTES) | (
        DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0
    )
    return _finish_batch(
        (
            h.base_offset,
            _EMPTY_BATCH_LENGTH + len(body),
            h.partition_leader_epoch,
            2,
            0,
            attributes,
            h.last_offset_delta,
            base_ts,
            max_ts,
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            len(records),
        ),
        body,
    )


def delete_horizon_of(h: BatchHeader) -> int | None:
    return h.base_timestamp if h.attributes & DELETE_HORIZON_MASK else None


# ------------------------------------------------------------------------------ files


class _Pacer:
    """Yields the GIL regularly and throttles reads to ``max_bytes_per_second``."""

    def __init__(self, max_bytes_per_second: float, check: Callable[[], None]) -> None:
        self.rate = max_bytes_per_second
        self.check = check
        self._slice_start = time.perf_counter()
        self._window_start = self._slice_start
        self._window_bytes = 0

    def tick(self, nbytes: int = 0) -> None:
        now = time.perf_counter()
        if now - self._slice_start >= _YIELD_EVERY_S:
            self.check()
            time.sleep(_YIELD_SLEEP_S)
            self._slice_start = time.perf_counter()
        if nbytes and self.rate < float("inf"):
            self._window_bytes += nbytes
            elapsed = now - self._window_start
            wanted = self._window_bytes / self.rate
            if wanted > elapsed:
                time.sleep(wanted - elapsed)
            if elapsed > 1.0:
                self._window_start, self._window_bytes = time.perf_counter(), 0


def read_batches(
    seg: SegmentToClean, chunk_size: int, pacer: _Pacer
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Every batch of a snapshotted segment, through a descriptor of the pass's own.

    Raises CleaningAbortedError if the file is no longer the one snapshotted (another inode) or
    shorter than its snapshot size, CorruptRecordError if it does not hold whole v2 batches.
    """
    try:
        fd = os.open(seg.path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CleaningAbortedError(f"{seg.path} is gone") from None
    try:
        st = os.fstat(fd)
        if st.st_ino != seg.inode or st.st_size < seg.size:
            raise CleaningAbortedError(f"{seg.path} changed since the pass began")
        pos = 0
        chunk = max(chunk_size, HEADER_SIZE)
        while pos < seg.size:
            data = os.pread(fd, min(chunk, seg.size - pos), pos)
            pacer.tick(len(data))
            if len(data) < HEADER_SIZE:
                raise CleaningAbortedError(f"{seg.path} is shorter than its {seg.size} bytes")
            mv = memoryview(data)
            off = 0
            while len(data) - off >= HEADER_SIZE:
                h = BatchHeader._make(HEADER.unpack_from(data, off))
                size = h.batch_length + LOG_OVERHEAD
                if h.magic != 2 or h.batch_length < _EMPTY_BATCH_LENGTH or pos + off + size > seg.size:
                    raise CorruptRecordError(f"{seg.path} holds no valid batch at byte {pos + off}")
                if off + size > len(data):
                    if off == 0:  # a batch larger than the chunk: read it whole
                        data = os.pread(fd, size, pos)
                        if len(data) < size:
                            raise CleaningAbortedError(f"{seg.path} is shorter than its {seg.size} bytes")
                        mv = memoryview(data)
                    else:
                        break
                yield h, mv[off : off + size]
                off += size
                pacer.tick()
            pos += off
    finally:
        os.close(fd)


class _CleanedSegmentWriter:
    """Writes ``<base>.{log,index,timeindex,txnindex}.cleaned`` with LogSegment's index rules."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, buffer_size: int) -> None:
        self.paths = cleaned_files(directory, base_offset)
        self.base_offset = base_offset
        self.index_interval_bytes = config.index_interval_bytes
        self.buffer_size = max(buffer_size, 1)
        self.fd = os.open(self.paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        self.offset_index = OffsetIndex(self.paths[1], base_offset, config.max_offset_index_entries)
        self.time_index = TimeIndex(self.paths[2], base_offset, config.max_time_index_entries)
        self.offset_index.reset()
        self.time_index.reset()
        self.pending = bytearray()
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.bytes_since_index_entry = 0

    def append(self, batch: bytes | memoryview, h: BatchHeader) -> None:
        position = self.size
        if h.max_timestamp > self.max_timestamp:
            self.max_timestamp = h.max_timestamp
            self.offset_of_max_timestamp = h.last_offset
        if self.bytes_since_index_entry > self.index_interval_bytes:
            self.offset_index.append(h.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index_entry = 0
        self.bytes_since_index_entry += len(batch)
        self.pending += batch
        self.size += len(batch)
        self.next_offset = h.next_offset
        if len(self.pending) >= self.buffer_size:
            self._write_pending()

    def _write_pending(self) -> None:
        view = memoryview(self.pending)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.pending = bytearray()

    def finish(self, aborted: list[AbortedTxn], mtime_ns: int) -> None:
        """Write everything, add the final time-index entry, fsync, keep the old mtime."""
        self._write_pending()
        if self.max_timestamp >= 0 and self.max_timestamp > self.time_index.last_entry().timestamp:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )
        self.offset_index.flush()
        self.time_index.flush()
        self.offset_index.close()
        self.time_index.close()
        if aborted:
            fd = os.open(self.paths[3], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                view = memoryview(encode_entries(aborted))
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
        os.utime(self.paths[0], ns=(mtime_ns, mtime_ns))

    def discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.offset_index.delete()
        self.time_index.delete()
        for p in self.paths:
            p.unlink(missing_ok=True)


# ------------------------------------------------------------------------------ the cleaner

SwapFn = Callable[[CleanedSegment], bool]


def group_segments_by_size(
    segments: list[SegmentToClean], max_size: int, max_index_size: int
) -> list[list[SegmentToClean]]:
    """Consecutive runs of ``segments`` whose log bytes fit ``max_size``, whose offset and time
    index bytes each fit ``max_index_size`` and whose offsets fit an int32 relative offset
    (Kafka's ``groupSegmentsBySize``)."""
    groups: list[list[SegmentToClean]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        index = segments[i].offset_index_bytes
        time_index = segments[i].time_index_bytes
        i += 1
        while i < len(segments):
            s = segments[i]
            if (
                size + s.size > max_size
                or index + s.offset_index_bytes > max_index_size
                or time_index + s.time_index_bytes > max_index_size
                or (s.size > 0 and s.next_offset - 1 - group[0].base_offset > MAX_RELATIVE_OFFSET)
            ):
                break
            group.append(s)
            size += s.size
            index += s.offset_index_bytes
            time_index += s.time_index_bytes
            i += 1
        groups.append(group)
    return groups


class Cleaner:
    """Runs cleaning passes with one offset map (one per cleaner thread). Not thread-safe: one
    pass at a time per Cleaner."""

    def __init__(
        self,
        offset_map: OffsetMap,
        *,
        io_buffer_size: int = 512 * 1024,
        max_io_bytes_per_second: float = float("inf"),
        check_done: Callable[[], None] | None = None,
    ) -> None:
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, 64 * 1024)
        self.max_io_bytes_per_second = max_io_bytes_per_second
        self.check_done = check_done or (lambda: None)

    # -- offset map -------------------------------------------------------------------------------

    def build_offset_map(self, ltc: LogToClean, pacer: _Pacer, stats: CleanerStats) -> int:
        """Map the dirty part; return the end offset of this pass (first offset not mapped)."""
        m = self.offset_map
        m.clear()
        start, end = ltc.first_dirty_offset, ltc.first_uncleanable_offset
        dirty = [s for s in ltc.segments if s.next_offset > start and s.size > 0]
        txn = CleanedTransactionMetadata(
            [t for t in ltc.aborted if t.last_offset >= start and t.first_offset < end]
        )
        for i, seg in enumerate(dirty):
            nxt = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if self._map_segment(seg, start, txn, pacer, stats):
                break
            m.update_latest_offset(nxt - 1)  # fast-forward over a gap at the segment's end
        end_offset = m.latest_offset + 1
        if dirty and end_offset <= start:
            raise OffsetMapTooSmallError(
                f"{ltc.name}: the batch at offset {start} holds more keys than the offset map's "
                f"{m.capacity} (raise log.cleaner.dedupe.buffer.size)"
            )
        return max(end_offset, start)

    def _map_segment(
        self,
        seg: SegmentToClean,
        start: int,
        txn: CleanedTransactionMetadata,
        pacer: _Pacer,
        stats: CleanerStats,
    ) -> bool:
        """Add a segment's keys at or after ``start``; True if the map filled up."""
        m = self.offset_map
        for h, batch in read_batches(seg, self.io_buffer_size, pacer):
            if h.last_offset < start:
                continue
            if h.is_control:
                txn.on_control_batch(h, control_type_of(batch))
            elif not txn.on_batch(h):
                for r in decode_batch_records(batch):
                    if r.key is not None and r.offset >= start:
                        if not m.put(r.key, r.offset):
                            return True
                        stats.map_records += 1
            m.update_latest_offset(h.last_offset)
        return False

    # -- the pass ----------------------------------------------------------------------------------

    def clean(self, ltc: LogToClean, now_ms: int, swap: SwapFn) -> CleanerStats:
        """One pass over ``ltc``; each finished segment goes to ``swap`` (in offset order). Raises
        CleaningAbortedError if a swap is refused or ``check_done`` raises it."""
        stats = CleanerStats()
        pacer = _Pacer(self.max_io_bytes_per_second, self.check_done)
        end_offset = self.build_offset_map(ltc, pacer, stats)
        stats.map_done = time.monotonic()
        stats.map_utilization = self.offset_map.utilization
        stats.end_offset = end_offset
        cfg = ltc.config
        to_clean = [s for s in ltc.segments if s.base_offset < end_offset]
        stats.segments_before = len(to_clean)
        groups = group_segments_by_size(to_clean, cfg.segment_bytes, cfg.segment_index_bytes)
        txn = CleanedTransactionMetadata(
            [t for t in ltc.aborted if to_clean and t.first_offset < to_clean[-1].next_offset]
        )
        for gi, group in enumerate(groups):
            successor = groups[gi + 1][0].segment if gi + 1 < len(groups) else self._successor_of(ltc, group)
            cleaned = self._clean_group(ltc, group, successor, txn, now_ms, pacer, stats)
            if cleaned is None:
                continue
            self.check_done()
            if not swap(cleaned):
                for p in cleaned_files(ltc.directory, cleaned.base_offset):
                    p.unlink(missing_ok=True)
                raise CleaningAbortedError(f"{ltc.name}: the log changed while it was being cleaned")
            stats.groups_swapped += 1
            stats.segments_after += 1
        stats.finished = time.monotonic()
        return stats

    @staticmethod
    def _successor_of(ltc: LogToClean, group: list[SegmentToClean]) -> LogSegment:
        """The live segment after ``group`` (the next snapshotted one, else ``ltc.successor``)."""
        i = next(j for j, s in enumerate(ltc.segments) if s is group[-1])
        return ltc.segments[i + 1].segment if i + 1 < len(ltc.segments) else ltc.successor

    def _clean_group(
        self,
        ltc: LogToClean,
        group: list[SegmentToClean],
        successor: LogSegment,
        txn: CleanedTransactionMetadata,
        now_ms: int,
        pacer: _Pacer,
        stats: CleanerStats,
    ) -> CleanedSegment | None:
        nonempty = [s for s in group if s.size > 0]
        if not nonempty:
            return None
        group_end = nonempty[-1].next_offset
        m = self.offset_map
        latest = m.latest_offset
        retention_ms = ltc.config.delete_retention_ms
        new_horizon = min(now_ms + retention_ms, LONG_MAX)
        producers = ltc.active_producers
        aborted: list[AbortedTxn] = []
        txn.cleaned_index = aborted
        writer = _CleanedSegmentWriter(ltc.directory, group[0].base_offset, ltc.config, self.io_buffer_size)
        try:
            for seg in nonempty:
                for h, batch in read_batches(seg, self.io_buffer_size, pacer):
                    stats.bytes_read += len(batch)
                    horizon = delete_horizon_of(h)
                    records: list[Record] | None = None
                    if h.is_control:
                        records = decode_batch_records(batch)
                        ctype = parse_control_key(records[0].key) if records else None
                        can_discard = txn.on_control_batch(h, ctype)
                        discard_records = can_discard and horizon is not None and horizon <= now_ms
                    else:
                        can_discard = discard_records = txn.on_batch(h)
                    last = producers.get(h.producer_id) if h.producer_id >= 0 else None
                    if last is not None and (
                        h.last_offset == last.last_data_offset
                        if last.last_data_offset is not None
                        else h.is_control and h.producer_epoch == last.producer_epoch
                    ):
                        keep_empty = True
                    else:
                        keep_empty = h.next_offset == group_end
                    if discard_records and not keep_empty:
                        stats.records_read += h.records_count
                        continue
                    if records is None:
                        records = decode_batch_records(batch)
                    stats.records_read += len(records)
                    retained: list[Record] = []
                    tombstones = False
                    if not discard_records:
                        for r in records:
                            if h.is_control or r.offset > latest:
                                keep = True
                            elif r.key is None:
                                keep = False  # a keyless record cannot be compacted: Kafka drops it
                            else:
                                keep = r.offset >= m.get(r.key) and (
                                    r.value is not None or horizon is None or now_ms < horizon
                                )
                            if keep:
                                retained.append(r)
                                if r.value is None and not h.is_control:
                                    tombstones = True
                    marker_for_empty_txn = can_discard and h.is_control
                    out: bytes | memoryview
                    if retained:
                        stats.records_retained += len(retained)
                        set_horizon = (tombstones or marker_for_empty_txn) and horizon is None
                        if len(retained) == len(records) and not set_horizon:
                            out = batch
                        else:
                            out = rebuild_batch(h, retained, new_horizon if set_horizon else horizon)
                    elif keep_empty:
                        out = empty_batch(h)
                    else:
                        continue
                    out_h = h if out is batch else BatchHeader._make(HEADER.unpack_from(out, 0))
                    writer.append(out, out_h)
                    pacer.tick()
            if writer.next_offset != group_end:
                raise AssertionError(
                    f"cleaned segment ends at {writer.next_offset}, its group at {group_end}"
                )
            writer.finish(aborted, nonempty[-1].mtime_ns)
        except BaseException:
            writer.discard()
            raise
        finally:
            txn.cleaned_index = None
        stats.bytes_written += writer.size
        return CleanedSegment(
            group[0].base_offset, writer.next_offset, writer.size, group, successor, aborted
        )


__all__ = [
    "CleanedSegment",
    "CleanedTransactionMetadata",
    "Cleaner",
    "CleanerStats",
    "CleaningAbortedError",
    "LastRecord",
    "LogToClean",
    "OffsetMapTooSmallError",
    "SegmentToClean",
    "group_segments_by_size",
]
