"""A rolling restart under load: every broker of a three-node cluster is stopped (a controlled
shutdown: leadership and ISR move away first) and started again, one after the other, while
confluent-kafka's idempotent producer keeps writing with acks=all and its default retries to a
topic of replication factor 3 and ``min.insync.replicas=2``. No error reaches the producer, and a
consumer reads back every acknowledged record exactly once, in order per partition."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "rolling"
PARTITIONS = 3


def _fully_replicated(admin: AdminClient) -> bool:
    t = admin.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
    return t is not None and all(p.leader >= 0 and len(p.isrs) == 3 for p in t.partitions.values())


def test_rolling_restart_under_load_loses_nothing(tmp_path: Path) -> None:
    configs = {"replica.lag.time.max.ms": "3000", "broker.heartbeat.interval.ms": "500"}
    with EmbeddedCluster(3, data_dir=tmp_path, **configs) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
        c.call(c.wait_for_topic, TOPIC)

        acked: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        errors: list[Any] = []
        stop = threading.Event()

        def report(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                acked[msg.partition()].append((msg.offset(), msg.value()))

        def produce() -> None:
            p = Producer(
                {"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
            )
            i = 0
            deadline = time.monotonic() + 240
            while not stop.is_set() and time.monotonic() < deadline:
                p.produce(TOPIC, value=b"r-%d" % i, key=b"%d" % i, on_delivery=report)
                i += 1
                p.poll(0.002)  # about 400 records/s: a steady load, bounded
            assert p.flush(120) == 0

        producer = threading.Thread(target=produce, name="rolling-producer")
        producer.start()
        try:
            time.sleep(1.0)
            for node_id in (1, 2, 3):
                c.call(c.stop_node, node_id)
                time.sleep(0.5)
                c.call(c.start_node, node_id)
                deadline = time.monotonic() + 60
                while not _fully_replicated(AdminClient({"bootstrap.servers": c.bootstrap_servers})):
                    assert time.monotonic() < deadline, f"node {node_id} did not rejoin every ISR"
                    time.sleep(0.2)
            time.sleep(1.0)
        finally:
            stop.set()
            producer.join(180)
        assert not producer.is_alive()
        assert errors == [], errors[:5]
        total = sum(len(v) for v in acked.values())
        assert total > 500, "the producer kept writing through the restarts"

        consumer = Consumer(
            {
                "bootstrap.servers": c.bootstrap_servers,
                "group.id": "rolling-check",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        seen: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        try:
            consumer.subscribe([TOPIC])
            deadline = time.monotonic() + 90
            while sum(len(v) for v in seen.values()) < total and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None or msg.error():
                    continue
                seen[msg.partition()].append((msg.offset(), msg.value()))
        finally:
            consumer.close()
        for partition, records in acked.items():
            assert sorted(seen[partition]) == sorted(records), f"partition {partition} differs"
        values = [v for records in seen.values() for _o, v in records]
        assert len(values) == len(set(values)) == total
