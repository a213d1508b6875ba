"""DescribeTopicPartitions (KIP-966): topics' partitions, page by page, for admin clients.

Which topics: those named in the request, or every topic when the list is empty; in both cases
only names at or after the cursor's topic (string order), described in name order. A cursor
naming a topic that the (non-empty) list lacks, or a negative cursor partition, makes the request
invalid: every requested topic is answered with INVALID_REQUEST and no partitions (Kafka's
error response for this API).

Pages: the answer holds at most ``min(response_partition_limit, max.request.partition.size.limit)``
partitions (at least 1). The cursor's topic starts at the cursor's partition index, the others at
0. When a topic's partitions do not all fit, ``next_cursor`` names it and its first partition
left out; when the limit is used up exactly, ``next_cursor`` names the next topic to describe at
partition 0 (it may turn out unknown), and no next topic means a null cursor. Topics answered
with an error carry no partitions and use none of the limit.

Errors: a named topic that does not exist is answered with UNKNOWN_TOPIC_OR_PARTITION, or
INVALID_TOPIC_EXCEPTION when its name is not a legal topic name, with its internal flag as its
name implies. The list of all topics silently leaves out those the principal may not DESCRIBE; a
named one it may not DESCRIBE gets TOPIC_AUTHORIZATION_FAILED (zero topic id, exists or not).
As for Metadata, only the denials of named topics are logged.
Those denied topics come after the described ones, and only those met before the page ended.

Per partition: leader (-1 when the leader broker is not registered; Kafka keeps a fenced one),
leader epoch, replicas and ISR as registered, offline replicas (on unregistered or fenced
brokers), and the eligible leader replicas and last known ELR as the image holds them (KIP-966;
empty lists for a partition without, as Kafka answers, and always without the
``eligible.leader.replicas.version`` feature). Per topic, the topic id, the
internal flag and ``topic_authorized_operations`` (always filled in, as Kafka does: there is no
request flag) for each topic not denied.

Served on broker listeners only, as in Kafka (``broker_only`` in the schema).
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed, topic_operations
from zurau.broker.handlers._common import ZERO_UUID
from zurau.broker.request_context import RequestContext
from zurau.metadata.image import INTERNAL_TOPICS, MetadataImage, PartitionRegistration
from zurau.metadata.topic_names import validate_topic_name
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    InvalidRequestError,
    InvalidTopicError,
    KafkaError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponseNextCursor,
    DescribeTopicPartitionsResponseTopics,
    DescribeTopicPartitionsResponseTopicsPartitions,
)
from zurau.protocol.schemas.describe_topic_partitions import AUTHORIZED_OPERATIONS_UNSET

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS


def _partition_entry(
    image: MetadataImage, i: int, p: PartitionRegistration
) -> DescribeTopicPartitionsResponseTopicsPartitions:
    leader = p.leader
    offline: list[int] = []
    brokers = image.brokers
    if brokers:  # an image without registrations is a single node that does not register
        offline = [r for r in p.replicas if r not in brokers or brokers[r].fenced]
        if leader not in brokers:
            leader = -1
    return {
        "error_code": 0,
        "partition_index": i,
        "leader_id": leader,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": list(p.isr),
        "eligible_leader_replicas": list(p.elr),
        "last_known_elr": list(p.last_known_elr),
        "offline_replicas": offline,
    }


def _error_topic(
    name: str, error: KafkaError, internal: bool = False
) -> DescribeTopicPartitionsResponseTopics:
    return {
        "error_code": error.code,
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": internal,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_UNSET,
    }


def _missing_error(name: str) -> KafkaError:
    try:
        validate_topic_name(name)
    except KafkaError:
        return InvalidTopicError(f"invalid topic name {name!r}")
    return UnknownTopicOrPartitionError(f"unknown topic {name!r}")


def handle(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    image = ctx.image
    requested = [t["name"] for t in req["topics"]]
    fetch_all = not requested
    cursor = req["cursor"]
    start_name = cursor["topic_name"] if cursor is not None else ""
    names = sorted({n for n in (image.topics_by_name if fetch_all else requested) if n >= start_name})
    if cursor is not None and (cursor["partition_index"] < 0 or (not fetch_all and start_name not in names)):
        invalid = InvalidRequestError("the cursor must name a requested topic and a partition index >= 0")
        return {
            "throttle_time_ms": 0,
            "topics": [_error_topic(n, invalid) for n in requested],
            "next_cursor": None,
        }

    remaining = max(
        min(ctx.config.get("max.request.partition.size.limit"), req["response_partition_limit"]), 1
    )
    described: list[DescribeTopicPartitionsResponseTopics] = []
    denied: list[DescribeTopicPartitionsResponseTopics] = []
    next_cursor: DescribeTopicPartitionsResponseNextCursor | None = None
    for name in names:
        if not allowed(ctx, Op.DESCRIBE, TOPIC, name, log=not fetch_all):
            if not fetch_all:
                denied.append(
                    _error_topic(name, TopicAuthorizationFailedError("Topic authorization failed."))
                )
            continue
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        t = image.get(name)
        if t is None:
            if not fetch_all:
                entry = _error_topic(name, _missing_error(name), name in INTERNAL_TOPICS)
                entry["topic_authorized_operations"] = topic_operations(ctx, name)
                described.append(entry)
            continue
        first = cursor["partition_index"] if cursor is not None and name == start_name else 0
        count = len(t.partitions)
        upper = min(count, first + remaining)
        described.append(
            {
                "error_code": 0,
                "name": name,
                "topic_id": t.topic_id,
                "is_internal": t.is_internal,
                "partitions": [
                    _partition_entry(image, i, t.partitions[i])
                    for i in range(first, upper)
                    if i in t.partitions
                ],
                "topic_authorized_operations": topic_operations(ctx, name),
            }
        )
        if upper < count:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= max(upper - first, 0)
    return {"throttle_time_ms": 0, "topics": described + denied, "next_cursor": next_cursor}
