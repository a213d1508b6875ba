"""ReplicaManager: the only door to partition logs (appends, reads, committed data, listeners,
acks=all in the produce purgatory, follower appends)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.partition_logs import NOW, make_batch
from zurau.broker.handlers import produce
from zurau.clock import SystemClock
from zurau.protocol.errors import (
    FencedLeaderEpochError,
    InvalidRecordError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetMovedToTieredStorageError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.control import build_control_batch
from zurau.replication.replica_manager import AppendOrigin, ReplicaManager
from zurau.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager


class _FixedClock(SystemClock):
    """Time stands still at NOW; timers (purgatory timeouts) run on the loop."""

    def now_ms(self) -> int:
        return NOW


def make_rm(path: Path, node_id: int = 1, **cfg: Any) -> ReplicaManager:
    config = LogConfig(**cfg)
    lm = LogManager([path], lambda: NOW, default_config=config)
    return ReplicaManager(node_id, lm, lambda _t: config, _FixedClock())


def read_bytes(rm: ReplicaManager, offset: int, *, replica_id: int = -1, isolation_level: int = 0) -> bytes:
    r = rm.read("t", 0, offset, 1 << 20, replica_id=replica_id, isolation_level=isolation_level)
    assert r.error is None
    if r.records is None:
        return b""
    return os.pread(r.records.fd, r.records.size, r.records.position)


def offsets(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for _p, h in iter_batches(data)]


# ------------------------------------------------------------------------ committed data API


def test_committed_data_api_for_coordinators(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    seen: list[tuple[str, int, int]] = []
    rm.add_high_watermark_listener(lambda t, p, hw: seen.append((t, p, hw)))
    assert rm.high_watermark("t", 0) == 0
    assert rm.log_start_offset("t", 0) == 0
    assert rm.read_committed("t", 0, 0, 1024) == b""
    rm.append_as_leader("t", 0, memoryview(make_batch(3)), required_acks=-1)
    assert seen == [("t", 0, 3)]
    rm.append_as_leader("t", 0, memoryview(make_batch(2)), required_acks=1)
    assert seen == [("t", 0, 3), ("t", 0, 5)]
    assert rm.high_watermark("t", 0) == 5
    data = rm.read_committed("t", 0, 0, 1 << 20)
    assert [(h.base_offset, h.records_count) for _p, h in iter_batches(data)] == [(0, 3), (3, 2)]
    # At least one whole batch even with a tiny max_bytes; mid-batch offsets give that batch.
    one = rm.read_committed("t", 0, 1, 1)
    assert [h.base_offset for _p, h in iter_batches(one)] == [0]
    assert rm.read_committed("t", 0, 5, 1 << 20) == b""
    with pytest.raises(UnknownTopicOrPartitionError):
        rm.high_watermark("t", 1)
    rm.get("t", 0).leader_id = 2  # type: ignore[union-attr]
    with pytest.raises(NotLeaderOrFollowerError):
        rm.log_start_offset("t", 0)


def test_a_failing_listener_does_not_fail_the_append(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)

    def boom(_t: str, _p: int, _hw: int) -> None:
        raise RuntimeError("listener bug")

    seen: list[int] = []
    rm.add_high_watermark_listener(boom)
    rm.add_high_watermark_listener(lambda _t, _p, hw: seen.append(hw))
    r = rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    assert r.last_offset == 1 and seen == [2]


def test_read_committed_stops_at_a_held_back_high_watermark(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    assert rm.high_watermark("t", 0) == 0
    assert rm.read_committed("t", 0, 0, 1 << 20) == b""
    rm.read("t", 0, 2, 1 << 20, replica_id=2)  # the follower now has offsets 0..1
    assert rm.high_watermark("t", 0) == 2
    assert offsets(rm.read_committed("t", 0, 0, 1 << 20)) == [(0, 1)]


# --------------------------------------------------------------------------------- appends


def test_append_origins(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    marker = build_control_batch(True, 5, 0, 0, timestamp_ms=NOW)
    with pytest.raises(InvalidRecordError, match="control"):
        rm.append_as_leader("t", 0, marker, required_acks=-1)
    rm.append_as_leader("t", 0, marker, required_acks=-1, origin=AppendOrigin.COORDINATOR)
    with pytest.raises(ValueError):
        rm.append_as_leader("t", 0, make_batch(), required_acks=1, origin=AppendOrigin.REPLICATION)


def test_in_place_patches_the_callers_buffer_only_when_writable(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.append_as_leader("t", 0, make_batch(), required_acks=1)
    buf = bytearray(make_batch(2))
    rm.append_as_leader("t", 0, memoryview(buf), required_acks=1, in_place=True)
    assert offsets(bytes(buf)) == [(1, 2)]
    frozen = make_batch(2)
    rm.append_as_leader("t", 0, memoryview(frozen), required_acks=1, in_place=True)
    assert offsets(frozen) == [(0, 1)]  # a read-only buffer is copied, never patched


def test_follower_append_reproduces_the_leaders_log_byte_for_byte(tmp_path: Path) -> None:
    leader = make_rm(tmp_path / "a", node_id=1, segment_bytes=600)
    follower = make_rm(tmp_path / "b", node_id=2, segment_bytes=600)
    leader.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1])
    follower.make_follower("t", 0, leader_id=1, leader_epoch=0)
    leader.append_as_leader("t", 0, make_batch(3), required_acks=1)
    pid: dict[str, Any] = {"producer_id": 9, "producer_epoch": 0}
    leader.append_as_leader("t", 0, make_batch(2, base_sequence=0, **pid), required_acks=-1)
    leader.append_as_leader(
        "t", 0, make_batch(2, base_sequence=2, is_transactional=True, **pid), required_acks=-1
    )
    leader.append_markers("t", 0, 9, 0, False, 0)  # ABORT: indexed in .txnindex
    leader.make_leader("t", 0, leader_epoch=3, replicas=[1, 2], isr=[1])
    for _ in range(4):
        leader.append_as_leader("t", 0, make_batch(4, value=b"x" * 40), required_acks=1)

    leo = leader.get("t", 0).log_end_offset  # type: ignore[union-attr]
    fetched = 0
    while follower.get("t", 0).log_end_offset < leo:  # type: ignore[union-attr]
        start = follower.get("t", 0).log_end_offset  # type: ignore[union-attr]
        r = leader.read("t", 0, start, 300, replica_id=2)
        assert r.error is None and r.records is not None
        data = os.pread(r.records.fd, r.records.size, r.records.position)
        appended = follower.append_as_follower("t", 0, data)
        assert appended.base_offset >= start and not appended.duplicate
        follower.update_follower_high_watermark("t", 0, r.high_watermark)
        fetched += 1
    assert fetched > 1

    a, b = tmp_path / "a" / "t-0", tmp_path / "b" / "t-0"
    logs = sorted(p.name for p in a.iterdir() if p.suffix == ".log")
    assert len(logs) > 1 and logs == sorted(p.name for p in b.iterdir() if p.suffix == ".log")
    for name in logs:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / LEADER_EPOCH_CHECKPOINT).read_text() == (b / LEADER_EPOCH_CHECKPOINT).read_text()
    lp, fp = leader.get("t", 0), follower.get("t", 0)
    assert lp is not None and fp is not None
    assert fp.log.leader_epoch_cache.entries == lp.log.leader_epoch_cache.entries
    assert [e.epoch for e in fp.log.leader_epoch_cache.entries] == [0, 3]
    assert fp.log.producer_state.producers.keys() == lp.log.producer_state.producers.keys()
    assert fp.log.aborted_transactions(0, leo) == lp.log.aborted_transactions(0, leo)
    assert fp.log.high_watermark == lp.log.high_watermark == leo


def test_follower_appends_need_a_followed_partition(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    with pytest.raises(UnknownTopicOrPartitionError):
        rm.append_as_follower("t", 0, make_batch())
    rm.host("t", 0)
    with pytest.raises(NotLeaderOrFollowerError):
        rm.append_as_follower("t", 0, make_batch())
    rm.make_follower("t", 0, leader_id=2, leader_epoch=1)
    with pytest.raises(NotLeaderOrFollowerError):
        rm.append_as_leader("t", 0, make_batch(), required_acks=1)
    assert rm.append_as_follower("t", 0, b"").record_count == 0
    r = rm.append_as_follower("t", 0, make_batch(2, base_offset=0, partition_leader_epoch=1))
    assert (r.base_offset, r.last_offset) == (0, 1)


# ------------------------------------------------------------------------------------ reads


def test_consumers_read_to_the_high_watermark_followers_to_the_log_end(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2, 3], isr=[1, 2])
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    assert rm.high_watermark("t", 0) == 0  # follower 2 (in the ISR) has fetched nothing
    assert read_bytes(rm, 0) == b""
    assert offsets(read_bytes(rm, 0, replica_id=3)) == [(0, 1), (2, 3)]  # not in the ISR: no HW move
    assert rm.high_watermark("t", 0) == 0
    assert offsets(read_bytes(rm, 2, replica_id=2)) == [(2, 3)]  # follower 2 holds 0..1
    assert rm.high_watermark("t", 0) == 2
    assert offsets(read_bytes(rm, 0)) == [(0, 1)]
    read_bytes(rm, 4, replica_id=2)
    assert rm.high_watermark("t", 0) == 4
    assert offsets(read_bytes(rm, 0)) == [(0, 1), (2, 3)]
    with pytest.raises(NotLeaderOrFollowerError):
        rm.read("t", 0, 0, 100, replica_id=7)
    with pytest.raises(NotLeaderOrFollowerError):
        rm.read("t", 0, 0, 100, replica_id=1)  # the leader itself


def test_a_diverged_follower_fetch_does_not_move_the_high_watermark(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    r = rm.read("t", 0, 9, 100, replica_id=2)  # beyond the leader's log end offset
    assert isinstance(r.error, OffsetOutOfRangeError) and r.high_watermark == 0
    assert rm.high_watermark("t", 0) == 0


def test_read_committed_stops_at_the_last_stable_offset(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    txn = make_batch(2, producer_id=4, producer_epoch=0, base_sequence=0, is_transactional=True)
    rm.append_as_leader("t", 0, txn, required_acks=-1)
    rm.append_as_leader("t", 0, make_batch(1), required_acks=1)
    r = rm.read("t", 0, 0, 1 << 20, isolation_level=1)
    assert (r.high_watermark, r.last_stable_offset) == (5, 2)
    assert r.records is not None and r.aborted_transactions == []
    assert offsets(read_bytes(rm, 0, isolation_level=1)) == [(0, 1)]
    rm.append_markers("t", 0, 4, 0, False, 0)
    r = rm.read("t", 0, 0, 1 << 20, isolation_level=1)
    assert r.last_stable_offset == 6
    assert [(a.producer_id, a.first_offset) for a in r.aborted_transactions or []] == [(4, 2)]
    assert rm.read("t", 0, 0, 1 << 20).aborted_transactions is None  # read_uncommitted


def test_read_errors(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    r = rm.read("t", 0, 9, 100)
    assert isinstance(r.error, OffsetOutOfRangeError)
    assert (r.records, r.high_watermark, r.log_start_offset, r.log_end_offset) == (None, 2, 0, 2)
    with pytest.raises(UnknownLeaderEpochError):
        rm.read("t", 0, 0, 100, current_leader_epoch=1)
    rm.make_leader("t", 0, leader_epoch=2, replicas=[1], isr=[1])
    with pytest.raises(FencedLeaderEpochError):
        rm.read("t", 0, 0, 100, current_leader_epoch=1)
    assert rm.read("t", 0, 0, 0, min_one_batch=False).records is None
    assert rm.read("t", 0, 0, 0, min_one_batch=True).records is not None


def test_offsets_for_timestamps_and_leader_epochs(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.append_as_leader("t", 0, make_batch(3), required_acks=1)  # timestamps NOW..NOW+2
    assert rm.fetch_offset_for_timestamp("t", 0, -2) == (0, -1, 0)
    assert rm.fetch_offset_for_timestamp("t", 0, -1) == (3, -1, 0)
    assert rm.fetch_offset_for_timestamp("t", 0, -3) == (2, NOW + 2, 0)
    assert rm.fetch_offset_for_timestamp("t", 0, -5) == (-1, -1, -1)  # not tiered: no epoch
    assert rm.fetch_offset_for_timestamp("t", 0, NOW + 1) == (1, NOW + 1, 0)
    assert rm.fetch_offset_for_timestamp("t", 0, NOW + 9) == (-1, -1, 0)
    rm.make_leader("t", 0, leader_epoch=4, replicas=[1], isr=[1])
    rm.append_as_leader("t", 0, make_batch(1), required_acks=1)
    assert rm.end_offset_for_leader_epoch("t", 0, 0) == (0, 3)
    assert rm.end_offset_for_leader_epoch("t", 0, 4) == (4, 4)
    assert rm.end_offset_for_leader_epoch("t", 0, 2) == (0, 3)


def test_delete_records_producers_and_log_dirs(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.host("t", 1)
    rm.append_as_leader("t", 0, make_batch(4, producer_id=3, producer_epoch=1, base_sequence=0), required_acks=1)
    assert [(e.producer_id, e.producer_epoch, e.last_seq) for e in rm.active_producers("t", 0)] == [(3, 1, 3)]
    with pytest.raises(OffsetOutOfRangeError):
        rm.delete_records("t", 0, 5)
    with pytest.raises(OffsetOutOfRangeError):
        rm.delete_records("t", 0, -7)
    assert rm.delete_records("t", 0, 2) == 2
    assert rm.delete_records("t", 0, 1) == 2
    assert rm.delete_records("t", 0, -1) == 4
    assert rm.log_start_offset("t", 0) == 4
    dirs = rm.describe_log_dirs()
    assert list(dirs) == [tmp_path]
    assert [(r.topic, r.partition) for r in dirs[tmp_path]] == [("t", 0), ("t", 1)]
    assert dirs[tmp_path][0].size > 0 and dirs[tmp_path][1].size == 0

    compacted = make_rm(tmp_path / "c", cleanup_policy="compact")
    compacted.host("t", 0)
    with pytest.raises(PolicyViolationError):
        compacted.delete_records("t", 0, 0)


# ------------------------------------------------------------------------- acks=all purgatory


async def test_acks_all_waits_for_the_isr(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    r = rm.append_as_leader("t", 0, make_batch(3), required_acks=-1)
    assert rm.high_watermark("t", 0) == 0
    op = rm.delayed_produce({("t", 0): r.last_offset + 1})
    assert not op.done and len(rm.produce_purgatory) == 1
    waiter = asyncio.ensure_future(rm.wait_for_replication(op, 5_000))
    await asyncio.sleep(0)
    assert not waiter.done()
    rm.read("t", 0, 2, 1 << 20, replica_id=2)  # the follower has 0..1: not enough yet
    await asyncio.sleep(0)
    assert not waiter.done() and rm.high_watermark("t", 0) == 2
    rm.read("t", 0, 3, 1 << 20, replica_id=2)
    assert await asyncio.wait_for(waiter, 1) == {("t", 0): 0}
    assert len(rm.produce_purgatory) == 0


async def test_acks_all_times_out_per_partition(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    rm.make_leader("t", 1, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    r0 = rm.append_as_leader("t", 0, make_batch(1), required_acks=-1)
    r1 = rm.append_as_leader("t", 1, make_batch(1), required_acks=-1)
    op = rm.delayed_produce({("t", 0): r0.last_offset + 1, ("t", 1): r1.last_offset + 1})
    assert not op.done and op.errors == {("t", 0): 0}  # partition 0 is committed already
    errors = await rm.wait_for_replication(op, 20)
    assert errors == {("t", 0): 0, ("t", 1): RequestTimedOutError.code}
    assert len(rm.produce_purgatory) == 0
    # The data stays in the log; a later follower fetch commits it.
    rm.read("t", 1, 1, 100, replica_id=2)
    assert rm.high_watermark("t", 1) == 1


async def test_acks_all_fails_when_leadership_or_the_isr_is_lost(tmp_path: Path) -> None:
    rm = make_rm(tmp_path, min_insync_replicas=2)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    r = rm.append_as_leader("t", 0, make_batch(1), required_acks=-1)
    op = rm.delayed_produce({("t", 0): r.last_offset + 1})
    rm.make_follower("t", 0, leader_id=2, leader_epoch=1)
    assert op.done and op.errors == {("t", 0): NotLeaderOrFollowerError.code}
    assert await rm.wait_for_replication(op, 1000) == {("t", 0): NotLeaderOrFollowerError.code}

    p = rm.make_leader("t", 0, leader_epoch=2, replicas=[1, 2], isr=[1, 2])
    r = rm.append_as_leader("t", 0, make_batch(1), required_acks=-1)
    op = rm.delayed_produce({("t", 0): r.last_offset + 1})
    p.isr = [1]  # follower 2 dropped out of the ISR: the HW moves without it
    p.maybe_advance_high_watermark()
    assert op.errors == {("t", 0): NotEnoughReplicasAfterAppendError.code}

    r = rm.append_as_leader("t", 0, make_batch(1), required_acks=1)
    op = rm.delayed_produce({("t", 0): r.last_offset + 1, ("gone", 0): 1})
    assert op.errors[("gone", 0)] == NotLeaderOrFollowerError.code


async def test_cancelled_waits_leave_nothing_watched(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    r = rm.append_as_leader("t", 0, make_batch(1), required_acks=-1)
    op = rm.delayed_produce({("t", 0): r.last_offset + 1})
    task = asyncio.ensure_future(rm.wait_for_replication(op, 10_000))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(rm.produce_purgatory) == 0


# ------------------------------------------------------------------- the produce handler


def _ctx(rm: ReplicaManager) -> Any:
    topic = SimpleNamespace(name="t", topic_id=None, num_partitions=2)
    image = SimpleNamespace(get=lambda name: topic if name == "t" else None, by_id=lambda _id: None)
    return SimpleNamespace(replica_manager=rm, image=image, services=SimpleNamespace(metrics=None, authorizer=None, schema_validator=None))


def _request(acks: int, timeout_ms: int = 5_000) -> dict[str, Any]:
    return {
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": memoryview(bytearray(make_batch(2)))}]}
        ],
    }


def _partition(resp: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = resp["responses"][0]["partition_responses"][0]
    return part


async def test_produce_handler_answers_acks_all_synchronously_when_committed(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.host("t", 0)
    resp = produce.handle(_ctx(rm), _request(-1))
    assert isinstance(resp, dict)  # no coroutine, no future: the single-node fast path
    assert _partition(resp)["error_code"] == 0 and _partition(resp)["base_offset"] == 0
    resp = produce.handle(_ctx(rm), _request(1))
    assert isinstance(resp, dict) and _partition(resp)["base_offset"] == 2


async def test_produce_handler_waits_for_replication(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    acks1 = produce.handle(_ctx(rm), _request(1))
    assert isinstance(acks1, dict) and _partition(acks1)["error_code"] == 0  # leader write only
    pending = produce.handle(_ctx(rm), _request(-1))
    assert not isinstance(pending, dict) and pending is not None
    task = asyncio.ensure_future(pending)
    await asyncio.sleep(0.01)
    assert not task.done()
    rm.read("t", 0, 4, 1 << 20, replica_id=2)
    resp = await asyncio.wait_for(task, 1)
    assert _partition(resp)["error_code"] == 0 and _partition(resp)["base_offset"] == 2

    timed_out = produce.handle(_ctx(rm), _request(-1, timeout_ms=10))
    assert not isinstance(timed_out, dict) and timed_out is not None
    resp = await timed_out
    assert _partition(resp)["error_code"] == RequestTimedOutError.code
    assert _partition(resp)["base_offset"] == 4  # the data was written; Kafka keeps the offset


def test_tiered_log_list_offsets_and_reads_below_the_local_start(tmp_path: Path) -> None:
    rm = make_rm(
        tmp_path, segment_bytes=500, retention_ms=-1, remote_storage_enable=True, local_retention_bytes=500
    )
    rm.make_leader("t", 0, leader_epoch=2, replicas=[1, 2], isr=[1])
    for _ in range(30):
        rm.append_as_leader("t", 0, make_batch(1), required_acks=1)
    plog = rm.partition("t", 0).log
    assert rm.fetch_offset_for_timestamp("t", 0, -5) == (-1, -1, -1)  # nothing copied yet
    bases = plog.segment_base_offsets()
    plog.update_highest_offset_in_remote(bases[3] - 1)  # what the remote log manager does
    plog.apply_retention(NOW)
    assert plog.local_log_start_offset == bases[3] and plog.log_start_offset == 0
    assert rm.fetch_offset_for_timestamp("t", 0, -2) == (0, -1, 2)  # EARLIEST: the log start
    assert rm.fetch_offset_for_timestamp("t", 0, -4) == (bases[3], -1, 2)  # EARLIEST_LOCAL
    assert rm.fetch_offset_for_timestamp("t", 0, -5) == (bases[3] - 1, -1, 2)  # LATEST_TIERED
    # below the local start: a consumer gets OFFSET_OUT_OF_RANGE (no remote reads wired here),
    # a follower OFFSET_MOVED_TO_TIERED_STORAGE, as from Kafka's leader
    r = rm.read("t", 0, 1, 1 << 20)
    assert isinstance(r.error, OffsetOutOfRangeError) and r.log_start_offset == 0
    r = rm.read("t", 0, 1, 1 << 20, replica_id=2)
    assert isinstance(r.error, OffsetMovedToTieredStorageError)
    assert offsets(read_bytes(rm, bases[3]))[0][0] == bases[3]


def test_latest_offset_is_not_available_until_a_new_leaders_high_watermark_reaches_its_epoch(
    tmp_path: Path,
) -> None:
    """KIP-207: leader again at epoch 1 with offsets 0-1 not yet replicated (high watermark 0,
    epoch start 2): a consumer's ListOffsets(latest) is refused (OFFSET_NOT_AVAILABLE from v5,
    LEADER_NOT_AVAILABLE before), a replica's is answered; once the follower has fetched up to
    the epoch start, the consumer gets the high watermark."""
    from zurau.broker.handlers import list_offsets
    from zurau.protocol.errors import LeaderNotAvailableError, OffsetNotAvailableError

    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    rm.append_as_leader("t", 0, make_batch(2), required_acks=1)
    rm.make_leader("t", 0, leader_epoch=1, replicas=[1, 2], isr=[1, 2])
    assert rm.high_watermark("t", 0) == 0
    with pytest.raises(OffsetNotAvailableError):
        rm.fetch_offset_for_timestamp("t", 0, -1, client_request=True)
    assert rm.fetch_offset_for_timestamp("t", 0, -1).offset == 0  # a replica's request
    assert rm.fetch_offset_for_timestamp("t", 0, -2, client_request=True).offset == 0  # earliest: fine

    def answer(version: int) -> int:
        ctx = _ctx(rm)
        ctx.api_version = version
        ctx.principal = "User:ANONYMOUS"
        req = {"replica_id": -1, "isolation_level": 0,
               "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
        resp = list_offsets.handle(ctx, req)  # type: ignore[arg-type]
        assert isinstance(resp, dict)
        code: int = resp["topics"][0]["partitions"][0]["error_code"]
        return code

    assert answer(5) == OffsetNotAvailableError.code and answer(4) == LeaderNotAvailableError.code
    read_bytes(rm, 2, replica_id=2)  # the follower holds 0..1: the high watermark reaches 2
    assert rm.fetch_offset_for_timestamp("t", 0, -1, client_request=True).offset == 2
    assert answer(5) == 0
