"""The active controller's self-balancing loop (zurau.metadata.balancer_service) on one fake
channel: a metadata image built from records, a load sample given by hand, a manual clock.

The channel applies what the service asks (config changes; reassignments complete at once) and
records it; with ``applies=False`` it only records, so that a test applies records itself (an
image is the metadata log's state, the only state the service relies on).

* A passive controller, a disabled balancer or a single node decides nothing; a tick whose inputs
  did not change since the last decision decides nothing.
* ``ANY_UNEVEN_LOAD`` on load no move can even out (three brokers, four leaders, bytes out on the
  leaders only: one broker is always 50% above the mean) starts no rebalance: the trigger is
  pulled only when a plan would move something, so the rebalance mark is not set and cleared
  over and over (each a metadata record).
* A real imbalance (an empty broker) sets the durable rebalance mark first, then moves replicas
  (at most ``max.concurrent.moves`` in flight) with the throttle set as
  ``kafka-reassign-partitions --throttle`` sets it, and once nothing is left the throttles are
  removed and the mark cleared.
* A removed broker is drained; a finished rebalance clears its mark.
* What the controller refuses is reported (logged), not silently dropped.
* A new active controller removes the throttles its predecessor set.
* Leadership moves reorder the replicas and elect the preferred leaders, copying nothing.
* A dead (or removed) broker that hosts nothing any more is no reason to plan: the trigger decides.
* LoadMonitor's rates come from two samples.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from zurau.clock import ManualClock
from zurau.config import BrokerConfig
from zurau.metadata.balancer_load import LoadSample, with_rates
from zurau.metadata.balancer_service import (
    REBALANCE_REQUESTED,
    REMOVING,
    BalancerService,
    load_model,
    refused_configs,
    refused_moves,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    BrokerEndpoint,
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

TOPIC_ID = uuid.UUID(int=7)
SET, DELETE = 0, 1


def image_of(
    assignment: Mapping[int, Sequence[int]],
    brokers: Sequence[int] = (1, 2, 3),
    fenced: Sequence[int] = (),
    extra: Sequence[MetadataRecord] = (),
) -> MetadataImage:
    """Brokers (``fenced`` ones registered only), topic ``t`` with ``assignment`` (partition ->
    replicas, the first leading, all in sync), then the ``extra`` records."""
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=b), broker_epoch=b,
            endpoints=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + b, 0),),
        )
        for b in brokers
    ]
    records += [UnfenceBrokerRecord(broker_id=b, epoch=b) for b in brokers if b not in fenced]
    records.append(TopicRecord(name="t", topic_id=TOPIC_ID))
    records += [
        PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=tuple(rs), isr=tuple(rs), leader=rs[0])
        for p, rs in assignment.items()
    ]
    records += list(extra)
    return MetadataImage("c").apply(records, last_offset=len(records) - 1)


def listed(*assignment: Sequence[int]) -> dict[int, Sequence[int]]:
    """An assignment given in partition order."""
    return dict(enumerate(assignment))


class FakeChannel:
    """The active controller's channel (see the module docstring). Recorded: every
    IncrementalAlterConfigs request (``config_requests``, its resources) and each change in it
    (``config_changes``: (resource name, config, value or None)), the reassignment requests and
    the elections."""

    def __init__(self, image: MetadataImage, *, active: bool = True, applies: bool = True) -> None:
        self.image = image
        self.active = active
        self.applies = applies
        self.config_requests: list[list[Any]] = []
        self.config_changes: list[tuple[str, str, str | None]] = []
        self.reassignments: list[Any] = []
        self.elections: list[Any] = []

    def apply(self, records: Sequence[MetadataRecord]) -> None:
        self.image = self.image.apply(list(records), last_offset=self.image.offset + len(records))

    def _maybe_apply(self, records: Sequence[MetadataRecord]) -> None:
        if self.applies:
            self.apply(records)

    async def incremental_alter_configs(self, resources: list[Any], validate_only: bool) -> Sequence[Any]:
        self.config_requests.append(resources)
        records = []
        for r in resources:
            for c in r["configs"]:
                value = c["value"] if c["config_operation"] == SET else None
                self.config_changes.append((r["resource_name"], c["name"], value))
                records.append(ConfigRecord(resource_type=r["resource_type"], resource_name=r["resource_name"],
                                            name=c["name"], value=value))
        self._maybe_apply(records)
        return []

    async def alter_partition_reassignments(self, topics: list[Any], allow_replication_factor_change: bool) -> Any:
        self.reassignments.append(topics)
        self._maybe_apply([
            PartitionRecord(partition_id=p["partition_index"], topic_id=TOPIC_ID, replicas=tuple(p["replicas"]),
                            isr=tuple(p["replicas"]), leader=p["replicas"][0])
            for t in topics for p in t["partitions"]
        ])
        return {"error_code": 0, "error_message": None, "responses": []}

    async def elect_leaders(self, election_type: int, topic_partitions: list[Any] | None) -> Any:
        self.elections.append(topic_partitions)
        return {}


class FakeMonitor:
    """Gives ``last`` as the sample, whatever is asked (None: nothing measured)."""

    def __init__(self, sample: LoadSample | None) -> None:
        self.last = sample

    async def sample(self, brokers: Sequence[int], leaders: dict[tuple[str, int], int]) -> LoadSample | None:
        return self.last

    async def close(self) -> None:
        pass


def service(
    channel: FakeChannel, sample: LoadSample | None = None, **configs: Any
) -> tuple[BalancerService, ManualClock]:
    """A service whose broker configs are the defaults but ``configs`` (Kafka names)."""
    clock = ManualClock(1_000)
    cfg = BrokerConfig({"node.id": "1", **{k: str(v) for k, v in configs.items()}})
    return BalancerService(channel, FakeMonitor(sample), clock, cfg.get), clock  # type: ignore[arg-type]


def ticks(svc: BalancerService, clock: ManualClock, n: int) -> None:
    async def run() -> None:
        for _ in range(n):
            await svc.tick()
            clock.advance(2_000)

    asyncio.run(run())


def moved(channel: FakeChannel) -> dict[int, list[int]]:
    """partition -> target replicas of every reassignment asked for."""
    return {p["partition_index"]: p["replicas"] for call in channel.reassignments for t in call for p in t["partitions"]}


REQUESTED = ConfigRecord(BROKER_RESOURCE, "", REBALANCE_REQUESTED, "true")


# ------------------------------------------------------------------------------ when nothing is done
async def test_a_passive_controller_does_nothing() -> None:
    channel = FakeChannel(image_of(listed(*[[1, 2]] * 6)), active=False)
    await service(channel)[0].tick()
    assert channel.reassignments == [] and channel.config_requests == []


async def test_disabled_or_single_node_does_nothing() -> None:
    channel = FakeChannel(image_of(listed(*[[1, 2]] * 6)))
    await service(channel, **{"confluent.balancer.enable": "false"})[0].tick()
    single = FakeChannel(image_of(listed(*[[1]] * 3), brokers=(1,)))
    await service(single)[0].tick()
    assert channel.reassignments == channel.config_requests == single.reassignments == single.config_requests == []


async def test_nothing_changed_nothing_decided() -> None:
    """A tick whose inputs (the image's topics, brokers and broker configs, the load sample, the
    options) are those of the last decision does nothing, however much time passed."""
    channel = FakeChannel(image_of(listed(*[[1, 2], [2, 1]] * 3), extra=[REQUESTED]), applies=False)
    svc, clock = service(channel)
    await svc.tick()
    first = len(channel.reassignments)
    assert first == 1
    clock.advance(5_000)  # within the load sample interval
    await svc.tick()
    assert len(channel.reassignments) == first  # the channel applied nothing: same inputs


# ------------------------------------------------------------------------------ decisions
def test_uneven_load_no_move_can_even_out_starts_no_rebalance() -> None:
    # Every broker hosts every partition; leaders 1, 1, 2, 3: broker 1 sends twice the bytes out
    # of the others, and no leadership move changes that (one broker always leads two).
    assignment = {0: (1, 2, 3), 1: (1, 3, 2), 2: (2, 3, 1), 3: (3, 1, 2)}
    sizes = {("t", p, b): 1000 for p in assignment for b in (1, 2, 3)}
    rates = {("t", p): 500.0 for p in assignment}
    sample = LoadSample(0, {1: 10**9, 2: 10**9, 3: 10**9}, {1: 4000, 2: 4000, 3: 4000}, sizes, rates)
    channel = FakeChannel(image_of(assignment))
    svc, clock = service(channel, sample, **{"confluent.balancer.heal.uneven.load.trigger": "ANY_UNEVEN_LOAD"})
    ticks(svc, clock, 10)
    assert channel.config_changes == []
    assert channel.reassignments == [] and channel.elections == []


def test_an_empty_broker_is_filled_throttled_then_the_throttle_and_the_mark_are_removed() -> None:
    assignment = {p: (1, 2) if p % 2 else (2, 1) for p in range(6)}
    channel = FakeChannel(image_of(assignment))
    svc, clock = service(channel, None, **{"confluent.balancer.throttle.bytes.per.second": 1234})
    ticks(svc, clock, 10)
    assert channel.reassignments, "no move"
    partitions = set(moved(channel))
    assert partitions and all(3 in channel.image.get("t").partitions[p].replicas for p in partitions)  # type: ignore[union-attr]
    assert ("3", "follower.replication.throttled.rate", "1234") in channel.config_changes
    for b in ("1", "2", "3"):
        assert "follower.replication.throttled.rate" not in channel.image.broker_config(b)
    topic = channel.image.get("t")
    assert topic is not None and "leader.replication.throttled.replicas" not in topic.configs
    assert REBALANCE_REQUESTED not in channel.image.broker_config("")
    sets = [c for c in channel.config_changes if c[1] == REBALANCE_REQUESTED]
    assert sets == [("", REBALANCE_REQUESTED, "true"), ("", REBALANCE_REQUESTED, None)]


def test_refusals_are_reported() -> None:
    assert refused_configs([{"resource_name": "2", "error_code": 0}, {"resource_name": "", "error_code": 40,
                                                                     "error_message": "bad"}]) == ["<default>: bad"]
    response = {"error_code": 0, "responses": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0}, {"partition_index": 1, "error_code": 85, "error_message": None}]}]}
    assert refused_moves(response) == ["t-1: 85"]


def test_a_new_active_controller_removes_the_throttles_its_predecessor_set() -> None:
    # The first controller starts the moves (throttled), then loses the lead before they end; the
    # next one finds nothing left to move and must still remove the throttles.
    assignment = {p: (1, 2) if p % 2 else (2, 1) for p in range(6)}
    channel = FakeChannel(image_of(assignment))
    first, clock = service(channel, None)
    ticks(first, clock, 2)  # the trigger, then the moves
    assert channel.reassignments
    topic = channel.image.get("t")
    assert topic is not None and "follower.replication.throttled.replicas" in topic.configs
    second, clock = service(channel, None)
    ticks(second, clock, 3)
    topic = channel.image.get("t")
    assert topic is not None and "follower.replication.throttled.replicas" not in topic.configs
    assert "leader.replication.throttled.replicas" not in topic.configs
    for b in ("1", "2", "3"):
        assert "follower.replication.throttled.rate" not in channel.image.broker_config(b), b
    assert channel.image.broker_config("") == {}


def test_leadership_moves_reorder_the_replicas_then_elect_the_preferred_leaders() -> None:
    # Replica counts are even (every broker hosts every partition); broker 1 leads all six. The
    # leader-count band is [floor(0.9 * 2), ceil(1.1 * 2)] = [1, 3].
    assignment = {p: (1, 2, 3) for p in range(6)}
    channel = FakeChannel(image_of(assignment))
    svc, clock = service(channel, None, **{"confluent.balancer.heal.uneven.load.trigger": "ANY_UNEVEN_LOAD"})
    ticks(svc, clock, 6)
    topic = channel.image.get("t")
    assert topic is not None
    leaders = [topic.partitions[p].replicas[0] for p in range(6)]
    assert all(1 <= leaders.count(b) <= 3 for b in (1, 2, 3)), leaders
    assert all(sorted(topic.partitions[p].replicas) == [1, 2, 3] for p in range(6))
    assert channel.elections and channel.elections[0][0]["topic"] == "t"
    assert not any(c[1].endswith("throttled.rate") for c in channel.config_changes)  # nothing was copied
    assert REBALANCE_REQUESTED not in channel.image.broker_config("")


def test_a_dead_broker_already_drained_starts_no_rebalance() -> None:
    # Broker 4 is registered, fenced past the threshold and hosts nothing: nothing to drain. Broker
    # 1 leads all six partitions, which only ANY_UNEVEN_LOAD (not the default trigger) would fix.
    assignment = {p: (1, 2, 3) for p in range(6)}
    channel = FakeChannel(image_of(assignment, brokers=(1, 2, 3, 4), fenced=(4,)))
    svc, clock = service(channel, None, **{"confluent.balancer.heal.broker.failure.threshold.ms": 0})
    ticks(svc, clock, 5)
    assert channel.reassignments == [] and channel.elections == [] and channel.config_changes == []


async def test_an_empty_broker_sets_the_durable_mark_first_then_moves_on_the_next_tick() -> None:
    channel = FakeChannel(image_of(listed(*[[1, 2], [2, 1]] * 3)), applies=False)
    svc, clock = service(channel, **{"confluent.balancer.throttle.bytes.per.second": 1_000_000})
    await svc.tick()
    ((mark,),) = channel.config_requests
    assert (mark["resource_type"], mark["resource_name"]) == (BROKER_RESOURCE, "")
    assert mark["configs"] == [{"name": REBALANCE_REQUESTED, "config_operation": SET, "value": "true"}]
    assert channel.reassignments == []

    channel.apply([REQUESTED])
    channel.config_requests.clear()
    await svc.tick()
    assert channel.reassignments == [], "paced: no second evaluation before PACING x the first one's time"
    clock.advance(60_000)
    await svc.tick()
    targets = moved(channel)
    assert targets and all(3 in rs and len(set(rs)) == 2 for rs in targets.values())
    # throttled as kafka-reassign-partitions --throttle: topic replicas and broker rates
    (throttle,) = channel.config_requests
    topic = next(r for r in throttle if r["resource_type"] == TOPIC_RESOURCE)
    names = {c["name"]: c["value"] for c in topic["configs"]}
    assert set(names["follower.replication.throttled.replicas"].split(",")) == {f"{p}:3" for p in targets}
    rates = [r for r in throttle if r["resource_type"] == BROKER_RESOURCE and r["resource_name"]]
    assert {r["resource_name"] for r in rates} == {"1", "2", "3"}
    (mark,) = [r for r in throttle if r["resource_type"] == BROKER_RESOURCE and not r["resource_name"]]
    assert mark["configs"] == [{"name": "zurau.balancer.throttled.topics", "config_operation": SET, "value": "t"}]
    assert all(c["value"] == "1000000" for r in rates for c in r["configs"])


async def test_moves_in_flight_count_against_max_concurrent_moves() -> None:
    channel = FakeChannel(image_of(listed(*[[1, 2], [2, 1]] * 3), extra=[REQUESTED]))
    await service(channel, **{"confluent.balancer.max.concurrent.moves": 2})[0].tick()
    assert len(moved(channel)) == 2


async def test_a_removed_broker_is_drained_and_a_finished_rebalance_clears_its_mark() -> None:
    removing = ConfigRecord(BROKER_RESOURCE, "2", REMOVING, "true")
    channel = FakeChannel(image_of(listed([1, 2], [2, 3], [3, 1]), extra=[removing]))
    await service(channel)[0].tick()
    targets = moved(channel)
    assert set(targets) == {0, 1} and all(2 not in rs for rs in targets.values())

    channel = FakeChannel(image_of(listed([1, 2], [2, 3], [3, 1]), extra=[REQUESTED]))
    await service(channel)[0].tick()
    assert channel.reassignments == []
    ((clear,),) = channel.config_requests
    assert clear["configs"] == [{"name": REBALANCE_REQUESTED, "config_operation": DELETE, "value": None}]


# ------------------------------------------------------------------------------ load
def test_rates_come_from_the_growth_of_each_leader_replica() -> None:
    before = LoadSample(1_000, {1: 10_000}, {1: 100}, {("t", 0, 1): 100, ("t", 0, 2): 90, ("t", 1, 1): 500})
    now = LoadSample(3_000, {1: 10_000}, {1: 400}, {("t", 0, 1): 700, ("t", 0, 2): 650, ("t", 1, 1): 100})
    rated = with_rates(now, before, {("t", 0): 1, ("t", 1): 1})
    assert rated.bytes_in == {("t", 0): 300.0, ("t", 1): 0.0}  # a log that shrank (retention) is 0
    model = load_model(rated)
    assert model.disk_capacity_bytes == {1: 10_000}
    assert model.partitions[("t", 0)].size_bytes == 700 and model.partitions[("t", 0)].bytes_in_per_sec == 300
    assert with_rates(now, None, {("t", 0): 1}).bytes_in == {}
