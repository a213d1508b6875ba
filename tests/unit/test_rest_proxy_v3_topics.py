"""The v3 topic endpoints' pure parts, without sockets: an ongoing reassignment's resource (one
broker cannot have one), CreateTopic bodies, config resources, and how broker refusals become
Confluent's error bodies."""

from __future__ import annotations

import pytest

from zurau.client.admin import ConfigEntry, ConfigSource, PartitionReassignment
from zurau.client.cluster import PartitionMetadata
from zurau.client.types import TopicPartition
from zurau.edge_requests import BadInput
from zurau.protocol.errors import (
    InvalidReplicationFactorError,
    NotLeaderOrFollowerError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
)
from zurau.rest_proxy.errors import RestProxyError
from zurau.rest_proxy.v3_resources import V3Links
from zurau.rest_proxy.v3_topics import (
    TopicRequest,
    config_json,
    could_be_topic,
    partition_json,
    reassignment_json,
    refused,
)

LINKS = V3Links("http://proxy:8082", "c1")


def test_reassignment_resource() -> None:
    r = PartitionReassignment(replicas=(1, 2, 3), adding_replicas=(3,), removing_replicas=(1,))
    assert reassignment_json(LINKS, TopicPartition("t", 4), r) == {
        "kind": "KafkaReassignment",
        "metadata": {
            "self": "http://proxy:8082/v3/clusters/c1/topics/t/partitions/4/reassignment",
            "resource_name": "crn:///kafka=c1/topic=t/partition=4/reassignment",
        },
        "cluster_id": "c1",
        "topic_name": "t",
        "partition_id": 4,
        "adding_replicas": [3],
        "removing_replicas": [1],
        "replicas": {"related": "http://proxy:8082/v3/clusters/c1/topics/t/partitions/4/replicas"},
    }


def test_partition_without_leader_has_no_leader_link() -> None:
    p = PartitionMetadata("t", 0, leader=-1, leader_epoch=0, replicas=(1,), isr=())
    body = partition_json(LINKS, "t", p)
    assert "leader" not in body and body["replicas"]["related"].endswith("/partitions/0/replicas")


def test_config_resource_names_sources_as_confluent() -> None:
    c = ConfigEntry(
        "x.y", None, ConfigSource(7), read_only=True, is_sensitive=True,
        synonyms=(("x.y", None, ConfigSource(4)),),
    )
    body = config_json(LINKS, "t", c)
    assert body["source"] == "UNKNOWN" and body["synonyms"] == [{"name": "x.y", "value": None, "source": "STATIC_BROKER_CONFIG"}]
    assert body["is_default"] is False and body["is_read_only"] is True and body["is_sensitive"] is True
    assert body["metadata"]["resource_name"] == "crn:///kafka=c1/topic=t/config=x.y"


def test_create_request_parsing() -> None:
    req = TopicRequest.parse({
        "topic_name": "t", "partitions_count": 3, "replication_factor": 2,
        "replicas_assignments": {"1": [2, 3], "0": [1, 2]},
        "configs": [{"name": "a", "value": "1"}, {"name": "b", "value": None}, {"name": "c", "value": 5}],
        "validate_only": True, "unknown_field": "ignored",
    })
    assert req.assignments == ((0, (1, 2)), (1, (2, 3)))
    assert req.configs == (("a", "1"), ("b", None), ("c", "5"))
    assert (req.partitions, req.replication_factor, req.validate_only) == (3, 2, True)
    bare = TopicRequest.parse({"topic_name": "t", "partitions_count": None})
    assert (bare.partitions, bare.replication_factor, bare.assignments, bare.validate_only) == (None, None, (), False)


@pytest.mark.parametrize("body", [
    {}, {"topic_name": ""}, {"topic_name": "a b"}, {"topic_name": ".."}, {"topic_name": "t", "partitions_count": True},
    {"topic_name": "t", "replication_factor": -40000}, {"topic_name": "t", "replicas_assignments": []},
    {"topic_name": "t", "replicas_assignments": {"0": ["1"]}}, {"topic_name": "t", "replicas_assignments": {"9" * 30: [1]}},
    {"topic_name": "t", "configs": [1]}, {"topic_name": "t", "validate_only": 1},
])
def test_create_request_refusals(body: dict[str, object]) -> None:
    with pytest.raises((RestProxyError, BadInput)) as info:
        TopicRequest.parse(body)
    assert getattr(info.value, "status", None) == 400


def test_refusals_keep_the_broker_message() -> None:
    e = refused(InvalidReplicationFactorError("Replication factor: 3 larger than available brokers: 1."))
    assert (e.status, e.error_code, e.message) == (400, 40002, "Replication factor: 3 larger than available brokers: 1.")
    assert refused(TopicAlreadyExistsError("Topic 't' already exists.")).body() == {
        "error_code": 40002, "message": "Topic 't' already exists."}
    assert refused(TopicAuthorizationFailedError("no")).status == 403
    assert refused(NotLeaderOrFollowerError()).status == 500


def test_topic_names() -> None:
    assert could_be_topic("a.b_c-1") and could_be_topic("x" * 249)
    assert not any(could_be_topic(n) for n in ("", ".", "..", "x" * 250, "a b", "a/b", "ü"))
