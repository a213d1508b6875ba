"""Client metrics subscriptions (KIP-714) are kept in the replicated metadata log, on three
combined node processes (:class:`~zurau.testing.cluster_process.ClusterProcesses`).

A subscription (a non-default interval, metric prefix and client-id match) is created through
the cluster. A confluent-kafka producer pushes its metrics to one node (librdkafka picks one);
that node is killed with ``kill -9`` and started again, and another node is stopped with SIGTERM
and started again. The producer goes on pushing throughout, to whichever node it moves to (its
client instance, unknown to a new process, is recreated from its push with the same subscription
id); only producer metrics arrive, with the client id as a label. Afterwards the subscription is
listed and described as it was created, through each node as the bootstrap server.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from zurau.client.admin import AdminClient, AlterConfigOp, ConfigResource, ResourceType
from zurau.client.config import ClientConfig
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SUBSCRIPTION = ConfigResource(ResourceType.CLIENT_METRICS, "producers")
SETTINGS = {"metrics": "org.apache.kafka.producer.", "interval.ms": "500", "match": "client_id=restart-.*"}
CLIENT = "restart-producer"
CONFIGS: dict[str, Any] = {  # Any: passed as keyword arguments (config names)
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "offsets.topic.num.partitions": "1",
    "num.partitions": "1",
    "metrics.http.listener": "http://127.0.0.1:0",
}


def metrics_text(cluster: ClusterProcesses, node_id: int) -> str:
    """The /metrics page of the node's current process ("" when it is down or not serving yet):
    the last address its log says it serves metrics on."""
    node = cluster.nodes[node_id]
    urls = re.findall(r"serves metrics on (http://\S+)", node.log_path.read_text("utf-8", "replace"))
    if not urls or not node.running:
        return ""
    try:
        return urllib.request.urlopen(urls[-1], timeout=5).read().decode()
    except OSError:
        return ""


def pushes(cluster: ClusterProcesses, node_id: int) -> float:
    """The pushes CLIENT made to the node's current process (0 when it is down or has none)."""
    text = metrics_text(cluster, node_id)
    m = re.search(rf'zurau_client_telemetry_pushes_total\{{[^}}]*client_id="{CLIENT}"[^}}]*\}} (\S+)', text)
    return float(m.group(1)) if m else 0.0


def series(cluster: ClusterProcesses, node_id: int) -> set[str]:
    """The names of the pushed metric series of CLIENT on the node."""
    text = metrics_text(cluster, node_id)
    return {m.group(1) for m in re.finditer(rf'^(org_apache_kafka_\w+)\{{[^}}]*client_id="{CLIENT}"', text, re.M)}


def total(cluster: ClusterProcesses) -> dict[int, float]:
    return {i: pushes(cluster, i) for i in cluster.broker_ids}


def keep_pushing(cluster: ClusterProcesses, producer: Producer, after: dict[int, float], within: float = 60) -> int:
    """Produce until some node has more pushes from CLIENT than ``after``; that node's id."""
    deadline = time.monotonic() + within
    while True:
        producer.produce("restart-t", b"v")
        producer.poll(0.2)
        now = total(cluster)
        grown = [i for i in now if now[i] > after.get(i, 0.0)]
        if grown:
            return grown[0]
        assert time.monotonic() < deadline, f"{CLIENT} stopped pushing: {now}"


async def _admin(bootstrap: str, fn: Any) -> Any:
    async with AdminClient(ClientConfig.load(bootstrap_servers=bootstrap)) as admin:
        return await fn(admin)


def test_a_subscription_survives_kill9_and_sigterm_and_is_still_served(tmp_path: Path) -> None:
    with ClusterProcesses(tmp_path / "cluster", **CONFIGS) as cluster:
        ops = [AlterConfigOp(k, value=v) for k, v in SETTINGS.items()]
        errors = asyncio.run(_admin(cluster.bootstrap_servers, lambda a: a.incremental_alter_configs({SUBSCRIPTION: ops})))
        assert errors == {SUBSCRIPTION: None}
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": CLIENT})
        try:
            receiver = keep_pushing(cluster, producer, {})

            cluster.restart(receiver)  # kill -9 of the node the producer pushes to
            receiver = keep_pushing(cluster, producer, total(cluster))

            other = next(i for i in cluster.broker_ids if i != receiver)
            assert cluster.nodes[other].stop() == 0, f"node {other} did not exit cleanly on SIGTERM"
            cluster.nodes[other].launch()
            cluster.nodes[other].wait_ready(60)
            receiver = keep_pushing(cluster, producer, total(cluster))
            names = series(cluster, receiver)
            assert names and all(n.startswith("org_apache_kafka_producer_") for n in names), names
        finally:
            producer.flush(10)

        for node_id in cluster.broker_ids:
            one = cluster.nodes[node_id].bootstrap_servers
            listed = asyncio.run(_admin(one, lambda a: a.list_config_resources([ResourceType.CLIENT_METRICS])))
            assert listed == [SUBSCRIPTION], node_id
            described = asyncio.run(_admin(one, lambda a: a.describe_configs([SUBSCRIPTION])))
            assert {e.name: e.value for e in described[SUBSCRIPTION]} == SETTINGS, node_id
