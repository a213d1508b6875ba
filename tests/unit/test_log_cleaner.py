"""The log cleaner (compaction) over real partition logs on disk, no sockets.

Each test builds a compacted log with small segments through a LogManager, runs cleaning passes
synchronously (``LogCleaner.clean_once``: the swap runs in place instead of on an event loop) and
reads the log back like a consumer from offset 0.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zurau.protocol.errors import InvalidRecordError, OutOfOrderSequenceNumberError
from zurau.protocol.records.batch import DELETE_HORIZON_MASK, HEADER, BatchHeader, iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.protocol.records.record import Record, decode_batch_records
from zurau.storage import segment_swap
from zurau.storage.cleaner import CleaningAbortedError, rebuild_batch
from zurau.storage.log_cleaner import CleanerConfig, LogCleaner
from zurau.storage.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.log_validator import RecordValidationError
from zurau.storage.offset_map import ENTRY_BYTES, OffsetMap
from zurau.storage.partition_log import PartitionLog

NOW = 1_700_000_000_000
DAY = 86_400_000


class Env:
    """A LogManager with one compacted log ``t-0``, a settable clock and a cleaner."""

    def __init__(self, root: Path, cleaner: dict[str, Any] | None = None, **cfg: Any) -> None:
        self.root = root
        self.now = NOW
        base = {"cleanup_policy": "compact", "segment_bytes": 1024, "min_cleanable_dirty_ratio": 0.01}
        self.config = LogConfig(**{**base, **cfg})
        self.cleaner_config = CleanerConfig.from_props(cleaner or {})
        self._open()

    def _open(self) -> None:
        self.lm = LogManager([self.root / "data"], lambda: self.now, default_config=self.config)
        self.log = self.lm.get_or_create("t", 0, self.config)
        self.cleaner = LogCleaner(self.cleaner_config, self.lm, lambda: self.now)

    def reopen(self, *, clean: bool = True) -> PartitionLog:
        if clean:
            self.lm.close()
        else:  # a crash: close descriptors only, no snapshot/flush/marker
            for seg in self.log.log_segments():
                seg.close_fd()
        self._open()
        return self.log

    def append(self, batch: bytes) -> int:
        r = self.log.append(batch, leader_epoch=0, now_ms=self.now)
        self.log.update_high_watermark(self.log.log_end_offset)
        return r.base_offset

    def put(self, key: bytes, value: bytes | None, ts: int | None = None) -> int:
        return self.append(build_batch([NewRecord(key, value, (), self.now if ts is None else ts)]))

    def roll(self) -> None:
        self.log.roll(self.now)

    def clean(self) -> Any:
        return self.cleaner.clean_once()

    def close(self) -> None:
        self.lm.close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    yield e
    e.close()


def read_all(log: PartitionLog, start: int | None = None) -> list[Record]:
    """Every record from ``start`` (the log start offset) to the high watermark, as a consumer
    reads them (one segment per read, gaps skipped)."""
    out: list[Record] = []
    offset = log.log_start_offset if start is None else start
    while offset < log.high_watermark:
        data = log.read(offset, 1 << 20, max_offset=log.high_watermark)
        assert data, f"empty read at {offset} below the high watermark {log.high_watermark}"
        for pos, h in iter_batches(data):
            out.extend(r for r in decode_batch_records(data[pos : pos + h.size]) if r.offset >= offset)
            offset = max(offset, h.next_offset)
    return out


def headers_of(log: PartitionLog) -> list[BatchHeader]:
    return [h for seg in log.log_segments() for _pos, h in seg.iter_headers()]


def changelog(records: list[Record]) -> dict[bytes, bytes | None]:
    """Key -> last value read (a tombstone reads as None)."""
    out: dict[bytes, bytes | None] = {}
    for r in records:
        assert r.key is not None
        out[r.key] = r.value
    return out


def fill(env: Env, n: int, keys: int, *, seed: int = 1, tombstone_every: int = 0) -> dict[bytes, Record]:
    """``n`` single-record batches over ``keys`` keys; return each key's latest record."""
    rnd = random.Random(seed)
    latest: dict[bytes, Record] = {}
    for i in range(n):
        key = b"key-%03d" % rnd.randrange(keys)
        value = None if tombstone_every and i % tombstone_every == tombstone_every - 1 else b"value-%05d" % i
        env.now += 1
        off = env.put(key, value)
        latest[key] = Record(off, env.now, key, value, [])
    return latest


