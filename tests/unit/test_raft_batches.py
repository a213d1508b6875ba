"""Raft entries as Kafka v2 record batches, and the LeaderChangeMessage control record value."""

from __future__ import annotations

import pytest

from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import CONTROL_MASK, iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import parse_control_key
from zurau.protocol.records.record import decode_batch_records
from zurau.raft import Entry
from zurau.raft.batches import (
    LEADER_CHANGE,
    decode_entries,
    decode_leader_change,
    encode_entries,
    encode_leader_change,
    split_batches,
)
from zurau.raft.node import leader_change_payload


def batch_of(offset: int, epoch: int, payloads: list[bytes], control: bool = False) -> list[Entry]:
    last = len(payloads) - 1
    return [Entry(offset + i, epoch, p, control, i == last) for i, p in enumerate(payloads)]


def test_round_trip_keeps_offsets_epochs_and_batch_boundaries() -> None:
    entries = [
        *batch_of(0, 0, [b"a", b"b", b"c"]),
        *batch_of(3, 1, [leader_change_payload(1, [1, 2, 3], [1, 2])], control=True),
        *batch_of(4, 1, [b"d"]),
        *batch_of(5, 4, [b"e", b""]),
    ]
    data = encode_entries(entries, timestamp_ms=1234)
    assert decode_entries(data) == entries
    assert decode_entries(memoryview(data)) == entries
    headers = [h for _pos, h in iter_batches(data)]
    assert [(h.base_offset, h.partition_leader_epoch, h.records_count) for h in headers] == [
        (0, 0, 3),
        (3, 1, 1),
        (4, 1, 1),
        (5, 4, 2),
    ]
    assert [bool(h.attributes & CONTROL_MASK) for h in headers] == [False, True, False, False]
    assert all(h.producer_id == -1 and h.compression == 0 for h in headers)


def test_records_have_null_keys_and_the_payload_as_value() -> None:
    data = encode_entries(batch_of(7, 2, [b"x", b"y"]), timestamp_ms=5)
    records = decode_batch_records(data)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (7, None, b"x", 5),
        (8, None, b"y", 5),
    ]


def test_control_batch_uses_the_leader_change_control_key() -> None:
    payload = encode_leader_change(2, [1, 2, 3], [2, 3])
    data = encode_entries(batch_of(10, 3, [payload], control=True))
    ((_pos, h),) = list(iter_batches(data))
    assert h.is_control and not h.is_transactional
    (record,) = decode_batch_records(data)
    assert record.key == b"\x00\x00\x00\x02" and parse_control_key(record.key) == LEADER_CHANGE
    assert record.value == payload


def test_the_final_group_forms_a_batch_without_the_flag() -> None:
    entries = [Entry(0, 1, b"a", False, False), Entry(1, 1, b"b", False, False)]
    decoded = decode_entries(encode_entries(entries))
    assert decoded == [Entry(0, 1, b"a", False, False), Entry(1, 1, b"b", False, True)]
    assert split_batches(entries) == [decoded]
    assert encode_entries([]) == b"" and decode_entries(b"") == []


@pytest.mark.parametrize(
    "entries",
    [
        [Entry(0, 1, b"a", False, False), Entry(1, 2, b"b")],  # two epochs in one batch
        [Entry(0, 1, b"a", False, False), Entry(1, 1, b"b", True)],  # control and data mixed
        [Entry(0, 1, b"a", False, False), Entry(2, 1, b"b")],  # offsets not consecutive
    ],
    ids=["epochs", "control", "offsets"],
)
def test_a_batch_must_be_homogeneous_and_dense(entries: list[Entry]) -> None:
    with pytest.raises(ValueError):
        encode_entries(entries)


def test_consecutive_batches_may_leave_offset_gaps_for_the_caller_to_check() -> None:
    entries = [*batch_of(0, 1, [b"a"]), *batch_of(5, 1, [b"b"])]
    assert decode_entries(encode_entries(entries)) == entries


