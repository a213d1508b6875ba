"""Snapshots in the Raft core (KIP-630), driven by hand.

A small quorum whose every message crosses Kafka's wire (``zurau.raft.wire`` and the codec's bytes,
as in ``test_raft_wire``): a follower far behind the leader's log start fetches the leader's
snapshot in several chunks and installs it; a node restarts on top of an installed snapshot; the
leader changes in the middle of a snapshot fetch. Then the leader's and the follower's rules one
message at a time, and the FetchSnapshot wire format at every version.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

from zurau.protocol import codec, errors
from zurau.protocol.api_keys import ApiKey
from zurau.raft import (
    ElectionState,
    Entry,
    InMemoryQuorumStateStore,
    InMemoryRaftLog,
    OffsetAndEpoch,
    Output,
    Propose,
    RaftConfig,
    RaftNode,
    Received,
    Resign,
    Role,
    Tick,
)
from zurau.raft.messages import (
    FENCED_LEADER_EPOCH,
    NO_LEADER,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    POSITION_OUT_OF_RANGE,
    SNAPSHOT_NOT_FOUND,
    UNKNOWN_LEADER_EPOCH,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftMessage,
    RaftResponse,
)
from zurau.raft.node import Outbound
from zurau.raft.wire import (
    FETCH_SNAPSHOT_VERSION,
    FETCH_VERSION,
    INCONSISTENT_CLUSTER_ID,
    METADATA_TOPIC,
    RAFT_API_KEYS,
    error_response,
    request_from_wire,
    request_to_wire,
    response_from_wire,
    response_to_wire,
)

CLUSTER = "zurau-snapshot-cluster"
VOTERS = (1, 2, 3)
CHUNK = 100
CONFIG = RaftConfig(snapshot_chunk_bytes=CHUNK)
STATE = bytes(range(256)) + b"the controller's state" * 20  # 696 bytes: 7 chunks of 100


def wire_body(key: int, version: int, kind: Any, body: dict[str, Any]) -> dict[str, Any]:
    return codec.decode(key, version, kind, codec.encode(key, version, kind, body))


class Cluster:
    """Raft nodes over the wire, with crashes: ``pump`` delivers queued requests, each paired with
    its answer as on a connection; messages to or from a stopped node are lost. Outputs are kept
    per node. ``hold`` (a predicate on (source, destination, message)) keeps matching requests
    back in ``held`` instead of delivering them."""

    def __init__(self) -> None:
        self.logs = {v: InMemoryRaftLog() for v in VOTERS}
        self.stores = {v: InMemoryQuorumStateStore() for v in VOTERS}
        self.nodes: dict[int, RaftNode | None] = {}
        self.outputs: dict[int, list[Output]] = {v: [] for v in VOTERS}
        self.queue: deque[tuple[int, Outbound]] = deque()
        self.held: list[tuple[int, Outbound]] = []
        self.delivered: list[tuple[int, int, RaftMessage]] = []

    def start(self, node_id: int, now: int) -> RaftNode:
        node = RaftNode(
            node_id, VOTERS, self.logs[node_id], self.stores[node_id], random.Random(node_id), now, CONFIG
        )
        self.nodes[node_id] = node
        return node

    def stop(self, node_id: int) -> None:
        self.nodes[node_id] = None

    def node(self, node_id: int) -> RaftNode:
        node = self.nodes[node_id]
        assert node is not None
        return node

    def _record(self, node_id: int, out: Output) -> Output:
        self.outputs[node_id].append(out)
        return out

    def step(self, node_id: int, now: int, event: Any) -> Output:
        out = self._record(node_id, self.node(node_id).step(now, event))
        self.queue.extend((node_id, o) for o in out.sends)
        return out

    def pump(
        self, now: int, *, hold: Callable[[int, int, RaftMessage], bool] | None = None, limit: int = 10_000
    ) -> None:
        while self.queue and limit > 0:
            source, outbound = self.queue.popleft()
            request = outbound.message
            assert not isinstance(request, RaftResponse), "every response is paired with its request"
            if hold is not None and hold(source, outbound.destination, request):
                self.held.append((source, outbound))
                continue
            limit -= 1
            target = self.nodes.get(outbound.destination)
            if target is None or self.nodes.get(source) is None:
                continue
            key, version, body = request_to_wire(request, CLUSTER, destination=outbound.destination)
            decoded = request_from_wire(key, version, wire_body(key, version, "request", body))
            self.delivered.append((source, outbound.destination, decoded.message))
            out = self._record(outbound.destination, target.step(now, Received(source, decoded.message)))
            answers = [o for o in out.sends if isinstance(o.message, RaftResponse)]
            assert len(answers) == 1 and answers[0].destination == source
            answer = answers[0].message
            assert isinstance(answer, RaftResponse)
            wire = wire_body(key, version, "response", response_to_wire(key, version, answer))
            back = response_from_wire(key, version, wire, decoded.message)
            assert back == answer
            self.queue.extend((outbound.destination, o) for o in out.sends if o is not answers[0])
            if self.nodes.get(source) is not None:
                self.step(source, now, Received(outbound.destination, back))

    def snapshots_loaded(self, node_id: int) -> list[tuple[OffsetAndEpoch, bytes]]:
        return [o.snapshot_loaded for o in self.outputs[node_id] if o.snapshot_loaded is not None]

    def committed(self, node_id: int) -> list[Entry]:
        return [e for o in self.outputs[node_id] for e in o.committed]


def elected_cluster() -> Cluster:
    """Node 1 leads epoch 1 (elected at t=5000), followed by 2 and 3."""
    c = Cluster()
    for v in VOTERS:
        c.start(v, 0)
    c.step(1, 5000, Tick())
    c.pump(5000)
    assert c.node(1).role is Role.LEADER and c.node(1).epoch == 1
    assert all(c.node(v).role is Role.FOLLOWER for v in (2, 3))
    return c


def commit(c: Cluster, now: int, payloads: list[bytes], fetchers: tuple[int, ...] = (3,)) -> None:
    """Propose ``payloads`` on leader 1 and have ``fetchers`` fetch them (twice: entries, then the
    high watermark)."""
    c.step(1, now, Propose(tuple(payloads)))
    c.step(1, now + CONFIG.append_linger_ms, Tick())  # flush
    for t in (now + 30, now + 200):
        for f in fetchers:
            c.step(f, t, Tick())
        c.pump(t)


def snapshot_and_truncate(log: InMemoryRaftLog, offset: int, data: bytes = STATE) -> OffsetAndEpoch:
    """What the shell does: snapshot the state machine at ``offset``, delete the log below it."""
    epoch = log.entry(offset - 1).epoch if offset > log.start_offset() else log.end_offset_for_epoch(-1).epoch
    snapshot = OffsetAndEpoch(offset, epoch)
    log.create_snapshot(snapshot, data)
    log.delete_before(offset)
    return snapshot


@pytest.fixture
def behind() -> tuple[Cluster, OffsetAndEpoch]:
    """Node 2 crashes after the election; the leader commits 20 entries with node 3, snapshots at
    its high watermark (21) and deletes its log below it; node 2 restarts at t=6000."""
    c = elected_cluster()
    c.stop(2)
    commit(c, 5100, [b"e%d" % i for i in range(20)])
    leader = c.node(1)
    assert leader.high_watermark == 21
    snapshot = snapshot_and_truncate(c.logs[1], 21)
    assert c.logs[1].start_offset() == 21
    c.start(2, 6000)
    assert c.node(2).role is Role.FOLLOWER and c.node(2).leader_id == 1
    return c, snapshot


# ------------------------------------------------------------------ scenarios


def test_a_follower_far_behind_gets_the_snapshot_in_chunks(behind: tuple[Cluster, OffsetAndEpoch]) -> None:
    c, snapshot = behind
    seen = len(c.delivered)
    c.outputs[2].clear()
    c.step(2, 6000, Tick())
    c.pump(6000)
    follower = c.node(2)
    # Fetch (1, epoch 1) is below the leader's start: answered with the snapshot id, no entries.
    fetches = [(s, m) for s, d, m in c.delivered[seen:] if s == 2 and isinstance(m, FetchRequest)]
    assert (fetches[0][1].fetch_offset, fetches[0][1].last_fetched_epoch) == (1, 1)
    chunks = [m for s, d, m in c.delivered if isinstance(m, FetchSnapshotRequest)]
    assert [m.position for m in chunks] == [0, 100, 200, 300, 400, 500, 600]
    assert all(m.snapshot_id == snapshot and m.max_bytes == CHUNK for m in chunks)
    assert c.snapshots_loaded(2) == [(snapshot, STATE)]
    assert c.logs[2].latest_snapshot() == snapshot and c.logs[2].start_offset() == 21
    assert follower.high_watermark >= 21 and follower._committed_upto == 21
    # Then it fetched on from the snapshot's end: nothing new yet.
    assert fetches[-1][1].fetch_offset == 21 and fetches[-1][1].last_fetched_epoch == 1
    assert c.committed(2) == []  # entries below the snapshot are in it, not emitted one by one
    # New entries reach it as usual and are committed from the snapshot on.
    commit(c, 6500, [b"after"], fetchers=(2, 3))
    assert [e.payload for e in c.committed(2) if e.offset >= 21] == [b"after"]
    assert c.logs[2].entries() == c.logs[1].entries()


def test_the_leader_counts_snapshot_fetches_for_check_quorum(behind: tuple[Cluster, OffsetAndEpoch]) -> None:
    c, _ = behind
    c.stop(3)  # only node 2 is left to keep the leader's majority
    leader = c.node(1)
    deadline = leader._check_quorum_deadline
    assert deadline is not None
    c.step(2, 6000, Tick())
    c.pump(6000, limit=3)  # the Fetch answered with the snapshot id, and two chunks
    assert leader._check_quorum_deadline is not None and leader._check_quorum_deadline > deadline


def test_restart_after_installing_a_snapshot(behind: tuple[Cluster, OffsetAndEpoch]) -> None:
    c, snapshot = behind
    c.step(2, 6000, Tick())
    c.pump(6000)
    assert c.snapshots_loaded(2) == [(snapshot, STATE)]
    commit(c, 6500, [b"x1", b"x2"], fetchers=(2, 3))
    c.stop(2)
    # The shell restores the state machine from the latest snapshot; the node counts everything
    # below it committed and emits entries from there on.
    restarted = c.start(2, 7000)
    c.outputs[2].clear()
    assert restarted._committed_upto == 21 and restarted.high_watermark == 21
    assert (c.logs[2].start_offset(), c.logs[2].end_offset()) == (21, 23)
    c.step(2, 7000, Tick())
    c.pump(7000)
    assert [e.payload for e in c.committed(2)] == [b"x1", b"x2"]
    assert c.snapshots_loaded(2) == []  # its log continues the leader's: no new snapshot needed
    assert restarted.high_watermark == 23


def test_a_node_starts_at_its_log_start_without_a_snapshot_and_refuses_a_log_behind_its_snapshot() -> None:
    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a", b"b", b"c"])
    log.flush()
    node = RaftNode(1, VOTERS, log, InMemoryQuorumStateStore(), random.Random(0), 0, CONFIG)
    assert node._committed_upto == 0 and node.high_watermark == 0
    log.create_snapshot(OffsetAndEpoch(2, 1), b"s")
    node = RaftNode(1, VOTERS, log, InMemoryQuorumStateStore(), random.Random(0), 0, CONFIG)
    assert node._committed_upto == 2 and node.high_watermark == 2

    class Broken(InMemoryRaftLog):
        def latest_snapshot(self) -> OffsetAndEpoch | None:
            return OffsetAndEpoch(9, 1)

    with pytest.raises(ValueError, match="below its latest snapshot"):
        RaftNode(1, VOTERS, Broken(), InMemoryQuorumStateStore(), random.Random(0), 0, CONFIG)


def test_leader_change_during_a_snapshot_fetch(behind: tuple[Cluster, OffsetAndEpoch]) -> None:
    c, old_snapshot = behind
    # Node 3 (fully caught up) has its own snapshot at 15 and deleted its log below it.
    new_snapshot = snapshot_and_truncate(c.logs[3], 15, b"node 3's state at 15" * 10)
    c.step(2, 6000, Tick())
    c.pump(6000, limit=3)  # Fetch -> snapshot id; chunks at 0 and 100
    follower = c.node(2)
    assert follower._snapshot_fetch is not None and len(follower._snapshot_fetch.data) == 200
    # Keep the next chunk request back: its answer will come from the old leader, late.
    c.pump(6000, hold=lambda s, d, m: isinstance(m, FetchSnapshotRequest))
    ((_, held),) = c.held
    assert isinstance(held.message, FetchSnapshotRequest) and held.message.position == 200
    late_chunk = c.node(1).step(6000, Received(2, held.message)).sends[0].message
    assert isinstance(late_chunk, FetchSnapshotResponse) and late_chunk.error_code == NONE

    # Leader 1 resigns; node 3 wins epoch 2 and announces itself; node 2 follows it.
    c.step(1, 6100, Resign())
    c.pump(6100)
    assert follower.role is Role.UNATTACHED and follower._snapshot_fetch is None  # partial forgotten
    c.step(3, 8000, Tick())
    c.pump(8000)
    assert c.node(3).role is Role.LEADER and c.node(3).epoch == 2
    assert follower.role is Role.FOLLOWER and follower.leader_id == 3
    # The late chunk of the old snapshot from the old leader is ignored.
    before = (c.logs[2].start_offset(), c.logs[2].end_offset(), follower._snapshot_fetch)
    out = follower.step(8000, Received(1, late_chunk))
    assert out.sends == [] and out.snapshot_loaded is None
    assert (c.logs[2].start_offset(), c.logs[2].end_offset(), follower._snapshot_fetch) == before
    # Node 2 got node 3's snapshot (its log, at 1, is below node 3's start, 15), then the rest.
    assert c.snapshots_loaded(2) == [(new_snapshot, b"node 3's state at 15" * 10)]
    assert old_snapshot not in c.logs[2].snapshots()
    assert c.logs[2].start_offset() == 15
    c.step(2, 8200, Tick())
    c.pump(8200)
    assert [e.offset for e in c.logs[2].entries()] == [e.offset for e in c.logs[3].entries()]
    assert c.logs[2].entries() == c.logs[3].entries()


# ------------------------------------------------------------------ the leader, one message at a time


def leader_with_snapshot() -> tuple[RaftNode, OffsetAndEpoch]:
    """Node 1 leading epoch 3 over a log whose entries 0..9 (epochs 1, 1, 1, 1, 2, 2, 2, 2, 2, 2)
    were snapshotted at 6 and deleted; base epoch 2."""
    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a"] * 4)
    log.append_as_leader(2, [b"b"] * 6)
    log.flush()
    snapshot = OffsetAndEpoch(6, 2)
    log.create_snapshot(snapshot, STATE)
    log.delete_before(6)
    store = InMemoryQuorumStateStore()
    store.write(ElectionState(2, None, None, frozenset(VOTERS)))
    node = RaftNode(1, VOTERS, log, store, random.Random(0), 0, CONFIG)
    node.step(5000, Tick())
    node.step(5000, Received(2, _vote_response(node.epoch, pre=True)))
    node.step(5000, Received(2, _vote_response(node.epoch, pre=False)))
    assert node.role is Role.LEADER and node.epoch == 3
    return node, snapshot


def _vote_response(epoch: int, *, pre: bool) -> RaftMessage:
    from zurau.raft.messages import VoteResponse

    return VoteResponse(NONE, NO_LEADER, epoch, True, pre)


def answer(node: RaftNode, source: int, message: RaftMessage, now: int = 5100) -> RaftMessage:
    (out,) = [
        o for o in node.step(now, Received(source, message)).sends if isinstance(o.message, RaftResponse)
    ]
    return out.message


@pytest.mark.parametrize(
    ("offset", "epoch", "expected"),
    [
        (0, 0, "snapshot"),  # an empty replica
        (4, 1, "snapshot"),  # below the start
        (6, 1, "snapshot"),  # at the start, but entry 5 is not of epoch 1
        (6, 3, "snapshot"),  # at the start, with an epoch entry 5 cannot have
        (8, 1, "snapshot"),  # last epoch older than the base epoch: cannot be checked
        (6, 2, "records"),  # exactly the snapshot's position
        (8, 2, "records"),
        (11, 3, "records"),  # at the leader's end (after its leader-change entry)
        (12, 2, "diverging"),  # epoch 2 ends at 10 here
    ],
)
def test_which_fetches_the_leader_answers_with_its_snapshot(offset: int, epoch: int, expected: str) -> None:
    leader, snapshot = leader_with_snapshot()
    resp = answer(leader, 2, FetchRequest(2, 3, offset, epoch))
    assert isinstance(resp, FetchResponse) and resp.error_code == NONE
    kind = "snapshot" if resp.snapshot_id else "diverging" if resp.diverging_epoch else "records"
    assert kind == expected
    if expected == "snapshot":
        assert resp.snapshot_id == snapshot and resp.records == () and resp.diverging_epoch is None
        assert leader._replica_end[2] == 0  # not an acknowledgement
    if expected == "diverging":
        assert resp.diverging_epoch == OffsetAndEpoch(10, 2)


def test_the_leader_notices_its_log_start_moving_between_steps() -> None:
    leader, _ = leader_with_snapshot()
    leader.step(5050, Tick())  # flush the leader-change entry (offset 10)
    resp = answer(leader, 2, FetchRequest(2, 3, 8, 2))
    assert isinstance(resp, FetchResponse) and [e.offset for e in resp.records] == [8, 9, 10]
    newer = snapshot_and_truncate(leader.log, 10)  # type: ignore[arg-type]
    resp = answer(leader, 2, FetchRequest(2, 3, 8, 2))
    assert isinstance(resp, FetchResponse) and resp.snapshot_id == newer


def test_fetch_snapshot_errors_and_chunks() -> None:
    leader, snapshot = leader_with_snapshot()

    def chunk(position: int, *, epoch: int = 3, sid: OffsetAndEpoch = snapshot, max_bytes: int = 64) -> Any:
        resp = answer(leader, 2, FetchSnapshotRequest(2, epoch, sid, position, max_bytes))
        assert isinstance(resp, FetchSnapshotResponse)
        assert (resp.snapshot_id, resp.position) == (sid, position)  # echoed
        return resp

    first = chunk(0)
    assert (first.error_code, first.size, first.data) == (NONE, len(STATE), STATE[:64])
    assert (first.leader_id, first.leader_epoch) == (1, 3)
    last = chunk(len(STATE) - 10)
    assert last.data == STATE[-10:]
    assert chunk(0, max_bytes=10**9).data == STATE[:CHUNK]  # capped by the leader's chunk size
    assert chunk(2, epoch=2).error_code == FENCED_LEADER_EPOCH
    assert chunk(2, epoch=4).error_code == UNKNOWN_LEADER_EPOCH
    assert chunk(0, sid=OffsetAndEpoch(6, 1)).error_code == SNAPSHOT_NOT_FOUND
    assert chunk(len(STATE)).error_code == POSITION_OUT_OF_RANGE
    assert chunk(len(STATE) + 1).error_code == POSITION_OUT_OF_RANGE
    assert chunk(-1).error_code == POSITION_OUT_OF_RANGE
    # A node that does not lead says so.
    follower = RaftNode(2, VOTERS, InMemoryRaftLog(), InMemoryQuorumStateStore(), random.Random(0), 0, CONFIG)
    resp = answer(follower, 3, FetchSnapshotRequest(3, 0, snapshot, 0, 10))
    assert isinstance(resp, FetchSnapshotResponse) and resp.error_code == NOT_LEADER_OR_FOLLOWER


def test_an_empty_snapshot_is_one_empty_chunk() -> None:
    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a"])
    log.flush()
    snapshot = snapshot_and_truncate(log, 1, b"")
    store = InMemoryQuorumStateStore()
    store.write(ElectionState(1, None, 2, frozenset(VOTERS)))
    follower = RaftNode(3, VOTERS, InMemoryRaftLog(), store, random.Random(0), 0, CONFIG)
    follower.step(10, Tick())
    follower.step(20, Received(2, FetchResponse(NONE, 2, 1, 1, 0, 0, snapshot_id=snapshot)))
    out = follower.step(30, Received(2, FetchSnapshotResponse(NONE, 2, 1, snapshot, 0, 0, b"")))
    assert out.snapshot_loaded == (snapshot, b"")
    assert follower.log.start_offset() == 1 and follower.high_watermark == 1


# ------------------------------------------------------------------ the follower, one message at a time


def follower_of_2(log: InMemoryRaftLog | None = None) -> RaftNode:
    """Node 3 following leader 2 in epoch 4, its first Fetch sent at t=10."""
    store = InMemoryQuorumStateStore()
    store.write(ElectionState(4, None, 2, frozenset(VOTERS)))
    node = RaftNode(3, VOTERS, log or InMemoryRaftLog(), store, random.Random(0), 0, CONFIG)
    out = node.step(10, Tick())
    assert [type(o.message) for o in out.sends] == [FetchRequest]
    return node


def only_send(out: Output) -> RaftMessage:
    (send,) = out.sends
    assert send.destination == 2
    return send.message


SNAP = OffsetAndEpoch(50, 3)


def test_the_follower_checks_every_chunk_and_resends_after_a_timeout() -> None:
    node = follower_of_2()
    request = only_send(node.step(20, Received(2, FetchResponse(NONE, 2, 4, 60, 0, 0, snapshot_id=SNAP))))
    assert request == FetchSnapshotRequest(3, 4, SNAP, 0, CHUNK)
    # A late answer to the Fetch, now that we fetch the snapshot: ignored.
    assert node.step(21, Received(2, FetchResponse(NONE, 2, 4, 60, 0, 0, records=()))).sends == []
    data = b"x" * 250

    def chunk(position: int, *, sid: OffsetAndEpoch = SNAP, size: int = 250, epoch: int = 4) -> Output:
        resp = FetchSnapshotResponse(NONE, 2, epoch, sid, size, position, data[position : position + CHUNK])
        return node.step(30, Received(2, resp))

    assert only_send(chunk(0)) == FetchSnapshotRequest(3, 4, SNAP, 100, CHUNK)
    assert chunk(0).sends == []  # duplicate of the first chunk
    assert chunk(100, sid=OffsetAndEpoch(50, 2)).sends == []  # another snapshot
    assert chunk(100, epoch=3).sends == []  # another epoch
    assert node._snapshot_fetch is not None and len(node._snapshot_fetch.data) == 100
    # No answer: the same chunk is asked for again after the request timeout, not before.
    assert node.step(30 + CONFIG.request_timeout_ms - 1, Tick()).sends == []
    resent = only_send(node.step(30 + CONFIG.request_timeout_ms, Tick()))
    assert resent == FetchSnapshotRequest(3, 4, SNAP, 100, CHUNK)
    assert only_send(chunk(100)) == FetchSnapshotRequest(3, 4, SNAP, 200, CHUNK)
    out = chunk(200)
    assert out.snapshot_loaded == (SNAP, data)
    assert only_send(out) == FetchRequest(3, 4, 50, 3)  # on from the snapshot's end
    assert node.high_watermark == 50 and node._committed_upto == 50
    assert node.log.start_offset() == 50 and node.log.latest_snapshot() == SNAP


@pytest.mark.parametrize("error", [SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, "size changed"])
def test_the_follower_goes_back_to_fetch_when_the_snapshot_goes_away(error: int | str) -> None:
    node = follower_of_2()
    node.step(20, Received(2, FetchResponse(NONE, 2, 4, 60, 0, 0, snapshot_id=SNAP)))
    node.step(30, Received(2, FetchSnapshotResponse(NONE, 2, 4, SNAP, 250, 0, b"x" * 100)))
    if error == "size changed":
        resp = FetchSnapshotResponse(NONE, 2, 4, SNAP, 300, 100, b"y" * 100)
    else:
        assert isinstance(error, int)
        resp = FetchSnapshotResponse(error, 2, 4, SNAP, -1, 100)
    assert node.step(40, Received(2, resp)).sends == []
    assert node._snapshot_fetch is None
    # After the idle backoff it fetches entries again (whose answer names the current snapshot).
    request = only_send(node.step(40 + CONFIG.fetch_idle_backoff_ms, Tick()))
    assert request == FetchRequest(3, 4, 0, 0)
    newer = OffsetAndEpoch(70, 4)
    again = only_send(node.step(150, Received(2, FetchResponse(NONE, 2, 4, 70, 0, 0, snapshot_id=newer))))
    assert again == FetchSnapshotRequest(3, 4, newer, 0, CHUNK)


def test_an_older_snapshot_than_the_followers_own_is_not_installed() -> None:
    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a"] * 8)
    log.flush()
    own = snapshot_and_truncate(log, 8, b"mine")
    node = follower_of_2(log)
    older = OffsetAndEpoch(5, 1)
    node.step(20, Received(2, FetchResponse(NONE, 2, 4, 10, 8, 1, snapshot_id=older)))
    out = node.step(30, Received(2, FetchSnapshotResponse(NONE, 2, 4, older, 3, 0, b"old")))
    assert out.snapshot_loaded is None and log.latest_snapshot() == own and node._committed_upto == 8
    assert node._snapshot_fetch is None


def test_a_divergence_below_the_followers_log_start_makes_it_fetch_the_snapshot() -> None:
    """The follower's log starts at 6 (base epoch 2); a leader that answers a diverging epoch older
    than that (or ending below 6) cannot be followed by truncating: the follower asks from nothing,
    which a leader whose log starts above 0 answers with its snapshot."""
    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a"] * 4)
    log.append_as_leader(2, [b"b"] * 4)
    log.flush()
    snapshot_and_truncate(log, 6, b"s")
    node = follower_of_2(log)  # fetched (8, 2)
    for diverging in (OffsetAndEpoch(3, 1), OffsetAndEpoch(5, 2)):
        out = node.step(20, Received(2, FetchResponse(NONE, 2, 4, 0, 8, 2, diverging_epoch=diverging)))
        assert only_send(out) == FetchRequest(3, 4, 0, 0)
        assert (log.start_offset(), log.end_offset()) == (6, 8)  # nothing truncated
        # A leader holding its whole log answers from 0: nothing we can use; we ask again later.
        out = node.step(30, Received(2, FetchResponse(NONE, 2, 4, 0, 0, 0, records=(Entry(0, 1, b"a"),))))
        assert out.sends == [] and log.end_offset() == 8
        node._snapshot_wanted = False
        node._fetch_sent_at = None
        node._next_fetch_at = 40
        assert only_send(node.step(40, Tick())) == FetchRequest(3, 4, 8, 2)
    node.step(50, Received(2, FetchResponse(NONE, 2, 4, 0, 8, 2, diverging_epoch=OffsetAndEpoch(3, 1))))
    sid = OffsetAndEpoch(12, 4)
    out = node.step(60, Received(2, FetchResponse(NONE, 2, 4, 12, 0, 0, snapshot_id=sid)))
    assert only_send(out) == FetchSnapshotRequest(3, 4, sid, 0, CHUNK)
    out = node.step(70, Received(2, FetchSnapshotResponse(NONE, 2, 4, sid, 4, 0, b"news")))
    assert out.snapshot_loaded == (sid, b"news") and log.start_offset() == 12
    assert only_send(out) == FetchRequest(3, 4, 12, 4)


def test_a_divergence_above_the_followers_log_start_truncates_as_usual() -> None:
    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a"] * 4)
    log.append_as_leader(2, [b"b"] * 4)
    log.flush()
    snapshot_and_truncate(log, 6, b"s")
    node = follower_of_2(log)
    out = node.step(20, Received(2, FetchResponse(NONE, 2, 4, 0, 8, 2, diverging_epoch=OffsetAndEpoch(7, 2))))
    assert only_send(out) == FetchRequest(3, 4, 7, 2) and log.end_offset() == 7
    out = node.step(30, Received(2, FetchResponse(NONE, 2, 4, 0, 7, 2, diverging_epoch=OffsetAndEpoch(6, 2))))
    assert only_send(out) == FetchRequest(3, 4, 6, 2) and log.end_offset() == 6  # down to its start


def test_quorum_info_after_a_snapshot_install(behind: tuple[Cluster, OffsetAndEpoch]) -> None:
    c, _ = behind
    c.step(2, 6000, Tick())
    c.pump(6000)
    info = c.node(1).quorum_info(6100)
    assert info is not None
    assert [(r.replica_id, r.log_end_offset) for r in info.voters] == [(1, 21), (2, 21), (3, 21)]
    assert info.high_watermark == 21


# ------------------------------------------------------------------ wire


def test_fetch_snapshot_is_a_raft_api_sent_at_our_highest_version() -> None:
    assert ApiKey.FETCH_SNAPSHOT in RAFT_API_KEYS
    assert FETCH_SNAPSHOT_VERSION == codec.schema_for(ApiKey.FETCH_SNAPSHOT).max_version
    key, version, _ = request_to_wire(FetchSnapshotRequest(2, 1, SNAP, 0, 10), CLUSTER)
    assert (key, version) == (ApiKey.FETCH_SNAPSHOT, FETCH_SNAPSHOT_VERSION)


FETCH_SNAPSHOT_VERSIONS = range(
    codec.schema_for(ApiKey.FETCH_SNAPSHOT).min_version,
    codec.schema_for(ApiKey.FETCH_SNAPSHOT).max_version + 1,
)


@pytest.mark.parametrize("version", FETCH_SNAPSHOT_VERSIONS)
def test_fetch_snapshot_round_trips_at_every_version(version: int) -> None:
    request = FetchSnapshotRequest(
        replica_id=3, replica_epoch=7, snapshot_id=SNAP, position=4096, max_bytes=1000
    )
    key, _, body = request_to_wire(request, CLUSTER)
    decoded = request_from_wire(key, version, wire_body(key, version, "request", body))
    assert decoded.message == request and decoded.source == 3 and decoded.cluster_id == CLUSTER
    raw = wire_body(key, version, "request", body)
    (partition,) = raw["topics"][0]["partitions"]
    assert raw["topics"][0]["name"] == METADATA_TOPIC and raw["max_bytes"] == 1000
    assert partition["snapshot_id"] == {"end_offset": 50, "epoch": 3}
    assert (partition["current_leader_epoch"], partition["position"]) == (7, 4096)
    for response in (
        FetchSnapshotResponse(NONE, 1, 7, SNAP, 10_000, 4096, bytes(range(256)) * 3),
        FetchSnapshotResponse(NONE, 1, 7, SNAP, 0, 0, b""),
        FetchSnapshotResponse(SNAPSHOT_NOT_FOUND, 1, 7, SNAP, -1, 4096),
        FetchSnapshotResponse(FENCED_LEADER_EPOCH, 2, 8, SNAP, -1, 4096),
    ):
        wire = wire_body(key, version, "response", response_to_wire(key, version, response))
        assert response_from_wire(key, version, wire, request) == response
        assert wire["topics"][0]["partitions"][0]["current_leader"]["leader_epoch"] == response.leader_epoch
    # A top-level error keeps the request's snapshot id and position.
    body = wire_body(key, version, "response", error_response(key, version, INCONSISTENT_CLUSTER_ID))
    back = response_from_wire(key, version, body, request)
    assert back == FetchSnapshotResponse(INCONSISTENT_CLUSTER_ID, NO_LEADER, -1, SNAP, -1, 4096)


def _mangled_fetch_snapshot(mangle: Callable[[dict[str, Any]], None]) -> Any:
    key, version, body = request_to_wire(FetchSnapshotRequest(3, 7, SNAP, 0, 10), CLUSTER)
    mangle(body)
    return request_from_wire(key, version, wire_body(key, version, "request", body))


@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        (lambda b: b["topics"].append(dict(b["topics"][0])), "exactly one topic"),
        (lambda b: b["topics"][0].update(name="orders"), "'orders'"),
        (lambda b: b["topics"][0]["partitions"][0].update(partition=2), "partition 2"),
        (lambda b: b["topics"][0].update(partitions=[]), "exactly one partition"),
        (lambda b: b.update(replica_id=-1), "negative replica id"),
    ],
    ids=["two-topics", "wrong-topic", "partition-2", "no-partition", "consumer"],
)
def test_malformed_fetch_snapshot_requests(mangle: Callable[[dict[str, Any]], None], match: str) -> None:
    with pytest.raises(errors.InvalidRequestError, match=match):
        _mangled_fetch_snapshot(mangle)


@pytest.mark.parametrize("version", range(12, FETCH_VERSION + 1))
def test_a_fetch_response_names_the_snapshot_to_fetch(version: int) -> None:
    request = FetchRequest(2, 5, 3, 1)
    response = FetchResponse(NONE, 1, 5, 40, 3, 1, snapshot_id=OffsetAndEpoch(30, 4))
    wire = wire_body(ApiKey.FETCH, version, "response", response_to_wire(ApiKey.FETCH, version, response))
    assert wire["responses"][0]["partitions"][0]["snapshot_id"] == {"end_offset": 30, "epoch": 4}
    assert response_from_wire(ApiKey.FETCH, version, wire, request) == response
    plain = FetchResponse(NONE, 1, 5, 40, 3, 1)
    wire = wire_body(ApiKey.FETCH, version, "response", response_to_wire(ApiKey.FETCH, version, plain))
    assert wire["responses"][0]["partitions"][0]["snapshot_id"] == {"end_offset": -1, "epoch": -1}
    assert response_from_wire(ApiKey.FETCH, version, wire, request) == plain


def test_a_half_set_snapshot_id_is_malformed() -> None:
    request = FetchRequest(2, 5, 3, 1)
    body = response_to_wire(ApiKey.FETCH, FETCH_VERSION, FetchResponse(NONE, 1, 5, 40, 3, 1))
    body["responses"][0]["partitions"][0]["snapshot_id"] = {"end_offset": 30, "epoch": -1}
    wire = wire_body(ApiKey.FETCH, FETCH_VERSION, "response", body)
    with pytest.raises(errors.InvalidRequestError, match="snapshot id"):
        response_from_wire(ApiKey.FETCH, FETCH_VERSION, wire, request)


def test_fetch_snapshot_error_responses_encode_at_every_version() -> None:
    for version in FETCH_SNAPSHOT_VERSIONS:
        body = error_response(ApiKey.FETCH_SNAPSHOT, version, INCONSISTENT_CLUSTER_ID)
        assert (
            wire_body(ApiKey.FETCH_SNAPSHOT, version, "response", body)["error_code"]
            == INCONSISTENT_CLUSTER_ID
        )


def test_response_types_lists_every_response() -> None:
    from typing import get_args

    from zurau.raft.messages import RESPONSE_TYPES

    assert set(RESPONSE_TYPES) == set(get_args(RaftResponse))
