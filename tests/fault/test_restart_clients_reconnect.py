"""Clients made before a node restarts reach it again (three combined node processes).

ONE confluent-kafka AdminClient, ONE confluent-kafka Producer and ONE kafka-python
KafkaAdminClient live through a SIGTERM restart and a ``kill -9`` restart of node 1. While node 1
is down each client is made to read Metadata, which lists only the live brokers, so each forgets
node 1 (librdkafka decommissions it, kafka-python drops it from its cluster view) -- the case in
which, before :mod:`zurau.broker.broker_rejoin`, neither admin client asked for Metadata again and
node 1 stayed unreachable to them for minutes. After each restart, within a bound well under
librdkafka's 90 s of the original report:

* DescribeConfigs of BROKER 1 (sent to node 1 itself) succeeds with both admin clients;
* a record produced to a partition whose only replica is node 1 (so node 1 leads it again once it
  is back) is acknowledged.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KafkaPythonConfigResource
from kafka.admin import ConfigResourceType

from tests.support.waiting import wait_for
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

BROKER_CONFIGS: dict[str, Any] = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.fetch.wait.max.ms": "200",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.num.partitions": "1",
    "metrics.http.listener": "",
}
TOPIC = "on-node-1"
#: Seconds each client may take to reach the restarted node (a bound, not a measure).
REACH_S = 30.0


class Clients:
    """The clients kept over the restarts, and the checks made with them."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 0, "message.timeout.ms": 10000}
        )
        self.kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        self.errors: list[BaseException | KafkaError | None] = []

    def close(self) -> None:
        self.producer.flush(10)
        self.kp_admin.close()

    def forget_node_1(self) -> bool:
        """Each client reads Metadata; true once none of them lists node 1."""
        # kafka-python's cluster view is what its requests to a broker id are routed by.
        cluster = self.kp_admin._manager.cluster
        cluster.request_update()
        return (
            1 not in self.admin.list_topics(timeout=5).brokers
            and 1 not in self.producer.list_topics(timeout=5).brokers
            and 1 not in {b.node_id for b in cluster.brokers()}
        )

    def _attempt(self, check: Any) -> bool:
        try:
            check()
        except Exception as e:  # noqa: BLE001 - a restarted node is reached again a little later
            self.errors.append(e)
            return False
        return True

    def describe_with_confluent(self) -> bool:
        res = ConfigResource(ResourceType.BROKER, "1")
        return self._attempt(lambda: self.admin.describe_configs([res], request_timeout=10)[res].result(15))

    def describe_with_kafka_python(self) -> bool:
        return self._attempt(
            lambda: self.kp_admin.describe_configs(
                [KafkaPythonConfigResource(ConfigResourceType.BROKER, "1")]
            )
        )

    def produce(self) -> bool:
        reports: list[KafkaError | None] = []
        self.producer.produce(TOPIC, b"v", partition=0, on_delivery=lambda err, _msg: reports.append(err))
        self.producer.flush(15)
        if reports and reports[0] is None:
            return True
        self.errors.append(reports[0] if reports else None)
        return False

    def reach_node_1(self, when: str) -> None:
        for check in (self.describe_with_confluent, self.describe_with_kafka_python, self.produce):
            self.errors.clear()
            start = time.monotonic()
            try:
                wait_for(check, REACH_S, f"{when}: {check.__name__} reaching node 1")
            except AssertionError as e:
                raise AssertionError(f"{e}: {self.errors[-3:]}") from None
            print(f"{when}: {check.__name__} reached node 1 after {time.monotonic() - start:.1f} s")


def test_clients_reach_a_node_again_after_sigterm_and_kill9(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("restart-clients")
    with ClusterProcesses(root, controllers=3, **BROKER_CONFIGS) as cluster:
        setup = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        setup.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1]])], request_timeout=30)[TOPIC].result(
            30
        )
        clients = Clients(cluster.bootstrap_servers)
        try:
            clients.reach_node_1("before the restarts")
            node1 = cluster.nodes[1]
            for how in ("SIGTERM", "kill -9"):
                if how == "SIGTERM":
                    assert node1.stop() == 0, "node 1 did not exit cleanly on SIGTERM"
                else:
                    node1.kill()
                wait_for(
                    clients.forget_node_1, 60, f"after {how}: every client told the cluster without node 1"
                )
                node1.launch()
                node1.wait_ready(60)
                clients.reach_node_1(f"after {how}")
        finally:
            clients.close()
