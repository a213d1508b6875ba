"""The on-disk Raft log (KRaftLog) and quorum-state file, checked against the in-memory ones.

The behavioural checks run on ``InMemoryRaftLog`` and on ``KRaftLog`` (also with a one-entry tail
cache, so that reads come from the segments); what only the disk log promises -- whole-batch
reads, raw batch bytes, reopening existing or torn directories -- is tested on it alone. So are
snapshots (KIP-630): create, list, read in chunks, install, delete a prefix, on both logs; file
names, whole-segment deletion, the recorded log start and every crash window, on disk alone; and
a random differential run of both logs against a model. The last test runs three RaftNodes on
KRaftLogs and quorum-state files.
"""

from __future__ import annotations

import dataclasses
import json
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from zurau.metadata import kraft_log
from zurau.metadata.kraft_log import LOG_START_CHECKPOINT, PARTIAL_SUFFIX, KRaftLog, snapshot_file_name
from zurau.metadata.metadata_log import METADATA_TOPIC, MetadataLog
from zurau.metadata.quorum_state_file import (
    QUORUM_STATE_FILE,
    FileQuorumStateStore,
    quorum_state_path,
)
from zurau.metadata.record_codec import decode_record
from zurau.metadata.records import MetadataRecord, PartitionRecord, TopicRecord
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import iter_batches
from zurau.raft import (
    ElectionState,
    Entry,
    InMemoryQuorumStateStore,
    InMemoryRaftLog,
    OffsetAndEpoch,
    Output,
    Propose,
    QuorumStateStore,
    RaftConfig,
    RaftNode,
    Received,
    Role,
    Tick,
)
from zurau.raft.batches import decode_leader_change, encode_entries
from zurau.raft.messages import RaftMessage
from zurau.storage.checkpoint import read_offsets_checkpoint, write_offsets_checkpoint

NOW = 1_700_000_000_000
AnyLog = InMemoryRaftLog | KRaftLog


