"""Offset index, time index, checkpoint files and LogConfig."""

from __future__ import annotations

from pathlib import Path

import pytest

from zurau.protocol.errors import InvalidConfigError, KafkaStorageError
from zurau.storage.abstract_index import CorruptIndexError
from zurau.storage.checkpoint import read_offsets_checkpoint, write_offsets_checkpoint
from zurau.storage.log_config import LogConfig
from zurau.storage.offset_index import OffsetIndex, lookup_bytes
from zurau.storage.time_index import TimeIndex

# -- OffsetIndex ---------------------------------------------------------------------------------


def test_offset_index_lookup_append_reload_truncate(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100, max_entries=10)
    idx.reset()
    assert idx.lookup(150) == (100, 0)
    for rel, pos in [(4, 4100), (9, 8300), (20, 12500)]:
        idx.append(100 + rel, pos)
    idx.write_pending()
    assert path.stat().st_size == 3 * 8
    assert path.read_bytes()[:8] == (4).to_bytes(4, "big") + (4100).to_bytes(4, "big")
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(104) == (104, 4100)
    assert idx.lookup(108) == (104, 4100)
    assert idx.lookup(109) == (109, 8300)
    assert idx.lookup(10**9) == (120, 12500)
    assert idx.lookup_position(8299) == (104, 4100)
    assert idx.lookup_position(8300) == (109, 8300)
    with pytest.raises(ValueError):
        idx.append(110, 9000)  # offset not after the last entry

    reloaded = OffsetIndex(path, 100, max_entries=10)
    assert reloaded.entries == 3
    assert reloaded.last_entry() == (120, 12500)  # read from the file without a full load
    assert reloaded.lookup(115) == (109, 8300)

    reloaded.truncate_to(109)  # removes entries with offset >= 109
    assert reloaded.entries == 1
    assert path.stat().st_size == 8
    assert OffsetIndex(path, 100, 10).lookup(200) == (104, 4100)


def test_offset_index_lookup_over_raw_bytes_matches_the_index(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100, max_entries=10)
    idx.reset()
    for rel, pos in [(4, 4100), (9, 8300), (20, 12500)]:
        idx.append(100 + rel, pos)
    idx.write_pending()
    data = path.read_bytes() + b"\x00\x00\x00"  # a torn trailing entry is ignored
    for offset in (0, 99, 100, 104, 108, 109, 119, 120, 10**9):
        assert lookup_bytes(data, 100, offset) == idx.lookup(offset)
    assert lookup_bytes(b"", 100, 150) == (100, 0)


def test_offset_index_full_and_sanity(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, max_entries=2)
    idx.reset()
    idx.append(1, 10)
    assert not idx.is_full
    idx.append(2, 20)
    assert idx.is_full
    idx.write_pending()
    OffsetIndex(path, 0, 2).sanity_check(log_size=100)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 2).sanity_check(log_size=15)  # last position beyond the log
    with open(path, "ab") as f:
        f.write(b"\x00\x01\x02")
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 2).sanity_check(log_size=100)


# -- TimeIndex -----------------------------------------------------------------------------------


