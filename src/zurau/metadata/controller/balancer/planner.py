"""The self-balancing planner: :func:`plan` (a pure function of a
:class:`~zurau.metadata.controller.balancer.model.ClusterModel` and
:class:`~zurau.metadata.controller.balancer.options.BalancerOptions`) and the trigger check
:func:`should_rebalance`. The goals, their order, the invariants and the move semantics are
stated in the package docstring (:mod:`zurau.metadata.controller.balancer`).

How it searches: a local search over single moves (one replica to another broker, in place in
the replica list; or the leadership to another in-sync replica). Every goal has an integer
measure (0 when met) and a move's effect is the vector of the measures' changes, hard goals
first. A move is taken only when the first change that is not zero is a decrease, and never
when it spreads its partition over fewer racks than before; so each move lowers the vector
lexicographically and the search ends. Each round takes, for the first goal (in order) that
has such a move among the moves aimed at it, the move with the smallest vector (ties: topic,
partition, brokers), until no goal has one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, floor

from zurau.metadata.controller.balancer.model import ClusterModel, PartitionModel
from zurau.metadata.controller.balancer.options import BalancerOptions, Trigger

__all__ = [
    "GOALS",
    "LeadershipMove",
    "Plan",
    "Reassignment",
    "brokers_to_drain",
    "destination_brokers",
    "plan",
    "rack_deficit",
    "should_rebalance",
]

#: The goals, in priority order: the first four are hard, the rest soft.
GOALS = (
    "drain",  # replicas on removed or dead brokers
    "rack",  # a partition's replicas over as many racks as possible
    "replica-capacity",  # at most max_replicas_per_broker replicas on a broker
    "disk-capacity",  # a broker's disk at most disk_max_load full
    "replica-count",
    "leader-count",
    "disk",
    "network-in",
    "network-out",
)
DRAIN, RACK, CAP, DISK_LIMIT, COUNT, LEADERS, DISK, NW_IN, NW_OUT = range(len(GOALS))
_HARD = 4
_SCALE = 1_000_000_000  # resource measures in billionths of the mean: integers, so sums are exact

_NONE, _DRAIN_ONLY, _FULL = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Reassignment:
    """Move ``topic``-``partition`` from ``original`` to ``replicas`` (the first is the
    preferred leader), for ``reasons`` (one per step, ``goal: from -> to``)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    original: tuple[int, ...]
    reasons: tuple[str, ...]
    size_bytes: int = 0

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.replicas if b not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.original if b not in self.replicas)


@dataclass(frozen=True, slots=True)
class LeadershipMove:
    """Make ``to_leader`` (an in-sync replica) lead: ``replicas`` is the same set reordered with
    it first, to be followed by a preferred leader election."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    from_leader: int
    to_leader: int
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do: reassignments and leadership moves (each sorted by topic and partition; a
    partition is in at most one of them), the hard-goal problems left (``unresolved``, one
    sentence each) and whether the plan stopped at ``max_moves`` (``truncated``)."""

    reassignments: tuple[Reassignment, ...] = ()
    leadership_moves: tuple[LeadershipMove, ...] = ()
    unresolved: tuple[str, ...] = ()
    truncated: bool = False

    @property
    def empty(self) -> bool:
        return not self.reassignments and not self.leadership_moves

    @property
    def bytes_to_move(self) -> int:
        """Bytes the added replicas copy."""
        return sum(r.size_bytes * len(r.adding) for r in self.reassignments)

    def estimated_seconds(self, throttle_bytes_per_second: int) -> float | None:
        """How long the copies take at the replication throttle (None: not throttled)."""
        if throttle_bytes_per_second <= 0:
            return None
        return self.bytes_to_move / throttle_bytes_per_second


# ---------------------------------------------------------------------------------------------
# Broker sets
# ---------------------------------------------------------------------------------------------


