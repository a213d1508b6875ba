"""A bounded cache of what readers fetch from the remote tier: index files and segment chunks.

Kafka's ``RemoteIndexCache`` keeps the offset, time and transaction indexes of recently read
remote segments, bounded by ``remote.log.index.file.cache.total.size.bytes`` (default 1 GiB). This
cache keeps those and also fixed-size *chunks* of the segments' ``.log`` bytes (chunk ``i`` is
bytes ``[i * chunk_size, (i + 1) * chunk_size)``), so consumers reading a remote segment from the
start fetch each chunk from the store once, and many consumers of the same old data share it.

Invariants:

* Entries are keyed by ``(segment uuid, kind)`` where ``kind`` is an :class:`IndexType` or a chunk
  number; a remote segment is read-only (see :mod:`~zurau.storage.remote.remote_log_segment`),
  so an entry never goes stale: it is only evicted or invalidated.
* The bytes held never exceed ``max_bytes``: the least recently used entries are evicted to make
  room, and a value larger than ``max_bytes`` is returned but not kept.
* A missing entry is fetched once even when many threads ask at once: the first fetches, the others
  wait for its result (or its error, which is not cached: the next call tries again).
* :meth:`invalidate` (a segment deleted) drops the segment's entries and discards fetches of it
  that are in flight, so nothing of a deleted segment is kept.

Thread-safe: readers call it from worker threads; the plugin's calls happen outside the lock.
``hits``, ``misses`` and ``evictions`` count for metrics (a waiter on another thread's fetch counts
as a hit).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from zurau.storage.remote.remote_log_segment import IndexType, RemoteLogSegmentMetadata
from zurau.storage.remote.remote_storage_manager import RemoteStorageManager

TOTAL_SIZE_CONFIG = "remote.log.index.file.cache.total.size.bytes"
DEFAULT_MAX_BYTES = 1 << 30
DEFAULT_CHUNK_SIZE = 4 << 20

CacheKey = tuple[uuid.UUID, IndexType | int]


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int
    evictions: int
    entries: int
    size_bytes: int
    max_bytes: int


class RemoteIndexCache:
    """Index files and ``.log`` chunks of remote segments, LRU within ``max_bytes``."""

    def __init__(
        self,
        storage: RemoteStorageManager,
        max_bytes: int = DEFAULT_MAX_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        if max_bytes < 0:
            raise ValueError(f"{TOTAL_SIZE_CONFIG} must be >= 0, not {max_bytes}")
        if chunk_size <= 0:
            raise ValueError(f"chunk size must be > 0, not {chunk_size}")
        self._storage = storage
        self._max_bytes = max_bytes
        self.chunk_size = chunk_size
        self._lock = threading.Lock()
        self._entries: OrderedDict[CacheKey, bytes] = OrderedDict()
        self._size = 0
        self._pending: dict[CacheKey, Future[bytes]] = {}
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    # -- reads -----------------------------------------------------------------------------------
    def index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        """The whole index file of ``index_type`` (RemoteResourceNotFoundError when the segment
        has none, e.g. no transaction index; that answer is not cached)."""

        def load() -> bytes:
            with self._storage.fetch_index(metadata, index_type) as stream:
                return stream.read()

        return self._get((metadata.segment_id.id, index_type), load)

    def chunk(self, metadata: RemoteLogSegmentMetadata, number: int) -> bytes:
        """Chunk ``number`` of the segment's ``.log`` (shorter at the segment's end; empty past it)."""
        if number < 0:
            raise ValueError(f"chunk number {number} < 0")
        start = number * self.chunk_size
        end = min(start + self.chunk_size, metadata.segment_size_in_bytes) - 1
        if end < start:
            return b""

        def load() -> bytes:
            with self._storage.fetch_log_segment(metadata, start, end) as stream:
                return stream.read()

        return self._get((metadata.segment_id.id, number), load)

    def read(self, metadata: RemoteLogSegmentMetadata, position: int, size: int) -> bytes:
        """Up to ``size`` bytes of the segment's ``.log`` from ``position``, through the chunks
        (fewer at the segment's end)."""
        if position < 0 or size < 0:
            raise ValueError(f"bad range: position {position}, size {size}")
        end = min(position + size, metadata.segment_size_in_bytes)
        parts: list[bytes] = []
        pos = position
        while pos < end:
            number, offset = divmod(pos, self.chunk_size)
            data = self.chunk(metadata, number)
            piece = data[offset : offset + (end - pos)]
            if not piece:
                break  # the stored segment is shorter than its metadata says
            parts.append(piece)
            pos += len(piece)
        return b"".join(parts)

    # -- upkeep ----------------------------------------------------------------------------------
    def invalidate(self, segment_id: uuid.UUID) -> None:
        """Drop every entry of the segment (it was deleted), and what its in-flight fetches bring."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == segment_id]:
                self._size -= len(self._entries.pop(key))
            for key in [k for k in self._pending if k[0] == segment_id]:
                del self._pending[key]  # the fetch's result will not be kept

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._pending.clear()
            self._size = 0

    def resize(self, max_bytes: int) -> None:
        """A new bound (a dynamic config change): evicts at once when it shrank."""
        if max_bytes < 0:
            raise ValueError(f"{TOTAL_SIZE_CONFIG} must be >= 0, not {max_bytes}")
        with self._lock:
            self._max_bytes = max_bytes
            self._evict_locked(0)

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def size_bytes(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                self.hits, self.misses, self.evictions, len(self._entries), self._size, self._max_bytes
            )

    # -- internals -------------------------------------------------------------------------------
    def _get(self, key: CacheKey, load: Callable[[], bytes]) -> bytes:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return value
            pending = self._pending.get(key)
            if pending is not None:
                self.hits += 1
            else:
                self.misses += 1
                mine: Future[bytes] = Future()
                self._pending[key] = mine
        if pending is not None:
            return pending.result()
        try:
            value = load()
        except BaseException as e:
            with self._lock:
                if self._pending.get(key) is mine:
                    del self._pending[key]
            mine.set_exception(e)
            raise
        with self._lock:
            if self._pending.get(key) is mine:
                del self._pending[key]
                self._put_locked(key, value)
        mine.set_result(value)
        return value

    def _put_locked(self, key: CacheKey, value: bytes) -> None:
        if len(value) > self._max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._size -= len(old)
        self._evict_locked(len(value))
        self._entries[key] = value
        self._size += len(value)

    def _evict_locked(self, room: int) -> None:
        while self._entries and self._size + room > self._max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._size -= len(evicted)
            self.evictions += 1


__all__ = ["DEFAULT_CHUNK_SIZE", "DEFAULT_MAX_BYTES", "TOTAL_SIZE_CONFIG", "CacheStats", "RemoteIndexCache"]