class Subject:
    """A log under test that can be 'restarted': the disk log is closed and opened again, the
    in-memory one crashes (keeping its flushed prefix, which is all a restart may rely on)."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.log: AnyLog = self._open()

    def _open(self) -> AnyLog:
        if self.kind == "memory":
            return InMemoryRaftLog()
        return KRaftLog(self.path, lambda: NOW, tail_entries=1 if self.kind == "disk-reads" else 4096)

    def reopen(self) -> None:
        if isinstance(self.log, InMemoryRaftLog):
            self.log.crash()
        else:
            self.log.close()
            self.log = self._open()

    def close(self) -> None:
        if isinstance(self.log, KRaftLog):
            self.log.close()


@pytest.fixture(params=["memory", "kraft", "disk-reads"])
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    s = Subject(request.param, tmp_path)
    yield s
    s.close()


@pytest.fixture(params=["kraft", "disk-reads"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    s = Subject(request.param, tmp_path)
    yield s
    s.close()


def fill(log: AnyLog, batches: list[tuple[int, int]]) -> None:
    """Append ``(epoch, entry count)`` batches as a leader would."""
    for epoch, n in batches:
        base = log.end_offset()
        log.append_as_leader(epoch, [f"p{base + i}".encode() for i in range(n)])


def batch(offset: int, epoch: int, n: int, control: bool = False) -> list[Entry]:
    return [Entry(offset + i, epoch, f"p{offset + i}".encode(), control, i == n - 1) for i in range(n)]


def plain(entries: object) -> list[tuple[int, int, bytes]]:
    assert isinstance(entries, list | tuple)
    return [(e.offset, e.epoch, e.payload) for e in entries]


# ------------------------------------------------------------------ RaftLog behaviour, both logs


def test_append_read_and_entry(subject: Subject) -> None:
    log = subject.log
    assert (log.end_offset(), log.last_fetched_epoch(), log.flushed_offset()) == (0, 0, 0)
    assert list(log.read(0, 10)) == []
    assert log.append_as_leader(1, []) == []
    entries = log.append_as_leader(3, [b"a", b"b"])
    assert entries == [Entry(0, 3, b"a", False, False), Entry(1, 3, b"b", False, True)]
    control = log.append_as_leader(3, [b"lc"], control=True)
    assert control == [Entry(2, 3, b"lc", True, True)]
    assert (log.end_offset(), log.last_fetched_epoch()) == (3, 3)
    assert list(log.read(0, 3)) == entries + control
    assert list(log.read(2, 10)) == control
    assert list(log.read(3, 10)) == [] and list(log.read(0, 0)) == []
    assert [log.entry(o) for o in range(3)] == entries + control
    with pytest.raises(IndexError):
        log.entry(3)
    with pytest.raises(ValueError):
        log.append_as_leader(2, [b"older epoch"])


def test_reads_at_batch_boundaries_agree(subject: Subject) -> None:
    fill(subject.log, [(1, 3), (1, 2), (2, 4), (2, 1)])
    log = subject.log
    assert list(log.read(0, 3)) == batch(0, 1, 3)
    assert list(log.read(0, 5)) == batch(0, 1, 3) + batch(3, 1, 2)
    assert list(log.read(3, 6)) == batch(3, 1, 2) + batch(5, 2, 4)
    assert list(log.read(5, 100)) == batch(5, 2, 4) + batch(9, 2, 1)


def test_end_offset_for_epoch_over_several_epochs(subject: Subject) -> None:
    log = subject.log
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(0, 0)
    fill(log, [(1, 2), (3, 1), (3, 2), (5, 1)])
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)
    assert log.last_fetched_epoch() == 5


def test_truncate_then_append(subject: Subject) -> None:
    log = subject.log
    fill(log, [(1, 2), (3, 2), (4, 1)])
    log.flush()
    assert log.flushed_offset() == 5
    log.truncate_to(9)  # beyond the end: nothing
    assert log.end_offset() == 5
    log.truncate_to(2)
    assert (log.end_offset(), log.flushed_offset(), log.last_fetched_epoch()) == (2, 2, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(2, 1)
    log.append_as_follower(batch(2, 6, 3))
    assert list(log.read(0, 10)) == batch(0, 1, 2) + batch(2, 6, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(6) == OffsetAndEpoch(5, 6)
    log.truncate_to(0)
    assert (log.end_offset(), log.last_fetched_epoch(), log.flushed_offset()) == (0, 0, 0)
    assert log.end_offset_for_epoch(6) == OffsetAndEpoch(0, 0)
    log.append_as_leader(7, [b"fresh"])
    assert list(log.read(0, 10)) == [Entry(0, 7, b"fresh")]


def test_truncate_inside_a_batch_keeps_the_entries_below(subject: Subject) -> None:
    log = subject.log
    fill(log, [(1, 2), (2, 4)])
    log.flush()
    log.truncate_to(4)
    assert plain(list(log.read(0, 10))) == plain(batch(0, 1, 2) + batch(2, 2, 4)[:2])
    assert log.end_offset() == 4 and log.flushed_offset() == 4
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(4, 2)
    log.append_as_follower(batch(4, 3, 1))
    log.flush()
    subject.reopen()
    assert plain(list(subject.log.read(0, 10))) == plain(batch(0, 1, 2) + batch(2, 2, 4)[:2] + batch(4, 3, 1))
    assert subject.log.end_offset_for_epoch(2) == OffsetAndEpoch(4, 2)


def test_follower_append_must_continue_the_log(subject: Subject) -> None:
    log = subject.log
    fill(log, [(2, 1)])
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(5, 2, b"gap")])
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(1, 1, b"older epoch")])
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(0, 2, b"overlap")])
    assert log.end_offset() == 1
    log.append_as_follower([])
    log.append_as_follower(batch(1, 2, 2) + batch(3, 4, 1))
    assert list(log.read(1, 10)) == batch(1, 2, 2) + batch(3, 4, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 2)


def test_flush_and_reopen_keep_entries_and_the_epoch_cache(subject: Subject) -> None:
    fill(subject.log, [(1, 2), (1, 1), (4, 3)])
    subject.log.append_as_leader(4, [b"lc"], control=True)
    before = list(subject.log.read(0, 100))
    subject.log.flush()
    subject.reopen()
    log = subject.log
    assert list(log.read(0, 100)) == before
    assert (log.end_offset(), log.flushed_offset(), log.last_fetched_epoch()) == (7, 7, 4)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(7, 4)
    log.append_as_leader(5, [b"after"])
    assert log.entry(7) == Entry(7, 5, b"after")


# ------------------------------------------------------------------ what only the disk log does


def test_reads_return_whole_batches(disk: Subject) -> None:
    log = disk.log
    fill(log, [(1, 3), (1, 2), (2, 4)])
    assert list(log.read(0, 1)) == batch(0, 1, 3), "a batch larger than max_entries is returned whole"
    assert list(log.read(0, 4)) == batch(0, 1, 3), "a batch that does not fit is not split"
    assert list(log.read(0, 5)) == batch(0, 1, 3) + batch(3, 1, 2)
    assert list(log.read(3, 3)) == batch(3, 1, 2)
    assert list(log.read(4, 1)) == batch(3, 1, 2)[1:], "a read starting inside a batch starts there"
    assert list(log.read(1, 100)) == batch(0, 1, 3)[1:] + batch(3, 1, 2) + batch(5, 2, 4)


def test_follower_appends_keep_the_leaders_batches(disk: Subject) -> None:
    assert isinstance(disk.log, KRaftLog)
    log = disk.log
    entries = batch(0, 1, 2) + batch(2, 1, 1, control=True) + batch(3, 2, 3)
    log.append_as_follower(entries)
    headers = [h for _pos, h in iter_batches(log.read_bytes(0, 1 << 20))]
    assert [(h.base_offset, h.records_count, h.partition_leader_epoch, h.is_control) for h in headers] == [
        (0, 2, 1, False),
        (2, 1, 1, True),
        (3, 3, 2, False),
    ]
    assert list(log.read(0, 100)) == entries
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(6, 3, b"a", False, False), Entry(7, 4, b"b")])  # epochs mixed
    assert log.end_offset() == 6


def test_raw_batches_replicate_byte_for_byte(tmp_path: Path) -> None:
    leader = KRaftLog(tmp_path / "leader", lambda: NOW)
    follower = KRaftLog(tmp_path / "follower", lambda: NOW + 5, tail_entries=1)
    try:
        fill(leader, [(1, 2), (1, 1), (3, 5)])
        assert leader.read_bytes(leader.end_offset(), 1000) == b""
        first = leader.read_bytes(0, 1)  # at least one whole batch
        assert [h.base_offset for _p, h in iter_batches(first)] == [0]
        assert follower.append_batches_as_follower(first) == batch(0, 1, 2)
        rest = leader.read_bytes(2, 1 << 20)
        with pytest.raises(ValueError):
            follower.append_batches_as_follower(leader.read_bytes(3, 1 << 20))  # skips offset 2
        corrupt = bytearray(rest)
        corrupt[-1] ^= 1
        with pytest.raises(DecodeError):
            follower.append_batches_as_follower(corrupt)
        assert follower.append_batches_as_follower(rest) == batch(2, 1, 1) + batch(3, 3, 5)
        assert follower.read_bytes(0, 1 << 20) == leader.read_bytes(0, 1 << 20)
        assert follower.end_offset_for_epoch(2) == OffsetAndEpoch(3, 1)
        assert list(follower.read(0, 100)) == list(leader.read(0, 100))
    finally:
        leader.close()
        follower.close()


def test_an_existing_metadata_log_opens_as_epoch_zero_entries(tmp_path: Path) -> None:
    tid = uuid.uuid4()
    records: list[MetadataRecord] = [TopicRecord("a", tid), PartitionRecord(0, tid, (1,), (1,), 1)]
    mlog = MetadataLog(tmp_path, NOW)
    mlog.append(records, NOW)
    mlog.append([TopicRecord("b", uuid.uuid4())], NOW)
    mlog.close()
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        entries = list(log.read(0, 100))
        assert [(e.offset, e.epoch, e.control, e.last_in_batch) for e in entries] == [
            (0, 0, False, False),
            (1, 0, False, True),
            (2, 0, False, True),
        ]
        assert [decode_record(e.payload) for e in entries[:2]] == records
        assert (log.end_offset(), log.flushed_offset(), log.last_fetched_epoch()) == (3, 3, 0)
        assert log.end_offset_for_epoch(0) == OffsetAndEpoch(3, 0)
        assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 0)
        log.append_as_leader(1, [b"lc"], control=True)
        assert log.end_offset_for_epoch(0) == OffsetAndEpoch(3, 0)
    finally:
        log.close()


def test_a_torn_tail_is_recovered_to_the_last_whole_batch(tmp_path: Path) -> None:
    log = KRaftLog(tmp_path, lambda: NOW)
    fill(log, [(1, 2), (2, 3)])
    log.close()
    seg = next((tmp_path / f"{METADATA_TOPIC}-0").glob("*.log"))
    seg.write_bytes(seg.read_bytes()[:-7])
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        assert list(log.read(0, 100)) == batch(0, 1, 2)
        assert (log.end_offset(), log.flushed_offset(), log.last_fetched_epoch()) == (2, 2, 1)
        assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
        log.append_as_leader(2, [b"again"])
        assert log.entry(2) == Entry(2, 2, b"again")
    finally:
        log.close()


def test_a_log_raft_cannot_use_is_refused(tmp_path: Path) -> None:
    log = KRaftLog(tmp_path, lambda: NOW)
    fill(log, [(3, 1)])
    log.close()
    seg = next((tmp_path / f"{METADATA_TOPIC}-0").glob("*.log"))
    with seg.open("ab") as f:  # a valid batch whose epoch goes back
        f.write(encode_entries(batch(1, 2, 1)))
    with pytest.raises(KafkaStorageError, match="epoch"):
        KRaftLog(tmp_path, lambda: NOW)


def test_the_tail_cache_is_trimmed_and_reads_fall_back_to_disk(tmp_path: Path) -> None:
    log = KRaftLog(tmp_path, lambda: NOW, tail_entries=4)
    try:
        expected: list[Entry] = []
        for i in range(20):
            expected += log.append_as_leader(1 + i // 5, [b"x%d" % i, b"y%d" % i])
        assert list(log.read(0, 1000)) == expected
        assert [log.entry(o) for o in range(40)] == expected
        log.truncate_to(3)
        assert list(log.read(0, 100)) == expected[:2] + [Entry(2, 1, b"x1", False, True)]
    finally:
        log.close()


def _key(e: Entry) -> tuple[int, int, bytes, bool]:
    return (e.offset, e.epoch, e.payload, e.control)


@pytest.mark.parametrize("seed", range(5))
def test_random_operations_agree_with_the_in_memory_log(tmp_path: Path, seed: int) -> None:
    """Differential check: the same random appends, truncations, flushes and restarts on both
    logs leave the same entries (batch flags aside), epoch cache and flushed offset."""
    rng = random.Random(seed)
    tail = (1, 3, 4096)[seed % 3]
    disk = KRaftLog(tmp_path, lambda: NOW, tail_entries=tail)
    mem = InMemoryRaftLog()
    try:
        for step in range(120):
            r = rng.random()
            if r < 0.35:
                epoch = mem.last_fetched_epoch() + rng.choice([0, 0, 1, 2])
                payloads = [rng.randbytes(rng.randint(0, 5)) for _ in range(rng.randint(1, 4))]
                control = rng.random() < 0.2
                assert mem.append_as_leader(epoch, payloads, control) == disk.append_as_leader(
                    epoch, payloads, control
                )
            elif r < 0.55:
                entries: list[Entry] = []
                offset, epoch = mem.end_offset(), mem.last_fetched_epoch()
                for _ in range(rng.randint(1, 3)):
                    epoch += rng.choice([0, 1])
                    n = rng.randint(1, 3)
                    entries += batch(offset, epoch, n, control=rng.random() < 0.2)
                    offset += n
                mem.append_as_follower(entries)
                disk.append_as_follower(entries)
            elif r < 0.7:
                offset = rng.randint(0, mem.end_offset() + 1)
                mem.truncate_to(offset)
                disk.truncate_to(offset)
            elif r < 0.8:
                mem.flush()
                disk.flush()
            elif r < 0.85:
                mem.flush()
                mem.crash()
                disk.close()
                disk = KRaftLog(tmp_path, lambda: NOW, tail_entries=tail)
            where = f"seed {seed} step {step}"
            assert (mem.end_offset(), mem.flushed_offset(), mem.last_fetched_epoch()) == (
                disk.end_offset(),
                disk.flushed_offset(),
                disk.last_fetched_epoch(),
            ), where
            expected = [_key(e) for e in mem.entries()]
            assert [_key(e) for e in disk.read(0, 1 << 20)] == expected, where
            assert [_key(disk.entry(o)) for o in range(disk.end_offset())] == expected, where
            for epoch in range(mem.last_fetched_epoch() + 2):
                assert mem.end_offset_for_epoch(epoch) == disk.end_offset_for_epoch(epoch), where
            if disk.end_offset():
                start = rng.randrange(disk.end_offset())
                got = list(disk.read(start, rng.randint(1, 6)))
                assert [e.offset for e in got] == list(range(start, start + len(got))), where
                assert got and got[-1].last_in_batch, f"{where}: a read ends at a batch end"
    finally:
        disk.close()


# ------------------------------------------------------------------ snapshots (KIP-630)

def read_chunks(log: AnyLog, snap: OffsetAndEpoch, chunk: int) -> bytes:
    out = b""
    while True:
        part = log.read_snapshot(snap, len(out), chunk)
        assert len(part) <= chunk
        if not part:
            return out
        out += part


def meta_dir(root: Path) -> Path:
    return root / f"{METADATA_TOPIC}-0"


def snapshot_names(root: Path) -> list[str]:
    return sorted(p.name for p in meta_dir(root).iterdir() if ".checkpoint" in p.name)


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of a few batches each, so that deleting a prefix deletes whole segments."""
    monkeypatch.setattr(kraft_log, "LOG_CONFIG", dataclasses.replace(kraft_log.LOG_CONFIG, segment_bytes=300))


