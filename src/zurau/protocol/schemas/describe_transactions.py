"""DescribeTransactions (key 65): the transaction coordinator's state of transactional ids.

Only v0 exists (Kafka 4.x serves v0; so does Zurau); flexible from v0. ``transaction_state`` is the
state's name as Kafka spells it (``Empty``, ``Ongoing``, ``PrepareCommit``, ``PrepareAbort``,
``CompleteCommit``, ``CompleteAbort``, ``PrepareEpochFence``); ``topics`` are the partitions of
the current transaction. An unknown id gets TRANSACTIONAL_ID_NOT_FOUND.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

TOPIC_DATA = Struct(
    F("topic", STRING),
    F("partitions", Array(INT32)),
)

TRANSACTION_STATE = Struct(
    F("error_code", INT16),
    F("transactional_id", STRING),
    F("transaction_state", STRING),
    F("transaction_timeout_ms", INT32),
    F("transaction_start_time_ms", INT64),
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("topics", Array(TOPIC_DATA)),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_TRANSACTIONS,
    name="DescribeTransactions",
    valid="0",
    flexible="0+",
    request=(F("transactional_ids", Array(STRING)),),
    response=(
        F("throttle_time_ms", INT32),
        F("transaction_states", Array(TRANSACTION_STATE)),
    ),
)
