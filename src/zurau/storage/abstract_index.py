"""Common machinery of the segment index files (Kafka's ``AbstractIndex``).

An index file is a flat array of fixed-size big-endian entries, sorted ascending by key, with no
header. Kafka preallocates ``segment.index.bytes`` and memory-maps the file; Zurau instead keeps
the file exactly ``entries * entry_size`` bytes long, appends with ``os.write`` on an ``O_APPEND``
descriptor, and serves lookups from an in-memory copy (two ``array.array`` columns searched with
``bisect``). The in-memory copy is loaded lazily on first use, so inactive segments cost no memory
until they are read.

Invariants:
* the file length is a multiple of ``entry_size`` (a torn trailing partial entry makes the index
  fail ``sanity_check`` and it is rebuilt from the log);
* keys are strictly increasing (offset index) or strictly increasing timestamps with
  non-decreasing offsets (time index);
* entries appended since the last ``write_pending`` live only in memory; the segment writes them
  right after the log bytes of the same append. An index is only a lookup accelerator: recovery
  rebuilds it from the log, so a lost index entry never loses data.

Descriptors: an index keeps an append descriptor open between writes, but the process keeps at
most ``max_open_writers()`` of them (a quarter of the soft ``RLIMIT_NOFILE``): opening one more
closes the least recently written one, which reopens on its next write. 10,000 partitions being
written would otherwise hold 20,000 index descriptors on top of their 10,000 segment files. The
descriptors are opened, written, duplicated and closed under one process-wide lock, because
brokers in several threads of one process share the bound.
"""

from __future__ import annotations

import os
import resource
import threading
from abc import ABC, abstractmethod
from array import array
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from zurau.protocol.errors import KafkaStorageError
from zurau.storage.checkpoint import atomic_write

if TYPE_CHECKING:
    # The error classes are built at runtime (protocol.errors._define); type the base as their root.
    from zurau.protocol.errors import KafkaError as _StorageErrorBase
else:
    _StorageErrorBase = KafkaStorageError


class CorruptIndexError(_StorageErrorBase):
    """An index file failed its sanity check; the caller rebuilds it from the log."""


_UNREAD = object()  # AbstractIndex._last_raw before the file's last entry was read
_writers_lock = threading.Lock()
_writers: OrderedDict[AbstractIndex, None] = OrderedDict()  # open append descriptors, LRU first
_max_writers: int | None = None


