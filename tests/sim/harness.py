"""A seeded, deterministic simulation of a Raft quorum over the real ``zurau.raft`` code.

Everything -- network delays, losses, duplicates, partitions, crashes, client appends and the
nodes' election jitter -- is drawn from one ``random.Random(seed)``, and virtual time only moves
from one event to the next, so a seed replays the same run exactly.

A run alternates *chaos* periods (faults on) and *quiet* periods (every node up, the network healed
and lossless). After every node step :class:`InvariantChecker` verifies the safety properties;
after each quiet period starts, a leader must be elected and a new append committed on every voter
within ``liveness_bound_ms`` (liveness).
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

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
from zurau.raft.messages import RaftMessage


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


# Kafka's defaults, and a tight profile whose timeouts are close to the network's delays, so that
# elections overlap and split votes, duplicate candidacies and stale messages are common.
KAFKA_DEFAULTS = RaftConfig()
TIGHT = RaftConfig(
    election_timeout_ms=60,
    fetch_timeout_ms=120,
    append_linger_ms=5,
    request_timeout_ms=40,
    fetch_idle_backoff_ms=15,
    retry_backoff_ms=20,
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


@dataclass
class SimNode:
    node_id: int
    log: SimLog = field(default_factory=SimLog)
    store: InMemoryQuorumStateStore = field(default_factory=InMemoryQuorumStateStore)
    raft: RaftNode | None = None
    restarts: int = 0
    last_hw: int = 0


class InvariantChecker:
    """Safety properties, checked after every step of every node.

    * at most one leader per epoch;
    * committed entries (reported by any node as below its high watermark) are never changed: a
      history of every committed (offset, epoch, payload) is kept and every later report must match;
    * committed entries are never lost: a node that becomes leader in epoch E holds every entry
      committed in an epoch before E (Raft's leader completeness; a leader of an older epoch
      can still be elected late, from delayed votes, but can commit nothing), and no node
      truncates below what it reported committed;
    * a node's high watermark never goes back while it runs (in particular the leader's);
    * log matching: the same (offset, epoch) on any two logs means the same payload and the same
      previous epoch (hence, inductively, the same prefix).
    """

    def __init__(self) -> None:
        self.leaders: dict[int, int] = {}
        self.history: list[Entry] = []
        # The lowest epoch in which each history entry was seen committed (the reporter's epoch).
        self.commit_epochs: list[int] = []
        self.registry: dict[tuple[int, int], tuple[bytes, bool, int]] = {}

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
                for e, committed_in in zip(self.history, self.commit_epochs, strict=True):
                    if committed_in >= change.epoch:
                        continue
                    if e.offset >= log.end_offset() or log.entry(e.offset) != e:
                        self.fail(f"new leader {sim.node_id} (epoch {change.epoch}) lacks committed {e}")
        for e in out.committed:
            if e.offset < len(self.history):
                if self.history[e.offset] != e:
                    self.fail(f"node {sim.node_id} committed {e}, but {self.history[e.offset]} was committed")
                self.commit_epochs[e.offset] = min(self.commit_epochs[e.offset], raft.epoch)
            elif e.offset == len(self.history):
                self.history.append(e)
                self.commit_epochs.append(raft.epoch)
            else:
                self.fail(f"node {sim.node_id} committed {e} past the committed history's end")
        # Log matching over what changed in this node's log.
        end = log.end_offset()
        for o in range(log.dirty_from, end):
            e = log.entry(o)
            prev_epoch = log.entry(o - 1).epoch if o else 0
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
        sim.last_hw = raft.high_watermark

    def check_all_hold_history(self, nodes: list[SimNode], upto: int) -> None:
        """Every node holds the committed history below ``upto`` (an offset all have committed)."""
        for n in nodes:
            log = n.log
            for e in self.history[:upto]:
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
        self.nodes = {i: SimNode(i) for i in ids}
        self.queue: list[tuple[int, int, int, int, RaftMessage]] = []
        self._seq = itertools.count()
        self.blocked: set[tuple[int, int]] = set()
        self.faulty = False
        self.checker = InvariantChecker()
        self.appends = 0
        self.steps = 0
        self.trace: list[str] = []
        for n in self.nodes.values():
            self._start(n)

    # ---------------------------------------------------------------- nodes

    def _start(self, n: SimNode) -> None:
        rng = random.Random(self.rng.getrandbits(64))
        n.raft = self.node_factory(n.node_id, self.voters, n.log, n.store, rng, self.now, self.config)
        n.last_hw = 0
        n.log.dirty_from = 0

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
        self.checker.after_step(n, out)
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
        while self.now < t_end:
            t_next = min(next_append, next_fault, t_end)
            self._run_until(t_next)
            if self.now >= next_append:
                self.client_append()
                next_append = self.now + self.rng.randint(*self.params.append_every_ms)
            if self.now >= next_fault:
                self.random_fault()
                next_fault = self.now + self.rng.randint(*self.params.fault_every_ms)

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
        voters = [self.nodes[v] for v in self.voters]

        def done() -> bool:
            e = marker["entry"]
            if e is not None:
                for n in voters:
                    raft = n.raft
                    assert raft is not None
                    if (
                        raft.high_watermark <= e.offset
                        or n.log.end_offset() <= e.offset
                        or n.log.entry(e.offset) != e
                    ):
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

        while self.now < deadline:
            if self._run_until(min(deadline, self.now + 10), done):
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
