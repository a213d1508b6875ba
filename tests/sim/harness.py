"""A seeded, deterministic simulation of a Raft quorum over the real ``zurau.raft`` code.

Everything -- network delays, losses, duplicates, partitions, crashes, client appends and the
nodes' election jitter -- is drawn from one ``random.Random(seed)``, and virtual time only moves
from one event to the next, so a seed replays the same run exactly.

A run alternates *chaos* periods (faults on) and *quiet* periods (every node up, the network healed
and lossless). After every node step :class:`InvariantChecker` verifies the safety properties;
after each quiet period starts, a leader must be elected and a new append committed on every voter
within ``liveness_bound_ms`` (liveness).

Each node runs a :class:`StateMachine` -- the (offset, payload) of every committed data entry, with
a digest chained over them -- fed by the node's ``Output.committed`` and ``Output.snapshot_loaded``
the way the real shell feeds the controller. During chaos the simulated shells take snapshots
(KIP-630): a random node snapshots its state machine at a random offset between its latest
snapshot and its high watermark, and usually deletes the log prefix below it, so that nodes that
fall behind (crashed, partitioned) must fetch and install the leader's snapshot. Shells go on
snapshotting in quiet periods, so the leader's log start also moves while followers catch up. A restarted node's
state machine is rebuilt from its latest snapshot, as the shell does before it starts the node.
Snapshot chunks are kept small so that a snapshot crosses the network in many FetchSnapshot
round trips (and meets the same losses, duplicates and delays as every other message).

Dynamic quorums (KIP-853, ``SimParams.dynamic``): the first ``voters`` nodes are bootstrapped as
the voter set (as ``--initial-controllers`` does), the others start with none and find the leader
through the bootstrap servers (the initial voters); during chaos the client asks the leader to add
an observer or remove a voter (the leader included). Snapshots then carry the voter set in a leading
control batch, as Kafka's checkpoints do. The checker adds: voter sets in the committed history
differ by one voter at a time, and a leader appends a new voter set only once the previous one is
committed. Liveness then requires every node (voter or not) to hold the marker entry.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import heapq
import itertools
import random
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from zurau.protocol.records.batch import CONTROL_MASK, iter_batches, peek_size
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import control_key
from zurau.raft import (
    Entry,
    InMemoryQuorumStateStore,
    InMemoryRaftLog,
    NotLeaderError,
    Output,
    Propose,
    RaftConfig,
    RaftNode,
    Received,
    Resign,
    Role,
    Tick,
)
from zurau.raft.messages import KRAFT_VOTERS, NONE, OffsetAndEpoch, RaftMessage
from zurau.raft.node import AddVoter, RemoveVoter
from zurau.raft.voter_set import Endpoint, ReplicaKey, Voter, VoterSet


class InvariantViolation(AssertionError):
    pass


class SimLog(InMemoryRaftLog):
    """The in-memory log, remembering the lowest offset changed since the checker last looked."""

    def __init__(self) -> None:
        super().__init__()
        self.dirty_from = 0

    def _push(self, entry: Entry) -> None:
        super()._push(entry)
        self.dirty_from = min(self.dirty_from, entry.offset)

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        self.dirty_from = min(self.dirty_from, offset)

    def _restart_at(self, snapshot: OffsetAndEpoch) -> None:
        super()._restart_at(snapshot)
        self.dirty_from = min(self.dirty_from, snapshot.offset)

    def base_epoch(self) -> int:
        """The epoch of the entry just below the log start (0 for a log starting at 0)."""
        return self.end_offset_for_epoch(-1).epoch


def _chain(digest: bytes, offset: int, payload: bytes) -> bytes:
    return hashlib.blake2b(digest + offset.to_bytes(8, "big") + payload, digest_size=16).digest()


EMPTY_DIGEST = bytes(16)
_HEADER = struct.Struct(">QI")  # (offset, count) of a snapshot; (offset, length) of an item


@dataclass
class StateMachine:
    """The simulated controller: the (offset, payload) of every applied data entry (control entries
    change nothing), a digest chained over them, and ``applied``, the offset of the next entry to
    apply. Its snapshot at offset ``s`` is the items below ``s``, serialised; loading a snapshot
    recomputes the digest from the items, so a snapshot damaged in transit shows."""

    applied: int = 0
    items: list[tuple[int, bytes]] = field(default_factory=list)
    digest: bytes = EMPTY_DIGEST

    def apply(self, e: Entry, node_id: int) -> None:
        if e.offset != self.applied:
            raise InvariantViolation(
                f"node {node_id} committed {e}, but its state machine expects offset {self.applied}"
            )
        if not e.control:
            self.items.append((e.offset, e.payload))
            self.digest = _chain(self.digest, e.offset, e.payload)
        self.applied += 1

    def snapshot(self, offset: int) -> bytes:
        """The state after every entry below ``offset`` (at most ``applied``), serialised."""
        assert offset <= self.applied
        items = self.items[: bisect.bisect_left(self.items, (offset, b""))]
        out = bytearray(_HEADER.pack(offset, len(items)))
        for o, payload in items:
            out += _HEADER.pack(o, len(payload))
            out += payload
        return bytes(out)

    @classmethod
    def load(cls, data: bytes, what: str) -> StateMachine:
        data = strip_control_batches(data)
        try:
            offset, count = _HEADER.unpack_from(data, 0)
            pos = _HEADER.size
            sm = cls(applied=offset)
            for _ in range(count):
                o, n = _HEADER.unpack_from(data, pos)
                pos += _HEADER.size
                payload = bytes(data[pos : pos + n])
                if len(payload) != n or o >= offset or (sm.items and o <= sm.items[-1][0]):
                    raise ValueError(f"bad item at {pos}")
                pos += n
                sm.items.append((o, payload))
                sm.digest = _chain(sm.digest, o, payload)
            if pos != len(data):
                raise ValueError(f"{len(data) - pos} bytes left over")
        except (struct.error, ValueError) as exc:
            raise InvariantViolation(f"{what} is not a state machine snapshot: {exc}") from None
        return sm


def voters_prefix(voters: VoterSet) -> bytes:
    """A control batch holding ``voters`` (a VotersRecord): what a dynamic quorum's snapshot
    starts with; nothing while the node knows no voter set there (an observer's log before the
    first VotersRecord it fetched)."""
    if not voters:
        return b""
    record = NewRecord(control_key(KRAFT_VOTERS), voters.encode(), (), -1)
    return build_batch([record], base_offset=0, is_control=True, partition_leader_epoch=0)


def strip_control_batches(data: bytes) -> bytes:
    """``data`` without the whole control batches it starts with."""
    pos = 0
    while pos < len(data):
        size = peek_size(data, pos)
        if size is None or pos + size > len(data):
            break
        try:
            (_, h), *_ = list(iter_batches(data[pos : pos + size]))
        except Exception:  # not a batch: the state machine's own bytes
            break
        if not h.attributes & CONTROL_MASK:
            break
        pos += size
    return data[pos:]


# Kafka's defaults, and a tight profile whose timeouts are close to the network's delays, so that
# elections overlap and split votes, duplicate candidacies and stale messages are common.
# Both with small snapshot chunks, so that a snapshot takes many FetchSnapshot round trips.
KAFKA_DEFAULTS = dataclasses.replace(RaftConfig(), snapshot_chunk_bytes=512)
TIGHT = RaftConfig(
    election_timeout_ms=60,
    fetch_timeout_ms=120,
    append_linger_ms=5,
    request_timeout_ms=40,
    fetch_idle_backoff_ms=15,
    retry_backoff_ms=20,
    election_backoff_max_ms=60,
    snapshot_chunk_bytes=97,
)


@dataclass
class SimParams:
    voters: int = 3
    observers: int = 0
    cycles: int = 2
    chaos_ms: tuple[int, int] = (3000, 6000)
    liveness_bound_ms: int = 15000
    loss: float = 0.1
    duplicate: float = 0.05
    long_delay: float = 0.05
    append_every_ms: tuple[int, int] = (20, 200)
    fault_every_ms: tuple[int, int] = (100, 600)
    # A random running node's shell snapshots this often (None: never) and then deletes the log
    # prefix below the snapshot with this probability.
    snapshot_every_ms: tuple[int, int] | None = (100, 700)
    delete_prefix: float = 0.8
    # KIP-853: voters in the log, bootstrapped from the first ``voters`` nodes, and a voter change
    # (add an observer / remove a voter) asked of the leader this often during chaos.
    dynamic: bool = False
    voter_change_every_ms: tuple[int, int] = (300, 1500)


@dataclass
class SimNode:
    node_id: int
    directory_id: uuid.UUID = uuid.UUID(int=0)
    log: SimLog = field(default_factory=SimLog)
    store: InMemoryQuorumStateStore = field(default_factory=InMemoryQuorumStateStore)
    raft: RaftNode | None = None
    restarts: int = 0
    last_hw: int = 0
    last_applied: int = 0
    sm: StateMachine = field(default_factory=StateMachine)
    snapshots_installed: int = 0
    chunked_installs: int = 0  # installed snapshots larger than one FetchSnapshot chunk


class InvariantChecker:
    """Safety properties, checked after every step of every node.

    * at most one leader per epoch;
    * committed entries (reported by any node as below its high watermark) are never changed: a
      history of every committed (offset, epoch, payload) is kept and every later report must match;
    * committed entries are never lost: a node that becomes leader in epoch E holds every entry
      committed in an epoch before E (Raft's leader completeness; a leader of an older epoch
      can still be elected late, from delayed votes, but can commit nothing) -- compared entry by
      entry from its log start on, and through its state machine below it -- and no node
      truncates below what it reported committed;
    * state machines: every node's state machine (its latest snapshot, or the snapshot it
      installed, plus the committed entries applied since) has applied exactly the node's
      committed prefix, and equals the fold of the committed history up to there; it never moves
      back while the node runs (a snapshot is only installed ahead of it); a snapshot, when taken
      or installed, holds exactly that fold at its offset, and its epoch is that of the committed
      entry below its offset; a node's log never starts above its committed offset;
    * a node's high watermark never goes back while it runs (in particular the leader's) and never
      passes the end of the committed history;
    * log matching: the same (offset, epoch) on any two logs means the same payload and the same
      previous epoch (hence, inductively, the same prefix).
    """

    def __init__(self) -> None:
        self.leaders: dict[int, int] = {}
        self.history: list[Entry] = []
        # The lowest epoch in which each history entry was seen committed (the reporter's epoch).
        self.commit_epochs: list[int] = []
        # folds[k]: the state machine digest after the first k committed entries.
        self.folds: list[bytes] = [EMPTY_DIGEST]
        self.registry: dict[tuple[int, int], tuple[bytes, bool, int]] = {}

    def _commit(self, e: Entry, epoch: int) -> None:
        self.history.append(e)
        self.commit_epochs.append(epoch)
        last = self.folds[-1]
        self.folds.append(last if e.control else _chain(last, e.offset, e.payload))

    def check_snapshot(self, node_id: int, snapshot: OffsetAndEpoch, data: bytes, what: str) -> None:
        """A snapshot taken or installed by ``node_id`` holds the committed fold at its offset."""
        if snapshot.offset > len(self.history):
            self.fail(f"node {node_id} {what} snapshot {snapshot} beyond the committed history")
        if snapshot.offset > 0 and self.history[snapshot.offset - 1].epoch != snapshot.epoch:
            self.fail(
                f"node {node_id} {what} snapshot {snapshot}, but committed {self.history[snapshot.offset - 1]}"
            )
        sm = StateMachine.load(data, f"snapshot {snapshot} {what} by node {node_id}")
        if sm.applied != snapshot.offset or sm.digest != self.folds[snapshot.offset]:
            self.fail(
                f"node {node_id} {what} snapshot {snapshot} holding the state at {sm.applied}, "
                "not the committed state at its offset"
            )

    def fail(self, msg: str) -> None:
        raise InvariantViolation(msg)

    def after_step(self, sim: SimNode, out: Output) -> None:
        raft = sim.raft
        assert raft is not None
        log = sim.log
        for change in out.role_changes:
            if change.role is Role.LEADER:
                other = self.leaders.setdefault(change.epoch, sim.node_id)
                if other != sim.node_id:
                    self.fail(f"two leaders in epoch {change.epoch}: {other} and {sim.node_id}")
                # Below its log start the leader's state machine stands for the entries (checked
                # against the committed fold below, after every step).
                for o in range(log.start_offset(), len(self.history)):
                    e = self.history[o]
                    if self.commit_epochs[o] >= change.epoch:
                        continue
                    if e.offset >= log.end_offset() or log.entry(e.offset) != e:
                        self.fail(f"new leader {sim.node_id} (epoch {change.epoch}) lacks committed {e}")
        if raft.dynamic:
            self._check_voter_changes(sim)
        for e in out.committed:
            if e.offset < len(self.history):
                if self.history[e.offset] != e:
                    self.fail(f"node {sim.node_id} committed {e}, but {self.history[e.offset]} was committed")
                self.commit_epochs[e.offset] = min(self.commit_epochs[e.offset], raft.epoch)
            elif e.offset == len(self.history):
                self._commit(e, raft.epoch)
            else:
                self.fail(f"node {sim.node_id} committed {e} past the committed history's end")
        if out.snapshot_loaded is not None:
            self.check_snapshot(sim.node_id, *out.snapshot_loaded, "installed")
        # The state machine: exactly the committed prefix, and equal to its fold.
        sm = sim.sm
        if sm.applied != raft._committed_upto:
            self.fail(
                f"node {sim.node_id}'s state machine applied up to {sm.applied}, "
                f"but the node counts up to {raft._committed_upto} committed"
            )
        if sm.applied > len(self.history) or sm.digest != self.folds[sm.applied]:
            self.fail(
                f"node {sim.node_id}'s state machine at offset {sm.applied} differs from the committed "
                "history's fold"
            )
        if sm.applied < sim.last_applied:
            self.fail(f"node {sim.node_id}'s state machine went back from {sim.last_applied} to {sm.applied}")
        sim.last_applied = sm.applied
        start = log.start_offset()
        if start > raft._committed_upto:
            self.fail(
                f"node {sim.node_id}'s log starts at {start}, above its committed {raft._committed_upto}"
            )
        # Log matching over what changed in this node's log.
        end = log.end_offset()
        for o in range(max(log.dirty_from, start), end):
            e = log.entry(o)
            prev_epoch = log.entry(o - 1).epoch if o > start else log.base_epoch()
            value = (e.payload, e.control, prev_epoch)
            seen = self.registry.setdefault((o, e.epoch), value)
            if seen != value:
                self.fail(
                    f"log matching: node {sim.node_id} has {e} (previous epoch {prev_epoch}), elsewhere {seen}"
                )
        log.dirty_from = end
        if end < raft._committed_upto:
            self.fail(
                f"node {sim.node_id} truncated to {end}, below its committed offset {raft._committed_upto}"
            )
        if raft.high_watermark < sim.last_hw:
            self.fail(
                f"node {sim.node_id} high watermark went back from {sim.last_hw} to {raft.high_watermark}"
            )
        if raft.high_watermark > len(self.history):
            self.fail(
                f"node {sim.node_id} high watermark {raft.high_watermark} is beyond everything committed "
                f"({len(self.history)} entries)"
            )
        sim.last_hw = raft.high_watermark

    def _check_voter_changes(self, sim: SimNode) -> None:
        """KIP-853's one-change-at-a-time rule, on what this node's log gained in this step: a
        VotersRecord written by a leader in its own epoch follows a committed voter set, and differs
        from it by exactly one voter (or only in endpoints)."""
        raft = sim.raft
        assert raft is not None
        if raft.role is not Role.LEADER:
            return
        log = sim.log
        start = max(log.dirty_from, log.start_offset())
        for o in range(start, log.end_offset()):
            e = log.entry(o)
            if not (e.control and e.control_type == KRAFT_VOTERS and e.epoch == raft.epoch):
                continue
            history = [(at, v) for at, v in raft._voter_history if at < o]
            if not history:
                continue  # the bootstrap set, written at the start of the epoch
            previous_at, previous = history[-1]
            if previous_at >= raft.high_watermark:
                self.fail(
                    f"leader {sim.node_id} wrote voter set at {o} while the one at {previous_at} is "
                    f"uncommitted (high watermark {raft.high_watermark})"
                )
            new = VoterSet.decode(e.payload)
            if len(previous.ids ^ new.ids) > 1:
                self.fail(f"leader {sim.node_id} changed voters {previous!r} -> {new!r} in one step")

    def check_all_hold_history(self, nodes: list[SimNode], upto: int) -> None:
        """Every node holds the committed history below ``upto`` (an offset all have committed):
        in its log from its log start on, in its state machine below it."""
        for n in nodes:
            log = n.log
            if n.sm.applied < upto:
                self.fail(f"node {n.node_id} applied only {n.sm.applied} of {upto} committed entries")
            for e in self.history[log.start_offset() : upto]:
                if e.offset >= log.end_offset() or log.entry(e.offset) != e:
                    self.fail(f"node {n.node_id} lacks committed {e} after the quiet period")


NodeFactory = Callable[..., RaftNode]


class Simulation:
    def __init__(
        self,
        seed: int,
        params: SimParams | None = None,
        node_factory: NodeFactory = RaftNode,
        config: RaftConfig | None = None,
    ) -> None:
        self.seed = seed
        self.params = params or SimParams()
        self.rng = random.Random(seed)
        self.node_factory = node_factory
        self.config = config or (TIGHT if self.rng.random() < 0.5 else KAFKA_DEFAULTS)
        self.now = 0
        self.voters = list(range(1, self.params.voters + 1))
        ids = self.voters + [100 + i for i in range(self.params.observers)]
        # Directory ids from their own generator, so that static runs replay as they always did.
        directories = random.Random(seed * 7919 + 1)
        self.nodes = {i: SimNode(i, uuid.UUID(int=directories.getrandbits(128))) for i in ids}
        self.voter_changes = 0
        self.voter_changes_done = 0
        self.queue: list[tuple[int, int, int, int, RaftMessage]] = []
        self._seq = itertools.count()
        self.blocked: set[tuple[int, int]] = set()
        self.faulty = False
        self.checker = InvariantChecker()
        self.appends = 0
        self.steps = 0
        self.snapshots_taken = 0
        self.trace: list[str] = []
        for n in self.nodes.values():
            self._start(n)

    # ---------------------------------------------------------------- nodes

    def _start(self, n: SimNode) -> None:
        # As the shell does: restore the state machine from the latest snapshot, then start the node.
        latest = n.log.latest_snapshot()
        if latest is None:
            n.sm = StateMachine()
        else:
            data = n.log.read_snapshot(latest, 0, n.log.snapshot_size(latest))
            n.sm = StateMachine.load(data, f"node {n.node_id}'s snapshot {latest}")
        rng = random.Random(self.rng.getrandbits(64))
        if self.params.dynamic:
            bootstrap = VoterSet(self._voter(i) for i in self.voters) if n.node_id in self.voters else VoterSet()
            n.raft = self.node_factory(
                n.node_id,
                bootstrap,
                n.log,
                n.store,
                rng,
                self.now,
                self.config,
                directory_id=n.directory_id,
                bootstrap=tuple(self.voters),
            )
        else:
            n.raft = self.node_factory(n.node_id, self.voters, n.log, n.store, rng, self.now, self.config)
        n.last_hw = 0
        n.last_applied = 0
        n.log.dirty_from = 0
        self.checker.after_step(n, Output())

    def _voter(self, node_id: int) -> Voter:
        return Voter(
            ReplicaKey(node_id, self.nodes[node_id].directory_id), (Endpoint("CONTROLLER", "sim", node_id),)
        )

    def change_voters(self) -> None:
        """Ask a leader to add an observer or remove a voter (maybe itself), keeping two voters."""
        leaders = self.leaders()
        if not leaders:
            return
        n = self.rng.choice(leaders)
        assert n.raft is not None
        voters = n.raft.voter_set
        others = [i for i in self.nodes if i not in voters]
        self.voter_changes += 1
        if others and (len(voters) <= 2 or self.rng.random() < 0.5):
            target = self.rng.choice(others)
            out = self._step(n, AddVoter(self.voter_changes, self._voter(target)))
            self.trace.append(f"{self.now}: ask {n.node_id} to add voter {target}")
        elif len(voters) > 2:
            target = self.rng.choice(sorted(voters))
            key = ReplicaKey(target, self.nodes[target].directory_id)
            out = self._step(n, RemoveVoter(self.voter_changes, key))
            self.trace.append(f"{self.now}: ask {n.node_id} to remove voter {target}")
        else:
            return
        self._note_voter_changes(out)

    def _note_voter_changes(self, out: Output) -> None:
        for r in out.voter_changes:
            if r.error_code == NONE:
                self.voter_changes_done += 1
                self.trace.append(f"{self.now}: voter change {r.request_id} committed")

    def crash(self, n: SimNode, clean: bool) -> None:
        if clean:
            n.log.flush()
        else:
            n.log.crash()  # the unflushed suffix is lost; the quorum state store survives
        n.raft = None
        n.restarts += 1
        self.trace.append(f"{self.now}: crash {n.node_id} clean={clean}")

    def restart(self, n: SimNode) -> None:
        self._start(n)
        self.trace.append(f"{self.now}: restart {n.node_id}")

    def _apply(self, n: SimNode, out: Output) -> None:
        self.steps += 1
        if out.snapshot_loaded is not None:
            snapshot, data = out.snapshot_loaded
            n.sm = StateMachine.load(data, f"snapshot {snapshot} installed by node {n.node_id}")
            n.snapshots_installed += 1
            n.chunked_installs += len(data) > self.config.snapshot_chunk_bytes
            self.trace.append(f"{self.now}: node {n.node_id} installed snapshot {snapshot}")
        for e in out.committed:
            n.sm.apply(e, n.node_id)
        self.checker.after_step(n, out)
        self._note_voter_changes(out)
        for ob in out.sends:
            self._send(n.node_id, ob.destination, ob.message)

    def _step(self, n: SimNode, event: Tick | Received | Propose | Resign) -> Output:
        assert n.raft is not None
        out = n.raft.step(self.now, event)
        self._apply(n, out)
        return out

    # ---------------------------------------------------------------- network

    def _send(self, src: int, dst: int, msg: RaftMessage) -> None:
        copies = 1
        if self.faulty:
            if self.rng.random() < self.params.loss:
                return
            if self.rng.random() < self.params.duplicate:
                copies = 2
        for _ in range(copies):
            if self.faulty and self.rng.random() < self.params.long_delay:
                delay = self.rng.randint(50, 1500)
            else:
                delay = self.rng.randint(1, 20)
            heapq.heappush(self.queue, (self.now + delay, next(self._seq), src, dst, msg))

    # ---------------------------------------------------------------- faults and clients

    def leaders(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.raft is not None and n.raft.role is Role.LEADER]

    def client_append(self) -> None:
        leaders = self.leaders()
        if not leaders:
            return
        n = self.rng.choice(leaders)
        self.appends += 1
        payload = f"s{self.seed}-a{self.appends}".encode()
        self._step(n, Propose((payload,)))

    def take_snapshot(self) -> None:
        """A random running node's shell snapshots its state machine at a random offset between its
        latest snapshot (exclusive) and its high watermark, and usually deletes the log below."""
        up = [n for n in self.nodes.values() if n.raft is not None]
        if not up:
            return
        n = self.rng.choice(up)
        assert n.raft is not None
        log = n.log
        latest = log.latest_snapshot()
        lo = max(log.start_offset(), latest.offset + 1 if latest is not None else 1)
        hi = min(n.raft.high_watermark, n.sm.applied)
        if lo > hi:
            return
        offset = self.rng.randint(lo, hi)
        epoch = log.entry(offset - 1).epoch if offset > log.start_offset() else log.base_epoch()
        snapshot = OffsetAndEpoch(offset, epoch)
        data = n.sm.snapshot(offset)
        if self.params.dynamic:
            data = voters_prefix(n.raft.voters_at(offset)) + data
        self.checker.check_snapshot(n.node_id, snapshot, data, "took")
        log.create_snapshot(snapshot, data)
        self.snapshots_taken += 1
        self.trace.append(f"{self.now}: node {n.node_id} snapshot {snapshot}")
        if self.rng.random() < self.params.delete_prefix:
            cut = self.rng.choice([offset, offset, self.rng.randint(log.start_offset(), offset)])
            log.delete_before(cut)
            self.trace.append(f"{self.now}: node {n.node_id} deletes below {cut}")

    def random_fault(self) -> None:
        nodes = list(self.nodes.values())
        up = [n for n in nodes if n.raft is not None]
        down = [n for n in nodes if n.raft is None]
        r = self.rng.random()
        ids = list(self.nodes)
        if r < 0.2 and up:
            self.crash(self.rng.choice(up), clean=self.rng.random() < 0.3)
        elif r < 0.4 and down:
            self.restart(self.rng.choice(down))
        elif r < 0.5:
            # Symmetric split into two sides.
            side = {i for i in ids if self.rng.random() < 0.5}
            self.blocked = {(a, b) for a in ids for b in ids if (a in side) != (b in side)}
            self.trace.append(f"{self.now}: partition {sorted(side)}")
        elif r < 0.6:
            # Asymmetric: one node can only send, or only receive.
            x = self.rng.choice(ids)
            if self.rng.random() < 0.5:
                self.blocked = {(x, b) for b in ids if b != x}
            else:
                self.blocked = {(a, x) for a in ids if a != x}
            self.trace.append(f"{self.now}: asymmetric around {x}")
        elif r < 0.7:
            a, b = self.rng.sample(ids, 2)
            self.blocked.add((a, b))
        elif r < 0.85:
            self.blocked = set()
            self.trace.append(f"{self.now}: heal")
        elif r < 0.9:
            for n in self.leaders():
                self._step(n, Resign())
                self.trace.append(f"{self.now}: resign {n.node_id}")
        # else: nothing this time

    # ---------------------------------------------------------------- the loop

    def _run_until(self, t_end: int, on_time: Callable[[], bool] | None = None) -> bool:
        """Process events up to ``t_end``; stop early when ``on_time`` (called as time moves)
        returns True."""
        while True:
            deadlines = [
                d
                for n in self.nodes.values()
                if n.raft is not None and (d := n.raft.next_deadline_ms()) is not None
            ]
            t = min(deadlines, default=t_end)
            if self.queue:
                t = min(t, self.queue[0][0])
            t = max(t, self.now)
            if t > t_end:
                self.now = t_end
                return False
            self.now = t
            while self.queue and self.queue[0][0] <= self.now:
                _, _, src, dst, msg = heapq.heappop(self.queue)
                n = self.nodes[dst]
                if n.raft is None or (src, dst) in self.blocked:
                    continue
                self._step(n, Received(src, msg))
            for n in self.nodes.values():
                if n.raft is not None:
                    d = n.raft.next_deadline_ms()
                    if d is not None and d <= self.now:
                        self._step(n, Tick())
            if on_time is not None and on_time():
                return True
            if self.now >= t_end:
                return False

    def chaos(self, duration_ms: int) -> None:
        self.faulty = True
        t_end = self.now + duration_ms
        next_append = self.now
        next_fault = self.now + self.rng.randint(*self.params.fault_every_ms)
        snapshot_every = self.params.snapshot_every_ms
        next_snapshot = t_end if snapshot_every is None else self.now + self.rng.randint(*snapshot_every)
        change_every = self.params.voter_change_every_ms
        next_change = self.now + self.rng.randint(*change_every) if self.params.dynamic else t_end
        while self.now < t_end:
            t_next = min(next_append, next_fault, next_snapshot, next_change, t_end)
            self._run_until(t_next)
            if self.params.dynamic and self.now >= next_change:
                self.change_voters()
                next_change = self.now + self.rng.randint(*change_every)
            if self.now >= next_append:
                self.client_append()
                next_append = self.now + self.rng.randint(*self.params.append_every_ms)
            if self.now >= next_fault:
                self.random_fault()
                next_fault = self.now + self.rng.randint(*self.params.fault_every_ms)
            if snapshot_every is not None and self.now >= next_snapshot:
                self.take_snapshot()
                next_snapshot = self.now + self.rng.randint(*snapshot_every)

    def quiet(self) -> int:
        """Heal everything; return how long it took until a fresh append is committed on every
        voter (raises InvariantViolation if not within the liveness bound)."""
        self.faulty = False
        self.blocked = set()
        for n in self.nodes.values():
            if n.raft is None:
                self.restart(n)
        start = self.now
        deadline = start + self.params.liveness_bound_ms
        marker: dict[str, Entry | None] = {"entry": None}
        retry_at = [start]
        # A dynamic quorum's voters move: there every node, voter or observer, must catch up.
        voters = list(self.nodes.values()) if self.params.dynamic else [self.nodes[v] for v in self.voters]

        def holds(n: SimNode, e: Entry) -> bool:
            """``e`` is committed on ``n``: in its log, or below its log start (then in its state
            machine, which the checker compares with the committed history after every step)."""
            raft = n.raft
            assert raft is not None
            if raft.high_watermark <= e.offset:
                return False
            if e.offset < n.log.start_offset():
                return True
            return n.log.end_offset() > e.offset and n.log.entry(e.offset) == e

        def done() -> bool:
            e = marker["entry"]
            if e is not None:
                for n in voters:
                    if not holds(n, e):
                        break
                else:
                    return True
            if self.now >= retry_at[0]:
                leaders = self.leaders()
                if leaders:
                    n = max(leaders, key=lambda x: x.raft.epoch if x.raft else -1)
                    self.appends += 1
                    try:
                        out = self._step(n, Propose((f"s{self.seed}-marker{self.appends}".encode(),)))
                        marker["entry"] = out.appended[0]
                    except NotLeaderError:
                        pass
                retry_at[0] = self.now + 1000
            return False

        snapshot_every = self.params.snapshot_every_ms
        next_snapshot = deadline if snapshot_every is None else start + self.rng.randint(*snapshot_every)
        while self.now < deadline:
            if self.now >= next_snapshot and snapshot_every is not None:
                self.take_snapshot()
                next_snapshot = self.now + self.rng.randint(*snapshot_every)
            if self._run_until(min(deadline, self.now + 10, next_snapshot), done):
                e = marker["entry"]
                assert e is not None
                self.checker.check_all_hold_history(voters, e.offset + 1)
                return self.now - start
        raise InvariantViolation(
            f"liveness: no append committed on all voters within {self.params.liveness_bound_ms} ms of healing "
            f"(roles {[(n.node_id, n.raft.role.value, n.raft.epoch) for n in voters if n.raft]})"
        )

    def run(self) -> list[int]:
        recoveries = []
        for _ in range(self.params.cycles):
            self.chaos(self.rng.randint(*self.params.chaos_ms))
            recoveries.append(self.quiet())
        return recoveries


def run_seed(seed: int, params: SimParams | None = None, node_factory: NodeFactory = RaftNode) -> Simulation:
    """Run one seeded simulation; an InvariantViolation names the seed and the virtual time."""
    sim = Simulation(seed, params, node_factory)
    try:
        sim.run()
    except InvariantViolation as exc:
        tail = "\n".join(sim.trace[-15:])
        raise InvariantViolation(f"seed {seed} at t={sim.now} ms: {exc}\nlast faults:\n{tail}") from None
    return sim
