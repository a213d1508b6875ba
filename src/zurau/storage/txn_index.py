"""The aborted-transaction index (Kafka's ``.txnindex`` files).

One file per segment, ``%020d.txnindex`` named like the segment that holds the ABORT marker,
holding fixed 34-byte big-endian entries, oldest first::

    version            int16  (0)
    producer_id        int64
    first_offset       int64  first offset of the aborted transaction in this partition
    last_offset        int64  offset of the ABORT marker
    last_stable_offset int64  the LSO right after the marker, as Kafka computes it: the first
                              offset of the oldest other open transaction, else last_offset + 1
                              (independent of the high watermark, so replicas index the same)

A read_committed fetch asks which aborted transactions overlap the offsets it returns, so that
the consumer can drop their records (Fetch ``aborted_transactions``). The index keeps every entry
in memory sorted by ``last_offset`` (markers are appended in offset order), so that question is a
bisect plus a short scan.

Invariants: entries are ordered by ``last_offset``; an entry lives in the file of the segment that
contains its ``last_offset``; entries at or above the log end offset never exist (truncation
removes them and recovery recomputes entries above the replay start from the log itself).
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left
from itertools import takewhile
from pathlib import Path
from typing import NamedTuple

from zurau.storage.checkpoint import atomic_write

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entries(entries: list[AbortedTxn]) -> bytes:
    """The bytes of a ``.txnindex`` file holding ``entries`` (in order)."""
    return b"".join(_ENTRY.pack(0, *e) for e in entries)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """The entries of ``.txnindex`` bytes (the inverse of :func:`encode_entries`). A torn trailing
    entry, or an entry of a version other than 0, ends the list: what follows is not trusted."""
    out = []
    for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != 0:
            break
        out.append(AbortedTxn(pid, first, last, lso))
    return out


def _file(directory: Path, base: int) -> Path:
    return directory / f"{base:020d}{TXN_INDEX_SUFFIX}"


class AbortedTxnIndex:
    """All aborted transactions of one partition, persisted in per-segment files."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._entries: list[AbortedTxn] = []
        self._bases: list[int] = []  # segment base of each entry, parallel to _entries
        self._last_offsets: list[int] = []  # for bisect

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    # ------------------------------------------------------------------ load / persist
    def load(self, live_bases: list[int], keep_below: int) -> None:
        """Read every file; drop files of missing segments and entries at or above ``keep_below``.

        Torn trailing bytes (a partial entry after a crash) are ignored and trimmed.
        """
        live = set(live_bases)
        found: list[tuple[int, AbortedTxn]] = []
        for name in os.listdir(self.directory):
            if not name.endswith(TXN_INDEX_SUFFIX):
                continue
            stem = name[: -len(TXN_INDEX_SUFFIX)]
            path = self.directory / name
            if not stem.isdigit() or int(stem) not in live:
                path.unlink(missing_ok=True)
                continue
            base = int(stem)
            data = path.read_bytes()
            # Up to a corrupt entry, or one that recovery recomputes from the log.
            kept = list(takewhile(lambda e: e.last_offset < keep_below, decode_entries(data)))
            if len(kept) * ENTRY_SIZE != len(data):
                self._rewrite(base, kept)
            found.extend((base, e) for e in kept)
        found.sort(key=lambda be: be[1].last_offset)
        self._bases = [b for b, _e in found]
        self._entries = [e for _b, e in found]
        self._last_offsets = [e.last_offset for e in self._entries]

    def _rewrite(self, base: int, entries: list[AbortedTxn]) -> None:
        path = _file(self.directory, base)
        if not entries:
            path.unlink(missing_ok=True)
            return
        atomic_write(path, encode_entries(entries), fsync=False)

    # ------------------------------------------------------------------ changes
    def append(self, entry: AbortedTxn, segment_base: int) -> None:
        if self._last_offsets and entry.last_offset < self._last_offsets[-1]:
            raise ValueError(f"aborted txn at {entry.last_offset} is below the last indexed marker")
        fd = os.open(_file(self.directory, segment_base), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, _ENTRY.pack(0, *entry))
        finally:
            os.close(fd)
        self._entries.append(entry)
        self._bases.append(segment_base)
        self._last_offsets.append(entry.last_offset)

    def truncate_from(self, offset: int) -> None:
        """Forget entries whose marker is at or above ``offset`` (log truncation)."""
        i = bisect_left(self._last_offsets, offset)
        if i == len(self._entries):
            return
        touched = set(self._bases[i:])
        del self._entries[i:], self._bases[i:], self._last_offsets[i:]
        for base in touched:
            self._rewrite(base, [e for b, e in zip(self._bases, self._entries, strict=True) if b == base])

    def drop_segment(self, base: int) -> None:
        """The segment ``base`` was deleted: its entries and file go too."""
        keep = [i for i, b in enumerate(self._bases) if b != base]
        if len(keep) != len(self._bases):
            self._entries = [self._entries[i] for i in keep]
            self._bases = [self._bases[i] for i in keep]
            self._last_offsets = [self._last_offsets[i] for i in keep]
        _file(self.directory, base).unlink(missing_ok=True)

    def replace_segments(self, old_bases: list[int], new_base: int, entries: list[AbortedTxn]) -> None:
        """The log cleaner swapped segment ``new_base`` in for ``old_bases``: forget their entries
        and hold ``entries`` for the new one. Files are not touched (the swap installed the new
        segment's file and removed the old ones)."""
        old = set(old_bases)
        kept = [(b, e) for b, e in zip(self._bases, self._entries, strict=True) if b not in old]
        kept.extend((new_base, e) for e in entries)
        kept.sort(key=lambda be: be[1].last_offset)
        self._bases = [b for b, _e in kept]
        self._entries = [e for _b, e in kept]
        self._last_offsets = [e.last_offset for e in self._entries]

    def delete_all(self) -> None:
        for base in set(self._bases):
            _file(self.directory, base).unlink(missing_ok=True)
        self._entries, self._bases, self._last_offsets = [], [], []

    # ------------------------------------------------------------------ queries
    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound): marker at or after the
        fetch offset and first offset below the upper bound."""
        out = []
        for i in range(bisect_left(self._last_offsets, fetch_offset), len(self._entries)):
            e = self._entries[i]
            if e.first_offset < upper_bound:
                out.append(e)
        return out
