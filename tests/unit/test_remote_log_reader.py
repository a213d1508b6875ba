"""Remote reads (RemoteLogReader) and the follower's remote bootstrap (build_remote_log_aux_state)
against the in-memory fakes of tests/unit/tiered_fakes.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.unit.tiered_fakes import TIP, FakeRLMM, FakeRSM, FakeTieredLog, abort_marker, build_log, data_batch
from zurau.clock import ManualClock
from zurau.config.remote_log_views import RemoteLogManagerConfig
from zurau.protocol.errors import OffsetOutOfRangeError
from zurau.protocol.records.batch import iter_batches
from zurau.replication.replica_fetcher import TierBootstrap
from zurau.replication.tiered.remote_log_aux_state import (
    RemoteLogAuxState,
    build_remote_log_aux_state,
    remote_tier_bootstrap,
)
from zurau.replication.tiered.remote_log_manager import RemoteLogManager
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.remote.remote_log_segment import IndexType
from zurau.storage.remote.remote_storage_manager import RemoteStorageError
from zurau.storage.txn_index import AbortedTxn

CONFIG = RemoteLogManagerConfig.defaults(copier_thread_pool_size=1, expiration_thread_pool_size=1, reader_threads=2)


@pytest.fixture
def rsm() -> FakeRSM:
    return FakeRSM()


@pytest.fixture
def rlmm() -> FakeRLMM:
    return FakeRLMM()


@pytest.fixture
async def rlm(rsm: FakeRSM, rlmm: FakeRLMM) -> AsyncIterator[RemoteLogManager]:
    m = RemoteLogManager(broker_id=1, rsm=rsm, rlmm=rlmm, config=CONFIG, clock=ManualClock())
    yield m
    await m.close()


def drop_local_copied(log: FakeTieredLog) -> None:
    """Local retention: delete the local segments that are remote (keep the active one)."""
    while len(log.segments) > 1 and log.segments[1].base - 1 <= log.highest_in_remote:
        log.segments.pop(0)


def offsets(records: bytes) -> list[int]:
    return [h.base_offset for _pos, h in iter_batches(records)]


async def tiered(log: FakeTieredLog, rlm: RemoteLogManager, *, epoch: int = 0) -> None:
    rlm.on_became_leader(log, epoch)
    assert await rlm.copy_once(TIP) >= 1
    drop_local_copied(log)


async def test_reads_are_byte_exact_whole_batches_across_segment_boundaries(
    tmp_path: Path, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 3, batches=3)  # segments 0..8, 9..17, 18..26; batches of 3 records
    original = log.all_bytes()
    await tiered(log, rlm)
    assert log.local_log_start_offset == 27
    got, offset = b"", 0
    while offset < 27:  # a consumer's successive fetches
        data = await rlm.reader.read(log, offset, 150)
        assert data.records and data.aborted_transactions is None
        got += data.records
        offset = list(iter_batches(data.records))[-1][1].next_offset
    assert got == original
    # From inside a batch: the whole batch holding the offset; one segment at most per read.
    data = await rlm.reader.read(log, 13, 1 << 20)
    assert offsets(data.records) == [12, 15]
    assert data.segment is not None and data.segment.start_offset == 9
    # max_bytes below one batch: the first batch anyway (minOneMessage), or nothing without it.
    assert offsets((await rlm.reader.read(log, 4, 1)).records) == [3]
    assert (await rlm.reader.read(log, 4, 1, min_one_message=False)).records == b""
    assert rlm.stats.bytes_read > 0 and rlm.stats.fetch_failures == 0


async def test_read_committed_gets_aborted_transactions_from_later_remote_and_local_segments(
    tmp_path: Path, rlm: RemoteLogManager
) -> None:
    log = FakeTieredLog(tmp_path)
    log.append(data_batch(0, 3, pid=5, txn=True))  # pid 5: 0..2, aborted at 6
    log.append(data_batch(3, 3))
    log.roll()
    log.append(abort_marker(6, 5), aborted=AbortedTxn(5, 0, 6, 7))
    log.append(data_batch(7, 3, pid=9, txn=True))  # pid 9: 7..9, aborted at 13 (local only)
    log.roll()
    log.append(data_batch(10, 3))
    log.append(abort_marker(13, 9), aborted=AbortedTxn(9, 7, 13, 14))
    log.roll()
    log.lso = 13  # the last closed segment stays local
    await tiered(log, rlm)
    assert log.local_log_start_offset == 10

    data = await rlm.reader.read(log, 0, 1 << 20, read_committed=True)
    assert offsets(data.records) == [0, 3]
    assert data.aborted_transactions == [AbortedTxn(5, 0, 6, 7)]  # from the next segment's index
    data = await rlm.reader.read(log, 6, 1 << 20, read_committed=True)
    assert offsets(data.records) == [6, 7]
    # pid 5's marker is returned (its entry overlaps), pid 9's entry is in the local log's index.
    assert data.aborted_transactions == [AbortedTxn(5, 0, 6, 7), AbortedTxn(9, 7, 13, 14)]
    # Non-transactional batches only: no search; read_uncommitted: no list.
    assert (await rlm.reader.read(log, 3, 1, read_committed=True)).aborted_transactions == []
    assert (await rlm.reader.read(log, 0, 1 << 20)).aborted_transactions is None


async def test_a_missing_or_corrupt_remote_object_is_an_error_never_other_records(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 2)
    await tiered(log, rlm)
    seg0, seg1 = (m.segment_id.id for m in rlmm.list_segments(TIP))
    del rsm.objects[seg0]["log"]
    with pytest.raises(RemoteStorageError):
        await rlm.reader.read(log, 0, 1 << 20)
    del rsm.objects[seg1][IndexType.OFFSET]
    with pytest.raises(RemoteStorageError):
        await rlm.reader.read(log, 6, 1 << 20)
    rsm.objects[seg1][IndexType.OFFSET] = b""
    rsm.objects[seg1]["log"] = bytes(rsm.objects[seg1]["log"][:-5])  # a torn object
    with pytest.raises(RemoteStorageError):
        await rlm.reader.read(log, 9, 1 << 20)
    rsm.objects[seg1]["log"] = b"\x00" * 200  # not batches
    with pytest.raises(RemoteStorageError):
        await rlm.reader.read(log, 9, 1 << 20)
    assert rlm.stats.fetch_failures == 4
    with pytest.raises(OffsetOutOfRangeError):
        await rlm.reader.read(log, 12, 1 << 20)  # not remote


async def test_follower_bootstrap_state_comes_from_the_segment_before_the_leader_local_start(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    # Epoch 1 wrote nothing: a gap; epoch 2 starts at 12, the leader's local log start.
    log = build_log(tmp_path, 3, epochs=[EpochEntry(0, 0), EpochEntry(2, 12)])
    await tiered(log, rlm, epoch=2)
    asked: list[int] = []

    async def earlier_epoch_end(epoch: int) -> tuple[int, int]:
        asked.append(epoch)
        return 0, 12  # OffsetForLeaderEpoch(1): epoch 0 ends at 12 (exclusive)

    def bootstrap(
        local_start: int = 12,
        epoch: int = 2,
        earlier_epoch_end: Callable[[int], Awaitable[tuple[int, int]]] | None = None,
    ) -> Awaitable[RemoteLogAuxState]:
        return build_remote_log_aux_state(
            TIP,
            leader_local_log_start_offset=local_start,
            leader_epoch_of_local_start=epoch,
            leader_log_start_offset=0,
            rlmm=rlmm,
            rsm=rsm,
            earlier_epoch_end=earlier_epoch_end,
        )

    state = await bootstrap(earlier_epoch_end=earlier_epoch_end)
    assert asked == [1]
    assert (state.segment.start_offset, state.next_offset, state.leader_log_start_offset) == (6, 12, 0)
    assert state.leader_epochs == [EpochEntry(0, 0)]
    assert state.producer_snapshot == b"snapshot@12"
    # Without the leader's answer the scan finds the same segment.
    assert (await bootstrap()).segment == state.segment
    with pytest.raises(RemoteStorageError):  # nothing remote below 0
        await bootstrap(0, 0)
    objects = rsm.objects[state.segment.segment_id.id]
    checkpoint = objects[IndexType.LEADER_EPOCH]
    objects[IndexType.LEADER_EPOCH] = b"0\n2\n0 0\n"  # the count says 2
    with pytest.raises(RemoteStorageError, match="bad leader-epoch checkpoint"):
        await bootstrap()
    objects[IndexType.LEADER_EPOCH] = checkpoint
    del objects[IndexType.PRODUCER_SNAPSHOT]
    with pytest.raises(RemoteStorageError):
        await bootstrap()


async def test_reads_share_the_index_cache_and_a_deleted_segment_leaves_it(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 2)
    await tiered(log, rlm)
    assert rlm.reader.index_cache is rlm.index_cache
    seg0 = rlmm.list_segments(TIP)[0].segment_id.id
    await rlm.reader.read(log, 0, 1 << 20)
    del rsm.objects[seg0][IndexType.OFFSET]  # served from the cache from now on
    await rlm.reader.read(log, 3, 1 << 20)
    stats = rlm.index_cache.stats()
    assert (stats.misses, stats.hits) == (1, 1) and (seg0, IndexType.OFFSET) in rlm.index_cache
    assert await rlm.delete_partitions([TIP]) == []
    assert len(rlm.index_cache) == 0 and rlm.index_cache.size_bytes == 0


async def test_the_fetchers_tier_bootstrap_waits_for_the_remote_metadata(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 3, epochs=[EpochEntry(0, 0)])
    await tiered(log, rlm)
    bootstrap: TierBootstrap = remote_tier_bootstrap(rlmm, rsm)

    async def earlier_epoch_end(epoch: int) -> tuple[int, int]:
        raise AssertionError("epoch 0 has no earlier epoch")

    rlmm.not_ready.add(TIP)
    with pytest.raises(RemoteStorageError, match="not loaded"):
        await bootstrap(TIP, 12, 0, 0, earlier_epoch_end=earlier_epoch_end)
    rlmm.not_ready.discard(TIP)
    state = await bootstrap(TIP, 12, 0, 0, earlier_epoch_end=earlier_epoch_end)
    assert (state.next_offset, state.leader_epochs) == (12, [EpochEntry(0, 0)])