def max_open_writers() -> int:
    """How many index append descriptors the process keeps open at most."""
    global _max_writers
    if _max_writers is None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        _max_writers = 65536 if soft == resource.RLIM_INFINITY else max(64, min(soft // 4, 65536))
    return _max_writers


def set_max_open_writers(n: int | None) -> None:
    """Change the bound (None: derive it from the limit again); closes writers beyond it."""
    global _max_writers
    with _writers_lock:
        _max_writers = n
        limit = max_open_writers()
        while len(_writers) > limit:
            _writers.popitem(last=False)[0]._drop_writer()


def open_writers() -> int:
    """Index append descriptors open now (all indexes of the process)."""
    return len(_writers)


class AbstractIndex(ABC):
    """Base class: file handling, lazy loading, pending writes and truncation."""

    entry_size: int = 0
    key_typecode: str = "i"
    value_typecode: str = "i"

    def __init__(self, path: Path, base_offset: int, max_entries: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._keys: array | None = None
        self._values: array | None = None
        self._pending = bytearray()
        self._fd: int | None = None
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            size = 0
        self._file_entries = size // self.entry_size if self.entry_size else 0
        self._file_size = size
        self._last_raw: bytes | None | object = _UNREAD  # not read yet

    # -- loading ---------------------------------------------------------------------------------

    @abstractmethod
    def _decode(self, data: bytes) -> tuple[array, array]: ...

    @abstractmethod
    def _encode(self, key: int, value: int) -> bytes: ...

    def _load(self) -> tuple[array, array]:
        if self._keys is None or self._values is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            usable = len(data) - len(data) % self.entry_size
            self._keys, self._values = self._decode(data[:usable])
            self._file_entries = len(self._keys)
        return self._keys, self._values

    def unload(self) -> None:
        """Drop the in-memory copy (it is reloaded from the file on the next lookup)."""
        if not self._pending:
            self._keys = self._values = None

    @property
    def file_size(self) -> int:
        """Bytes of entries in the file (0 also when the file does not exist)."""
        return self._file_size

    @property
    def entries(self) -> int:
        if self._keys is not None:
            return len(self._keys)
        return self._file_entries

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def _read_last_raw(self) -> bytes | None:
        """The last entry's bytes straight from the file (no full load); read once until the
        file changes (opening a segment asks for it several times)."""
        if self._last_raw is not _UNREAD:
            return self._last_raw  # type: ignore[return-value]
        raw = None
        if self._file_size >= self.entry_size:
            with open(self.path, "rb") as f:
                f.seek(self._file_entries * self.entry_size - self.entry_size)
                raw = f.read(self.entry_size)
        self._last_raw = raw
        return raw

    # -- writing ---------------------------------------------------------------------------------

    def _append_entry(self, key: int, value: int) -> None:
        keys, values = self._load()
        keys.append(key)
        values.append(value)
        self._pending += self._encode(key, value)

    def write_pending(self) -> None:
        """Hand entries appended since the last call to the OS (one ``os.write``)."""
        if not self._pending:
            return
        view = memoryview(self._pending)
        with _writers_lock:
            fd = self._fd
            if fd is None:
                fd = self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
                _writers[self] = None
                if len(_writers) > max_open_writers():
                    _writers.popitem(last=False)[0]._drop_writer()
            else:
                _writers.move_to_end(self)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        self._file_size += len(self._pending)
        self._last_raw = _UNREAD  # the file changed
        self._file_entries = self.entries
        self._pending = bytearray()

    def start_rebuild(self) -> None:
        """Empty the in-memory entries for a rebuild, leaving the file as it is until
        ``rewrite`` (so a rebuild that reproduces the file writes nothing)."""
        self.close_writer()
        self._keys = array(self.key_typecode)
        self._values = array(self.value_typecode)
        self._pending = bytearray()

    def rewrite(self) -> None:
        """Replace the file with the in-memory entries (used after a rebuild). A file that
        already holds exactly those bytes is left alone: after a ``kill -9`` the rebuilt index
        of a segment is almost always the one on disk, and replacing a file (create, write,
        rename) costs far more than reading it, which recovery of 10,000 partitions feels."""
        keys, values = self._load()
        data = bytearray()
        for k, v in zip(keys, values, strict=True):
            data += self._encode(k, v)
        self._pending = bytearray()  # in ``data``: not to be appended to the old file
        self.close_writer()
        if not self._file_holds(data):
            atomic_write(self.path, data, fsync=False)
        self._file_size = len(data)
        self._last_raw = _UNREAD  # the file changed
        self._file_entries = len(keys)

    def _file_holds(self, data: bytes | bytearray) -> bool:
        """Whether the index file holds exactly ``data`` (an absent file holds no entries: a
        new partition's first segment creates its index files with their first entry)."""
        try:
            if os.stat(self.path).st_size != len(data):
                return False
            return not data or self.path.read_bytes() == data
        except FileNotFoundError:
            return not data

    def truncate_entries(self, n: int) -> None:
        """Keep only the first ``n`` entries, in memory and on disk."""
        keys, values = self._load()
        if n >= len(keys):
            return
        self.write_pending()
        del keys[n:]
        del values[n:]
        os.truncate(self.path, n * self.entry_size)
        self._file_size = n * self.entry_size
        self._last_raw = _UNREAD  # the file changed
        self._file_entries = n

    def reset(self) -> None:
        """Remove every entry (the file becomes empty)."""
        self._keys = array(self.key_typecode)
        self._values = array(self.value_typecode)
        self._pending = bytearray()
        # One open (creating or truncating) instead of a stat and a touch or truncate: a new
        # partition creates two index files, and thousands of partitions are created at once.
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644))
        self._file_size = 0
        self._last_raw = _UNREAD  # the file changed
        self._file_entries = 0

    def open_for_sync(self) -> int | None:
        """Hand pending entries to the OS and return a private descriptor of the file (a dup of
        the append descriptor, else a fresh read-only one), for a flush plan to fsync and close
        on another thread (see log_flush.py); None if the file does not exist. Call it on the
        thread that owns the index."""
        self.write_pending()
        with _writers_lock:
            if self._fd is not None:
                return os.dup(self._fd)
        try:
            return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None

    def flush(self) -> None:
        """Write pending entries and fsync the file (on the thread that owns the index)."""
        fd = self.open_for_sync()
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close_writer(self) -> None:
        """Write pending entries and close the append descriptor (reads keep working)."""
        self.write_pending()
        with _writers_lock:
            self._drop_writer()

    def _drop_writer(self) -> None:
        """Close the append descriptor (pending entries stay pending); hold _writers_lock."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        _writers.pop(self, None)

    def close(self) -> None:
        self.close_writer()
        self._keys = self._values = None

    def delete(self) -> None:
        self._pending = bytearray()
        with _writers_lock:
            self._drop_writer()
        self.path.unlink(missing_ok=True)
        self._last_raw = _UNREAD
        self._keys = self._values = None