def test_time_index_is_monotonic_and_looks_up(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.timeindex"
    idx = TimeIndex(path, 10, max_entries=100)
    idx.reset()
    assert idx.maybe_append(1000, 12)
    assert not idx.maybe_append(1000, 15)  # not larger: ignored
    assert not idx.maybe_append(900, 16)
    assert idx.maybe_append(2000, 20)
    assert idx.maybe_append(3000, 30)
    idx.write_pending()
    assert path.stat().st_size == 3 * 12
    assert idx.lookup(999) == (-1, 10)
    assert idx.lookup(1000) == (1000, 12)
    assert idx.lookup(2999) == (2000, 20)
    assert idx.lookup(10**12) == (3000, 30)
    re = TimeIndex(path, 10, 100)
    assert re.last_entry() == (3000, 30)
    re.truncate_to(20)  # entries with offset >= 20 go
    assert re.entries == 1
    assert TimeIndex(path, 10, 100).last_entry() == (1000, 12)


def test_time_index_full(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "0.timeindex", 0, max_entries=1)
    idx.reset()
    assert idx.maybe_append(1, 1)
    assert not idx.maybe_append(2, 2)
    assert idx.maybe_append(2, 2, skip_full_check=True)


# -- checkpoints ---------------------------------------------------------------------------------


def test_checkpoint_round_trip_and_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    assert read_offsets_checkpoint(path) == {}
    write_offsets_checkpoint(path, {("b", 1): 7, ("a", 0): 12345})
    assert path.read_text() == "0\n2\na 0 12345\nb 1 7\n"
    assert read_offsets_checkpoint(path) == {("a", 0): 12345, ("b", 1): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()
    write_offsets_checkpoint(path, {})
    assert read_offsets_checkpoint(path) == {}


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "version line"),
        ("1\n0\n", "unsupported version"),
        ("0\nx\n", "count"),
        ("0\n2\na 0 1\n", "count says 2"),
        ("0\n1\na 0\n", "topic partition offset"),
        ("0\n1\na zero 1\n", "not an integer"),
    ],
)
def test_malformed_checkpoint_raises(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(KafkaStorageError) as e:
        read_offsets_checkpoint(path)
    assert why in str(e.value)
    assert str(path) in str(e.value)


# -- LogConfig -----------------------------------------------------------------------------------


def test_log_config_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1073741824
    assert c.segment_ms == 604800000
    assert c.segment_index_bytes == 10485760
    assert c.index_interval_bytes == 4096
    assert c.retention_ms == 604800000
    assert c.retention_bytes == -1
    assert c.max_message_bytes == 1048588
    assert c.message_timestamp_type == "CreateTime"
    assert c.cleanup_policy == "delete"
    assert c.flush_messages == c.flush_ms == 2**63 - 1
    assert c.file_delete_delay_ms == 60000
    assert c.min_insync_replicas == 1
    assert c.compression_type == "producer"
    assert c.max_offset_index_entries == 10485760 // 8


def test_log_config_from_topic_config() -> None:
    c = LogConfig.from_topic_config(
        {"retention.ms": "1000", "cleanup.policy": "compact,delete", "preallocate": "true", "unknown.x": "1"}
    )
    assert c.retention_ms == 1000
    assert c.delete_enabled and c.compact_enabled
    assert c.preallocate is True
    with pytest.raises(InvalidConfigError):
        LogConfig.from_topic_config({"segment.bytes": "lots"})
    with pytest.raises(InvalidConfigError):
        LogConfig(message_timestamp_type="WallClock")
    with pytest.raises(InvalidConfigError):
        LogConfig(cleanup_policy="shred")


# -- descriptors ---------------------------------------------------------------------------------


def test_index_append_descriptors_are_bounded_and_reopen_on_demand(tmp_path: Path) -> None:
    """With a bound of 4 writers, 6 logs written in turn keep at most 4 index descriptors open;
    an index whose descriptor was closed reopens it on its next write, and no entry is lost."""
    from zurau.protocol.records.builder import build_batch
    from zurau.storage.abstract_index import open_writers, set_max_open_writers
    from zurau.storage.partition_log import PartitionLog

    cfg = LogConfig(index_interval_bytes=1)
    now = 1_700_000_000_000
    logs = [PartitionLog.open(tmp_path / f"t-{i}", "t", i, cfg, now_ms=now) for i in range(6)]
    set_max_open_writers(4)
    try:
        for n in range(5):
            for log in logs:
                batch = build_batch([(None, b"v%d" % n, [], now + n)])
                log.append(batch, leader_epoch=0, now_ms=now + n)
                assert open_writers() <= 4
        logs[0].flush()  # its writers were closed by the others: flushing reopens read-only
        for log in logs:
            log.close()
        assert open_writers() == 0
    finally:
        set_max_open_writers(None)
    for i in range(6):
        index = OffsetIndex(tmp_path / f"t-{i}" / f"{0:020d}.index", 0, max_entries=100)
        assert [index.lookup(o).offset for o in range(5)] == [0, 1, 2, 3, 4]
        times = TimeIndex(tmp_path / f"t-{i}" / f"{0:020d}.timeindex", 0, max_entries=100)
        assert times.last_entry() == (now + 4, 4)


def test_open_files_limit_is_raised_and_checked(caplog: pytest.LogCaptureFixture) -> None:
    import resource

    from zurau.storage.file_limits import check_open_files, raise_open_files_limit

    soft_before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = raise_open_files_limit()
    assert soft >= soft_before and resource.getrlimit(resource.RLIMIT_NOFILE)[0] == soft
    assert check_open_files(10)
    if soft != resource.RLIM_INFINITY:
        with caplog.at_level("WARNING", logger="zurau.storage"):
            assert not check_open_files(soft)
        assert "ulimit -n" in caplog.text
