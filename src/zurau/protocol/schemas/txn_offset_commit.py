"""TxnOffsetCommit (key 28): commit a group's offsets inside a producer's transaction.

Kafka 4.x serves v0-v5; so does Zurau (clients ask for v0 or v3).

* v1 is the same as v0 (the broker answers before it throttles a quota violation); v2 adds each
  partition's leader epoch.
* v3 is the first flexible version and adds the member id, static membership id and generation
  (-1 when unknown), so that the coordinator can fence zombie members.
* v4 may answer TRANSACTION_ABORTABLE; v5 (transactions v2) also does AddOffsetsToTxn's work
  implicitly.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

PARTITION = Struct(
    F("partition_index", INT32),
    F("committed_offset", INT64),
    F("committed_leader_epoch", INT32, versions="2+", default=-1),
    F("committed_metadata", STRING, nullable="0+"),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
)

SCHEMA = ApiSchema(
    key=ApiKey.TXN_OFFSET_COMMIT,
    name="TxnOffsetCommit",
    valid="0-5",
    flexible="3+",
    request=(
        F("transactional_id", STRING),
        F("group_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("generation_id", INT32, versions="3+", default=-1),
        F("member_id", STRING, versions="3+"),
        F("group_instance_id", STRING, versions="3+", nullable="3+"),  # Kafka's default: null
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION))))),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION_RESULT))))),
    ),
)
