"""Leadership admin APIs from real clients against a three-node EmbeddedCluster: confluent-kafka's
``AdminClient.elect_leaders`` (librdkafka has no reassignment API) and kafka-python's
``elect_leaders``, ``alter_partition_reassignments`` and ``list_partition_reassignments``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import TopicPartition as KTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import ElectionNotNeededError, NoReassignmentInProgressError

from zurau.embedded import EmbeddedCluster
from zurau.metadata.image import PartitionRegistration

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    props = {
        "replica.lag.time.max.ms": "1500",
        "replica.fetch.wait.max.ms": "200",
        "broker.heartbeat.interval.ms": "500",
        "auto.leader.rebalance.enable": "false",
    }
    with EmbeddedCluster(3, data_dir=tmp_path_factory.mktemp("leadership-clients"), **props) as c:
        yield c


def _part(c: EmbeddedCluster, topic: str, node: int) -> PartitionRegistration:
    t = c.node(node).image.get(topic)
    assert t is not None
    return t.partitions[0]


def _wait(c: EmbeddedCluster, topic: str, check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(c.node(n).image.get(topic) is not None and check(_part(c, topic, n)) for n in (1, 2, 3)):
        assert time.monotonic() < deadline, f"{topic}: not reached; now {_part(c, topic, 1)}"
        time.sleep(0.05)


def _topic(c: EmbeddedCluster, rf: int) -> str:
    name = f"lc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, rf)])[name].result(30)
    _wait(c, name, lambda p: len(p.isr) == rf)
    return name


def _reorder(c: EmbeddedCluster, kadmin: KafkaAdminClient, topic: str) -> tuple[int, int]:
    """Make the second replica the preferred one while the first still leads: (leader, preferred)."""
    a, b, c3 = _part(c, topic, 1).replicas
    result = kadmin.alter_partition_reassignments({KTopicPartition(topic, 0): [b, a, c3]})
    assert result == {KTopicPartition(topic, 0): None}
    _wait(c, topic, lambda p: p.replicas == (b, a, c3) and p.leader == a)
    return a, b


def test_confluent_kafka_elect_leaders(cluster: EmbeddedCluster) -> None:
    topic = _topic(cluster, 3)
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        _leader, preferred = _reorder(cluster, kadmin, topic)
    finally:
        kadmin.close()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    tp = TopicPartition(topic, 0)
    result = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)
    assert [(k.topic, k.partition, v) for k, v in result.items()] == [(topic, 0, None)]
    _wait(cluster, topic, lambda p: p.leader == preferred)
    again = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)
    (err,) = again.values()
    assert isinstance(err, KafkaError) and err.code() == KafkaError.ELECTION_NOT_NEEDED
    unclean = admin.elect_leaders(ElectionType.UNCLEAN, [tp]).result(30)
    (err,) = unclean.values()
    assert isinstance(err, KafkaError) and err.code() == KafkaError.ELECTION_NOT_NEEDED
    missing = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("no-such-topic", 0)]).result(30)
    (err,) = missing.values()
    assert isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_kafka_python_elect_and_reassign(cluster: EmbeddedCluster) -> None:
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        topic = _topic(cluster, 3)
        _leader, preferred = _reorder(cluster, kadmin, topic)
        first_try = kadmin.elect_leaders(0, {topic: [0]})
        assert [p.error_code for r in first_try.replica_election_results for p in r.partition_result] == [0]
        _wait(cluster, topic, lambda p: p.leader == preferred)
        # kafka-python does not raise ELECTION_NOT_NEEDED; the response carries it.
        again = kadmin.elect_leaders(0, {topic: [0]})
        codes = [p.error_code for r in again.replica_election_results for p in r.partition_result]
        assert codes == [ElectionNotNeededError.errno]

        # RF 1 -> 2 to a stopped broker stays in progress until it is cancelled.
        small = _topic(cluster, 1)
        (first,) = _part(cluster, small, 1).replicas
        # Not the active controller either: kafka-python sends AlterPartitionReassignments to the
        # controller id it cached and fails (UnknownBrokerIdError) rather than look again.
        down = next(n for n in (1, 2, 3) if n not in (first, cluster.controller_id))
        ktp = KTopicPartition(small, 0)
        cluster.call(cluster.stop_node, down)
        try:
            assert kadmin.alter_partition_reassignments({ktp: [first, down]}) == {ktp: None}
            listed = kadmin.list_partition_reassignments()
            assert listed[ktp] == {"replicas": [first, down], "adding_replicas": [down], "removing_replicas": []}
            assert kadmin.list_partition_reassignments({small: [0]}) == {ktp: listed[ktp]}
            assert kadmin.alter_partition_reassignments({ktp: None}) == {ktp: None}
            assert kadmin.list_partition_reassignments() == {}
            again = kadmin.alter_partition_reassignments({ktp: None})
            assert again[ktp] is NoReassignmentInProgressError
        finally:
            cluster.call(cluster.start_node, down)
        # RF 1 -> 3 completes once the new replicas are in sync.
        target = [first] + [n for n in (1, 2, 3) if n != first]
        assert kadmin.alter_partition_reassignments({ktp: target}) == {ktp: None}
        _wait(cluster, small, lambda p: p.replicas == tuple(target) and sorted(p.isr) == [1, 2, 3] and not p.reassigning)
        assert kadmin.list_partition_reassignments() == {}
    finally:
        kadmin.close()

