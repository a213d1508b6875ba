"""OffsetForLeaderEpoch: the end offset of a leader epoch in this leader's log.

Followers ask after a leader change, to find where their log diverges from the new leader's;
consumers ask (KIP-320) after a leader change to detect that the log was truncated under them.
Per partition, the answer is the largest epoch this leader knows that is at most the requested
one, and the offset where the next epoch starts (the log end offset for the latest epoch); the
lookup itself is the replica manager's (``end_offset_for_leader_epoch``).

Per-partition answers, as Kafka gives them:

* UNKNOWN_TOPIC_OR_PARTITION when the metadata has no such partition, NOT_LEADER_OR_FOLLOWER when
  it has but this broker does not lead it (hosted as a follower, or not hosted here).
* ``current_leader_epoch`` (v2+, -1 skips the check) fences requesters with other metadata: older
  than the partition's epoch is FENCED_LEADER_EPOCH, newer is UNKNOWN_LEADER_EPOCH. The check
  comes before the leadership check, as in Kafka.
* A requested epoch that the leader does not know (-1, or above every epoch in its log) is answered
  without an error, with epoch -1 and end offset -1. An epoch below every known one (its data is
  gone) answers that epoch with the start offset of the first known epoch.
* Every error answers epoch -1 and end offset -1.

``replica_id`` (v3+) is the requesting follower's broker id, -1 for a consumer, and -2 (a "debug"
requester) when absent (v2) or sent by tools. Kafka uses it only to pick the ACL the request needs
(cluster action for brokers, topic describe otherwise); the answer is the same for every requester
(a consumer too may be told the end of the latest epoch beyond the high watermark, and compares
it with its own position, which never is). Zurau has no authorizer, so it answers all alike.
"""

from __future__ import annotations

from zurau.broker.handlers._authz import TOPIC, TOPIC_AUTHORIZATION_FAILED, Op, allowed_names, cluster_allowed
from zurau.broker.handlers._common import error_of
from zurau.broker.request_context import RequestContext
from zurau.metadata.image import MetadataImage
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import NotLeaderOrFollowerError, UnknownTopicOrPartitionError
from zurau.protocol.messages import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestTopicsPartitions,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponseTopicsPartitions,
)
from zurau.types import LeaderEpoch

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH


def _partition(
    ctx: RequestContext, image: MetadataImage, topic: str, rp: OffsetForLeaderEpochRequestTopicsPartitions
) -> OffsetForLeaderEpochResponseTopicsPartitions:
    index = rp["partition"]
    entry: OffsetForLeaderEpochResponseTopicsPartitions = {"partition": index, "error_code": 0, "leader_epoch": -1, "end_offset": -1}
    try:
        t = image.get(topic)
        if t is None or index not in t.partitions:
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{index}")
        try:
            epoch, end_offset = ctx.replica_manager.end_offset_for_leader_epoch(
                topic,
                index,
                LeaderEpoch(rp["leader_epoch"]),
                current_leader_epoch=LeaderEpoch(rp.get("current_leader_epoch", -1)),
            )
        except UnknownTopicOrPartitionError:
            # In the metadata but not hosted here: Kafka answers as for a follower.
            raise NotLeaderOrFollowerError(f"broker {ctx.node_id} does not host {topic}-{index}") from None
        entry["leader_epoch"], entry["end_offset"] = epoch, end_offset
    except Exception as e:
        entry["error_code"], _ = error_of(e)
    return entry


def handle(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    image = ctx.image
    if ctx.services.authorizer is not None:
        if req.get("replica_id", -1) >= 0:  # a follower
            ok = {t["topic"] for t in req["topics"]} if cluster_allowed(ctx, Op.CLUSTER_ACTION) else set()
        else:
            ok = allowed_names(ctx, Op.DESCRIBE, TOPIC, (t["topic"] for t in req["topics"]))
        denied = TOPIC_AUTHORIZATION_FAILED
        return {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "topic": t["topic"],
                    "partitions": [
                        _partition(ctx, image, t["topic"], p) if t["topic"] in ok
                        else {"partition": p["partition"], "error_code": denied, "leader_epoch": -1, "end_offset": -1}
                        for p in t["partitions"]
                    ],
                }
                for t in req["topics"]
            ],
        }
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "topic": t["topic"],
                "partitions": [_partition(ctx, image, t["topic"], p) for p in t["partitions"]],
            }
            for t in req["topics"]
        ],
    }
