"""The remote log manager's copy, expiration and topic-deletion tasks, against in-memory fakes of
the storage plugin, the remote log metadata and the partition log (tests/unit/tiered_fakes.py)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.unit.tiered_fakes import TIP, FakeRLMM, FakeRSM, S, build_log, data_batch
from zurau.clock import ManualClock
from zurau.config.remote_log_views import RemoteLogManagerConfig
from zurau.replication.tiered.remote_log_manager import RemoteLogManager
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemotePartitionDeleteState,
)

CONFIG = RemoteLogManagerConfig.defaults(
    task_interval_ms=1000, copier_thread_pool_size=2, expiration_thread_pool_size=2, reader_threads=2
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rsm() -> FakeRSM:
    return FakeRSM()


@pytest.fixture
def rlmm() -> FakeRLMM:
    return FakeRLMM()


@pytest.fixture
async def rlm(rsm: FakeRSM, rlmm: FakeRLMM, clock: ManualClock) -> AsyncIterator[RemoteLogManager]:
    m = RemoteLogManager(broker_id=1, rsm=rsm, rlmm=rlmm, config=CONFIG, clock=clock)
    yield m
    await m.close()


def finished(rlmm: FakeRLMM) -> list[tuple[int, int]]:
    return [(a, b) for a, b, st in rlmm.states() if st is S.COPY_SEGMENT_FINISHED]


async def test_copies_closed_segments_in_order_and_resumes_after_the_highest_remote_offset(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 3, epochs=[EpochEntry(0, 0), EpochEntry(1, 8)])
    rlm.on_became_leader(log, 1)
    assert await rlm.copy_once(TIP) == 3
    assert [m.start_offset for m in rsm.copies] == [0, 6, 12]
    assert finished(rlmm) == [(0, 5), (6, 11), (12, 17)]
    # Each upload is announced before it starts and finished after.
    assert [st for _sid, st in rlmm.events] == [S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED] * 3
    by_start = {m.start_offset: m for m in rlmm.segments.values()}
    assert by_start[0].segment_leader_epochs == ((0, 0),)
    assert by_start[6].segment_leader_epochs == ((0, 6), (1, 8))
    assert by_start[12].segment_leader_epochs == ((1, 12),)
    assert log.highest_in_remote == 17
    assert rlm.stats.segments_copied == 3 and rlm.stats.bytes_copied == sum(len(s.data) for s in log.segments)
    # Nothing new: nothing copied. Two more segments, one of them not below the LSO yet.
    assert await rlm.copy_once(TIP) == 0
    for _ in range(2):
        log.append(data_batch(log.log_end_offset, 3, epoch=1))
        log.roll()
    log.lso = 22
    assert await rlm.copy_once(TIP) == 1
    assert finished(rlmm)[-1] == (18, 20)
    assert rlm.stats.partition(TIP).copy_lag_segments == 0
    log.lso = None
    assert await rlm.copy_once(TIP) == 1
    assert [m.start_offset for m in rsm.copies] == [0, 6, 12, 18, 21]


async def test_nothing_is_copied_when_not_ready_disabled_or_not_leader(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 2)
    assert await rlm.copy_once(TIP) == 0  # not the leader
    rlm.on_became_leader(log, 0)
    rlmm.not_ready.add(TIP)
    assert await rlm.copy_once(TIP) == 0
    rlmm.not_ready.clear()
    log.config.remote_log_copy_disable = True
    assert await rlm.copy_once(TIP) == 0
    log.config.remote_log_copy_disable = False
    log.config.remote_storage_enable = False
    assert await rlm.copy_once(TIP) == 0
    assert rsm.copies == []
    log.config.remote_storage_enable = True
    assert await rlm.copy_once(TIP) == 2


async def test_restart_deletes_an_upload_left_started_and_copies_the_segment_again(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, clock: ManualClock
) -> None:
    log = build_log(tmp_path, 2)
    # A leader crashed mid-upload of segment 0: its COPY_SEGMENT_STARTED and part of its objects remain.
    orphan = RemoteLogSegmentMetadata(
        RemoteLogSegmentId.generate(TIP), 0, 5, 1002, 0, clock.now_ms(), len(log.segments[0].data), ((0, 0),)
    )
    await rlmm.add_segment(orphan)
    rsm.objects[orphan.segment_id.id] = {"log": b"partial"}
    restarted = RemoteLogManager(broker_id=1, rsm=rsm, rlmm=rlmm, config=CONFIG, clock=clock)
    try:
        restarted.on_became_leader(log, 1)
        await restarted.run_once()
        assert rlmm.segments[orphan.segment_id.id].state is S.DELETE_SEGMENT_FINISHED
        assert orphan.segment_id.id not in rsm.objects
        assert finished(rlmm) == [(0, 5), (6, 11)]
        assert all(m.segment_id != orphan.segment_id for m in rsm.copies)  # a new id for the new attempt
        # The orphan never counted as data.
        assert restarted.stats.partition(TIP).remote_size_bytes == rlmm.remote_size(TIP)
        assert restarted.stats.partition(TIP).remote_segments == 2
    finally:
        await restarted.close()


async def test_a_failed_copy_is_cleaned_up_and_retried_under_a_new_id(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 2)
    rlm.on_became_leader(log, 0)
    rsm.fail_copies = 1
    assert await rlm.copy_once(TIP) == 0
    failed = rsm.copies[0].segment_id.id
    assert rlmm.segments[failed].state is S.DELETE_SEGMENT_FINISHED
    assert failed not in rsm.objects  # the partial upload is gone
    assert log.highest_in_remote == -1 and rlm.stats.copy_failures == 1
    assert await rlm.copy_once(TIP) == 2
    assert finished(rlmm) == [(0, 5), (6, 11)]
    assert rsm.copies[1].segment_id.id != failed

    # A failure whose clean-up fails too leaves a DELETE_SEGMENT_STARTED segment: expiration ends it.
    log.append(data_batch(12, 3))
    log.roll()
    rsm.fail_copies, rsm.fail_deletes = 1, 1
    assert await rlm.copy_once(TIP) == 0
    stuck = rsm.copies[-1].segment_id.id
    assert rlmm.segments[stuck].state is S.DELETE_SEGMENT_STARTED
    assert await rlm.expire_once(TIP) == 1
    assert rlmm.segments[stuck].state is S.DELETE_SEGMENT_FINISHED and stuck not in rsm.objects
    assert await rlm.copy_once(TIP) == 1
    assert finished(rlmm) == [(0, 5), (6, 11), (12, 14)]


async def test_leadership_lost_mid_copy_publishes_no_finished(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 2)
    rlm.on_became_leader(log, 3)
    rsm.gate = threading.Event()
    task = asyncio.create_task(rlm.copy_once(TIP))
    assert await asyncio.to_thread(rsm.copy_started.wait, 10)
    rlm.on_became_leader(log, 4)  # a new leader epoch (this broker was re-elected) mid-upload
    rsm.gate.set()
    assert await task == 0
    (sid,) = rlmm.segments
    assert rlmm.segments[sid].state is S.COPY_SEGMENT_STARTED
    assert log.highest_updates == [-1]
    # The epoch-4 leader deletes that leftover and copies the segment again.
    rsm.gate = None
    await rlm.run_once()
    assert rlmm.segments[sid].state is S.DELETE_SEGMENT_FINISHED
    assert finished(rlmm) == [(0, 5), (6, 11)]

    # Losing leadership altogether: the copy stops too.
    log.append(data_batch(12, 3))
    log.roll()
    rsm.gate, rsm.copy_started = threading.Event(), threading.Event()
    task = asyncio.create_task(rlm.copy_once(TIP))
    assert await asyncio.to_thread(rsm.copy_started.wait, 10)
    rlm.on_stopped_leading(TIP)
    rsm.gate.set()
    assert await task == 0
    assert rlmm.states()[-1] == (12, 14, S.COPY_SEGMENT_STARTED)
    assert await rlm.expire_once(TIP) == 0  # a follower expires nothing


async def test_expiration_never_deletes_an_upload_whose_finished_publication_is_awaited(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    """The copy and expiration tasks run concurrently. While the copy task awaits the publication
    of COPY_SEGMENT_FINISHED (an acks=all write read back by the metadata reader), the metadata
    still says COPY_SEGMENT_STARTED: the expiration task took it for a leftover and deleted the
    just-finished segment, so the remote tier lost its offsets (found by
    tests/fault/test_tiered_storage_failover.py)."""
    log = build_log(tmp_path, 2)
    rlm.on_became_leader(log, 0)
    gate = rlmm.finish_gate = asyncio.Event()
    copy = asyncio.create_task(rlm.copy_once(TIP))
    await asyncio.wait_for(rlmm.finish_waiting.wait(), 10)
    (sid,) = rlmm.segments
    assert rlmm.segments[sid].state is S.COPY_SEGMENT_STARTED
    assert await rlm.expire_once(TIP) == 0
    rlmm.finish_gate = None  # the next segment's publication goes through at once
    gate.set()
    assert await asyncio.wait_for(copy, 10) == 2
    assert rlmm.segments[sid].state is S.COPY_SEGMENT_FINISHED and sid in rsm.objects
    assert finished(rlmm) == [(0, 5), (6, 11)]
    assert await rlm.expire_once(TIP) == 0
    assert finished(rlmm) == [(0, 5), (6, 11)]


async def test_an_upload_deleted_by_the_next_leader_while_still_written_is_deleted_again(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    """A zombie upload: leadership moves while the plugin still writes; the next leader deletes
    the upload as a leftover before the plugin is done. The old leader deletes what it wrote once
    its plugin call returns, so no object outlives its metadata (found by
    tests/fault/test_tiered_storage_failover.py: a SIGTERM mid-upload left an orphan ``.log``)."""
    log = build_log(tmp_path, 1)
    rlm.on_became_leader(log, 3)
    rsm.gate = threading.Event()
    task = asyncio.create_task(rlm.copy_once(TIP))
    assert await asyncio.to_thread(rsm.copy_started.wait, 10)
    rlm.on_stopped_leading(TIP)
    (sid,) = rlmm.segments
    for state in (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED):  # the next leader's expiration
        await rlmm.update_segment(rlmm.segments[sid].with_state(state, event_timestamp_ms=1, broker_id=2))
        if state is S.DELETE_SEGMENT_STARTED:
            rsm.delete_log_segment_data(rlmm.segments[sid])
    rsm.gate.set()
    assert await task == 0
    assert sid not in rsm.objects
    assert rlmm.segments[sid].state is S.DELETE_SEGMENT_FINISHED


async def test_an_upload_whose_finished_publication_is_refused_is_deleted_and_copied_again(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    """Another broker (a stale leader's expiration) moves this leader's upload to deletion while
    the plugin still writes it: COPY_SEGMENT_FINISHED is refused, and the objects written after
    that deletion must go too (found by tests/fault/test_tiered_storage_failover.py)."""
    log = build_log(tmp_path, 1)
    rlm.on_became_leader(log, 2)
    rsm.gate = threading.Event()
    task = asyncio.create_task(rlm.copy_once(TIP))
    assert await asyncio.to_thread(rsm.copy_started.wait, 10)
    (sid,) = rlmm.segments
    await rlmm.update_segment(
        rlmm.segments[sid].with_state(S.DELETE_SEGMENT_STARTED, event_timestamp_ms=1, broker_id=2)
    )
    rsm.delete_log_segment_data(rlmm.segments[sid])
    rsm.gate.set()
    assert await task == 0
    assert sid not in rsm.objects
    rsm.gate = None
    assert await rlm.copy_once(TIP) == 1
    assert finished(rlmm) == [(0, 5)]


async def test_close_waits_for_a_running_upload_and_deletes_it(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, clock: ManualClock
) -> None:
    """A clean shutdown cancels the copy task, but not the plugin's thread: close() waits for it
    and deletes what it wrote (the upload stays COPY_SEGMENT_STARTED for the next leader)."""
    log = build_log(tmp_path, 1)
    m = RemoteLogManager(broker_id=1, rsm=rsm, rlmm=rlmm, config=CONFIG, clock=clock)
    m.on_became_leader(log, 0)
    rsm.gate = threading.Event()
    task = asyncio.create_task(m.copy_once(TIP))
    assert await asyncio.to_thread(rsm.copy_started.wait, 10)
    closing = asyncio.create_task(m.close())
    await asyncio.sleep(0.05)
    task.cancel()
    rsm.gate.set()
    await asyncio.wait_for(closing, 10)
    (sid,) = rlmm.segments
    assert rlmm.segments[sid].state is S.COPY_SEGMENT_STARTED
    assert sid not in rsm.objects


async def test_retention_by_time_deletes_exactly_the_expired_segments_after_moving_the_log_start(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager, clock: ManualClock
) -> None:
    base = clock.now_ms() - 10_000
    log = build_log(tmp_path, 4, ts=base)  # segment i: timestamps base + 1000 i + (0, 1, 2)
    rlm.on_became_leader(log, 0)
    assert await rlm.copy_once(TIP) == 4
    deletes_at_start_move: list[int] = []
    advance = log.advance_log_start_offset

    def spy(offset: int) -> None:
        deletes_at_start_move.append(len(rsm.deletes))
        advance(offset)

    log.advance_log_start_offset = spy  # type: ignore[method-assign]
    log.config.retention_ms = 8_000  # expired: max timestamp <= base + 2000: segments 0 and 1
    assert await rlm.expire_once(TIP) == 2
    assert log.start_updates == [12] and deletes_at_start_move == [0]
    assert rlmm.states() == [
        (0, 5, S.DELETE_SEGMENT_FINISHED),
        (6, 11, S.DELETE_SEGMENT_FINISHED),
        (12, 17, S.COPY_SEGMENT_FINISHED),
        (18, 23, S.COPY_SEGMENT_FINISHED),
    ]
    assert len(rsm.objects) == 2
    assert rlm.stats.segments_deleted == 2 and rlm.stats.partition(TIP).remote_segments == 2
    assert await rlm.expire_once(TIP) == 0  # idempotent
    clock.advance(1_000)
    assert await rlm.expire_once(TIP) == 1
    assert log.start_updates == [12, 18]


async def test_retention_by_size_counts_remote_and_local_only_bytes(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 5)
    sizes = [len(s.data) for s in log.segments[:5]]
    log.lso = 24  # segment 24..29 stays local only
    rlm.on_became_leader(log, 0)
    assert await rlm.copy_once(TIP) == 4
    assert log.only_local_size_in_bytes == sizes[4]
    # 4 remote segments + 1 local-only one, 1.5 segments over the limit: exactly one goes.
    log.config.retention_bytes = sum(sizes) - sizes[0] - sizes[1] // 2
    assert await rlm.expire_once(TIP) == 1
    assert log.start_updates == [6]
    assert finished(rlmm) == [(6, 11), (12, 17), (18, 23)]
    assert await rlm.expire_once(TIP) == 0


async def test_segments_below_the_log_start_are_deleted(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager
) -> None:
    log = build_log(tmp_path, 3)
    rlm.on_became_leader(log, 0)
    assert await rlm.copy_once(TIP) == 3
    log.advance_log_start_offset(7)  # DeleteRecords
    assert await rlm.expire_once(TIP) == 1
    assert finished(rlmm) == [(6, 11), (12, 17)]
    assert log.start_updates == [7]


async def test_topic_deletion_deletes_every_remote_segment_idempotently_and_resumably(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager, clock: ManualClock
) -> None:
    log = build_log(tmp_path, 3)
    rlm.on_became_leader(log, 0)
    assert await rlm.copy_once(TIP) == 3
    orphan = RemoteLogSegmentMetadata(RemoteLogSegmentId(TIP, uuid.uuid4()), 18, 20, 0, 0, 0, 10, ((0, 18),))
    await rlmm.add_segment(orphan)
    rsm.fail_deletes = 1
    assert await rlm.delete_partitions([TIP]) == [TIP]
    assert not rlm.leads(TIP)
    D = RemotePartitionDeleteState
    assert [st for _tip, st in rlmm.partition_deletes] == [
        D.DELETE_PARTITION_MARKED,
        D.DELETE_PARTITION_STARTED,
    ]
    assert await rlm.delete_partitions([TIP]) == []
    assert all(st is S.DELETE_SEGMENT_FINISHED for _a, _b, st in rlmm.states())
    assert rsm.objects == {}
    assert rlmm.partition_deletes[-1] == (TIP, D.DELETE_PARTITION_FINISHED)
    assert await rlm.delete_partitions([TIP]) == []  # again: nothing left, finishes again


async def test_the_periodic_task_runs_on_the_injected_clock(
    tmp_path: Path, rsm: FakeRSM, rlmm: FakeRLMM, rlm: RemoteLogManager, clock: ManualClock
) -> None:
    log = build_log(tmp_path, 2)
    rlm.on_became_leader(log, 0)
    rlm.start()
    await asyncio.sleep(0)
    assert rsm.copies == []
    clock.advance(CONFIG.task_interval_ms)
    for _ in range(500):
        if len(finished(rlmm)) == 2:
            break
        await asyncio.sleep(0.01)
    assert finished(rlmm) == [(0, 5), (6, 11)]
