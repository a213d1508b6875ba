"""The on-disk Raft log (KRaftLog) and quorum-state file, checked against the in-memory ones.

The behavioural checks run on ``InMemoryRaftLog`` and on ``KRaftLog`` (also with a one-entry tail
cache, so that reads come from the segments); what only the disk log promises -- whole-batch
reads, raw batch bytes, reopening existing or torn directories -- is tested on it alone. The last
test runs three RaftNodes on KRaftLogs and quorum-state files.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from zurau.metadata.kraft_log import KRaftLog
from zurau.metadata.metadata_log import METADATA_TOPIC, MetadataLog
from zurau.metadata.quorum_state_file import (
    QUORUM_STATE_FILE,
    FileQuorumStateStore,
    quorum_state_path,
)
from zurau.metadata.records import MetadataRecord, PartitionRecord, TopicRecord, decode_record
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
