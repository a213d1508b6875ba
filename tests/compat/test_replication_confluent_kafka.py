"""confluent-kafka (librdkafka) against a replicated topic on a three-node EmbeddedCluster: acks=all
with replication factor 3 and min.insync.replicas=2; the leader of every partition stops; the same
producer carries on against the new leaders (librdkafka follows NOT_LEADER_OR_FOLLOWER and the
metadata), and a consumer reads back every acknowledged record, none lost and none twice."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "replicated"
PARTITIONS = 3
PER_ROUND = 300


def _produce(producer: Producer, round_: str) -> list[bytes]:
    """Produce PER_ROUND records and wait for every delivery report; returns the acknowledged
    values (a failed delivery fails the test)."""
    acked: list[bytes] = []
    errors: list[Any] = []

    def report(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append(msg.value())

    for i in range(PER_ROUND):
        producer.produce(TOPIC, value=b"%s-%d" % (round_.encode(), i), key=b"%d" % i, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0, "every record got a delivery report"
    assert errors == []
    return acked


def test_acks_all_survives_stopping_the_leaders(tmp_path: Path) -> None:
    configs = {"replica.lag.time.max.ms": "3000", "replica.fetch.backoff.ms": "100"}
    with EmbeddedCluster(3, data_dir=tmp_path, **configs) as c:
        bootstrap = c.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])
        futures[TOPIC].result(30)
        c.call(c.wait_for_topic, TOPIC)

        producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
        )
        acked = _produce(producer, "before")

        # Stop the broker leading partition 0 (controlled shutdown): its partitions move to
        # another ISR member, and acks=all goes on with the two brokers left (min ISR 2).
        image = c.node(1).image
        t = image.get(TOPIC)
        assert t is not None
        leader = t.partitions[0].leader
        c.call(c.stop_node, leader)
        deadline = time.monotonic() + 20
        while True:
            t = next(b for b in c.brokers if b is not None).image.get(TOPIC)
            assert t is not None
            if all(p.leader not in (-1, leader) for p in t.partitions.values()):
                break
            assert time.monotonic() < deadline, "no new leaders"
            time.sleep(0.05)
        acked += _produce(producer, "after")

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "replication-check",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([TOPIC])
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        try:
            while len(seen) < len(acked) and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None or msg.error() is not None:
                    continue
                seen.append(msg.value())
        finally:
            consumer.close()
        assert Counter(seen) == Counter(acked), "every acknowledged record once, none lost"
        assert len(acked) == 2 * PER_ROUND
