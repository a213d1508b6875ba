"""log_validator: leader checks and in-place offset assignment; follower (replicated) validation."""

from __future__ import annotations

import pytest
from crc32c import crc32c

from tests.support.partition_logs import NOW, make_batch
from zurau.protocol.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    RecordListTooLargeError,
)
from zurau.protocol.records.batch import CRC_START, iter_batches, validate_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.log_config import LogConfig
from zurau.storage.log_validator import (
    ValidatedAppend,
    parse_replicated,
    validate_and_assign_offsets,
    validate_replicated,
)


def assign(buf: bytearray, cfg: LogConfig | None = None, **kw: int) -> ValidatedAppend:
    args = {"first_offset": 100, "leader_epoch": 7, "now_ms": NOW} | kw
    return validate_and_assign_offsets(
        buf, validate_batches(buf), config=cfg or LogConfig(), where="t-0", **args
    )


def test_offsets_and_epoch_are_patched_in_place_outside_the_crc() -> None:
    original = make_batch(3) + make_batch(2)
    buf = bytearray(original)
    v = assign(buf)
    assert (v.first_offset, v.last_offset, v.record_count, v.log_append_time_ms) == (100, 104, 5, -1)
    stored = [(h.base_offset, h.partition_leader_epoch) for _p, h in iter_batches(buf)]
    assert stored == [(100, 7), (103, 7)]
    assert [(h.base_offset, h.partition_leader_epoch) for _p, h in v.batches] == stored
    validate_batches(buf)  # CRCs still hold
    # Only base offset (8 bytes) and leader epoch (4 bytes at 12) changed per batch.
    for (pos, h), (_p2, h0) in zip(iter_batches(buf), iter_batches(original), strict=True):
        assert buf[pos + 16 : pos + h.size] == original[pos + 16 : pos + h0.size]
    assert v.max_timestamp == NOW + 2


def test_log_append_time_rewrites_timestamp_type_and_crc() -> None:
    buf = bytearray(make_batch(2, ts=NOW - 10_000))
    v = assign(buf, LogConfig(message_timestamp_type="LogAppendTime"), now_ms=NOW + 5)
    (pos, h), = iter_batches(buf)
    assert h.timestamp_type == 1 and h.max_timestamp == NOW + 5
    assert crc32c(memoryview(buf)[pos + CRC_START : pos + h.size]) == h.crc
    assert v.batches[0][1] == h
    assert v.log_append_time_ms == NOW + 5
    assert [r.value for r in decode_batch_records(bytes(buf))] == [b"v" * 10] * 2


@pytest.mark.parametrize(
    ("cfg", "payload", "error"),
    [
        (LogConfig(max_message_bytes=50), make_batch(3), MessageTooLargeError),
        (LogConfig(segment_bytes=100), make_batch(3), RecordListTooLargeError),
        (LogConfig(message_timestamp_before_max_ms=1000), make_batch(1, ts=NOW - 5000), InvalidTimestampError),
        (LogConfig(message_timestamp_after_max_ms=1000), make_batch(1, ts=NOW + 5000), InvalidTimestampError),
    ],
)
def test_leader_checks(cfg: LogConfig, payload: bytes, error: type[Exception]) -> None:
    buf = bytearray(payload)
    with pytest.raises(error):
        assign(buf, cfg)


def test_offset_range_must_match_the_record_count() -> None:
    buf = bytearray(make_batch(2, ts=NOW))
    # A compressed-looking producer batch claiming 3 offsets for 2 records (gzip skips the
    # uncompressed-only check of validate_batches).
    buf[21:23] = (1).to_bytes(2, "big")  # attributes: gzip
    buf[23:27] = (2).to_bytes(4, "big")  # last_offset_delta
    buf[17:21] = crc32c(memoryview(buf)[CRC_START:]).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError, match="does not match"):
        assign(buf)


def test_replicated_batches_keep_offsets_and_allow_gaps() -> None:
    payload = make_batch(2, base_offset=10, partition_leader_epoch=3) + make_batch(
        1, base_offset=15, partition_leader_epoch=4
    )
    v = validate_replicated(payload, config=LogConfig(), log_end_offset=10, where="t-0")
    assert (v.first_offset, v.last_offset, v.record_count, v.log_append_time_ms) == (10, 15, 3, -1)
    assert [(h.base_offset, h.partition_leader_epoch) for _p, h in v.batches] == [(10, 3), (15, 4)]


def test_replicated_offsets_must_not_go_back() -> None:
    with pytest.raises(InvalidRecordError, match="below the next offset"):
        validate_replicated(make_batch(2, base_offset=4), config=LogConfig(), log_end_offset=5, where="t-0")
    overlapping = make_batch(3, base_offset=10) + make_batch(1, base_offset=11)
    with pytest.raises(InvalidRecordError):
        validate_replicated(overlapping, config=LogConfig(), log_end_offset=0, where="t-0")
    with pytest.raises(RecordListTooLargeError):
        validate_replicated(make_batch(3), config=LogConfig(segment_bytes=50), log_end_offset=0, where="t-0")
    with pytest.raises(InvalidRecordError):
        validate_replicated(b"", config=LogConfig(), log_end_offset=0, where="t-0")


def test_replicated_integrity_is_checked() -> None:
    good = make_batch(2)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        parse_replicated(corrupt)
    with pytest.raises(CorruptRecordError):
        parse_replicated(good[:-3])
    with pytest.raises(CorruptRecordError):
        parse_replicated(good + b"\x00" * 10)
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        parse_replicated(bad_magic)
