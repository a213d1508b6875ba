"""LogManager: loading, checkpoints, clean-shutdown marker, deletion, periodic work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zurau.protocol.errors import InvalidTopicError, KafkaStorageError
from zurau.protocol.records.builder import build_batch
from zurau.storage.checkpoint import read_offsets_checkpoint
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
)
from zurau.storage.log_segment import LogSegment

NOW = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def batch(i: int = 0) -> bytes:
    return build_batch([(b"k", b"v%d" % i, [], NOW + i)])


def produce(mgr: LogManager, topic: str, partition: int, n: int, config: LogConfig | None = None) -> None:
    log = mgr.get_or_create(topic, partition, config)
    for i in range(n):
        log.append(batch(i), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)


@pytest.fixture
def recovered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = LogSegment.recover

    def counting(self: LogSegment, index_interval_bytes: int, *args: Any, **kwargs: Any) -> int:
        calls.append(self.base_offset)
        return original(self, index_interval_bytes, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "recover", counting)
    return calls


def test_clean_shutdown_and_restart(tmp_path: Path, recovered: list[int]) -> None:
    mgr = LogManager([tmp_path], Clock())
    produce(mgr, "orders", 0, 5)
    produce(mgr, "orders", 1, 3)
    mgr.get("orders", 0).delete_records_before(2)  # type: ignore[union-attr]
    mgr.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert read_offsets_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {
        ("orders", 0): 5,
        ("orders", 1): 3,
    }
    assert read_offsets_checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT) == {
        ("orders", 0): 2,
        ("orders", 1): 0,
    }
    assert read_offsets_checkpoint(tmp_path / HIGH_WATERMARK_CHECKPOINT) == {
        ("orders", 0): 5,
        ("orders", 1): 3,
    }

    recovered.clear()
    mgr = LogManager([tmp_path], Clock())
    assert recovered == []  # a clean shutdown skips the rescans
    assert mgr.had_clean_shutdown[tmp_path]
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is unclean
    log = mgr.get("orders", 0)
    assert log is not None
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (2, 5, 5)
    assert len(mgr.all_logs()) == 2
    assert log.append(batch(), leader_epoch=0, now_ms=NOW).base_offset == 5


def test_unclean_restart_recovers_from_the_recovery_point(tmp_path: Path, recovered: list[int]) -> None:
    mgr = LogManager([tmp_path], Clock())
    produce(mgr, "a", 0, 10, LogConfig(segment_bytes=250))
    log = mgr.get("a", 0)
    assert log is not None and log.segment_count > 2
    log.flush()
    mgr.checkpoint()
    produce(mgr, "a", 0, 3, LogConfig(segment_bytes=250))
    # crash: no close, no marker
    recovered.clear()
    mgr2 = LogManager([tmp_path], Clock(), default_config=LogConfig(segment_bytes=250))
    assert not mgr2.had_clean_shutdown[tmp_path]
    log2 = mgr2.get("a", 0)
    assert log2 is not None and log2.log_end_offset == 13
    assert recovered and min(recovered) == max(b for b in log2.segment_base_offsets() if b <= 10)


def test_partitions_spread_over_log_dirs(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    mgr = LogManager(dirs, Clock())
    for p in range(4):
        produce(mgr, "spread", p, 1)
    homes = [mgr.log_dir_of("spread", p) for p in range(4)]
    assert homes.count(dirs[0]) == 2 and homes.count(dirs[1]) == 2
    mgr.close()
    mgr = LogManager(dirs, Clock())
    assert sorted(log.partition for log in mgr.all_logs()) == [0, 1, 2, 3]
    for d in dirs:
        assert len(read_offsets_checkpoint(d / RECOVERY_POINT_CHECKPOINT)) == 2


def test_the_same_partition_in_two_dirs_is_an_error(tmp_path: Path) -> None:
    for d in ("d1", "d2"):
        mgr = LogManager([tmp_path / d], Clock())
        produce(mgr, "dup", 0, 1)
        mgr.close()
    with pytest.raises(KafkaStorageError):
        LogManager([tmp_path / "d1", tmp_path / "d2"], Clock())


def test_delete_partition(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], Clock())
    produce(mgr, "gone", 0, 3)
    produce(mgr, "kept", 0, 3)
    assert mgr.delete_partition("gone", 0)
    assert not mgr.delete_partition("gone", 0)
    assert mgr.get("gone", 0) is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["kept-0"]
    assert ("gone", 0) not in read_offsets_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)
    # a deletion interrupted by a crash is finished at the next start
    leftover = tmp_path / "old-0.0123abcd-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"x")
    mgr.close()
    mgr = LogManager([tmp_path], Clock())
    assert not leftover.exists()
    assert [log.topic for log in mgr.all_logs()] == ["kept"]


def test_illegal_topic_names(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], Clock())
    for bad in ("../etc", "a/b", "", "..", "x" * 250, "sp ace"):
        with pytest.raises(InvalidTopicError):
            mgr.get_or_create(bad, 0)


def test_malformed_checkpoint_fails_startup(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], Clock())
    produce(mgr, "t", 0, 1)
    mgr.close()
    (tmp_path / RECOVERY_POINT_CHECKPOINT).write_text("0\n1\nt 0\n")
    with pytest.raises(KafkaStorageError, match="malformed checkpoint"):
        LogManager([tmp_path], Clock())


def test_retention_and_flush_scheduling(tmp_path: Path) -> None:
    clock = Clock()
    cfg = LogConfig(segment_bytes=300, retention_ms=1000, flush_ms=5000)
    mgr = LogManager([tmp_path], clock, default_config=cfg)
    produce(mgr, "r", 0, 12)
    log = mgr.get("r", 0)
    assert log is not None and log.segment_count > 2
    # rolled segments are flushed promptly; the active tail waits for flush.ms
    assert mgr.flush_dirty(NOW + 1) == 1
    assert log.recovery_point == log.active_segment.base_offset
    assert mgr.flush_dirty(NOW + 2) == 0
    assert mgr.flush_dirty(NOW + 5000) == 1
    assert log.recovery_point == log.log_end_offset and not log.needs_flush
    segments = log.segment_count
    assert mgr.run_retention(NOW + 10_000) == segments - 1
    assert log.segment_count == 1
    assert log.log_start_offset == log.active_segment.base_offset


def test_update_config_reaches_existing_logs(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], Clock())
    produce(mgr, "c", 0, 1)
    produce(mgr, "c", 1, 1)
    mgr.update_config("c", LogConfig(retention_ms=5))
    assert {log.config.retention_ms for log in mgr.all_logs()} == {5}
