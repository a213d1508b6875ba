"""ListTransactions (key 66): the transactional ids a coordinator knows, with producer id and state.

Kafka 4.x serves v0-v2; so does Zurau. Flexible from v0. Filters combine (all must match; an
empty filter matches everything): ``state_filters`` (state names; unknown names are echoed in
``unknown_state_filters``), ``producer_id_filters``, v1 ``duration_filter`` (only transactions
running longer than this many ms; -1: no filter), v2 ``transactional_id_pattern`` (a regular
expression the whole id must match; null or empty: no filter).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

TRANSACTION_STATE = Struct(
    F("transactional_id", STRING),
    F("producer_id", INT64),
    F("transaction_state", STRING),
)

SCHEMA = ApiSchema(
    key=ApiKey.LIST_TRANSACTIONS,
    name="ListTransactions",
    valid="0-2",
    flexible="0+",
    request=(
        F("state_filters", Array(STRING)),
        F("producer_id_filters", Array(INT64)),
        F("duration_filter", INT64, versions="1+", default=-1),
        F("transactional_id_pattern", STRING, versions="2+", nullable="2+"),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("unknown_state_filters", Array(STRING)),
        F("transaction_states", Array(TRANSACTION_STATE)),
    ),
)
