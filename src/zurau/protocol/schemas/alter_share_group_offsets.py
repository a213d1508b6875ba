"""AlterShareGroupOffsets (key 91): set the start offset of a share group's share partitions, for
admin clients (``kafka-share-groups.sh --reset-offsets``).

Kafka 4.1+ serves v0; so does Zurau's schema. Every version is flexible. Only an empty group
(no members) may be altered (NON_EMPTY_GROUP otherwise). Topics are named in the request and
answered with both name and id; errors are per partition, plus a top-level error for the
whole request (group errors).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

REQUEST_PARTITION = Struct(
    F("partition_index", INT32),
    F("start_offset", INT64),
)

REQUEST_TOPIC = Struct(
    F("topic_name", STRING),
    F("partitions", Array(REQUEST_PARTITION)),
)

RESPONSE_PARTITION = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

RESPONSE_TOPIC = Struct(
    F("topic_name", STRING),
    F("topic_id", UUID),
    F("partitions", Array(RESPONSE_PARTITION)),
)

SCHEMA = ApiSchema(
    key=ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    name="AlterShareGroupOffsets",
    valid="0",
    flexible="0+",
    request=(
        F("group_id", STRING),
        F("topics", Array(REQUEST_TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),  # Kafka's default: null
        F("responses", Array(RESPONSE_TOPIC)),
    ),
)
