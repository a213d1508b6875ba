"""DescribeShareGroupOffsets (key 90): the start offset (and, from v1, the lag) of a share group's
share partitions, for admin clients (``kafka-share-groups.sh --describe``).

Kafka 4.2 serves v0-v1; so does Zurau's schema. Every version is flexible.

* A group's ``topics`` is null to describe every share partition the group has state for.
* Per partition: ``start_offset`` (-1 when the group has no state for it), ``leader_epoch``
  and a partition-level error; per group a group-level error.
* v1 (KIP-1226, Kafka 4.2): ``lag``, the records from the start offset to the high watermark
  whose delivery is not complete, or -1 when unknown.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, UUID, ApiSchema, Array, F, Struct

REQUEST_TOPIC = Struct(
    F("topic_name", STRING),
    F("partitions", Array(INT32)),
)

REQUEST_GROUP = Struct(
    F("group_id", STRING),
    F("topics", Array(REQUEST_TOPIC), nullable="0+", default=()),  # null: all topics
)

RESPONSE_PARTITION = Struct(
    F("partition_index", INT32),
    F("start_offset", INT64),
    F("leader_epoch", INT32),
    F("lag", INT64, versions="1+", default=-1),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

RESPONSE_TOPIC = Struct(
    F("topic_name", STRING),
    F("topic_id", UUID),
    F("partitions", Array(RESPONSE_PARTITION)),
)

RESPONSE_GROUP = Struct(
    F("group_id", STRING),
    F("topics", Array(RESPONSE_TOPIC)),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),  # Kafka's default: null
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    name="DescribeShareGroupOffsets",
    valid="0-1",
    flexible="0+",
    request=(F("groups", Array(REQUEST_GROUP)),),
    response=(
        F("throttle_time_ms", INT32),
        F("groups", Array(RESPONSE_GROUP)),
    ),
)
