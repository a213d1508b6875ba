"""Which ``__remote_log_metadata`` partition holds a topic-partition's events: Kafka's
RemoteLogMetadataTopicPartitioner, stable across processes (never Python's randomized hash)."""

from __future__ import annotations

import uuid

from zurau.replication.tiered.topic_based_metadata_manager import metadata_partition
from zurau.types import TopicIdPartition, parse_kafka_uuid


def test_kafkas_own_test_vector() -> None:
    # Kafka's ConsumerTaskTest.testCanProcessRecord: with 5 metadata partitions, partitions 0, 1
    # and 2 of this topic id share a metadata partition (the other values pin this implementation).
    topic_id = parse_kafka_uuid("Bp9TDduJRGa9Q5rlvCJOxg")
    found = [metadata_partition(TopicIdPartition(topic_id, "sample", p), 5) for p in range(8)]
    assert found == [2, 2, 2, 4, 3, 1, 2, 3]


def test_the_partition_depends_on_topic_id_and_partition_only_and_spreads() -> None:
    topic_id = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    assert metadata_partition(TopicIdPartition(topic_id, "a", 3), 50) == metadata_partition(
        TopicIdPartition(topic_id, "renamed", 3), 50
    )
    used = {metadata_partition(TopicIdPartition(uuid.UUID(int=i * 7919), "t", i % 4), 50) for i in range(500)}
    assert used <= set(range(50)) and len(used) > 40