def brokers_to_drain(model: ClusterModel, options: BalancerOptions) -> frozenset[int]:
    """Brokers that must end with no replicas: those being removed, and those fenced for at
    least ``heal_broker_failure_threshold_ms`` (unless it is -1)."""
    threshold = options.heal_broker_failure_threshold_ms
    return frozenset(
        b.id
        for b in model.brokers.values()
        if b.removing or (not b.live and threshold >= 0 and b.down_ms is not None and b.down_ms >= threshold)
    )


def destination_brokers(model: ClusterModel, options: BalancerOptions) -> tuple[int, ...]:
    """The only brokers that may receive replicas or leadership: live and not to be drained."""
    drain = brokers_to_drain(model, options)
    return tuple(b.id for b in model.brokers.values() if b.live and b.id not in drain)


def _racks(model: ClusterModel, ids: tuple[int, ...] | list[int]) -> set[str | None]:
    return {model.brokers[b].rack for b in ids}


def rack_deficit(model: ClusterModel, replicas: tuple[int, ...] | list[int], dest_racks: int) -> int:
    """How many more racks ``replicas`` should span: ``min(len(replicas), dest_racks)`` minus the
    racks they span, at least 0. Brokers without a rack form one rack (as in placement)."""
    return max(0, min(len(replicas), dest_racks) - len(_racks(model, replicas)))


# ---------------------------------------------------------------------------------------------
# The search state
# ---------------------------------------------------------------------------------------------


class _P:
    """One partition during the search: the replica list keeps the leader first."""

    __slots__ = ("excluded", "i", "isr0", "leader", "m", "orig", "replicas")

    def __init__(self, i: int, m: PartitionModel, excluded: bool) -> None:
        self.i = i
        self.m = m
        self.orig = frozenset(m.replicas)
        self.isr0 = frozenset(m.isr)
        self.excluded = excluded
        self.leader = m.leader
        if m.leader in m.replicas:
            self.replicas = [m.leader, *(r for r in m.replicas if r != m.leader)]
        else:
            self.replicas = list(m.replicas)

    def in_isr(self, b: int) -> bool:
        """In the ISR once the moves so far complete: an original ISR member kept, or an added
        replica (it joined the ISR before its reassignment completed)."""
        return b in self.replicas and (b in self.isr0 or b not in self.orig)

    def isr_size(self) -> int:
        return sum(1 for b in self.replicas if self.in_isr(b))


@dataclass(frozen=True, slots=True)
class _Move:
    i: int  # partition index
    src: int
    dst: int
    leadership: bool  # True: leadership src -> dst; False: replica src -> dst


class _CountBand:
    """[floor(mean * (1 - t)), ceil(mean * (1 + t))], computed exactly."""

    def __init__(self, total: int, n: int, t: Fraction) -> None:
        mean = Fraction(total, n) if n else Fraction(0)
        self.lower = floor(mean * (1 - t))
        self.upper = ceil(mean * (1 + t))

    def excess(self, v: int) -> int:
        return max(0, v - self.upper) + max(0, self.lower - v)


class _ResourceBand:
    """[mean * (1 - t), mean * (1 + t)] of a resource, per broker relative to ``unit[b]`` (the
    mean, or the mean utilisation times the broker's capacity), in billionths."""

    def __init__(self, unit: Mapping[int, float], t: float) -> None:
        self.unit = unit
        self.lo = 1.0 - t
        self.hi = 1.0 + t

    def ratio(self, b: int, v: int) -> float:
        u = self.unit.get(b, 0.0)
        return v / u if u > 0 else 1.0

    def excess(self, b: int, v: int) -> int:
        x = self.ratio(b, v)
        return round(max(0.0, x - self.hi) * _SCALE) + round(max(0.0, self.lo - x) * _SCALE)


