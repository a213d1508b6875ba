"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), latest tiered
(-5), or the first offset whose timestamp is at or after a given time.

"Latest" is the high watermark for read_uncommitted and the last stable offset for read_committed,
as in Kafka; a timestamp with no record at or after it answers offset -1, timestamp -1. The
lookup itself is the replica manager's (``fetch_offset_for_timestamp``).
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._common import error_of, resolve_topic
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResponseTopics,
    ListOffsetsResponseTopicsPartitions,
)
from zurau.types import LeaderEpoch

API_KEY = ApiKey.LIST_OFFSETS


def handle(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    rm = ctx.replica_manager
    read_committed = req.get("isolation_level", 0) == 1
    topics_out: list[ListOffsetsResponseTopics] = []
    described = allowed_names(ctx, Op.DESCRIBE, TOPIC, (t["name"] for t in req["topics"]))
    for rt in req["topics"]:
        name = rt["name"]
        parts_out: list[ListOffsetsResponseTopicsPartitions] = []
        try:
            if name not in described:
                raise TopicAuthorizationFailedError("Topic authorization failed.")
            topic, terr = resolve_topic(ctx, name, None), None
        except KafkaError as e:
            topic, terr = None, e
        for rp in rt["partitions"]:
            index = rp["partition_index"]
            entry: ListOffsetsResponseTopicsPartitions = {
                "partition_index": index,
                "error_code": 0,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            try:
                if terr is not None:
                    raise terr
                assert topic is not None
                if not 0 <= index < topic.num_partitions:
                    raise UnknownTopicOrPartitionError(f"{name} has no partition {index}")
                found = rm.fetch_offset_for_timestamp(
                    topic.name,
                    index,
                    rp["timestamp"],
                    isolation_level=1 if read_committed else 0,
                    current_leader_epoch=LeaderEpoch(rp.get("current_leader_epoch", -1)),
                )
                entry["offset"], entry["timestamp"], entry["leader_epoch"] = found
            except Exception as e:
                entry["error_code"], _ = error_of(e)
                entry["leader_epoch"] = -1
            parts_out.append(entry)
        topics_out.append({"name": name, "partitions": parts_out})
    return {"throttle_time_ms": 0, "topics": topics_out}