def segment_bases(root: Path) -> list[int]:
    return sorted(int(p.stem) for p in meta_dir(root).glob("*.log"))


def test_snapshots_are_created_listed_and_read_in_chunks(subject: Subject) -> None:
    log: Any = subject.log
    assert log.start_offset() == 0 and log.latest_snapshot() is None
    with pytest.raises(KeyError):
        log.snapshot_size(OffsetAndEpoch(1, 1))
    with pytest.raises(KeyError):
        log.read_snapshot(OffsetAndEpoch(1, 1), 0, 10)
    fill(log, [(1, 3), (2, 2), (2, 3), (4, 2)])
    log.flush()
    first, second = OffsetAndEpoch(3, 1), OffsetAndEpoch(8, 2)
    data = bytes(range(256)) * 5
    log.create_snapshot(first, b"old state")
    log.create_snapshot(second, data)
    assert log.latest_snapshot() == second
    assert log.snapshot_size(second) == len(data) and log.snapshot_size(first) == 9
    assert read_chunks(log, second, 100) == data
    assert log.read_snapshot(second, 1000, 10_000) == data[1000:]
    assert log.read_snapshot(second, len(data), 10) == b""
    assert log.start_offset() == 0, "a snapshot alone does not move the log start"
    assert plain(list(log.read(0, 100))) == plain(batch(0, 1, 3) + batch(3, 2, 2) + batch(5, 2, 3) + batch(8, 4, 2))


