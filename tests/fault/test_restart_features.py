"""Finalized feature levels survive restarts, on three combined nodes
(:class:`~zurau.testing.cluster_process.ClusterProcesses`).

Every node is formatted with ``zurau storage format --feature group.version=0``, so the first
active controller bootstraps the log with that level instead of the default 1. ``zurau features``
then raises ``group.version`` to 1 and disables ``share.version`` (UpdateFeatures through any
node, forwarded to the active controller). Node 1 is stopped with SIGTERM and node 2 killed with
``kill -9``, both start again over their data; afterwards every node's ApiVersions reports the
changed levels: they are ``FeatureLevelRecord``s of the replicated metadata log. And the levels
act on every node: a KIP-848 ConsumerGroupHeartbeat is refused with UNSUPPORTED_VERSION while
``group.version`` is 0 and served after the upgrade, a ShareGroupHeartbeat the other way round,
before and after the restarts.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.cli_results import ok
from tests.support.waiting import wait_for
from zurau.cli.main import app
from zurau.client.connection import BrokerConnection
from zurau.protocol.api_keys import ApiKey
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

CONFIGS: dict[str, Any] = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "offsets.topic.num.partitions": "1",
    "metrics.http.listener": "",
}


async def _finalized(port: int) -> dict[str, int]:
    conn = await BrokerConnection("127.0.0.1", port).connect()
    try:
        resp = await conn.request(ApiKey.API_VERSIONS, {}, version=4)
    finally:
        await conn.close()
    return {f["name"]: f["max_version_level"] for f in resp["finalized_features"]}


UNSUPPORTED_VERSION = 35


async def _gated(port: int) -> tuple[bool, bool]:
    """Whether the node refuses (UNSUPPORTED_VERSION) a consumer-protocol heartbeat and a share
    heartbeat; any other answer (NOT_COORDINATOR on a node not coordinating the group, or a
    member epoch) means the API is served."""
    conn = await BrokerConnection("127.0.0.1", port).connect()
    common = {"group_id": "gated", "member_id": uuid.uuid4().hex, "member_epoch": 0, "rack_id": None}
    try:
        consumer = await conn.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            {**common, "instance_id": None, "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["t"],
             "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []},
            version=1,
        )
        share = await conn.request(
            ApiKey.SHARE_GROUP_HEARTBEAT, {**common, "subscribed_topic_names": ["t"]}, version=1
        )
    finally:
        await conn.close()
    return consumer["error_code"] == UNSUPPORTED_VERSION, share["error_code"] == UNSUPPORTED_VERSION


def _assert_gates(cluster: ClusterProcesses, consumer_gated: bool, share_gated: bool) -> None:
    for node_id, node in cluster.nodes.items():
        assert asyncio.run(_gated(node.port)) == (consumer_gated, share_gated), f"node {node_id}"


def _wait_levels(cluster: ClusterProcesses, expected: dict[str, int], what: str) -> None:
    for node_id, node in cluster.nodes.items():
        seen: list[dict[str, int]] = []

        def check(port: int = node.port, seen: list[dict[str, int]] = seen) -> bool:
            try:
                seen.append(asyncio.run(_finalized(port)))
            except Exception:  # noqa: BLE001 - a node just back may refuse connections for a moment
                return False
            return seen[-1] == expected

        try:
            wait_for(check, 60, f"{what}: node {node_id} reporting {expected}")
        except AssertionError as e:
            raise AssertionError(f"{e}; last seen {seen[-1:] or 'nothing'}") from None


def test_feature_levels_hold_over_sigterm_and_kill9(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("restart-features")
    formatted = {
        "metadata.version": 29,
        "eligible.leader.replicas.version": 1,
        "share.version": 1,
        "transaction.version": 2,
    }
    with ClusterProcesses(
        root, controllers=3, format_args=["--feature", "group.version=0"], **CONFIGS
    ) as cluster:
        _wait_levels(cluster, formatted, "after the first start")
        _assert_gates(cluster, consumer_gated=True, share_gated=False)

        def features(*args: str) -> str:
            return ok(
                CliRunner().invoke(app, ["features", *args, "--bootstrap-server", cluster.bootstrap_servers])
            )

        assert features("upgrade", "--feature", "group.version=1") == "group.version was upgraded to 1.\n"
        assert features("disable", "--feature", "share.version") == "share.version was disabled.\n"
        changed = {
            "metadata.version": 29,
            "eligible.leader.replicas.version": 1,
            "group.version": 1,
            "transaction.version": 2,
        }
        _wait_levels(cluster, changed, "after the changes")
        _assert_gates(cluster, consumer_gated=False, share_gated=True)

        node1 = cluster.nodes[1]
        assert node1.stop() == 0, "node 1 did not exit cleanly on SIGTERM"
        node1.launch()
        node1.wait_ready(60)
        cluster.restart(2)  # kill -9, then start over the same data
        _wait_levels(cluster, changed, "after the restarts")
        _assert_gates(cluster, consumer_gated=False, share_gated=True)
        assert "group.version" in features("describe")
