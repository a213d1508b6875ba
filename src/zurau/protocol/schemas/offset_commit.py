"""OffsetCommit (key 8): a group member stores committed offsets with the group coordinator.

Kafka 4.x serves v2-v10 (v0 and v1 were dropped in 4.0); Zurau serves the same (clients ask for v3,
v8 or v9).

* v2 carries a retention time (-1: the broker's default), which v5 drops again; v3 adds throttle
  time to the response; v4 is the same as v3.
* v6 adds each partition's leader epoch; v7 adds the static membership id.
* v8 is the first flexible version; v9 may be used by KIP-848 consumer groups, where the generation
  field carries the member epoch.
* v10 names topics by id instead of by name.

The field ``commit_timestamp`` existed only in v1 and so never appears in a served version.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

PARTITION = Struct(
    F("partition_index", INT32),
    F("committed_offset", INT64),
    F("committed_leader_epoch", INT32, versions="6+", default=-1),
    F("commit_timestamp", INT64, versions="1", default=-1),
    F("committed_metadata", STRING, nullable="0+"),
)

TOPIC = Struct(
    F("name", STRING, versions="0-9"),
    F("topic_id", UUID, versions="10+"),
    F("partitions", Array(PARTITION)),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
)

TOPIC_RESULT = Struct(
    F("name", STRING, versions="0-9"),
    F("topic_id", UUID, versions="10+"),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.OFFSET_COMMIT,
    name="OffsetCommit",
    valid="2-10",
    flexible="8+",
    request=(
        F("group_id", STRING),
        F("generation_id_or_member_epoch", INT32, versions="1+", default=-1),
        F("member_id", STRING, versions="1+"),
        F("group_instance_id", STRING, versions="7+", nullable="7+"),  # Kafka's default: null
        F("retention_time_ms", INT64, versions="2-4", default=-1),
        F("topics", Array(TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="3+"),
        F("topics", Array(TOPIC_RESULT)),
    ),
)
