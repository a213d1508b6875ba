"""An asyncio Kafka client over :mod:`zurau.protocol`, for Zurau's own tools and inter-broker calls.

It speaks only the standard Kafka protocol and negotiates versions from ApiVersions, so it works
against Zurau and against any Kafka-compatible cluster. Modules:

* :mod:`~zurau.client.config`: client properties (``bootstrap.servers``, ``client.id`` ...);
* :mod:`~zurau.client.connection`: one pipelined connection with version negotiation;
* :mod:`~zurau.client.cluster`: bootstrap, metadata, a connection per broker;
* :mod:`~zurau.client.admin`: topics, partitions, configs, offsets, records;
* :mod:`~zurau.client.producer` / :mod:`~zurau.client.consumer`: records in and out;
* :mod:`~zurau.client.group`: classic consumer groups (range assignor, committed offsets);
* :mod:`~zurau.client.coordinator_lookup`: FindCoordinator for groups and transactional ids;
* :mod:`~zurau.client.partitioner`: Kafka's murmur2 key partitioner;
* :mod:`~zurau.client.topic_admin`: ``ensure_topic``, the create-if-missing every edge service uses;
* :mod:`~zurau.client.kafka_based_log`: a compacted topic as a service's state (Kafka's
  ``KafkaBasedLog``: Connect's stores, the registry's ``_schemas``);
* :mod:`~zurau.client.errors`: client-side errors, and Kafka's error names for people.

This package must not import the broker stack (broker, replication, storage, metadata); an
import-linter contract enforces it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, NewTopic, ResourceType
    from zurau.client.cluster import Cluster
    from zurau.client.config import ClientConfig
    from zurau.client.consumer import Consumer
    from zurau.client.errors import (
        BrokerUnreachableError,
        ClientConfigError,
        ClientError,
        ConnectionLostError,
        RequestTimeoutError,
        UnsupportedApiError,
    )
    from zurau.client.producer import Producer
    from zurau.client.types import ConsumerRecord, RecordMetadata, TopicPartition

# Exported names and their modules, imported on first use so that importing one small module
# (say zurau.client.config) does not load the producer, consumer and compression codecs.
_EXPORTS = {
    "AdminClient": "admin",
    "AlterConfigOp": "admin",
    "AlterOp": "admin",
    "ConfigResource": "admin",
    "NewTopic": "admin",
    "ResourceType": "admin",
    "Cluster": "cluster",
    "ClientConfig": "config",
    "Consumer": "consumer",
    "BrokerUnreachableError": "errors",
    "ClientConfigError": "errors",
    "ClientError": "errors",
    "ConnectionLostError": "errors",
    "RequestTimeoutError": "errors",
    "UnsupportedApiError": "errors",
    "Producer": "producer",
    "ConsumerRecord": "types",
    "RecordMetadata": "types",
    "TopicPartition": "types",
}

__all__ = [
    "AdminClient",
    "AlterConfigOp",
    "AlterOp",
    "BrokerUnreachableError",
    "ClientConfig",
    "ClientConfigError",
    "ClientError",
    "Cluster",
    "ConfigResource",
    "ConnectionLostError",
    "Consumer",
    "ConsumerRecord",
    "NewTopic",
    "Producer",
    "RecordMetadata",
    "RequestTimeoutError",
    "ResourceType",
    "TopicPartition",
    "UnsupportedApiError",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zurau.client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"zurau.client.{module}"), name)
