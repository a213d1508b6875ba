"""InitializeShareGroupState (key 83): the group coordinator asks the share coordinator to create
(or reset) the persisted state of share partitions.

Inter-broker (group coordinator -> share coordinator). Kafka 4.1+ serves v0; so does Zurau's
schema. Every version is flexible.

For each partition the new state is ``state_epoch`` with ``start_offset`` (-1 when the start
offset is not being set) and no state batches: every offset from the start offset on is
AVAILABLE with delivery count 0. The share coordinator refuses a ``state_epoch`` lower than the
one it holds (FENCED_STATE_EPOCH). The response has no throttle time.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

PARTITION_DATA = Struct(
    F("partition", INT32),
    F("state_epoch", INT32),
    F("start_offset", INT64),
)

INITIALIZE_STATE_DATA = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

PARTITION_RESULT = Struct(
    F("partition", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

INITIALIZE_STATE_RESULT = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.INITIALIZE_SHARE_GROUP_STATE,
    name="InitializeShareGroupState",
    valid="0",
    flexible="0+",
    request=(
        F("group_id", STRING),
        F("topics", Array(INITIALIZE_STATE_DATA)),
    ),
    response=(F("results", Array(INITIALIZE_STATE_RESULT)),),
)