@pytest.mark.parametrize(
    ("snap", "why"),
    [
        (OffsetAndEpoch(6, 12), "outside"),  # beyond the log end
        (OffsetAndEpoch(4, 1), "epoch"),  # entry 3 has epoch 12
        (OffsetAndEpoch(3, 12), "epoch"),  # entry 2 has epoch 1
        (OffsetAndEpoch(0, 1), "epoch"),  # nothing below offset 0: epoch 0
    ],
)
def test_create_snapshot_refuses_an_id_that_is_not_the_logs(subject: Subject, snap: OffsetAndEpoch, why: str) -> None:
    log = subject.log
    fill(log, [(1, 3), (12, 2)])
    with pytest.raises(ValueError, match=why):
        log.create_snapshot(snap, b"x")
    assert log.latest_snapshot() is None
    if isinstance(log, KRaftLog):
        assert snapshot_names(subject.path) == []


def test_delete_before_moves_the_log_start(subject: Subject) -> None:
    log: Any = subject.log
    fill(log, [(1, 3), (2, 2), (2, 3), (4, 2)])
    log.flush()
    epochs_before = [log.end_offset_for_epoch(e) for e in range(2, 7)]
    log.create_snapshot(OffsetAndEpoch(5, 2), b"five")
    log.delete_before(5)
    assert log.start_offset() == 5 and log.latest_snapshot() == OffsetAndEpoch(5, 2)
    assert (log.end_offset(), log.last_fetched_epoch()) == (10, 4)
    assert plain(list(log.read(5, 100))) == plain(batch(5, 2, 3) + batch(8, 4, 2))
    assert log.entry(5).offset == 5
    assert [log.end_offset_for_epoch(e) for e in range(2, 7)] == epochs_before
    log.append_as_leader(5, [b"more"])
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(11, 5)


def test_reads_below_the_log_start_raise_value_error(subject: Subject) -> None:
    log = subject.log
    fill(log, [(1, 3), (2, 4)])
    log.create_snapshot(OffsetAndEpoch(5, 2), b"s")
    with pytest.raises(ValueError):
        log.delete_before(6)  # beyond the latest snapshot
    log.delete_before(5)
    bad_calls: list[Callable[[], object]] = [
        lambda: log.read(4, 10),
        lambda: log.entry(0),
        lambda: log.entry(-1),
        lambda: log.truncate_to(3),
    ]
    if isinstance(log, KRaftLog):
        bad_calls.append(lambda: log.read_bytes(2, 1000))
    for bad in bad_calls:
        with pytest.raises(ValueError, match="below the log start"):
            bad()
    with pytest.raises(IndexError):
        log.entry(7)
    # the batch holding offsets 3..6 straddles the start: reads from the start begin inside it
    assert plain(list(log.read(5, 10))) == plain(batch(3, 2, 4)[2:])
    if isinstance(log, KRaftLog):
        assert [h.base_offset for _p, h in iter_batches(log.read_bytes(5, 1 << 20))] == [3]
    log.truncate_to(5)
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (5, 5, 2)
    log.append_as_leader(3, [b"new"])
    log.flush()
    subject.reopen()
    log = subject.log
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (5, 6, 3)
    assert plain(list(log.read(5, 10))) == [(5, 3, b"new")]
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(5, 2)


