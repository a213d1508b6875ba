"""PartitionLog recovery: torn tails, corrupt batches, missing/corrupt indexes, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.storage.log_config import LogConfig
from zurau.storage.log_segment import LogSegment
from zurau.storage.partition_log import PartitionLog

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def make_batch(i: int, n: int = 1) -> bytes:
    return build_batch([(b"k", b"value-%d-%d" % (i, j), [], NOW + i) for j in range(n)])


def open_log(d: Path, **kw: object) -> PartitionLog:
    return PartitionLog.open(d, "t", 0, CFG, now_ms=NOW, **kw)  # type: ignore[arg-type]


def abandon(log: PartitionLog) -> None:
    """Simulate a crash: drop the descriptors without flushing, snapshotting or closing."""
    for seg in log._segments:
        seg.offset_index.write_pending()
        seg.time_index.write_pending()
        seg.close_fd()


def offsets_readable(log: PartitionLog) -> list[int]:
    log.update_high_watermark(log.log_end_offset)
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, max_offset=log.log_end_offset)
        for _pos, h in iter_batches(data):
            out.extend(range(max(h.base_offset, offset), h.next_offset))
            offset = h.next_offset
    return out


@pytest.fixture
def count_recover(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = LogSegment.recover

    def counting(self: LogSegment, index_interval_bytes: int, *args: Any, **kwargs: Any) -> int:
        calls.append(self.base_offset)
        return original(self, index_interval_bytes, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "recover", counting)
    return calls


def fill(d: Path, batches: int = 40) -> PartitionLog:
    log = open_log(d)
    for i in range(batches):
        log.append(make_batch(i), leader_epoch=0, now_ms=NOW)
    return log


def test_torn_tail_is_truncated_to_the_last_whole_batch(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    leo = log.log_end_offset
    last_base = log.segment_base_offsets()[-1]
    abandon(log)
    seg_file = d / f"{last_base:020d}.log"
    size = seg_file.stat().st_size
    os.truncate(seg_file, size - 5)  # tear the last batch

    log = open_log(d)
    assert log.log_end_offset == leo - 1
    assert offsets_readable(log) == list(range(leo - 1))
    assert log.append(make_batch(999), leader_epoch=1, now_ms=NOW).base_offset == leo - 1
    assert offsets_readable(log) == list(range(leo))


def test_torn_header_and_trailing_zeros(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d, 5)
    abandon(log)
    seg_file = d / "00000000000000000000.log"
    with open(seg_file, "ab") as f:
        f.write(b"\x00" * 30)  # a partial header / preallocated zeros
    log = open_log(d)
    assert log.log_end_offset == 5
    assert seg_file.stat().st_size == log.size_in_bytes


def test_corrupt_crc_in_the_tail(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    leo = log.log_end_offset
    last_base = log.segment_base_offsets()[-1]
    abandon(log)
    seg_file = d / f"{last_base:020d}.log"
    data = bytearray(seg_file.read_bytes())
    data[-3] ^= 0x55  # flip a bit in the last batch's records
    seg_file.write_bytes(bytes(data))
    log = open_log(d)
    assert log.log_end_offset == leo - 1
    assert offsets_readable(log) == list(range(leo - 1))


def test_corruption_in_an_earlier_unflushed_segment_drops_later_segments(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    bases = log.segment_base_offsets()
    assert len(bases) >= 3
    abandon(log)
    seg_file = d / f"{bases[1]:020d}.log"
    data = bytearray(seg_file.read_bytes())
    data[-3] ^= 0x55  # the last batch of the second segment
    seg_file.write_bytes(bytes(data))
    log = open_log(d)  # recovery point 0: everything is rescanned
    assert log.segment_base_offsets() == bases[:2]
    assert log.log_end_offset == bases[2] - 1
    assert not (d / f"{bases[2]:020d}.log").exists()
    assert offsets_readable(log) == list(range(bases[2] - 1))


def test_recovery_starts_at_the_recovery_point(tmp_path: Path, count_recover: list[int]) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    bases = log.segment_base_offsets()
    log.flush(bases[-2] + 1)  # everything below an offset inside the second-to-last segment
    rp = log.recovery_point
    abandon(log)
    count_recover.clear()
    log = open_log(d, recovery_point=rp)
    assert count_recover == bases[-2:]  # the segment holding the recovery point and later ones
    assert offsets_readable(log) == list(range(40))


def test_clean_open_scans_nothing(tmp_path: Path, count_recover: list[int]) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    log.close()
    count_recover.clear()
    log = open_log(d, recovery_point=40, had_clean_shutdown=True)
    assert count_recover == []
    assert log.log_end_offset == 40
    assert offsets_readable(log) == list(range(40))
    assert log.append(make_batch(40), leader_epoch=0, now_ms=NOW).base_offset == 40


def test_missing_and_corrupt_indexes_are_rebuilt(tmp_path: Path, count_recover: list[int]) -> None:
    d = tmp_path / "t-0"
    log = fill(d, 80)
    bases = log.segment_base_offsets()
    log.close()
    index0 = d / f"{bases[0]:020d}.index"
    expected = index0.read_bytes()
    assert expected  # sparse but not empty
    index0.unlink()
    (d / f"{bases[1]:020d}.timeindex").unlink()
    with open(d / f"{bases[2]:020d}.index", "ab") as f:
        f.write(b"\x01\x02\x03")  # a torn entry
    count_recover.clear()
    log = open_log(d, recovery_point=80, had_clean_shutdown=True)
    assert sorted(count_recover) == bases[:3]
    assert index0.read_bytes() == expected
    assert (d / f"{bases[1]:020d}.timeindex").stat().st_size % 12 == 0
    assert (d / f"{bases[2]:020d}.index").stat().st_size % 8 == 0
    assert offsets_readable(log) == list(range(80))
    assert log.offset_for_timestamp(NOW + 50) == (50, NOW + 50)


def test_stray_files_are_removed(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d, 3)
    log.close()
    for name in ("00000000000000000000.log.deleted", "x.tmp", "00000000000000000000.log.cleaned"):
        (d / name).write_bytes(b"junk")
    (d / "00000000000000000777.index").write_bytes(b"\x00" * 8)  # no matching .log
    open_log(d, recovery_point=3, had_clean_shutdown=True)
    assert sorted(p.name for p in d.iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000003.snapshot",
        "leader-epoch-checkpoint",
    ]


def test_log_start_offset_and_high_watermark_restored(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    log.update_high_watermark(30)
    log.delete_records_before(12)
    log.close()
    log = open_log(d, recovery_point=40, log_start_offset=12, high_watermark=30, had_clean_shutdown=True)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (12, 30, 40)
    # a checkpointed log start offset above all data restarts the log there
    log.close()
    log = open_log(d, recovery_point=40, log_start_offset=100, had_clean_shutdown=True)
    assert (log.log_start_offset, log.log_end_offset, log.segment_count) == (100, 100, 1)


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from zurau.protocol.records.builder import build_batch
    from zurau.storage.log_config import LogConfig
    from zurau.storage.partition_log import PartitionLog
    log = PartitionLog.open(Path(sys.argv[1]), "t", 0, LogConfig(segment_bytes=2000), now_ms=0)
    for i in range(300):
        r = log.append(build_batch([(b"k", b"v%d" % i, [], i)]), leader_epoch=0, now_ms=0)
        os.write(1, b"%d\\n" % r.last_offset)  # "acknowledge" only after append returned
        if i == 250:
            os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_kill_9_never_loses_an_acknowledged_append(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(d)], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    acked = [int(x) for x in proc.stdout.split()]
    assert acked and acked[-1] == 250
    log = open_log(d)
    assert log.log_end_offset >= acked[-1] + 1
    assert set(acked) <= set(offsets_readable(log))
