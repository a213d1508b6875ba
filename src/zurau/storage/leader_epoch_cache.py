"""The leader-epoch cache of one partition (Kafka's ``LeaderEpochFileCache``).

For every leader epoch that wrote data into the partition, the cache remembers the first offset
written in that epoch. Followers use it after a leader change (OffsetForLeaderEpoch,
:meth:`LeaderEpochCache.end_offset_for`) to find where their log diverges from the new leader's
and truncate there.

File ``leader-epoch-checkpoint`` in the partition directory, Kafka's text format::

    0              <- version
    2              <- number of entries
    0 0            <- "epoch start_offset", one line per entry, ascending
    3 1234

Invariants:
* entries are strictly increasing in both epoch and start offset; adding an entry removes every
  entry that would break that (an epoch >= the new one, or a start offset >= the new one), as
  Kafka does when a follower's log is overwritten by a new leader;
* every entry's start offset is < the log end offset and >= the log start offset (the log keeps
  this by calling ``truncate_from_end`` / ``truncate_from_start`` when it truncates or moves its
  start, and again when it is loaded);
* a new entry is written to the file (atomically, fsynced: ``checkpoint.atomic_write``) before
  ``assign`` returns, so the file never lacks an entry for data in the log; truncations rewrite
  it without fsync (stale entries in the file are truncated again when the log is loaded);
* batches without a leader epoch (``partitionLeaderEpoch`` -1) are ignored.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

from zurau.protocol.errors import KafkaStorageError
from zurau.storage.checkpoint import atomic_write, checkpoint_error, encode_checkpoint, parse_checkpoint

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

log = logging.getLogger("zurau.storage.leader_epoch_cache")


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path: Path) -> list[EpochEntry] | None:
    """The entries of a ``leader-epoch-checkpoint`` file; None if it does not exist.

    A malformed file raises KafkaStorageError naming the file and line.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse_leader_epoch_checkpoint(data, path)


def parse_leader_epoch_checkpoint(data: bytes, path: Path | str) -> list[EpochEntry]:
    """The entries of ``leader-epoch-checkpoint`` bytes (the inverse of
    :func:`encode_leader_epoch_checkpoint`; a remote segment carries a copy). Malformed bytes
    raise KafkaStorageError naming ``path`` (where they come from) and the line."""
    out = []
    for lineno, (epoch, start_offset) in parse_checkpoint(data, 2, "epoch start_offset", path):
        try:
            out.append(EpochEntry(int(epoch), int(start_offset)))
        except ValueError:
            raise checkpoint_error(path, lineno, "epoch or offset is not an integer") from None
    return out


def encode_leader_epoch_checkpoint(entries: list[EpochEntry]) -> bytes:
    return encode_checkpoint([f"{e.epoch} {e.start_offset}" for e in entries])


