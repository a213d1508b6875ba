"""kafka-python's ``KafkaAdminClient.describe_topic_partitions`` (DescribeTopicPartitions,
KIP-966) against Zurau: a 60-partition topic walked page by page with the cursor.

The only client in the test extras that sends api key 75: librdkafka (confluent-kafka 2.16)
describes topics with Metadata, aiokafka and kcat do not know the API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from kafka import KafkaAdminClient

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

PARTITIONS = 60


@pytest.mark.zurau_topic(partitions=PARTITIONS)
def test_describe_topic_partitions_pages(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=zurau_broker.bootstrap_servers)
    try:
        seen: list[int] = []
        cursor = None
        pages = 0
        while True:
            page = admin.describe_topic_partitions([zurau_topic], response_partition_limit=25, cursor=cursor)
            (topic,) = page["topics"]
            assert topic["error_code"] == 0 and topic["name"] == zurau_topic and not topic["is_internal"]
            for p in topic["partitions"]:
                assert p["error_code"] == 0 and p["leader_id"] == p["replica_nodes"][0]
                assert p["isr_nodes"] == p["replica_nodes"] and p["offline_replicas"] == []
                assert not p["eligible_leader_replicas"] and not p["last_known_elr"]
            seen += [p["partition_index"] for p in topic["partitions"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
            assert cursor["topic_name"] == zurau_topic
        assert seen == list(range(PARTITIONS)) and pages == 3
        missing = admin.describe_topic_partitions([zurau_topic + "-missing"])
        assert (
            missing["topics"][0]["error_code"] == 3 and missing["next_cursor"] is None
        )  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        admin.close()