def test_corruption_raises_decode_error() -> None:
    data = bytearray(encode_entries([*batch_of(0, 1, [b"hello"]), *batch_of(1, 1, [b"world"])]))
    flipped = bytearray(data)
    flipped[-3] ^= 0xFF  # inside the second batch's CRC-covered bytes
    with pytest.raises(DecodeError, match="CRC"):
        decode_entries(flipped)
    with pytest.raises(DecodeError, match="truncated"):
        decode_entries(bytes(data[:-4]))
    with pytest.raises(DecodeError):
        decode_entries(bytes(data[:30]))
    bad_magic = bytearray(data)
    bad_magic[16] = 1
    with pytest.raises(DecodeError):
        decode_entries(bad_magic)


def test_batches_this_module_would_not_write_are_refused() -> None:
    no_epoch = build_batch([NewRecord(None, b"v")], partition_leader_epoch=-1)
    with pytest.raises(DecodeError, match="leader epoch"):
        decode_entries(no_epoch)
    null_value = build_batch([NewRecord(None, None)], partition_leader_epoch=0)
    with pytest.raises(DecodeError, match="null value"):
        decode_entries(null_value)
    no_control_key = build_batch([NewRecord(None, b"v")], partition_leader_epoch=0, is_control=True)
    with pytest.raises(DecodeError, match="control"):
        decode_entries(no_control_key)


def test_a_metadata_log_style_batch_decodes_as_epoch_entries() -> None:
    batch = build_batch([NewRecord(None, b"r1", (), 99), NewRecord(None, b"r2", (), 99)], base_offset=4)
    patched = bytearray(batch)
    patched[12:16] = (0).to_bytes(4, "big")  # the leader stamps partition_leader_epoch 0
    assert decode_entries(patched) == batch_of(4, 0, [b"r1", b"r2"])


# ------------------------------------------------------------------ LeaderChangeMessage

# Version 0, LeaderId 1, Voters [1, 2, 3], GrantingVoters [1, 2], each voter with an empty tagged
# field section, and the message's own empty tagged field section.
LEADER_CHANGE_BYTES = bytes.fromhex(
    " ".join(
        [
            "0000",  # Version
            "00000001",  # LeaderId
            "04 00000001 00 00000002 00 00000003 00",  # Voters: compact length 3 + 1, voter, tags
            "03 00000001 00 00000002 00",  # GrantingVoters: compact length 2 + 1
            "00",  # tagged fields
        ]
    )
)


def test_leader_change_matches_kafkas_layout() -> None:
    assert encode_leader_change(1, {3, 1, 2}, [2, 1]) == LEADER_CHANGE_BYTES
    assert decode_leader_change(LEADER_CHANGE_BYTES) == (1, [1, 2, 3], [1, 2])
    assert leader_change_payload(1, frozenset({1, 2, 3}), {1, 2}) == LEADER_CHANGE_BYTES


def test_leader_change_round_trips_and_skips_unknown_tagged_fields() -> None:
    assert decode_leader_change(encode_leader_change(7, [7], [7])) == (7, [7], [7])
    assert decode_leader_change(encode_leader_change(-1, [], [])) == (-1, [], [])
    # A tagged field (tag 0, 2 bytes) added to the message and to the first voter.
    tagged = bytes.fromhex("0000 00000001 02 00000001 01000100 01 01 00025a5a")
    assert decode_leader_change(tagged) == (1, [1], [])


@pytest.mark.parametrize(
    "data",
    [
        LEADER_CHANGE_BYTES[:-1],
        LEADER_CHANGE_BYTES[:9],
        LEADER_CHANGE_BYTES[:3],
        LEADER_CHANGE_BYTES + b"\x00",
        b"\xff\xff" + LEADER_CHANGE_BYTES[2:],
        LEADER_CHANGE_BYTES[:6] + b"\x00" + LEADER_CHANGE_BYTES[22:],  # null Voters array
    ],
    ids=["no-tags", "short-array", "short-header", "trailing", "negative-version", "null-array"],
)
def test_malformed_leader_change_raises_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_leader_change(data)