def assert_changelog(
    log: PartitionLog, latest: dict[bytes, Record], *, tombstones_gone: bool = False
) -> None:
    """A consumer reading from the start ends with every key's latest value."""
    got = changelog(read_all(log))
    for key, rec in latest.items():
        if rec.value is None and tombstones_gone:
            assert key not in got, f"{key!r} was deleted but reads as {got.get(key)!r}"
        else:
            assert got.get(key, b"<absent>") == rec.value, (
                f"{key!r}: read {got.get(key)!r}, latest {rec.value!r}"
            )


# ------------------------------------------------------------------------------ the basics


def test_latest_value_per_key_survives_with_its_offset_and_timestamp(env: Env) -> None:
    latest = fill(env, 400, 25)
    before = {r.offset: r for r in read_all(env.log)}
    size_before = env.log.size_in_bytes
    env.roll()
    stats = env.clean()
    assert stats is not None and stats.records_removed > 300
    after = read_all(env.log)
    assert env.log.size_in_bytes < size_before / 5
    offsets = [r.offset for r in after]
    assert offsets == sorted(set(offsets))  # increasing, never renumbered ...
    for r in after:  # ... every surviving record is the one produced at its offset
        assert before[r.offset] == r
    by_key: dict[bytes, list[Record]] = {}
    for r in after:
        assert r.key is not None
        by_key.setdefault(r.key, []).append(r)
    assert set(by_key) == set(latest)
    for key, rec in latest.items():
        assert by_key[key] == [rec], f"{key!r} should keep only its latest record"
    assert env.log.log_end_offset == 400 and env.log.high_watermark == 400
    # The checkpoint names the first dirty offset: the active segment's base.
    text = (env.root / "data" / CLEANER_OFFSET_CHECKPOINT).read_text().split("\n")
    assert text[:3] == ["0", "1", f"t 0 {env.log.active_segment.base_offset}"]


def test_batches_keep_their_offset_ranges_and_producer_fields(env: Env) -> None:
    for i in range(60):  # 3-record batches whose first two records are superseded right away
        env.append(
            build_batch(
                [
                    NewRecord(b"a", b"%d" % i, (), NOW),
                    NewRecord(b"b", b"%d" % i, (), NOW),
                    NewRecord(b"c%d" % i, b"x", (), NOW),
                ],
                producer_id=7,
                producer_epoch=3,
                base_sequence=3 * i,
            )
        )
    original = {h.base_offset: h for h in headers_of(env.log)}
    env.roll()
    assert env.clean() is not None
    for h in headers_of(env.log):
        o = original[h.base_offset]
        assert (h.last_offset_delta, h.producer_id, h.producer_epoch, h.base_sequence) == (
            o.last_offset_delta,
            7,
            3,
            o.base_sequence,
        )
        assert h.records_count in (1, 3)
    got = changelog(read_all(env.log))
    assert got[b"a"] == got[b"b"] == b"59" and len(got) == 62


def test_keyless_records_are_refused_on_a_compacted_topic(env: Env) -> None:
    batch = build_batch([NewRecord(b"k", b"v", (), NOW), NewRecord(None, b"no key", (), NOW)])
    with pytest.raises(RecordValidationError) as e:
        env.append(batch)
    assert isinstance(e.value, InvalidRecordError) and e.value.code == 87
    assert e.value.record_errors == [
        (1, "Compacted topic cannot accept message without key in topic partition t-0.")
    ]
    assert env.log.log_end_offset == 0
    env.log.update_config(LogConfig(cleanup_policy="delete"))
    assert env.append(batch) == 0  # a delete topic takes them


