"""DeleteShareGroupOffsets (key 92): delete a share group's state for whole topics, for admin
clients (``kafka-share-groups.sh --delete-offsets``).

Kafka 4.1+ serves v0; so does Zurau's schema. Every version is flexible. Only an empty group
(no members) may have offsets deleted (NON_EMPTY_GROUP otherwise). Topics are named in the
request and answered with name, id and a per-topic error, plus a top-level error for the whole
request (group errors).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

REQUEST_TOPIC = Struct(
    F("topic_name", STRING),
)

RESPONSE_TOPIC = Struct(
    F("topic_name", STRING),
    F("topic_id", UUID),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

SCHEMA = ApiSchema(
    key=ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    name="DeleteShareGroupOffsets",
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
