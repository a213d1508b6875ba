"""The planner's search state: the cluster as the moves taken so far leave it, with every per-broker
aggregate and every goal's measure kept up to date move by move.

:class:`SearchState` is built once from a :class:`~zurau.metadata.controller.balancer.model.ClusterModel`
and :class:`~zurau.metadata.controller.balancer.options.BalancerOptions`; :meth:`SearchState.apply`
takes a move. Nothing is recomputed over the whole cluster after a move: a replica move from ``s``
to ``d`` (or a leadership move) changes the aggregates of ``s`` and ``d`` and the one partition's
state, so only those are updated.

Kept per broker (by id): replica count, leader count, disk bytes, bytes in, bytes out, each goal's
excess (0: within its bound or band), and the partitions it hosts as lists sorted by
``(size, index)`` and ``(bytes in, index)``, the partitions it leads sorted by ``(bytes out,
index)`` - the goal searches scan them (:mod:`~zurau.metadata.controller.balancer.goals`).
Also per broker: a *version*, bumped whenever the broker's aggregates change or a partition it
hosts moves (so a search result that depends only on two brokers and their partitions can be
kept until either version changes), and how many of its partitions are *loose*: could move to
a broker on another rack without spanning fewer racks (their rack is not unique among their
replicas, or they do not span every destination rack). Kept per partition: its replica list
(leader first), leader, rack deficit and *mode* (what may move; a partition's mode only changes
when it moves). Kept per goal: its measure, the sum of the
excesses (:attr:`SearchState.measure`, index by goal).

A move's effect is its *vector*: the change of every goal's measure, in goal order. Vectors are
exact integers: counts are counted, resources are in billionths of a broker's share (rounded
per broker, so a sum of changes equals the change of the sum). Everything here is deterministic:
iteration is over sorted ids and sorted lists, never over a set's order.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator, Mapping
from fractions import Fraction
from heapq import heappop, heappush
from math import ceil, floor

from zurau.metadata.controller.balancer.model import ClusterModel, PartitionModel
from zurau.metadata.controller.balancer.options import BalancerOptions

__all__ = [
    "CAP",
    "COUNT",
    "DISK",
    "DISK_LIMIT",
    "DRAIN",
    "DRAIN_ONLY",
    "FULL",
    "GOALS",
    "LEADERS",
    "NONE",
    "NW_IN",
    "NW_OUT",
    "RACK",
    "SCALE",
    "PartitionState",
    "SearchState",
    "brokers_to_drain",
    "destination_brokers",
    "rack_deficit",
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
SCALE = 1_000_000_000  # resource measures in billionths of a broker's share: integers

#: Partition modes: nothing moves; only replicas on brokers to drain move; anything moves.
NONE, DRAIN_ONLY, FULL = 0, 1, 2

Vector = tuple[int, int, int, int, int, int, int, int, int]


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


def rack_deficit(model: ClusterModel, replicas: tuple[int, ...] | list[int], dest_racks: int) -> int:
    """How many more racks ``replicas`` should span: ``min(len(replicas), dest_racks)`` minus the
    racks they span, at least 0. Brokers without a rack form one rack (as in placement)."""
    return max(0, min(len(replicas), dest_racks) - len({model.brokers[b].rack for b in replicas}))


class PartitionState:
    """One partition during the search. ``replicas`` keeps the leader first; ``size``, ``nin``,
    ``nout`` are its load (bytes, bytes in/s, bytes out/s); ``deficit`` its rack deficit and
    ``mode`` what may move (NONE, DRAIN_ONLY, FULL), both kept current by the search state."""

    __slots__ = (
        "deficit",
        "excluded",
        "i",
        "isr0",
        "leader",
        "m",
        "mode",
        "nin",
        "nout",
        "orig",
        "replicas",
        "size",
    )

    def __init__(self, i: int, m: PartitionModel, excluded: bool) -> None:
        self.i = i
        self.m = m
        self.orig = frozenset(m.replicas)
        self.isr0 = frozenset(m.isr)
        self.excluded = excluded
        self.leader = m.leader
        self.size = m.load.size_bytes
        self.nin = m.load.bytes_in_per_sec
        self.nout = m.load.bytes_out_per_sec
        if m.leader in m.replicas:
            self.replicas = [m.leader, *(r for r in m.replicas if r != m.leader)]
        else:
            self.replicas = list(m.replicas)
        self.deficit = 0
        self.mode = NONE

    def in_isr(self, b: int) -> bool:
        """In the ISR once the moves so far complete: an original ISR member kept, or an added
        replica (it joined the ISR before its reassignment completed)."""
        return b in self.replicas and (b in self.isr0 or b not in self.orig)

    def isr_size(self) -> int:
        return sum(1 for b in self.replicas if self.in_isr(b))

    def changed(self) -> bool:
        """The replica set differs from the model's (the partition is reassigned)."""
        return frozenset(self.replicas) != self.orig


