"""ConsumerGroupDescribe (key 69): state, epochs, assignor and members of KIP-848 consumer groups.

Kafka 4.x serves v0-v1; so does Zurau. Every version is flexible. v1 adds each member's type
(-1 unknown, 0 classic, 1 consumer). Unknown groups, and groups that are not consumer groups, are
answered with GROUP_ID_NOT_FOUND.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

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
    F("instance_id", STRING, nullable="0+"),  # Kafka's default: null
    F("rack_id", STRING, nullable="0+"),  # Kafka's default: null
    F("member_epoch", INT32),
    F("client_id", STRING),
    F("client_host", STRING),
    F("subscribed_topic_names", Array(STRING)),
    F("subscribed_topic_regex", STRING, nullable="0+"),  # Kafka's default: null
    F("assignment", ASSIGNMENT),
    F("target_assignment", ASSIGNMENT),
    F("member_type", INT8, versions="1+", default=-1),
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
    key=ApiKey.CONSUMER_GROUP_DESCRIBE,
    name="ConsumerGroupDescribe",
    valid="0-1",
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
