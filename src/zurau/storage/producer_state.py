"""Idempotent-producer state of one partition (Kafka's ``ProducerStateManager``).

For each producer id the partition remembers the producer epoch, the metadata of its last five
batches (Kafka's ``NUM_BATCHES_TO_RETAIN``: the most a producer keeps in flight) and the first
offset of its ongoing transaction. The leader checks every produced batch that has a producer id
and a sequence number against it:

* epoch lower than the known epoch -> InvalidProducerEpochError (a fenced zombie);
* epoch higher than the known epoch -> base_sequence must be 0, unless the producer has no known
  epoch, else OutOfOrderSequenceNumberError;
* same epoch -> if ``(first_seq, last_seq)`` equals one of the cached batches the batch is a
  DUPLICATE (a retry of an acknowledged batch): the append is skipped and the original offsets
  are returned, without an error; otherwise base_sequence must be last_seq + 1 (wrapping from
  2**31 - 1 to 0), else OutOfOrderSequenceNumberError;
* an unknown producer id (never seen, or evicted after retention/DeleteRecords removed all its
  batches) accepts any sequence.

Batches with a producer id but no sequence (base_sequence -1) are only epoch-checked. Control
batches (transaction markers) are epoch-checked, end the producer's ongoing transaction and are
not sequence-checked. All checks of one append happen on a ``ProducerAppendInfo`` overlay that is
committed only after the log write succeeded, so an append is all-or-nothing.

Snapshots: ``%020d.snapshot`` in the partition directory, named by the log end offset whose state
it holds. Format (big-endian)::

    magic                     4 bytes  b"ZPSN"
    version                   int16    1
    crc                       uint32   CRC-32C of every byte after this field
    snapshot_offset           int64
    producer_count            int32
    producer_count times:
      producer_id             int64
      producer_epoch          int16
      coordinator_epoch       int32
      current_txn_first_offset int64   (-1: no ongoing transaction)
      last_offset             int64    (last offset of the producer's last batch, -1 if none)
      last_timestamp          int64
      batch_count             int8     (0..5, oldest first)
      batch_count times:
        first_seq int32, last_seq int32, first_offset int64, last_offset int64, timestamp int64

Invariants: a snapshot is written to a ``.tmp`` file and renamed, so it is whole or absent; a
snapshot whose CRC fails is ignored and deleted (the state is then rebuilt from an older snapshot
plus a replay of the log); snapshots above the log end offset are deleted on load and truncation;
only the newest ``max_snapshots`` are kept.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from crc32c import crc32c

from zurau.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from zurau.protocol.records.batch import BatchHeader
from zurau.storage.checkpoint import atomic_write

SNAPSHOT_SUFFIX = ".snapshot"
NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
MAX_SEQUENCE = 2**31 - 1

_MAGIC = b"ZPSN"
_VERSION = 1
_PREFIX = struct.Struct(">4shI")
_BODY_HEAD = struct.Struct(">qi")
_PRODUCER = struct.Struct(">qhiqqqb")
_BATCH = struct.Struct(">iiqqq")


class BatchMetadata(NamedTuple):
    """What the partition remembers of one of a producer's recent batches."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    """State of one producer id in one partition."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: list[BatchMetadata] = field(default_factory=list)  # oldest first
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    last_offset: int = -1
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            list(self.batches),
            self.coordinator_epoch,
            self.current_txn_first_offset,
            self.last_offset,
            self.last_timestamp,
        )

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def _set_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def apply(self, h: BatchHeader) -> None:
        """Record a batch that was appended (final offsets and timestamp in ``h``)."""
        self._set_epoch(h.producer_epoch)
        last_offset = h.base_offset + h.last_offset_delta
        if h.is_control:
            self.current_txn_first_offset = -1
        else:
            if h.base_sequence >= 0:
                self.batches.append(
                    BatchMetadata(
                        h.base_sequence, h.last_sequence, h.base_offset, last_offset, h.max_timestamp
                    )
                )
                if len(self.batches) > NUM_BATCHES_TO_RETAIN:
                    del self.batches[0]
            if h.is_transactional and self.current_txn_first_offset < 0:
                self.current_txn_first_offset = h.base_offset
        self.last_offset = last_offset
        self.last_timestamp = h.max_timestamp


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


