"""The Raft log of the metadata quorum on disk: :class:`KRaftLog`, a
:class:`~zurau.raft.log.RaftLog` over the ``__cluster_metadata-0`` partition log.

On-disk format: the directory and files of :class:`~zurau.metadata.metadata_log.MetadataLog`
(``<metadata_dir>/__cluster_metadata-0``: segments, indexes, ``leader-epoch-checkpoint``), holding
v2 record batches as :mod:`zurau.raft.batches` lays them out: one batch per leader append, the
batch's ``partition_leader_epoch`` is the Raft epoch, each record one entry (null key, value =
payload), leader-change entries in control batches. A log written by the single-node
``MetadataLog`` (batches stamped with epoch 0) therefore opens as a log whose entries all have
epoch 0. The ``quorum-state`` file next to it is :mod:`zurau.metadata.quorum_state_file`'s.

Snapshots (KIP-630) live in the same directory, named as Kafka names them::

    00000000000000004711-0000000003.checkpoint        complete snapshot: end offset 4711 (the first
                                                      offset it does not cover), epoch 3 (that of
                                                      entry 4710); bytes opaque to the log
    00000000000000004800-0000000003.checkpoint.part   being written (deleted at open)
    log-start-offset-checkpoint                       the log start offset, in Kafka's offset
                                                      checkpoint format (``storage.checkpoint``),
                                                      one entry ``__cluster_metadata 0 <offset>``

A snapshot is written to its ``.part`` file, fsync'd, renamed to its final name and the directory
fsync'd, so after a crash it either does not exist or is complete; ``latest_snapshot()`` only knows
complete files. The log start offset file is kept in the partition directory (not the log
directory, whose ``log-start-offset-checkpoint`` the broker's LogManager owns and rewrites) and is
replaced atomically.

Invariants (those of :class:`~zurau.raft.log.InMemoryRaftLog`, plus batches):

* entries are records: offsets are dense from the log start (0 until a prefix is deleted) and
  every batch's offsets are consecutive (a log that breaks this, or whose epochs go down, is
  refused at open with KafkaStorageError);
* batch boundaries are kept: ``append_as_leader`` writes one batch, ``append_as_follower`` the
  leader's batches (``last_in_batch``) with the leader's offsets and epochs; ``read`` returns whole
  batches only -- as many as fit in ``max_entries``, but at least the first one -- except that a
  read starting inside a batch starts there;
* the leader-epoch cache (epoch -> start offset) is rebuilt from the batch headers at open and
  kept with every append and truncation; ``end_offset_for_epoch`` answers as
  ``InMemoryRaftLog`` does (``(0, 0)`` below the first epoch of a log starting at 0, the log end
  in the last one). Once a prefix is gone the log start stands for the end of the *base epoch*,
  the epoch of the entry just below the start (the snapshot id's epoch): an epoch below the
  first one still in the log is answered ``(start_offset, base epoch)`` (as Kafka's metadata log
  answers from its oldest snapshot), and an empty log's ``last_fetched_epoch`` is the base epoch;
* ``start_offset()`` is the first offset still held; entries below it are gone for the reader
  (``read``, ``entry``, ``read_bytes`` and ``truncate_to`` below it raise ValueError, as does
  ``truncate_to`` below the latest snapshot, which covers committed entries only -- stricter than
  ``InMemoryRaftLog``, because such a log would restart at the snapshot when reopened). It moves up
  only by ``delete_before`` (to at most the latest snapshot's offset) and ``install_snapshot``,
  and is recorded durably before any segment is deleted. Only whole segments are deleted, and the
  partition log's own start is kept one below the log start, so the entry below the start (whose
  epoch is the base epoch) stays on disk until a later ``delete_before``; after
  ``install_snapshot`` no entry is below the start and the snapshot at the start gives the base
  epoch. At open the start is the recorded one, or the first segment's base offset if that is
  higher (a crash after the segments were replaced but before the record was);
* snapshots: ``create_snapshot`` stores one at an entry boundary inside the log whose epoch is
  that of the entry below it; ``install_snapshot`` stores one and restarts the log empty at its
  offset (snapshot first, then every segment replaced by an empty one, then the log start
  record, then older snapshots deleted); ``delete_before`` deletes the snapshots below the new
  log start (with Raft's call at the latest snapshot's offset: all but the latest). At open,
  leftover ``.part`` files and snapshots below the log start are deleted, and if the latest
  snapshot is ahead of the log -- its offset beyond the log end, or its epoch above the log's last
  epoch (a follower that crashed while installing it) -- the log restarts empty at it, as Kafka
  does. A log starting above 0 without a snapshot at or above its start, or without the entry
  below its start or a snapshot at it, is refused (KafkaStorageError);
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
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from zurau.metadata.metadata_log import METADATA_TOPIC
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import BatchHeader, iter_batches
from zurau.raft.batches import encode_entries, iter_entry_batches, split_batches
from zurau.raft.messages import LEADER_CHANGE, Entry, OffsetAndEpoch
from zurau.storage.checkpoint import fsync_dir, read_offsets_checkpoint, write_offsets_checkpoint
from zurau.storage.log_config import LogConfig
from zurau.storage.partition_log import PartitionLog

__all__ = [
    "DEFAULT_TAIL_ENTRIES",
    "KRaftLog",
    "LOG_CONFIG",
    "LOG_START_CHECKPOINT",
    "PARTIAL_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "snapshot_file_name",
]

# The settings MetadataLog uses: no retention, 64 MiB segments.
LOG_CONFIG = LogConfig(segment_bytes=64 * 1024 * 1024, retention_ms=-1, retention_bytes=-1)
DEFAULT_TAIL_ENTRIES = 4096
_READ_CHUNK_BYTES = 256 * 1024

SNAPSHOT_SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".part"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_TP = (METADATA_TOPIC, 0)


def snapshot_file_name(snapshot: OffsetAndEpoch) -> str:
    """``{end offset:020d}-{epoch:010d}.checkpoint``, Kafka's name for a snapshot file."""
    return f"{snapshot.offset:020d}-{snapshot.epoch:010d}{SNAPSHOT_SUFFIX}"


