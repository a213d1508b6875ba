"""ReadShareGroupState (key 84): a share-partition leader loads the persisted state of its share
partitions from the share coordinator.

Inter-broker (partition leader -> share coordinator). Kafka 4.1+ serves v0; so does Zurau's
schema. Every version is flexible.

The request gives the reader's ``leader_epoch`` (the share coordinator fences a lower one with
FENCED_LEADER_EPOCH and remembers a higher one). The response gives, per partition,
``state_epoch``, ``start_offset`` and the ``state_batches``: runs of offsets
``first_offset..last_offset`` (inclusive) with a ``delivery_state``
(:class:`zurau.protocol.share_states.RecordState` id) and ``delivery_count``; offsets from the
start offset on that are in no batch are AVAILABLE with delivery count 0. The response has no
throttle time.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

PARTITION_DATA = Struct(
    F("partition", INT32),
    F("leader_epoch", INT32),
)

READ_STATE_DATA = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

# One run of offsets in one delivery state (share_states.StateBatch on the wire).
STATE_BATCH = Struct(
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("delivery_state", INT8),
    F("delivery_count", INT16),
)

PARTITION_RESULT = Struct(
    F("partition", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    F("state_epoch", INT32),
    F("start_offset", INT64),
    F("state_batches", Array(STATE_BATCH)),
)

READ_STATE_RESULT = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.READ_SHARE_GROUP_STATE,
    name="ReadShareGroupState",
    valid="0",
    flexible="0+",
    request=(
        F("group_id", STRING),
        F("topics", Array(READ_STATE_DATA)),
    ),
    response=(F("results", Array(READ_STATE_RESULT)),),
)
