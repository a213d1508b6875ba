"""The planner's goal searches: for one goal, find a move aimed at it, or find that there is none.

:func:`find_move` looks, for goal ``g``, among the moves *aimed at* ``g`` - those that lower
``g``'s measure - for an *acceptable* one (:class:`~zurau.metadata.controller.balancer.state.SearchState`:
its first non-zero change is a decrease, and it spreads its partition over no fewer racks). The
moves aimed at each goal:

* drain: a replica on a broker to drain (of a partition that may move: FULL or DRAIN_ONLY) to a
  destination broker;
* rack: a replica of a FULL partition with a rack deficit to a destination broker on a rack the
  partition lacks;
* replica-capacity, disk-capacity: a replica of a FULL partition off a destination broker above
  the bound;
* replica-count, disk, network-in: a replica of a FULL partition from one destination broker to
  another that lowers the goal's measure (so the source is above its band or the target below);
* leader-count, network-out: the leadership of a FULL partition to an in-sync replica on a
  destination broker, lowering the goal's measure.

Whether there is such a move is decided over all of them (the search is complete: None means
none exists), which the planner's convergence rests on: the search ends when no goal has a move,
and planning again from there finds the same. *Which* move is taken when there are several is a
heuristic, chosen to be cheap: brokers are paired from the most loaded source and the least
loaded target on, and within the first pair that has acceptable moves the best of the first
:data:`SAMPLE` (by vector, then partition index and brokers) is taken, scanning the source's
partitions from the size (or rate) that would even the pair out. Drain and rack take, for the
first partition (by index) that has an acceptable move, its best one (rack: among the SAMPLE
brokers with the fewest replicas on each rack the partition lacks; any of them would do, so a
partition with a deficit always has a move).

Resource goals only look at partitions whose amount can help at all
(:meth:`~zurau.metadata.controller.balancer.state.ResourceBand.reach`), count goals only at pairs
whose counts can; a replica pair on two racks is skipped when the source has no loose partition
(none could change racks), and a pair found to have no acceptable move is remembered as such
until either broker's version changes. None of this changes the answer, only its cost.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator

from zurau.metadata.controller.balancer.state import (
    CAP,
    COUNT,
    DISK,
    DISK_LIMIT,
    DRAIN,
    FULL,
    LEADERS,
    NONE,
    NW_IN,
    NW_OUT,
    RACK,
    SCALE,
    CountBand,
    PartitionState,
    ResourceBand,
    SearchState,
    Vector,
)

__all__ = ["SAMPLE", "Move", "find_move"]

#: How many acceptable moves of a broker pair are compared before the best is taken.
SAMPLE = 8

#: A move found: (vector, partition index, source, target, leadership).
Move = tuple[Vector, int, int, int, bool]


def find_move(st: SearchState, g: int) -> Move | None:
    """An acceptable move aimed at goal ``g`` (module docstring), or None when there is none."""
    if g == DRAIN:
        return _drain(st)
    if g == RACK:
        return _rack(st)
    if g == CAP:
        return _over_bound(st, CAP, [b for b in st.dest if st.excess[CAP][b]])
    if g == DISK_LIMIT:
        return _over_bound(st, DISK_LIMIT, [b for b in st.dest if st.excess[DISK_LIMIT][b]])
    if g == COUNT:
        return _count(st, COUNT, st.count, st.count_band)
    if g == LEADERS:
        return _count(st, LEADERS, st.leaders, st.leader_band)
    if g == DISK:
        return _resource(st, DISK, st.disk, st.disk_band, st.by_size)
    if g == NW_IN:
        return _resource(st, NW_IN, st.nw_in, st.nw_in_band, st.by_in)
    return _resource(st, NW_OUT, st.nw_out, st.nw_out_band, st.led)


def _better(best: Move | None, cand: Move) -> Move:
    return cand if best is None or cand < best else best


def _best_target(st: SearchState, p: PartitionState, s: int, targets: Iterable[int], g: int) -> Move | None:
    best: Move | None = None
    for d in targets:
        if d == s or d in p.replicas:
            continue
        v = st.replica_vector(p, s, d)
        if v is not None and v[g] < 0:
            best = _better(best, (v, p.i, s, d, False))
    return best


# -- hard goals -----------------------------------------------------------------------------------


def _drain(st: SearchState) -> Move | None:
    """The first partition (by index) on a broker to drain that has an acceptable move (one to
    a destination broker that does not spread it over fewer racks: which depends only on its
    own replicas, so one without is remembered as such until it changes), its best."""
    for s in sorted(st.drain):
        if not st.count[s]:
            continue
        for i in sorted(i for _, i in st.by_size[s]):
            p = st.parts[i]
            if p.mode == NONE or st.stuck_drains.get(i) == p.replicas:
                continue
            found = _best_target(st, p, s, st.dest, DRAIN)
            if found is not None:
                return found
            st.stuck_drains[i] = list(p.replicas)
    return None


def _rack(st: SearchState) -> Move | None:
    """The first partition (by index) with a rack deficit: a replica on a rack it holds twice to
    one of the SAMPLE least-loaded (by replica count) destination brokers of each rack it lacks.
    Such a move always lowers the rack measure, so a partition with a deficit always has one."""
    rk = st.rack
    for i in st.rack_work():
        p = st.parts[i]
        racks = [rk[r] for r in p.replicas]
        sources = [r for r, k in zip(p.replicas, racks, strict=True) if racks.count(k) > 1]
        have = set(racks)
        by_rack: dict[int, list[int]] = {}
        for d in st.dest:
            if rk[d] not in have:
                by_rack.setdefault(rk[d], []).append(d)
        targets = [d for ds in by_rack.values() for d in sorted(ds, key=lambda b: (st.count[b], b))[:SAMPLE]]
        best: Move | None = None
        for s in sources:
            found = _best_target(st, p, s, targets, RACK)
            if found is not None:
                best = _better(best, found)
        if best is not None:
            return best
    return None


def _over_bound(st: SearchState, g: int, sources: list[int]) -> Move | None:
    """Replica-capacity and disk-capacity: pairs from the broker furthest above the bound to the
    targets with the most room (fewest replicas below the bound; lowest disk utilisation), the
    best of the first SAMPLE acceptable moves of the first pair that has one, scanning the
    source's partitions from the size that would even the pair's disks (disk-capacity: that
    would bring the source back under its bound) outwards."""
    sources.sort(key=lambda b: (-st.excess[g][b], b))
    if g == CAP:
        bound = st.cap or 0
        targets = sorted((b for b in st.dest if st.count[b] < bound), key=lambda b: (st.count[b], b))
    else:
        cap = st.capacity
        targets = sorted(st.dest, key=lambda b: (st.disk[b] / cap[b] if cap[b] else 0.0, b))
    for s in sources:
        for d in targets:
            if d == s or _known_dead_end(st, g, s, d):
                continue
            if g == CAP:
                found = _pair_replicas(st, g, s, d, _count_pivot(st, s, d))
            else:
                reach = _limit_reach(st, s, d)
                if reach <= 0 or (not st.measure[RACK] and _cap_change(st, s, d) > 0):
                    continue  # (no rack change below 0: the capacity change rejects every move)
                over = int(st.disk[s] - st.max_load * st.capacity[s])
                found = _pair_replicas(st, g, s, d, max(0, over), reach)
            if found is not None:
                return found
            _dead_end(st, g, s, d)
    return None


def _limit_reach(st: SearchState, s: int, d: int) -> float:
    """An upper bound of the sizes whose move s -> d can lower the disk-capacity measure: what
    ``d`` gains above its bound must stay below what ``s`` can lose (its excess), with a margin
    for the rounding; no more than ``s`` holds."""
    c = st.capacity[d]
    if not c:
        return float(st.disk[s])
    over_d = max(0.0, st.disk[d] / c - st.max_load)
    lose = st.excess[DISK_LIMIT][s] / SCALE
    return min(float(st.disk[s]), (st.max_load + over_d + lose + 4.0 / SCALE) * c - st.disk[d])


# -- soft goals -----------------------------------------------------------------------------------


def _count(st: SearchState, g: int, value: dict[int, int], band: CountBand) -> Move | None:
    """Replica count (replica moves) and leader count (leadership moves): pairs from the most
    to the fewest; a pair qualifies when the move lowers the sum of the two excesses."""
    dest = st.dest
    sources = sorted(dest, key=lambda b: (-value[b], b))
    targets = sorted(dest, key=lambda b: (value[b], b))

    def change(b: int, delta: int) -> int:
        return band.excess(value[b] + delta) - band.excess(value[b])

    first_gain = change(targets[0], 1) if targets else 0
    for s in sources:
        lose = change(s, -1)
        if lose + first_gain >= 0:
            break  # sources further on have fewer: no pair qualifies
        for d in targets:
            if lose + change(d, 1) >= 0:
                break  # targets further on have more
            if d == s:
                continue
            if _known_dead_end(st, g, s, d):
                continue
            if g == LEADERS:
                found = _pair_leadership(st, g, s, d, _need(st.nw_out_band, st.nw_out, s, d))
            else:
                found = _pair_replicas(st, g, s, d, _count_pivot(st, s, d))
            if found is not None:
                return found
            _dead_end(st, g, s, d)
    return None


def _known_dead_end(st: SearchState, g: int, s: int, d: int) -> bool:
    """Whether the pair s -> d is known to have no acceptable move aimed at ``g``: remembered
    at the brokers' current versions, or (replica moves) ``s`` and ``d`` on two racks while no
    partition on ``s`` is loose."""
    if g not in (LEADERS, NW_OUT) and st.rack[s] != st.rack[d] and not st.loose[s]:
        return True
    return st.dead_ends.get((g, s, d)) == (st.version[s], st.version[d])


def _cap_change(st: SearchState, s: int, d: int) -> int:
    """The replica-capacity change of any replica move s -> d between destination brokers."""
    return (
        st.cap_excess(st.count[s] - 1)
        - st.excess[CAP][s]
        + st.cap_excess(st.count[d] + 1)
        - st.excess[CAP][d]
    )


def _pair_prefix(st: SearchState, s: int, d: int) -> int | None:
    """For a replica move s -> d of a FULL partition (soft goals: both destinations), the sign
    of its changes before leader-count when the pair alone decides it, else None. The pair
    decides when no movable partition has a rack deficit (rack measure 0: the rack change is
    then at least 0) and ``s`` is not above its disk limit (the disk-limit change is then at
    least 0): the capacity change, or with none the count change, is then the first that can be
    negative; above 0 means no such move is acceptable, 0 that the rack and disk-limit changes
    must be 0 as well and the first change after them decides."""
    if st.measure[RACK] or st.excess[DISK_LIMIT][s]:
        return None
    cap = (
        st.cap_excess(st.count[s] - 1)
        - st.excess[CAP][s]
        + st.cap_excess(st.count[d] + 1)
        - st.excess[CAP][d]
    )
    if cap:
        return 1 if cap > 0 else -1
    band = st.count_band
    count = (
        band.excess(st.count[s] - 1)
        - st.excess[COUNT][s]
        + band.excess(st.count[d] + 1)
        - st.excess[COUNT][d]
    )
    return (count > 0) - (count < 0)


def _dead_end(st: SearchState, g: int, s: int, d: int) -> None:
    st.dead_ends[(g, s, d)] = (st.version[s], st.version[d])


def _count_pivot(st: SearchState, s: int, d: int) -> int:
    """The size of replica that keeps disk balance while counts are evened: the source's mean
    replica size, or what the pair's disks need when that is less."""
    mean = st.disk[s] // max(1, st.count[s])
    return min(mean, _need(st.disk_band, st.disk, s, d))