def _snapshot_order(snapshot: OffsetAndEpoch) -> tuple[int, int]:
    return snapshot.offset, snapshot.epoch


class KRaftLog:
    """The on-disk :class:`~zurau.raft.log.RaftLog` (see the module docstring)."""

    def __init__(
        self, metadata_dir: Path, now_ms: Callable[[], int], *, tail_entries: int = DEFAULT_TAIL_ENTRIES
    ) -> None:
        self.directory = metadata_dir / f"{METADATA_TOPIC}-0"
        self._now_ms = now_ms
        self._tail_limit = max(tail_entries, 1)
        recorded = read_offsets_checkpoint(self.directory / LOG_START_CHECKPOINT).get(_TP)
        # The partition log keeps the entry just below the log start (its epoch is the base epoch).
        self._log = PartitionLog.open(
            self.directory,
            METADATA_TOPIC,
            0,
            LOG_CONFIG,
            log_start_offset=None if recorded is None else max(recorded - 1, 0),
            now_ms=now_ms(),
        )
        try:
            self._snapshots = self._scan_snapshots()
            # Leader-epoch cache: parallel lists of epochs and their start offsets.
            self._epochs, self._epoch_starts = self._scan_epochs()
            self._start = max(recorded or 0, self._log.log_start_offset)
            self._base_epoch = 0
            self._recover_snapshot_state(recorded)
            self._log.flush(now_ms=now_ms())
        except BaseException:
            self._log.close()
            raise
        self._flushed = self.end_offset()
        self._reset_tail()

    def _reset_tail(self) -> None:
        # Whole batches covering [_tail_start, end_offset()), oldest first.
        self._tail: list[list[Entry]] = []
        self._tail_bases: list[int] = []
        self._tail_count = 0
        self._tail_start = self.end_offset()

    @classmethod
    def open(cls, metadata_dir: Path, now_ms: Callable[[], int]) -> KRaftLog:
        return cls(metadata_dir, now_ms)

    def _scan_snapshots(self) -> list[OffsetAndEpoch]:
        """The ids of the complete snapshot files, ascending; leftover ``.part`` files are deleted."""
        found: list[OffsetAndEpoch] = []
        for name in os.listdir(self.directory):
            if name.endswith(SNAPSHOT_SUFFIX + PARTIAL_SUFFIX):
                (self.directory / name).unlink(missing_ok=True)
                continue
            m = _SNAPSHOT_NAME.match(name)
            if m is not None:
                found.append(OffsetAndEpoch(int(m.group(1)), int(m.group(2))))
        return sorted(found, key=_snapshot_order)

    def _scan_epochs(self) -> tuple[list[int], list[int]]:
        """The epoch cache from every batch header from the partition log's start (the first
        batch may begin below it); refuses a log Raft cannot use."""
        log = self._log
        epochs: list[int] = []
        starts: list[int] = []
        offset, end = log.log_start_offset, log.log_end_offset
        while offset < end:
            data = log.read(offset, _READ_CHUNK_BYTES, max_offset=end, min_one_batch=True)
            if not data:
                raise KafkaStorageError(
                    f"{self.directory}: no batch at offset {offset} below the log end {end}"
                )
            for _pos, h in iter_batches(data):
                straddles = not epochs and h.base_offset < offset < h.next_offset
                if (h.base_offset != offset and not straddles) or h.records_count != h.last_offset_delta + 1:
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

    def _recover_snapshot_state(self, recorded: int | None) -> None:
        """Bring the log in line with its snapshots at open (see the module docstring): restart
        it at a snapshot that is ahead of it, set the base epoch, record the start if it changed,
        delete snapshots below it."""
        latest = self._snapshots[-1] if self._snapshots else None
        if latest is not None and (
            latest.offset > self.end_offset() or (self._epochs and latest.epoch > self._epochs[-1])
        ):
            self._restart_at(latest)
        else:
            start = self._start
            if start > 0 and (latest is None or latest.offset < start):
                raise KafkaStorageError(
                    f"{self.directory}: the metadata log starts at {start} but no snapshot covers the "
                    f"entries below it (snapshots: {self._snapshots})"
                )
            at_start = [s.epoch for s in self._snapshots if s.offset == start]
            if self._log.log_start_offset < start:
                self._base_epoch = self._epoch_at(start - 1)
            elif at_start:
                self._base_epoch = at_start[-1]
            elif start > 0:
                raise KafkaStorageError(
                    f"{self.directory}: the metadata log starts at {start}, but neither the entry "
                    f"below it nor a snapshot at it is left to tell that entry's epoch"
                )
            self._truncate_epochs_from(start)
        if self._start != recorded and (recorded is not None or self._start > 0):
            self._record_start(self._start)
        self._delete_snapshots_below(self._start)

    def _epoch_at(self, offset: int) -> int:
        """The epoch of the entry at ``offset``, which the epoch cache covers."""
        return self._epochs[bisect.bisect_right(self._epoch_starts, offset) - 1]

    def _truncate_epochs_from(self, offset: int) -> None:
        """Forget the epochs of entries below ``offset`` (the new log start)."""
        if offset >= self.end_offset():
            self._epochs, self._epoch_starts = [], []
            return
        i = bisect.bisect_right(self._epoch_starts, offset) - 1
        if i > 0:
            del self._epochs[:i], self._epoch_starts[:i]
        if self._epoch_starts:
            self._epoch_starts[0] = max(self._epoch_starts[0], offset)

    # ------------------------------------------------------------------ queries

    def end_offset(self) -> int:
        return self._log.log_end_offset

    def start_offset(self) -> int:
        return self._start

    def last_fetched_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else self._base_epoch

    def flushed_offset(self) -> int:
        return self._flushed

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(self.start_offset(), self._base_epoch)
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
        self._check_readable(start_offset)
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

    def _check_readable(self, offset: int) -> None:
        if offset < self.start_offset():
            raise ValueError(f"offset {offset} is below the log start offset {self.start_offset()}")

    def entry(self, offset: int) -> Entry:
        """The entry at ``offset``: ValueError below the log start, IndexError at or beyond the end."""
        if offset < self.start_offset():
            raise ValueError(f"offset {offset} is below the log start offset {self.start_offset()}")
        if offset >= self.end_offset():
            raise IndexError(f"offset {offset} is at or beyond the log end offset {self.end_offset()}")
        for batch in self._batches_from(offset, chunk_bytes=1):
            return batch[offset - batch[0].offset]
        raise KafkaStorageError(f"{self.directory}: offset {offset} could not be read")

    def read_bytes(self, start_offset: int, max_bytes: int) -> bytes:
        """Raw whole batches from the one holding ``start_offset`` (which may begin before it),
        at most ``max_bytes`` unless the first batch alone is larger; ``b""`` at the log end. The
        bytes are those of the log, ready for a Fetch response."""
        end = self.end_offset()
        self._check_readable(start_offset)
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

    def append_as_leader(
        self, epoch: int, payloads: Sequence[bytes], control: bool = False, control_types: Sequence[int] = ()
    ) -> list[Entry]:
        """Append ``payloads`` as ONE batch in ``epoch`` at the log end; returns the new entries."""
        if not payloads:
            return []
        last = self.last_fetched_epoch()
        if epoch < last:
            raise ValueError(f"entry epoch {epoch} below the log's last epoch {last}")
        base = self.end_offset()
        n = len(payloads)
        entries = [
            Entry(base + i, epoch, p, control, i == n - 1, control_types[i] if control_types else LEADER_CHANGE)
            for i, p in enumerate(payloads)
        ]
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
        start = self.start_offset()
        if offset < start:
            raise ValueError(f"cannot truncate to {offset}, below the log start offset {start}")
        latest = self.latest_snapshot()
        if latest is not None and offset < latest.offset:
            raise ValueError(f"cannot truncate to {offset}, below the latest snapshot {latest} (committed)")
        if offset >= self.end_offset():
            return
        straddling = next(self._batches_from(offset))
        keep = [e for e in straddling if e.offset < offset]
        kept_from = self._log.log_start_offset
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
        if self._log.log_start_offset < kept_from:
            # The straddling batch began below the start: the partition log lowered its start
            # while the batch was gone; put it back (entries below it were written back too).
            self._log.high_watermark = self.end_offset()
            self._log.delete_records_before(kept_from)
        self._truncate_epochs_from(start)
        self._log.active_segment.flush()
        fsync_dir(self.directory)
        self._log.purge_retired(self._now_ms())
        self._flushed = min(self._flushed, offset)

    def flush(self) -> None:
        now = self._now_ms()
        self._log.flush(now_ms=now)
        self._log.purge_retired(now)
        self._flushed = self.end_offset()

    # ------------------------------------------------------------------ snapshots (KIP-630)

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return self._snapshots[-1] if self._snapshots else None

    def snapshots(self) -> list[OffsetAndEpoch]:
        """The ids of every complete snapshot, oldest first."""
        return list(self._snapshots)

    def snapshot_path(self, snapshot: OffsetAndEpoch) -> Path:
        """The file of a stored snapshot; KeyError if there is none with that id."""
        if snapshot not in self._snapshots:
            raise KeyError(f"no snapshot {snapshot} in {self.directory}")
        return self.directory / snapshot_file_name(snapshot)

    def snapshot_size(self, snapshot: OffsetAndEpoch) -> int:
        return self.snapshot_path(snapshot).stat().st_size

    def read_snapshot(self, snapshot: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of the snapshot from ``position`` (``b""`` at or past its end)."""
        path = self.snapshot_path(snapshot)
        if position < 0 or max_bytes < 0:
            raise ValueError(f"cannot read {max_bytes} bytes at position {position} of snapshot {snapshot}")
        with path.open("rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    def _epoch_below(self, offset: int) -> int:
        """The epoch of the entry at ``offset - 1`` (start_offset <= offset <= end_offset); the
        base epoch when ``offset`` is the log start."""
        i = bisect.bisect_right(self._epoch_starts, offset - 1) - 1
        return self._epochs[i] if i >= 0 and offset > self.start_offset() else self._base_epoch

    def create_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Store the state machine's snapshot ``data`` of the entries below ``snapshot.offset``,
        durably. ValueError unless the offset lies in [start_offset, end_offset] and the epoch is
        that of the entry below it. A snapshot with the same id already stored is kept as it is."""
        start, end = self.start_offset(), self.end_offset()
        if not start <= snapshot.offset <= end:
            raise ValueError(f"snapshot {snapshot} is outside the log [{start}, {end}]")
        expected = self._epoch_below(snapshot.offset)
        if snapshot.epoch != expected:
            raise ValueError(
                f"snapshot {snapshot} names epoch {snapshot.epoch}, but the entry below offset "
                f"{snapshot.offset} has epoch {expected}"
            )
        if snapshot not in self._snapshots:
            self._write_snapshot_file(snapshot, data)

    def install_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Store a snapshot fetched from the leader and restart the log empty at its offset with
        last epoch ``snapshot.epoch``: every segment is replaced by an empty one, the epoch cache
        emptied, the log start recorded, older snapshots deleted. Durable on return. ValueError
        for a snapshot older than the latest one stored."""
        if snapshot.offset < 0 or snapshot.epoch < 0:
            raise ValueError(f"snapshot id {snapshot} is negative")
        latest = self.latest_snapshot()
        if latest is not None and _snapshot_order(snapshot) < _snapshot_order(latest):
            raise ValueError(f"snapshot {snapshot} is older than the latest stored snapshot {latest}")
        if snapshot not in self._snapshots:
            self._write_snapshot_file(snapshot, data)
        self._restart_at(snapshot)
        self._record_start(snapshot.offset)
        self._delete_snapshots_below(snapshot.offset)
        self._reset_tail()

    def delete_before(self, offset: int) -> None:
        """Move the log start up to ``offset`` (at most the latest snapshot's offset, else
        ValueError): the new start is recorded durably, then whole segments below it are deleted,
        then the snapshots below it. An offset at or below the start deletes nothing but those
        snapshots."""
        latest = self.latest_snapshot()
        if latest is None or offset > latest.offset:
            raise ValueError(f"cannot delete the log before {offset}: the latest snapshot is {latest}")
        end = self.end_offset()
        if offset > end:
            raise ValueError(f"cannot delete the log before {offset}, beyond its end {end}")
        if offset > self.start_offset():
            base_epoch = self._epoch_below(offset)
            self._record_start(offset)
            now = self._now_ms()
            self._log.high_watermark = end
            self._log.delete_records_before(offset - 1)  # keeps the entry below the start
            self._log.purge_retired(now)
            self._start, self._base_epoch = offset, base_epoch
            self._truncate_epochs_from(offset)
            drop = 0
            while drop < len(self._tail) and self._tail[drop][-1].offset < offset:
                self._tail_count -= len(self._tail[drop])
                drop += 1
            del self._tail[:drop], self._tail_bases[:drop]
            self._tail_start = self._tail_bases[0] if self._tail else end
            self._flushed = max(self._flushed, offset)
        self._delete_snapshots_below(self.start_offset())

    def _write_snapshot_file(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Write ``<id>.checkpoint.part``, fsync it, rename it to ``<id>.checkpoint``, fsync the
        directory."""
        final = self.directory / snapshot_file_name(snapshot)
        part = final.with_name(final.name + PARTIAL_SUFFIX)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            part.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(part, final)
        fsync_dir(self.directory)
        bisect.insort(self._snapshots, snapshot, key=_snapshot_order)

    def _restart_at(self, snapshot: OffsetAndEpoch) -> None:
        """Replace every segment by an empty one at ``snapshot.offset``, durably; the log's last
        epoch becomes the snapshot's."""
        now = self._now_ms()
        self._log.truncate_fully_and_start_at(snapshot.offset)
        self._log.flush(now_ms=now)  # the new segment and the directory
        self._log.purge_retired(now)
        self._epochs, self._epoch_starts = [], []
        self._start, self._base_epoch = snapshot.offset, snapshot.epoch
        self._flushed = snapshot.offset

    def _record_start(self, offset: int) -> None:
        write_offsets_checkpoint(self.directory / LOG_START_CHECKPOINT, {_TP: offset})

    def _delete_snapshots_below(self, offset: int) -> None:
        keep = []
        for s in self._snapshots:
            if s.offset < offset:
                (self.directory / snapshot_file_name(s)).unlink(missing_ok=True)
            else:
                keep.append(s)
        self._snapshots = keep

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Flush and close the files. Idempotent."""
        self._log.close()

    def __repr__(self) -> str:
        return (
            f"KRaftLog({self.directory}, start_offset={self.start_offset()}, end_offset={self.end_offset()}, "
            f"last_epoch={self.last_fetched_epoch()}, flushed={self._flushed})"
        )
