"""The sparse time index of one segment (``%020d.timeindex``), as in Kafka.

On-disk format: a flat array of 12-byte big-endian entries, no header::

    timestamp        int64   largest batch max_timestamp seen in the segment so far
    relative_offset  int32   last offset of the batch where that timestamp was first reached
                             - segment base offset

Invariants:
* timestamps are strictly increasing and offsets non-decreasing: ``maybe_append`` ignores an
  entry whose timestamp is not larger than the last one (Kafka's monotonic time index);
* an entry ``(T, O)`` means every record at an offset in an earlier batch than the one ending at
  ``O`` has a timestamp < ``T``; so the first record with timestamp >= ``t`` lies in or after the
  batch of ``lookup(t).offset``;
* entries are added at the same points as offset-index entries, plus one final entry with the
  segment's largest timestamp when the segment becomes inactive (roll) or is closed, so the last
  entry of an inactive segment is the segment's largest timestamp;
* at most ``segment.index.bytes // 12`` entries (the final entry may exceed it by one).

See :mod:`zurau.storage.abstract_index` for the in-memory copy and write discipline.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import NamedTuple

from zurau.storage.abstract_index import AbstractIndex, CorruptIndexError

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int  # absolute offset


class TimeIndex(AbstractIndex):
    """Timestamp -> offset, sparse and monotonic."""

    entry_size = 12
    key_typecode = "q"
    value_typecode = "i"

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        super().__init__(path, base_offset, max_entries)

    def _decode(self, data: bytes) -> tuple[array, array]:
        ts = array("q")
        rel = array("i")
        for t, o in _ENTRY.iter_unpack(data):
            ts.append(t)
            rel.append(o)
        return ts, rel

    def _encode(self, key: int, value: int) -> bytes:
        return _ENTRY.pack(key, value)

    def sanity_check(self) -> None:
        """Cheap checks done on open; CorruptIndexError on failure."""
        if self._file_size % self.entry_size:
            raise CorruptIndexError(f"time index {self.path} has a partial trailing entry")
        raw = self._read_last_raw()
        if raw is not None and _ENTRY.unpack(raw)[1] < 0:
            raise CorruptIndexError(f"time index {self.path} last entry has a negative offset")

    def last_entry(self) -> TimestampOffset:
        """The last entry, or ``(-1, base_offset)`` for an empty index."""
        if self._keys is None:
            raw = self._read_last_raw()
            if raw is None:
                return TimestampOffset(NO_TIMESTAMP, self.base_offset)
            t, rel = _ENTRY.unpack(raw)
            return TimestampOffset(t, self.base_offset + rel)
        keys, values = self._load()
        if not keys:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(keys[-1], self.base_offset + values[-1])

    def last_entry_on_disk(self) -> TimestampOffset | None:
        """The file's last whole entry, whatever the in-memory copy holds (None: no entry)."""
        raw = self._read_last_raw()
        if raw is None:
            return None
        t, rel = _ENTRY.unpack(raw)
        return TimestampOffset(t, self.base_offset + rel)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Append ``(timestamp, offset)`` if ``timestamp`` is larger than the last entry's.

        Returns True if an entry was added. A full index (and not ``skip_full_check``) adds nothing.
        """
        keys, values = self._load()
        rel = offset - self.base_offset
        if keys and (timestamp <= keys[-1] or rel < values[-1]):
            return False
        if timestamp < 0 or (not skip_full_check and self.is_full):
            return False
        self._append_entry(timestamp, rel)
        return True

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``timestamp``, else ``(-1, base_offset)``."""
        keys, values = self._load()
        i = bisect_right(keys, timestamp) - 1
        if i < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(keys[i], self.base_offset + values[i])

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        _, values = self._load()
        self.truncate_entries(bisect_left(values, offset - self.base_offset))