def test_delete_before_deletes_the_snapshots_below_the_new_start(subject: Subject) -> None:
    log = subject.log
    fill(log, [(1, 3), (2, 2), (2, 3), (4, 2)])
    for snap in (OffsetAndEpoch(3, 1), OffsetAndEpoch(5, 2), OffsetAndEpoch(8, 2)):
        log.create_snapshot(snap, b"s%d" % snap.offset)
    log.delete_before(5)
    assert log.snapshots() == [OffsetAndEpoch(5, 2), OffsetAndEpoch(8, 2)]
    log.delete_before(8)
    assert log.snapshots() == [OffsetAndEpoch(8, 2)]
    if isinstance(log, KRaftLog):
        assert snapshot_names(subject.path) == ["00000000000000000008-0000000002.checkpoint"]
    log.delete_before(4)  # below the start: nothing moves
    assert log.start_offset() == 8
    with pytest.raises(ValueError):
        log.delete_before(9)
    log.create_snapshot(OffsetAndEpoch(10, 4), b"end")
    log.delete_before(10)  # everything: the log is empty at its end
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (10, 10, 4)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(10, 4)
    subject.reopen()
    log = subject.log
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (10, 10, 4)
    assert log.snapshots() == [OffsetAndEpoch(10, 4)]


def test_install_snapshot_restarts_the_log_empty_at_its_offset(subject: Subject) -> None:
    log: Any = subject.log
    fill(log, [(1, 3), (2, 2)])
    log.flush()
    snap = OffsetAndEpoch(20, 7)
    log.install_snapshot(snap, b"leader state")
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (20, 20, 7)
    assert log.latest_snapshot() == snap and read_chunks(log, snap, 5) == b"leader state"
    assert list(log.read(20, 10)) == []
    for epoch in (7, 8, 100):
        assert log.end_offset_for_epoch(epoch) == snap
    with pytest.raises(ValueError):
        log.append_as_follower(batch(20, 6, 1))  # an epoch below the snapshot's
    log.append_as_follower(batch(20, 8, 2))
    log.append_as_leader(9, [b"x"])
    assert plain(list(log.read(20, 10))) == plain(batch(20, 8, 2)) + [(22, 9, b"x")]
    assert log.end_offset_for_epoch(7) == snap
    assert log.end_offset_for_epoch(8) == OffsetAndEpoch(22, 8)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(23, 9)


def test_install_snapshot_survives_reopen_and_drops_older_snapshots(subject: Subject) -> None:
    log = subject.log
    fill(log, [(1, 3), (2, 2)])
    log.create_snapshot(OffsetAndEpoch(3, 1), b"mine")
    snap = OffsetAndEpoch(40, 6)
    log.install_snapshot(snap, b"theirs")
    assert log.snapshots() == [snap]
    if isinstance(log, KRaftLog):
        assert snapshot_names(subject.path) == ["00000000000000000040-0000000006.checkpoint"]
        assert segment_bases(subject.path) == [40]
    with pytest.raises(ValueError):
        log.install_snapshot(OffsetAndEpoch(30, 6), b"older than the latest")
    subject.reopen()
    log = subject.log
    assert (log.start_offset(), log.end_offset(), log.flushed_offset(), log.last_fetched_epoch()) == (40, 40, 40, 6)
    assert log.latest_snapshot() == snap and log.read_snapshot(snap, 0, 100) == b"theirs"
    log.append_as_follower(batch(40, 7, 3))
    log.flush()
    subject.reopen()
    log = subject.log
    assert plain(list(log.read(40, 10))) == plain(batch(40, 7, 3))
    assert log.end_offset_for_epoch(6) == snap and log.end_offset_for_epoch(7) == OffsetAndEpoch(43, 7)
    log.install_snapshot(OffsetAndEpoch(43, 7), b"again")  # a newer one on top
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (43, 43, 7)
    assert log.snapshots() == [OffsetAndEpoch(43, 7)]


# ------------------------------------------------------------------ snapshots: what only the disk log does


def test_snapshot_files_are_named_and_written_as_kafka_does(disk: Subject) -> None:
    log = disk.log
    assert isinstance(log, KRaftLog)
    fill(log, [(1, 3), (12, 2)])
    log.create_snapshot(OffsetAndEpoch(5, 12), b"payload")
    assert snapshot_names(disk.path) == ["00000000000000000005-0000000012.checkpoint"]
    assert (meta_dir(disk.path) / snapshot_file_name(OffsetAndEpoch(5, 12))).read_bytes() == b"payload"
    assert log.snapshot_path(OffsetAndEpoch(5, 12)).name == "00000000000000000005-0000000012.checkpoint"
    log.create_snapshot(OffsetAndEpoch(5, 12), b"ignored: the same id is already stored")
    assert log.read_snapshot(OffsetAndEpoch(5, 12), 0, 100) == b"payload"
    log.create_snapshot(OffsetAndEpoch(3, 1), b"older")
    assert log.snapshots() == [OffsetAndEpoch(3, 1), OffsetAndEpoch(5, 12)]
    assert log.latest_snapshot() == OffsetAndEpoch(5, 12)
    with pytest.raises(ValueError):
        log.read_snapshot(OffsetAndEpoch(3, 1), -1, 10)


def test_truncation_below_the_latest_snapshot_is_refused(disk: Subject) -> None:
    log = disk.log
    assert isinstance(log, KRaftLog)
    fill(log, [(1, 3), (2, 4)])
    log.create_snapshot(OffsetAndEpoch(6, 2), b"committed up to 6")
    with pytest.raises(ValueError, match="latest snapshot"):
        log.truncate_to(5)
    log.truncate_to(6)
    assert log.end_offset() == 6 and log.latest_snapshot() == OffsetAndEpoch(6, 2)


