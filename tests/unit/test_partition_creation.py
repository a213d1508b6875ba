"""Creating many partitions at once (issue 34): the no-recovery creation path, the one ``syncfs``
a flush round shares among many new logs, and what a process killed at any point of a partition's
creation leaves for the next start (a usable partition, or none).

A kill is simulated by making the k-th file-system call of the creation raise an exception that
no code catches (nothing more reaches the disk after it, as after ``kill -9``), for every k until
the creation completes; the process-level test is tests/fault/test_topic_creation_kill9.py."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.partition_logs import NOW, make_batch
from zurau.storage import log_flush
from zurau.storage.leader_epoch_cache import LeaderEpochCache
from zurau.storage.log_manager import GROUPED_SYNC_MIN_LOGS, LogManager
from zurau.storage.partition_log import PartitionLog


def _now() -> int:
    return NOW


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- the creation path -----------------------------------------------------------------------------


def test_a_new_partition_is_an_empty_log_with_its_segment_files_and_no_recovery(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    log = mgr.get_or_create("t", 3)
    # The index files come with their first entries; an absent index is an empty one.
    assert os.listdir(tmp_path / "t-3") == ["00000000000000000000.log"]
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, log.recovery_point) == (0, 0, 0, 0)
    assert log.created_unsynced and log.directory_sync_pending
    assert log.assign_leader_epoch(0, 0)
    log.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    assert log.log_end_offset == 2
    mgr.close()


def test_a_directory_already_there_is_opened_not_recreated(tmp_path: Path) -> None:
    first = PartitionLog.open(
        tmp_path / "t-0", "t", 0, LogManager([tmp_path], _now).default_config, now_ms=NOW
    )
    first.append(make_batch(3), leader_epoch=0, now_ms=NOW)
    first.close()
    assert PartitionLog.create_new(tmp_path / "t-0", "t", 0, first.config, now_ms=NOW) is None
    mgr = LogManager([tmp_path / "empty"], _now)  # loads nothing: t-0 is elsewhere
    mgr.log_dirs = [tmp_path]  # as if the directory had appeared after the load
    log = mgr.get_or_create("t", 0)
    assert log.log_end_offset == 3 and log.created_unsynced
    mgr.close()


# -- the grouped sync of new logs ----------------------------------------------------------------


def test_a_round_of_many_new_logs_shares_one_syncfs_and_completes_them_all(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    n = GROUPED_SYNC_MIN_LOGS + 8
    logs = [mgr.get_or_create("t", i) for i in range(n)]
    for lg in logs:
        lg.assign_leader_epoch(0, 0)
    before = _open_fds()
    plans = mgr.prepare_flush_dirty(NOW, max_descriptors=16)  # one shared descriptor: all fit
    assert len(plans) == n
    groups = {id(p.group) for _lg, p in plans}
    assert len(groups) == 1 and None not in {p.group for _lg, p in plans}
    assert _open_fds() == before + 1
    log_flush.sync_all([p for _lg, p in plans])
    assert _open_fds() == before
    assert mgr.complete_flushes(plans) == n
    assert not any(lg.needs_flush or lg.created_unsynced for lg in logs)
    assert mgr.prepare_flush_dirty(NOW) == []
    mgr.close()


def test_a_few_new_logs_keep_plans_of_their_own(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    logs = [mgr.get_or_create("t", i) for i in range(3)]
    plans = mgr.prepare_flush_dirty(NOW)
    assert [p.group for _lg, p in plans] == [None, None, None]
    assert all(p.descriptor_count == 3 for _lg, p in plans)  # .log, its dir, the log dir
    mgr.flush_dirty(NOW)
    assert not any(lg.needs_flush for lg in logs)
    mgr.close()


def test_a_failed_syncfs_completes_no_log_and_the_next_round_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = LogManager([tmp_path], _now)
    logs = [mgr.get_or_create("t", i) for i in range(GROUPED_SYNC_MIN_LOGS)]
    before = _open_fds()

    def failing(_fd: int) -> int:
        ctypes.set_errno(5)  # EIO
        return -1

    monkeypatch.setattr(log_flush, "_SYNCFS", failing)
    plans = mgr.prepare_flush_dirty(NOW)
    with pytest.raises(OSError, match="syncfs"):
        log_flush.sync_all([p for _lg, p in plans])
    for _lg, p in plans:
        p.discard()
    assert _open_fds() == before
    assert mgr.complete_flushes(plans) == 0
    assert all(lg.needs_flush and lg.created_unsynced for lg in logs)
    monkeypatch.undo()
    assert mgr.flush_dirty(NOW) == len(logs)
    assert not any(lg.needs_flush for lg in logs)
    mgr.close()


def test_discarded_plans_close_the_shared_descriptor(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    for i in range(GROUPED_SYNC_MIN_LOGS):
        mgr.get_or_create("t", i)
    before = _open_fds()
    plans = mgr.prepare_flush_dirty(NOW)
    assert _open_fds() == before + 1
    for _lg, p in plans:
        p.discard()
    assert _open_fds() == before
    assert mgr.complete_flushes(plans) == 0
    mgr.close()


# -- a process killed while creating a partition ---------------------------------------------------


class _Killed(BaseException):
    """The process died here: no handler runs, nothing more reaches the disk."""


_MUTATING = ("mkdir", "open", "write", "replace", "rename", "truncate", "ftruncate", "unlink", "utime")


@pytest.fixture
def kill_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], list[str]]]:
    """``kill_at(k)`` arms the k-th (0-based) file-system call from then on to die (a write dies
    after writing half its bytes); returns the list of calls made, appended to as they happen."""
    state: dict[str, Any] = {"left": None, "calls": []}
    originals = {name: getattr(os, name) for name in _MUTATING}

    def wrap(name: str) -> Callable[..., Any]:
        real = originals[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            if state["left"] is not None:
                state["calls"].append(name)
                if state["left"] == 0:
                    state["left"] = None
                    if name == "write" and len(args[1]) > 1:
                        real(args[0], bytes(args[1])[: len(args[1]) // 2])
                    raise _Killed(name)
                state["left"] -= 1
            return real(*args, **kwargs)

        return call

    for name in _MUTATING:
        monkeypatch.setattr(os, name, wrap(name))

    def arm(k: int) -> list[str]:
        state["left"] = k
        state["calls"] = []
        return state["calls"]

    yield arm
    state["left"] = None


def _create_as_a_new_leader(mgr: LogManager, topic: str, partition: int) -> None:
    """What the replica manager does for a partition it leads from its creation."""
    log = mgr.get_or_create(topic, partition)
    log.assign_leader_epoch(0, log.log_end_offset)


def test_a_kill_at_any_point_of_a_partitions_creation_leaves_a_usable_partition_or_none(
    tmp_path: Path, kill_at: Callable[[int], list[str]]
) -> None:
    outcomes: set[str] = set()
    k = 0
    while True:
        log_dir = tmp_path / f"run-{k}"
        mgr = LogManager([log_dir], _now)
        _create_as_a_new_leader(mgr, "t", 0)  # an existing partition beside it
        mgr.flush_dirty(NOW)
        calls = kill_at(k)
        try:
            _create_as_a_new_leader(mgr, "t", 1)
            completed = True
        except _Killed:
            completed = False
        kill_at(-1)  # disarmed: nothing more is counted
        assert calls, "the creation made no file-system call"
        # The next start over what reached the disk (the killed manager is abandoned unclosed).
        again = LogManager([log_dir], _now)
        assert again.get("t", 0) is not None
        log = again.get("t", 1)
        if log is None:
            outcomes.add("none")
            assert not (log_dir / "t-1").exists()
        else:
            outcomes.add("usable")
            assert log.log_end_offset == 0 and log.log_start_offset == 0
            # Leading it again (the metadata says so) and appending to it works.
            log.assign_leader_epoch(1, 0)
            log.append(make_batch(3), leader_epoch=1, now_ms=NOW)
            assert log.log_end_offset == 3
            assert log.read(0, 1 << 20, max_offset=3)
            assert not [n for n in os.listdir(log.directory) if n.endswith(".tmp")]
        again.close()
        # And it reloads cleanly once more, with the records.
        third = LogManager([log_dir], _now)
        reloaded = third.get("t", 1)
        assert (reloaded is None) == (log is None)
        if reloaded is not None:
            assert reloaded.log_end_offset == 3
            assert LeaderEpochCache.load(reloaded.directory)[0].entries[-1].epoch == 1
        third.close()
        if completed:
            break
        k += 1
    assert k >= 5, "each step of the creation was interrupted once"
    assert outcomes == {"none", "usable"}


def test_a_new_logs_index_files_come_with_its_first_entries_and_restarts_need_none(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    empty = mgr.get_or_create("t", 0)
    small = mgr.get_or_create("t", 1)
    big = mgr.get_or_create("t", 2)
    small.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    for _ in range(4):  # past index.interval.bytes: the offset index gets an entry
        big.append(make_batch(20, value=b"v" * 100), leader_epoch=0, now_ms=NOW)
    assert not empty.active_segment.offset_index.path.exists()
    assert big.active_segment.offset_index.path.exists()
    mgr.close()  # a clean shutdown gives a non-empty segment its index files
    assert not (tmp_path / "t-0" / "00000000000000000000.index").exists()
    assert (tmp_path / "t-1" / "00000000000000000000.index").exists()
    again = LogManager([tmp_path], _now)
    assert [again.get("t", i).log_end_offset for i in range(3)] == [0, 1, 80]  # type: ignore[union-attr]
    assert not (tmp_path / "t-0" / "00000000000000000000.index").exists()  # still nothing to create
    again.get("t", 0).append(make_batch(2), leader_epoch=0, now_ms=NOW)  # type: ignore[union-attr]
    # Abandoned unclosed (as after kill -9): the next start rescans and serves every log.
    third = LogManager([tmp_path], _now)
    assert [third.get("t", i).log_end_offset for i in range(3)] == [2, 1, 80]  # type: ignore[union-attr]
    assert third.get("t", 0).read(0, 1 << 20, max_offset=2)  # type: ignore[union-attr]
    third.close()
