"""One log segment: a ``%020d.log`` file of whole v2 batches plus its two sparse indexes.

Files (the name is the segment's base offset, zero-padded to 20 digits, as in Kafka)::

    00000000000000001000.log        batches exactly as produced, base_offset/leader epoch patched
    00000000000000001000.index      OffsetIndex (see offset_index.py)
    00000000000000001000.timeindex  TimeIndex (see time_index.py)

Invariants:
* the .log file is a sequence of whole batches (layout in ``zurau.protocol.records.batch``) with
  strictly increasing offsets, all >= ``base_offset`` and within ``base_offset + 2**31 - 1``
  (relative offsets fit an int32); gaps between batches are allowed (compaction);
* ``size`` is the byte length of the valid part of the file and the position of the next append;
  ``next_offset`` is one past the last offset of the last batch (``base_offset`` when empty);
* durability contract: ``append`` hands the bytes to the OS with ``os.write`` before returning,
  so they survive ``kill -9`` of the process; only ``flush`` (``os.fsync``) makes them survive a
  power loss. A failed write is rolled back by truncating the file to its previous size;
* index entries are written right after the log bytes of the same append. A crash may lose index
  entries but never log bytes that were acknowledged; recovery rebuilds indexes from the log.

Lookups touch at most one index bisect plus a header scan of about ``index.interval.bytes`` of
log: headers are read with ``os.pread`` in small chunks, never whole records.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from crc32c import crc32c

from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.records.batch import CRC_START, HEADER, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from zurau.storage.abstract_index import CorruptIndexError
from zurau.storage.offset_index import OffsetIndex
from zurau.storage.time_index import NO_TIMESTAMP, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"

MAX_RELATIVE_OFFSET = 2**31 - 1
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_SCAN_CHUNK = 8192  # bytes read per pread during header scans
_RECOVERY_CHUNK = 1 << 20  # bytes read per pread during CRC-checking recovery
_TAIL_BATCHES = 8  # last appended batches find_batch answers from without a scan


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """A segment of a partition log. Not thread-safe; the owning PartitionLog serialises calls."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        max_offset_index_entries: int,
        max_time_index_entries: int,
        created_ms: int,
        fd: int,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_path = directory / segment_file_name(base_offset, LOG_SUFFIX)
        self.offset_index = OffsetIndex(
            directory / segment_file_name(base_offset, INDEX_SUFFIX), base_offset, max_offset_index_entries
        )
        self.time_index = TimeIndex(
            directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX), base_offset, max_time_index_entries
        )
        self.fd = fd
        self.created_ms = created_ms
        self.size = os.fstat(fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset  # last offset of the batch holding it
        self.bytes_since_last_index_entry = 0
        self._rolling_base_timestamp: int | None = None
        # The last few batches appended through ``append`` (file position, header), oldest first,
        # ending at ``self.size``; emptied whenever the file changes any other way. A consumer
        # tailing the log fetches one of these, and ``find_batch`` then skips the index scan.
        self._tail: list[tuple[int, BatchHeader]] = []
        self.closed = False

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        *,
        max_offset_index_entries: int,
        max_time_index_entries: int,
        now_ms: int,
        index_files: bool = True,
    ) -> LogSegment:
        """Create a new empty segment (any files left at this base offset are emptied).

        ``index_files=False`` (a new partition's first segment, in a directory just made): the
        ``.index`` and ``.timeindex`` files are not created now but by their first entry; an
        absent index file reads as an empty index, which is what an empty segment's is."""
        path = directory / segment_file_name(base_offset, LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o644)
        seg = cls(
            directory,
            base_offset,
            max_offset_index_entries=max_offset_index_entries,
            max_time_index_entries=max_time_index_entries,
            created_ms=now_ms,
            fd=fd,
        )
        if index_files:
            seg.offset_index.reset()
            seg.time_index.reset()
        return seg

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        max_offset_index_entries: int,
        max_time_index_entries: int,
        now_ms: int,
    ) -> LogSegment:
        """Open an existing segment without scanning it; call ``load`` or ``recover`` next."""
        path = directory / segment_file_name(base_offset, LOG_SUFFIX)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        return cls(
            directory,
            base_offset,
            max_offset_index_entries=max_offset_index_entries,
            max_time_index_entries=max_time_index_entries,
            created_ms=now_ms,
            fd=fd,
        )

    def indexes_look_valid(self) -> bool:
        """True if both index files exist (or the segment is empty: an absent index is then the
        right, empty one) and pass the cheap sanity checks."""
        if self.size and (not self.offset_index.path.exists() or not self.time_index.path.exists()):
            return False
        try:
            self.offset_index.sanity_check(self.size)
            self.time_index.sanity_check()
        except CorruptIndexError:
            return False
        return True

    def load(self) -> None:
        """Derive ``next_offset`` and the largest timestamp of a trusted (flushed) segment.

        Reads the last offset-index entry and scans batch headers from there to the end of the
        file (about one index interval). Raises CorruptIndexError if the file does not end on a
        batch boundary or the index disagrees with the log; the caller then runs ``recover``.
        """
        self.size = os.fstat(self.fd).st_size
        self._tail = []
        last = self.offset_index.last_entry()
        last_ts = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = last_ts.timestamp, last_ts.offset
        self.next_offset = self.base_offset
        end = last.position
        first = True
        for pos, h in self.iter_headers(last.position):
            if first and last.position > 0 and h.last_offset != last.offset:
                raise CorruptIndexError(f"offset index of {self.log_path} disagrees with the log")
            first = False
            self.next_offset = h.next_offset
            end = pos + h.size
            self._track_timestamp(h)
        if end != self.size:
            raise CorruptIndexError(
                f"{self.log_path} does not end on a batch boundary ({end} != {self.size})"
            )
        self.bytes_since_last_index_entry = 0

    def recover(
        self, index_interval_bytes: int, on_batch: Callable[[BatchHeader], None] | None = None
    ) -> int:
        """Rescan the whole segment, checking every batch; rebuild both indexes.

        Checks per batch: whole header, magic 2, sane length inside the file, CRC-32C, offsets
        increasing and within the segment's relative-offset range. The file is truncated at the
        first batch failing a check. ``on_batch`` is called with the header of every valid batch,
        in order (the log rebuilds its leader-epoch cache this way). Returns the number of bytes
        truncated (0 if all was valid).
        """
        file_size = os.fstat(self.fd).st_size
        self._tail = []
        self.offset_index.start_rebuild()
        self.time_index.start_rebuild()
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.bytes_since_last_index_entry = 0
        self._rolling_base_timestamp = None
        next_offset = self.base_offset
        pos = 0
        buf = b""
        buf_start = 0
        while file_size - pos >= HEADER_SIZE:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, _RECOVERY_CHUNK, pos)
                buf_start, off = pos, 0
            h = BatchHeader._make(HEADER.unpack_from(buf, off))
            size = h.batch_length + LOG_OVERHEAD
            if (
                h.magic != 2
                or h.batch_length < _MIN_BATCH_LENGTH
                or pos + size > file_size
                or h.base_offset < next_offset
                or h.last_offset_delta < 0
                or h.base_offset + h.last_offset_delta - self.base_offset > MAX_RELATIVE_OFFSET
            ):
                break
            if off + size > len(buf):
                buf = os.pread(self.fd, max(_RECOVERY_CHUNK, size), pos)
                buf_start, off = pos, 0
                if len(buf) < size:
                    break
            if crc32c(memoryview(buf)[off + CRC_START : off + size]) != h.crc:
                break
            self._index_batch(pos, h, index_interval_bytes)
            if on_batch is not None:
                on_batch(h)
            next_offset = h.next_offset
            pos += size
        truncated = file_size - pos
        if truncated:
            os.ftruncate(self.fd, pos)
        self.size = pos
        self.next_offset = next_offset
        # A segment closed cleanly once got a final time-index entry, (largest timestamp, its
        # offset), that no index interval accounts for; when the file still ends with exactly
        # that entry it is kept (it is valid, and the file then needs no rewrite).
        final = self.time_index.last_entry_on_disk()
        if final == (self.max_timestamp, self.offset_of_max_timestamp):
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True)
        self.offset_index.rewrite()
        self.time_index.rewrite()
        return truncated

    # -- appending -------------------------------------------------------------------------------

    def _track_timestamp(self, h: BatchHeader) -> None:
        if h.max_timestamp > self.max_timestamp:
            self.max_timestamp = h.max_timestamp
            self.offset_of_max_timestamp = h.last_offset

    def _index_batch(self, position: int, h: BatchHeader, index_interval_bytes: int) -> None:
        """Kafka's per-batch index maintenance (max timestamp first, then maybe an entry)."""
        if position == 0:
            self._rolling_base_timestamp = h.max_timestamp
        self._track_timestamp(h)
        if self.bytes_since_last_index_entry > index_interval_bytes:
            self.offset_index.append(h.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += h.batch_length + LOG_OVERHEAD

    def append(
        self,
        data: bytes | bytearray | memoryview,
        batches: list[tuple[int, BatchHeader]],
        *,
        index_interval_bytes: int,
    ) -> int:
        """Append whole batches (already patched) and index them; return the start position.

        ``batches`` are ``(position in data, header)`` with the final offsets. Raises
        KafkaStorageError if the OS refuses the write; the file is then restored to its old size.
        """
        start = self.size
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except OSError as e:
            try:
                os.ftruncate(self.fd, start)
            except OSError:
                pass
            raise KafkaStorageError(f"write to {self.log_path} failed: {e}") from e
        self.size = start + len(data)
        tail = self._tail
        for pos, h in batches:
            self._index_batch(start + pos, h, index_interval_bytes)
            tail.append((start + pos, h))
        if len(tail) > _TAIL_BATCHES:
            del tail[:-_TAIL_BATCHES]
        if batches:
            self.next_offset = batches[-1][1].next_offset
        self.offset_index.write_pending()
        self.time_index.write_pending()
        return start

    # -- reading ---------------------------------------------------------------------------------

    def read(self, position: int, size: int) -> bytes:
        """Bytes ``[position, position + size)`` of the .log file (clipped to ``self.size``)."""
        size = min(size, self.size - position)
        if size <= 0:
            return b""
        data = os.pread(self.fd, size, position)
        if len(data) < size:  # regular files return short reads only at EOF
            parts = [data]
            got = len(data)
            while got < size:
                more = os.pread(self.fd, size - got, position + got)
                if not more:
                    break
                parts.append(more)
                got += len(more)
            data = b"".join(parts)
        return data

    def iter_headers(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """Yield ``(position, header)`` of each whole batch in ``[start, end)`` (no CRC check).

        ``start`` must be a batch boundary. Stops at the first header that is not a sane v2 header
        or a batch that does not fit before ``end``.
        """
        stop = self.size if end is None else min(end, self.size)
        pos = start
        buf = b""
        buf_start = start
        while stop - pos >= HEADER_SIZE:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, _SCAN_CHUNK, pos)
                buf_start, off = pos, 0
                if len(buf) < HEADER_SIZE:
                    return
            h = BatchHeader._make(HEADER.unpack_from(buf, off))
            if (
                h.magic != 2
                or h.batch_length < _MIN_BATCH_LENGTH
                or pos + h.batch_length + LOG_OVERHEAD > stop
            ):
                return
            yield pos, h
            pos += h.batch_length + LOG_OVERHEAD

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset`` (index lookup + bounded scan, or
        one of the last batches appended when ``offset`` is among them)."""
        if offset >= self.next_offset:
            return None
        tail = self._tail
        if tail and offset >= tail[0][1].base_offset:
            # Every earlier batch ends before tail[0] begins, so the answer is in the tail.
            for pos, h in tail:
                if h.base_offset + h.last_offset_delta >= offset:
                    return pos, h
        start = self.offset_index.lookup(offset).position
        for pos, h in self.iter_headers(start):
            if h.base_offset + h.last_offset_delta >= offset:
                return pos, h
        return None

    def position_for_upper_bound(self, max_offset: int) -> int:
        """End position of the batches whose base offset is < ``max_offset``."""
        if max_offset >= self.next_offset:
            return self.size
        found = self.find_batch(max_offset)
        if found is None:
            return self.size
        pos, h = found
        return pos if h.base_offset >= max_offset else pos + h.size

    def last_batch_end_within(self, start: int, limit: int) -> int:
        """The largest batch end ``<= limit`` among batches starting at or after ``start``.

        ``start`` is a batch boundary; returns ``start`` if the first batch ends after ``limit``.
        Cost: one index bisect plus a scan of about one index interval.
        """
        if limit >= self.size:
            return self.size
        p = max(self.offset_index.lookup_position(limit).position, start)
        result = p
        for pos, h in self.iter_headers(p, limit):
            result = pos + h.size
        return result

    def find_batch_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch with records, ``max_timestamp >= timestamp`` and last offset >=
        ``start_offset`` (a batch the cleaner emptied keeps its max timestamp but holds no record
        to return, as Kafka's ``searchForTimestamp`` skips it)."""
        entry = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(max(entry.offset, start_offset)).position
        for pos, h in self.iter_headers(start):
            if (
                h.max_timestamp >= timestamp
                and h.records_count > 0
                and h.base_offset + h.last_offset_delta >= start_offset
            ):
                return pos, h
        return None

    @property
    def largest_timestamp(self) -> int:
        """Largest batch max_timestamp, or the file's mtime if no batch has a timestamp (Kafka)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.fstat(self.fd).st_mtime * 1000)

    def rolling_base_timestamp(self) -> int | None:
        """The first batch's max timestamp (Kafka bases ``segment.ms`` on it), None if empty."""
        if self.size == 0:
            return None
        if self._rolling_base_timestamp is None:
            raw = os.pread(self.fd, HEADER_SIZE, 0)
            if len(raw) < HEADER_SIZE:
                return None
            self._rolling_base_timestamp = BatchHeader._make(HEADER.unpack_from(raw, 0)).max_timestamp
        return self._rolling_base_timestamp

    # -- truncation, lifecycle -------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the bytes removed.

        A batch straddling ``offset`` is removed whole; ``next_offset`` becomes
        ``min(offset, base offset of the first removed batch)``.
        """
        found = self.find_batch(offset)
        if found is None:
            return 0
        pos, h = found
        removed = self.size - pos
        self._tail = []
        self.offset_index.write_pending()
        self.time_index.write_pending()
        os.ftruncate(self.fd, pos)
        self.size = pos
        self.next_offset = min(offset, h.base_offset)
        self.offset_index.truncate_to_position(pos)
        self.time_index.truncate_to(self.next_offset)
        self._recompute_tail_state()
        return removed

    def _recompute_tail_state(self) -> None:
        """Recompute the largest timestamp after a truncation (scan from the last time entry)."""
        last_ts = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = last_ts.timestamp, last_ts.offset
        start = self.offset_index.lookup(last_ts.offset).position if last_ts.timestamp >= 0 else 0
        for _pos, h in self.iter_headers(start):
            self._track_timestamp(h)
        self.bytes_since_last_index_entry = 0
        if self.size == 0:
            self._rolling_base_timestamp = None

    def on_become_inactive(self) -> None:
        """Called on roll and on close: add the final time-index entry, close the index writers,
        and create an index file a non-empty segment still lacks (``create(index_files=False)``),
        so that a clean start trusts the segment instead of rescanning it."""
        if self.max_timestamp >= 0 and self.max_timestamp > self.time_index.last_entry().timestamp:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
            )
        self.offset_index.close_writer()
        self.time_index.close_writer()
        if self.size:
            for index in (self.offset_index, self.time_index):
                if index.file_size == 0 and not index.path.exists():
                    index.reset()

    def open_for_sync(self) -> list[int]:
        """Private descriptors of the ``.log`` file and both indexes (index entries handed to
        the OS first), for a flush plan to fsync and close on another thread (log_flush.py)."""
        fds = [os.dup(self.fd)]
        try:
            for index in (self.offset_index, self.time_index):
                fd = index.open_for_sync()
                if fd is not None:
                    fds.append(fd)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def flush(self) -> None:
        """fsync the log and both indexes (on the owning thread)."""
        os.fsync(self.fd)
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        """Final time-index entry, close every descriptor. Idempotent."""
        if self.closed:
            return
        self.on_become_inactive()
        self.offset_index.close()
        self.time_index.close()
        os.close(self.fd)
        self.closed = True

    def unlink(self) -> None:
        """Remove the files but keep the log descriptor open (readers in flight keep working)."""
        self.offset_index.delete()
        self.time_index.delete()
        self.log_path.unlink(missing_ok=True)

    def close_fd(self) -> None:
        if not self.closed:
            os.close(self.fd)
            self.closed = True

    def delete(self) -> None:
        """Remove the files and close the descriptor."""
        self.unlink()
        self.close_fd()

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