class CountBand:
    """[floor(mean * (1 - t)), ceil(mean * (1 + t))], computed exactly (once, not in the search)."""

    __slots__ = ("lower", "upper")

    def __init__(self, total: int, n: int, t: Fraction) -> None:
        mean = Fraction(total, n) if n else Fraction(0)
        self.lower = floor(mean * (1 - t))
        self.upper = ceil(mean * (1 + t))

    def excess(self, v: int) -> int:
        return max(0, v - self.upper) + max(0, self.lower - v)


class ResourceBand:
    """[mean * (1 - t), mean * (1 + t)] of a resource, per broker relative to ``unit[b]`` (the
    mean, or the mean utilisation times the broker's capacity), in billionths. A broker with no
    unit (0) is always within the band."""

    __slots__ = ("hi", "lo", "unit")

    def __init__(self, unit: Mapping[int, float], t: float) -> None:
        self.unit = dict(unit)
        self.lo = 1.0 - t
        self.hi = 1.0 + t

    def ratio(self, b: int, v: int) -> float:
        u = self.unit.get(b, 0.0)
        return v / u if u > 0 else 1.0

    def excess(self, b: int, v: int) -> int:
        return _band_excess(v, self.unit.get(b, 0.0), self.lo, self.hi)

    def reach(self, s: int, vs: int, d: int, vd: int) -> float:
        """An upper bound of the amounts z > 0 whose move from ``s`` (holding ``vs``) to ``d``
        (holding ``vd``) can lower the sum of the two excesses: beyond it, what ``d`` gains above
        its band outweighs the most ``s`` and ``d`` can lose (with a margin for the rounding)."""
        us, ud = self.unit.get(s, 0.0), self.unit.get(d, 0.0)
        if ud <= 0:
            return float("inf")
        gain = 0.0  # the most the two excesses can drop, as a ratio of d's unit
        if us > 0:
            gain += max(0.0, vs / us - self.hi)
        gain += max(0.0, self.lo - vd / ud)
        over_d = max(0.0, vd / ud - self.hi)
        return (self.hi - vd / ud + over_d + gain + 4.0 / SCALE) * ud


