"""RemoteIndexCache: LRU within a byte bound, chunked segment reads, single fetch per key,
invalidation, hit/miss counts."""

from __future__ import annotations

import io
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

import pytest

from tests.support.remote_storage_contract import Segment, make_segment
from tests.support.waiting import wait_for
from zurau.storage.remote import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentMetadata,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)
from zurau.storage.remote.remote_index_cache import RemoteIndexCache


class FakeStorage:
    """Serves the segments it was given from memory and counts the calls."""

    def __init__(self, *segments: Segment) -> None:
        self.segments = {s.metadata.segment_id.id: s for s in segments}
        self.log_fetches: list[tuple[int, int | None]] = []
        self.index_fetches: list[IndexType] = []
        self.fail_next = 0
        self.gate: threading.Event | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> None:
        raise NotImplementedError

    def _check(self) -> None:
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail_next:
            self.fail_next -= 1
            raise RemoteStorageError("connection reset")

    def fetch_log_segment(
        self, metadata: RemoteLogSegmentMetadata, start_position: int, end_position: int | None = None
    ) -> BinaryIO:
        self.log_fetches.append((start_position, end_position))
        self._check()
        log = self.segments[metadata.segment_id.id].log
        return io.BytesIO(log[start_position : None if end_position is None else end_position + 1])

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        self.index_fetches.append(index_type)
        self._check()
        files = self.segments[metadata.segment_id.id].files
        if index_type.value not in files:
            raise RemoteResourceNotFoundError(index_type.name)
        return io.BytesIO(files[index_type.value])

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        pass

    def close(self) -> None:
        pass


def test_chunked_reads_are_byte_exact_and_fetch_each_chunk_once(tmp_path: Path) -> None:
    seg = make_segment(tmp_path, log_size=1000)
    storage = FakeStorage(seg)
    cache = RemoteIndexCache(storage, max_bytes=10_000, chunk_size=128)
    log = seg.log
    for position, size in [(0, 1000), (0, 1), (127, 2), (500, 10_000), (999, 5), (1000, 10), (300, 0)]:
        assert cache.read(seg.metadata, position, size) == log[position : position + size]
    # 8 chunks (the last one 1000 - 7 * 128 = 104 bytes), each fetched once, with inclusive ends.
    assert sorted(storage.log_fetches) == [(i * 128, min(i * 128 + 127, 999)) for i in range(8)]
    assert cache.chunk(seg.metadata, 7) == log[896:]
    assert cache.chunk(seg.metadata, 8) == b""
    stats = cache.stats()
    assert stats.misses == 8 and stats.hits > 0
    assert stats.size_bytes == 1000 and stats.entries == 8


def test_indexes_are_cached_and_a_missing_one_is_not(tmp_path: Path) -> None:
    seg = make_segment(tmp_path / "a")
    no_txn = make_segment(tmp_path / "b", start_offset=200, with_txn_index=False)
    storage = FakeStorage(seg, no_txn)
    cache = RemoteIndexCache(storage)
    for _ in range(3):
        assert cache.index(seg.metadata, IndexType.OFFSET) == seg.files["index"]
        assert cache.index(seg.metadata, IndexType.TRANSACTION) == seg.files["txnindex"]
    assert storage.index_fetches == [IndexType.OFFSET, IndexType.TRANSACTION]
    for _ in range(2):
        with pytest.raises(RemoteResourceNotFoundError):
            cache.index(no_txn.metadata, IndexType.TRANSACTION)
    assert storage.index_fetches.count(IndexType.TRANSACTION) == 3
    assert (cache.hits, cache.misses) == (4, 4)


def test_lru_eviction_keeps_the_byte_bound(tmp_path: Path) -> None:
    seg = make_segment(tmp_path, log_size=1000)
    storage = FakeStorage(seg)
    cache = RemoteIndexCache(storage, max_bytes=300, chunk_size=100)
    key = seg.metadata.segment_id.id
    cache.chunk(seg.metadata, 0)
    cache.chunk(seg.metadata, 1)
    cache.chunk(seg.metadata, 2)
    cache.chunk(seg.metadata, 0)  # now most recently used
    cache.chunk(seg.metadata, 3)  # evicts chunk 1, the least recently used
    assert (key, 1) not in cache and (key, 0) in cache and (key, 3) in cache
    assert cache.size_bytes == 300 and cache.evictions == 1
    # An index bigger than the whole cache is served, not kept.
    small = RemoteIndexCache(storage, max_bytes=50, chunk_size=100)
    assert small.chunk(seg.metadata, 0) == seg.log[:100]
    assert len(small) == 0 and small.size_bytes == 0
    cache.resize(100)
    assert cache.size_bytes <= 100 and len(cache) == 1


def test_concurrent_misses_fetch_once_and_errors_are_not_cached(tmp_path: Path) -> None:
    seg = make_segment(tmp_path, log_size=1000)
    storage = FakeStorage(seg)
    cache = RemoteIndexCache(storage, chunk_size=1000)
    storage.gate = threading.Event()
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(cache.chunk, seg.metadata, 0) for _ in range(8)]
        wait_for(lambda: cache.misses + cache.hits == 8, what="8 readers in the cache")
        storage.gate.set()
        assert all(f.result(10) == seg.log for f in futures)
    assert len(storage.log_fetches) == 1
    assert (cache.misses, cache.hits) == (1, 7)

    storage.gate = None
    storage.fail_next = 1
    with pytest.raises(RemoteStorageError):
        cache.index(seg.metadata, IndexType.OFFSET)
    assert cache.index(seg.metadata, IndexType.OFFSET) == seg.files["index"]


def test_invalidate_drops_a_deleted_segment_and_its_fetches_in_flight(tmp_path: Path) -> None:
    a = make_segment(tmp_path / "a", log_size=500)
    b = make_segment(tmp_path / "b", start_offset=300, log_size=500)
    storage = FakeStorage(a, b)
    cache = RemoteIndexCache(storage, chunk_size=100)
    cache.read(a.metadata, 0, 500)
    cache.index(a.metadata, IndexType.OFFSET)
    cache.read(b.metadata, 0, 200)
    cache.invalidate(a.metadata.segment_id.id)
    assert cache.size_bytes == 200 and len(cache) == 2

    storage.gate = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(cache.chunk, a.metadata, 4)
        wait_for(lambda: cache.misses == 9, what="the fetch of chunk 4 started")
        cache.invalidate(a.metadata.segment_id.id)
        storage.gate.set()
        assert future.result(10) == a.log[400:]
    assert (a.metadata.segment_id.id, 4) not in cache
    assert cache.size_bytes == 200


def test_bad_arguments(tmp_path: Path) -> None:
    storage = FakeStorage()
    with pytest.raises(ValueError):
        RemoteIndexCache(storage, max_bytes=-1)
    with pytest.raises(ValueError):
        RemoteIndexCache(storage, chunk_size=0)
    seg = make_segment(tmp_path)
    with pytest.raises(ValueError):
        RemoteIndexCache(storage).read(seg.metadata, -1, 10)
