"""DescribeQuorum (key 55): the state of the KRaft quorum, as its leader sees it.

Part of KIP-595 (``kafka-metadata-quorum describe``). Flexible from its first version. Per
partition: leader, epoch, high watermark, and for every voter and observer its log end offset.

* v1 (KIP-836): when each replica last fetched and when it was last caught up (-1: unknown).
* v2 (KIP-853): error messages, each replica's directory id, and the listeners of every node the
  answer names.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas._raft_common import LISTENER

PARTITION = Struct(
    F("partition_index", INT32),
)

TOPIC = Struct(
    F("topic_name", STRING),
    F("partitions", Array(PARTITION)),
)

REPLICA_STATE = Struct(
    F("replica_id", INT32),
    F("replica_directory_id", UUID, versions="2+"),
    F("log_end_offset", INT64),  # -1 when unknown
    F("last_fetch_timestamp", INT64, versions="1+", default=-1),
    F("last_caught_up_timestamp", INT64, versions="1+", default=-1),
)

PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("error_message", STRING, versions="2+", nullable="2+"),  # Kafka's default: null
    F("leader_id", INT32),
    F("leader_epoch", INT32),
    F("high_watermark", INT64),
    F("current_voters", Array(REPLICA_STATE)),
    F("observers", Array(REPLICA_STATE)),
)

TOPIC_RESPONSE = Struct(
    F("topic_name", STRING),
    F("partitions", Array(PARTITION_RESPONSE)),
)

NODE = Struct(
    F("node_id", INT32),
    F("listeners", Array(LISTENER)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_QUORUM,
    name="DescribeQuorum",
    valid="0-2",
    flexible="0+",
    request=(F("topics", Array(TOPIC)),),
    response=(
        F("error_code", INT16),
        F("error_message", STRING, versions="2+", nullable="2+"),  # Kafka's default: null
        F("topics", Array(TOPIC_RESPONSE)),
        F("nodes", Array(NODE), versions="2+"),
    ),
)
