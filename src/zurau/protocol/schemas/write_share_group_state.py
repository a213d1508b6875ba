"""WriteShareGroupState (key 85): a share-partition leader persists changes of its share
partitions' state to the share coordinator.

Inter-broker (partition leader -> share coordinator). Kafka 4.2 serves v0-v1; so does Zurau's
schema. Every version is flexible.

Per partition: the writer's ``state_epoch`` and ``leader_epoch`` (lower ones are fenced),
``start_offset`` (-1 when it is not being written) and the ``state_batches`` that changed
(:class:`zurau.protocol.share_states.StateBatch` on the wire: inclusive offset range,
``delivery_state`` as a RecordState id, ``delivery_count``). The share coordinator merges them
into what it holds: a later batch overrides earlier state for its offsets, and batches below the
start offset are dropped.

* v1 (KIP-1226, Kafka 4.2): ``delivery_complete_count``, the number of records from the start
  offset on whose delivery is complete (ACKNOWLEDGED or ARCHIVED), or -1 if unknown; it feeds
  the share-partition lag of DescribeShareGroupOffsets.

The response has no throttle time.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas.read_share_group_state import STATE_BATCH

PARTITION_DATA = Struct(
    F("partition", INT32),
    F("state_epoch", INT32),
    F("leader_epoch", INT32),
    F("start_offset", INT64),
    F("delivery_complete_count", INT32, versions="1+", default=-1),
    F("state_batches", Array(STATE_BATCH)),
)

WRITE_STATE_DATA = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

PARTITION_RESULT = Struct(
    F("partition", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

WRITE_STATE_RESULT = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.WRITE_SHARE_GROUP_STATE,
    name="WriteShareGroupState",
    valid="0-1",
    flexible="0+",
    request=(
        F("group_id", STRING),
        F("topics", Array(WRITE_STATE_DATA)),
    ),
    response=(F("results", Array(WRITE_STATE_RESULT)),),
)
