"""DescribeLogDirs (key 35): list a broker's log directories and the partition replicas in each.

Kafka 4.x serves v1-v5; so does Zurau. A null ``topics`` asks about every partition.

* v1 is the same as v0 (the broker answers before it throttles a quota violation).
* v2 is the first flexible version.
* v3 adds a top-level error code; v4 adds each directory's total and usable bytes (-1 when
  unknown); v5 says whether a directory is cordoned (takes no new replicas).
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, STRING, ApiSchema, Array, F, Struct

TOPIC = Struct(
    F("topic", STRING),
    F("partitions", Array(INT32)),
)

REPLICA = Struct(
    F("partition_index", INT32),
    F("partition_size", INT64),
    F("offset_lag", INT64),
    F("is_future_key", BOOL),
)

LOG_DIR = Struct(
    F("error_code", INT16),
    F("log_dir", STRING),
    F("topics", Array(Struct(F("name", STRING), F("partitions", Array(REPLICA))))),
    F("total_bytes", INT64, versions="4+", default=-1),
    F("usable_bytes", INT64, versions="4+", default=-1),
    F("is_cordoned", BOOL, versions="5+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.DESCRIBE_LOG_DIRS,
    name="DescribeLogDirs",
    valid="1-5",
    flexible="2+",
    request=(F("topics", Array(TOPIC), nullable="0+"),),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16, versions="3+"),
        F("results", Array(LOG_DIR)),
    ),
)