# ------------------------------------------------------------------------------ tombstones


def test_tombstones_go_only_after_delete_retention_ms(tmp_path: Path) -> None:
    env = Env(tmp_path, delete_retention_ms=DAY)
    try:
        env.put(b"gone", b"old")
        env.put(b"kept", b"1")
        env.put(b"gone", None)  # the tombstone, offset 2
        env.roll()
        assert env.clean() is not None
        records = read_all(env.log)
        assert [(r.offset, r.key, r.value) for r in records] == [(1, b"kept", b"1"), (2, b"gone", None)]
        tomb = [h for h in headers_of(env.log) if h.base_offset == 2][0]
        assert tomb.attributes & DELETE_HORIZON_MASK and tomb.base_timestamp == NOW + DAY
        assert records[1].timestamp == NOW  # the record keeps its own timestamp

        def another_pass() -> None:
            env.put(b"kept", b"%d" % env.log.log_end_offset)  # new dirty data for a pass to clean
            env.roll()
            assert env.clean() is not None

        env.now = NOW + DAY - 1
        another_pass()
        assert (b"gone", None) in [(r.key, r.value) for r in read_all(env.log)]
        env.now = NOW + DAY
        another_pass()
        assert b"gone" not in changelog(read_all(env.log))
        assert read_all(env.log)[0].key == b"kept"
    finally:
        env.close()


# ------------------------------------------------------------------------------ transactions


class TxnProducer:
    def __init__(self, env: Env, pid: int) -> None:
        self.env, self.pid, self.seq = env, pid, 0

    def send(self, *kv: tuple[bytes, bytes]) -> int:
        b = build_batch(
            [NewRecord(k, v, (), self.env.now) for k, v in kv],
            producer_id=self.pid,
            producer_epoch=0,
            base_sequence=self.seq,
            is_transactional=True,
        )
        self.seq += len(kv)
        return self.env.append(b)

    def end(self, commit: bool) -> int:
        return self.env.append(build_control_batch(commit, self.pid, 0, 0, timestamp_ms=self.env.now))


def markers(log: PartitionLog) -> dict[int, int]:
    """Offset -> records count of every control batch in the log."""
    return {h.base_offset: h.records_count for h in headers_of(log) if h.is_control}


def test_aborted_transactions_are_removed_and_never_hide_committed_values(env: Env) -> None:
    committed, aborted = TxnProducer(env, 1), TxnProducer(env, 2)
    env.put(b"a", b"a0")
    committed.send((b"b", b"b-committed"))
    committed.end(commit=True)
    aborted.send((b"a", b"a-aborted"), (b"c", b"c-aborted"))  # offsets 3, 4
    aborted.end(commit=False)  # 5
    env.put(b"d", b"d0")
    env.roll()
    assert env.log.aborted_transactions(0, 100)[0].first_offset == 3
    assert env.clean() is not None
    records = read_all(env.log)
    values = {r.value for r in records}
    assert b"a-aborted" not in values and b"c-aborted" not in values
    assert changelog([r for r in records if r.key is not None and not r.key.startswith(b"\x00")]) == {
        b"a": b"a0",
        b"b": b"b-committed",
        b"d": b"d0",
    }


