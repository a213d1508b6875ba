"""OffsetDelete (key 47): drop a group's committed offsets for some partitions.

Only v0 exists (Kafka 4.x serves v0); it is not flexible. The group must not be subscribed to the
topics whose offsets are deleted.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, Array, F, Struct

TOPIC = Struct(
    F("name", STRING),
    F("partitions", Array(Struct(F("partition_index", INT32)))),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
)

TOPIC_RESULT = Struct(
    F("name", STRING),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.OFFSET_DELETE,
    name="OffsetDelete",
    valid="0",
    flexible="none",
    request=(
        F("group_id", STRING),
        F("topics", Array(TOPIC)),
    ),
    response=(
        F("error_code", INT16),
        F("throttle_time_ms", INT32),
        F("topics", Array(TOPIC_RESULT)),
    ),
)
