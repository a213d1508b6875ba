"""The replicated log as Raft sees it: the :class:`RaftLog` interface and an in-memory
implementation for tests and the simulation.

Invariants an implementation keeps:

* offsets are dense from 0; entry epochs never decrease along the log;
* ``end_offset_for_epoch`` answers from a leader-epoch cache (Kafka's ``LeaderEpochFileCache``);
* ``flush()`` makes every entry below the log end offset durable; ``flushed_offset()`` is the end
  of the durable prefix. A crash keeps exactly the durable prefix, so Raft counts only flushed
  entries as replicated (a follower flushes before it fetches again; the leader counts its own
  flushed offset towards the high watermark);
* ``truncate_to(offset)`` removes every entry at or above ``offset`` (durably, at once).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Protocol

from zurau.raft.messages import Entry, OffsetAndEpoch


class RaftLog(Protocol):
    def end_offset(self) -> int:
        """The offset the next entry gets (Kafka's log end offset)."""
        ...

    def last_fetched_epoch(self) -> int:
        """The epoch of the last entry, 0 for an empty log."""
        ...

    def flushed_offset(self) -> int:
        """End of the durable prefix."""
        ...

    def read(self, start_offset: int, max_entries: int) -> Sequence[Entry]:
        """Up to ``max_entries`` entries from ``start_offset``."""
        ...

    def entry(self, offset: int) -> Entry: ...

    def append_as_leader(self, epoch: int, payloads: Sequence[bytes], control: bool = False) -> list[Entry]:
        """Append ``payloads`` in ``epoch``, assigning the next offsets; returns the new entries."""
        ...

    def append_as_follower(self, entries: Sequence[Entry]) -> None:
        """Append entries copied from the leader; the first must be at the log end offset."""
        ...

    def truncate_to(self, offset: int) -> None: ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch ``e <= epoch`` in the log and the offset where it ends (the start of
        the next epoch, or the log end offset if ``e`` is the last epoch). ``(0, 0)`` if the log
        holds no entry of an epoch ``<= epoch``."""
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
    """A :class:`RaftLog` in a Python list. ``crash()`` drops the unflushed suffix, as a process
    crash loses what was never fsync'd."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._flushed = 0
        # Leader-epoch cache: parallel lists of epochs and their start offsets.
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []

    def end_offset(self) -> int:
        return len(self._entries)

    def last_fetched_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else 0

    def flushed_offset(self) -> int:
        return self._flushed

    def entries(self) -> list[Entry]:
        return list(self._entries)

    def read(self, start_offset: int, max_entries: int) -> Sequence[Entry]:
        return self._entries[start_offset : start_offset + max_entries]

    def entry(self, offset: int) -> Entry:
        return self._entries[offset]

    def _push(self, entry: Entry) -> None:
        if entry.offset != len(self._entries):
            raise ValueError(
                f"entry at offset {entry.offset} does not continue the log at {len(self._entries)}"
            )
        last = self.last_fetched_epoch()
        if entry.epoch < last:
            raise ValueError(f"entry epoch {entry.epoch} below the log's last epoch {last}")
        if not self._epochs or entry.epoch != self._epochs[-1]:
            self._epochs.append(entry.epoch)
            self._epoch_starts.append(entry.offset)
        self._entries.append(entry)

    def append_as_leader(self, epoch: int, payloads: Sequence[bytes], control: bool = False) -> list[Entry]:
        out = []
        last = len(payloads) - 1
        for i, payload in enumerate(payloads):
            e = Entry(len(self._entries), epoch, payload, control, i == last)
            self._push(e)
            out.append(e)
        return out

    def append_as_follower(self, entries: Sequence[Entry]) -> None:
        for e in entries:
            self._push(e)

    def truncate_to(self, offset: int) -> None:
        if offset >= len(self._entries):
            return
        del self._entries[offset:]
        self._flushed = min(self._flushed, offset)
        while self._epoch_starts and self._epoch_starts[-1] >= offset:
            self._epoch_starts.pop()
            self._epochs.pop()

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(0, 0)
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epochs) else len(self._entries)
        return OffsetAndEpoch(end, self._epochs[i])

    def flush(self) -> None:
        self._flushed = len(self._entries)

    def crash(self) -> None:
        """Lose every entry above the durable prefix."""
        self.truncate_to(self._flushed)
