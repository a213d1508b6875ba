"""ShareGroupDescribe (key 77): state, epochs, assignor and members of KIP-932 share groups.

Kafka 4.1+ serves v1 only (v0 was the early-access version of Kafka 4.0, removed in 4.1); so does
Zurau's schema. Every version is flexible. Unknown groups, and groups that are not share groups,
are answered per group with GROUP_ID_NOT_FOUND; ``authorized_operations`` stays at Kafka's
"not requested" marker unless ``include_authorized_operations`` is set.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

# Kafka's "authorized operations were not requested" marker (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

TOPIC_PARTITIONS = Struct(
    F("topic_id", UUID),
    F("topic_name", STRING),
    F("partitions", Array(INT32)),
)

ASSIGNMENT = Struct(
    F("topic_partitions", Array(TOPIC_PARTITIONS)),
)

MEMBER = Struct(
    F("member_id", STRING),
    F("rack_id", STRING, nullable="0+"),  # Kafka's default: null
    F("member_epoch", INT32),
    F("client_id", STRING),
    F("client_host", STRING),
    F("subscribed_topic_names", Array(STRING)),
    F("assignment", ASSIGNMENT),
)

DESCRIBED_GROUP = Struct(
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    F("group_id", STRING),
    F("group_state", STRING),
    F("group_epoch", INT32),
    F("assignment_epoch", INT32),
    F("assignor_name", STRING),
    F("members", Array(MEMBER)),
    F("authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
)

SCHEMA = ApiSchema(
    key=ApiKey.SHARE_GROUP_DESCRIBE,
    name="ShareGroupDescribe",
    valid="1",
    flexible="0+",
    request=(
        F("group_ids", Array(STRING)),
        F("include_authorized_operations", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("groups", Array(DESCRIBED_GROUP)),
    ),
)