def test_transaction_markers_go_only_once_no_data_of_theirs_is_left(tmp_path: Path) -> None:
    env = Env(tmp_path, delete_retention_ms=DAY)
    try:
        p = TxnProducer(env, 1)
        p.send((b"k", b"txn-1"))  # 0
        commit_1 = p.end(commit=True)  # 1
        p.send((b"k", b"txn-2"))  # 2
        abort_2 = p.end(commit=False)  # 3
        p.send((b"k", b"txn-3"))  # 4
        p.end(commit=True)  # 5
        env.put(b"k", b"plain")  # 6: supersedes every transactional value of k
        env.log.remove_expired_producers(env.now + 1, 0)  # the producer is gone: nothing keeps its batches
        env.roll()

        def another_pass() -> None:
            env.put(b"other", b"%d" % env.log.log_end_offset)
            env.roll()
            assert env.clean() is not None

        assert env.clean() is not None
        # Pass 1 removed the data (superseded or aborted) but saw it: both markers stay as they were.
        assert markers(env.log)[commit_1] == 1 and markers(env.log)[abort_2] == 1
        assert env.log.aborted_transactions(0, 100) and b"txn-2" not in {r.value for r in read_all(env.log)}
        another_pass()
        # Pass 2 finds no data of theirs: they get a delete horizon but stay until it passes.
        horizons = {h.base_offset: h for h in headers_of(env.log) if h.is_control}
        assert horizons[commit_1].attributes & DELETE_HORIZON_MASK
        assert horizons[commit_1].base_timestamp == env.now + DAY
        env.now += DAY + 1
        another_pass()
        assert commit_1 not in markers(env.log) and abort_2 not in markers(env.log)
        assert changelog([r for r in read_all(env.log) if r.key in (b"k",)]) == {b"k": b"plain"}
    finally:
        env.close()


def test_a_marker_stays_while_data_of_its_transaction_remains(env: Env) -> None:
    p = TxnProducer(env, 1)
    p.send((b"k1", b"keep-me"))
    marker = p.end(commit=True)
    env.log.remove_expired_producers(env.now + 1, 0)
    env.now += 10 * DAY
    for _ in range(3):
        env.put(b"other", b"x")
        env.roll()
        assert env.clean() is not None
    assert markers(env.log) == {marker: 1}
    assert changelog([r for r in read_all(env.log) if r.key == b"k1"]) == {b"k1": b"keep-me"}


# ------------------------------------------------------------------------------ lags, ratio


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path: Path) -> None:
    env = Env(tmp_path, min_compaction_lag_ms=60_000)
    try:
        for i in range(30):
            env.put(b"k", b"%d" % i, ts=NOW)
        env.roll()
        env.now = NOW + 30_000  # within the lag: nothing is cleanable
        assert env.clean() is None
        assert len(read_all(env.log)) == 30
        env.now = NOW + 60_001
        assert env.clean() is not None
        assert [r.value for r in read_all(env.log)] == [b"29"]
    finally:
        env.close()


def test_dirty_ratio_and_max_compaction_lag_decide_when_to_clean(tmp_path: Path) -> None:
    env = Env(tmp_path, min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=DAY)
    try:
        for i in range(30):
            env.put(b"k%d" % (i % 3), b"%d" % i, ts=NOW)
        env.roll()
        assert env.clean() is not None  # all dirty: ratio 1
        for i in range(3):
            env.put(b"k%d" % i, b"new-%d" % i, ts=NOW + 1)
        env.roll()
        ltc = env.cleaner.manager.grab_filthiest_log(env.now)
        assert ltc is None  # a third of the bytes are dirty, below min.cleanable.dirty.ratio
        assert 0.2 < env.cleaner.manager.dirtiest_ratio < 0.9
        env.now = NOW + DAY + 2  # the oldest dirty segment is older than max.compaction.lag.ms
        stats = env.clean()
        assert stats is not None and stats.records_removed == 3
        assert changelog(read_all(env.log)) == {b"k0": b"new-0", b"k1": b"new-1", b"k2": b"new-2"}
    finally:
        env.close()


