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
lexicographically and the search ends. Each round takes a move aimed at the first goal (in
order) that has one (:func:`~zurau.metadata.controller.balancer.goals.find_move`: which move,
among several, is a cheap heuristic; whether there is one is decided exactly), until no goal
has one. The state (:class:`~zurau.metadata.controller.balancer.state.SearchState`) keeps every
aggregate and measure up to date move by move, so a round costs about the moves it looks at,
not the size of the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from zurau.metadata.controller.balancer.goals import find_move
from zurau.metadata.controller.balancer.model import ClusterModel
from zurau.metadata.controller.balancer.options import BalancerOptions, Trigger
from zurau.metadata.controller.balancer.state import (
    FULL as _FULL,
)
from zurau.metadata.controller.balancer.state import (
    GOALS,
    RACK,
    SearchState,
    brokers_to_drain,
    destination_brokers,
    rack_deficit,
)
from zurau.metadata.controller.balancer.state import (
    NONE as _NONE,
)

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


def _describe(st: SearchState, s: int, d: int, leadership: bool, goal: int) -> str:
    what = "leader" if leadership else "replica"
    note = ""
    if not leadership and s in st.drain:
        b = st.model.brokers[s]
        note = " (broker removed)" if b.removing else " (broker dead)"
    return f"{GOALS[goal]}: {what} {s} -> {d}{note}"


def _next_move(st: SearchState) -> tuple[int, int, int, bool, int] | None:
    """(partition index, source, target, leadership, goal served) of the next move, or None."""
    for g in range(len(GOALS)):
        if not st.measure[g]:
            continue
        found = find_move(st, g)
        if found is not None:
            v, i, s, d, leadership = found
            return i, s, d, leadership, next(k for k, x in enumerate(v) if x)
    return None


def _unresolved(st: SearchState) -> list[str]:
    """The hard-goal problems the plan leaves, one sentence each."""
    out: list[str] = []
    for p in st.parts:
        name = f"{p.m.topic}-{p.m.partition}"
        stuck = [r for r in p.replicas if r in st.drain]
        if stuck:
            why = (
                "it is being reassigned"
                if p.m.reassigning
                else "it has no live leader to copy from"
                if p.mode == _NONE
                else "no live broker can take it"
            )
            out.append(f"{name}: replicas on brokers to drain {stuck} not moved: {why}")
        elif p.mode == _FULL and p.deficit:
            racks = len({st.model.brokers[b].rack for b in p.replicas})
            out.append(f"{name}: spans {racks} racks, {p.deficit} fewer than it could")
    for b in st.dest:
        if st.cap_excess(st.count[b]):
            out.append(f"broker {b}: hosts {st.count[b]} replicas, more than the {st.cap} allowed")
        if st.limit_excess(b, st.disk[b]):
            cap = st.model.brokers[b].disk_capacity_bytes or 1
            out.append(f"broker {b}: disk {st.disk[b] / cap:.0%} full, above disk.max.load {st.max_load:.0%}")
    return out


def plan(model: ClusterModel, options: BalancerOptions | None = None) -> Plan:
    """The plan that meets the goals (package docstring) from ``model``, with ``options``.

    Pure and deterministic: the same model and options give the same plan. Without
    ``max_moves``, planning again on :func:`~zurau.metadata.controller.balancer.model.apply_plan`
    of the result proposes nothing.
    """
    options = options or BalancerOptions()
    st = SearchState(model, options)
    reasons: dict[int, list[str]] = {}
    truncated = False
    guard = 20 * sum(len(p.replicas) for p in st.parts) + 1000  # never reached: each move lowers the measures
    for _ in range(guard):
        found = _next_move(st)
        if found is None:
            break
        i, s, d, leadership, goal = found
        p = st.parts[i]
        if (
            options.max_moves is not None
            and not leadership
            and not p.changed()
            and st.changed_count >= options.max_moves
        ):
            truncated = True
            break
        st.apply(i, s, d, leadership)
        reasons.setdefault(i, []).append(_describe(st, s, d, leadership, goal))
    else:
        truncated = True
    moves: list[Reassignment] = []
    leads: list[LeadershipMove] = []
    for p in st.parts:
        if p.i not in reasons:
            continue
        m = p.m
        if p.changed():
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
    return Plan(tuple(moves), tuple(leads), tuple(_unresolved(st)), truncated)


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
    st = SearchState(model, options)
    if any(st.count[b] for b in st.count) and any(not st.count[b] for b in st.dest):
        return True
    if trigger is Trigger.EMPTY_BROKER:
        return False
    return any(st.measure[g] for g in range(RACK, len(GOALS)))
