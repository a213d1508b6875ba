"""LeaderEpochCache: assignment, OffsetForLeaderEpoch lookups, truncation, the checkpoint file,
and how PartitionLog keeps it on appends, truncation, DeleteRecords and recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.partition_logs import NOW, make_batch, open_log
from zurau.protocol.errors import KafkaStorageError
from zurau.storage.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    LeaderEpochCache,
    encode_leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    read_leader_epoch_checkpoint,
)

# ---------------------------------------------------------------------------------- the cache


def test_assign_keeps_epochs_and_offsets_increasing(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path)
    assert c.latest_epoch == -1 and c.entries == []
    assert c.maybe_assign(0, 0)
    assert not c.maybe_assign(0, 5)  # same epoch, later offset: nothing new
    assert c.maybe_assign(2, 10)
    assert c.maybe_assign(5, 20)
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(5, 20)]
    assert c.latest_epoch == 5
    # An older epoch (a follower overwritten by a new leader) removes every entry it contradicts.
    assert c.maybe_assign(3, 15)
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 15)]
    # Same epoch starting earlier: replaces the entry.
    assert c.maybe_assign(3, 12)
    assert c.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 12)]
    assert not c.maybe_assign(-1, 30)  # batches without an epoch are ignored
    assert c.epoch_for_offset(11) == 2 and c.epoch_for_offset(0) == 0 and c.epoch_for_offset(99) == 3


def test_end_offset_for_follows_kafka(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path, [EpochEntry(1, 5), EpochEntry(3, 10), EpochEntry(6, 20)])
    leo = 30
    assert c.end_offset_for(-1, leo) == (-1, -1)  # undefined epoch
    assert c.end_offset_for(6, leo) == (6, 30)  # latest epoch: the log end offset
    assert c.end_offset_for(3, leo) == (3, 20)  # start of the next epoch
    assert c.end_offset_for(4, leo) == (3, 20)  # largest epoch <= 4 is 3
    assert c.end_offset_for(0, leo) == (0, 5)  # below every epoch: the first one's start
    assert c.end_offset_for(7, leo) == (-1, -1)  # above every epoch
    assert LeaderEpochCache(tmp_path).end_offset_for(0, leo) == (-1, -1)  # empty cache


def test_truncation_from_end_and_start(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path, [EpochEntry(1, 5), EpochEntry(3, 10), EpochEntry(6, 20)])
    assert not c.truncate_from_end(21)
    assert c.truncate_from_end(20)
    assert c.entries == [EpochEntry(1, 5), EpochEntry(3, 10)] and c.latest_epoch == 3
    assert not c.truncate_from_start(5)  # an entry starting exactly there stays
    assert c.truncate_from_start(12)  # the covering entry moves up to the new start
    assert c.entries == [EpochEntry(3, 12)]
    assert c.truncate_from_start(50)
    assert c.entries == [EpochEntry(3, 50)] and c.latest_epoch == 3
    c.clear()
    assert c.entries == [] and c.latest_epoch == -1


def test_checkpoint_file_is_kafkas_format(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path)
    c.maybe_assign(0, 0)
    c.maybe_assign(4, 1234)
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    assert path.read_text() == "0\n2\n0 0\n4 1234\n"
    assert not (tmp_path / (LEADER_EPOCH_CHECKPOINT + ".tmp")).exists()
    loaded, found = LeaderEpochCache.load(tmp_path)
    assert found and loaded.entries == [EpochEntry(0, 0), EpochEntry(4, 1234)]
    c.truncate_from_end(1000)
    assert path.read_text() == "0\n1\n0 0\n"


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\n0 0\n", "0\n1\n0\n", "0\n1\nx 0\n", "0\n", "\xff"])
def test_malformed_checkpoint(tmp_path: Path, text: str) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(KafkaStorageError):
        read_leader_epoch_checkpoint(path)
    cache, found = LeaderEpochCache.load(tmp_path)  # unreadable: rebuilt from the log by the caller
    assert not found and cache.entries == []


def test_missing_checkpoint_reads_as_none(tmp_path: Path) -> None:
    assert read_leader_epoch_checkpoint(tmp_path / LEADER_EPOCH_CHECKPOINT) is None


def test_checkpoint_bytes_parse_without_a_file() -> None:
    entries = [EpochEntry(0, 0), EpochEntry(3, 1234)]
    assert parse_leader_epoch_checkpoint(encode_leader_epoch_checkpoint(entries), "x") == entries
    assert parse_leader_epoch_checkpoint(encode_leader_epoch_checkpoint([]), "x") == []
    with pytest.raises(KafkaStorageError, match="segment-7/leader-epoch-checkpoint, line 3"):
        parse_leader_epoch_checkpoint(b"0\n1\n0 zero\n", "segment-7/leader-epoch-checkpoint")


def test_non_monotonic_checkpoint_entries_are_dropped_on_load(tmp_path: Path) -> None:
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n0 0\n5 10\n3 20\n")
    cache, found = LeaderEpochCache.load(tmp_path)
    assert found and cache.entries == [EpochEntry(0, 0), EpochEntry(3, 20)]


# ---------------------------------------------------------------------- kept by PartitionLog


def test_appends_assign_epochs_and_a_restart_reads_them_back(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(make_batch(3), leader_epoch=0, now_ms=NOW)  # 0..2
    log.append(make_batch(2), leader_epoch=0, now_ms=NOW)  # 3..4
    log.append(make_batch(2), leader_epoch=2, now_ms=NOW)  # 5..6
    log.append(make_batch(1), leader_epoch=5, now_ms=NOW)  # 7
    expected = [EpochEntry(0, 0), EpochEntry(2, 5), EpochEntry(5, 7)]
    assert log.leader_epoch_cache.entries == expected
    assert (d / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n3\n0 0\n2 5\n5 7\n"
    assert log.end_offset_for_epoch(2) == (2, 7)
    assert log.end_offset_for_epoch(5) == (5, 8)
    log.close()
    for clean in (True, False):
        again = open_log(d, had_clean_shutdown=clean)
        assert again.leader_epoch_cache.entries == expected
        assert again.end_offset_for_epoch(1) == (0, 5)
        again.close()


def test_truncate_to_and_truncate_fully_trim_the_cache(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    for epoch in (0, 1, 2):
        log.append(make_batch(2), leader_epoch=epoch, now_ms=NOW)  # epochs start at 0, 2, 4
    log.truncate_to(4)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(1, 2)]
    assert read_leader_epoch_checkpoint(d / LEADER_EPOCH_CHECKPOINT) == [EpochEntry(0, 0), EpochEntry(1, 2)]
    log.append(make_batch(1), leader_epoch=3, now_ms=NOW)
    assert log.leader_epoch_cache.entries[-1] == EpochEntry(3, 4)
    log.truncate_fully_and_start_at(100)
    assert log.leader_epoch_cache.entries == []
    log.append(make_batch(1), leader_epoch=4, now_ms=NOW)
    assert log.leader_epoch_cache.entries == [EpochEntry(4, 100)]
    log.close()


def test_delete_records_moves_the_first_entry(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(make_batch(4), leader_epoch=0, now_ms=NOW)  # 0..3
    log.append(make_batch(4), leader_epoch=1, now_ms=NOW)  # 4..7
    log.update_high_watermark(8)
    log.delete_records_before(2)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 2), EpochEntry(1, 4)]
    log.delete_records_before(6)
    assert log.leader_epoch_cache.entries == [EpochEntry(1, 6)]
    log.close()
    again = open_log(d, log_start_offset=6, had_clean_shutdown=True)
    assert again.leader_epoch_cache.entries == [EpochEntry(1, 6)]
    again.close()


def test_recovery_rebuilds_a_missing_or_corrupt_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    log.append(make_batch(2), leader_epoch=3, now_ms=NOW)
    log.close()
    (d / LEADER_EPOCH_CHECKPOINT).unlink()
    again = open_log(d, had_clean_shutdown=True)
    assert again.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(3, 2)]
    assert (d / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n3 2\n"
    again.close()
    (d / LEADER_EPOCH_CHECKPOINT).write_text("garbage")
    third = open_log(d, had_clean_shutdown=True)
    assert third.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(3, 2)]
    third.close()


def test_recovery_drops_entries_beyond_a_torn_tail(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(make_batch(2), leader_epoch=0, now_ms=NOW)  # 0..1
    log.append(make_batch(2), leader_epoch=7, now_ms=NOW)  # 2..3: torn below
    seg = d / "00000000000000000000.log"
    size = seg.stat().st_size
    log.close()
    with open(seg, "r+b") as f:
        f.truncate(size - 5)
    again = open_log(d, recovery_point=0, had_clean_shutdown=False)
    assert again.log_end_offset == 2
    assert again.leader_epoch_cache.entries == [EpochEntry(0, 0)]
    assert read_leader_epoch_checkpoint(d / LEADER_EPOCH_CHECKPOINT) == [EpochEntry(0, 0)]
    again.close()


def test_unclean_recovery_adds_epochs_the_checkpoint_missed(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    log.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    log.append(make_batch(2), leader_epoch=4, now_ms=NOW)
    log.close()
    # As if the process died after writing the batch but before the checkpoint was replaced.
    (d / LEADER_EPOCH_CHECKPOINT).write_text("0\n1\n0 0\n")
    again = open_log(d, recovery_point=0, had_clean_shutdown=False)
    assert again.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(4, 2)]
    again.close()
