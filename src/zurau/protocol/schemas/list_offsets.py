"""ListOffsets (key 2): look up partition offsets by timestamp or by a special marker.

Kafka 4.x dropped v0 (which could return several offsets per partition), so v1, returning one
offset and its timestamp, is the floor. Wire changes after that: v2 adds the isolation level and
response throttle time; v4 the current leader epoch (request) and the offset's leader epoch
(response); v6 is the first flexible version; v10 adds a timeout for lookups that must consult
tiered storage. Versions 3, 5, 7, 8, 9 and 11 only widen what the timestamp markers may ask for
(max timestamp, local log start, last tiered offset, earliest pending upload) or the errors.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

PARTITION = Struct(
    F("partition_index", INT32),
    F("current_leader_epoch", INT32, versions="4+", default=-1),
    F("timestamp", INT64),
)

TOPIC = Struct(
    F("name", STRING),
    F("partitions", Array(PARTITION)),
)

PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("timestamp", INT64, versions="1+", default=-1),
    F("offset", INT64, versions="1+", default=-1),
    F("leader_epoch", INT32, versions="4+", default=-1),
)

TOPIC_RESPONSE = Struct(
    F("name", STRING),
    F("partitions", Array(PARTITION_RESPONSE)),
)

SCHEMA = ApiSchema(
    key=ApiKey.LIST_OFFSETS,
    name="ListOffsets",
    valid="1-11",
    flexible="6+",
    request=(
        F("replica_id", INT32),
        F("isolation_level", INT8, versions="2+"),
        F("topics", Array(TOPIC)),
        F("timeout_ms", INT32, versions="10+"),
    ),
    response=(
        F("throttle_time_ms", INT32, versions="2+"),
        F("topics", Array(TOPIC_RESPONSE)),
    ),
)
