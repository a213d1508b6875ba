"""Produce (key 0): append record batches to partition logs.

Kafka 4.x dropped v0-v2, so v3 (the first version with a transactional id and message format v2)
is the floor. Most later bumps only change semantics (storage errors in v4, zstd in v7, new error
codes in v11/v12); the wire shape changes at:

* v5: the response reports the log start offset.
* v8: the response explains per-record failures (record errors and an error message).
* v9: first flexible version.
* v10: on a leadership change the response carries the new leader (per partition) and the
  endpoints of those leaders, both as tagged fields.
* v13: topics are identified by topic id instead of name, in the request and the response.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, RECORDS, STRING, UUID, ApiSchema, Array, F, Struct

PARTITION_DATA = Struct(
    F("index", INT32),
    F("records", RECORDS, nullable="0+"),
)

TOPIC_DATA = Struct(
    F("name", STRING, versions="0-12"),
    F("topic_id", UUID, versions="13+"),
    F("partition_data", Array(PARTITION_DATA)),
)

RECORD_ERROR = Struct(
    F("batch_index", INT32, versions="8+"),
    F("batch_index_error_message", STRING, versions="8+", nullable="8+"),
)

LEADER_ID_AND_EPOCH = Struct(
    F("leader_id", INT32, versions="10+", default=-1),
    F("leader_epoch", INT32, versions="10+", default=-1),
)

PARTITION_RESPONSE = Struct(
    F("index", INT32),
    F("error_code", INT16),
    F("base_offset", INT64),
    F("log_append_time_ms", INT64, versions="2+", default=-1),
    F("log_start_offset", INT64, versions="5+", default=-1),
    F("record_errors", Array(RECORD_ERROR), versions="8+"),
    F("error_message", STRING, versions="8+", nullable="8+"),
    F("current_leader", LEADER_ID_AND_EPOCH, versions="10+", tag=0, tagged="10+"),
)

TOPIC_RESPONSE = Struct(
    F("name", STRING, versions="0-12"),
    F("topic_id", UUID, versions="13+"),
    F("partition_responses", Array(PARTITION_RESPONSE)),
)

NODE_ENDPOINT = Struct(
    F("node_id", INT32, versions="10+"),
    F("host", STRING, versions="10+"),
    F("port", INT32, versions="10+"),
    F("rack", STRING, versions="10+", nullable="10+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.PRODUCE,
    name="Produce",
    valid="3-13",
    flexible="9+",
    request=(
        F("transactional_id", STRING, versions="3+", nullable="3+"),
        F("acks", INT16),
        F("timeout_ms", INT32),
        F("topic_data", Array(TOPIC_DATA)),
    ),
    response=(
        F("responses", Array(TOPIC_RESPONSE)),
        F("throttle_time_ms", INT32, versions="1+"),
        F("node_endpoints", Array(NODE_ENDPOINT), versions="10+", tag=0, tagged="10+"),
    ),
)
