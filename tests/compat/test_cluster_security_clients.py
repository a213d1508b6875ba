"""A secured cluster of real processes (``zurau broker start`` x3, ClusterProcesses with
``security="SASL_SSL"``): every listener, the one between brokers and the controllers' included,
is SASL_SSL, so the nodes replicate, elect and heartbeat over TLS with their own PLAIN login.

confluent-kafka, kafka-python, aiokafka and kcat each produce with acks=all to a topic of three
replicas with min.insync.replicas=3 (an acknowledgement proves both followers fetched over
SASL_SSL) and read back in a consumer group; then the partition leader is killed with SIGKILL,
a survivor takes over holding every acknowledged record, and the clients keep going.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiokafka
import kafka
import pytest
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

KCAT = shutil.which("kcat") or "kcat"
USERS = {"alice": "alice-secret"}
OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    root = tmp_path_factory.mktemp("secure-cluster")
    c = ClusterProcesses(root, 3, security="SASL_SSL", users=USERS, **OVERRIDES).start()
    try:
        yield c
    finally:
        c.stop()


def _python_kw(c: ClusterProcesses) -> dict[str, Any]:
    assert c.ca_location is not None
    return {
        "bootstrap_servers": c.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "ssl_context": create_ssl_context(cafile=c.ca_location),
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": USERS["alice"],
    }


def _create(c: ClusterProcesses, topic: str) -> None:
    admin = AdminClient(c.client_config())
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "3"})])[topic].result(60)
    # Every broker knows the topic before the clients start (metadata reaches nodes one by one).
    deadline = time.monotonic() + 30
    while True:
        md = admin.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is not None and t.error is None and t.partitions and len(t.partitions[0].isrs) == 3:
            return
        assert time.monotonic() < deadline, "the topic did not come up with three in-sync replicas"
        time.sleep(0.2)


def _confluent_produce(c: ClusterProcesses, topic: str, values: list[bytes]) -> None:
    p = Producer({**c.client_config(), "acks": "all", "enable.idempotence": True, "message.timeout.ms": 60_000})
    errors: list[Any] = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(90) == 0 and errors == []


def _confluent_consume(c: ClusterProcesses, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({**c.client_config(), "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        consumer.close()
    return got


def _leader(c: ClusterProcesses, topic: str) -> int:
    md = AdminClient(c.client_config()).list_topics(topic, timeout=10)
    return int(md.topics[topic].partitions[0].leader)


def test_confluent_kafka_and_leader_kill(cluster: ClusterProcesses) -> None:
    topic = "secure-confluent"
    _create(cluster, topic)
    first = [f"c-{i}".encode() for i in range(300)]
    _confluent_produce(cluster, topic, first)
    assert _confluent_consume(cluster, topic, 300) == first

    leader = _leader(cluster, topic)
    cluster.kill(leader)
    try:
        deadline = time.monotonic() + 30
        while _leader(cluster, topic) in (leader, -1):
            assert time.monotonic() < deadline, "no new leader after the kill"
            time.sleep(0.2)
        # Two replicas are left: acks=all with min.insync.replicas=2 from here on.
        admin = AdminClient(cluster.client_config())
        admin.incremental_alter_configs([_min_isr(topic, "2")])[_resource(topic)].result(30)
        second = [f"d-{i}".encode() for i in range(100)]
        _confluent_produce(cluster, topic, second)
        assert _confluent_consume(cluster, topic, 400) == first + second
    finally:
        cluster.nodes[leader].launch()
        cluster.nodes[leader].wait_ready(60)
    # The restarted node catches up over SASL_SSL and rejoins the ISR.
    deadline = time.monotonic() + 60
    while True:
        md = AdminClient(cluster.client_config()).list_topics(topic, timeout=10)
        if len(md.topics[topic].partitions[0].isrs) == 3:
            break
        assert time.monotonic() < deadline, "the restarted node did not rejoin the ISR"
        time.sleep(0.3)


def _resource(topic: str) -> Any:
    from confluent_kafka.admin import ConfigResource, ResourceType

    return ConfigResource(ResourceType.TOPIC, topic)


def _min_isr(topic: str, value: str) -> Any:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    return ConfigResource(
        ResourceType.TOPIC, topic,
        incremental_configs=[ConfigEntry("min.insync.replicas", value, incremental_operation=AlterConfigOpType.SET)],
    )


def test_kafka_python(cluster: ClusterProcesses) -> None:
    topic = "secure-kafka-python"
    _create(cluster, topic)
    values = [f"k-{i}".encode() for i in range(200)]
    producer = kafka.KafkaProducer(acks="all", **_python_kw(cluster))
    for v in values:
        producer.send(topic, v)
    producer.flush(60)
    producer.close()
    consumer = kafka.KafkaConsumer(
        topic, group_id="kp-secure", auto_offset_reset="earliest", consumer_timeout_ms=20_000, **_python_kw(cluster)
    )
    got = [m.value for m in consumer][:200]
    consumer.close()
    assert got == values


def test_aiokafka(cluster: ClusterProcesses) -> None:
    topic = "secure-aiokafka"
    _create(cluster, topic)
    values = [f"a-{i}".encode() for i in range(200)]

    async def run() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(acks="all", **_python_kw(cluster))
        await producer.start()
        try:
            for v in values:
                await producer.send(topic, v)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            topic, group_id="aio-secure", auto_offset_reset="earliest", **_python_kw(cluster)
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for m in consumer:
                    got.append(m.value)
                    if len(got) == len(values):
                        break
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == values


def _kcat_args(cluster: ClusterProcesses) -> list[str]:
    out: list[str] = []
    for k, v in cluster.client_config().items():
        out += ["-b", v] if k == "bootstrap.servers" else ["-X", f"{k}={v}"]
    return out


def test_kcat(cluster: ClusterProcesses, tmp_path: Path) -> None:
    topic = "secure-kcat"
    _create(cluster, topic)
    values = [f"kc-{i}" for i in range(100)]
    produced = subprocess.run(
        [KCAT, *_kcat_args(cluster), "-P", "-t", topic, "-X", "acks=all"],
        input="\n".join(values).encode() + b"\n", capture_output=True, timeout=120,
    )
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = subprocess.run(
        [KCAT, *_kcat_args(cluster), "-G", "kcat-secure", topic, "-o", "beginning", "-c", "100", "-e"],
        capture_output=True, timeout=120,
    )
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout.decode().split() == values
