"""DeleteShareGroupState (key 86): the group coordinator asks the share coordinator to delete the
persisted state of share partitions (when a share group, or its offsets for a topic, are deleted).

Inter-broker (group coordinator -> share coordinator). Kafka 4.1+ serves v0; so does Zurau's
schema. Every version is flexible. The response has no throttle time.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

PARTITION_DATA = Struct(
    F("partition", INT32),
)

DELETE_STATE_DATA = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

PARTITION_RESULT = Struct(
    F("partition", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

DELETE_STATE_RESULT = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DELETE_SHARE_GROUP_STATE,
    name="DeleteShareGroupState",
    valid="0",
    flexible="0+",
    request=(
        F("group_id", STRING),
        F("topics", Array(DELETE_STATE_DATA)),
    ),
    response=(F("results", Array(DELETE_STATE_RESULT)),),
)
