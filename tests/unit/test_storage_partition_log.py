"""PartitionLog: append, read, rolls, limits, timestamps, retention, DeleteRecords, truncation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.partition_logs import NOW, make_batch, open_log
from zurau.protocol.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from zurau.protocol.records.batch import BatchHeader, iter_batches, validate_batches
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.log_config import LogConfig
from zurau.storage.log_segment import LogSegment
from zurau.storage.partition_log import PartitionLog


def batches_of(data: bytes) -> list[BatchHeader]:
    return [h for _pos, h in iter_batches(data)]


def read_all(log: PartitionLog, start: int = 0, max_bytes: int = 1 << 20) -> list[tuple[int, bytes | None]]:
    """Fetch like a consumer from ``start`` to the HW; return (offset, value) of every record."""
    out: list[tuple[int, bytes | None]] = []
    offset = start
    while offset < log.high_watermark:
        data = log.read(offset, max_bytes, max_offset=log.high_watermark)
        assert data, f"empty read at {offset} below HW {log.high_watermark}"
        for pos, h in iter_batches(data):
            for r in decode_batch_records(data[pos : pos + h.size]):
                if r.offset >= offset:
                    out.append((r.offset, r.value))
            offset = max(offset, h.next_offset)
    return out


def test_append_assigns_offsets_patches_epoch_and_reads_back(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    results = [log.append(make_batch(n), leader_epoch=7, now_ms=NOW) for n in (2, 3, 1)]
    assert [(r.base_offset, r.last_offset, r.record_count) for r in results] == [
        (0, 1, 2),
        (2, 4, 3),
        (5, 5, 1),
    ]
    assert all(r.log_append_time_ms == -1 and not r.duplicate and r.log_start_offset == 0 for r in results)
    assert log.log_end_offset == 6
    assert log.high_watermark == 0
    assert log.read(0, 1 << 20, max_offset=log.high_watermark) == b""  # nothing committed yet
    assert log.update_high_watermark(100) == 6  # clamped to the log end offset
    data = log.read(0, 1 << 20, max_offset=log.high_watermark)
    headers = [h for _p, h in validate_batches(data)]  # stored batches still pass CRC checks
    assert [h.base_offset for h in headers] == [0, 2, 5]
    assert {h.partition_leader_epoch for h in headers} == {7}
    assert [o for o, _v in read_all(log)] == list(range(6))
    assert log.read(6, 100, max_offset=6) == b""


def test_append_and_read_across_segment_rolls(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=1000, index_interval_bytes=64)
    values = []
    for i in range(120):
        v = b"value-%03d" % i
        values.append(v)
        log.append(build_batch([(b"k", v, [], NOW + i)]), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    assert log.segment_count > 5
    bases = log.segment_base_offsets()
    assert bases == sorted(bases) and bases[0] == 0
    assert log.size_in_bytes == sum((tmp_path / "t-0" / f"{b:020d}.log").stat().st_size for b in bases)
    # every offset is reachable and the fetched batch holds it
    for o in range(120):
        data = log.read(o, 1, max_offset=log.high_watermark)
        (h,) = batches_of(data)
        assert h.base_offset <= o <= h.last_offset
    assert read_all(log) == list(enumerate(values))
    assert read_all(log, start=77) == list(enumerate(values))[77:]


def test_sparse_index_and_bounded_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = open_log(tmp_path / "t-0", index_interval_bytes=1024)
    for _ in range(500):
        log.append(make_batch(1, value=b"x" * 100), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    seg = log.active_segment
    batch_size = seg.size // 500
    entries = seg.offset_index.entries
    assert 0 < entries <= seg.size // 1024 + 1  # sparse: about one entry per interval
    assert (tmp_path / "t-0" / "00000000000000000000.index").stat().st_size == entries * 8

    scanned = 0
    original = LogSegment.iter_headers

    def counting(self: LogSegment, start: int = 0, end: int | None = None):  # type: ignore[no-untyped-def]
        nonlocal scanned
        for item in original(self, start, end):
            scanned += 1
            yield item

    monkeypatch.setattr(LogSegment, "iter_headers", counting)
    for target in (0, 250, 499):
        scanned = 0
        (h,) = batches_of(log.read(target, 1, max_offset=log.high_watermark))
        assert h.base_offset == target
        # one index interval of headers (plus the fetched batch), never the whole segment
        assert scanned <= 2 * (1024 // batch_size + 2), scanned


def test_read_limits_and_min_one_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    sizes = []
    for _ in range(5):
        b = make_batch(3, value=b"y" * 50)
        sizes.append(len(b))
        log.append(b, leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    size = sizes[0]
    data = log.read(0, int(size * 2.5), max_offset=log.high_watermark)
    assert [h.base_offset for h in batches_of(data)] == [0, 3]
    assert len(data) == 2 * size
    assert [h.base_offset for h in batches_of(log.read(4, 2 * size, max_offset=15))] == [3, 6]
    # KIP-74: the first batch alone exceeds max_bytes -> exactly one whole batch
    one = log.read(4, size - 1, max_offset=log.high_watermark)
    assert len(one) == size and batches_of(one)[0].base_offset == 3
    assert log.read(4, size - 1, max_offset=log.high_watermark, min_one_batch=False) == b""
    assert len(log.read(0, 0, max_offset=log.high_watermark)) == size
    # max_offset excludes batches at or above it
    assert [h.base_offset for h in batches_of(log.read(0, 1 << 20, max_offset=6))] == [0, 3]
    assert log.read(6, 1 << 20, max_offset=6) == b""
    # read_slice names the same bytes in the segment file
    sl = log.read_slice(3, 2 * size, max_offset=15)
    assert sl is not None and sl.first_offset == 3
    assert os.pread(sl.fd, sl.size, sl.position) == log.read(3, 2 * size, max_offset=15)


def test_offset_out_of_range(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for _ in range(4):
        log.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(8)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100, max_offset=8)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(9, 100, max_offset=8)
    assert log.read(8, 100, max_offset=8) == b""
    assert log.delete_records_before(5) == 5
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100, max_offset=8)
    # offset 5 sits inside the batch [4, 5]: that batch is returned whole
    assert batches_of(log.read(5, 1 << 20, max_offset=8))[0].base_offset == 4


def test_size_and_validation_errors_leave_the_log_untouched(tmp_path: Path) -> None:
    log = open_log(
        tmp_path, max_message_bytes=200, segment_bytes=1000, message_timestamp_before_max_ms=60_000
    )
    log.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    with pytest.raises(MessageTooLargeError):
        log.append(make_batch(1, value=b"z" * 300), leader_epoch=0, now_ms=NOW)
    many = b"".join(make_batch(1, value=b"z" * 100) for _ in range(8))
    with pytest.raises(RecordListTooLargeError):
        log.append(many, leader_epoch=0, now_ms=NOW)
    with pytest.raises(InvalidTimestampError):
        log.append(make_batch(1, ts=NOW - 61_000), leader_epoch=0, now_ms=NOW)
    corrupt = bytearray(make_batch(2))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append(bytes(corrupt), leader_epoch=0, now_ms=NOW)
    # a compressed batch whose header claims more offsets than records
    lying = bytearray(build_batch([(b"k", b"v", [], NOW)], compression=1))
    lying[23:27] = (5).to_bytes(4, "big")  # last_offset_delta = 5 with 1 record
    from crc32c import crc32c

    lying[17:21] = crc32c(bytes(lying[21:])).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError):
        log.append(bytes(lying), leader_epoch=0, now_ms=NOW)
    assert log.log_end_offset == 1
    assert log.append(make_batch(1, ts=NOW - 59_000), leader_epoch=0, now_ms=NOW).base_offset == 1


def test_log_append_time(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", message_timestamp_type="LogAppendTime")
    res = log.append(make_batch(3, ts=5), leader_epoch=1, now_ms=NOW + 42)
    assert res.log_append_time_ms == NOW + 42
    log.update_high_watermark(log.log_end_offset)
    data = log.read(0, 1 << 20, max_offset=log.high_watermark)
    ((_, h),) = validate_batches(data)  # CRC was recomputed
    assert h.timestamp_type == 1
    assert h.max_timestamp == NOW + 42
    assert {r.timestamp for r in decode_batch_records(data)} == {NOW + 42}
    assert log.offset_for_timestamp(NOW) == (0, NOW + 42)
    assert log.max_timestamp_offset() == (0, NOW + 42)


def test_offset_for_timestamp_is_exact_within_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=600, index_interval_bytes=100)
    # 20 batches of 5 records, timestamps NOW + 10 * offset
    for b in range(20):
        log.append(make_batch(5, ts=NOW + 50 * b, step=10), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    assert log.segment_count > 2
    assert log.offset_for_timestamp(0) == (0, NOW)
    assert log.offset_for_timestamp(NOW + 10 * 37) == (37, NOW + 370)
    assert log.offset_for_timestamp(NOW + 10 * 37 - 3) == (37, NOW + 370)
    assert log.offset_for_timestamp(NOW + 10 * 99) == (99, NOW + 990)
    assert log.offset_for_timestamp(NOW + 10 * 99 + 1) is None
    assert log.max_timestamp_offset() == (99, NOW + 990)
    log.delete_records_before(42)
    assert log.offset_for_timestamp(NOW) == (42, NOW + 420)
    log.close()
    reopened = open_log(tmp_path / "t-0", segment_bytes=600, index_interval_bytes=100)
    assert reopened.offset_for_timestamp(NOW + 555) == (56, NOW + 560)


def test_max_timestamp_offset_finds_the_out_of_order_record(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    for i in range(10):
        ts = NOW + 1_000_000 if i == 4 else NOW + i
        log.append(build_batch([(b"a", b"1", [], NOW), (b"b", b"2", [], ts)]), leader_epoch=0, now_ms=NOW)
    assert log.max_timestamp_offset() == (9, NOW + 1_000_000)
    assert log.max_timestamp_offset() == (9, NOW + 1_000_000)
    assert log.offset_for_timestamp(NOW + 100) == (9, NOW + 1_000_000)


def test_retention_by_time(tmp_path: Path) -> None:
    day = 86_400_000
    log = open_log(tmp_path / "t-0", segment_bytes=500, retention_ms=day)
    for i in range(30):
        log.append(make_batch(1, ts=NOW + i * 1000), leader_epoch=0, now_ms=NOW)
    segs = log.segment_count
    assert segs > 3
    assert log.apply_retention(NOW + 2 * day) == 0  # nothing below the high watermark
    log.update_high_watermark(log.log_end_offset)
    assert log.apply_retention(NOW + day // 2) == 0  # nothing old enough
    deleted = log.apply_retention(NOW + 2 * day)
    assert deleted == segs - 1  # never the active segment
    assert log.segment_count == 1
    assert log.log_start_offset == log.active_segment.base_offset
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.log")) == [f"{log.log_start_offset:020d}.log"]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100, max_offset=log.high_watermark)
    assert read_all(log, start=log.log_start_offset)


def test_retention_by_time_stops_at_the_first_young_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=300, retention_ms=1000)
    for i in range(12):
        log.append(make_batch(1, ts=NOW + (5000 if i < 4 else 0)), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    # the first segments are the youngest: nothing can be deleted before them
    assert log.apply_retention(NOW + 3000) == 0


def test_retention_by_size(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=500, retention_bytes=1200, retention_ms=-1)
    for _ in range(40):
        log.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    before = log.size_in_bytes
    assert before > 1200
    deleted = log.apply_retention(NOW + 10**12)
    assert deleted > 0
    assert log.size_in_bytes <= 1200 + 500  # within one segment of the limit
    assert log.size_in_bytes > 1200 - 500
    assert log.log_start_offset == log.segment_base_offsets()[0]


def test_delete_records_before(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    for _ in range(30):
        log.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(20)
    bases = log.segment_base_offsets()
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(21)  # beyond the high watermark
    assert log.delete_records_before(0) == 0
    assert log.delete_records_before(bases[2] + 1) == bases[2] + 1
    assert log.segment_base_offsets() == bases[2:]  # segments entirely below were deleted
    assert log.delete_records_before(3) == bases[2] + 1  # never backwards
    assert log.delete_records_before(-1) == 20  # -1 means the high watermark
    assert read_all(log, start=20) == []
    log.update_high_watermark(30)
    assert [o for o, _ in read_all(log, start=20)] == list(range(20, 30))


def test_reads_of_the_latest_batches_skip_the_index_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer tailing the log fetches one of the last batches appended: the segment answers
    from those (no header scan), with what a scan would have found, also after a truncation."""
    log = open_log(tmp_path / "t-0", index_interval_bytes=1024)
    for i in range(60):
        log.append(make_batch(1 + i % 3), leader_epoch=0, now_ms=NOW)
    seg = log.active_segment

    def scanned_answer(offset: int) -> tuple[int, BatchHeader] | None:
        start = seg.offset_index.lookup(offset).position
        for pos, h in seg.iter_headers(start):
            if h.last_offset >= offset:
                return pos, h
        return None

    expected = {o: scanned_answer(o) for o in range(log.log_end_offset + 1)}
    scans = 0
    original = LogSegment.iter_headers

    def counting(self: LogSegment, start: int = 0, end: int | None = None):  # type: ignore[no-untyped-def]
        nonlocal scans
        scans += 1
        yield from original(self, start, end)

    monkeypatch.setattr(LogSegment, "iter_headers", counting)
    for offset, answer in expected.items():
        assert seg.find_batch(offset) == answer, offset
    assert scans < len(expected) - 8  # the offsets of the last 8 batches needed no scan
    scans = 0
    log.update_high_watermark(log.log_end_offset)
    end = log.log_end_offset
    (h,) = batches_of(log.read(end - 1, 1 << 20, max_offset=end))  # a consumer's fetch at the end
    assert h.last_offset == end - 1 and scans == 0
    log.truncate_to(end - 4)  # the tail is forgotten; new appends start a new one
    log.append(make_batch(2), leader_epoch=1, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    assert [o for o, _ in read_all(log)] == list(range(log.log_end_offset))
    monkeypatch.setattr(LogSegment, "iter_headers", original)
    for offset in range(log.log_end_offset):
        assert seg.find_batch(offset) == scanned_answer(offset), offset


def test_truncate_to(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    for _ in range(20):
        log.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(40)
    log.truncate_to(41)  # beyond the log end: no-op
    assert log.log_end_offset == 40
    log.truncate_to(17)  # inside the batch [16, 17]: the whole batch goes
    assert log.log_end_offset == 16
    assert log.high_watermark == 16
    assert log.segment_base_offsets()[-1] <= 16
    assert log.append(make_batch(1), leader_epoch=1, now_ms=NOW).base_offset == 16
    log.update_high_watermark(17)
    assert [o for o, _ in read_all(log)] == list(range(17))
    log.truncate_to(0)
    assert (log.log_start_offset, log.log_end_offset, log.segment_count) == (0, 0, 1)


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(make_batch(3), leader_epoch=0, now_ms=NOW)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (1000, 1000, 1000)
    assert log.append(make_batch(1), leader_epoch=0, now_ms=NOW).base_offset == 1000
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.log")) == ["00000000000000001000.log"]


def test_roll_on_segment_ms_and_on_full_index(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_ms=1000)
    log.append(make_batch(1, ts=NOW), leader_epoch=0, now_ms=NOW)
    log.append(make_batch(1, ts=NOW + 999), leader_epoch=0, now_ms=NOW)
    assert log.segment_count == 1
    log.append(make_batch(1, ts=NOW + 1001), leader_epoch=0, now_ms=NOW)
    assert log.segment_base_offsets() == [0, 2]

    log2 = PartitionLog.open(
        tmp_path / "u-0", "u", 0, LogConfig(segment_index_bytes=24, index_interval_bytes=0), now_ms=NOW
    )
    for _ in range(10):
        log2.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    assert log2.segment_count >= 3  # each segment holds at most 24 // 12 = 2 time-index entries
    log2.update_high_watermark(10)
    assert [o for o, _ in read_all(log2)] == list(range(10))


def test_flush_messages_advances_the_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", flush_messages=3)
    log.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    assert log.recovery_point == 0 and log.needs_flush
    log.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    assert log.recovery_point == 3 and log.unflushed_messages == 0
    log.flush()
    assert not log.needs_flush


def test_deleted_segment_descriptor_outlives_the_file_for_the_delay(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=300, retention_ms=1, file_delete_delay_ms=5000)
    for _ in range(10):
        log.append(make_batch(1, ts=NOW), leader_epoch=0, now_ms=NOW)
    log.update_high_watermark(log.log_end_offset)
    sl = log.read_slice(0, 1 << 20, max_offset=log.high_watermark)
    assert sl is not None
    expected = os.pread(sl.fd, sl.size, sl.position)
    assert log.apply_retention(NOW + 10) > 0
    assert not (tmp_path / "t-0" / "00000000000000000000.log").exists()
    assert os.pread(sl.fd, sl.size, sl.position) == expected  # an in-flight sendfile still works
    log.apply_retention(NOW + 10 + 5000)
    with pytest.raises(OSError):
        os.fstat(sl.fd)


def test_config_update_applies_to_later_appends(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for _ in range(5):
        log.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    assert log.segment_count == 1
    log.update_config(LogConfig(segment_bytes=200))
    for _ in range(5):
        log.append(make_batch(1), leader_epoch=0, now_ms=NOW)
    assert log.segment_count > 1


def test_append_with_prevalidated_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    payload = make_batch(2) + make_batch(3)
    validated = validate_batches(payload)
    res = log.append(memoryview(payload), leader_epoch=0, now_ms=NOW, validated=validated)
    assert (res.base_offset, res.last_offset, res.record_count) == (0, 4, 5)
    assert payload == make_batch(2) + make_batch(3)  # the caller's buffer is not patched
    log.update_high_watermark(5)
    assert [o for o, _ in read_all(log)] == list(range(5))
