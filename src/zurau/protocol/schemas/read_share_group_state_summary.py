"""ReadShareGroupStateSummary (key 87): the group coordinator reads the summary of share
partitions' persisted state (epochs and start offset, not the state batches), to describe a
share group's offsets.

Inter-broker (group coordinator -> share coordinator). Kafka 4.2 serves v0-v1; so does Zurau's
schema. Every version is flexible. The response has no throttle time.

* v1 (KIP-1226, Kafka 4.2): ``delivery_complete_count`` per partition, the number of records
  from the start offset on whose delivery is complete, or -1 if unknown (see
  :mod:`.write_share_group_state`).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

PARTITION_DATA = Struct(
    F("partition", INT32),
    F("leader_epoch", INT32),
)

READ_STATE_SUMMARY_DATA = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_DATA)),
)

PARTITION_RESULT = Struct(
    F("partition", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    F("state_epoch", INT32),
    F("leader_epoch", INT32),
    F("start_offset", INT64),
    F("delivery_complete_count", INT32, versions="1+", default=-1),
)

READ_STATE_SUMMARY_RESULT = Struct(
    F("topic_id", UUID),
    F("partitions", Array(PARTITION_RESULT)),
)

SCHEMA = ApiSchema(
    key=ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
    name="ReadShareGroupStateSummary",
    valid="0-1",
    flexible="0+",
    request=(
        F("group_id", STRING),
        F("topics", Array(READ_STATE_SUMMARY_DATA)),
    ),
    response=(F("results", Array(READ_STATE_SUMMARY_RESULT)),),
)