def test_max_compaction_lag_rolls_the_active_segment(tmp_path: Path) -> None:
    env = Env(tmp_path, max_compaction_lag_ms=1000, segment_bytes=1 << 20)
    try:
        env.put(b"k", b"1", ts=NOW)
        env.now = NOW + 1001
        env.put(b"k", b"2", ts=env.now)
        assert env.log.segment_count == 2  # a compacted log rolls at max.compaction.lag.ms
    finally:
        env.close()


def test_compact_delete_applies_retention_and_compaction(tmp_path: Path) -> None:
    env = Env(tmp_path, cleanup_policy="compact,delete", retention_ms=DAY)
    try:
        old = fill(env, 150, 10, seed=8)  # records at NOW+1 ...
        env.roll()
        assert env.clean() is not None
        env.now = NOW + 2 * DAY
        latest = fill(env, 150, 10, seed=9)
        env.roll()
        assert env.log.apply_retention(env.now) > 0  # the old segments (now cleaned) expire
        assert env.log.log_start_offset >= 150
        assert env.clean() is not None  # the checkpoint below the log start offset is reset
        assert env.cleaner.manager.checkpointed_offset("t", 0) == env.log.active_segment.base_offset
        records = read_all(env.log)
        assert all(r.offset >= 150 for r in records) and len(records) <= len(latest) + 1
        assert_changelog(env.log, latest)
        assert old.keys() == latest.keys()
    finally:
        env.close()


# ------------------------------------------------------------------------------ the offset map


def test_offset_map_is_bounded_and_remembers_latest_offsets() -> None:
    m = OffsetMap(ENTRY_BYTES * 10, 0.5)
    assert m.capacity == 5
    for i in range(5):
        assert m.put(b"k%d" % i, i)
    assert m.is_full and not m.put(b"k9", 9) and not m.put(b"k0", 10)
    assert m.get(b"k3") == 3 and m.get(b"absent") == -1
    m.update_latest_offset(4)
    m.update_latest_offset(2)
    assert m.latest_offset == 4
    m.clear()
    assert len(m) == 0 and m.latest_offset == -1
    with pytest.raises(ValueError):
        OffsetMap(ENTRY_BYTES - 1)


def test_a_tiny_dedupe_buffer_cleans_in_several_passes_to_the_same_result(tmp_path: Path) -> None:
    env = Env(tmp_path, cleaner={"log.cleaner.dedupe.buffer.size": ENTRY_BYTES * 12})  # 10 keys
    try:
        latest = fill(env, 300, 40, seed=5, tombstone_every=0)
        env.roll()
        first_uncleanable = env.log.active_segment.base_offset
        ends = []
        for _ in range(40):
            stats = env.clean()
            if stats is None:
                break
            ends.append(stats.end_offset)
            assert_changelog(env.log, latest)  # correct after every partial pass
        assert len(ends) > 2 and ends[0] < first_uncleanable  # the first pass stopped where the map filled
        assert ends == sorted(ends) and ends[-1] == first_uncleanable
        # Once every offset is mapped, the next pass from the start leaves one record per key.
        env.put(b"key-000", b"final")
        latest[b"key-000"] = Record(0, 0, b"key-000", b"final", [])
        env.roll()
        big = LogCleaner(CleanerConfig(), env.lm, lambda: env.now)  # reads the same checkpoint
        assert big.clean_once() is not None
        records = read_all(env.log)
        assert len(records) == len(latest)
        assert_changelog(env.log, latest)
    finally:
        env.close()


# ------------------------------------------------------------------------------ segments, indexes


def test_segments_are_regrouped_up_to_segment_bytes(tmp_path: Path) -> None:
    env = Env(tmp_path, segment_bytes=2048, index_interval_bytes=128)
    try:
        latest = fill(env, 600, 12, seed=3)
        env.roll()
        before = env.log.segment_count
        assert env.clean() is not None  # a pass keeps each full segment a group of its own ...
        env.put(b"key-000", b"again")
        latest[b"key-000"] = Record(0, 0, b"key-000", b"again", [])
        env.roll()
        assert env.clean() is not None  # ... the next merges the now small segments
        assert env.log.segment_count < before / 5
        for seg in env.log.log_segments():
            assert seg.size <= 2048
        assert_changelog(env.log, latest)
    finally:
        env.close()


