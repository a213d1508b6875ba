"""WriteTxnMarkers (key 27): the transaction coordinator asks partition leaders to write commit or
abort markers.

Kafka 4.x serves v1-v2 (v0 was dropped in 4.0); so does Zurau. v1 is flexible (the first version
that is); v2 adds, per marker, the transaction version in use (KIP-1228).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT8, INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

MARKER_TOPIC = Struct(
    F("name", STRING),
    F("partition_indexes", Array(INT32)),
)

MARKER = Struct(
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("transaction_result", BOOL),
    F("topics", Array(MARKER_TOPIC)),
    F("coordinator_epoch", INT32),
    F("transaction_version", INT8, versions="2+"),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
)

MARKER_RESULT = Struct(
    F("producer_id", INT64),
    F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION_RESULT))))),
)

SCHEMA = ApiSchema(
    key=ApiKey.WRITE_TXN_MARKERS,
    name="WriteTxnMarkers",
    valid="1-2",
    flexible="1+",
    request=(F("markers", Array(MARKER)),),
    response=(F("markers", Array(MARKER_RESULT)),),
)
