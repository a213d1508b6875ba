"""OffsetForLeaderEpoch (key 23): where did a leader epoch end in the leader's log?

A follower asks after a leader change (to find how far its own log agrees with the new leader's
and truncate the rest); since KIP-320 consumers ask too, to detect truncation after an unclean
leader change. The answer per partition is the largest epoch the leader knows that is at most the
requested one, and the offset where the next epoch starts (or the log end offset).

Kafka 4.x dropped v0-v1, so v2 (the current leader epoch per partition, for fencing) is the floor.
v3 adds the replica id of the requester: a follower's broker id, -1 for a consumer, and -2 (the
default, and what older versions mean) for a "debug" requester. v4 is the first flexible version.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2

PARTITION = Struct(
    F("partition", INT32),
    F("current_leader_epoch", INT32, versions="2+", default=-1),
    F("leader_epoch", INT32),
)

TOPIC = Struct(
    F("topic", STRING),
    F("partitions", Array(PARTITION)),
)

EPOCH_END_OFFSET = Struct(
    F("error_code", INT16),
    F("partition", INT32),
    F("leader_epoch", INT32, versions="1+", default=-1),
    F("end_offset", INT64, default=-1),
)

TOPIC_RESULT = Struct(
    F("topic", STRING),
    F("partitions", Array(EPOCH_END_OFFSET)),
)

SCHEMA = ApiSchema(
    key=ApiKey.OFFSET_FOR_LEADER_EPOCH,
    name="OffsetForLeaderEpoch",
    valid="2-4",
    flexible="4+",
    request=(
        F("replica_id", INT32, versions="3+", default=DEBUGGING_REPLICA_ID),
        F("topics", Array(TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="2+"),
        F("topics", Array(TOPIC_RESULT)),
    ),
)
