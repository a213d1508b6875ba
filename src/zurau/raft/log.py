"""The replicated log as Raft sees it: the :class:`RaftLog` interface and an in-memory
implementation for tests and the simulation.

Invariants an implementation keeps:

* offsets are absolute and dense: the log holds every offset from ``start_offset()`` (0 until a
  prefix is deleted) to ``end_offset()``; entry epochs never decrease along the log;
* ``end_offset_for_epoch`` answers from a leader-epoch cache (Kafka's ``LeaderEpochFileCache``);
* ``flush()`` makes every entry below the log end offset durable; ``flushed_offset()`` is the end
  of the durable prefix. A crash keeps exactly the durable prefix, so Raft counts only flushed
  entries as replicated (a follower flushes before it fetches again; the leader counts its own
  flushed offset towards the high watermark);
* ``truncate_to(offset)`` removes every entry at or above ``offset`` (durably, at once).

Snapshots (KIP-630):

* a snapshot ``(offset, epoch)`` holds the state machine after every entry below ``offset``;
  ``epoch`` is that of the entry at ``offset - 1``. Snapshots are durable when stored and survive
  crashes; their bytes are opaque to the log;
* entries below ``start_offset()`` are gone (reading or truncating below it is an error). The log
  start only moves up -- by ``delete_before`` (to at most the latest snapshot's offset) and by
  ``install_snapshot`` (to the snapshot's offset, dropping every entry) -- and the latest snapshot
  always lies at or above it;
* the *base epoch* is the epoch of the entry just below the log start (0 for a log starting at 0;
  the snapshot's epoch right after ``install_snapshot``). An empty log's ``last_fetched_epoch`` is
  the base epoch, and ``end_offset_for_epoch`` of an epoch below every epoch still in the log is
  ``(start_offset, base epoch)`` -- ``(0, 0)`` for a log starting at 0;
* after a crash, a latest snapshot that lies beyond the log's durable end (or names an epoch above
  its last epoch) wins: the log restarts empty at it, as Kafka's metadata log does at open.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Protocol

from zurau.raft.messages import LEADER_CHANGE, Entry, OffsetAndEpoch


class RaftLog(Protocol):
    def end_offset(self) -> int:
        """The offset the next entry gets (Kafka's log end offset)."""
        ...

    def last_fetched_epoch(self) -> int:
        """The epoch of the last entry; for an empty log the base epoch (0 for a log starting at 0,
        see the module docstring)."""
        ...

    def flushed_offset(self) -> int:
        """End of the durable prefix."""
        ...

    def read(self, start_offset: int, max_entries: int) -> Sequence[Entry]:
        """Up to ``max_entries`` entries from ``start_offset``."""
        ...

    def entry(self, offset: int) -> Entry: ...

    def append_as_leader(
        self, epoch: int, payloads: Sequence[bytes], control: bool = False, control_types: Sequence[int] = ()
    ) -> list[Entry]:
        """Append ``payloads`` in ``epoch``, assigning the next offsets, as one batch; returns the new
        entries. ``control_types`` gives each control entry's type (LEADER_CHANGE when empty)."""
        ...

    def append_as_follower(self, entries: Sequence[Entry]) -> None:
        """Append entries copied from the leader; the first must be at the log end offset."""
        ...

    def truncate_to(self, offset: int) -> None: ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch ``e <= epoch`` in the log and the offset where it ends (the start of
        the next epoch, or the log end offset if ``e`` is the last epoch). ``(start_offset, base
        epoch)`` if the log holds no entry of an epoch ``<= epoch`` (``(0, 0)`` for a log starting
        at 0)."""
        ...

    def flush(self) -> None: ...

    # ---------------------------------------------------------------- snapshots (KIP-630)
    # A snapshot holds the state machine's state after every entry below ``snapshot.offset``; its
    # id is (end offset, epoch of the last entry it covers). Snapshot bytes are opaque here.

    def start_offset(self) -> int:
        """The first offset the log still holds (0 until a prefix is deleted after a snapshot)."""
        ...

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        """The id of the newest complete snapshot, or None."""
        ...

    def snapshot_size(self, snapshot: OffsetAndEpoch) -> int:
        """Size in bytes of a stored snapshot (KeyError if there is none with that id)."""
        ...

    def read_snapshot(self, snapshot: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of the snapshot from ``position`` (KeyError if unknown)."""
        ...

    def create_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Store the state machine's snapshot of committed state at ``snapshot.offset``
        (an entry boundary at or below the high watermark, inside the log); durable on return."""
        ...

    def install_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """A follower stores a complete snapshot fetched from the leader and drops every log
        entry: the log restarts empty at ``snapshot.offset``, its last epoch ``snapshot.epoch``.
        Durable on return."""
        ...

    def delete_before(self, offset: int) -> None:
        """Drop entries below ``offset`` (at most the latest snapshot's offset): the log start
        moves up. Older snapshots than the latest may be deleted too."""
        ...


class InMemoryRaftLog:
    """A :class:`RaftLog` in a Python list (the entries from ``start_offset()`` on) and a dict of
    snapshots. ``crash()`` drops the unflushed suffix, as a process crash loses what was never
    fsync'd, and keeps every snapshot."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._start = 0
        self._base_epoch = 0
        self._flushed = 0
        # Leader-epoch cache: parallel lists of epochs and their start offsets (the first start is
        # at least the log start).
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}
        self._snapshot_ids: list[OffsetAndEpoch] = []  # ascending by (offset, epoch)

    # ------------------------------------------------------------------ queries

    def end_offset(self) -> int:
        return self._start + len(self._entries)

    def start_offset(self) -> int:
        return self._start

    def last_fetched_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else self._base_epoch

    def flushed_offset(self) -> int:
        return self._flushed

    def entries(self) -> list[Entry]:
        """The entries still held, from ``start_offset()`` on."""
        return list(self._entries)

    def _check_readable(self, offset: int) -> None:
        if offset < self._start:
            raise ValueError(f"offset {offset} is below the log start offset {self._start}")

    def read(self, start_offset: int, max_entries: int) -> Sequence[Entry]:
        self._check_readable(start_offset)
        i = start_offset - self._start
        return self._entries[i : i + max_entries]

    def entry(self, offset: int) -> Entry:
        self._check_readable(offset)
        if offset >= self.end_offset():
            raise IndexError(f"offset {offset} is at or beyond the log end offset {self.end_offset()}")
        return self._entries[offset - self._start]

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(self._start, self._base_epoch)
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epochs) else self.end_offset()
        return OffsetAndEpoch(end, self._epochs[i])

    # ------------------------------------------------------------------ appends, truncation

    def _push(self, entry: Entry) -> None:
        if entry.offset != self.end_offset():
            raise ValueError(
                f"entry at offset {entry.offset} does not continue the log at {self.end_offset()}"
            )
        last = self.last_fetched_epoch()
        if entry.epoch < last:
            raise ValueError(f"entry epoch {entry.epoch} below the log's last epoch {last}")
        if not self._epochs or entry.epoch != self._epochs[-1]:
            self._epochs.append(entry.epoch)
            self._epoch_starts.append(entry.offset)
        self._entries.append(entry)

    def append_as_leader(
        self, epoch: int, payloads: Sequence[bytes], control: bool = False, control_types: Sequence[int] = ()
    ) -> list[Entry]:
        out = []
        last = len(payloads) - 1
        for i, payload in enumerate(payloads):
            kind = control_types[i] if control_types else LEADER_CHANGE
            e = Entry(self.end_offset(), epoch, payload, control, i == last, kind)
            self._push(e)
            out.append(e)
        return out

    def append_as_follower(self, entries: Sequence[Entry]) -> None:
        for e in entries:
            self._push(e)

    def truncate_to(self, offset: int) -> None:
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset}, below the log start offset {self._start}")
        if offset >= self.end_offset():
            return
        del self._entries[offset - self._start :]
        self._flushed = min(self._flushed, offset)
        while self._epoch_starts and self._epoch_starts[-1] >= offset:
            self._epoch_starts.pop()
            self._epochs.pop()

    def flush(self) -> None:
        self._flushed = self.end_offset()

    def crash(self) -> None:
        """Lose every entry above the durable prefix (snapshots are durable and stay); then, as a
        log does when it is opened, restart empty at the latest snapshot if that lies ahead of the
        log."""
        self.truncate_to(max(self._flushed, self._start))
        latest = self.latest_snapshot()
        if latest is not None and (
            latest.offset > self.end_offset() or latest.epoch > self.last_fetched_epoch()
        ):
            self._restart_at(latest)

    # ------------------------------------------------------------------ snapshots (KIP-630)

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return self._snapshot_ids[-1] if self._snapshot_ids else None

    def snapshots(self) -> list[OffsetAndEpoch]:
        """The ids of every stored snapshot, oldest first."""
        return list(self._snapshot_ids)

    def snapshot_size(self, snapshot: OffsetAndEpoch) -> int:
        return len(self._snapshots[snapshot])

    def read_snapshot(self, snapshot: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of the snapshot from ``position`` (``b""`` at or past its end)."""
        data = self._snapshots[snapshot]
        if position < 0 or max_bytes < 0:
            raise ValueError(f"cannot read {max_bytes} bytes at position {position} of snapshot {snapshot}")
        return data[position : position + max_bytes]

    def _epoch_below(self, offset: int) -> int:
        """The epoch of the entry at ``offset - 1`` (``start_offset <= offset <= end_offset``)."""
        return self._base_epoch if offset == self._start else self.entry(offset - 1).epoch

    def _store(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        if snapshot not in self._snapshots:
            self._snapshots[snapshot] = bytes(data)
            bisect.insort(self._snapshot_ids, snapshot, key=lambda s: (s.offset, s.epoch))

    def _drop_snapshots_below(self, offset: int) -> None:
        for s in [s for s in self._snapshot_ids if s.offset < offset]:
            del self._snapshots[s]
            self._snapshot_ids.remove(s)

    def _restart_at(self, snapshot: OffsetAndEpoch) -> None:
        self._entries = []
        self._epochs, self._epoch_starts = [], []
        self._start = snapshot.offset
        self._base_epoch = snapshot.epoch
        self._flushed = snapshot.offset
        self._drop_snapshots_below(snapshot.offset)

    def create_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """ValueError unless ``snapshot.offset`` lies in [start_offset, end_offset] and its epoch is
        that of the entry below it. A snapshot with the same id already stored is kept."""
        start, end = self._start, self.end_offset()
        if not start <= snapshot.offset <= end:
            raise ValueError(f"snapshot {snapshot} is outside the log [{start}, {end}]")
        expected = self._epoch_below(snapshot.offset)
        if snapshot.epoch != expected:
            raise ValueError(
                f"snapshot {snapshot} names epoch {snapshot.epoch}, but the entry below offset "
                f"{snapshot.offset} has epoch {expected}"
            )
        self._store(snapshot, data)

    def install_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """ValueError for a negative id or one older than the latest snapshot stored."""
        if snapshot.offset < 0 or snapshot.epoch < 0:
            raise ValueError(f"snapshot id {snapshot} is negative")
        latest = self.latest_snapshot()
        if latest is not None and (snapshot.offset, snapshot.epoch) < (latest.offset, latest.epoch):
            raise ValueError(f"snapshot {snapshot} is older than the latest stored snapshot {latest}")
        self._store(snapshot, data)
        self._restart_at(snapshot)

    def delete_before(self, offset: int) -> None:
        """ValueError if ``offset`` is above the latest snapshot's offset or the log end. An offset
        at or below the start deletes nothing but the snapshots below the start."""
        latest = self.latest_snapshot()
        if latest is None or offset > latest.offset:
            raise ValueError(f"cannot delete the log before {offset}: the latest snapshot is {latest}")
        end = self.end_offset()
        if offset > end:
            raise ValueError(f"cannot delete the log before {offset}, beyond its end {end}")
        if offset > self._start:
            self._base_epoch = self._epoch_below(offset)
            del self._entries[: offset - self._start]
            self._start = offset
            if offset >= end:
                self._epochs, self._epoch_starts = [], []
            else:
                i = bisect.bisect_right(self._epoch_starts, offset) - 1
                del self._epochs[:i], self._epoch_starts[:i]
                self._epoch_starts[0] = offset
            self._flushed = max(self._flushed, offset)
        self._drop_snapshots_below(self._start)