def test_indexes_are_rebuilt_offset_and_time_lookups_stay_exact(tmp_path: Path) -> None:
    env = Env(tmp_path, segment_bytes=4096, index_interval_bytes=64)
    try:
        rnd = random.Random(7)
        for i in range(800):
            env.put(b"k%d" % rnd.randrange(60), b"v%04d" % i, ts=NOW + i * 10)
        env.roll()
        assert env.clean() is not None
        for reopen in (False, True):
            log = env.reopen() if reopen else env.log
            records = read_all(log)
            for seg in log.log_segments()[:-1]:
                assert seg.indexes_look_valid()
                if seg.size > 4 * 64:  # sparse entries were written (one per 64 bytes of log)
                    assert seg.offset_index.entries > 0 and seg.time_index.entries > 1
            for r in records:  # every retained record is found from its own offset
                data = log.read(r.offset, 1, max_offset=log.high_watermark)
                first = [x for x in decode_batch_records(data) if x.offset >= r.offset][0]
                assert first == r
            for ts in range(NOW - 5, NOW + 8000, 37):
                want = next(((x.offset, x.timestamp) for x in records if x.timestamp >= ts), None)
                assert log.offset_for_timestamp(ts) == want, ts
    finally:
        env.close()


def test_rebuilt_batches_keep_record_timestamps_under_a_delete_horizon() -> None:
    batch = build_batch(
        [NewRecord(b"a", None, [("h", b"1")], NOW + 5), NewRecord(b"b", b"x", (), NOW + 9)], compression=4
    )
    h = BatchHeader._make(HEADER.unpack_from(batch, 0))
    recs = decode_batch_records(batch)
    out = rebuild_batch(h, recs[:1], NOW + DAY)
    oh = BatchHeader._make(HEADER.unpack_from(out, 0))
    assert oh.attributes & DELETE_HORIZON_MASK and oh.base_timestamp == NOW + DAY
    assert (oh.last_offset_delta, oh.compression, oh.max_timestamp, oh.records_count) == (1, 4, NOW + 5, 1)
    assert decode_batch_records(out) == recs[:1]  # CRC valid, same offset, timestamp, headers


# ------------------------------------------------------------------------------ consumers, producers


def test_a_consumer_from_offset_zero_reads_a_correct_changelog_across_passes(tmp_path: Path) -> None:
    env = Env(tmp_path, segment_bytes=1500, delete_retention_ms=1000)
    try:
        latest: dict[bytes, Record] = {}
        rnd = random.Random(11)
        for _round in range(8):
            latest.update(fill(env, 150, 30, seed=rnd.randrange(1 << 30), tombstone_every=7))
            env.roll()
            env.now += 600
            env.clean()
            assert_changelog(env.log, latest)
        env.now += 10_000
        for _ in range(3):  # tombstones past their horizon go; nothing else changes
            env.put(b"filler", b"f")
            latest[b"filler"] = Record(0, 0, b"filler", b"f", [])
            env.roll()
            env.clean()
        assert_changelog(env.log, latest, tombstones_gone=True)
        assert all(r.value is not None for r in read_all(env.log)[:-1])
    finally:
        env.close()


def idempotent(pid: int, seq: int, key: bytes, value: bytes) -> bytes:
    return build_batch([NewRecord(key, value, (), NOW)], producer_id=pid, producer_epoch=0, base_sequence=seq)


