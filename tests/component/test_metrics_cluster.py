"""/metrics of a 3-node KRaft cluster: one active controller, and under-replicated partitions on
the remaining leaders once a broker stops."""

from __future__ import annotations

import time

from tests.compat.test_metrics_confluent_kafka import scrape
from zurau.client.admin import AdminClient, NewTopic
from zurau.client.config import ClientConfig
from zurau.embedded import EmbeddedCluster

PARTITIONS = 3


def _gauge(cluster: EmbeddedCluster, name: str) -> list[float]:
    urls = [b.metrics_url for b in cluster.brokers if b is not None]
    assert all(urls)
    return [scrape(u)[(name, ())] for u in urls if u is not None]


def _follower_fetches(cluster: EmbeddedCluster) -> float:
    return sum(
        v
        for b in cluster.brokers
        if b is not None
        for (name, labels), v in scrape(b.metrics_url or "").items()
        if name == "kafka_network_requestmetrics_requests_total" and ("request", "FetchFollower") in labels
    )


def _wait_for(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


async def _create_replicated(cluster: EmbeddedCluster, name: str) -> None:
    config = ClientConfig.from_props({"bootstrap.servers": cluster.bootstrap_servers})
    async with AdminClient(config) as admin:
        errors = await admin.create_topics([NewTopic(name, PARTITIONS, 3, {})])
    assert errors.get(name) is None
    await cluster.wait_for_topic(name)


def test_active_controller_and_under_replicated_partitions() -> None:
    with EmbeddedCluster(3, metrics_http_listener="http://127.0.0.1:0", replica_lag_time_max_ms=2000) as cluster:
        cluster.call(_create_replicated, cluster, "replicated")
        _wait_for(
            lambda: sum(_gauge(cluster, "kafka_server_replicamanager_leadercount")) == PARTITIONS,
            "every partition to have a leader",
        )
        assert sum(_gauge(cluster, "kafka_controller_kafkacontroller_activecontrollercount")) == 1
        _wait_for(
            lambda: sum(_gauge(cluster, "kafka_server_replicamanager_underreplicatedpartitions")) == 0,
            "a fully replicated cluster",
        )
        # The followers of the replicated topic fetch from its leaders: Kafka's FetchFollower.
        _wait_for(lambda: _follower_fetches(cluster) > 0, "follower fetches")
        victim = next(i for i in (1, 2, 3) if i != cluster.controller_id)
        cluster.call(cluster.stop_node, victim)
        # Every partition has a replica on the stopped node: each is now led by a remaining node
        # with an ISR of two out of three replicas.
        _wait_for(
            lambda: sum(_gauge(cluster, "kafka_server_replicamanager_underreplicatedpartitions")) == PARTITIONS,
            "under-replicated partitions after a broker stopped",
        )
        assert sum(_gauge(cluster, "kafka_server_replicamanager_leadercount")) == PARTITIONS
        assert sum(_gauge(cluster, "kafka_controller_kafkacontroller_activecontrollercount")) == 1
        fenced = _gauge(cluster, "kafka_controller_kafkacontroller_fencedbrokercount")
        assert fenced == [1, 1]
