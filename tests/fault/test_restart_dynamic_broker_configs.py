"""Dynamic broker configs survive restarts and stay applied (issue 32), on three combined nodes
(:class:`~zurau.testing.cluster_process.ClusterProcesses`), through real clients.

The cluster default ``min.insync.replicas=3`` (set with ``zurau configs alter --entity-default``,
as kafka-configs.sh does) and node 1's own ``message.max.bytes=3000`` (set with confluent-kafka's
IncrementalAlterConfigs, which librdkafka sends to node 1 itself, not to the active controller)
are written to the metadata log. A topic with no override of its own (replication factor 3, led
by node 1) then follows both: a 5,000-byte record is refused with MESSAGE_TOO_LARGE, and with one
follower stopped an acks=all produce is refused with NOT_ENOUGH_REPLICAS. Node 1 is restarted with
SIGTERM and node 2 with ``kill -9``; afterwards DescribeConfigs of each node shows the values with
their dynamic sources, and the same produce checks hold on node 1 (leading again after a preferred
election): the restarted broker derived its effective configs from the replayed image.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from typer.testing import CliRunner

from tests.support.cli_results import ok
from tests.support.waiting import wait_for
from zurau.cli.main import app
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

BROKER_CONFIGS: dict[str, Any] = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.fetch.wait.max.ms": "200",
    "replica.lag.time.max.ms": "3000",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.num.partitions": "1",
    "metrics.http.listener": "",
}
TOPIC = "dyn-configs"


def _partition(admin: AdminClient) -> tuple[int, list[int]]:
    try:
        t = admin.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
    except KafkaException:
        return -1, []
    if t is None or t.error is not None or 0 not in t.partitions:
        return -1, []
    return t.partitions[0].leader, sorted(t.partitions[0].isrs)


def _produce(bootstrap: str, value: bytes) -> KafkaError | None:
    """One acks=all record without retries: its delivery error (None: acknowledged)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "retries": 0,
                         "message.timeout.ms": 20000, "compression.type": "none"})  # fmt: skip
    reports: list[KafkaError | None] = []
    producer.produce(TOPIC, value, b"k", partition=0, on_delivery=lambda err, _msg: reports.append(err))
    assert producer.flush(30) == 0, "no delivery report in 30 s"
    return reports[0]


def _describe(admin: AdminClient, node: int) -> dict[str, ConfigEntry]:
    """DescribeConfigs of ``node`` (sent to that node), retried while it is just back."""
    res = ConfigResource(ResourceType.BROKER, str(node))
    errors: list[BaseException] = []

    def attempt() -> dict[str, ConfigEntry] | None:
        try:
            return admin.describe_configs([res], request_timeout=10)[res].result(15)
        except Exception as e:  # noqa: BLE001 - a restarted node's connection comes back later
            errors.append(e)
            return None

    try:
        return wait_for(attempt, 90, f"DescribeConfigs of node {node}")
    except AssertionError as e:
        raise AssertionError(f"{e}: {errors[-3:]}") from None


def _led_by_node_1_with_full_isr(admin: AdminClient, what: str) -> None:
    def check() -> bool:
        leader, isr = _partition(admin)
        if isr == [1, 2, 3] and leader != 1:
            try:
                admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)]).result(30)
            except KafkaException:
                pass
        return _partition(admin) == (1, [1, 2, 3])

    wait_for(check, 60, what)


def _check_applied(cluster: ClusterProcesses, admin: AdminClient, when: str) -> None:
    """Node 1 leads with the full ISR: both dynamic configs act on its produce answers."""
    bootstrap = cluster.bootstrap_servers
    _led_by_node_1_with_full_isr(admin, f"{when}: node 1 leading {TOPIC} with the full ISR")
    assert _produce(bootstrap, b"y" * 1000) is None
    err = _produce(bootstrap, b"y" * 5000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, f"{when}: {err}"
    node3 = cluster.nodes[3]
    assert node3.stop() == 0, "node 3 did not exit cleanly on SIGTERM"
    try:
        wait_for(lambda: _partition(admin) == (1, [1, 2]), 60, f"{when}: the ISR without node 3")
        err = _produce(bootstrap, b"z")
        assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS, f"{when}: {err}"
    finally:
        node3.launch()
        node3.wait_ready(60)


def test_dynamic_broker_configs_hold_over_sigterm_and_kill9(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("dyn-broker-configs")
    with ClusterProcesses(root, controllers=3, **BROKER_CONFIGS) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 3]])], request_timeout=30)[TOPIC].result(30)

        ok(CliRunner().invoke(app, ["configs", "alter", "--entity-type", "brokers", "--entity-default",
                                    "--add-config", "min.insync.replicas=3",
                                    "--bootstrap-server", cluster.bootstrap_servers]))  # fmt: skip
        res = ConfigResource(
            ResourceType.BROKER, "1",
            incremental_configs=[ConfigEntry("message.max.bytes", "3000", incremental_operation=AlterConfigOpType.SET)],
        )  # fmt: skip
        admin.incremental_alter_configs([res])[res].result(30)
        _check_applied(cluster, admin, "before the restarts")

        node1 = cluster.nodes[1]
        assert node1.stop() == 0, "node 1 did not exit cleanly on SIGTERM"
        node1.launch()
        node1.wait_ready(60)
        cluster.restart(2)  # kill -9, then start over the same data
        # The same admin client as before the restarts (zurau.broker.broker_rejoin).

        for node in (1, 2, 3):
            configs = _describe(admin, node)
            mir = configs["min.insync.replicas"]
            assert (mir.value, mir.source) == ("3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value), node
            mmb = configs["message.max.bytes"]
            if node == 1:
                assert (mmb.value, mmb.source) == ("3000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
            else:
                assert mmb.source == ConfigSource.DEFAULT_CONFIG.value and mmb.value != "3000", node
        _check_applied(cluster, admin, "after the restarts")
