"""AlterPartition (key 56): a partition leader asks the controller to change the ISR.

Formerly AlterIsr (KIP-497); KIP-704 added the leader recovery state (v1). Kafka 4.x dropped
v0-v1, so v2, which names topics by id only, is the floor. Every version is flexible. v3
(KIP-903) sends the new ISR with each member's broker epoch, so that the controller can refuse a
broker that restarted (lost its unflushed data) since the leader saw it catch up.

The leader sends the partition epoch it knows; the controller answers with the partition state it
committed (or an error such as INVALID_UPDATE_VERSION or FENCED_LEADER_EPOCH).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, INT64, UUID, ApiSchema, Array, F, Struct

BROKER_STATE = Struct(
    F("broker_id", INT32),
    F("broker_epoch", INT64, default=-1),
)

PARTITION = Struct(
    F("partition_index", INT32),
    F("leader_epoch", INT32),
    F("new_isr", Array(INT32), versions="0-2"),
    F("new_isr_with_epochs", Array(BROKER_STATE), versions="3+"),
    F("leader_recovery_state", INT8, versions="1+", default=0),  # 0 recovered, 1 recovering
    F("partition_epoch", INT32),
)

TOPIC = Struct(
    F("topic_id", UUID, versions="2+"),
    F("partitions", Array(PARTITION)),
)

PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("leader_id", INT32),
    F("leader_epoch", INT32),
    F("isr", Array(INT32)),
    F("leader_recovery_state", INT8, versions="1+", default=0),
    F("partition_epoch", INT32),
)

TOPIC_RESPONSE = Struct(
    F("topic_id", UUID, versions="2+"),
    F("partitions", Array(PARTITION_RESPONSE)),
)

SCHEMA = ApiSchema(
    key=ApiKey.ALTER_PARTITION,
    name="AlterPartition",
    valid="2-3",
    flexible="0+",
    request=(
        F("broker_id", INT32),
        F("broker_epoch", INT64, default=-1),
        F("topics", Array(TOPIC)),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("topics", Array(TOPIC_RESPONSE)),
    ),
)