def test_delete_before_drops_whole_segments_and_the_start_survives_reopen(
    small_segments: None, tmp_path: Path
) -> None:
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        for i in range(30):
            log.append_as_leader(1 + i // 10, [b"entry-%02d" % i])
        log.flush()
        bases = segment_bases(tmp_path)
        assert len(bases) > 3
        cut = bases[2] + 1  # inside the third segment
        snap = OffsetAndEpoch(cut, log.entry(cut - 1).epoch)
        log.create_snapshot(snap, b"state")
        before = [log.end_offset_for_epoch(e) for e in range(6)]
        log.delete_before(cut)
        epochs = [log.end_offset_for_epoch(e) for e in range(6)]
        # an epoch below the first one left ends at the start, as the snapshot's epoch
        assert epochs == [snap if e < snap.epoch else before[e] for e in range(6)]
        assert segment_bases(tmp_path) == bases[2:], "segments wholly below the start are deleted"
        assert read_offsets_checkpoint(meta_dir(tmp_path) / LOG_START_CHECKPOINT) == {(METADATA_TOPIC, 0): cut}
        expected = list(log.read(cut, 100))
        assert [e.offset for e in expected] == list(range(cut, 30))
    finally:
        log.close()
    log = KRaftLog(tmp_path, lambda: NOW, tail_entries=1)
    try:
        assert (log.start_offset(), log.end_offset(), log.flushed_offset()) == (cut, 30, 30)
        assert list(log.read(cut, 100)) == expected
        assert [log.end_offset_for_epoch(e) for e in range(6)] == epochs
        assert log.latest_snapshot() == snap and log.read_snapshot(snap, 0, 10) == b"state"
        with pytest.raises(ValueError):
            log.read(cut - 1, 1)
    finally:
        log.close()


def test_the_entry_below_the_start_is_kept_to_tell_its_epoch(small_segments: None, tmp_path: Path) -> None:
    """A start on a segment boundary where a new epoch begins, with no snapshot at it: the
    segment before it stays, so that after a restart its last entry still tells the base epoch."""
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        for i in range(24):
            log.append_as_leader(1 + i // 4, [b"entry-%02d" % i])
        bases = segment_bases(tmp_path)
        cut = next(b for b in bases if b % 4 == 0 and b > 0)  # an epoch starts at a segment base
        base_epoch = log.entry(cut - 1).epoch
        log.create_snapshot(OffsetAndEpoch(cut + 2, base_epoch + 1), b"state")
        log.delete_before(cut)
        kept = segment_bases(tmp_path)
        assert kept[0] < cut <= kept[1], "the segment holding the entry below the start stays"
        answers = [log.end_offset_for_epoch(e) for e in range(9)]
        assert answers[: base_epoch + 1] == [OffsetAndEpoch(cut, base_epoch)] * (base_epoch + 1)
    finally:
        log.close()
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        assert log.start_offset() == cut and log.snapshots() == [OffsetAndEpoch(cut + 2, base_epoch + 1)]
        assert [log.end_offset_for_epoch(e) for e in range(9)] == answers
        with pytest.raises(ValueError):
            log.entry(cut - 1)
    finally:
        log.close()


def test_a_partial_snapshot_is_deleted_at_open(tmp_path: Path) -> None:
    log = KRaftLog(tmp_path, lambda: NOW)
    fill(log, [(1, 4)])
    log.create_snapshot(OffsetAndEpoch(2, 1), b"complete")
    log.close()
    part = meta_dir(tmp_path) / (snapshot_file_name(OffsetAndEpoch(4, 1)) + PARTIAL_SUFFIX)
    part.write_bytes(b"torn")  # a crash while writing the next snapshot
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        assert not part.exists()
        assert log.latest_snapshot() == OffsetAndEpoch(2, 1)
        assert log.end_offset() == 4, "the log is untouched"
    finally:
        log.close()


@pytest.mark.parametrize(
    "snap",
    [OffsetAndEpoch(50, 3), OffsetAndEpoch(2, 9)],
    ids=["beyond-the-log-end", "newer-epoch"],
)
def test_a_crash_while_installing_a_snapshot_restarts_the_log_at_it(tmp_path: Path, snap: OffsetAndEpoch) -> None:
    """The snapshot file was renamed into place but the log was not reset yet."""
    log = KRaftLog(tmp_path, lambda: NOW)
    fill(log, [(1, 2), (3, 2)])
    log.close()
    (meta_dir(tmp_path) / snapshot_file_name(snap)).write_bytes(b"installed")
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (snap.offset, snap.offset, snap.epoch)
        assert log.latest_snapshot() == snap
        assert read_offsets_checkpoint(meta_dir(tmp_path) / LOG_START_CHECKPOINT) == {(METADATA_TOPIC, 0): snap.offset}
    finally:
        log.close()


def test_a_crash_before_the_log_start_is_recorded(tmp_path: Path) -> None:
    """install_snapshot replaced the segments but the start record is the old one: the segments
    tell the start. delete_before recorded the start but kept its segments: the record tells it."""
    log = KRaftLog(tmp_path, lambda: NOW)
    fill(log, [(1, 2), (3, 2)])
    log.install_snapshot(OffsetAndEpoch(9, 4), b"s")
    log.close()
    write_offsets_checkpoint(meta_dir(tmp_path) / LOG_START_CHECKPOINT, {(METADATA_TOPIC, 0): 0})
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (9, 9, 4)
        assert read_offsets_checkpoint(meta_dir(tmp_path) / LOG_START_CHECKPOINT) == {(METADATA_TOPIC, 0): 9}
        log.append_as_follower(batch(9, 4, 3))
        log.create_snapshot(OffsetAndEpoch(11, 4), b"t")
    finally:
        log.close()
    write_offsets_checkpoint(meta_dir(tmp_path) / LOG_START_CHECKPOINT, {(METADATA_TOPIC, 0): 11})
    (meta_dir(tmp_path) / snapshot_file_name(OffsetAndEpoch(9, 4))).write_bytes(b"s")  # not deleted yet
    log = KRaftLog(tmp_path, lambda: NOW)
    try:
        assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (11, 12, 4)
        assert log.snapshots() == [OffsetAndEpoch(11, 4)], "a snapshot below the start is deleted"
        assert plain(list(log.read(11, 10))) == [(11, 4, b"p11")]
        assert log.end_offset_for_epoch(3) == OffsetAndEpoch(11, 4)
    finally:
        log.close()


def test_a_log_start_without_a_snapshot_is_refused(tmp_path: Path) -> None:
    log = KRaftLog(tmp_path, lambda: NOW)
    fill(log, [(1, 4)])
    log.create_snapshot(OffsetAndEpoch(2, 1), b"s")
    log.delete_before(2)
    log.close()
    (meta_dir(tmp_path) / snapshot_file_name(OffsetAndEpoch(2, 1))).unlink()
    with pytest.raises(KafkaStorageError, match="no snapshot"):
        KRaftLog(tmp_path, lambda: NOW)


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_with_snapshots_agree_with_a_model_and_the_in_memory_log(
    small_segments: None, tmp_path: Path, seed: int
) -> None:
    """Appends (as leader and follower), truncations, snapshots, prefix deletions, installs, flushes
    and restarts on the disk log (small segments, so prefix deletions delete files) and on the
    in-memory log, both checked against a plain model: the entries from the start, the start,
    the base epoch; and the two logs against each other (flushed offset, snapshots, contents)."""
    rng = random.Random(seed)
    tail = (1, 4096)[seed % 2]
    disk = KRaftLog(tmp_path, lambda: NOW, tail_entries=tail)
    mem = InMemoryRaftLog()
    logs: tuple[Any, Any] = (disk, mem)
    entries: list[Entry] = []  # the model: entries from `start`
    start, base_epoch = 0, 0

    def last_epoch() -> int:
        return entries[-1].epoch if entries else base_epoch

    def model_end_for(epoch: int) -> OffsetAndEpoch:
        found = [e for e in entries if e.epoch <= epoch]
        if not found:
            return OffsetAndEpoch(start, base_epoch)
        e = found[-1].epoch
        later = [x.offset for x in entries if x.epoch > e]
        return OffsetAndEpoch(later[0] if later else start + len(entries), e)

    try:
        for step in range(150):
            end = start + len(entries)
            latest = mem.latest_snapshot()
            r = rng.random()
            if r < 0.3:
                epoch = last_epoch() + rng.choice([0, 0, 1])
                payloads = [rng.randbytes(rng.randint(1, 30)) for _ in range(rng.randint(1, 4))]
                appended = [log.append_as_leader(epoch, payloads) for log in logs]
                assert appended[0] == appended[1]
                entries += appended[0]
            elif r < 0.4:
                new = batch(end, last_epoch() + rng.choice([0, 1]), rng.randint(1, 3))
                for log in logs:
                    log.append_as_follower(new)
                entries += new
            elif r < 0.5 and entries:
                offset = rng.randint(max(start, latest.offset if latest else 0), end)
                for log in logs:
                    log.truncate_to(offset)
                del entries[offset - start :]
            elif r < 0.62:
                offset = rng.randint(start, end)
                epoch = entries[offset - start - 1].epoch if offset > start else base_epoch
                for log in logs:
                    log.create_snapshot(OffsetAndEpoch(offset, epoch), b"state at %d" % offset)
            elif r < 0.72 and latest is not None and start <= latest.offset <= end:
                offset = rng.randint(start, latest.offset)
                for log in logs:
                    log.delete_before(offset)
                if offset > start:
                    base_epoch = entries[offset - start - 1].epoch
                    del entries[: offset - start]
                    start = offset
            elif r < 0.77:
                lowest = latest.offset if latest is not None else 0
                snap = OffsetAndEpoch(max(end, lowest) + rng.randint(0, 5), last_epoch() + rng.randint(0, 2))
                for log in logs:
                    log.install_snapshot(snap, b"installed at %d" % snap.offset)
                entries, start, base_epoch = [], snap.offset, snap.epoch
            elif r < 0.85:
                for log in logs:
                    log.flush()
            elif r < 0.92:
                for log in logs:
                    log.flush()
                mem.crash()
                disk.close()
                disk = KRaftLog(tmp_path, lambda: NOW, tail_entries=tail)
                logs = (disk, mem)
            where = f"seed {seed} step {step}"
            model = (start, start + len(entries), last_epoch())
            for log in logs:
                assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == model, where
                assert [_key(e) for e in log.read(start, 1 << 20)] == [_key(e) for e in entries], where
                for epoch in range(last_epoch() + 2):
                    assert log.end_offset_for_epoch(epoch) == model_end_for(epoch), f"{where} epoch {epoch}"
            assert disk.flushed_offset() == mem.flushed_offset(), where
            assert disk.snapshots() == mem.snapshots(), where
            for snap in mem.snapshots():
                assert snap.offset >= start, where
                assert disk.read_snapshot(snap, 0, 1 << 20) == mem.read_snapshot(snap, 0, 1 << 20), where
    finally:
        disk.close()


# ------------------------------------------------------------------ quorum-state


@pytest.fixture(params=["memory", "file"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], QuorumStateStore]:
    if request.param == "memory":
        shared = InMemoryQuorumStateStore()
        return lambda: shared
    return lambda: FileQuorumStateStore(quorum_state_path(tmp_path))


def test_quorum_state_write_then_read(store_factory: Callable[[], QuorumStateStore]) -> None:
    assert store_factory().read() is None
    a = ElectionState(3, 2, None, frozenset({1, 2, 3}))
    b = ElectionState(4, None, 1, frozenset({1, 2, 3}))
    store_factory().write(a)
    assert store_factory().read() == a
    store = store_factory()
    store.write(b)
    assert store.read() == b and store_factory().read() == b


def test_quorum_state_file_is_kafkas_format(tmp_path: Path) -> None:
    path = quorum_state_path(tmp_path)
    assert path == tmp_path / "__cluster_metadata-0" / QUORUM_STATE_FILE
    FileQuorumStateStore(path).write(ElectionState(7, None, 2, frozenset({3, 1, 2})))
    assert path.read_text() == (
        '{"clusterId":"","leaderId":2,"leaderEpoch":7,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
    )
    path.write_text(
        json.dumps(
            {
                "clusterId": "x",
                "leaderId": -1,
                "leaderEpoch": 2,
                "votedId": 3,
                "appliedOffset": 9,
                "currentVoters": [{"voterId": 3}],
                "data_version": 0,
            }
        )
    )
    assert FileQuorumStateStore(path).read() == ElectionState(2, 3, None, frozenset({3}))


def test_a_torn_write_leaves_the_old_quorum_state(tmp_path: Path) -> None:
    path = quorum_state_path(tmp_path)
    state = ElectionState(1, 1, None, frozenset({1}))
    FileQuorumStateStore(path).write(state)
    path.with_name(path.name + ".tmp").write_bytes(b'{"clusterId":"","lea')  # crashed mid-write
    assert FileQuorumStateStore(path).read() == state


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"currentVoters":[],"data_version":0}'.replace(
            b'"leaderId":1,', b""
        ),
        b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"currentVoters":[],"data_version":5}',
        b'{"leaderId":"1","leaderEpoch":2,"votedId":-1,"currentVoters":[],"data_version":0}',
        b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"currentVoters":[{"id":1}],"data_version":0}',
        b'{"leaderId":1,"leaderEpoch":-2,"votedId":-1,"currentVoters":[],"data_version":0}',
    ],
    ids=["empty", "garbage", "not-utf8", "not-object", "missing-key", "version", "type", "voter", "epoch"],
)
def test_a_corrupt_quorum_state_file_is_a_storage_error(tmp_path: Path, content: bytes) -> None:
    path = quorum_state_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(KafkaStorageError, match=str(path)):
        FileQuorumStateStore(path).read()


