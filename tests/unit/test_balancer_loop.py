"""BalancerService (socket-free): when the active controller's loop plans, what it submits, and
the durable rebalance mark; LoadMonitor's rates from two samples.

The channel is a fake that records the requests and applies nothing, unless a test applies
records itself (an image is the metadata log's state, the only state the service relies on).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from zurau.clock import ManualClock
from zurau.config import BrokerConfig
from zurau.metadata.balancer_load import LoadMonitor, LoadSample, with_rates
from zurau.metadata.balancer_service import REBALANCE_REQUESTED, REMOVING, BalancerService, load_model
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import (
    BROKER_RESOURCE,
    BrokerEndpoint,
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

TOPIC_ID = uuid.UUID(int=7)


def _image(assignment: Sequence[Sequence[int]], brokers: Sequence[int] = (1, 2, 3),
           extra: Sequence[MetadataRecord] = ()) -> MetadataImage:
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(broker_id=b, incarnation_id=uuid.UUID(int=b), broker_epoch=b,
                             endpoints=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + b, 0),))
        for b in brokers
    ]
    records += [UnfenceBrokerRecord(broker_id=b, epoch=b) for b in brokers]
    records.append(TopicRecord(name="t", topic_id=TOPIC_ID))
    records += [
        PartitionRecord(partition_id=i, topic_id=TOPIC_ID, replicas=tuple(rs), isr=tuple(rs), leader=rs[0])
        for i, rs in enumerate(assignment)
    ]
    records += list(extra)
    return MetadataImage("c").apply(records, last_offset=len(records) - 1)


class FakeChannel:
    def __init__(self, image: MetadataImage, active: bool = True) -> None:
        self._image = image
        self._active = active
        self.reassignments: list[list[Any]] = []
        self.configs: list[list[Any]] = []
        self.elections: list[Any] = []

    @property
    def active(self) -> bool:
        return self._active

    @property
    def image(self) -> MetadataImage:
        return self._image

    async def alter_partition_reassignments(self, topics: list[Any], allow_replication_factor_change: bool) -> Any:
        self.reassignments.append(topics)
        return {"error_code": 0, "error_message": None, "responses": []}

    async def incremental_alter_configs(self, resources: list[Any], validate_only: bool) -> Sequence[Any]:
        self.configs.append(resources)
        return []

    async def elect_leaders(self, election_type: int, topic_partitions: list[Any] | None) -> Any:
        self.elections.append(topic_partitions)
        return {}


class FakeMonitor(LoadMonitor):
    """No sockets: every broker answers with nothing measured."""

    async def sample(self, brokers: Sequence[int], leaders: dict[tuple[str, int], int]) -> LoadSample:
        self.last = LoadSample(self.clock.now_ms())
        return self.last


def _service(channel: FakeChannel, **overrides: Any) -> BalancerService:
    clock = ManualClock(1_000)
    cfg = BrokerConfig({"node.id": "1", **{k: str(v) for k, v in overrides.items()}})
    return BalancerService(channel, FakeMonitor(1, clock, lambda b: None), clock, cfg.get)  # type: ignore[arg-type]


def _moved(channel: FakeChannel) -> dict[int, list[int]]:
    return {p["partition_index"]: p["replicas"] for call in channel.reassignments for t in call for p in t["partitions"]}


async def test_nothing_changed_nothing_decided() -> None:
    """A tick whose inputs (the image's topics, brokers and broker configs, the load sample, the
    options) are those of the last decision does nothing, however much time passed."""
    image = _image([[1, 2], [2, 1]] * 3, extra=[ConfigRecord(BROKER_RESOURCE, "", REBALANCE_REQUESTED, "true")])
    channel = FakeChannel(image)
    service = _service(channel)
    await service.tick()
    first = len(channel.reassignments)
    assert first == 1
    service.clock.advance(5_000)  # type: ignore[attr-defined]  (within the load sample interval)
    await service.tick()
    assert len(channel.reassignments) == first  # the fake channel applied nothing: same inputs


async def test_a_passive_controller_does_nothing() -> None:
    channel = FakeChannel(_image([[1, 2]] * 6), active=False)
    await _service(channel).tick()
    assert channel.reassignments == [] and channel.configs == []


async def test_an_empty_broker_sets_the_durable_mark_first_then_moves_on_the_next_tick() -> None:
    channel = FakeChannel(_image([[1, 2], [2, 1]] * 3))
    service = _service(channel, **{"confluent.balancer.throttle.bytes.per.second": 1_000_000})
    await service.tick()
    ((mark,),) = channel.configs
    assert (mark["resource_type"], mark["resource_name"]) == (BROKER_RESOURCE, "")
    assert mark["configs"] == [{"name": REBALANCE_REQUESTED, "config_operation": 0, "value": "true"}]
    assert channel.reassignments == []

    channel._image = channel.image.apply([ConfigRecord(BROKER_RESOURCE, "", REBALANCE_REQUESTED, "true")])
    channel.configs.clear()
    await service.tick()
    assert channel.reassignments == [], "paced: no second evaluation before PACING x the first one's time"
    service.clock.advance(60_000)  # type: ignore[attr-defined]
    await service.tick()
    moved = _moved(channel)
    assert moved and all(3 in rs and len(set(rs)) == 2 for rs in moved.values())
    # throttled as kafka-reassign-partitions --throttle: topic replicas and broker rates
    (throttle,) = channel.configs
    topic = next(r for r in throttle if r["resource_type"] == 2)
    names = {c["name"]: c["value"] for c in topic["configs"]}
    assert set(names["follower.replication.throttled.replicas"].split(",")) == {f"{p}:3" for p in moved}
    rates = [r for r in throttle if r["resource_type"] == BROKER_RESOURCE and r["resource_name"]]
    assert {r["resource_name"] for r in rates} == {"1", "2", "3"}
    (mark,) = [r for r in throttle if r["resource_type"] == BROKER_RESOURCE and not r["resource_name"]]
    assert mark["configs"] == [{"name": "zurau.balancer.throttled.topics", "config_operation": 0, "value": "t"}]
    assert all(c["value"] == "1000000" for r in rates for c in r["configs"])


async def test_moves_in_flight_count_against_max_concurrent_moves() -> None:
    image = _image([[1, 2], [2, 1]] * 3, extra=[ConfigRecord(BROKER_RESOURCE, "", REBALANCE_REQUESTED, "true")])
    channel = FakeChannel(image)
    await _service(channel, **{"confluent.balancer.max.concurrent.moves": 2}).tick()
    assert len(_moved(channel)) == 2


async def test_a_removed_broker_is_drained_and_a_finished_rebalance_clears_its_mark() -> None:
    image = _image([[1, 2], [2, 3], [3, 1]], extra=[ConfigRecord(BROKER_RESOURCE, "2", REMOVING, "true")])
    channel = FakeChannel(image)
    await _service(channel).tick()
    moved = _moved(channel)
    assert set(moved) == {0, 1} and all(2 not in rs for rs in moved.values())

    balanced = _image([[1, 2], [2, 3], [3, 1]], extra=[ConfigRecord(BROKER_RESOURCE, "", REBALANCE_REQUESTED, "true")])
    channel = FakeChannel(balanced)
    await _service(channel).tick()
    assert channel.reassignments == []
    ((clear,),) = channel.configs
    assert clear["configs"] == [{"name": REBALANCE_REQUESTED, "config_operation": 1, "value": None}]


async def test_disabled_or_single_node_does_nothing() -> None:
    channel = FakeChannel(_image([[1, 2]] * 6))
    await _service(channel, **{"confluent.balancer.enable": "false"}).tick()
    single = FakeChannel(_image([[1]] * 3, brokers=(1,)))
    await _service(single).tick()
    assert channel.reassignments == channel.configs == single.reassignments == single.configs == []


def test_rates_come_from_the_growth_of_each_leader_replica() -> None:
    before = LoadSample(1_000, {1: 10_000}, {1: 100}, {("t", 0, 1): 100, ("t", 0, 2): 90, ("t", 1, 1): 500})
    now = LoadSample(3_000, {1: 10_000}, {1: 400}, {("t", 0, 1): 700, ("t", 0, 2): 650, ("t", 1, 1): 100})
    rated = with_rates(now, before, {("t", 0): 1, ("t", 1): 1})
    assert rated.bytes_in == {("t", 0): 300.0, ("t", 1): 0.0}  # a log that shrank (retention) is 0
    model = load_model(rated)
    assert model.disk_capacity_bytes == {1: 10_000}
    assert model.partitions[("t", 0)].size_bytes == 700 and model.partitions[("t", 0)].bytes_in_per_sec == 300
    assert with_rates(now, None, {("t", 0): 1}).bytes_in == {}
