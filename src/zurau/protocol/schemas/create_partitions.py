"""CreatePartitions (key 37): grow existing topics to a larger partition count.

Kafka 4.x serves v0-v3; so does Zurau. v1 is the same as v0 (the broker answers before it
throttles a quota violation); v2 is the first flexible version; v3 may answer
THROTTLING_QUOTA_EXCEEDED. A null ``assignments`` lets the broker place the new partitions.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, STRING, ApiSchema, Array, F, Struct

# The replicas of one new partition, in the order of the new partitions.
ASSIGNMENT = Struct(F("broker_ids", Array(INT32)))

TOPIC = Struct(
    F("name", STRING),
    F("count", INT32),
    F("assignments", Array(ASSIGNMENT), nullable="0+"),
)

TOPIC_RESULT = Struct(
    F("name", STRING),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka default: null
)

SCHEMA = ApiSchema(
    key=ApiKey.CREATE_PARTITIONS,
    name="CreatePartitions",
    valid="0-3",
    flexible="2+",
    request=(
        F("topics", Array(TOPIC)),
        F("timeout_ms", INT32),
        F("validate_only", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("results", Array(TOPIC_RESULT)),
    ),
)
