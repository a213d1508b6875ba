"""Flushing a log while the event loop keeps appending (storage/log_flush.py).

The split under test: ``PartitionLog.prepare_flush`` (on the loop) captures private descriptors
and the target offset, ``FlushPlan.run`` (any thread) only fsyncs and closes them, and
``PartitionLog.complete_flush`` (on the loop) advances the recovery point to the captured target.
Appends, rolls, retention and truncation may happen between the steps. The "thread" step runs
in a real thread here, held inside its first fsync while the test appends.
"""

from __future__ import annotations

import os
import stat
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.partition_logs import NOW, open_log
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.storage import log_flush
from zurau.storage.checkpoint import read_offsets_checkpoint
from zurau.storage.log_config import LogConfig
from zurau.storage.log_flush import FlushPlan, sync_all
from zurau.storage.log_manager import RECOVERY_POINT_CHECKPOINT, LogManager
from zurau.storage.partition_log import PartitionLog


def batch(i: int) -> bytes:
    return build_batch([(b"k", b"value-%06d" % i, [], NOW + i)])


def append(log: PartitionLog, start: int, n: int) -> None:
    for i in range(start, start + n):
        log.append(batch(i), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)


def values(log: PartitionLog) -> list[bytes]:
    out: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, max_offset=log.log_end_offset)
        for pos, h in iter_batches(data):
            out.extend(bytes(r.value or b"") for r in decode_batch_records(data[pos : pos + h.size]))
            offset = h.next_offset
    return out


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class HeldFsync:
    """``os.fsync`` that records what it synced and holds the first call until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.directories = 0
        self.files = 0
        self._real: Callable[[int], None] = os.fsync
        self._held = False

    def __call__(self, fd: int) -> None:
        if not self._held and threading.current_thread() is not threading.main_thread():
            self._held = True
            self.entered.set()
            assert self.release.wait(10), "the test never released the fsync"
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            self.directories += 1
        else:
            self.files += 1
        self._real(fd)


@pytest.fixture
def fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldFsync]:
    held = HeldFsync()
    monkeypatch.setattr(os, "fsync", held)
    yield held
    held.release.set()


def run_in_thread(plan: FlushPlan) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def target() -> None:
        try:
            plan.run()
        except BaseException as e:  # surfaced by the test
            errors.append(e)

    t = threading.Thread(target=target)
    t.start()
    return t, errors


def test_a_roll_during_the_fsync_keeps_its_directory_sync_pending(tmp_path: Path, fsync: HeldFsync) -> None:
    """The old flush read and reset ``_created_since_flush`` in the thread: a roll made while
    the directory was being fsynced lost its own directory fsync."""
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    append(log, 0, 8)
    assert log.segment_count >= 2 and log.directory_sync_pending
    plan = log.prepare_flush()
    target = log.log_end_offset
    assert plan.target == target
    t, errors = run_in_thread(plan)
    assert fsync.entered.wait(5)
    # Meanwhile, on the loop: more appends and a roll (a new segment file in the directory).
    segments = log.segment_count
    append(log, 8, 8)
    assert log.segment_count > segments
    fsync.release.set()
    t.join(5)
    assert not errors and plan.synced
    log.complete_flush(plan)
    assert log.recovery_point == target < log.log_end_offset, "only what the plan captured"
    assert log.directory_sync_pending, "the new segment's directory entry is not yet durable"
    assert log.needs_flush
    dirs_before = fsync.directories
    log.flush()
    assert fsync.directories == dirs_before + 1, "the next flush fsyncs the directory again"
    assert not log.directory_sync_pending and log.recovery_point == log.log_end_offset


def test_the_thread_touches_only_its_own_descriptors(tmp_path: Path, fsync: HeldFsync) -> None:
    """Index entries appended, segments rolled and deleted (descriptors closed) while the fsync
    runs: nothing is lost or written twice, no descriptor leaks, recovery from the recovery
    point finds every record and sane indexes."""
    config = LogConfig(
        segment_bytes=600, index_interval_bytes=0, retention_bytes=2000, file_delete_delay_ms=0
    )
    log = PartitionLog.open(tmp_path / "t-0", "t", 0, config, now_ms=NOW)
    append(log, 0, 10)
    fds_before = open_fds()
    plan = log.prepare_flush()
    held = plan.descriptor_count
    assert held >= 4 and open_fds() == fds_before + held, "the plan holds descriptors of its own"
    t, errors = run_in_thread(plan)
    assert fsync.entered.wait(5)
    append(log, 10, 30)
    assert log.apply_retention(NOW) > 0  # closes the deleted segments' descriptors at once
    fds_at_release = open_fds()
    fsync.release.set()
    t.join(5)
    assert not errors and plan.synced
    log.complete_flush(plan)
    assert open_fds() == fds_at_release - held, "the thread closed every descriptor it was given"
    start, end = log.log_start_offset, log.log_end_offset
    expected = [b"value-%06d" % i for i in range(start, end)]
    assert values(log) == expected
    rp = log.recovery_point
    assert rp == max(plan.target, start), "the captured target (or the new log start offset)"
    # Kill-like: no close, no clean-shutdown marker; reopen from the recovery point.
    reopened = PartitionLog.open(tmp_path / "t-0", "t", 0, config, rp, start, now_ms=NOW)
    assert values(reopened) == expected
    for seg in reopened._segments:
        raw = seg.offset_index.path.read_bytes()
        assert len(raw) % 8 == 0, "whole entries only"
        for rel, position in struct.iter_unpack(">ii", raw):
            found = seg.find_batch(seg.base_offset + rel)
            assert found is not None and found[0] == position, "each entry points at its batch"
            assert found[1].last_offset == seg.base_offset + rel


def test_a_truncation_before_completion_keeps_the_recovery_point_down(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, 0, 3)
    log.flush()
    append(log, 3, 7)
    plan = log.prepare_flush()
    assert plan.target == 10
    log.truncate_to(5)
    append(log, 5, 5)  # other data at the offsets the plan captured
    plan.run()
    log.complete_flush(plan)
    assert log.recovery_point == 3, "the plan's target belongs to a log that is gone"


def test_a_synchronous_flush_meanwhile_is_never_undone(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", flush_messages=4)
    append(log, 0, 2)
    plan = log.prepare_flush()
    append(log, 2, 2)  # flush.messages: a synchronous flush to the log end
    assert log.recovery_point == 4 and log.unflushed_messages == 0
    plan.run()
    log.complete_flush(plan)
    assert log.recovery_point == 4 and log.unflushed_messages == 0
    append(log, 4, 1)
    assert log.unflushed_messages == 1


def test_a_discarded_plan_closes_its_descriptors_and_changes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, 0, 3)
    fds_before = open_fds()
    plan = log.prepare_flush()
    plan.discard()
    assert open_fds() == fds_before
    plan.run()  # claims nothing: no fsync of closed (or reused) descriptor numbers
    assert not plan.synced
    log.complete_flush(plan)
    assert log.recovery_point == 0 and log.needs_flush
    plan.discard()  # idempotent


def test_sync_all_runs_every_plan_and_reports_the_first_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = PartitionLog.open(tmp_path / "a-0", "a", 0, LogConfig(), now_ms=NOW)
    b = PartitionLog.open(tmp_path / "b-0", "b", 0, LogConfig(), now_ms=NOW)
    append(a, 0, 2)
    append(b, 0, 2)
    plans = [a.prepare_flush(), b.prepare_flush()]
    fds_before = open_fds() - sum(p.descriptor_count for p in plans)
    real = os.fsync
    failed: list[int] = []

    def failing_first(fd: int) -> None:
        if not failed:
            failed.append(fd)
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(log_flush.os, "fsync", failing_first)
    with pytest.raises(OSError):
        sync_all(plans)
    assert open_fds() == fds_before
    assert [p.synced for p in plans] == [False, True]
    a.complete_flush(plans[0])
    b.complete_flush(plans[1])
    assert (a.recovery_point, b.recovery_point) == (0, 2)


def test_log_manager_flush_dirty_in_two_steps(tmp_path: Path) -> None:
    now = [NOW]
    cfg = LogConfig(segment_bytes=300, flush_ms=5000)
    mgr = LogManager([tmp_path], lambda: now[0], default_config=cfg)
    log = mgr.get_or_create("r", 0)
    append(log, 0, 12)
    prepared = mgr.prepare_flush_dirty(NOW + 1)
    assert [lg for lg, _plan in prepared] == [log], "a rolled segment is due at once"
    append(log, 12, 4)
    sync_all([plan for _lg, plan in prepared])
    assert mgr.complete_flushes(prepared) == 1
    assert log.recovery_point == prepared[0][1].target < log.log_end_offset


def test_a_checkpoint_snapshot_written_late_never_replaces_a_newer_checkpoint(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], lambda: NOW)
    append(mgr.get_or_create("a", 0), 0, 2)
    append(mgr.get_or_create("b", 0), 0, 2)
    for log in mgr.all_logs():
        log.flush()
    old = mgr.checkpoint_snapshot()
    assert mgr.delete_partition("b", 0)  # writes a newer checkpoint on the loop
    mgr.write_checkpoint(old)  # the thread's write of the older snapshot comes late
    assert set(read_offsets_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)) == {("a", 0)}
    new = mgr.checkpoint_snapshot()
    mgr.write_checkpoint(new)
    assert read_offsets_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {("a", 0): 2}
