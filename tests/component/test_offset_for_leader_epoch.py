"""OffsetForLeaderEpoch over a real socket against an in-process broker, at v2 (not flexible, no
replica id), v3 (replica id) and v4 (flexible).

The log of ``ofle-0`` is written in three leader epochs by moving the partition's leadership
between produces (``make_leader`` with a higher epoch, as a leader change would):

    offsets 0-2 in epoch 0, offsets 3-4 in epoch 2, offset 5 in epoch 5 (log end offset 6)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.protocol.records.builder import NewRecord, build_batch

PRODUCE, METADATA, API_VERSIONS, CREATE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 0, 3, 18, 19, 23

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75

TOPIC = "ofle"
VERSIONS = [2, 3, 4]


class Env:
    def __init__(self, broker: Broker, client: KafkaWireClient) -> None:
        self.broker = broker
        self.client = client

    @property
    def node(self) -> int:
        return self.broker.node_id

    async def create(self, name: str, partitions: int) -> None:
        body = {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
            "timeout_ms": 5000,
        }
        r = await self.client.request(CREATE_TOPICS, 5, body)
        assert r["topics"][0]["error_code"] == NONE, r

    async def produce(self, topic: str, partition: int, n: int) -> int:
        batch = build_batch([NewRecord(None, b"v%d" % i) for i in range(n)])
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        }
        r = await self.client.request(PRODUCE, 9, body)
        p = r["responses"][0]["partition_responses"][0]
        assert p["error_code"] == NONE, p
        return int(p["base_offset"])

    def lead(self, topic: str, partition: int, epoch: int) -> None:
        """This broker leads the partition again, at a new epoch (a leader change)."""
        self.broker.replica_manager.make_leader(
            topic, partition, leader_epoch=epoch, replicas=[self.node], isr=[self.node]
        )

    async def ofle(
        self, version: int, partitions: list[dict[str, Any]], topic: str = TOPIC, replica_id: int = -1
    ) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"topics": [{"topic": topic, "partitions": partitions}]}
        if version >= 3:
            body["replica_id"] = replica_id
        r = await self.client.request(OFFSET_FOR_LEADER_EPOCH, version, body)
        assert r["throttle_time_ms"] == 0
        assert [t["topic"] for t in r["topics"]] == [topic]
        return list(r["topics"][0]["partitions"])

    async def one(
        self, version: int, leader_epoch: int, current: int = -1, partition: int = 0, **kw: Any
    ) -> tuple[int, int, int]:
        [p] = await self.ofle(
            version,
            [{"partition": partition, "current_leader_epoch": current, "leader_epoch": leader_epoch}],
            **kw,
        )
        assert p["partition"] == partition
        return p["error_code"], p["leader_epoch"], p["end_offset"]


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data")}
    broker = Broker(BrokerConfig.from_props(props))
    await broker.start()
    host, port = broker.listen_addresses[0]
    client = await KafkaWireClient.connect(host, port)
    e = Env(broker, client)
    try:
        await e.create(TOPIC, 2)
        assert await e.produce(TOPIC, 0, 3) == 0  # epoch 0: offsets 0-2
        e.lead(TOPIC, 0, 2)
        assert await e.produce(TOPIC, 0, 2) == 3  # epoch 2: offsets 3-4
        e.lead(TOPIC, 0, 5)
        assert await e.produce(TOPIC, 0, 1) == 5  # epoch 5: offset 5
        yield e
    finally:
        await client.close()
        await broker.stop()


async def test_advertised_in_api_versions_with_the_served_quorum_apis(env: Env) -> None:
    r = await env.client.request(
        API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
    )
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in r["api_keys"]}
    assert ranges[OFFSET_FOR_LEADER_EPOCH] == (2, 4)
    # The quorum and replication APIs are served (Vote, Begin/EndQuorumEpoch, DescribeQuorum,
    # AlterPartition, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds, FetchSnapshot,
    # Add/Remove/UpdateRaftVoter).
    for key in (52, 53, 54, 55, 56, 59, 62, 63, 67, 80, 81, 82):
        assert key in ranges, key


@pytest.mark.parametrize("version", VERSIONS)
async def test_end_offsets_of_each_epoch(env: Env, version: int) -> None:
    expected = {
        0: (0, 3),  # epoch 0 ends where epoch 2 starts
        1: (0, 3),  # not an epoch of this log: the largest one below it
        2: (2, 5),
        3: (2, 5),
        4: (2, 5),
        5: (5, 6),  # the latest epoch ends at the log end offset
        6: (-1, -1),  # newer than any epoch this leader has: unknown, no error
        100: (-1, -1),
        -1: (-1, -1),
    }
    parts = await env.ofle(
        version, [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": e} for e in expected]
    )
    got = {e: (p["leader_epoch"], p["end_offset"]) for e, p in zip(expected, parts, strict=True)}
    assert got == expected
    assert {p["error_code"] for p in parts} == {NONE}
    # The log end moves with a new append in the latest epoch.
    await env.produce(TOPIC, 0, 4)
    assert await env.one(version, 5) == (NONE, 5, 10)
    assert await env.one(version, 2) == (NONE, 2, 5)


@pytest.mark.parametrize("version", VERSIONS)
async def test_current_leader_epoch_fences(env: Env, version: int) -> None:
    assert await env.one(version, 2, current=5) == (NONE, 2, 5)
    assert await env.one(version, 2, current=-1) == (NONE, 2, 5)  # -1: no check
    assert await env.one(version, 2, current=4) == (FENCED_LEADER_EPOCH, -1, -1)
    assert await env.one(version, 2, current=0) == (FENCED_LEADER_EPOCH, -1, -1)
    assert await env.one(version, 2, current=6) == (UNKNOWN_LEADER_EPOCH, -1, -1)


@pytest.mark.parametrize("version", VERSIONS)
async def test_unknown_partitions_and_topics(env: Env, version: int) -> None:
    assert await env.one(version, 0, partition=2) == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert await env.one(version, 0, partition=-1) == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    assert await env.one(version, 0, topic="no-such-topic") == (UNKNOWN_TOPIC_OR_PARTITION, -1, -1)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_follower_or_a_broker_without_the_replica_is_not_the_leader(env: Env, version: int) -> None:
    rm = env.broker.replica_manager
    rm.make_follower(TOPIC, 1, leader_id=env.node + 1, leader_epoch=3)
    assert await env.one(version, 0, partition=1) == (NOT_LEADER_OR_FOLLOWER, -1, -1)
    assert await env.one(version, 0, current=3, partition=1) == (NOT_LEADER_OR_FOLLOWER, -1, -1)
    # The leader epoch is checked first, as Kafka does.
    assert await env.one(version, 0, current=2, partition=1) == (FENCED_LEADER_EPOCH, -1, -1)
    assert await env.one(version, 0, current=4, partition=1) == (UNKNOWN_LEADER_EPOCH, -1, -1)
    # In the metadata but not hosted on this broker.
    rm.stop_hosting(TOPIC, 1, delete=False)
    assert env.broker.image.get(TOPIC) is not None
    assert await env.one(version, 0, partition=1) == (NOT_LEADER_OR_FOLLOWER, -1, -1)


@pytest.mark.parametrize("version", [3, 4])
async def test_every_requester_gets_the_same_answer(env: Env, version: int) -> None:
    """Consumers send replica id -1, followers their broker id, tools -2 (the v3+ default)."""
    for replica_id in (-1, -2, env.node, env.node + 7):
        assert await env.one(version, 2, current=5, replica_id=replica_id) == (NONE, 2, 5)
        assert await env.one(version, 5, replica_id=replica_id) == (NONE, 5, 6)


async def test_many_topics_and_partitions_in_one_request(env: Env) -> None:
    await env.create("other", 1)
    await env.produce("other", 0, 2)
    body = {
        "replica_id": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 0},
                    {"partition": 1, "current_leader_epoch": -1, "leader_epoch": 0},
                    {"partition": 9, "current_leader_epoch": -1, "leader_epoch": 0},
                ],
            },
            {
                "topic": "other",
                "partitions": [{"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}],
            },
            {
                "topic": "gone",
                "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
            },
        ],
    }
    r = await env.client.request(OFFSET_FOR_LEADER_EPOCH, 4, body)
    got = {
        (t["topic"], p["partition"]): (p["error_code"], p["leader_epoch"], p["end_offset"])
        for t in r["topics"]
        for p in t["partitions"]
    }
    assert got == {
        (TOPIC, 0): (NONE, 0, 3),
        # an empty log: its leader's epoch starts at the log end offset when it takes over (Kafka)
        (TOPIC, 1): (NONE, 0, 0),
        (TOPIC, 9): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        ("other", 0): (NONE, 0, 2),
        ("gone", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    }
    assert [t["topic"] for t in r["topics"]] == [TOPIC, "other", "gone"]
