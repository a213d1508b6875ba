"""The active controller's self-balancing loop (zurau.metadata.balancer_service) on a fake channel:
a metadata image built from records, a load sample given by hand, a manual clock.

* ``ANY_UNEVEN_LOAD`` on load no move can even out (three brokers, four leaders, bytes out on the
  leaders only: one broker is always 50% above the mean) starts no rebalance: the trigger is
  pulled only when a plan would move something, so the rebalance mark is not set and cleared
  over and over (each a metadata record).
* A real imbalance (an empty broker) starts a rebalance, moves replicas with the throttle set,
  and once nothing is left the throttles are removed and the mark cleared.
* What the controller refuses is reported (logged), not silently dropped.
* A new active controller removes the throttles its predecessor set.
* Leadership moves reorder the replicas and elect the preferred leaders, copying nothing.
* A dead (or removed) broker that hosts nothing any more is no reason to plan: the trigger decides.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from zurau.clock import ManualClock
from zurau.config import BROKER_CONFIGS
from zurau.metadata.balancer_load import LoadSample
from zurau.metadata.balancer_service import (
    REBALANCE_REQUESTED,
    BalancerService,
    refused_configs,
    refused_moves,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    BROKER_RESOURCE,
    BrokerEndpoint,
    ConfigRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

TOPIC_ID = uuid.uuid4()


def image_of(
    assignment: Mapping[int, tuple[int, ...]], brokers: Sequence[int] = (1, 2, 3), fenced: Sequence[int] = ()
) -> MetadataImage:
    records: list[Any] = [
        RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.uuid4(), broker_epoch=b,
            endpoints=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + b, 0),),
        )
        for b in brokers
    ]
    records += [UnfenceBrokerRecord(broker_id=b, epoch=b) for b in brokers if b not in fenced]
    records.append(TopicRecord(name="t", topic_id=TOPIC_ID))
    records += [
        PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=rs, isr=rs, leader=rs[0])
        for p, rs in assignment.items()
    ]
    return MetadataImage("c").apply(records, last_offset=len(records) - 1)


class FakeChannel:
    """The active controller's channel: config changes are applied to the image; reassignments
    and elections are recorded (and, for reassignments, the target replicas applied at once)."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.active = True
        self.config_changes: list[tuple[str, str, str | None]] = []
        self.reassignments: list[Any] = []
        self.elections: list[Any] = []

    def _apply(self, records: list[Any]) -> None:
        self.image = self.image.apply(records, last_offset=self.image.offset + len(records))

    async def incremental_alter_configs(self, resources: list[Any], validate_only: bool) -> Sequence[Any]:
        records = []
        for r in resources:
            for c in r["configs"]:
                value = c["value"] if c["config_operation"] == 0 else None
                self.config_changes.append((r["resource_name"], c["name"], value))
                records.append(ConfigRecord(resource_type=r["resource_type"], resource_name=r["resource_name"],
                                            name=c["name"], value=value))
        self._apply(records)
        return []

    async def alter_partition_reassignments(self, topics: list[Any], allow_replication_factor_change: bool) -> Any:
        self.reassignments.append(topics)
        records = [
            PartitionRecord(partition_id=p["partition_index"], topic_id=TOPIC_ID, replicas=tuple(p["replicas"]),
                            isr=tuple(p["replicas"]), leader=p["replicas"][0])
            for t in topics for p in t["partitions"]
        ]
        self._apply(records)
        return {}

    async def elect_leaders(self, election_type: int, topic_partitions: list[Any] | None) -> Any:
        self.elections.append(topic_partitions)
        return {}


class FakeMonitor:
    """Gives ``last`` as the sample, whatever is asked."""

    def __init__(self, sample: LoadSample | None) -> None:
        self.last = sample

    async def sample(self, brokers: Sequence[int], leaders: dict[tuple[str, int], int]) -> LoadSample | None:
        return self.last

    async def close(self) -> None:
        pass


def service(channel: FakeChannel, sample: LoadSample | None, **configs: Any) -> tuple[BalancerService, ManualClock]:
    clock = ManualClock()

    def get(name: str) -> Any:
        return configs.get(name, BROKER_CONFIGS[name].default)

    return BalancerService(channel, FakeMonitor(sample), clock, get), clock  # type: ignore[arg-type]


def ticks(svc: BalancerService, clock: ManualClock, n: int) -> None:
    async def run() -> None:
        for _ in range(n):
            await svc.tick()
            clock.advance(2_000)

    asyncio.run(run())


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
    moved = {p["partition_index"] for t in channel.reassignments for p in t[0]["partitions"]}
    assert moved and all(3 in channel.image.get("t").partitions[p].replicas for p in moved)  # type: ignore[union-attr]
    assert ("3", "follower.replication.throttled.rate", "1234") in channel.config_changes
    for b in ("1", "2", "3"):
        assert "follower.replication.throttled.rate" not in channel.image.broker_config(b)
    topic = channel.image.get("t")
    assert topic is not None and "leader.replication.throttled.replicas" not in topic.configs
    assert REBALANCE_REQUESTED not in channel.image.broker_config("")
    sets = [c for c in channel.config_changes if c[1] == REBALANCE_REQUESTED]
    assert sets == [("", REBALANCE_REQUESTED, "true"), ("", REBALANCE_REQUESTED, None)]
    assert BROKER_RESOURCE == 4


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
