"""DeleteRecords (key 21): move partitions' log start offsets forward, dropping older records.

Kafka 4.x serves v0-v2; so does Zurau. v1 is the same as v0 (the broker answers before it throttles
a quota violation); v2 is the first flexible version. An offset of -1 means "up to the high
watermark".
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

PARTITION = Struct(
    F("partition_index", INT32),
    F("offset", INT64),
)

PARTITION_RESULT = Struct(
    F("partition_index", INT32),
    F("low_watermark", INT64),
    F("error_code", INT16),
)

SCHEMA = ApiSchema(
    key=ApiKey.DELETE_RECORDS,
    name="DeleteRecords",
    valid="0-2",
    flexible="2+",
    request=(
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION))))),
        F("timeout_ms", INT32),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION_RESULT))))),
    ),
)
