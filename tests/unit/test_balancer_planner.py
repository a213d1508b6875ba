"""The self-balancing planner (zurau.metadata.controller.balancer): properties on random
clusters (hypothesis) and the obvious cases by example.

Properties: every proposed replica list has the replication factor, distinct brokers, adds only
destination brokers and spans no fewer racks; removed and dead brokers are emptied; the plan is
deterministic; planning again after applying it proposes nothing; an empty broker joining a
balanced cluster gets a share within the replica-count band; ``max_moves`` bounds the plan;
once a plan is applied no goal has a move left (checked by brute force over every single move,
so the searches' shortcuts never hide one), also with replica and disk bounds that bind; the
goals' measures never get worse (hard goals first).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from math import floor

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zurau.metadata.controller.balancer import (
    BalancerOptions,
    BrokerModel,
    ClusterModel,
    LoadModel,
    PartitionLoad,
    PartitionModel,
    Trigger,
    apply_plan,
    brokers_to_drain,
    cluster_model,
    destination_brokers,
    plan,
    rack_deficit,
    should_rebalance,
)
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
    SearchState,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    BrokerEndpoint,
    ConfigRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

FAST = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------------
# Random clusters
# ---------------------------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn, *, racks: bool = True, with_drain: bool = True) -> ClusterModel:
    """A cluster of 3-7 brokers (some removed or dead when ``with_drain``), 1-4 topics of 1-8
    partitions, RF at most the destination brokers, healthy partitions (ISR = live replicas)."""
    n = draw(st.integers(3, 7))
    rack_count = draw(st.integers(1, 3)) if racks else 0
    ids = list(range(1, n + 1))
    brokers = []
    for b in ids:
        rack = f"r{draw(st.integers(0, rack_count - 1))}" if rack_count else None
        brokers.append(BrokerModel(b, rack, disk_capacity_bytes=10**12))
    if with_drain:
        # At most two brokers to drain, leaving at least 2 destinations.
        for b in draw(st.lists(st.sampled_from(ids), max_size=min(2, n - 2), unique=True)):
            i = b - 1
            if draw(st.booleans()):
                brokers[i] = replace(brokers[i], removing=True)
            else:
                brokers[i] = replace(brokers[i], live=False, down_ms=draw(st.sampled_from([10, 3_600_000])))
    live = [b.id for b in brokers if b.live]
    dest = [b.id for b in brokers if b.live and not b.removing]
    partitions = []
    for t in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, len(dest)))
        for p in range(draw(st.integers(1, 8))):
            replicas = tuple(draw(st.permutations(ids))[:rf])
            if not any(r in live for r in replicas):
                replicas = (draw(st.sampled_from(live)), *replicas[1:])
            isr = tuple(r for r in replicas if r in live)
            leader = isr[0]
            load = PartitionLoad(
                draw(st.integers(0, 10**9)), draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
            )
            partitions.append(
                PartitionModel(f"t{t}", p, replicas, isr, leader, draw(st.integers(1, rf)), load=load)
            )
    return ClusterModel.of(brokers, partitions)


def _options(**kw: object) -> BalancerOptions:
    return BalancerOptions(**kw)  # type: ignore[arg-type]


def _dest_racks(model: ClusterModel, options: BalancerOptions) -> int:
    return len({model.brokers[b].rack for b in destination_brokers(model, options)})


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------


@FAST
@given(clusters())
def test_proposed_replica_sets_are_valid_and_never_worse_on_racks(model: ClusterModel) -> None:
    options = BalancerOptions()
    result = plan(model, options)
    dest = set(destination_brokers(model, options))
    racks = _dest_racks(model, options)
    by_key = {p.key: p for p in model.partitions}
    for r in result.reassignments:
        before = by_key[(r.topic, r.partition)]
        assert len(r.replicas) == len(before.replicas) == len(set(r.replicas))
        assert set(r.adding) <= dest, r
        assert rack_deficit(model, r.replicas, racks) <= rack_deficit(model, before.replicas, racks)
        assert r.replicas[0] in dest  # the preferred leader is a live destination broker
    for m in result.leadership_moves:
        before = by_key[(m.topic, m.partition)]
        assert set(m.replicas) == set(before.replicas) and m.replicas[0] == m.to_leader
        assert m.to_leader in dest and m.to_leader in before.isr
    keys = [(r.topic, r.partition) for r in result.reassignments] + [
        (m.topic, m.partition) for m in result.leadership_moves
    ]
    assert len(keys) == len(set(keys))


@FAST
@given(clusters())
def test_removed_and_dead_brokers_are_emptied_and_racks_fixed(model: ClusterModel) -> None:
    options = BalancerOptions()
    after = apply_plan(model, plan(model, options))
    drain = brokers_to_drain(model, options)
    for b in drain:
        assert after.replicas_on(b) == 0, b
    racks = _dest_racks(model, options)
    for p in after.partitions:
        # A healthy partition (all replicas live, ISR at least min ISR) is as spread over racks as
        # the destinations allow; one with a replica on a broker that is down waits for it.
        if all(model.brokers[r].live for r in p.replicas) and len(p.isr) >= p.min_isr:
            assert rack_deficit(model, p.replicas, racks) == 0, p


@FAST
@given(clusters())
def test_plan_is_deterministic_and_converges(model: ClusterModel) -> None:
    options = BalancerOptions()
    first = plan(model, options)
    assert plan(model, options) == first
    again = plan(apply_plan(model, first), options)
    assert again.empty, again
    assert not first.truncated


@FAST
@given(clusters(racks=False, with_drain=False), st.integers(0, 9))
def test_empty_broker_joining_a_balanced_cluster_gets_its_share(model: ClusterModel, seed: int) -> None:
    options = BalancerOptions()
    balanced = apply_plan(model, plan(model, options))
    new_id = max(balanced.brokers) + 1
    joined = ClusterModel.of(
        [*balanced.brokers.values(), BrokerModel(new_id, None, disk_capacity_bytes=10**12)],
        balanced.partitions,
    )
    assert should_rebalance(joined, Trigger.EMPTY_BROKER, options) == (
        sum(len(p.replicas) for p in joined.partitions) > 0
    )
    after = apply_plan(joined, plan(joined, options))
    total = sum(len(p.replicas) for p in after.partitions)
    mean = total / len(after.brokers)
    got = after.replicas_on(new_id)
    assert floor(mean * 0.9) <= got <= mean * 1.1 + 1, (got, mean)


@FAST
@given(clusters(), st.integers(1, 3))
def test_max_moves_bounds_the_plan(model: ClusterModel, bound: int) -> None:
    result = plan(model, BalancerOptions(max_moves=bound))
    assert len(result.reassignments) <= bound
    if not result.truncated:  # the same search, which never reached the bound
        assert result == plan(model, BalancerOptions())


@FAST
@given(clusters(with_drain=False))
def test_excluded_topics_never_move_unless_drained(model: ClusterModel) -> None:
    topics = sorted({p.topic for p in model.partitions})
    options = BalancerOptions(exclude_topic_names=frozenset(topics[:1]), exclude_topic_prefixes=("t1",))
    result = plan(model, options)
    for r in result.reassignments:
        assert not options.excluded(r.topic)
    for m in result.leadership_moves:
        assert not options.excluded(m.topic)


# ---------------------------------------------------------------------------------------------
# Examples
# ---------------------------------------------------------------------------------------------


def _cluster(
    brokers: dict[int, str | None],
    assignment: dict[str, list[tuple[int, ...]]],
    **broker_kw: dict[int, object],
) -> ClusterModel:
    bs = []
    for b, rack in brokers.items():
        extra = {k: v[b] for k, v in broker_kw.items() if b in v}
        bs.append(BrokerModel(b, rack, **extra))  # type: ignore[arg-type]
    parts = [
        PartitionModel(t, i, reps, reps, reps[0], load=PartitionLoad(1000, 10, 10))
        for t, lists in assignment.items()
        for i, reps in enumerate(lists)
    ]
    return ClusterModel.of(bs, parts)


def test_a_balanced_cluster_gets_an_empty_plan() -> None:
    model = _cluster({1: None, 2: None, 3: None}, {"t": [(1, 2), (2, 3), (3, 1)]})
    result = plan(model)
    assert result.empty and not result.unresolved
    assert not should_rebalance(model, Trigger.ANY_UNEVEN_LOAD)


def test_a_removed_broker_is_drained_even_for_excluded_topics() -> None:
    model = _cluster(
        {1: None, 2: None, 3: None, 4: None}, {"t": [(1, 2), (2, 3), (3, 1), (1, 3)]}, removing={1: True}
    )
    options = BalancerOptions(exclude_topic_names=frozenset({"t"}))
    result = plan(model, options)
    after = apply_plan(model, result)
    assert after.replicas_on(1) == 0
    # Only the replicas on broker 1 moved: the excluded topic is not balanced otherwise.
    for r in result.reassignments:
        assert r.removing == (1,)
        assert all("broker removed" in why for why in r.reasons)


def test_a_dead_broker_is_drained_only_past_the_failure_threshold() -> None:
    base = _cluster({1: None, 2: None, 3: None, 4: None}, {"t": [(1, 2), (2, 3), (3, 1)]})
    for down_ms, drained in ((1000, False), (3_600_000, True)):
        brokers = [replace(b, live=False, down_ms=down_ms) if b.id == 1 else b for b in base.brokers.values()]
        # KRaft took broker 1 out of the ISRs and elected other leaders.
        parts = []
        for p in base.partitions:
            isr = tuple(r for r in p.replicas if r != 1)
            parts.append(replace(p, isr=isr, leader=isr[0]))
        model = ClusterModel.of(brokers, parts)
        after = apply_plan(model, plan(model))
        assert (after.replicas_on(1) == 0) is drained
        assert after.replicas_on(1) in (0, 2)
    # -1 never drains.
    model = ClusterModel.of(
        [replace(b, live=False, down_ms=10**9) if b.id == 1 else b for b in base.brokers.values()],
        base.partitions,
    )
    assert brokers_to_drain(model, BalancerOptions(heal_broker_failure_threshold_ms=-1)) == frozenset()


def test_rack_awareness_is_fixed_first() -> None:
    model = _cluster({1: "a", 2: "a", 3: "b", 4: "b"}, {"t": [(1, 2), (3, 4)]})
    result = plan(model)
    after = apply_plan(model, result)
    for p in after.partitions:
        assert len({model.brokers[b].rack for b in p.replicas}) == 2
    assert all(r.reasons[0].startswith("rack:") for r in result.reassignments)


def test_replica_capacity_and_disk_limit_move_replicas_off() -> None:
    model = _cluster(
        {1: None, 2: None, 3: None},
        {"t": [(1,), (1,), (1,), (2,)]},
        disk_capacity_bytes={1: 10_000, 2: 10_000, 3: 10_000},
    )
    after = apply_plan(model, plan(model, BalancerOptions(max_replicas_per_broker=2)))
    assert all(after.replicas_on(b) <= 2 for b in (1, 2, 3))
    # 3000 bytes on a 3200-byte disk is above 85%: one replica moves off.
    small = ClusterModel.of(
        [replace(b, disk_capacity_bytes=3200 if b.id == 1 else 10**6) for b in model.brokers.values()],
        model.partitions,
    )
    result = plan(small)
    assert result.reassignments[0].reasons[0].startswith("disk-capacity: replica 1 -> ")
    assert apply_plan(small, result).replicas_on(1) <= 2


def test_leadership_moves_balance_leaders_without_moving_data() -> None:
    model = _cluster({1: None, 2: None}, {"t": [(1, 2), (1, 2), (1, 2), (1, 2)]})
    result = plan(model)
    assert not result.reassignments
    assert len(result.leadership_moves) == 2
    assert all(m.to_leader == 2 and m.replicas == (2, 1) for m in result.leadership_moves)


def test_partition_under_min_isr_or_reassigning_is_left_alone() -> None:
    model = _cluster({1: None, 2: None, 3: None, 4: None}, {"t": [(1, 2), (1, 2), (1, 2)]})
    parts = [
        replace(model.partitions[0], isr=(1,), min_isr=2),  # under min ISR
        replace(model.partitions[1], reassigning=True),
        model.partitions[2],
    ]
    result = plan(ClusterModel.of(model.brokers.values(), parts))
    assert {r.partition for r in result.reassignments} <= {2}


def test_a_partition_under_min_isr_is_healed_off_a_removed_broker() -> None:
    model = _cluster({1: None, 2: None, 3: None}, {"t": [(1, 2)]}, removing={2: True})
    model = ClusterModel.of(model.brokers.values(), [replace(model.partitions[0], isr=(1,), min_isr=2)])
    result = plan(model)
    assert [r.replicas for r in result.reassignments] == [(1, 3)]


def test_unmovable_drain_is_reported() -> None:
    model = _cluster({1: None, 2: None}, {"t": [(1, 2)]}, removing={2: True})
    model = ClusterModel.of(model.brokers.values(), [replace(model.partitions[0], reassigning=True)])
    result = plan(model)
    assert result.empty and "being reassigned" in result.unresolved[0]


def test_max_moves_plans_drains_first() -> None:
    model = _cluster(
        {1: None, 2: None, 3: None, 4: None},
        {"t": [(1, 2), (1, 2), (1, 2), (1, 2), (3, 4)]},
        removing={4: True},
    )
    result = plan(model, BalancerOptions(max_moves=1))
    assert result.truncated and len(result.reassignments) == 1
    assert result.reassignments[0].removing == (4,)


def test_should_rebalance_triggers() -> None:
    balanced = _cluster({1: None, 2: None}, {"t": [(1,), (2,)]})
    assert not should_rebalance(balanced, Trigger.EMPTY_BROKER)
    assert not should_rebalance(balanced, Trigger.ANY_UNEVEN_LOAD)
    uneven = _cluster({1: None, 2: None}, {"t": [(1,), (1,), (1,), (2,)]})
    assert not should_rebalance(uneven, Trigger.EMPTY_BROKER)
    assert should_rebalance(uneven, Trigger.ANY_UNEVEN_LOAD)
    empty = _cluster({1: None, 2: None, 3: None}, {"t": [(1,), (2,)]})
    assert should_rebalance(empty, Trigger.EMPTY_BROKER)
    assert should_rebalance(empty, Trigger.ANY_UNEVEN_LOAD)


def test_cluster_model_from_the_metadata_image() -> None:
    topic_id = uuid.uuid4()
    records = [
        RegisterBrokerRecord(
            broker_id=b,
            incarnation_id=uuid.uuid4(),
            broker_epoch=b,
            endpoints=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + b, 0),),
            rack=f"r{b % 2}",
        )
        for b in (1, 2, 3)
    ]
    records += [UnfenceBrokerRecord(broker_id=b, epoch=b) for b in (1, 2)]
    records += [
        TopicRecord(name="t", topic_id=topic_id),
        ConfigRecord(resource_type=2, resource_name="t", name="min.insync.replicas", value="2"),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=(1, 2), isr=(1, 2), leader=1),
        PartitionRecord(partition_id=1, topic_id=topic_id, replicas=(2, 3), isr=(2,), leader=2),
    ]
    image = MetadataImage("c").apply(records, last_offset=len(records) - 1)
    load = LoadModel({1: 100, 2: 200}, {("t", 0): PartitionLoad(5, 6, 7)})
    model = cluster_model(image, load, removing=[2], fenced_since_ms={3: 1000}, now_ms=5000)
    assert [
        (b.id, b.rack, b.live, b.down_ms, b.removing, b.disk_capacity_bytes) for b in model.brokers.values()
    ] == [
        (1, "r1", True, None, False, 100),
        (2, "r0", True, None, True, 200),
        (3, "r1", False, 4000, False, None),
    ]
    p0, p1 = model.partitions
    assert (p0.replicas, p0.isr, p0.leader, p0.min_isr, p0.load) == (
        (1, 2),
        (1, 2),
        1,
        2,
        PartitionLoad(5, 6, 7),
    )
    assert (p1.replicas, p1.isr, p1.leader, p1.load) == ((2, 3), (2,), 2, PartitionLoad())


def test_noise_in_measured_load_moves_nothing() -> None:
    """Three brokers leading eight partitions cannot even out bytes out (3, 3, 2 leaderships); rates
    a few percent apart, as two samples give them, must not pass leaderships around."""
    brokers = [BrokerModel(b) for b in (1, 2, 3)]
    leaders = [1, 2, 3, 1, 2, 3, 1, 2]
    rates = [1000, 1030, 990, 1010, 970, 1020, 1000, 985]

    def model(rate_of: list[int]) -> ClusterModel:
        parts = [
            PartitionModel("t", p, (lead, *(b for b in (1, 2, 3) if b != lead)), (1, 2, 3), lead,
                           load=PartitionLoad(10_000, r, r))
            for p, (lead, r) in enumerate(zip(leaders, rate_of, strict=True))
        ]
        return ClusterModel.of(brokers, parts)

    assert plan(model(rates)).empty
    # A real imbalance still moves: broker 1's partitions carry ten times the bytes.
    heavy = [r * 10 if lead == 1 else r for lead, r in zip(leaders, rates, strict=True)]
    assert plan(model(heavy)).leadership_moves


# ---------------------------------------------------------------------------------------------
# The search: complete (no move left that a goal could take) and never worse, under bounds
# ---------------------------------------------------------------------------------------------


@st.composite
def bounded(draw: st.DrawFn) -> tuple[ClusterModel, BalancerOptions]:
    """A random cluster (:func:`clusters`) whose brokers may have small disks (so
    ``disk.max.load`` binds) and options that may bound the replicas per broker."""
    model = draw(clusters())
    if draw(st.booleans()):
        brokers = [
            replace(b, disk_capacity_bytes=draw(st.integers(10**9, 6 * 10**9)))
            for b in model.brokers.values()
        ]
        model = ClusterModel.of(brokers, model.partitions)
    cap = draw(st.one_of(st.none(), st.integers(1, 12)))
    return model, BalancerOptions(max_replicas_per_broker=cap)


def _acceptable_aimed_moves(
    model: ClusterModel, options: BalancerOptions
) -> list[tuple[int, int, int, int, bool]]:
    """Every move the goal searches could take on ``model``, by brute force: (goal, partition
    index, source, target, leadership) of each acceptable move aimed at a goal with a measure
    (the families of zurau.metadata.controller.balancer.goals)."""
    s = SearchState(model, options)
    found = []
    for p in s.parts:
        if p.mode == NONE:
            continue
        for src in p.replicas:
            if p.mode != FULL and src not in s.drain:
                continue
            if src not in s.drain and src not in s.dest_set:
                continue
            for d in s.dest:
                if d in p.replicas:
                    continue
                v = s.replica_vector(p, src, d)
                if v is None:
                    continue
                for g in (DRAIN, RACK, CAP, DISK_LIMIT, COUNT, DISK, NW_IN):
                    if s.measure[g] and v[g] < 0 and (g == DRAIN) == (src in s.drain):
                        found.append((g, p.i, src, d, False))
        if p.mode == FULL:
            for d in p.replicas:
                if d != p.leader and d in s.dest_set and p.in_isr(d):
                    v = s.leader_vector(p, d)
                    if v is not None:
                        found += [
                            (g, p.i, p.leader, d, True)
                            for g in (LEADERS, NW_OUT)
                            if s.measure[g] and v[g] < 0
                        ]
    return found


@FAST
@given(bounded())
def test_no_goal_has_a_move_left_once_the_plan_is_applied(case: tuple[ClusterModel, BalancerOptions]) -> None:
    model, options = case
    result = plan(model, options)
    assert not result.truncated
    after = apply_plan(model, result)
    assert _acceptable_aimed_moves(after, options) == []
    assert plan(after, options).empty


@FAST
@given(bounded())
def test_the_goal_measures_never_get_worse(case: tuple[ClusterModel, BalancerOptions]) -> None:
    # Each move lowers the measures' vector lexicographically (hard goals first), so the plan does.
    model, options = case
    before = SearchState(model, options).measure
    after = SearchState(apply_plan(model, plan(model, options)), options).measure
    assert after <= before