@pytest.mark.parametrize("lose_snapshots", [False, True])
def test_producer_state_survives_cleaning_and_a_restart(tmp_path: Path, lose_snapshots: bool) -> None:
    env = Env(tmp_path)
    try:
        for seq in range(40):
            env.append(idempotent(9, seq, b"same-key", b"%d" % seq))  # every batch but the last is superseded
        for seq in range(10):
            env.append(idempotent(10, seq, b"k%d" % seq, b"x"))
        env.append(idempotent(9, 40, b"same-key", b"40"))
        env.put(b"tail", b"t")
        env.roll()
        assert env.clean() is not None
        kept = {h.producer_id: h for h in headers_of(env.log) if h.producer_id == 9}
        assert [h.base_sequence for h in kept.values()] == [40]
        env.lm.close()
        if lose_snapshots:  # the state must then come back from the cleaned log alone
            for p in (tmp_path / "data" / "t-0").glob("*.snapshot"):
                p.unlink()
        env.reopen(clean=False)
        entry = env.log.producer_entry(9)
        assert entry is not None and entry.last_seq == 40
        with pytest.raises(OutOfOrderSequenceNumberError):
            env.append(idempotent(9, 45, b"same-key", b"gap"))
        dup = env.log.append(idempotent(9, 40, b"same-key", b"40"), leader_epoch=0, now_ms=env.now)
        assert dup.duplicate
        assert env.append(idempotent(9, 41, b"same-key", b"41")) == env.log.log_end_offset - 1
    finally:
        env.close()


# ------------------------------------------------------------------------------ concurrency


def test_a_swap_is_refused_when_retention_or_truncation_changed_the_segments(env: Env) -> None:
    latest = fill(env, 200, 10)
    env.roll()
    ltc = env.cleaner.manager.grab_filthiest_log(env.now)
    assert ltc is not None
    env.log.truncate_to(150)  # a follower truncation: the snapshotted segments are no longer the log's
    latest = {k: r for k, r in latest.items() if r.offset < 150}
    cleaner = env.cleaner.cleaners[0]
    with pytest.raises(CleaningAbortedError):
        cleaner.clean(ltc, env.now, lambda c: env.cleaner._swap(ltc, c))
    env.cleaner.manager.release(ltc)
    assert not [p for p in (env.root / "data" / "t-0").iterdir() if p.name.endswith(".cleaned")]
    before = read_all(env.log)
    assert max(r.offset for r in before) == 149 and len(before) == 150  # nothing was cleaned
    assert env.clean() is not None  # a new pass over the truncated log works
    assert_changelog(env.log, {k: r for k, r in latest.items()})


def test_readers_of_a_replaced_segment_keep_reading_its_old_bytes(env: Env) -> None:
    fill(env, 200, 5)
    env.roll()
    sl = env.log.read_slice(0, 1 << 20, max_offset=env.log.high_watermark)
    assert sl is not None
    old_bytes = os.pread(sl.fd, sl.size, sl.position)
    assert env.clean() is not None
    assert os.pread(sl.fd, sl.size, sl.position) == old_bytes  # the descriptor outlives the swap
    env.log.purge_retired(env.now + env.config.file_delete_delay_ms + 1)
    with pytest.raises(OSError):
        os.fstat(sl.fd)


# ------------------------------------------------------------------------------ crash safety


def _snapshot_states(monkeypatch: pytest.MonkeyPatch, directory: Path, out: Path) -> list[Path]:
    """Copy ``directory`` before every rename and unlink in it: each copy is what a kill -9 at that
    moment would leave on disk."""
    states: list[Path] = []
    real_rename, real_unlink = os.rename, os.unlink

    def snap() -> None:
        dst = out / f"state-{len(states):03d}"
        shutil.copytree(directory, dst)
        states.append(dst)

    def rename(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        if Path(src).parent == directory:
            snap()
        real_rename(src, dst, *a, **kw)

    def unlink(path: Any, *a: Any, **kw: Any) -> None:
        if Path(path).parent == directory:
            snap()
        real_unlink(path, *a, **kw)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "unlink", unlink)
    return states


