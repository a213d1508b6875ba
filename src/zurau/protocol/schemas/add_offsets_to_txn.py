"""AddOffsetsToTxn (key 25): make a group's offset commits part of a producer's transaction.

Kafka 4.x serves v0-v4; so does Zurau (clients ask for v0 or v3). v1 is the same as v0 (the broker
answers before it throttles a quota violation); v2 may answer PRODUCER_FENCED; v3 is the first
flexible version; v4 may answer TRANSACTION_ABORTABLE.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.ADD_OFFSETS_TO_TXN,
    name="AddOffsetsToTxn",
    valid="0-4",
    flexible="3+",
    request=(
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("group_id", STRING),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ),
)
