"""EndTxn (key 26): commit or abort a producer's transaction.

Kafka 4.x serves v0-v5; so does Zurau (clients ask for v0, v1 or v3).

* v1 is the same as v0 (the broker answers before it throttles a quota violation); v2 may answer
  PRODUCER_FENCED; v3 is the first flexible version; v4 may answer TRANSACTION_ABORTABLE.
* v5 (transactions v2, KIP-890 part 2) bumps the producer epoch at the end of every transaction, so
  the response returns the producer id and epoch to use next (-1 when not given).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, STRING, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.END_TXN,
    name="EndTxn",
    valid="0-5",
    flexible="3+",
    request=(
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("committed", BOOL),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, versions="5+", default=-1),
        F("producer_epoch", INT16, versions="5+", default=-1),
    ),
)
