"""A three-node KRaft cluster in one process (EmbeddedCluster): election, registration,
forwarding of admin requests from any node, failover of the active controller, catch-up of a
restarted node, and DescribeQuorum through any node."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.embedded import EmbeddedCluster
from zurau.protocol.api_keys import ApiKey

pytestmark = pytest.mark.timeout(120)


def _client(bootstrap: str) -> ClientConfig:
    return ClientConfig.from_props({"bootstrap.servers": bootstrap})


async def _wait(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def _metadata(bootstrap: str) -> dict[str, Any]:
    cluster = Cluster(_client(bootstrap))
    try:
        await cluster.bootstrap()
        conn = await cluster.any_connection()
        return await conn.request(ApiKey.METADATA, {"topics": None, "allow_auto_topic_creation": False})
    finally:
        await cluster.close()


async def test_three_nodes_elect_register_and_forward(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path) as c:
        # Every node lists all three brokers and names the active controller (re-read if an
        # election intervened on a loaded machine).
        deadline = time.monotonic() + 20
        while True:
            active = c.controller_id
            mds = [await _metadata(b.bootstrap_servers) for b in c.brokers if b is not None]
            if all(md["controller_id"] == active for md in mds) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert active in (1, 2, 3)
        for md in mds:
            assert sorted(x["node_id"] for x in md["brokers"]) == [1, 2, 3]
            assert md["controller_id"] == active
        # CreateTopics through a node that is not the active controller is forwarded.
        other = next(b for b in c.brokers if b is not None and b.node_id != active)
        async with AdminClient(_client(other.bootstrap_servers)) as admin:
            result = await admin.create_topics([NewTopic("spread", 6, 1)])
            assert result["spread"] is None
        await c.wait_for_topic("spread")
        leaders = {p.leader for p in other.image.get("spread").partitions.values()}  # type: ignore[union-attr]
        assert leaders == {1, 2, 3}, "six partitions are striped over the three brokers"
        # Each broker hosts exactly the partitions it leads.
        for b in c.brokers:
            assert b is not None
            hosted = {p.index for p in b.replica_manager.partitions() if p.topic == "spread"}
            expected = {i for i, p in b.image.get("spread").partitions.items() if p.leader == b.node_id}  # type: ignore[union-attr]
            assert hosted == expected


async def test_active_controller_failover_and_catch_up(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path) as c:
        await c.create_topic_async("before", 1)
        old = c.controller_id
        started = time.monotonic()
        await c.stop_node(old)
        await _wait(lambda: c.controller_id not in (-1, old))
        elapsed = time.monotonic() - started
        assert elapsed < 10, f"no new active controller after {elapsed:.1f} s"
        await c.create_topic_async("after", 1)
        # The stopped node comes back, catches up and sees both topics.
        await c.start_node(old)
        await c.wait_for_topic("after")
        assert c.node(old).image.get("before") is not None


async def _describe_quorum(bootstrap: str) -> dict[str, Any]:
    cluster = Cluster(_client(bootstrap))
    try:
        await cluster.bootstrap()
        conn = await cluster.any_connection()
        body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
        resp = await conn.request(ApiKey.DESCRIBE_QUORUM, body)
    finally:
        await cluster.close()
    part: dict[str, Any] = resp["topics"][0]["partitions"][0]
    return part


async def test_describe_quorum_through_any_node(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path) as c:
        await c.create_topic_async("q", 1)
        deadline = time.monotonic() + 20
        while True:
            # Every node answers with the same leader (the active controller) and voters; on a
            # loaded machine an election may intervene, so the views are compared as a whole.
            parts = [await _describe_quorum(b.bootstrap_servers) for b in c.brokers if b is not None]
            active = c.controller_id
            if all(p["error_code"] == 0 and p["leader_id"] == active for p in parts) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        for part in parts:
            assert part["error_code"] == 0
            assert part["leader_id"] == active
            assert sorted(v["replica_id"] for v in part["current_voters"]) == [1, 2, 3]
            assert part["high_watermark"] > 0


async def test_snapshots_bound_the_log_and_catch_up_a_node_that_fell_behind(tmp_path: Any) -> None:
    """With small snapshot thresholds the active controller snapshots its image and deletes the log
    before it; a node stopped meanwhile comes back below the leader's log start, fetches the
    snapshot (FetchSnapshot) and ends with the same topics; a node restarted loads its own newest
    snapshot."""
    async with EmbeddedCluster(
        3, data_dir=tmp_path, **{"metadata.log.max.record.bytes.between.snapshots": "2000"}
    ) as c:
        active = c.controller_id
        behind = next(b.node_id for b in c.brokers if b is not None and b.node_id != active)
        await c.create_topic_async("first", 1)
        await c.stop_node(behind)
        for i in range(40):
            await c.create_topic_async(f"t{i}", 1)
        leader = c.node(active)
        assert leader.kraft is not None
        await _wait(lambda: leader.kraft.log.start_offset() > 0)  # type: ignore[union-attr]
        assert leader.kraft.log.latest_snapshot() is not None
        await c.start_node(behind)
        await c.wait_for_topic("t39")
        node = c.node(behind)
        assert node.kraft is not None and node.kraft.log.latest_snapshot() is not None
        names = {f"t{i}" for i in range(40)} | {"first"}
        assert names <= set(node.image.names())
        assert node.image.brokers.keys() == leader.image.brokers.keys()