def _need(band: ResourceBand, value: dict[int, int], s: int, d: int) -> int:
    """How much moving from ``s`` to ``d`` would take both toward their share (0: none)."""
    unit = band.unit
    return int(max(0.0, min(value[s] - unit.get(s, 0.0), unit.get(d, 0.0) - value[d])))


def _pair_replicas(
    st: SearchState, g: int, s: int, d: int, pivot: int, reach: float | None = None
) -> Move | None:
    """The best of the first SAMPLE acceptable replica moves s -> d aimed at ``g``, scanning the
    partitions on ``s`` by size (``g`` network-in: bytes in) from ``pivot`` outwards, only those
    up to ``reach`` (None: all)."""
    entries = st.by_in[s] if g == NW_IN else st.by_size[s]
    best: Move | None = None
    n = 0
    parts = st.parts
    # For a resource goal, the goal's own change first (cheap): a move must lower it.
    band = st.disk_band if g == DISK else st.nw_in_band if g == NW_IN else None
    if band is not None:
        value = st.disk if g == DISK else st.nw_in
        vs, vd = value[s], value[d]
        base = st.excess[g][s] + st.excess[g][d]
    # Network-in, when the pair makes every change before leader-count 0: a move that does not
    # lower the leader count (a follower's, or the leader's when the pair's leader counts do
    # not drop) must not raise it nor the disk measure.
    dband = st.disk_band
    disk_check = g == NW_IN and _pair_prefix(st, s, d) == 0
    ds, dd = st.disk[s], st.disk[d]
    disk_base = st.excess[DISK][s] + st.excess[DISK][d]
    limit_base = st.excess[DISK_LIMIT][s] + st.excess[DISK_LIMIT][d]
    lband = st.leader_band
    leaders = (
        lband.excess(st.leaders[s] - 1)
        - st.excess[LEADERS][s]
        + lband.excess(st.leaders[d] + 1)
        - st.excess[LEADERS][d]
    )
    for amount, i in _outwards(entries, pivot, reach):
        p = parts[i]
        if p.mode != FULL or d in p.replicas:
            continue
        if band is not None and band.excess(s, vs - amount) + band.excess(d, vd + amount) >= base:
            continue
        if (
            g == DISK_LIMIT
            and st.limit_excess(s, ds - amount) + st.limit_excess(d, dd + amount) >= limit_base
        ):
            continue
        if disk_check and (p.leader != s or leaders >= 0):
            if p.leader == s and leaders > 0:
                continue
            if dband.excess(s, ds - p.size) + dband.excess(d, dd + p.size) > disk_base:
                continue
        v = st.replica_vector(p, s, d)
        if v is None or v[g] >= 0:
            continue
        best = _better(best, (v, i, s, d, False))
        n += 1
        if n >= SAMPLE:
            break
    return best