class _State:
    def __init__(self, model: ClusterModel, options: BalancerOptions) -> None:
        self.model = model
        self.options = options
        self.drain = brokers_to_drain(model, options)
        self.dest = destination_brokers(model, options)
        self.dest_set = frozenset(self.dest)
        self.live = frozenset(b.id for b in model.brokers.values() if b.live)
        self.dest_racks = len(_racks(model, list(self.dest)))
        self.parts = [_P(i, p, options.excluded(p.topic)) for i, p in enumerate(model.partitions)]
        ids = list(model.brokers)
        self.count = dict.fromkeys(ids, 0)
        self.leaders = dict.fromkeys(ids, 0)
        self.disk = dict.fromkeys(ids, 0)
        self.nw_in = dict.fromkeys(ids, 0)
        self.nw_out = dict.fromkeys(ids, 0)
        self.hosted: dict[int, set[int]] = {b: set() for b in ids}
        for p in self.parts:
            load = p.m.load
            for r in p.replicas:
                self.count[r] += 1
                self.disk[r] += load.size_bytes
                self.nw_in[r] += load.bytes_in_per_sec
                self.hosted[r].add(p.i)
            if p.leader in self.count:
                self.leaders[p.leader] += 1
                self.nw_out[p.leader] += load.bytes_out_per_sec
        t = options.balance_threshold
        tf = Fraction(str(t))
        n = len(self.dest)
        pool = [b for b in ids if b in self.dest_set or b in self.drain]
        self.count_band = _CountBand(sum(self.count[b] for b in pool), n, tf)
        self.leader_band = _CountBand(sum(self.leaders[b] for b in pool), n, tf)
        caps = {b: model.brokers[b].disk_capacity_bytes for b in self.dest}
        total_disk = sum(self.disk[b] for b in pool)
        if n and all(c is not None and c > 0 for c in caps.values()):
            util = total_disk / sum(c or 0 for c in caps.values())
            self.disk_band = _ResourceBand({b: util * (c or 0) for b, c in caps.items()}, t)
        else:
            self.disk_band = _ResourceBand(dict.fromkeys(self.dest, total_disk / n if n else 0.0), t)
        self.nw_in_band = _ResourceBand(
            dict.fromkeys(self.dest, sum(self.nw_in[b] for b in pool) / n if n else 0.0), t
        )
        self.nw_out_band = _ResourceBand(
            dict.fromkeys(self.dest, sum(self.nw_out[b] for b in pool) / n if n else 0.0), t
        )
        self.max_load = options.disk_max_load
        self.cap = options.max_replicas_per_broker
        # A resource goal's change smaller than the band's half-width is noise (see plan()).
        self.min_gain = round(t * _SCALE)

    # -- measures ---------------------------------------------------------------------------

    def deficit(self, replicas: list[int]) -> int:
        return rack_deficit(self.model, replicas, self.dest_racks)

    def mode(self, p: _P) -> int:
        """_FULL: any replica may move; _DRAIN_ONLY: only replicas on brokers to drain (healing
        a partition that is excluded, under min ISR, or has a replica on a broker that is down);
        _NONE: nothing moves (being reassigned, or no live leader to copy from)."""
        if p.m.reassigning or p.leader not in self.live or p.leader not in p.replicas:
            return _NONE
        healthy = not p.excluded and p.isr_size() >= p.m.min_isr and all(r in self.live for r in p.replicas)
        if healthy:
            return _FULL
        return _DRAIN_ONLY if any(r in self.drain for r in p.replicas) else _NONE

    def cap_excess(self, v: int) -> int:
        return 0 if self.cap is None else max(0, v - self.cap)

    def limit_excess(self, b: int, v: int) -> int:
        c = self.model.brokers[b].disk_capacity_bytes
        if not c:
            return 0
        return round(max(0.0, v / c - self.max_load) * _SCALE)

    def measure(self, g: int) -> int:
        if g == DRAIN:
            return sum(self.count[b] for b in self.drain)
        if g == RACK:
            return sum(self.deficit(p.replicas) for p in self.parts if self.mode(p) == _FULL)
        d = self.dest
        if g == CAP:
            return sum(self.cap_excess(self.count[b]) for b in d)
        if g == DISK_LIMIT:
            return sum(self.limit_excess(b, self.disk[b]) for b in d)
        if g == COUNT:
            return sum(self.count_band.excess(self.count[b]) for b in d)
        if g == LEADERS:
            return sum(self.leader_band.excess(self.leaders[b]) for b in d)
        if g == DISK:
            return sum(self.disk_band.excess(b, self.disk[b]) for b in d)
        if g == NW_IN:
            return sum(self.nw_in_band.excess(b, self.nw_in[b]) for b in d)
        return sum(self.nw_out_band.excess(b, self.nw_out[b]) for b in d)

    # -- a move's effect ----------------------------------------------------------------------

    def delta(self, mv: _Move) -> tuple[int, ...]:
        v = [0] * len(GOALS)
        p = self.parts[mv.i]
        load = p.m.load
        s, d = mv.src, mv.dst
        if mv.leadership:
            moves_leader = True
        else:
            if s in self.drain:
                v[DRAIN] = -1
            new = [d if r == s else r for r in p.replicas]
            v[RACK] = self.deficit(new) - self.deficit(p.replicas)
            for b, sign in ((s, -1), (d, 1)):
                if b not in self.dest_set:
                    continue
                c = self.count[b]
                v[CAP] += self.cap_excess(c + sign) - self.cap_excess(c)
                v[COUNT] += self.count_band.excess(c + sign) - self.count_band.excess(c)
                dk, dk2 = self.disk[b], self.disk[b] + sign * load.size_bytes
                v[DISK_LIMIT] += self.limit_excess(b, dk2) - self.limit_excess(b, dk)
                v[DISK] += self.disk_band.excess(b, dk2) - self.disk_band.excess(b, dk)
                ni, ni2 = self.nw_in[b], self.nw_in[b] + sign * load.bytes_in_per_sec
                v[NW_IN] += self.nw_in_band.excess(b, ni2) - self.nw_in_band.excess(b, ni)
            moves_leader = p.leader == s
        if moves_leader:
            for b, sign in ((s, -1), (d, 1)):
                if b not in self.dest_set:
                    continue
                lc = self.leaders[b]
                v[LEADERS] += self.leader_band.excess(lc + sign) - self.leader_band.excess(lc)
                no, no2 = self.nw_out[b], self.nw_out[b] + sign * load.bytes_out_per_sec
                v[NW_OUT] += self.nw_out_band.excess(b, no2) - self.nw_out_band.excess(b, no)
        for g in (DISK, NW_IN, NW_OUT):
            if abs(v[g]) < self.min_gain:
                v[g] = 0
        return tuple(v)

    # -- candidates ---------------------------------------------------------------------------

    def _replica_moves(self, sources: list[int], sinks: tuple[int, ...] | list[int]) -> Iterator[_Move]:
        for s in sorted(sources):
            for i in sorted(self.hosted[s]):
                p = self.parts[i]
                mode = self.mode(p)
                if mode == _NONE or (mode == _DRAIN_ONLY and s not in self.drain):
                    continue
                for d in sinks:
                    if d != s and d not in p.replicas:
                        yield _Move(i, s, d, False)

    def _leadership_moves(self, over: set[int], under: set[int]) -> Iterator[_Move]:
        for p in self.parts:
            if (p.leader not in over and not under.intersection(p.replicas)) or self.mode(p) != _FULL:
                continue
            for b in p.replicas:
                if b != p.leader and b in self.dest_set and p.in_isr(b):
                    if p.leader in over or b in under:
                        yield _Move(p.i, p.leader, b, True)

    def candidates(self, g: int) -> Iterator[_Move]:
        dest = self.dest
        if g == DRAIN:
            yield from self._replica_moves([b for b in self.drain if self.count[b]], dest)
        elif g == RACK:
            for p in self.parts:
                if self.mode(p) != _FULL or not self.deficit(p.replicas):
                    continue
                have = _racks(self.model, p.replicas)
                for s in p.replicas:
                    for d in dest:
                        if d not in p.replicas and self.model.brokers[d].rack not in have:
                            yield _Move(p.i, s, d, False)
        elif g == CAP:
            yield from self._replica_moves([b for b in dest if self.cap_excess(self.count[b])], dest)
        elif g == DISK_LIMIT:
            yield from self._replica_moves([b for b in dest if self.limit_excess(b, self.disk[b])], dest)
        elif g in (COUNT, DISK, NW_IN):
            over, under = self._out_of_band(g)
            yield from self._replica_moves(sorted(over), dest)
            if under:
                yield from self._replica_moves(list(dest), sorted(under))
        else:
            over, under = self._out_of_band(g)
            yield from self._leadership_moves(over, under)

    def _out_of_band(self, g: int) -> tuple[set[int], set[int]]:
        over: set[int] = set()
        under: set[int] = set()
        for b in self.dest:
            if g in (COUNT, LEADERS):
                band = self.count_band if g == COUNT else self.leader_band
                v = self.count[b] if g == COUNT else self.leaders[b]
                if v > band.upper:
                    over.add(b)
                elif v < band.lower:
                    under.add(b)
                continue
            rband, value = {
                DISK: (self.disk_band, self.disk),
                NW_IN: (self.nw_in_band, self.nw_in),
                NW_OUT: (self.nw_out_band, self.nw_out),
            }[g]
            x = rband.ratio(b, value[b])
            if x > rband.hi:
                over.add(b)
            elif x < rband.lo:
                under.add(b)
        return over, under

    def best_move(self) -> tuple[_Move, int] | None:
        """The move to take next and the goal it serves, or None when no goal has one."""
        for g in range(len(GOALS)):
            if not self.measure(g):
                continue
            best: tuple[tuple[int, ...], tuple[str, int, int, int, bool], _Move] | None = None
            for mv in self.candidates(g):
                v = self.delta(mv)
                if v[RACK] > 0 or not _improves(v):
                    continue
                p = self.parts[mv.i].m
                key = (v, (p.topic, p.partition, mv.src, mv.dst, mv.leadership), mv)
                if best is None or key[:2] < best[:2]:
                    best = key
            if best is not None:
                return best[2], next(k for k, x in enumerate(best[0]) if x)
        return None

    # -- taking a move ------------------------------------------------------------------------

    def apply(self, mv: _Move) -> None:
        p = self.parts[mv.i]
        load = p.m.load
        s, d = mv.src, mv.dst
        if mv.leadership:
            p.replicas = [d, *(r for r in p.replicas if r != d)]
        else:
            p.replicas = [d if r == s else r for r in p.replicas]
            for b, sign in ((s, -1), (d, 1)):
                self.count[b] += sign
                self.disk[b] += sign * load.size_bytes
                self.nw_in[b] += sign * load.bytes_in_per_sec
            self.hosted[s].discard(p.i)
            self.hosted[d].add(p.i)
            if p.leader != s:
                return
        p.leader = d
        for b, sign in ((s, -1), (d, 1)):
            self.leaders[b] += sign
            self.nw_out[b] += sign * load.bytes_out_per_sec

    def changed(self, p: _P) -> bool:
        return frozenset(p.replicas) != p.orig

    # -- what is left -------------------------------------------------------------------------

    def unresolved(self) -> list[str]:
        out: list[str] = []
        for p in self.parts:
            name = f"{p.m.topic}-{p.m.partition}"
            stuck = [r for r in p.replicas if r in self.drain]
            if stuck:
                why = (
                    "it is being reassigned"
                    if p.m.reassigning
                    else "it has no live leader to copy from"
                    if self.mode(p) == _NONE
                    else "no live broker can take it"
                )
                out.append(f"{name}: replicas on brokers to drain {stuck} not moved: {why}")
            elif self.mode(p) == _FULL and self.deficit(p.replicas):
                out.append(
                    f"{name}: spans {len(_racks(self.model, p.replicas))} racks, "
                    f"{self.deficit(p.replicas)} fewer than it could"
                )
        for b in self.dest:
            if self.cap_excess(self.count[b]):
                out.append(f"broker {b}: hosts {self.count[b]} replicas, more than the {self.cap} allowed")
            if self.limit_excess(b, self.disk[b]):
                cap = self.model.brokers[b].disk_capacity_bytes or 1
                out.append(
                    f"broker {b}: disk {self.disk[b] / cap:.0%} full, above disk.max.load {self.max_load:.0%}"
                )
        return out