# ------------------------------------------------------------------ three nodes on disk

TIGHT = RaftConfig(
    election_timeout_ms=60,
    fetch_timeout_ms=120,
    append_linger_ms=5,
    request_timeout_ms=40,
    fetch_idle_backoff_ms=15,
    retry_backoff_ms=20,
    election_backoff_max_ms=60,
)


class Cluster:
    """Three RaftNodes on KRaftLogs and quorum-state files, messages delivered in order after 1 ms."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.now = 0
        self.voters = [1, 2, 3]
        self.queue: deque[tuple[int, int, RaftMessage]] = deque()
        self.committed: dict[int, list[Entry]] = {}
        self.leaders: dict[int, int] = {}  # epoch -> leader
        self.steps = 0
        self.start()

    def start(self) -> None:
        self.logs = {i: KRaftLog(self.root / f"node{i}", lambda: NOW + self.now) for i in self.voters}
        self.stores = {
            i: FileQuorumStateStore(quorum_state_path(self.root / f"node{i}")) for i in self.voters
        }
        self.nodes = {
            i: RaftNode(
                i,
                self.voters,
                self.logs[i],
                self.stores[i],
                random.Random(self.rng.random()),
                self.now,
                TIGHT,
            )
            for i in self.voters
        }
        self.committed = {i: [] for i in self.voters}
        self.queue.clear()

    def stop(self) -> None:
        for log in self.logs.values():
            log.close()

    def handle(self, node_id: int, out: Output) -> None:
        self.steps += 1
        self.committed[node_id].extend(out.committed)
        for change in out.role_changes:
            if change.role is Role.LEADER:
                assert self.leaders.setdefault(change.epoch, node_id) == node_id, "two leaders in one epoch"
        for ob in out.sends:
            self.queue.append((node_id, ob.destination, ob.message))

    def leader(self) -> RaftNode | None:
        found = [n for n in self.nodes.values() if n.role is Role.LEADER]
        return found[0] if found else None

    def tick(self) -> None:
        self.now += 1
        for _ in range(len(self.queue)):
            src, dst, msg = self.queue.popleft()
            self.handle(dst, self.nodes[dst].step(self.now, Received(src, msg)))
        for i, node in self.nodes.items():
            deadline = node.next_deadline_ms()
            if deadline is not None and deadline <= self.now:
                self.handle(i, node.step(self.now, Tick()))

    def payloads(self, node_id: int) -> list[bytes]:
        return [e.payload for e in self.committed[node_id] if not e.control]

    def run_until_committed(self, payloads: list[bytes], limit_ms: int = 3000) -> None:
        todo = list(payloads)
        end = self.now + limit_ms
        while self.now < end:
            self.tick()
            leader = self.leader()
            if todo and leader is not None and self.now % 10 == 0:
                self.handle(leader.node_id, leader.step(self.now, Propose((todo.pop(0),))))
            if not todo and all(p in self.payloads(i) for i in self.voters for p in payloads):
                return
        raise AssertionError(
            f"not committed on every node by {self.now} ms: {[self.payloads(i) for i in self.voters]}"
        )


def test_three_nodes_on_kraft_logs_elect_a_leader_and_commit(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, seed=42)
    try:
        first = [b"one", b"two", b"three", b"four"]
        cluster.run_until_committed(first)
        assert cluster.steps < 2000
        for i in cluster.voters:
            assert cluster.payloads(i) == first
            log = cluster.logs[i]
            assert list(log.read(0, 1000)) == list(cluster.logs[1].read(0, 1000))[: log.end_offset()]
        leader = cluster.leader()
        assert leader is not None
        (change,) = [e for e in cluster.committed[leader.node_id] if e.control]
        assert decode_leader_change(change.payload)[0] == leader.node_id
        stored = FileQuorumStateStore(quorum_state_path(tmp_path / f"node{leader.node_id}")).read()
        assert stored is not None and stored.leader_id == leader.node_id and stored.epoch == leader.epoch
    finally:
        cluster.stop()

    # A full restart: every node reads its log and quorum state back; the committed entries are
    # committed again (in order) and the quorum makes progress in a later epoch.
    old_epoch = max(cluster.leaders)
    cluster.start()
    try:
        cluster.run_until_committed([b"five"])
        assert max(cluster.leaders) > old_epoch
        for i in cluster.voters:
            assert cluster.payloads(i) == [*first, b"five"]
    finally:
        cluster.stop()
