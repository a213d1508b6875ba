"""Fetch from follower (KIP-392) with confluent-kafka on a three-node EmbeddedCluster with racks.

Brokers 1, 2, 3 sit in racks ``rack-1``, ``rack-2``, ``rack-3`` with
``replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector``. A consumer
whose ``client.rack`` is a follower's rack is told by the leader to read from that follower
(``preferred_read_replica``) and then fetches from it: the follower serves the consumer's fetches
(counted on the broker side) and the consumer reads every record. Without a selector, the same
consumer reads from the leader only.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
CONFIGS = {"replica.fetch.wait.max.ms": "100", "replica.fetch.backoff.ms": "100"}
RACKS = {n: {"broker.rack": f"rack-{n}"} for n in (1, 2, 3)}
TOPIC = "ffr"
RECORDS = 200


def _setup(c: EmbeddedCluster) -> tuple[int, int]:
    """Create the topic, produce RECORDS acks=all; return (leader, a follower)."""
    bootstrap = c.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(30)
    c.call(c.wait_for_topic, TOPIC)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    for i in range(RECORDS):
        p.produce(TOPIC, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    t = c.node(1).image.get(TOPIC)
    assert t is not None
    leader = t.partitions[0].leader
    follower = next(n for n in t.partitions[0].replicas if n != leader)
    # The follower has everything and knows the high watermark.
    deadline = time.monotonic() + 20
    while (rp := c.node(follower).replica_manager.get(TOPIC, 0)) is None or rp.high_watermark < RECORDS:
        assert time.monotonic() < deadline, "follower did not catch up"
        time.sleep(0.05)
    return leader, follower


def _consume(c: EmbeddedCluster, rack: str, want: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": c.bootstrap_servers,
            "group.id": f"ffr-{uuid.uuid4().hex[:6]}",
            "client.rack": rack,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    consumer.subscribe([TOPIC])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < want:
            assert time.monotonic() < deadline, f"read {len(values)} of {want}"
            values += [m.value() for m in consumer.consume(500, 0.5) if m.error() is None]
    finally:
        consumer.close()
    return values


def test_consumer_reads_from_the_follower_in_its_rack(tmp_path: Path) -> None:
    with EmbeddedCluster(
        3, data_dir=tmp_path, node_configs=RACKS, **{**CONFIGS, "replica.selector.class": RACK_AWARE}
    ) as c:
        leader, follower = _setup(c)
        before = {n: c.node(n).replica_manager.follower_consumer_reads for n in (1, 2, 3)}
        values = _consume(c, f"rack-{follower}", RECORDS)
        assert values == [b"v%d" % i for i in range(RECORDS)]
        served = {n: c.node(n).replica_manager.follower_consumer_reads - before[n] for n in (1, 2, 3)}
        assert served[follower] > 0, served  # the consumer's fetches landed on the follower
        assert all(served[n] == 0 for n in (1, 2, 3) if n != follower), served

        # More records while the consumer reads from the follower: it sees them as the
        # follower's high watermark moves.
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "log_level": 3})
        for i in range(RECORDS, RECORDS + 50):
            p.produce(TOPIC, value=b"v%d" % i, partition=0)
        assert p.flush(30) == 0
        values = _consume(c, f"rack-{follower}", RECORDS + 50)
        assert values == [b"v%d" % i for i in range(RECORDS + 50)]


def test_without_a_selector_consumers_read_from_the_leader(tmp_path: Path) -> None:
    with EmbeddedCluster(3, data_dir=tmp_path, node_configs=RACKS, **CONFIGS) as c:
        _leader, follower = _setup(c)
        values = _consume(c, f"rack-{follower}", RECORDS)
        assert values == [b"v%d" % i for i in range(RECORDS)]
        assert all(c.node(n).replica_manager.follower_consumer_reads == 0 for n in (1, 2, 3))
