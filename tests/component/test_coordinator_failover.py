"""Coordinators follow partition leadership on a three-node KRaft cluster (EmbeddedCluster).

The internal topics get Kafka's replication factor (3); the group coordinator of a group is the
leader of its ``__consumer_offsets`` partition and every other broker answers NOT_COORDINATOR;
an offset commit is answered only once every ISR replica holds it; when the coordinator's broker
stops, the partition's new leader loads it and serves the committed offsets. Transaction markers
go to the leaders of the transaction's partitions wherever they are.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedCluster
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import NotCoordinatorError

pytestmark = pytest.mark.timeout(180)

CONFIGS = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "50",
    "offsets.topic.num.partitions": "6",
    "transaction.state.log.num.partitions": "6",
}
OFFSETS = "__consumer_offsets"


async def _wait(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in time"
        await asyncio.sleep(0.02)


async def _connect(c: EmbeddedCluster, node: int) -> BrokerConnection:
    host, port = c.node(node).advertised
    return await BrokerConnection(host, port, client_id="coordinator-test").connect()


async def _find_coordinator(conn: BrokerConnection, key: str, key_type: int = 0) -> dict[str, Any]:
    resp = await conn.request(
        ApiKey.FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": [key]}, max_version=4
    )
    entry: dict[str, Any] = resp["coordinators"][0]
    return entry


async def _coordinator(
    c: EmbeddedCluster, conn: BrokerConnection, group: str, timeout: float = 30.0, key_type: int = 0
) -> int:
    """FindCoordinator until it names a broker (the internal topic may be being created)."""
    deadline = time.monotonic() + timeout
    while True:
        entry = await _find_coordinator(conn, group, key_type)
        if entry["error_code"] == 0:
            return int(entry["node_id"])
        assert time.monotonic() < deadline, entry
        await asyncio.sleep(0.1)


async def _commit(conn: BrokerConnection, group: str, topic: str, offsets: dict[int, int]) -> dict[int, int]:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "committed_offset": o, "committed_leader_epoch": -1, "committed_metadata": ""}
                    for p, o in offsets.items()
                ],
            }
        ],
    }
    resp = await conn.request(ApiKey.OFFSET_COMMIT, body, max_version=8)
    return {p["partition_index"]: p["error_code"] for p in resp["topics"][0]["partitions"]}


async def _fetch_offsets(conn: BrokerConnection, group: str, topic: str, partitions: list[int]) -> tuple[int, dict[int, int]]:
    body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": partitions}], "require_stable": False}
    resp = await conn.request(ApiKey.OFFSET_FETCH, body, max_version=7)
    parts = resp["topics"][0]["partitions"] if resp["topics"] else []
    return resp["error_code"], {p["partition_index"]: p["committed_offset"] for p in parts}


async def test_group_coordinator_moves_with_leadership(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        async with AdminClient(ClientConfig.from_props({"bootstrap.servers": c.bootstrap_servers})) as admin:
            assert (await admin.create_topics([NewTopic("orders", 3, 3, {})]))["orders"] is None
        await c.wait_for_topic("orders")
        group = "failover-group"
        conns = {n: await _connect(c, n) for n in (1, 2, 3)}
        try:
            coordinator = await _coordinator(c, conns[1], group)
            # __consumer_offsets got Kafka's replication factor: three replicas per partition.
            offsets_topic = c.node(1).image.get(OFFSETS)
            assert offsets_topic is not None and offsets_topic.num_partitions == 6
            assert all(sorted(p.replicas) == [1, 2, 3] for p in offsets_topic.partitions.values())
            partition = c.node(1).group_coordinator.partition_for(group)
            assert offsets_topic.partitions[partition].leader == coordinator
            # Every broker names the same coordinator; only it serves the group.
            for n in (2, 3):
                assert await _coordinator(c, conns[n], group) == coordinator
            await _wait(lambda: c.node(coordinator).group_coordinator.loaded(partition), what="partition loaded")
            other = next(n for n in (1, 2, 3) if n != coordinator)
            code, _ = await _fetch_offsets(conns[other], group, "orders", [0])
            assert code == NotCoordinatorError.code
            assert (await _commit(conns[other], group, "orders", {0: 1})) == {0: NotCoordinatorError.code}

            # A commit is answered once every ISR replica holds it (acks=all semantics).
            assert await _commit(conns[coordinator], group, "orders", {0: 10, 1: 20, 2: 30}) == {0: 0, 1: 0, 2: 0}
            end = c.node(coordinator).replica_manager.get(OFFSETS, partition).high_watermark  # type: ignore[union-attr]
            assert end > 0
            for n in (1, 2, 3):
                replica = c.node(n).replica_manager.get(OFFSETS, partition)
                assert replica is not None and replica.log_end_offset >= end

            # The coordinator's broker stops: the partition's new leader loads it and serves
            # the committed offsets.
            await conns.pop(coordinator).close()
            await c.stop_node(coordinator)
            survivors = sorted(conns)
            some = survivors[0]
            new = await _coordinator(c, conns[some], group)
            assert new in survivors and new != coordinator
            await _wait(lambda: c.node(new).group_coordinator.loaded(partition), what="the new coordinator loaded")
            code, fetched = await _fetch_offsets(conns[new], group, "orders", [0, 1, 2])
            assert code == 0 and fetched == {0: 10, 1: 20, 2: 30}
            assert await _commit(conns[new], group, "orders", {0: 11}) == {0: 0}
            gone = next(n for n in survivors if n != new)
            assert not c.node(gone).group_coordinator.loaded(partition)
            code, _ = await _fetch_offsets(conns[gone], group, "orders", [0])
            assert code == NotCoordinatorError.code

            # The old coordinator comes back as a follower: it does not serve the group.
            await c.start_node(coordinator)
            conns[coordinator] = await _connect(c, coordinator)
            code, _ = await _fetch_offsets(conns[coordinator], group, "orders", [0])
            assert code == NotCoordinatorError.code
            code, fetched = await _fetch_offsets(conns[new], group, "orders", [0, 1, 2])
            assert code == 0 and fetched == {0: 11, 1: 20, 2: 30}
        finally:
            for conn in conns.values():
                await conn.close()


async def test_internal_topic_replication_is_capped_at_live_brokers(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        await c.stop_node(3)
        await _wait(lambda: len(c.node(1).image.live_brokers()) == 2, what="broker 3 fenced")
        conn = await _connect(c, 1)
        try:
            deadline = time.monotonic() + 30
            while (await _find_coordinator(conn, "txn-id", key_type=1))["error_code"] != 0:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
        finally:
            await conn.close()
        t = c.node(1).image.get("__transaction_state")
        assert t is not None
        assert all(len(p.replicas) == 2 for p in t.partitions.values())
        assert t.configs.get("min.insync.replicas") == "1"
