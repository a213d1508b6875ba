"""DescribeProducers (key 61): the active producers of partitions, from each leader's producer state.

Only v0 exists (Kafka 4.x serves v0; so does Zurau); flexible from v0. Admin tools use it to find
hanging transactions (``kafka-transactions.sh describe-producers`` / ``find-hanging``): a producer
with a ``current_txn_start_offset`` that no coordinator knows about keeps the partition's last
stable offset from advancing.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

PRODUCER_STATE = Struct(
    F("producer_id", INT64),
    F("producer_epoch", INT32),
    F("last_sequence", INT32, default=-1),
    F("last_timestamp", INT64, default=-1),
    F("coordinator_epoch", INT32),
    F("current_txn_start_offset", INT64, default=-1),
)

PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("active_producers", Array(PRODUCER_STATE)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_PRODUCERS,
    name="DescribeProducers",
    valid="0",
    flexible="0+",
    request=(
        F(
            "topics",
            Array(Struct(F("name", STRING), F("partition_indexes", Array(INT32)))),
        ),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION_RESPONSE))))),
    ),
)