class LeaderEpochCache:
    """Epoch -> start offset entries of one partition, persisted in ``leader-epoch-checkpoint``.

    Not thread-safe; the owning PartitionLog serialises calls. The hot-path check
    (:meth:`maybe_assign` with the current epoch) is two integer comparisons.
    """

    __slots__ = ("path", "_epochs", "_offsets", "latest_epoch")

    def __init__(self, directory: Path, entries: list[EpochEntry] | None = None) -> None:
        self.path = directory / LEADER_EPOCH_CHECKPOINT
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        # The latest epoch with data, or -1 (UNDEFINED_EPOCH): a plain attribute, read per append.
        self.latest_epoch = UNDEFINED_EPOCH
        for e in entries or ():
            self._add(e.epoch, e.start_offset)

    @classmethod
    def load(cls, directory: Path) -> tuple[LeaderEpochCache, bool]:
        """Read the checkpoint of ``directory``: ``(cache, found)``.

        ``found`` is False when the file is missing or unreadable (it is then rebuilt from the
        log by the caller). Entries that break monotonicity are dropped as ``assign`` would.
        """
        path = directory / LEADER_EPOCH_CHECKPOINT
        try:
            entries = read_leader_epoch_checkpoint(path)
        except KafkaStorageError as e:
            log.warning("%s; rebuilding it from the log", e)
            entries = None
        return cls(directory, entries or []), entries is not None

    # ------------------------------------------------------------------ queries
    @property
    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, o) for e, o in zip(self._epochs, self._offsets, strict=True)]

    def __len__(self) -> int:
        return len(self._epochs)

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[0], self._offsets[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote ``offset`` (the latest entry starting at or before it), or -1."""
        i = bisect_right(self._offsets, offset)
        return self._epochs[i - 1] if i else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end_offset)`` for ``requested_epoch``.

        ``epoch`` is the largest known epoch <= the requested one and ``end_offset`` the start
        offset of the first epoch after it, or ``log_end_offset`` when the requested epoch is
        the latest. A requested epoch of -1, or one above every known epoch, gives (-1, -1). A
        requested epoch below every known epoch gives (requested epoch, start of the first
        known epoch): that data is gone from this log, so a follower restarts from there.
        """
        epochs = self._epochs
        if requested_epoch == UNDEFINED_EPOCH or not epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(epochs, requested_epoch)  # first entry with epoch > requested
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._offsets[0]
        return epochs[higher - 1], self._offsets[higher]

    # ------------------------------------------------------------------ changes
    def _add(self, epoch: int, start_offset: int) -> bool:
        """Add an entry in memory (dropping the ones it contradicts); True if anything changed."""
        if epoch < 0 or start_offset < 0:
            return False
        epochs, offsets = self._epochs, self._offsets
        if epochs and epoch == epochs[-1] and start_offset >= offsets[-1]:
            return False
        while epochs and (epochs[-1] >= epoch or offsets[-1] >= start_offset):
            removed = (epochs.pop(), offsets.pop())
            if removed[1] != start_offset:
                log.warning(
                    "%s: new epoch entry (%d, %d) truncates conflicting entry %s",
                    self.path.parent.name,
                    epoch,
                    start_offset,
                    removed,
                )
        epochs.append(epoch)
        offsets.append(start_offset)
        self.latest_epoch = epoch
        return True

    def maybe_assign(self, epoch: int, start_offset: int, *, write: bool = True) -> bool:
        """Record that ``epoch`` wrote data starting at ``start_offset`` (called on every append).

        A no-op unless ``epoch`` differs from the latest one (or starts earlier than it). With
        ``write`` a new entry is checkpointed durably (fsync) before returning. True if the
        entries changed.
        """
        if epoch == self.latest_epoch and start_offset >= self._offsets[-1]:
            return False
        if not self._add(epoch, start_offset):
            return False
        if write:
            self.write(fsync=True)
        return True

    def truncate_from_end(self, end_offset: int, *, write: bool = True) -> bool:
        """Remove entries starting at or after ``end_offset`` (the log was truncated there).

        True if any entry went; the file is then rewritten (without fsync) when ``write``.
        """
        changed = False
        while self._offsets and self._offsets[-1] >= end_offset:
            self._epochs.pop()
            self._offsets.pop()
            changed = True
        self.latest_epoch = self._epochs[-1] if self._epochs else UNDEFINED_EPOCH
        if changed and write:
            self.write(fsync=False)
        return changed

    def truncate_from_start(self, start_offset: int, *, write: bool = True) -> bool:
        """The log now starts at ``start_offset``: drop entries wholly below it and move the
        entry that covers it to start there (an entry starting exactly there is kept).

        True if the entries changed; the file is then rewritten (without fsync) when ``write``.
        """
        i = bisect_right(self._offsets, start_offset)  # entries [0, i) start at or before it
        if i == 0 or (i == 1 and self._offsets[0] == start_offset):
            return False
        covering = self._epochs[i - 1]
        del self._epochs[:i], self._offsets[:i]
        self._epochs.insert(0, covering)
        self._offsets.insert(0, start_offset)
        if write:
            self.write(fsync=False)
        return True

    def clear(self) -> None:
        """Forget every entry (the log was emptied) and checkpoint the empty cache."""
        self._epochs.clear()
        self._offsets.clear()
        self.latest_epoch = UNDEFINED_EPOCH
        self.write(fsync=False)

    def write(self, *, fsync: bool = True) -> None:
        """Replace the checkpoint file with the current entries (atomically)."""
        atomic_write(self.path, encode_leader_epoch_checkpoint(self.entries), fsync=fsync)
