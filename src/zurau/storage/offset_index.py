"""The sparse offset index of one segment (``%020d.index``), as in Kafka.

On-disk format: a flat array of 8-byte big-endian entries, no header::

    relative_offset  int32   last offset of an indexed batch - segment base offset
    position         int32   byte position of that batch in the segment's .log file

Invariants:
* entries are strictly increasing in both relative offset and position;
* the segment adds an entry for a batch when more than ``index.interval.bytes`` of log were
  appended since the previous entry (so the index is sparse: at most one entry per interval);
* the entry for a batch names the batch's *last* offset and its *start* position (Kafka's choice):
  the batch holding offset ``o`` starts at or after ``lookup(o).position``, and scanning batch
  headers forward from there finds it within about one index interval of bytes;
* at most ``segment.index.bytes // 8`` entries; a full index rolls the segment.

See :mod:`zurau.storage.abstract_index` for the in-memory copy and write discipline.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

from zurau.storage.abstract_index import AbstractIndex, CorruptIndexError

_ENTRY = struct.Struct(">ii")


class OffsetPosition(NamedTuple):
    offset: int  # absolute offset
    position: int


def decode_entries(data: bytes) -> tuple[array, array]:
    """The relative offsets and positions of offset-index bytes (a torn trailing entry is
    ignored), as two ``array('i')`` columns."""
    both = array("i")
    both.frombytes(data[: len(data) - len(data) % _ENTRY.size])
    if sys.byteorder == "little":
        both.byteswap()
    return array("i", both[0::2]), array("i", both[1::2])


def _floor(keys: array, values: array, base_offset: int, offset: int) -> OffsetPosition:
    i = bisect_right(keys, offset - base_offset) - 1
    if i < 0:
        return OffsetPosition(base_offset, 0)
    return OffsetPosition(base_offset + keys[i], values[i])


def lookup_bytes(data: bytes, base_offset: int, offset: int) -> OffsetPosition:
    """:meth:`OffsetIndex.lookup` over the bytes of an index file (a remote segment's, fetched
    whole): the entry with the largest offset <= ``offset``, else ``(base_offset, 0)``."""
    keys, values = decode_entries(data)
    return _floor(keys, values, base_offset, offset)


class OffsetIndex(AbstractIndex):
    """Relative offset -> file position, sparse; lookups by offset and by position."""

    entry_size = 8
    key_typecode = "i"
    value_typecode = "i"

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)

    def _decode(self, data: bytes) -> tuple[array, array]:
        return decode_entries(data)

    def _encode(self, key: int, value: int) -> bytes:
        return _ENTRY.pack(key, value)

    def sanity_check(self, log_size: int) -> None:
        """Cheap checks done on open (Kafka's ``sanityCheck``); CorruptIndexError on failure."""
        if self._file_size % self.entry_size:
            raise CorruptIndexError(f"offset index {self.path} has a partial trailing entry")
        raw = self._read_last_raw()
        if raw is None:
            return
        rel, pos = _ENTRY.unpack(raw)
        if rel < 0 or pos < 0 or pos >= max(log_size, 1):
            raise CorruptIndexError(f"offset index {self.path} last entry ({rel}, {pos}) is out of range")

    def append(self, offset: int, position: int) -> None:
        """Add an entry for the batch ending at ``offset`` and starting at ``position``."""
        rel = offset - self.base_offset
        keys, values = self._load()
        if keys and (rel <= keys[-1] or position <= values[-1]):
            raise ValueError(f"offset index entry ({offset}, {position}) is not after the last entry")
        self._append_entry(rel, position)

    def last_entry(self) -> OffsetPosition:
        """The last entry, or ``(base_offset, 0)`` for an empty index."""
        if self._keys is None:
            raw = self._read_last_raw()
            if raw is None:
                return OffsetPosition(self.base_offset, 0)
            rel, pos = _ENTRY.unpack(raw)
            return OffsetPosition(self.base_offset + rel, pos)
        keys, values = self._load()
        if not keys:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + keys[-1], values[-1])

    def lookup(self, offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``offset``, else ``(base_offset, 0)``."""
        keys, values = self._load()
        return _floor(keys, values, self.base_offset, offset)

    def lookup_position(self, position: int) -> OffsetPosition:
        """The entry with the largest position <= ``position``, else ``(base_offset, 0)``."""
        keys, values = self._load()
        i = bisect_right(values, position) - 1
        if i < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + keys[i], values[i])

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        keys, _ = self._load()
        self.truncate_entries(bisect_right(keys, offset - self.base_offset - 1))

    def truncate_to_position(self, position: int) -> None:
        """Remove every entry whose position is >= ``position``."""
        _, values = self._load()
        self.truncate_entries(bisect_right(values, position - 1))
