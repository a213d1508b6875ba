"""InitProducerId (key 22): hand an idempotent or transactional producer its id and epoch.

All versions from 0 remain. v2 is the first flexible version; v3 lets a producer send its current
id and epoch so it can recover after an epoch error; v4 and v5 only add error codes
(PRODUCER_FENCED, TRANSACTION_ABORTABLE). v6 (two-phase commit, KIP-939) adds the request flags to
enable 2PC and to keep a prepared transaction, and the response reports the id and epoch of a kept
ongoing transaction.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, STRING, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.INIT_PRODUCER_ID,
    name="InitProducerId",
    valid="0-6",
    flexible="2+",
    request=(
        F("transactional_id", STRING, nullable="0+", default=""),
        F("transaction_timeout_ms", INT32),
        F("producer_id", INT64, versions="3+", default=-1),
        F("producer_epoch", INT16, versions="3+", default=-1),
        F("enable2_pc", BOOL, versions="6+", default=False),
        F("keep_prepared_txn", BOOL, versions="6+", default=False),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, default=-1),
        F("producer_epoch", INT16),
        F("ongoing_txn_producer_id", INT64, versions="6+", default=-1),
        F("ongoing_txn_producer_epoch", INT16, versions="6+", default=-1),
    ),
)
