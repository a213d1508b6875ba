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

from tests.support.partition_logs import NOW, open_log
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.storage.log_config import LogConfig
from zurau.storage.log_segment import LogSegment
from zurau.storage.partition_log import PartitionLog

CFG = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def numbered_batch(i: int, n: int = 1) -> bytes:
    """Batch number ``i``: ``n`` records keyed ``k`` with values ``value-<i>-<j>``, stamped ``NOW + i``."""
    return build_batch([(b"k", b"value-%d-%d" % (i, j), [], NOW + i) for j in range(n)])


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
    log = open_log(d, CFG)
    for i in range(batches):
        log.append(numbered_batch(i), leader_epoch=0, now_ms=NOW)
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

    log = open_log(d, CFG)
    assert log.log_end_offset == leo - 1
    assert offsets_readable(log) == list(range(leo - 1))
    assert log.append(numbered_batch(999), leader_epoch=1, now_ms=NOW).base_offset == leo - 1
    assert offsets_readable(log) == list(range(leo))


def test_torn_header_and_trailing_zeros(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = fill(d, 5)
    abandon(log)
    seg_file = d / "00000000000000000000.log"
    with open(seg_file, "ab") as f:
        f.write(b"\x00" * 30)  # a partial header / preallocated zeros
    log = open_log(d, CFG)
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
    log = open_log(d, CFG)
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
    log = open_log(d, CFG)  # recovery point 0: everything is rescanned
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
    log = open_log(d, CFG, recovery_point=rp)
    assert count_recover == bases[-2:]  # the segment holding the recovery point and later ones
    assert offsets_readable(log) == list(range(40))


def test_clean_open_scans_nothing(tmp_path: Path, count_recover: list[int]) -> None:
    d = tmp_path / "t-0"
    log = fill(d)
    log.close()
    count_recover.clear()
    log = open_log(d, CFG, recovery_point=40, had_clean_shutdown=True)
    assert count_recover == []
    assert log.log_end_offset == 40
    assert offsets_readable(log) == list(range(40))
    assert log.append(numbered_batch(40), leader_epoch=0, now_ms=NOW).base_offset == 40


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
    log = open_log(d, CFG, recovery_point=80, had_clean_shutdown=True)
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
    open_log(d, CFG, recovery_point=3, had_clean_shutdown=True)
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
    log = open_log(d, CFG, recovery_point=40, log_start_offset=12, high_watermark=30, had_clean_shutdown=True)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (12, 30, 40)
    # a checkpointed log start offset above all data restarts the log there
    log.close()
    log = open_log(d, CFG, recovery_point=40, log_start_offset=100, had_clean_shutdown=True)
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
    log = open_log(d, CFG)
    assert log.log_end_offset >= acked[-1] + 1
    assert set(acked) <= set(offsets_readable(log))


def _index_files(d: Path, base: int) -> list[Path]:
    return [d / f"{base:020d}.index", d / f"{base:020d}.timeindex"]


def test_recovery_leaves_an_index_that_matches_the_log_untouched(tmp_path: Path) -> None:
    """After a kill -9 the rebuilt index of a segment is the one on disk: no file is replaced
    (restarting 10,000 partitions would otherwise create 20,000 files)."""
    d = tmp_path / "t-0"
    log = fill(d)
    last_base = log.segment_base_offsets()[-1]
    leo = log.log_end_offset
    abandon(log)
    before = [(p.stat().st_ino, p.read_bytes()) for p in _index_files(d, last_base)]
    assert before[0][1], "the test needs index entries"
    log = open_log(d, CFG)
    assert [(p.stat().st_ino, p.read_bytes()) for p in _index_files(d, last_base)] == before
    assert log.log_end_offset == leo
    assert offsets_readable(log) == list(range(leo))


def test_torn_tail_rewrites_the_index_without_entries_past_the_cut(tmp_path: Path) -> None:
    """Index entries naming batches a torn tail lost are gone after recovery, on disk too, and
    a second unclean open finds the same log."""
    d = tmp_path / "t-0"
    cfg = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100)
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)
    for i in range(40):
        log.append(numbered_batch(i), leader_epoch=0, now_ms=NOW)
    base = log.segment_base_offsets()[-1]
    abandon(log)
    seg_file = d / f"{base:020d}.log"
    cut = seg_file.stat().st_size // 2 + 3  # inside a batch, with index entries beyond it
    with open(seg_file, "r+b") as f:
        f.truncate(cut)
    index = _index_files(d, base)[0]
    entries_before = index.stat().st_size // 8
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)
    leo = log.log_end_offset
    assert 0 < leo < 40
    raw = index.read_bytes()
    positions = [int.from_bytes(raw[i + 4 : i + 8], "big") for i in range(0, len(raw), 8)]
    assert 0 < len(positions) < entries_before
    assert all(p < seg_file.stat().st_size for p in positions)
    assert offsets_readable(log) == list(range(leo))
    abandon(log)
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)
    assert log.log_end_offset == leo and index.read_bytes() == raw
    assert log.append(numbered_batch(99), leader_epoch=0, now_ms=NOW).base_offset == leo


def test_the_final_time_index_entry_of_a_clean_close_survives_recovery(tmp_path: Path) -> None:
    """A clean close adds (largest timestamp, its offset) to the time index; a later crash
    recovery that finds the file ending with exactly that entry keeps the file as it is, and
    one whose log moved on rebuilds it."""
    d = tmp_path / "t-0"
    cfg = LogConfig(segment_bytes=1 << 20, index_interval_bytes=4096)
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)
    for i in range(3):
        log.append(numbered_batch(i), leader_epoch=0, now_ms=NOW)
    log.close()
    timeindex = _index_files(d, 0)[1]
    before = (timeindex.stat().st_ino, timeindex.read_bytes())
    assert len(before[1]) == 12  # the final entry, and no other
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)
    abandon(log)
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)  # recovery (no clean-shutdown state)
    assert (timeindex.stat().st_ino, timeindex.read_bytes()) == before
    found = log.offset_for_timestamp(NOW + 2)
    assert found == (2, NOW + 2)
    log.append(numbered_batch(7), leader_epoch=0, now_ms=NOW)
    abandon(log)
    log = PartitionLog.open(d, "t", 0, cfg, now_ms=NOW)
    assert timeindex.read_bytes() == b""  # the old final entry no longer names the largest timestamp
    assert offsets_readable(log) == [0, 1, 2, 3]
