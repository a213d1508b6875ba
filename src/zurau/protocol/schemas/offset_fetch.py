"""OffsetFetch (key 9): read a group's committed offsets.

Kafka 4.x serves v1-v10 (v0, which read from ZooKeeper, was dropped in 4.0); Zurau serves the same
(clients ask for v3, v8 or v9).

* v2 lets ``topics`` be null (all topics) and adds a top-level error code; v3 adds throttle time;
  v4 is the same as v3; v5 returns each partition's leader epoch.
* v6 is the first flexible version; v7 adds ``require_stable`` (wait out pending transactional
  commits).
* v8 batches several groups per request: the single-group fields (v0-v7) give way to ``groups``.
* v9 adds the member id and epoch for KIP-848 consumer groups; v10 names topics by id.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

# v0-v7: one group per request.
TOPIC = Struct(
    F("name", STRING, versions="0-7"),
    F("partition_indexes", Array(INT32), versions="0-7"),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32, versions="0-7"),
    F("committed_offset", INT64, versions="0-7"),
    F("committed_leader_epoch", INT32, versions="5-7", default=-1),
    F("metadata", STRING, versions="0-7", nullable="0-7"),
    F("error_code", INT16, versions="0-7"),
)

TOPIC_RESULT = Struct(
    F("name", STRING, versions="0-7"),
    F("partitions", Array(PARTITION_RESULT), versions="0-7"),
)

# v8+: many groups per request.
GROUP_TOPIC = Struct(
    F("name", STRING, versions="8-9"),
    F("topic_id", UUID, versions="10+"),
    F("partition_indexes", Array(INT32), versions="8+"),
)

GROUP = Struct(
    F("group_id", STRING, versions="8+"),
    F("member_id", STRING, versions="9+", nullable="9+"),  # Kafka's default: null
    F("member_epoch", INT32, versions="9+", default=-1),
    F("topics", Array(GROUP_TOPIC), versions="8+", nullable="8+"),
)

GROUP_PARTITION_RESULT = Struct(
    F("partition_index", INT32, versions="8+"),
    F("committed_offset", INT64, versions="8+"),
    F("committed_leader_epoch", INT32, versions="8+", default=-1),
    F("metadata", STRING, versions="8+", nullable="8+"),
    F("error_code", INT16, versions="8+"),
)

GROUP_TOPIC_RESULT = Struct(
    F("name", STRING, versions="8-9"),
    F("topic_id", UUID, versions="10+"),
    F("partitions", Array(GROUP_PARTITION_RESULT), versions="8+"),
)

GROUP_RESULT = Struct(
    F("group_id", STRING, versions="8+"),
    F("topics", Array(GROUP_TOPIC_RESULT), versions="8+"),
    F("error_code", INT16, versions="8+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.OFFSET_FETCH,
    name="OffsetFetch",
    valid="1-10",
    flexible="6+",
    request=(
        F("group_id", STRING, versions="0-7"),
        F("topics", Array(TOPIC), versions="0-7", nullable="2-7"),
        F("groups", Array(GROUP), versions="8+"),
        F("require_stable", BOOL, versions="7+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="3+"),
        F("topics", Array(TOPIC_RESULT), versions="0-7"),
        F("error_code", INT16, versions="2-7"),
        F("groups", Array(GROUP_RESULT), versions="8+"),
    ),
)
