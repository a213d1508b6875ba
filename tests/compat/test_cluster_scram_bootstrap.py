"""SCRAM between brokers from the first start (KIP-900): three combined nodes (processes) formatted
with ``zurau storage format --add-scram 'SCRAM-SHA-512=[name=broker,password=...]'``, the brokers
dialling each other over SASL_PLAINTEXT with ``sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512``
(the controller listener keeps PLAIN). Nobody creates a credential by hand: the first active
controller writes the bootstrap credential into the metadata log and the others learn it by
replication.

confluent-kafka produces with acks=all to a topic of three replicas with min.insync.replicas=3,
which is acknowledged only once both followers fetched, i.e. logged in to the leader with SCRAM;
DescribeUserScramCredentials lists the bootstrap user on every broker.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic, ScramMechanism

from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

USERS = {"alice": "alice-secret"}
BROKER_USER, BROKER_PASSWORD = "broker", "broker-bootstrap-secret"
OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "group.initial.rebalance.delay.ms": "0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{BROKER_USER}" password="{BROKER_PASSWORD}";'
    ),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    root = tmp_path_factory.mktemp("scram-bootstrap-cluster")
    c = ClusterProcesses(
        root,
        3,
        security="SASL_PLAINTEXT",
        users=USERS,
        format_args=["--add-scram", f"SCRAM-SHA-512=[name={BROKER_USER},password={BROKER_PASSWORD}]"],
        **OVERRIDES,
    ).start()
    try:
        yield c
    finally:
        c.stop()


def test_every_controller_got_the_bootstrap_file(cluster: ClusterProcesses) -> None:
    for node_id in cluster.controller_ids:
        assert (Path(cluster.root) / f"node-{node_id}" / "bootstrap.checkpoint").is_file()


def _create(cluster: ClusterProcesses, topic: str) -> None:
    admin = AdminClient(cluster.client_config())
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "3"})])[topic].result(60)
    _wait_isr(cluster, topic, 3)


def _wait_isr(cluster: ClusterProcesses, topic: str, size: int) -> None:
    admin = AdminClient(cluster.client_config())
    deadline = time.monotonic() + 60
    while True:
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        if t is not None and t.error is None and t.partitions and len(t.partitions[0].isrs) == size:
            return
        assert time.monotonic() < deadline, f"the topic did not come up with {size} in-sync replicas"
        time.sleep(0.2)


def _produce_acks_all(cluster: ClusterProcesses, topic: str, values: list[bytes]) -> None:
    """Every value acknowledged with acks=all (min.insync.replicas=3: both followers fetched)."""
    producer = Producer({**cluster.client_config(), "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 60_000})
    acked: list[bytes] = []
    errors: list[object] = []

    def report(err: object, msg: object) -> None:
        if err is None:
            acked.append(msg.value())  # type: ignore[attr-defined]
        else:
            errors.append(err)

    for v in values:
        producer.produce(topic, v, on_delivery=report)
    assert producer.flush(90) == 0
    assert errors == [] and sorted(acked) == sorted(values)


def _consume(cluster: ClusterProcesses, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({**cluster.client_config(), "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            m = consumer.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        consumer.close()


def _bootstrap_writes(cluster: ClusterProcesses) -> list[int]:
    """The nodes whose log says they wrote the bootstrap metadata into the metadata log."""
    return [
        i for i in cluster.nodes
        if "found the metadata log empty" in (Path(cluster.root) / f"node-{i}.log").read_text("utf-8", "replace")
    ]


def test_followers_log_in_with_the_bootstrap_scram_credential(cluster: ClusterProcesses) -> None:
    topic = f"scram-bootstrap-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic)
    values = [f"v{i}".encode() for i in range(50)]
    _produce_acks_all(cluster, topic, values)
    assert _consume(cluster, topic, len(values)) == values


def test_describe_user_scram_credentials_lists_the_bootstrap_user(cluster: ClusterProcesses) -> None:
    for node_id in cluster.broker_ids:  # each broker answers from its own replicated image
        admin = AdminClient({**cluster.client_config(), "bootstrap.servers": cluster.nodes[node_id].bootstrap_servers})
        described = admin.describe_user_scram_credentials([BROKER_USER])
        info = described[BROKER_USER].result(30).scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in info] == [(ScramMechanism.SCRAM_SHA_512, 4096)]


def test_only_the_first_leader_bootstraps_and_a_restarted_leader_does_not_again(cluster: ClusterProcesses) -> None:
    """The node that wrote the bootstrap batch is killed (SIGKILL) and restarted: a new leader
    takes over without writing its own file's records, the restarted node rejoins the ISR through
    SCRAM, and the credential exists once."""
    (first,) = _bootstrap_writes(cluster)
    topic = f"scram-restart-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic)
    cluster.kill(first)
    cluster.restart(first)
    _wait_isr(cluster, topic, 3)
    values = [f"after-{i}".encode() for i in range(20)]
    _produce_acks_all(cluster, topic, values)
    assert _bootstrap_writes(cluster) == [first]
    admin = AdminClient(cluster.client_config())
    info = admin.describe_user_scram_credentials([BROKER_USER])[BROKER_USER].result(30).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in info] == [(ScramMechanism.SCRAM_SHA_512, 4096)]