class ProducerAppendInfo:
    """Pending producer-state updates of one append; ``commit`` applies them all at once."""

    def __init__(self, manager: ProducerStateManager) -> None:
        self._manager = manager
        self.updated: dict[int, ProducerStateEntry] = {}

    def _entry(self, producer_id: int) -> ProducerStateEntry | None:
        entry = self.updated.get(producer_id)
        return entry if entry is not None else self._manager.producers.get(producer_id)

    def check(self, h: BatchHeader) -> BatchMetadata | None:
        """Validate a batch (offsets not yet assigned). Return the original batch if DUPLICATE.

        Raises InvalidProducerEpochError or OutOfOrderSequenceNumberError per the module rules.
        """
        entry = self._entry(h.producer_id)
        if entry is None:
            return None  # unknown producer: any sequence is accepted
        if entry.producer_epoch != NO_PRODUCER_EPOCH and h.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"producer {h.producer_id} epoch {h.producer_epoch} is older than the current epoch "
                f"{entry.producer_epoch}"
            )
        if h.is_control or h.base_sequence < 0:
            return None
        duplicate = entry.find_duplicate(h.producer_epoch, h.base_sequence, h.last_sequence)
        if duplicate is not None:
            return duplicate
        if h.producer_epoch != entry.producer_epoch:
            if h.base_sequence != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceNumberError(
                    f"producer {h.producer_id}: sequence {h.base_sequence} is not 0 for new epoch "
                    f"{h.producer_epoch} (current epoch {entry.producer_epoch})"
                )
        elif entry.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, h.base_sequence):
            raise OutOfOrderSequenceNumberError(
                f"producer {h.producer_id} epoch {h.producer_epoch}: sequence {h.base_sequence} does not "
                f"follow {entry.last_seq}"
            )
        return None

    def update(self, h: BatchHeader) -> None:
        """Record an accepted batch with its final offsets and timestamp (pending until commit)."""
        entry = self.updated.get(h.producer_id)
        if entry is None:
            current = self._manager.producers.get(h.producer_id)
            entry = current.copy() if current is not None else ProducerStateEntry(h.producer_id)
            self.updated[h.producer_id] = entry
        entry.apply(h)

    def commit(self) -> None:
        self._manager.producers.update(self.updated)
        self.updated = {}


