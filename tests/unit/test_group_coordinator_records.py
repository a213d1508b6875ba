"""``__consumer_offsets`` record formats, Kafka's group -> partition mapping, the timer queue."""

from __future__ import annotations

import struct
import uuid

import pytest

from zurau.coordinator.group.records import (
    CoordinatorRecord,
    TransactionalRecord,
    TxnMarker,
    build_records_batch,
    decode_record,
    iter_log_batches,
)
from zurau.coordinator.partitioner import java_string_hash, java_utils_abs, partition_for
from zurau.coordinator.timers import TimerQueue
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.control import build_control_batch


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def test_offset_commit_record_bytes_are_kafkas() -> None:
    rec = CoordinatorRecord(
        1,
        {"group": "g", "topic": "t", "partition": 3},
        3,
        {"offset": 42, "leader_epoch": 7, "metadata": "m", "commit_timestamp": 1000},
    )
    assert rec.key_bytes() == struct.pack(">h", 1) + _str("g") + _str("t") + struct.pack(">i", 3)
    assert rec.value_bytes() == struct.pack(">hqi", 3, 42, 7) + _str("m") + struct.pack(">q", 1000)
    # Version 1 (explicit expiry) has no leader epoch and an expire timestamp.
    v1 = CoordinatorRecord(
        1, rec.key, 1, {"offset": 42, "metadata": "", "commit_timestamp": 5, "expire_timestamp": 9}
    )
    assert v1.value_bytes() == struct.pack(">hq", 1, 42) + _str("") + struct.pack(">qq", 5, 9)
    back = decode_record(v1.key_bytes(), v1.value_bytes())
    assert back is not None and back.value is not None and back.value["expire_timestamp"] == 9


def test_group_metadata_record_round_trip_and_layout() -> None:
    value = {
        "protocol_type": "consumer",
        "generation": 4,
        "protocol": "range",
        "leader": "m-1",
        "current_state_timestamp": 123,
        "members": [
            {
                "member_id": "m-1",
                "group_instance_id": None,
                "client_id": "c",
                "client_host": "/127.0.0.1",
                "rebalance_timeout": 300,
                "session_timeout": 100,
                "subscription": b"\x00\x01",
                "assignment": b"\x02",
            }
        ],
    }
    rec = CoordinatorRecord(2, {"group": "grp"}, 3, value)
    assert rec.key_bytes() == struct.pack(">h", 2) + _str("grp")
    data = rec.value_bytes()
    assert data is not None and data[:2] == b"\x00\x03" and data[2:12] == _str("consumer")
    back = decode_record(rec.key_bytes(), data)
    assert back == CoordinatorRecord(2, {"group": "grp"}, 3, value)
    assert decode_record(rec.key_bytes(), None) == CoordinatorRecord(2, {"group": "grp"})


def test_consumer_group_records_round_trip() -> None:
    tid = uuid.uuid4()
    key = {"group_id": "g", "member_id": "m"}
    value = {
        "member_epoch": 5,
        "previous_member_epoch": 4,
        "state": 1,
        "assigned_partitions": [{"topic_id": tid, "partitions": [0, 2]}],
        "partitions_pending_revocation": [{"topic_id": tid, "partitions": [1]}],
    }
    rec = CoordinatorRecord(8, key, 0, value)
    assert decode_record(rec.key_bytes(), rec.value_bytes()) == rec
    meta = CoordinatorRecord(
        3, {"group_id": "g"}, 0, {"epoch": 9, "metadata_hash": -5, "creation_time_ms": 77}
    )
    assert decode_record(meta.key_bytes(), meta.value_bytes()) == meta


def test_unknown_and_malformed_records() -> None:
    assert decode_record(struct.pack(">h", 99) + b"whatever", b"") is None
    with pytest.raises(DecodeError):
        decode_record(b"\x00", None)
    with pytest.raises(DecodeError):
        decode_record(struct.pack(">h", 1) + _str("g"), b"\x00\x03")
    with pytest.raises(DecodeError):
        decode_record(struct.pack(">h", 1) + _str("g") + _str("t") + b"\x00\x00\x00\x01", b"\x00\x63")


def test_log_batches_wrap_transactional_records_and_yield_markers() -> None:
    rec = CoordinatorRecord(2, {"group": "g"})
    plain = bytearray(build_records_batch([rec, rec], 5))
    txn = build_batch(
        [(rec.key_bytes(), None, (), 5)],
        base_offset=2,
        producer_id=1,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    commit = bytearray(build_control_batch(True, 1, 0, 0, timestamp_ms=5))
    struct.pack_into(">q", commit, 0, 3)
    # A control record that is not a transaction marker (type 2, KRaft's LEADER_CHANGE) yields nothing.
    other = build_batch(
        [(struct.pack(">hh", 0, 2), b"\x00\x00", (), 5)],
        base_offset=4,
        producer_id=1,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    struct.pack_into(">q", plain, 0, 0)
    out = list(iter_log_batches(bytes(plain) + txn + bytes(commit) + other))
    assert out[0] == (2, [(0, rec), (1, rec)])
    assert out[1] == (3, [(2, TransactionalRecord(1, rec))])
    assert out[2] == (4, [(3, TxnMarker(1, True))])
    assert out[3] == (5, [])


def test_transactional_records_batch() -> None:
    from zurau.protocol.records.batch import read_header

    rec = CoordinatorRecord(2, {"group": "g"})
    h = read_header(build_records_batch([rec], 5, producer_id=7, producer_epoch=3))
    assert (h.producer_id, h.producer_epoch, h.is_transactional, h.base_sequence) == (7, 3, True, -1)
    h = read_header(build_records_batch([rec], 5))
    assert (h.producer_id, h.producer_epoch, h.is_transactional) == (-1, -1, False)


@pytest.mark.parametrize(
    "group, expected_hash",
    [("", 0), ("a", 97), ("my-group", -1906497762), ("polygenelubricants", -(2**31)), ("é✓😀", 18327085)],
)
def test_java_string_hash(group: str, expected_hash: int) -> None:
    assert java_string_hash(group) == expected_hash


def test_partition_mapping_uses_kafkas_utils_abs() -> None:
    assert java_utils_abs(-(2**31)) == 0 and java_utils_abs(-5) == 5
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("my-group", 50) == 1906497762 % 50 == 12
    assert partition_for("console-consumer-12345", 50) == 158455506 % 50


def test_timer_queue() -> None:
    q: TimerQueue[str] = TimerQueue()  # the callbacks here are just names
    q.schedule(("t", "a"), 10, "a@10")
    q.schedule(("t", "b"), 5, "b")
    q.schedule(("t", "a"), 20, "a")  # replaces the deadline and the callback
    q.schedule(("t", "c"), 5, "c")
    q.cancel(("t", "c"))
    q.schedule(("t", "d"), 20, "d")
    assert q.next_deadline() == 5
    assert q.expired(4) == []
    assert q.expired(10) == ["b"]
    assert q.deadline(("t", "a")) == 20 and ("t", "a") in q
    # Equal deadlines expire in scheduling order.
    assert q.expired(100) == ["a", "d"] and q.next_deadline() is None
