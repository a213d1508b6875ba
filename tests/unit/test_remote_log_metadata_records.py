"""The ``__remote_log_metadata`` codec: Kafka's RemoteLogMetadataSerde frame and the four record
bodies, checked against bytes built by hand from Kafka's JSON schemas, and by round trips."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zurau.protocol.primitives import DecodeError
from zurau.storage.remote.remote_log_metadata_records import (
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata,
    api_key_of,
    decode,
    encode,
)
from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.types import TopicIdPartition

TOPIC_ID = uuid.UUID("0123456789abcdef0011223344556677")
SEGMENT_UUID = uuid.UUID("fedcba98765432100f0e0d0c0b0a0908")
TIP = TopicIdPartition(TOPIC_ID, "orders", 7)
SID = RemoteLogSegmentId(TIP, SEGMENT_UUID)


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def compact_string(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw  # short enough for a one-byte uvarint


NO_TAGS = b"\x00"
TIP_BYTES = compact_string("orders") + TOPIC_ID.bytes + i32(7) + NO_TAGS
SEGMENT_ID_BYTES = TIP_BYTES + SEGMENT_UUID.bytes + NO_TAGS


def frame(api_key: int) -> bytes:
    return bytes([1, api_key, 0])  # frame version 1, api key, version 0 (unsigned varints)


def test_segment_metadata_record_matches_the_bytes_of_kafkas_schema() -> None:
    metadata = RemoteLogSegmentMetadata(
        segment_id=SID,
        start_offset=100,
        end_offset=299,
        max_timestamp_ms=1_700_000_000_123,
        broker_id=3,
        event_timestamp_ms=1_700_000_000_456,
        segment_size_in_bytes=4096,
        segment_leader_epochs=((4, 100), (6, 250)),
        custom_metadata=b"\x01\x02",
        txn_index_empty=True,
    )
    expected = (
        frame(0)
        + SEGMENT_ID_BYTES
        + i64(100)
        + i64(299)
        + i32(3)
        + i64(1_700_000_000_123)
        + i64(1_700_000_000_456)
        + bytes([3])  # compact array of 2 entries
        + i32(4)
        + i64(100)
        + NO_TAGS
        + i32(6)
        + i64(250)
        + NO_TAGS
        + i32(4096)
        + bytes([3])
        + b"\x01\x02"  # compact nullable bytes of length 2
        + i8(0)  # COPY_SEGMENT_STARTED
        + bytes([1, 0, 1, 1])  # one tagged field: tag 0 (TxnIndexEmpty), 1 byte, true
    )
    assert encode(metadata) == expected
    assert decode(expected) == metadata

    # Kafka before 4.0 writes no tagged field; a null custom metadata is a zero-length marker.
    old_kafka = (
        expected[: -len(bytes([3]) + b"\x01\x02" + i8(0) + bytes([1, 0, 1, 1]))] + b"\x00" + i8(0) + NO_TAGS
    )
    decoded = decode(old_kafka)
    assert isinstance(decoded, RemoteLogSegmentMetadata)
    assert (decoded.custom_metadata, decoded.txn_index_empty) == (None, False)
    assert encode(decoded) == old_kafka  # the default (false) is not written


def test_update_and_partition_delete_records_match_kafkas_schema() -> None:
    update = RemoteLogSegmentMetadataUpdate(
        SID, 1_700_000_001_000, None, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 2
    )
    expected = frame(1) + SEGMENT_ID_BYTES + i32(2) + i64(1_700_000_001_000) + b"\x00" + i8(1) + NO_TAGS
    assert encode(update) == expected
    assert decode(expected) == update

    delete = RemotePartitionDeleteMetadata(TIP, RemotePartitionDeleteState.DELETE_PARTITION_STARTED, 99, 1)
    expected = frame(2) + TIP_BYTES + i32(1) + i64(99) + i8(1) + NO_TAGS
    assert encode(delete) == expected
    assert decode(expected) == delete


def test_snapshot_record_matches_kafkas_schema() -> None:
    snap = RemoteLogSegmentMetadataSnapshot(
        SEGMENT_UUID, 0, 9, 5, 1, 6, 10, ((0, 0),), RemoteLogSegmentState.DELETE_SEGMENT_STARTED
    )
    expected = (
        frame(3)
        + SEGMENT_UUID.bytes
        + i64(0)
        + i64(9)
        + i32(1)
        + i64(5)
        + i64(6)
        + bytes([2])
        + i32(0)
        + i64(0)
        + NO_TAGS
        + i32(10)
        + b"\x00"
        + i8(2)
        + NO_TAGS
    )
    assert encode(snap) == expected
    assert decode(expected) == snap
    assert api_key_of(snap) == 3


def test_unknown_tagged_fields_are_skipped() -> None:
    update = RemoteLogSegmentMetadataUpdate(SID, 5, b"m", RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 2)
    raw = encode(update)
    assert raw.endswith(NO_TAGS)
    with_unknown_tag = raw[:-1] + bytes([1, 9, 2]) + b"zz"  # tag 9, two bytes
    assert decode(with_unknown_tag) == update


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"", "truncated varint"),
        (bytes([0, 1, 0]), "frame version 0"),
        (bytes([2, 1, 0]), "frame version 2"),
        (bytes([1, 9, 0]), "unknown remote log metadata record type 9"),
        (bytes([1, 1, 1]), "has no version 1"),
    ],
)
def test_bad_frames_are_refused(raw: bytes, why: str) -> None:
    with pytest.raises(DecodeError, match=why):
        decode(raw)


def test_truncated_trailing_and_invalid_bodies_are_refused() -> None:
    delete = encode(
        RemotePartitionDeleteMetadata(TIP, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 1, 1)
    )
    with pytest.raises(DecodeError):
        decode(delete[:-3])
    with pytest.raises(DecodeError, match="trailing"):
        decode(delete + b"\x00")
    with pytest.raises(DecodeError):
        decode(delete[:-2] + i8(7) + NO_TAGS)  # no such partition delete state
    segment = bytearray(encode(RemoteLogSegmentMetadata(SID, 5, 9, 0, 1, 0, 1, ((0, 5),))))
    offsets_at = len(frame(0)) + len(SEGMENT_ID_BYTES)
    segment[offsets_at : offsets_at + 16] = i64(9) + i64(5)  # end < start: the data model refuses it
    with pytest.raises(DecodeError, match="bad offsets"):
        decode(bytes(segment))


# ---------------------------------------------------------------------------------- round trips

_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_uuids = st.uuids()
_tips = st.builds(TopicIdPartition, _uuids, st.text(min_size=1, max_size=20), st.integers(0, 2**31 - 1))
_sids = st.builds(RemoteLogSegmentId, _tips, _uuids)
_custom = st.none() | st.binary(max_size=40)


@st.composite
def _segments(draw: st.DrawFn) -> RemoteLogSegmentMetadata:
    start = draw(st.integers(0, 2**62))
    end = draw(st.integers(start, 2**62 + 100))
    n = draw(st.integers(1, 4))
    epochs = sorted(set(draw(st.lists(st.integers(0, 2**31 - 1), min_size=n, max_size=n))))
    offsets = sorted(
        draw(st.lists(st.integers(start, end), min_size=len(epochs) - 1, max_size=len(epochs) - 1))
    )
    return RemoteLogSegmentMetadata(
        segment_id=draw(_sids),
        start_offset=start,
        end_offset=end,
        max_timestamp_ms=draw(_i64),
        broker_id=draw(_i32),
        event_timestamp_ms=draw(_i64),
        segment_size_in_bytes=draw(st.integers(0, 2**31 - 1)),
        segment_leader_epochs=tuple(zip(epochs, [start, *offsets], strict=True)),
        state=draw(st.sampled_from(RemoteLogSegmentState)),
        custom_metadata=draw(_custom),
        txn_index_empty=draw(st.booleans()),
    )


_events = st.one_of(
    _segments(),
    st.builds(
        RemoteLogSegmentMetadataUpdate, _sids, _i64, _custom, st.sampled_from(RemoteLogSegmentState), _i32
    ),
    st.builds(RemotePartitionDeleteMetadata, _tips, st.sampled_from(RemotePartitionDeleteState), _i64, _i32),
    st.builds(
        RemoteLogSegmentMetadataSnapshot,
        _uuids,
        _i64,
        _i64,
        _i64,
        _i32,
        _i64,
        st.integers(0, 2**31 - 1),
        st.lists(st.tuples(_i32, _i64), max_size=3).map(tuple),
        st.sampled_from(RemoteLogSegmentState),
        _custom,
        st.booleans(),
    ),
)


@given(_events)
def test_every_event_round_trips_byte_for_byte(event: object) -> None:
    raw = encode(event)  # type: ignore[arg-type]
    back = decode(raw)
    assert back == event
    assert encode(back) == raw