class ProducerStateManager:
    """Producer states of one partition plus their snapshot files. Not thread-safe."""

    def __init__(self, directory: Path, *, max_snapshots: int = 3) -> None:
        self.directory = directory
        self.max_snapshots = max_snapshots
        self.producers: dict[int, ProducerStateEntry] = {}
        # The snapshot ``load_latest`` read, as (offset, bytes): taking it again unchanged (a
        # broker stopped without a write since it started) rewrites nothing.
        self._loaded: tuple[int, bytes] | None = None

    # -- state -----------------------------------------------------------------------------------

    def begin_append(self) -> ProducerAppendInfo:
        return ProducerAppendInfo(self)

    def replay(self, h: BatchHeader) -> None:
        """Apply a batch read back from the log (no checks: it was accepted when appended)."""
        if h.producer_id < 0:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerStateEntry(h.producer_id)
        entry.apply(h)

    def evict_below(self, log_start_offset: int) -> None:
        """Forget producers whose every batch lies below the log start offset."""
        stale = [
            pid
            for pid, e in self.producers.items()
            if e.last_offset < log_start_offset and e.current_txn_first_offset < 0
        ]
        for pid in stale:
            del self.producers[pid]

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (``producer.id.expiration.ms``); return count."""
        stale = [
            pid
            for pid, e in self.producers.items()
            if e.current_txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in stale:
            del self.producers[pid]
        return len(stale)

    def clear(self) -> None:
        self.producers.clear()

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        out = []
        for name in os.listdir(self.directory):
            if name.endswith(SNAPSHOT_SUFFIX) and name[: -len(SNAPSHOT_SUFFIX)].isdigit():
                out.append(int(name[: -len(SNAPSHOT_SUFFIX)]))
        return sorted(out)

    def encode(self, offset: int) -> bytes:
        body = bytearray(_BODY_HEAD.pack(offset, len(self.producers)))
        for pid in sorted(self.producers):
            e = self.producers[pid]
            body += _PRODUCER.pack(
                e.producer_id,
                e.producer_epoch,
                e.coordinator_epoch,
                e.current_txn_first_offset,
                e.last_offset,
                e.last_timestamp,
                len(e.batches),
            )
            for b in e.batches:
                body += _BATCH.pack(*b)
        return _PREFIX.pack(_MAGIC, _VERSION, crc32c(body)) + bytes(body)

    @staticmethod
    def decode(data: bytes) -> tuple[int, dict[int, ProducerStateEntry]]:
        """Parse a snapshot; ValueError if it is malformed or fails its CRC."""
        if len(data) < _PREFIX.size + _BODY_HEAD.size:
            raise ValueError("snapshot is truncated")
        magic, version, crc = _PREFIX.unpack_from(data, 0)
        if magic != _MAGIC or version != _VERSION:
            raise ValueError(f"snapshot has unknown magic/version {magic!r}/{version}")
        body = memoryview(data)[_PREFIX.size :]
        if crc32c(body) != crc:
            raise ValueError("snapshot failed its CRC-32C check")
        offset, count = _BODY_HEAD.unpack_from(body, 0)
        pos = _BODY_HEAD.size
        producers: dict[int, ProducerStateEntry] = {}
        try:
            for _ in range(count):
                pid, epoch, coord, txn_first, last_offset, last_ts, nb = _PRODUCER.unpack_from(body, pos)
                pos += _PRODUCER.size
                batches = []
                for _b in range(nb):
                    batches.append(BatchMetadata(*_BATCH.unpack_from(body, pos)))
                    pos += _BATCH.size
                producers[pid] = ProducerStateEntry(
                    pid, epoch, batches, coord, txn_first, last_offset, last_ts
                )
        except struct.error:
            raise ValueError("snapshot is truncated") from None
        if pos != len(body):
            raise ValueError("snapshot has trailing bytes")
        return offset, producers

    def take_snapshot(self, offset: int, *, fsync: bool = False) -> None:
        """Write the current state as ``%020d.snapshot`` for ``offset``; prune old snapshots.

        The snapshot loaded at open is not written again when nothing changed (same offset, same
        bytes; with ``fsync`` the existing file is fsynced): a clean stop of 10,000 idle
        partitions would otherwise replace 10,000 files and fsync their directories."""
        data = self.encode(offset)
        path = self.directory / snapshot_file_name(offset)
        if self._loaded == (offset, data) and path.exists():
            if fsync:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        else:
            if self._loaded is not None and self._loaded[0] == offset:
                self._loaded = None  # that file is replaced
            atomic_write(path, data, fsync=fsync)
        offsets = self.snapshot_offsets()
        for old in offsets[: max(0, len(offsets) - self.max_snapshots)]:
            self._delete_snapshot(old)

    def _delete_snapshot(self, offset: int) -> None:
        if self._loaded is not None and self._loaded[0] == offset:
            self._loaded = None
        (self.directory / snapshot_file_name(offset)).unlink(missing_ok=True)

    def delete_snapshots_above(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o > offset:
                self._delete_snapshot(o)

    def delete_snapshots_below(self, offset: int) -> None:
        """Delete snapshots below ``offset``, always keeping the newest one."""
        offsets = self.snapshot_offsets()
        for o in offsets[:-1]:
            if o < offset:
                self._delete_snapshot(o)

    def delete_all_snapshots(self) -> None:
        for o in self.snapshot_offsets():
            self._delete_snapshot(o)

    def load_latest(self, max_offset: int) -> int | None:
        """Replace the state with the newest valid snapshot at or below ``max_offset``.

        Snapshots above ``max_offset`` and corrupt ones are deleted. Returns the snapshot's offset
        (replay the log from there), or None if there is none (replay from the log start).
        """
        self.producers = {}
        self._loaded = None
        offsets = self.snapshot_offsets()
        for o in offsets:
            if o > max_offset:
                self._delete_snapshot(o)
        for offset in reversed([o for o in offsets if o <= max_offset]):
            path = self.directory / snapshot_file_name(offset)
            try:
                raw = path.read_bytes()
                snap_offset, producers = self.decode(raw)
            except (OSError, ValueError):
                path.unlink(missing_ok=True)
                continue
            if snap_offset != offset:
                path.unlink(missing_ok=True)
                continue
            self.producers = producers
            self._loaded = (offset, raw)
            return offset
        return None
