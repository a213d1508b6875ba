"""kill -9 a broker while it creates the partitions of a large topic (issue 34), restart it over its
data: it starts, serves, and every partition of the topic is usable.

A topic's partitions are created on disk without an fsync each (storage/partition_log.py,
``PartitionLog.create_new``; their first flush round shares one ``syncfs``), so a kill can land
between any two steps of a partition's creation: after its ``mkdir``, between its segment files,
before or after its leader-epoch checkpoint. The next start must open every such directory as a
usable (empty) log, create the partitions that have no directory yet, and never fail its load or
serve a half-made partition as corrupt. The per-step cases are in
tests/unit/test_partition_creation.py; this test is the whole process, through real clients:
CreateTopics from confluent-kafka's AdminClient, a SIGKILL once part of the partition directories
exist, a restart on the same data dir and port, then one record produced (acks=all) to every
partition and read back from every partition.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.slow

PARTITIONS = 2000
KILL_AFTER = (150, 900)  # kill once this many partition directories exist (one run each)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data", log_level="WARNING")
    b.start_timeout = 120.0
    b.start()
    try:
        yield b
    finally:
        b.kill()


def partition_dirs(data: Path, topic: str) -> int:
    prefix = f"{topic}-"
    with os.scandir(data) as it:
        return sum(1 for e in it if e.name.startswith(prefix) and e.name[len(prefix) :].isdigit())


def wait_for_leaders(bootstrap: str, topic: str, partitions: int, timeout: float = 120.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            if all(p.leader >= 0 and p.error is None for p in md.partitions.values()):
                return
        assert time.monotonic() < deadline, f"{topic}: not every partition has a leader after {timeout}s"
        time.sleep(0.2)


def produce_to_every_partition(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, bytes]]:
    """One record (acks=all) to each partition; (offset, value) per partition, all delivered."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    delivered: dict[int, tuple[int, bytes]] = {}
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered[msg.partition()] = (msg.offset(), msg.value())  # type: ignore[attr-defined]

    for p in range(partitions):
        producer.produce(
            topic, value=f"p{p}-{uuid.uuid4().hex[:6]}".encode(), partition=p, on_delivery=on_delivery
        )
        producer.poll(0)
    assert producer.flush(120) == 0, "not every record was delivered"
    assert not errors, f"{len(errors)} produce errors, e.g. {errors[:3]}"
    assert sorted(delivered) == list(range(partitions))
    return delivered


def consume_every_partition(bootstrap: str, topic: str, want: dict[int, tuple[int, bytes]]) -> None:
    """Read each partition from the beginning until its produced record arrived."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in want])
        missing = set(want)
        deadline = time.monotonic() + 120
        while missing and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                assert msg.error() is None, f"consumer error: {msg.error()}"
                p = msg.partition()
                assert (msg.offset(), msg.value()) == want[p], f"partition {p}: unexpected record"
                missing.discard(p)
        assert not missing, (
            f"{len(missing)} partitions never returned their record, e.g. {sorted(missing)[:5]}"
        )
    finally:
        consumer.close()


@pytest.mark.parametrize("kill_after", KILL_AFTER)
def test_kill9_while_creating_a_large_topic_leaves_every_partition_usable(
    broker: BrokerProcess, kill_after: int
) -> None:
    topic = f"big-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=60)  # not waited for
    deadline = time.monotonic() + 60
    while partition_dirs(broker.data_dir, topic) < kill_after:
        assert time.monotonic() < deadline, "the broker never started creating the partitions"
        time.sleep(0.001)
    broker.kill()
    made = partition_dirs(broker.data_dir, topic)
    assert kill_after <= made < PARTITIONS, f"the kill came after the creation ({made} directories)"

    broker.start()  # the same data dir and port; returns once the port accepts connections
    wait_for_leaders(broker.bootstrap_servers, topic, PARTITIONS)
    assert partition_dirs(broker.data_dir, topic) == PARTITIONS
    delivered = produce_to_every_partition(broker.bootstrap_servers, topic, PARTITIONS)
    assert all(offset == 0 for offset, _value in delivered.values()), "a new partition held records"
    consume_every_partition(broker.bootstrap_servers, topic, delivered)
    # A second topic after the restart is created as usual.
    other = f"after-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(other, 8, 1)])[other].result(60)
    consume_every_partition(
        broker.bootstrap_servers, other, produce_to_every_partition(broker.bootstrap_servers, other, 8)
    )
