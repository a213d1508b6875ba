"""AddPartitionsToTxn (key 24): add partitions to a producer's ongoing transaction.

Kafka 4.x serves v0-v5; so does Zurau (clients ask for v0 or v3).

* v1 is the same as v0 (the broker answers before it throttles a quota violation); v2 may answer
  PRODUCER_FENCED; v3 is the first flexible version.
* v4 is the broker-to-broker form (KIP-890): a batch of transactions, each with its own id, producer
  id/epoch and ``verify_only`` flag, and a top-level error code. Clients keep to v3 and below,
  whose single-transaction fields carry the ``v3_and_below_`` prefix (and suffix, for the result).
* v5 may answer TRANSACTION_ABORTABLE.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

# Kafka's shared structs: a topic and its partitions, and the per-partition outcome.
TOPIC = Struct(
    F("name", STRING),
    F("partitions", Array(INT32)),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32),
    F("partition_error_code", INT16),
)

TOPIC_RESULT = Struct(
    F("name", STRING),
    F("results_by_partition", Array(PARTITION_RESULT)),
)

# v4+: one transaction of the batch.
TRANSACTION = Struct(
    F("transactional_id", STRING, versions="4+"),
    F("producer_id", INT64, versions="4+"),
    F("producer_epoch", INT16, versions="4+"),
    F("verify_only", BOOL, versions="4+"),
    F("topics", Array(TOPIC), versions="4+"),
)

TRANSACTION_RESULT = Struct(
    F("transactional_id", STRING, versions="4+"),
    F("topic_results", Array(TOPIC_RESULT), versions="4+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.ADD_PARTITIONS_TO_TXN,
    name="AddPartitionsToTxn",
    valid="0-5",
    flexible="3+",
    request=(
        F("transactions", Array(TRANSACTION), versions="4+"),
        F("v3_and_below_transactional_id", STRING, versions="0-3"),
        F("v3_and_below_producer_id", INT64, versions="0-3"),
        F("v3_and_below_producer_epoch", INT16, versions="0-3"),
        F("v3_and_below_topics", Array(TOPIC), versions="0-3"),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16, versions="4+"),
        F("results_by_transaction", Array(TRANSACTION_RESULT), versions="4+"),
        F("results_by_topic_v3_and_below", Array(TOPIC_RESULT), versions="0-3"),
    ),
)