def _pair_leadership(
    st: SearchState, g: int, s: int, d: int, pivot: int = 0, reach: float | None = None
) -> Move | None:
    """The best of the first SAMPLE acceptable leadership moves s -> d aimed at ``g``, scanning
    the partitions ``s`` leads by bytes out from ``pivot`` outwards, up to ``reach``."""
    best: Move | None = None
    n = 0
    parts = st.parts
    for _, i in _outwards(st.led[s], pivot, reach):
        p = parts[i]
        if p.mode != FULL or d not in p.replicas or not p.in_isr(d):
            continue
        v = st.leader_vector(p, d)
        if v is None or v[g] >= 0:
            continue
        best = _better(best, (v, i, s, d, True))
        n += 1
        if n >= SAMPLE:
            break
    return best


def _resource(
    st: SearchState,
    g: int,
    value: dict[int, int],
    band: ResourceBand,
    lists: dict[int, list[tuple[int, int]]],
) -> Move | None:
    """Disk and network-in (replica moves), network-out (leadership moves): pairs from the
    highest utilisation to the lowest; a pair qualifies when the source is above its band or
    the target below, and only amounts up to the pair's reach are looked at."""
    dest = st.dest
    ratio: dict[int, float] = {b: band.ratio(b, value[b]) for b in dest}
    sources = sorted(dest, key=lambda b: (-ratio[b], b))
    targets = sorted(dest, key=lambda b: (ratio[b], b))
    pair: Callable[..., Move | None] = _pair_leadership if g == NW_OUT else _pair_replicas
    any_under = any(ratio[d] < band.lo for d in dest)
    for s in sources:
        over = ratio[s] > band.hi
        if not over and not any_under:
            break
        for d in targets:
            if not over and ratio[d] >= band.lo:
                break  # neither above nor below: the targets further on are not below either
            if d == s or _known_dead_end(st, g, s, d):
                continue
            reach = band.reach(s, value[s], d, value[d])
            # (g != NW_OUT: the pair's capacity or count change forbids any replica move s -> d)
            if reach > 0 and (g == NW_OUT or _pair_prefix(st, s, d) != 1):
                found = pair(st, g, s, d, _need(band, value, s, d), reach)
                if found is not None:
                    return found
            _dead_end(st, g, s, d)
    return None


def _outwards(entries: list[tuple[int, int]], pivot: int, reach: float | None) -> Iterator[tuple[int, int]]:
    """``entries`` (sorted by amount), nearest ``pivot`` first (ties: the smaller first): all of
    them when ``reach`` is None, else those with an amount in (0, reach]."""
    lo_end = 0 if reach is None else bisect_right(entries, (0, 1 << 62))
    hi_end = len(entries) if reach is None else bisect_right(entries, (int(reach), 1 << 62))
    if lo_end >= hi_end:
        return
    k = min(max(bisect_left(entries, (pivot, -1)), lo_end), hi_end)
    down, up = k - 1, k
    while down >= lo_end or up < hi_end:
        if up >= hi_end or (down >= lo_end and pivot - entries[down][0] <= entries[up][0] - pivot):
            yield entries[down]
            down -= 1
        else:
            yield entries[up]
            up += 1
