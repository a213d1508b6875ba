"""The Raft log of the metadata quorum on disk: :class:`KRaftLog`, a
:class:`~zurau.raft.log.RaftLog` over the ``__cluster_metadata-0`` partition log.

On-disk format: the directory and files of :class:`~zurau.metadata.metadata_log.MetadataLog`
(``<metadata_dir>/__cluster_metadata-0``: segments, indexes, ``leader-epoch-checkpoint``), holding
v2 record batches as :mod:`zurau.raft.batches` lays them out: one batch per leader append, the
batch's ``partition_leader_epoch`` is the Raft epoch, each record one entry (null key, value =
payload), leader-change entries in control batches. A log written by the single-node
``MetadataLog`` (batches stamped with epoch 0) therefore opens as a log whose entries all have
epoch 0. The ``quorum-state`` file next to it is :mod:`zurau.metadata.quorum_state_file`'s.

Invariants (those of :class:`~zurau.raft.log.InMemoryRaftLog`, plus batches):

* entries are records: offsets are dense from 0 and every batch's offsets are consecutive (a log
  that breaks this, or whose epochs go down, is refused at open with KafkaStorageError);
* batch boundaries are kept: ``append_as_leader`` writes one batch, ``append_as_follower`` the
  leader's batches (``last_in_batch``) with the leader's offsets and epochs; ``read`` returns whole
  batches only -- as many as fit in ``max_entries``, but at least the first one -- except that a
  read starting inside a batch starts there;
* the leader-epoch cache (epoch -> start offset) is rebuilt from the batch headers at open and
  kept with every append and truncation; ``end_offset_for_epoch`` answers as
  ``InMemoryRaftLog`` does (``(0, 0)`` below the first epoch, the log end in the last one);
* ``flushed_offset()`` is the end of the prefix known fsync'd: the whole log after open (it is
  fsync'd once there), the log end after ``flush()``, lowered by ``truncate_to``;
* ``truncate_to(offset)`` removes exactly the entries at and above ``offset`` and is durable
  (segment and directory fsync'd) before it returns. A batch straddling ``offset`` is removed
  whole by the partition log and its entries below ``offset`` are written back as one batch (a
  process crash between the two loses them: Raft only truncates at epoch ends, which are batch
  boundaries, so this does not arise in practice);
* the entries of the last ``tail_entries`` (about) offsets are kept in memory as whole batches,
  so reads at the tail -- fetches of caught-up followers, newly committed entries -- decode
  nothing; older offsets are read from the segments.

Not thread-safe; the caller serialises calls. Only one ``KRaftLog`` (or ``MetadataLog``) may have
the directory open.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from zurau.metadata.metadata_log import METADATA_TOPIC
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import BatchHeader, iter_batches
from zurau.raft.batches import encode_entries, iter_entry_batches, split_batches
from zurau.raft.messages import Entry, OffsetAndEpoch
from zurau.storage.checkpoint import fsync_dir
from zurau.storage.log_config import LogConfig
from zurau.storage.partition_log import PartitionLog

__all__ = ["DEFAULT_TAIL_ENTRIES", "KRaftLog", "LOG_CONFIG"]

# The settings MetadataLog uses: no retention, 64 MiB segments.
LOG_CONFIG = LogConfig(segment_bytes=64 * 1024 * 1024, retention_ms=-1, retention_bytes=-1)
DEFAULT_TAIL_ENTRIES = 4096
_READ_CHUNK_BYTES = 256 * 1024


class KRaftLog:
    """The on-disk :class:`~zurau.raft.log.RaftLog` (see the module docstring)."""

    def __init__(
        self, metadata_dir: Path, now_ms: Callable[[], int], *, tail_entries: int = DEFAULT_TAIL_ENTRIES
    ) -> None:
        self.directory = metadata_dir / f"{METADATA_TOPIC}-0"
        self._now_ms = now_ms
        self._tail_limit = max(tail_entries, 1)
        self._log = PartitionLog.open(self.directory, METADATA_TOPIC, 0, LOG_CONFIG, now_ms=now_ms())
        try:
            # Leader-epoch cache: parallel lists of epochs and their start offsets.
            self._epochs, self._epoch_starts = self._scan_epochs()
            self._log.flush(now_ms=now_ms())
        except BaseException:
            self._log.close()
            raise
        self._flushed = self.end_offset()
        # Whole batches covering [_tail_start, end_offset()), oldest first.
        self._tail: list[list[Entry]] = []
        self._tail_bases: list[int] = []
        self._tail_count = 0
        self._tail_start = self.end_offset()

    @classmethod
    def open(cls, metadata_dir: Path, now_ms: Callable[[], int]) -> KRaftLog:
        return cls(metadata_dir, now_ms)

    def _scan_epochs(self) -> tuple[list[int], list[int]]:
        """The epoch cache from every batch header; refuses a log Raft cannot use."""
        log = self._log
        if log.log_start_offset != 0:
            raise KafkaStorageError(
                f"{self.directory}: the metadata log starts at {log.log_start_offset}, not 0"
            )
        epochs: list[int] = []
        starts: list[int] = []
        offset, end = 0, log.log_end_offset
        while offset < end:
            data = log.read(offset, _READ_CHUNK_BYTES, max_offset=end, min_one_batch=True)
            if not data:
                raise KafkaStorageError(
                    f"{self.directory}: no batch at offset {offset} below the log end {end}"
                )
            for _pos, h in iter_batches(data):
                if h.base_offset != offset or h.records_count != h.last_offset_delta + 1:
                    raise KafkaStorageError(
                        f"{self.directory}: batch at offset {h.base_offset} ({h.records_count} records, "
                        f"last offset delta {h.last_offset_delta}) breaks dense offsets from {offset}"
                    )
                epoch = h.partition_leader_epoch
                if epoch < (epochs[-1] if epochs else 0):
                    raise KafkaStorageError(
                        f"{self.directory}: batch at offset {offset} has epoch {epoch} after epoch "
                        f"{epochs[-1] if epochs else 'none'}"
                    )
                if not epochs or epochs[-1] != epoch:
                    epochs.append(epoch)
                    starts.append(offset)
                offset = h.next_offset
        return epochs, starts

    # ------------------------------------------------------------------ queries

    def end_offset(self) -> int:
        return self._log.log_end_offset

    def last_fetched_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else 0

    def flushed_offset(self) -> int:
        return self._flushed

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(0, 0)
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epochs) else self.end_offset()
        return OffsetAndEpoch(end, self._epochs[i])

    def _batches_from(self, offset: int, chunk_bytes: int = _READ_CHUNK_BYTES) -> Iterator[list[Entry]]:
        """Whole batches from the one holding ``offset`` (< the log end) to the log end."""
        if offset >= self._tail_start:
            tail = self._tail
            for i in range(bisect.bisect_right(self._tail_bases, offset) - 1, len(tail)):
                yield tail[i]
            return
        end = self.end_offset()
        while offset < end:
            data = self._log.read(offset, chunk_bytes, max_offset=end, min_one_batch=True)
            if not data:
                return
            try:
                for batch in iter_entry_batches(data):
                    yield batch
                    offset = batch[-1].offset + 1
            except DecodeError as e:
                raise KafkaStorageError(
                    f"{self.directory}: unreadable batch at offset {offset}: {e}"
                ) from None

    def read(self, start_offset: int, max_entries: int) -> Sequence[Entry]:
        """Whole batches from ``start_offset``: as many as ``max_entries`` holds, at least one."""
        if start_offset < 0:
            raise ValueError(f"negative offset {start_offset}")
        if max_entries <= 0 or start_offset >= self.end_offset():
            return []
        out: list[Entry] = []
        for batch in self._batches_from(start_offset):
            part = batch if batch[0].offset >= start_offset else batch[start_offset - batch[0].offset :]
            if out and len(out) + len(part) > max_entries:
                break
            out.extend(part)
            if len(out) >= max_entries:
                break
        return out

    def entry(self, offset: int) -> Entry:
        if not 0 <= offset < self.end_offset():
            raise IndexError(f"offset {offset} is outside the log [0, {self.end_offset()})")
        for batch in self._batches_from(offset, chunk_bytes=1):
            return batch[offset - batch[0].offset]
        raise KafkaStorageError(f"{self.directory}: offset {offset} could not be read")

    def read_bytes(self, start_offset: int, max_bytes: int) -> bytes:
        """Raw whole batches from the one holding ``start_offset`` (which may begin before it),
        at most ``max_bytes`` unless the first batch alone is larger; ``b""`` at the log end. The
        bytes are those of the log, ready for a Fetch response."""
        end = self.end_offset()
        if start_offset < 0:
            raise ValueError(f"negative offset {start_offset}")
        out = bytearray()
        offset = start_offset
        while offset < end and len(out) < max_bytes:
            data = self._log.read(offset, max_bytes - len(out), max_offset=end, min_one_batch=not out)
            if not data:
                break
            out += data
            last: BatchHeader | None = None
            for _pos, h in iter_batches(data):
                last = h
            if last is None:
                break
            offset = last.next_offset
        if not out and offset < end:
            out += self._log.read(offset, max_bytes, max_offset=end, min_one_batch=True)
        return bytes(out)

    # ------------------------------------------------------------------ appends

    def append_as_leader(self, epoch: int, payloads: Sequence[bytes], control: bool = False) -> list[Entry]:
        """Append ``payloads`` as ONE batch in ``epoch`` at the log end; returns the new entries."""
        if not payloads:
            return []
        last = self.last_fetched_epoch()
        if epoch < last:
            raise ValueError(f"entry epoch {epoch} below the log's last epoch {last}")
        base = self.end_offset()
        n = len(payloads)
        entries = [Entry(base + i, epoch, p, control, i == n - 1) for i, p in enumerate(payloads)]
        self._write([entries])
        return list(entries)  # the cache keeps ``entries``: hand out a copy

    def append_as_follower(self, entries: Sequence[Entry]) -> None:
        """Append entries copied from the leader, keeping its offsets, epochs and batch boundaries.
        ValueError (nothing written) if they do not continue the log at its end with dense offsets
        and non-decreasing epochs, or a batch mixes epochs."""
        if not entries:
            return
        self._check_continues(entries)
        self._write(split_batches(entries))

    def append_batches_as_follower(self, data: bytes | bytearray | memoryview) -> list[Entry]:
        """Append raw record batches from a Fetch response byte for byte; returns their entries.
        DecodeError if they are corrupt, ValueError if they do not continue the log (nothing is
        written either way)."""
        batches = list(iter_entry_batches(data))
        flat = [e for b in batches for e in b]
        if not flat:
            return []
        self._check_continues(flat)
        self._write(batches, bytes(data))
        return flat

    def _check_continues(self, entries: Sequence[Entry]) -> None:
        expected = self.end_offset()
        last = self.last_fetched_epoch()
        for e in entries:
            if e.offset != expected:
                raise ValueError(f"entry at offset {e.offset} does not continue the log at {expected}")
            if e.epoch < last:
                raise ValueError(f"entry epoch {e.epoch} below the log's last epoch {last}")
            last = e.epoch
            expected += 1

    def _write(self, batches: list[list[Entry]], data: bytes | None = None) -> None:
        """Write ``batches`` (each ending with ``last_in_batch``) at the log end, then the caches."""
        now = self._now_ms()
        if data is None:
            data = encode_entries([e for b in batches for e in b], timestamp_ms=now)
        self._log.append_as_follower(data, now_ms=now)
        for batch in batches:
            epoch = batch[0].epoch
            if not self._epochs or self._epochs[-1] != epoch:
                self._epochs.append(epoch)
                self._epoch_starts.append(batch[0].offset)
            self._tail.append(batch)
            self._tail_bases.append(batch[0].offset)
            self._tail_count += len(batch)
        if self._tail_count > 2 * self._tail_limit:
            self._trim_tail()

    def _trim_tail(self) -> None:
        drop = 0
        count = self._tail_count
        while len(self._tail) - drop > 1 and count > self._tail_limit:
            count -= len(self._tail[drop])
            drop += 1
        del self._tail[:drop], self._tail_bases[:drop]
        self._tail_count = count
        self._tail_start = self._tail_bases[0] if self._tail else self.end_offset()

    # ------------------------------------------------------------------ truncation, flush

    def truncate_to(self, offset: int) -> None:
        """Remove every entry at or above ``offset``, durably."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.end_offset():
            return
        straddling = next(self._batches_from(offset))
        keep = [e for e in straddling if e.offset < offset]
        self._log.truncate_to(offset)  # removes the straddling batch whole
        new_end = self.end_offset()
        while self._epoch_starts and self._epoch_starts[-1] >= new_end:
            self._epoch_starts.pop()
            self._epochs.pop()
        i = bisect.bisect_left(self._tail_bases, new_end)
        self._tail_count -= sum(len(b) for b in self._tail[i:])
        del self._tail[i:], self._tail_bases[i:]
        if not self._tail:
            self._tail_start = new_end
        if keep:
            self._write(split_batches(keep))
        self._log.active_segment.flush()
        fsync_dir(self.directory)
        self._log.purge_retired(self._now_ms())
        self._flushed = min(self._flushed, offset)

    def flush(self) -> None:
        now = self._now_ms()
        self._log.flush(now_ms=now)
        self._log.purge_retired(now)
        self._flushed = self.end_offset()

    def close(self) -> None:
        """Flush and close the files. Idempotent."""
        self._log.close()

    def __repr__(self) -> str:
        return (
            f"KRaftLog({self.directory}, end_offset={self.end_offset()}, "
            f"last_epoch={self.last_fetched_epoch()}, flushed={self._flushed})"
        )
