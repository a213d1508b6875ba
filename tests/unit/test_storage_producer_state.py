"""Idempotent producer state: dedupe, sequence checks, fencing, snapshots and recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.partition_logs import NOW, open_log
from zurau.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.storage.log_config import LogConfig
from zurau.storage.partition_log import PartitionLog
from zurau.storage.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager

PID = 4242


def pbatch(seq: int, n: int = 1, *, epoch: int = 0, pid: int = PID, transactional: bool = False) -> bytes:
    return build_batch(
        [(b"k", b"v%d" % (seq + i), [], NOW) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )


def append(log: PartitionLog, data: bytes):  # type: ignore[no-untyped-def]
    return log.append(data, leader_epoch=0, now_ms=NOW)


def test_duplicate_is_skipped_and_returns_the_original_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, build_batch([(b"x", b"y", [], NOW)]))  # an unrelated non-idempotent record at 0
    first = append(log, pbatch(0, 5))
    assert (first.base_offset, first.last_offset, first.duplicate) == (1, 5, False)
    second = append(log, pbatch(5, 2))
    assert (second.base_offset, second.last_offset) == (6, 7)
    retry = append(log, pbatch(5, 2))
    assert (retry.base_offset, retry.last_offset, retry.duplicate, retry.record_count) == (6, 7, True, 2)
    retry_older = append(log, pbatch(0, 5))
    assert (retry_older.base_offset, retry_older.last_offset, retry_older.duplicate) == (1, 5, True)
    assert log.log_end_offset == 8  # nothing was written for the duplicates


def test_only_the_last_five_batches_are_remembered(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for seq in range(7):
        append(log, pbatch(seq))
    entry = log.producer_entry(PID)
    assert entry is not None and [b.first_seq for b in entry.batches] == [2, 3, 4, 5, 6]
    assert append(log, pbatch(2)).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(1))  # too old to be recognised as a duplicate


def test_out_of_order_sequence(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(0, 3))
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(4))  # gap: expected 3
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(1, 3))  # overlaps but is not a cached batch
    assert log.log_end_offset == 3
    assert append(log, pbatch(3)).base_offset == 3


def test_epoch_fencing_and_bumps(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(0, 2, epoch=3))
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(2, epoch=2))  # a zombie with an older epoch
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(2, epoch=4))  # a new epoch must restart at sequence 0
    assert append(log, pbatch(0, epoch=4)).base_offset == 2
    assert not append(log, pbatch(1, epoch=4)).duplicate
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(0, 2, epoch=3))  # even a retry of the old epoch's batch is fenced
    entry = log.producer_entry(PID)
    assert entry is not None and entry.producer_epoch == 4 and entry.last_seq == 1


def test_unknown_producer_accepts_any_sequence(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    assert append(log, pbatch(1234, epoch=9)).base_offset == 0
    assert append(log, pbatch(1235, epoch=9)).base_offset == 1


def test_sequence_wraps_at_int32_max(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(2**31 - 3, 3))  # last sequence 2**31 - 1
    entry = log.producer_entry(PID)
    assert entry is not None and entry.last_seq == 2**31 - 1
    assert append(log, pbatch(0, 2)).base_offset == 3
    assert append(log, pbatch(2**31 - 3, 3)).duplicate


def test_multi_batch_append_is_all_or_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(0))
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(1) + pbatch(5))
    assert log.log_end_offset == 1
    entry = log.producer_entry(PID)
    assert entry is not None and entry.last_seq == 0  # the first batch's update was not committed
    res = append(log, pbatch(1) + pbatch(2, 2))  # consecutive batches of one request
    assert (res.base_offset, res.last_offset) == (1, 3)
    assert append(log, pbatch(2, 2)).duplicate


def test_transaction_first_offset_tracking(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(0, transactional=True))
    append(log, pbatch(1, transactional=True))
    entry = log.producer_entry(PID)
    assert entry is not None and entry.current_txn_first_offset == 0
    append(log, build_control_batch(True, PID, 0, 1, timestamp_ms=NOW))
    assert log.producer_entry(PID).current_txn_first_offset == -1  # type: ignore[union-attr]
    assert append(log, pbatch(2)).base_offset == 3  # markers do not consume sequences


def test_state_survives_close_and_reopen(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    append(log, pbatch(0, 2, epoch=1))
    append(log, pbatch(2, 2, epoch=1))
    log.close()
    assert (d / "00000000000000000004.snapshot").exists()
    log = open_log(d, recovery_point=4, had_clean_shutdown=True)
    assert append(log, pbatch(2, 2, epoch=1)).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(7, epoch=1))
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(0, epoch=0))


def test_state_survives_an_unclean_stop(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    cfg = LogConfig(segment_bytes=400)
    log = open_log(d, config=cfg)
    for seq in range(0, 20, 2):
        append(log, pbatch(seq, 2, epoch=2))
    assert log.segment_count > 1  # rolls wrote snapshots; the tail after them must be replayed
    for seg in log._segments:  # crash: no close, no final snapshot
        seg.close_fd()
    log = open_log(d, config=cfg)
    assert append(log, pbatch(18, 2, epoch=2)).duplicate
    assert append(log, pbatch(16, 2, epoch=2)).duplicate
    assert append(log, pbatch(20, epoch=2)).base_offset == 20


def test_corrupt_snapshot_is_ignored_and_state_replayed(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    append(log, pbatch(0, 3))
    log.close()
    snap = d / "00000000000000000003.snapshot"
    data = bytearray(snap.read_bytes())
    data[-1] ^= 0xFF
    snap.write_bytes(bytes(data))
    log = open_log(d, recovery_point=3, had_clean_shutdown=True)
    assert append(log, pbatch(0, 3)).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        append(log, pbatch(9))


def test_only_a_few_snapshots_are_kept(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, config=LogConfig(segment_bytes=200))
    for seq in range(30):
        append(log, pbatch(seq))
    assert log.segment_count > 5
    assert len(list(d.glob("*.snapshot"))) == 3


def test_truncation_rolls_producer_state_back(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, config=LogConfig(segment_bytes=300))
    for seq in range(12):
        append(log, pbatch(seq))
    snaps_before = sorted(int(p.stem) for p in d.glob("*.snapshot"))
    log.truncate_to(5)
    assert all(int(p.stem) <= 5 for p in d.glob("*.snapshot"))
    assert snaps_before and max(snaps_before) > 5
    assert log.producer_entry(PID).last_seq == 4  # type: ignore[union-attr]
    res = append(log, pbatch(5))  # a retry of a truncated batch is new data again
    assert (res.base_offset, res.duplicate) == (5, False)


def test_delete_records_evicts_producers_entirely_below(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(0, 2))
    append(log, pbatch(0, pid=7))
    log.update_high_watermark(3)
    log.delete_records_before(2)
    assert log.producer_entry(PID) is None
    assert log.producer_entry(7) is not None
    assert append(log, pbatch(77)).base_offset == 3  # unknown again: any sequence is accepted


def test_snapshot_encoding_round_trip(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    m.producers[1] = ProducerStateEntry(1, 3, [BatchMetadata(0, 4, 10, 14, NOW)], 2, 10, 14, NOW)
    m.producers[2] = ProducerStateEntry(2)
    data = m.encode(15)
    offset, producers = ProducerStateManager.decode(data)
    assert offset == 15 and producers == m.producers
    for bad in (data[:-1], data[:10], b"XXXX" + data[4:], data[:20] + bytes([data[20] ^ 1]) + data[21:]):
        with pytest.raises(ValueError):
            ProducerStateManager.decode(bad)
    m.take_snapshot(15)
    m.clear()
    assert m.load_latest(100) == 15 and m.producers[1].batches[0].last_offset == 14
    assert m.load_latest(14) is None  # snapshots above the log end are deleted
    assert m.snapshot_offsets() == []


def test_producer_expiration(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(0))
    assert log.remove_expired_producers(NOW + 1000, expiration_ms=5000) == 0
    assert log.remove_expired_producers(NOW + 5000, expiration_ms=5000) == 1
    assert log.producer_entry(PID) is None


def test_eviction_below_the_log_start_offset_also_applies_on_open(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    cfg = LogConfig(segment_bytes=300)
    log = open_log(d, config=cfg)
    append(log, pbatch(0, 2))
    for seq in range(6):
        append(log, pbatch(seq, pid=8))  # rolls: snapshots that still know PID
    log.update_high_watermark(log.log_end_offset)
    log.delete_records_before(4)
    for seg in log._segments:  # crash before a snapshot without PID was written
        seg.close_fd()
    log = open_log(d, config=cfg, log_start_offset=4)
    assert log.producer_entry(PID) is None
    assert log.producer_entry(8) is not None


def test_state_is_rebuilt_without_any_snapshot(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    append(log, pbatch(0, 3, epoch=5))
    for seg in log._segments:  # crash: a single segment, so no snapshot was ever written
        seg.close_fd()
    assert not list(d.glob("*.snapshot"))
    log = open_log(d)
    assert append(log, pbatch(0, 3, epoch=5)).duplicate
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(3, epoch=4))


def test_a_short_replay_writes_no_snapshot_and_replays_again_next_time(tmp_path: Path) -> None:
    """Opening after a crash replays the batches after the newest snapshot; fewer than
    SNAPSHOT_AFTER_REPLAYED_BATCHES write no new snapshot file, and the state is the same
    however many times the log is opened so."""
    from zurau.storage.partition_log import SNAPSHOT_AFTER_REPLAYED_BATCHES

    d = tmp_path / "t-0"
    log = open_log(d)
    for seq in range(0, 10, 2):
        append(log, pbatch(seq, 2, epoch=1))
    assert 5 < SNAPSHOT_AFTER_REPLAYED_BATCHES
    for _ in range(2):
        for seg in log._segments:  # crash: no close, no final snapshot
            seg.close_fd()
        log = open_log(d)
        assert not list(d.glob("*.snapshot"))
        entry = log.producer_entry(PID)
        assert entry is not None and (entry.producer_epoch, entry.last_seq) == (1, 9)
        assert append(log, pbatch(8, 2, epoch=1)).duplicate
    assert append(log, pbatch(10, epoch=1)).base_offset == 10


def test_a_clean_stop_without_writes_keeps_the_loaded_snapshot_file(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d)
    append(log, pbatch(0, 3, epoch=1))
    log.close()
    (snap,) = d.glob("*.snapshot")
    inode = snap.stat().st_ino
    log = open_log(d)
    log.close()  # nothing happened since the open: the same file stays
    assert [(p.name, p.stat().st_ino) for p in d.glob("*.snapshot")] == [(snap.name, inode)]
    log = open_log(d)
    append(log, pbatch(3, epoch=1))
    log.close()
    assert len(list(d.glob("*.snapshot"))) == 2
    log = open_log(d)
    entry = log.producer_entry(PID)
    assert entry is not None and entry.last_seq == 3
