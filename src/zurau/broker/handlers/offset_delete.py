"""OffsetDelete: drop a group's committed offsets for some partitions.

The group must exist (GROUP_ID_NOT_FOUND). Offsets of topics the group's members subscribe to
stay (GROUP_SUBSCRIBED_TO_TOPIC for those partitions); a non-empty group that is not a consumer
group cannot lose offsets (NON_EMPTY_GROUP). Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._groups import coordinator, group_error
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponseTopics,
    OffsetDeleteResponseTopicsPartitions,
)
from zurau.types import TopicPartitionKey

API_KEY = ApiKey.OFFSET_DELETE


async def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    groups = coordinator(ctx)
    group_id = req["group_id"]
    err = group_error(ctx, group_id, Op.DELETE)
    if err is not None:
        return {"error_code": err.code, "throttle_time_ms": 0, "topics": []}
    registry = ctx.image
    valid: list[TopicPartitionKey] = []
    results_denied: set[TopicPartitionKey] = set()
    invalid: set[TopicPartitionKey] = set()
    readable = allowed_names(ctx, Op.READ, TOPIC, (t["name"] for t in req["topics"]))
    for t in req["topics"]:
        tm = registry.get(t["name"])
        for p in t["partitions"]:
            tp = (t["name"], p["partition_index"])
            if t["name"] not in readable:
                results_denied.add(tp)
            elif tm is None or not 0 <= tp[1] < tm.num_partitions:
                invalid.add(tp)
            else:
                valid.append(tp)
    code, results = await groups.offset_delete(group_id=group_id, partitions=valid)
    if code:
        return {"error_code": code, "throttle_time_ms": 0, "topics": []}
    topics: list[OffsetDeleteResponseTopics] = []
    for t in req["topics"]:
        parts: list[OffsetDeleteResponseTopicsPartitions] = []
        for p in t["partitions"]:
            tp = (t["name"], p["partition_index"])
            c = UnknownTopicOrPartitionError.code if tp in invalid else results.get(tp, 0)
            if tp in results_denied:
                c = TopicAuthorizationFailedError.code
            parts.append({"partition_index": tp[1], "error_code": c})
        topics.append({"name": t["name"], "partitions": parts})
    return {"error_code": 0, "throttle_time_ms": 0, "topics": topics}