def _improves(v: tuple[int, ...]) -> bool:
    for x in v:
        if x:
            return x < 0
    return False


def _describe(st: _State, mv: _Move, goal: int) -> str:
    what = "leader" if mv.leadership else "replica"
    note = ""
    if not mv.leadership and mv.src in st.drain:
        b = st.model.brokers[mv.src]
        note = " (broker removed)" if b.removing else " (broker dead)"
    return f"{GOALS[goal]}: {what} {mv.src} -> {mv.dst}{note}"


def plan(model: ClusterModel, options: BalancerOptions | None = None) -> Plan:
    """The plan that meets the goals (package docstring) from ``model``, with ``options``.

    Pure and deterministic: the same model and options give the same plan. Without
    ``max_moves``, planning again on :func:`~zurau.metadata.controller.balancer.model.apply_plan`
    of the result proposes nothing.
    """
    options = options or BalancerOptions()
    st = _State(model, options)
    reasons: dict[int, list[str]] = {}
    truncated = False
    guard = 20 * sum(len(p.replicas) for p in st.parts) + 1000  # never reached: each move lowers the measures
    for _ in range(guard):
        found = st.best_move()
        if found is None:
            break
        mv, goal = found
        p = st.parts[mv.i]
        if (
            options.max_moves is not None
            and not mv.leadership
            and not st.changed(p)
            and sum(1 for q in st.parts if st.changed(q)) >= options.max_moves
        ):
            truncated = True
            break
        st.apply(mv)
        reasons.setdefault(mv.i, []).append(_describe(st, mv, goal))
    else:
        truncated = True
    moves: list[Reassignment] = []
    leads: list[LeadershipMove] = []
    for p in st.parts:
        if p.i not in reasons:
            continue
        m = p.m
        if st.changed(p):
            moves.append(
                Reassignment(
                    m.topic,
                    m.partition,
                    tuple(p.replicas),
                    m.replicas,
                    tuple(reasons[p.i]),
                    m.load.size_bytes,
                )
            )
        elif p.leader != m.leader:
            leads.append(
                LeadershipMove(
                    m.topic, m.partition, tuple(p.replicas), m.leader, p.leader, tuple(reasons[p.i])
                )
            )
    return Plan(tuple(moves), tuple(leads), tuple(st.unresolved()), truncated)


def should_rebalance(model: ClusterModel, trigger: Trigger, options: BalancerOptions | None = None) -> bool:
    """Whether uneven load should start a rebalance under ``trigger``.

    * ``EMPTY_BROKER``: a destination broker (live, not being drained) hosts no replica while
      another broker hosts some.
    * ``ANY_UNEVEN_LOAD``: that, or *uneven* load: a hard goal unmet (a movable partition on
      fewer racks than it could span, a broker above the replica bound or above
      ``disk_max_load``), or a destination broker outside a soft goal's balance band: replica
      count or leader count outside [floor(mean * (1 - t)), ceil(mean * (1 + t))], disk,
      bytes in or bytes out outside mean * (1 -/+ t) (disk as utilisation when every broker's
      capacity is known), where t is ``options.balance_threshold`` (10% by default).

    Draining removed or dead brokers is not a trigger: it is :func:`brokers_to_drain`'s to say.
    """
    options = options or BalancerOptions()
    st = _State(model, options)
    if any(st.count[b] for b in st.count) and any(not st.count[b] for b in st.dest):
        return True
    if trigger is Trigger.EMPTY_BROKER:
        return False
    return any(st.measure(g) for g in range(RACK, len(GOALS)))
