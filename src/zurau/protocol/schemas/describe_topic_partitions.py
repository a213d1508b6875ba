"""DescribeTopicPartitions (key 75, KIP-966): the partitions of topics, page by page, with their
eligible leader replicas. Admin clients (Kafka 3.8+) use it instead of Metadata to describe
topics too large for one answer.

Kafka serves only v0, which is flexible; so does Zurau. Kafka's brokers serve it, its controllers
do not (``broker_only``).

* ``topics`` empty asks for every topic; ``response_partition_limit`` caps the partitions in the
  answer (the broker also caps it, ``max.request.partition.size.limit``); ``cursor`` (null: from
  the start) names the topic and partition index to begin with.
* Per partition, beyond Metadata's: ``eligible_leader_replicas`` and ``last_known_elr`` (null by
  default). Per topic, ``topic_authorized_operations`` is always filled in (no request flag).
* ``next_cursor`` (null: nothing left) is where the next page starts.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct

# Value of an authorized-operations bitfield that was not filled in.
AUTHORIZED_OPERATIONS_UNSET = -(2**31)

CURSOR = Struct(
    F("topic_name", STRING),
    F("partition_index", INT32),
)

REQUEST_TOPIC = Struct(F("name", STRING))

PARTITION = Struct(
    F("error_code", INT16),
    F("partition_index", INT32),
    F("leader_id", INT32),
    F("leader_epoch", INT32, default=-1),
    F("replica_nodes", Array(INT32)),
    F("isr_nodes", Array(INT32)),
    F("eligible_leader_replicas", Array(INT32), nullable="0+", default=None),
    F("last_known_elr", Array(INT32), nullable="0+", default=None),
    F("offline_replicas", Array(INT32)),
)

TOPIC = Struct(
    F("error_code", INT16),
    F("name", STRING, nullable="0+"),
    F("topic_id", UUID),
    F("is_internal", BOOL, default=False),
    F("partitions", Array(PARTITION)),
    F("topic_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_UNSET),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    name="DescribeTopicPartitions",
    valid="0",
    flexible="0+",
    request=(
        F("topics", Array(REQUEST_TOPIC)),
        F("response_partition_limit", INT32, default=2000),
        F("cursor", CURSOR, nullable="0+", default=None),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("topics", Array(TOPIC)),
        F("next_cursor", CURSOR, nullable="0+", default=None),
    ),
    broker_only=True,
)