class SearchState:
    """The cluster during the search (module docstring). Built from ``model`` and ``options``;
    :meth:`apply` takes a move, :meth:`replica_vector` / :meth:`leader_vector` give a move's
    effect (None when the move is not *acceptable*: its first non-zero change is an increase, it
    changes nothing, or it spreads the partition over fewer racks)."""

    def __init__(self, model: ClusterModel, options: BalancerOptions) -> None:
        self.model = model
        self.options = options
        self.drain = brokers_to_drain(model, options)
        self.dest = tuple(sorted(destination_brokers(model, options)))
        self.dest_set = frozenset(self.dest)
        self.live = frozenset(b.id for b in model.brokers.values() if b.live)
        # Racks as small integers (None is a rack of its own, as in placement).
        rack_ids: dict[str | None, int] = {}
        self.rack = {b.id: rack_ids.setdefault(b.rack, len(rack_ids)) for b in model.brokers.values()}
        self.dest_rack_set = frozenset(self.rack[b] for b in self.dest)
        self.dest_racks = len(self.dest_rack_set)
        self.parts = [PartitionState(i, p, options.excluded(p.topic)) for i, p in enumerate(model.partitions)]
        ids = sorted(model.brokers)
        self.ids = ids
        self.count = dict.fromkeys(ids, 0)
        self.leaders = dict.fromkeys(ids, 0)
        self.disk = dict.fromkeys(ids, 0)
        self.nw_in = dict.fromkeys(ids, 0)
        self.nw_out = dict.fromkeys(ids, 0)
        self.by_size: dict[int, list[tuple[int, int]]] = {b: [] for b in ids}
        self.by_in: dict[int, list[tuple[int, int]]] = {b: [] for b in ids}
        self.led: dict[int, list[tuple[int, int]]] = {b: [] for b in ids}
        self.version = dict.fromkeys(ids, 0)
        self.loose = dict.fromkeys(ids, 0)
        for p in self.parts:
            for r in p.replicas:
                self.count[r] += 1
                self.disk[r] += p.size
                self.nw_in[r] += p.nin
                self.by_size[r].append((p.size, p.i))
                self.by_in[r].append((p.nin, p.i))
            if p.leader in self.count:
                self.leaders[p.leader] += 1
                self.nw_out[p.leader] += p.nout
                self.led[p.leader].append((p.nout, p.i))
        for lists in (self.by_size, self.by_in, self.led):
            for entries in lists.values():
                entries.sort()
        t = options.balance_threshold
        tf = Fraction(str(t))
        # A resource goal's gain smaller than the band's half-width is noise (package docstring).
        self.min_gain = round(t * SCALE)
        n = len(self.dest)
        pool = [b for b in ids if b in self.dest_set or b in self.drain]
        self.count_band = CountBand(sum(self.count[b] for b in pool), n, tf)
        self.leader_band = CountBand(sum(self.leaders[b] for b in pool), n, tf)
        caps = {b: model.brokers[b].disk_capacity_bytes for b in self.dest}
        total_disk = sum(self.disk[b] for b in pool)
        if n and all(c is not None and c > 0 for c in caps.values()):
            util = total_disk / sum(c or 0 for c in caps.values())
            self.disk_band = ResourceBand({b: util * (c or 0) for b, c in caps.items()}, t)
        else:
            self.disk_band = ResourceBand(dict.fromkeys(self.dest, total_disk / n if n else 0.0), t)
        self.nw_in_band = ResourceBand(
            dict.fromkeys(self.dest, sum(self.nw_in[b] for b in pool) / n if n else 0.0), t
        )
        self.nw_out_band = ResourceBand(
            dict.fromkeys(self.dest, sum(self.nw_out[b] for b in pool) / n if n else 0.0), t
        )
        self.max_load = options.disk_max_load
        self.cap = options.max_replicas_per_broker
        self.capacity = {b: model.brokers[b].disk_capacity_bytes or 0 for b in ids}
        # Measures and the partitions with a rack deficit (movable ones: the rack goal's work).
        self.rack_bad: set[int] = set()
        self._rack_heap: list[int] = []
        self.measure = [0] * len(GOALS)
        self.changed_count = 0
        #: The goal searches' memory of broker pairs without an acceptable move:
        #: (goal, source, target) -> the two brokers' versions then.
        self.dead_ends: dict[tuple[int, int, int], tuple[int, int]] = {}
        #: The drain search's memory of partitions without a move: index -> their replicas then.
        self.stuck_drains: dict[int, list[int]] = {}
        for p in self.parts:
            self._refresh(p, 1)
            self._count_loose(p, 1)
        self.measure[DRAIN] = sum(self.count[b] for b in self.drain)
        self.excess: list[dict[int, int]] = [{} for _ in GOALS]
        for b in self.dest:
            self._set_excess(b)

    # -- per-partition and per-broker bookkeeping ----------------------------------------------

    def deficit(self, replicas: list[int] | tuple[int, ...]) -> int:
        rack = self.rack
        return max(0, min(len(replicas), self.dest_racks) - len({rack[b] for b in replicas}))

    def _mode(self, p: PartitionState) -> int:
        """FULL: any replica may move; DRAIN_ONLY: only replicas on brokers to drain (healing a
        partition that is excluded, under min ISR, or has a replica on a broker that is down);
        NONE: nothing moves (being reassigned, or no live leader to copy from)."""
        if p.m.reassigning or p.leader not in self.live or p.leader not in p.replicas:
            return NONE
        live = self.live
        if not p.excluded and p.isr_size() >= p.m.min_isr and all(r in live for r in p.replicas):
            return FULL
        return DRAIN_ONLY if any(r in self.drain for r in p.replicas) else NONE

    def _refresh(self, p: PartitionState, sign: int) -> None:
        """Recompute ``p``'s mode and deficit (``sign`` 1) after it changed, having taken its old
        contribution to the rack measure out (``sign`` -1 does only that)."""
        if sign < 0:
            if p.mode == FULL:
                self.measure[RACK] -= p.deficit
            self.rack_bad.discard(p.i)
            return
        p.mode = self._mode(p)
        p.deficit = self.deficit(p.replicas)
        if p.mode == FULL and p.deficit:
            self.measure[RACK] += p.deficit
            self.rack_bad.add(p.i)
            heappush(self._rack_heap, p.i)

    def is_loose(self, p: PartitionState, b: int) -> bool:
        """Whether ``p``'s replica on ``b`` could move to a destination broker on another rack
        without its rack deficit growing: ``b``'s rack is not unique among ``p``'s replicas, or
        ``p`` lacks a destination rack, or it spans more racks than it needs."""
        rk = self.rack
        racks = [rk[r] for r in p.replicas]
        have = set(racks)
        if racks.count(rk[b]) > 1 or not self.dest_rack_set <= have:
            return True
        return len(have) - 1 >= min(len(racks), self.dest_racks)

    def _count_loose(self, p: PartitionState, sign: int) -> None:
        rk = self.rack
        racks = [rk[r] for r in p.replicas]
        have = set(racks)
        if len(have) == len(racks) and self.dest_rack_set <= have and len(have) <= self.dest_racks:
            return  # one replica a rack, every destination rack: none is loose (is_loose)
        for b in p.replicas:
            if self.is_loose(p, b):
                self.loose[b] += sign

    def rack_work(self) -> Iterator[int]:
        """The movable partitions with a rack deficit, by index (the first from a heap: the
        rest are sorted only if the caller goes on)."""
        heap = self._rack_heap
        while heap and heap[0] not in self.rack_bad:
            heappop(heap)
        if not heap:
            return
        first = heap[0]
        yield first
        yield from (i for i in sorted(self.rack_bad) if i != first)

    def _set_excess(self, b: int) -> None:
        """Recompute destination broker ``b``'s excess on every per-broker goal, and the measures."""
        values = (
            (CAP, self.cap_excess(self.count[b])),
            (DISK_LIMIT, self.limit_excess(b, self.disk[b])),
            (COUNT, self.count_band.excess(self.count[b])),
            (LEADERS, self.leader_band.excess(self.leaders[b])),
            (DISK, self.disk_band.excess(b, self.disk[b])),
            (NW_IN, self.nw_in_band.excess(b, self.nw_in[b])),
            (NW_OUT, self.nw_out_band.excess(b, self.nw_out[b])),
        )
        for g, x in values:
            self.measure[g] += x - self.excess[g].get(b, 0)
            self.excess[g][b] = x

    def cap_excess(self, v: int) -> int:
        return 0 if self.cap is None else max(0, v - self.cap)

    def limit_excess(self, b: int, v: int) -> int:
        c = self.capacity[b]
        if not c:
            return 0
        return max(0, round((v / c - self.max_load) * SCALE))

    # -- a move's effect -----------------------------------------------------------------------

    def replica_vector(self, p: PartitionState, s: int, d: int) -> Vector | None:
        """The vector of moving ``p``'s replica on ``s`` to ``d`` (``d`` not a replica), or None
        when that move is not acceptable (class docstring)."""
        reps = p.replicas
        rack = 0
        if len(reps) > 1:
            rk = self.rack
            racks = {rk[r] for r in reps if r != s}
            racks.add(rk[d])
            rack = max(0, min(len(reps), self.dest_racks) - len(racks)) - p.deficit
            if rack > 0:
                return None
        drain = -1 if s in self.drain else 0
        ex = self.excess
        dest = self.dest_set
        size = p.size
        bound = self.cap
        cband = self.count_band
        clo, cup = cband.lower, cband.upper
        cap = limit = count = 0
        ends = ((s, -1), (d, 1))
        for b, sign in ends:
            if b not in dest:
                continue
            c = self.count[b] + sign
            if bound is not None:
                cap += max(0, c - bound) - ex[CAP][b]
            count += max(0, c - cup) + max(0, clo - c) - ex[COUNT][b]
            capacity = self.capacity[b]
            if size and capacity:
                limit += max(0, round(((self.disk[b] + sign * size) / capacity - self.max_load) * SCALE))
                limit -= ex[DISK_LIMIT][b]
        # Rejected as soon as the first change that is not zero is an increase.
        for x in (drain, rack, cap, limit, count):
            if x:
                if x > 0:
                    return None
                break
        moves_leader = p.leader == s
        leaders = disk = nin = nout = 0
        if moves_leader:
            lband = self.leader_band
            for b, sign in ends:
                if b in dest:
                    lc = self.leaders[b] + sign
                    leaders += max(0, lc - lband.upper) + max(0, lband.lower - lc) - ex[LEADERS][b]
        if size:
            band = self.disk_band
            for b, sign in ends:
                if b in dest:
                    disk += _band_excess(self.disk[b] + sign * size, band.unit.get(b, 0.0), band.lo, band.hi)
                    disk -= ex[DISK][b]
        if p.nin:
            band = self.nw_in_band
            for b, sign in ends:
                if b in dest:
                    nin += _band_excess(self.nw_in[b] + sign * p.nin, band.unit.get(b, 0.0), band.lo, band.hi)
                    nin -= ex[NW_IN][b]
        if moves_leader and p.nout:
            band = self.nw_out_band
            for b, sign in ends:
                if b in dest:
                    nout += _band_excess(
                        self.nw_out[b] + sign * p.nout, band.unit.get(b, 0.0), band.lo, band.hi
                    )
                    nout -= ex[NW_OUT][b]
        gain = self.min_gain  # a small gain is none (a small loss stays a loss)
        if -gain < disk < 0:
            disk = 0
        if -gain < nin < 0:
            nin = 0
        if -gain < nout < 0:
            nout = 0
        vec = (drain, rack, cap, limit, count, leaders, disk, nin, nout)
        for x in vec:
            if x:
                return vec if x < 0 else None
        return None

    def leader_vector(self, p: PartitionState, d: int) -> Vector | None:
        """The vector of making ``d`` (an in-sync replica of ``p``) lead instead of its leader, or
        None when not acceptable."""
        s = p.leader
        dest = self.dest_set
        leaders = nout = 0
        if s in dest:
            leaders = self.leader_band.excess(self.leaders[s] - 1) - self.excess[LEADERS][s]
            if p.nout:
                nout = self.nw_out_band.excess(s, self.nw_out[s] - p.nout) - self.excess[NW_OUT][s]
        if d in dest:
            leaders += self.leader_band.excess(self.leaders[d] + 1) - self.excess[LEADERS][d]
            if p.nout:
                nout += self.nw_out_band.excess(d, self.nw_out[d] + p.nout) - self.excess[NW_OUT][d]
        if -self.min_gain < nout < 0:
            nout = 0
        if leaders > 0 or (leaders == 0 and nout >= 0):
            return None
        return (0, 0, 0, 0, 0, leaders, 0, 0, nout)

    # -- taking a move -------------------------------------------------------------------------

    def apply(self, i: int, s: int, d: int, leadership: bool) -> None:
        """Take a move of partition ``i``: its leadership from ``s`` to ``d`` (``leadership``), or
        its replica on ``s`` to ``d`` (in place in the replica list; the leader's replica takes
        the leadership along)."""
        p = self.parts[i]
        was_changed = p.changed()
        self._refresh(p, -1)
        self._count_loose(p, -1)
        if leadership:
            p.replicas = [d, *(r for r in p.replicas if r != d)]
        else:
            p.replicas = [d if r == s else r for r in p.replicas]
            for b, sign in ((s, -1), (d, 1)):
                self.count[b] += sign
                self.disk[b] += sign * p.size
                self.nw_in[b] += sign * p.nin
            _remove(self.by_size[s], (p.size, i))
            insort(self.by_size[d], (p.size, i))
            _remove(self.by_in[s], (p.nin, i))
            insort(self.by_in[d], (p.nin, i))
            if s in self.drain:
                self.measure[DRAIN] -= 1
            if d in self.drain:
                self.measure[DRAIN] += 1
        if leadership or p.leader == s:
            p.leader = d
            for b, sign in ((s, -1), (d, 1)):
                self.leaders[b] += sign
                self.nw_out[b] += sign * p.nout
            _remove(self.led[s], (p.nout, i))
            insort(self.led[d], (p.nout, i))
        self._refresh(p, 1)
        self._count_loose(p, 1)
        self.changed_count += int(p.changed()) - int(was_changed)
        for b in {s, d, *p.replicas}:
            self.version[b] += 1
        for b in (s, d):
            if b in self.dest_set:
                self._set_excess(b)


def _band_excess(v: int, unit: float, lo: float, hi: float) -> int:
    """:meth:`ResourceBand.excess` of ``v`` against ``unit``, without the method call."""
    if unit <= 0:
        return 0
    x = v / unit
    if x > hi:
        return round((x - hi) * SCALE)
    if x < lo:
        return round((lo - x) * SCALE)
    return 0


def _remove(entries: list[tuple[int, int]], entry: tuple[int, int]) -> None:
    k = bisect_left(entries, entry)
    if k < len(entries) and entries[k] == entry:
        del entries[k]