def _horizon_tombstone(offset: int, key: bytes, horizon: int) -> bytes:
    """A tombstone batch as a previous pass left it: delete horizon set, stored at ``offset``."""
    plain = build_batch([NewRecord(key, None, (), NOW)], base_offset=offset)
    h = BatchHeader._make(HEADER.unpack_from(plain, 0))
    return rebuild_batch(h, decode_batch_records(plain), horizon)


def test_a_crash_at_any_step_of_the_swap_loses_no_latest_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = Env(tmp_path, segment_bytes=1200, delete_retention_ms=1000)
    try:
        env.put(b"doomed", b"old value")  # superseded by the tombstone below, in a later group
        fill(env, 20, 8, seed=2)
        env.roll()
        fill(env, 20, 8, seed=3)
        env.roll()
        assert env.clean() is not None  # small cleaned segments, merged into one group below
        fill(env, 20, 8, seed=4)
        off = env.log.log_end_offset
        env.log.append_as_follower(_horizon_tombstone(off, b"doomed", NOW), now_ms=env.now)  # horizon passed
        env.log.update_high_watermark(env.log.log_end_offset)
        fill(env, 20, 8, seed=5)
        env.roll()
        env.now = NOW + 5000
        expected = changelog(read_all(env.log))
        assert expected[b"doomed"] is None
        directory = env.log.directory
        states = _snapshot_states(monkeypatch, directory, tmp_path / "states")
        stats = env.clean()
        monkeypatch.undo()
        assert (
            stats is not None and stats.groups_swapped >= 2 and stats.segments_before > stats.segments_after
        )
        after = changelog(read_all(env.log))
        assert b"doomed" not in after
        # Also a kill while a .cleaned file was half written.
        torn = tmp_path / "states" / "torn"
        shutil.copytree(states[0], torn)
        cleaned = next(p for p in torn.iterdir() if p.name.endswith(".log.cleaned"))
        os.truncate(cleaned, cleaned.stat().st_size // 2)
        states.append(torn)
        assert len(states) > 3 * 8
        for state in states:
            log = PartitionLog.open(
                state, "t", 0, env.config, now_ms=env.now, high_watermark=env.log.high_watermark
            )
            try:
                names = os.listdir(state)
                assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))], state
                got = changelog(read_all(log))
                for key, value in expected.items():
                    if value is None:
                        assert got.get(key) is None, f"{state.name}: {key!r} came back as {got.get(key)!r}"
                    else:
                        assert got.get(key) == value, (
                            f"{state.name}: {key!r} is {got.get(key)!r}, not {value!r}"
                        )
                assert log.log_end_offset == env.log.log_end_offset
                segs = log.log_segments()
                for a, b in zip(segs, segs[1:], strict=False):  # no segment overlaps the next
                    assert a.next_offset <= b.base_offset, f"{state.name}: {a} overlaps {b}"
            finally:
                log.close()
    finally:
        env.close()


def test_recovery_completes_a_committed_swap_and_drops_an_uncommitted_one(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    env = Env(tmp_path, segment_bytes=600)
    try:
        latest = fill(env, 100, 4)
        env.roll()
        env.lm.close()
        src = env.root / "data" / "t-0"
        shutil.copytree(src, d)
        bases = sorted(int(p.name[:20]) for p in d.glob("*.log"))
        # An index .swap without its .log.swap: step 2 stopped before the commit point.
        (d / f"{bases[0]:020d}.index.swap").write_bytes(b"\x00" * 8)
        (d / f"{bases[1]:020d}.log.cleaned").write_bytes(b"garbage")
        log = PartitionLog.open(d, "t", 0, env.config, now_ms=NOW, high_watermark=100)
        try:
            assert sorted(os.listdir(d)) == sorted(os.listdir(src))
            assert_changelog(log, latest)
        finally:
            log.close()
        assert segment_swap.recover_interrupted_swaps(d) == []
    finally:
        env.reopen()
        env.close()
