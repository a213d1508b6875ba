"""The local log of a tiered topic (KIP-405): local vs global log start, local retention that
waits for uploads, the remote log manager's hooks (copy candidates, upload data, log start
advance), reads below the local start, and restarts (clean and kill -9) keeping the remote part.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.partition_logs import NOW, make_batch, open_log
from zurau.protocol.errors import (
    OffsetMovedToTieredStorageError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumberError,
)
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.partition_log import PartitionLog
from zurau.storage.producer_state import ProducerStateManager

DAY = 86_400_000
TIERED = LogConfig(segment_bytes=500, retention_ms=-1, remote_storage_enable=True, local_retention_bytes=1000)


def _fill(log: PartitionLog, n: int = 40, *, epoch: int = 0, pid: int = -1) -> None:
    for i in range(n):
        seq = log.log_end_offset
        build = {"producer_id": pid, "producer_epoch": 0, "base_sequence": seq} if pid >= 0 else {}
        log.append(make_batch(1, ts=NOW + i, **build), leader_epoch=epoch, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)


def test_log_config_effective_local_retention() -> None:
    c = LogConfig(retention_ms=5000, retention_bytes=9000)
    assert (c.effective_local_retention_ms, c.effective_local_retention_bytes) == (5000, 9000)
    c = LogConfig(retention_ms=5000, local_retention_ms=10, local_retention_bytes=-1)
    assert (c.effective_local_retention_ms, c.effective_local_retention_bytes) == (10, -1)
    assert not c.remote_copy_enabled
    assert LogConfig(remote_storage_enable=True).remote_copy_enabled
    assert not LogConfig(remote_storage_enable=True, remote_log_copy_disable=True).remote_copy_enabled
    assert LogConfig.from_topic_config(
        {"remote.storage.enable": "true", "local.retention.ms": "7"}
    ) == LogConfig(remote_storage_enable=True, local_retention_ms=7)


def test_local_retention_waits_for_uploads_and_moves_only_the_local_start(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", TIERED)
    _fill(log)
    bases = log.segment_base_offsets()
    assert len(bases) > 4 and log.highest_offset_in_remote == -1
    assert log.apply_retention(NOW + DAY) == 0  # nothing copied: nothing deleted
    # the remote log manager copied the first two segments
    log.update_highest_offset_in_remote(bases[2] - 1)
    assert log.update_highest_offset_in_remote(0) == bases[2] - 1  # never lowered
    assert log.apply_retention(NOW + DAY) == 2
    assert log.segment_base_offsets() == bases[2:]
    assert log.log_start_offset == 0 and log.local_log_start_offset == bases[2]
    assert log.high_watermark == log.log_end_offset
    with pytest.raises(OffsetMovedToTieredStorageError):
        log.read(0, 100, max_offset=log.high_watermark)
    with pytest.raises(OffsetMovedToTieredStorageError):
        log.read_slice(bases[2] - 1, 100, max_offset=log.high_watermark)
    assert not isinstance(OffsetMovedToTieredStorageError("x"), OffsetOutOfRangeError)
    assert log.read(bases[2], 100, max_offset=log.high_watermark)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.log_end_offset + 1, 100, max_offset=log.high_watermark)
    # everything copied: local size retention keeps ~1000 bytes locally
    log.update_highest_offset_in_remote(log.log_end_offset - 1)
    log.apply_retention(NOW + DAY)
    assert log.size_in_bytes <= 1000 + 500 and log.log_start_offset == 0
    # the epochs of the remote part stay (uploads and OffsetForLeaderEpoch need them)
    assert log.leader_epoch_cache.entries[0].start_offset == 0


def test_local_time_retention_rolls_a_breached_active_segment(tmp_path: Path) -> None:
    cfg = LogConfig(
        segment_bytes=10_000, retention_ms=10 * DAY, local_retention_ms=1000, remote_storage_enable=True
    )
    log = open_log(tmp_path / "t-0", cfg)
    _fill(log, 5)
    assert log.segment_count == 1
    assert log.apply_retention(NOW + DAY) == 0
    assert log.segment_count == 2 and log.active_segment.size == 0  # rolled, so it can be copied
    assert [c.base_offset for c in log.segments_eligible_for_copy()] == [0]
    log.update_highest_offset_in_remote(4)
    assert log.apply_retention(NOW + DAY) == 1
    assert (log.log_start_offset, log.local_log_start_offset) == (0, 5)


def test_copy_disabled_retention_is_ordinary(tmp_path: Path) -> None:
    cfg = LogConfig(
        segment_bytes=500, retention_bytes=1000, remote_storage_enable=True, remote_log_copy_disable=True
    )
    log = open_log(tmp_path / "t-0", cfg)
    _fill(log)
    assert log.segments_eligible_for_copy() == []
    assert log.apply_retention(NOW) > 0  # nothing copied, yet deleted: KIP-950
    assert log.log_start_offset == log.local_log_start_offset == log.segment_base_offsets()[0]


def test_copy_candidates_and_upload_data(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", TIERED)
    _fill(log, 20, epoch=3, pid=7)
    log.assign_leader_epoch(5, log.log_end_offset)
    _fill(log, 20, epoch=5, pid=7)
    bases = log.segment_base_offsets()
    cands = log.segments_eligible_for_copy()
    assert [c.base_offset for c in cands] == bases[:-1]  # every closed segment, not the active one
    assert all(c.end_offset == nxt - 1 for c, nxt in zip(cands, bases[1:], strict=False))
    assert [c.base_offset for c in log.segments_eligible_for_copy(bases[2])] == bases[:2]
    log.high_watermark = bases[3]
    assert [c.base_offset for c in log.segments_eligible_for_copy()] == bases[:3]
    log.update_highest_offset_in_remote(bases[1] - 1)
    assert [c.base_offset for c in log.segments_eligible_for_copy()] == bases[1:3]

    data = log.segment_upload_data(bases[0])
    assert data.log_segment.stat().st_size == cands[0].size
    assert data.offset_index.name.endswith(".index") and data.time_index.name.endswith(".timeindex")
    assert data.transaction_index is None
    assert data.producer_snapshot.name == f"{bases[1]:020d}.snapshot"
    offset, producers = ProducerStateManager.decode(data.producer_snapshot.read_bytes())
    assert offset == bases[1] and producers[7].last_offset == bases[1] - 1
    assert data.leader_epoch_index.decode().split("\n")[2:3] == ["3 0"]
    # a segment straddling the epoch change carries both epochs
    change = 20
    straddling = next(b for b, nxt in zip(bases, bases[1:], strict=False) if b < change < nxt)
    assert log.leader_epochs_in_range(straddling, log.log_end_offset) == ((3, 0), (5, change))
    assert log.leader_epochs_in_range(bases[0], bases[1] - 1) == ((3, 0),)
    # a pruned snapshot is rebuilt from the log
    data.producer_snapshot.unlink()
    again = log.segment_upload_data(bases[0]).producer_snapshot
    assert ProducerStateManager.decode(again.read_bytes())[1][7].last_offset == bases[1] - 1
    with pytest.raises(ValueError):
        log.segment_upload_data(bases[-1])
    with pytest.raises(KeyError):
        log.segment_upload_data(bases[0] + 1)
    # one snapshot per segment is kept while the log copies
    assert len(log.producer_state.snapshot_offsets()) >= len(bases) - 1


def test_advance_log_start_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", TIERED)
    _fill(log)
    bases = log.segment_base_offsets()
    log.update_highest_offset_in_remote(bases[3] - 1)
    log.apply_retention(NOW)
    assert log.local_log_start_offset == bases[3]
    assert log.advance_log_start_offset(bases[1] + 1) == bases[1] + 1
    assert log.local_log_start_offset == bases[3] and log.segment_base_offsets()[0] == bases[3]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(bases[1], 100, max_offset=log.high_watermark)
    assert log.advance_log_start_offset(5) == bases[1] + 1  # never backwards
    # past the local start: local segments wholly below it go at once
    assert log.advance_log_start_offset(bases[4] + 1) == bases[4] + 1
    assert log.segment_base_offsets()[0] == bases[4] and log.local_log_start_offset == bases[4] + 1
    with pytest.raises(OffsetOutOfRangeError):
        log.advance_log_start_offset(log.high_watermark + 1)


def test_reopen_keeps_the_log_start_below_the_local_start(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, TIERED)
    _fill(log)
    bases = log.segment_base_offsets()
    log.update_highest_offset_in_remote(bases[3] - 1)
    log.apply_retention(NOW)
    log.close()
    again = open_log(
        d, TIERED, log_start_offset=0, high_watermark=log.high_watermark, had_clean_shutdown=True
    )
    assert (again.log_start_offset, again.local_log_start_offset) == (0, bases[3])
    assert again.high_watermark == log.high_watermark and again.highest_offset_in_remote == -1
    again.close()
    # a log that is not tiered raises it to its first segment, as before
    local = open_log(d, LogConfig(segment_bytes=500), log_start_offset=0)
    assert local.log_start_offset == bases[3]
    local.close()


_KILLED_CHILD = textwrap.dedent(
    """
    import os, sys
    sys.path[:0] = [{src!r}, {root!r}]
    from pathlib import Path
    from tests.support.partition_logs import NOW, make_batch
    from zurau.storage.log_config import LogConfig
    from zurau.storage.log_manager import LogManager
    cfg = LogConfig(segment_bytes=500, retention_ms=-1, remote_storage_enable=True, local_retention_bytes=1000)
    lm = LogManager([Path({logs!r})], lambda: NOW, default_config=cfg)
    log = lm.get_or_create("t", 0)
    for i in range(40):
        log.append(make_batch(1, ts=NOW + i), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    bases = log.segment_base_offsets()
    log.update_highest_offset_in_remote(bases[3] - 1)
    log.apply_retention(NOW)
    log.advance_log_start_offset(bases[1])
    lm.checkpoint()
    print(bases[1], bases[3], flush=True)
    sys.stdin.read()
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_restart_after_kill_keeps_the_remote_part(tmp_path: Path, sig: signal.Signals) -> None:
    root = Path(__file__).resolve().parents[2]
    logs = tmp_path / "logs"
    code = _KILLED_CHILD.format(src=str(root / "src"), root=str(root), logs=str(logs))
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    start, local_start = (int(x) for x in child.stdout.readline().split())
    os.kill(child.pid, sig)
    child.wait(timeout=30)
    lm = LogManager([logs], lambda: NOW, default_config=TIERED)
    log = lm.get("t", 0)
    assert log is not None
    assert (log.log_start_offset, log.local_log_start_offset) == (start, local_start)
    assert start < local_start
    with pytest.raises(OffsetMovedToTieredStorageError):
        log.read(start, 100, max_offset=log.log_end_offset)
    lm.close()


def test_a_follower_installs_the_remote_aux_state_and_keeps_it_across_a_restart(tmp_path: Path) -> None:
    # The leader: an idempotent producer (id 7, sequence = offset) in epochs 3 then 5.
    leader = open_log(tmp_path / "leader" / "t-0", TIERED)
    _fill(leader, 20, epoch=3, pid=7)
    leader.assign_leader_epoch(5, leader.log_end_offset)
    _fill(leader, 20, epoch=5, pid=7)
    bases = leader.segment_base_offsets()
    # The remote segment holding the leader's local start - 1 ends at nxt - 1, in epoch 5.
    k = next(i for i, b in enumerate(bases) if b > 20)
    nxt = bases[k]
    snapshot = leader.segment_upload_data(bases[k - 1]).producer_snapshot.read_bytes()
    epochs = leader.leader_epoch_cache.entries  # (3, 0), (5, 20)
    # The follower held older data of its own; none of it survives.
    d = tmp_path / "follower" / "t-0"
    follower = open_log(d, TIERED)
    _fill(follower, 5, epoch=1, pid=9)
    for bad_offset, bad_snapshot in ((nxt, b"junk"), (nxt + 1, snapshot), (nxt, b"")):
        with pytest.raises(ValueError):
            follower.install_remote_aux_state(bad_offset, 2, epochs, bad_snapshot)
    with pytest.raises(ValueError):
        follower.install_remote_aux_state(nxt, nxt + 1, epochs, snapshot)
    assert follower.log_end_offset == 5 and follower.producer_entry(9) is not None, "refused: untouched"

    follower.install_remote_aux_state(nxt, 2, [*epochs, EpochEntry(6, nxt)], snapshot)

    def check(log: PartitionLog) -> None:
        assert (log.log_start_offset, log.local_log_start_offset, log.log_end_offset) == (2, nxt, nxt)
        assert [tuple(e) for e in log.leader_epoch_cache.entries] == [(3, 2), (5, 20)]
        assert log.end_offset_for_epoch(3) == (3, 20)
        assert log.producer_entry(9) is None
        entry = log.producer_entry(7)
        assert entry is not None and entry.last_seq == nxt - 1 and entry.last_offset == nxt - 1
        assert [o for o in log.producer_state.snapshot_offsets()] == [nxt]

    check(follower)
    assert follower.high_watermark == nxt and follower.highest_offset_in_remote == nxt - 1
    with pytest.raises(OffsetMovedToTieredStorageError):
        follower.read(nxt - 1, 100, max_offset=nxt)
    # The leader's next batches follow byte for byte.
    follower.append_as_follower(leader.read(nxt, 1 << 20, max_offset=leader.log_end_offset), now_ms=NOW)
    leo = follower.log_end_offset
    entry = follower.producer_entry(7)
    assert leo > nxt and entry is not None and entry.last_seq == leo - 1
    follower.close()

    # After a restart (the log manager checkpointed log start 2) the state is the same.
    again = open_log(d, TIERED, log_start_offset=2, high_watermark=nxt, had_clean_shutdown=True)
    assert (again.log_start_offset, again.local_log_start_offset, again.log_end_offset) == (2, nxt, leo)
    assert [tuple(e) for e in again.leader_epoch_cache.entries] == [(3, 2), (5, 20)]
    # Became leader: the producer's next sequence continues, a retry is a duplicate, a gap fails.
    ok = again.append(
        make_batch(1, producer_id=7, producer_epoch=0, base_sequence=leo), leader_epoch=6, now_ms=NOW
    )
    assert not ok.duplicate and ok.base_offset == leo
    retry = again.append(
        make_batch(1, producer_id=7, producer_epoch=0, base_sequence=leo), leader_epoch=6, now_ms=NOW
    )
    assert retry.duplicate and retry.base_offset == leo
    with pytest.raises(OutOfOrderSequenceNumberError):
        again.append(
            make_batch(1, producer_id=7, producer_epoch=0, base_sequence=leo + 5), leader_epoch=6, now_ms=NOW
        )
    again.close()


def test_a_crash_inside_the_install_reopens_an_empty_log_at_the_old_start(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader" / "t-0", TIERED)
    _fill(leader, 40, epoch=3, pid=7)
    bases = leader.segment_base_offsets()
    snapshot = leader.segment_upload_data(bases[2]).producer_snapshot.read_bytes()
    d = tmp_path / "follower" / "t-0"
    follower = open_log(d, TIERED)
    follower.install_remote_aux_state(bases[3], 0, leader.leader_epoch_cache.entries, snapshot)
    # As if killed after the snapshot and checkpoint were written, before the segment was created.
    for seg in list(d.glob("*.log")):
        seg.unlink()
    again = open_log(d, TIERED, log_start_offset=0)
    assert again.log_end_offset == 0 and again.producer_entry(7) is None
    assert again.producer_state.snapshot_offsets() == [] and again.leader_epoch_cache.entries == []
