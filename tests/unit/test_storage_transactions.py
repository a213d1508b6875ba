"""Transactions in the log: last stable offset, ABORT/COMMIT markers, the aborted-txn index."""

from __future__ import annotations

from pathlib import Path

from tests.support.partition_logs import NOW, open_log
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.storage.partition_log import PartitionLog
from zurau.storage.txn_index import ENTRY_SIZE, AbortedTxn, decode_entries, encode_entries


class Producer:
    def __init__(self, pid: int, epoch: int = 0) -> None:
        self.pid, self.epoch, self.seq = pid, epoch, 0

    def data(self, n: int = 1) -> bytes:
        b = build_batch(
            [NewRecord(None, b"v%d" % i, (), NOW) for i in range(n)],
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            is_transactional=True,
        )
        self.seq += n
        return b

    def marker(self, commit: bool) -> bytes:
        return build_control_batch(commit, self.pid, self.epoch, 0, timestamp_ms=NOW)


def append(log: PartitionLog, batch: bytes) -> int:
    r = log.append(batch, leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    return r.base_offset


def plain(log: PartitionLog, n: int = 1) -> int:
    return append(log, build_batch([NewRecord(None, b"p", (), NOW)] * n))


def test_lso_stays_at_the_first_open_transaction(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    plain(log, 2)  # 0-1
    a, b = Producer(1), Producer(2)
    first_a = append(log, a.data(3))  # 2-4
    append(log, b.data(1))  # 5
    plain(log)  # 6
    assert log.high_watermark == 7
    assert log.last_stable_offset == first_a == 2
    append(log, a.marker(commit=True))  # 7
    assert log.last_stable_offset == 5  # b's transaction is still open
    append(log, b.marker(commit=True))  # 8
    assert log.last_stable_offset == log.high_watermark == 9
    assert log.aborted_transactions(0, 9) == []


def test_abort_is_indexed_and_collected(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    a, b = Producer(1), Producer(2)
    append(log, a.data(2))  # 0-1
    append(log, b.data(1))  # 2
    append(log, a.data(1))  # 3
    append(log, a.marker(commit=False))  # 4 (abort)
    append(log, b.marker(commit=True))  # 5
    assert log.aborted_transactions(0, 6) == [AbortedTxn(1, 0, 4, 2)]  # LSO when written: b's txn
    assert log.aborted_transactions(5, 6) == []  # marker before the fetch offset
    assert log.aborted_transactions(0, 0) == []  # txn starts at/after the upper bound
    assert log.last_stable_offset == 6
    assert (tmp_path / "00000000000000000000.txnindex").stat().st_size == 34


def test_marker_without_data_in_this_partition_indexes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, Producer(9).marker(commit=False))
    assert log.aborted_transactions(0, 10) == []
    assert log.last_stable_offset == log.high_watermark == 1


def test_state_survives_clean_and_unclean_restarts(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=1024 * 1024)
    a, b = Producer(1), Producer(2)
    append(log, a.data(2))  # 0-1
    append(log, a.marker(commit=False))  # 2
    append(log, b.data(1))  # 3, left open
    log.close()
    log = open_log(tmp_path)
    log.update_high_watermark(log.log_end_offset)
    assert [(x.producer_id, x.first_offset, x.last_offset) for x in log.aborted_transactions(0, 10)] == [
        (1, 0, 2)
    ]
    assert log.last_stable_offset == 3
    c = Producer(3)
    append(log, c.data(1))  # 4
    append(log, c.marker(commit=False))  # 5
    # Unclean stop: no close, no snapshot of the latest state.
    log2 = open_log(tmp_path)
    log2.update_high_watermark(log2.log_end_offset)
    got = log2.aborted_transactions(0, 10)
    assert [(x.producer_id, x.first_offset, x.last_offset) for x in got] == [(1, 0, 2), (3, 4, 5)]
    assert log2.last_stable_offset == 3  # b's transaction is still open


def test_truncation_and_retention_remove_entries(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=1024 * 1024)
    a = Producer(1)
    append(log, a.data(1))  # 0
    append(log, a.marker(commit=False))  # 1
    b = Producer(2)
    append(log, b.data(1))  # 2
    append(log, b.marker(commit=False))  # 3
    log.truncate_to(3)
    log.update_high_watermark(log.log_end_offset)
    assert [x.producer_id for x in log.aborted_transactions(0, 10)] == [1]
    assert log.last_stable_offset == 2  # b's data is back to an open transaction
    log.roll(NOW)
    plain(log)
    log.delete_records_before(3)
    log.apply_retention(NOW)
    assert log.aborted_transactions(0, 10) == []


def test_txn_index_bytes_decode_to_what_was_encoded_up_to_a_bad_entry() -> None:
    entries = [AbortedTxn(5, 0, 6, 7), AbortedTxn(9, 7, 13, 14)]
    data = encode_entries(entries)
    assert len(data) == 2 * ENTRY_SIZE and decode_entries(data) == entries
    assert decode_entries(data + data[:10]) == entries  # a torn trailing entry
    assert (
        decode_entries(data[:ENTRY_SIZE] + b"\x00\x01" + data[ENTRY_SIZE + 2 :]) == entries[:1]
    )  # version 1
    assert decode_entries(b"") == []
