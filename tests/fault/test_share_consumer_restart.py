"""Share-group delivery state (KIP-932) survives broker restarts: SIGTERM, kill -9, and on a
3-node cluster the kill -9 of the broker that is the share coordinator and partition leader.

A real ``ShareConsumer`` (confluent-kafka) acknowledges records explicitly; after each restart a
new member of the same group must get exactly the records that were not accepted or rejected,
each with its delivery count carried over, and never an accepted or rejected one. The brokers run
a non-default ``group.share.delivery.count.limit`` (3): a record released on its third delivery
after a restart is archived, which a broker that forgot the setting (default 5) would deliver
again.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.coordinator.share.share_state_records import partition_for_key
from zurau.testing.broker_process import BrokerProcess
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SHARE_CONFIGS = {
    "group.share.enable": "true",
    "group.share.heartbeat.interval.ms": "300",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.record.lock.duration.ms": "3000",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.delivery.count.limit": "3",
}
STATE_PARTITIONS = 5
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


def _create(bootstrap: str, topic: str, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.create_topics([NewTopic(topic, 1, rf)])[topic].result(15)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _produce(bootstrap: str, topic: str, offsets: range) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in offsets:
        p.produce(topic, value=f"job-{i}".encode())
    assert p.flush(30) == 0


def _member(bootstrap: str, group: str, topic: str) -> ShareConsumer:
    c = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    c.subscribe([topic])
    return c


def _deliveries(
    c: ShareConsumer, acks: dict[int, Any], want: int, seconds: float = 60
) -> list[tuple[int, int]]:
    """Poll until ``want`` deliveries arrived (or ``seconds``), acknowledging each by ``acks``
    (offset -> type, default ACCEPT), then commit; returns (offset, delivery count) in order."""
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + seconds
    while len(got) < want and time.monotonic() < deadline:
        for m in c.poll(0.5):
            if m.error() is not None:
                continue  # a broker restarting: the consumer reconnects
            got.append((m.offset(), m.delivery_count()))
            c.acknowledge(m, acks.get(m.offset(), ACCEPT))
    results = c.commit_sync(30)
    assert all(v is None for v in results.values()), results
    return got


def _quiet(c: ShareConsumer, seconds: float = 4) -> list[tuple[int, int]]:
    """What still arrives within ``seconds`` (accepting it)."""
    extra = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in c.poll(0.5):
            if m.error() is None:
                extra.append((m.offset(), m.delivery_count()))
                c.acknowledge(m, ACCEPT)
    if extra:
        c.commit_sync(30)
    return extra


def _join(bootstrap: str, group: str, topic: str) -> ShareConsumer:
    c = _member(bootstrap, group, topic)
    deadline = time.monotonic() + 5  # assigned (the group starts at the latest offset)
    while time.monotonic() < deadline:
        assert not [m for m in c.poll(0.2) if m.error() is None]
    return c


def test_share_state_survives_sigterm_and_kill9(tmp_path: Path) -> None:
    topic, group = f"q-{uuid.uuid4().hex[:6]}", "workers"
    with BrokerProcess(tmp_path / "data", **SHARE_CONFIGS) as bp:
        bs = bp.bootstrap_servers
        _create(bs, topic, 1)
        c = _join(bs, group, topic)
        _produce(bs, topic, range(10))
        acks = {5: REJECT, **{o: RELEASE for o in range(6, 10)}}
        first = _deliveries(c, acks, 10)
        assert sorted(first) == [(o, 1) for o in range(10)]
        c.close()

        bp.stop()  # SIGTERM
        bp.start()
        c = _member(bs, group, topic)
        second = _deliveries(c, {8: RELEASE, 9: RELEASE}, 4)
        assert sorted(second) == [(6, 2), (7, 2), (8, 2), (9, 2)], second
        c.close()

        bp.kill()  # kill -9 right after the acknowledgements were answered
        bp.start()
        c = _member(bs, group, topic)
        third = _deliveries(c, {8: RELEASE}, 2)
        # 8 is released on its 3rd delivery: archived at the limit of 3, never delivered again
        assert sorted(third) == [(8, 3), (9, 3)], third
        _produce(bs, topic, range(10, 12))
        assert sorted(_deliveries(c, {}, 2)) == [(10, 1), (11, 1)]
        assert _quiet(c) == []
        c.close()


def _leader(bootstrap: str, topic: str, partition: int = 0) -> int:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=15)
    return md.topics[topic].partitions[partition].leader


def _share_coordinator(bootstrap: str, group: str, topic: str) -> int:
    """The broker leading the ``__share_group_state`` partition of ``group:topic-id:0``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(15)
    tid = desc.topic_id
    topic_id = uuid.UUID(
        bytes=tid.get_most_significant_bits().to_bytes(8, "big", signed=True)
        + tid.get_least_significant_bits().to_bytes(8, "big", signed=True)
    )
    state_partition = partition_for_key(group, topic_id, 0, STATE_PARTITIONS)
    return _leader(bootstrap, "__share_group_state", state_partition)


def test_share_state_survives_kill9_of_leader_and_share_coordinator_on_three_nodes(tmp_path: Path) -> None:
    topic, group = f"q-{uuid.uuid4().hex[:6]}", "workers"
    overrides = {
        **SHARE_CONFIGS,
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
        "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
        "share.coordinator.state.topic.replication.factor": "3",
        "share.coordinator.state.topic.min.isr": "2",
    }
    with ClusterProcesses(tmp_path, 3, **overrides) as cluster:
        bs = cluster.bootstrap_servers
        _create(bs, topic, 3)
        c = _join(bs, group, topic)
        _produce(bs, topic, range(20))
        first = _deliveries(c, {o: RELEASE for o in range(10, 20)}, 20)
        assert sorted(first) == [(o, 1) for o in range(20)]
        c.close()

        # 1. kill -9 the partition leader (the share-partition leader)
        victim = _leader(bs, topic)
        cluster.kill(victim)
        c = _member(cluster.bootstrap_servers, group, topic)
        second = _deliveries(c, {o: RELEASE for o in range(15, 20)}, 10, seconds=90)
        assert sorted(second) == [(o, 2) for o in range(10, 20)], second
        c.close()
        cluster.restart(victim)

        # 2. kill -9 the share coordinator of the share-partition
        coordinator = _share_coordinator(cluster.bootstrap_servers, group, topic)
        cluster.kill(coordinator)
        c = _member(cluster.bootstrap_servers, group, topic)
        third = _deliveries(c, {}, 5, seconds=90)
        assert sorted(third) == [(o, 3) for o in range(15, 20)], third
        assert _quiet(c) == []
        c.close()
