"""DeleteRecords: move partitions' log start offsets forward (the "low watermark").

Per partition, as Kafka's ``ReplicaManager.deleteRecordsOnLocalLog`` and
``Partition.deleteRecordsOnLeader``: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; an
internal topic INVALID_TOPIC_EXCEPTION; a topic whose ``cleanup.policy`` lacks ``delete``
POLICY_VIOLATION; offset -1 means the high watermark; any other negative offset, or one beyond the
high watermark, OFFSET_OUT_OF_RANGE. An offset at or below the current log start offset changes
nothing. The answer is the partition's new log start offset (low watermark), or -1 with an error.
On a single node every replica is this one, so the response does not wait on ``timeout_ms``.
The policy and offset checks and the deletion are the replica manager's (``delete_records``).
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, Op, allowed_names
from zurau.broker.handlers._common import error_of
from zurau.broker.request_context import RequestContext
from zurau.metadata.image import INTERNAL_TOPICS
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponseTopics,
    DeleteRecordsResponseTopicsPartitions,
)
from zurau.types import Offset

API_KEY = ApiKey.DELETE_RECORDS


def _delete(ctx: RequestContext, name: str, index: int, offset: Offset) -> int:
    t = ctx.image.get(name)
    if t is None or not 0 <= index < t.num_partitions:
        raise UnknownTopicOrPartitionError(f"This server does not host {name}-{index}.")
    if name in INTERNAL_TOPICS:
        raise InvalidTopicError(f"Cannot delete records of internal topic {name}")
    return ctx.replica_manager.delete_records(name, index, offset)


def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics_out: list[DeleteRecordsResponseTopics] = []
    deletable = allowed_names(ctx, Op.DELETE, TOPIC, (t["name"] for t in req["topics"]))
    for rt in req["topics"]:
        name = rt["name"]
        parts_out: list[DeleteRecordsResponseTopicsPartitions] = []
        for rp in rt["partitions"]:
            index = rp["partition_index"]
            try:
                if name not in deletable:
                    raise TopicAuthorizationFailedError("Topic authorization failed.")
                low = _delete(ctx, name, index, Offset(rp["offset"]))
                parts_out.append({"partition_index": index, "low_watermark": low, "error_code": 0})
            except Exception as e:
                code, _msg = error_of(e)
                parts_out.append({"partition_index": index, "low_watermark": -1, "error_code": code})
        topics_out.append({"name": name, "partitions": parts_out})
    return {"throttle_time_ms": 0, "topics": topics_out}
