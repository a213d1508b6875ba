"""AlterPartitionReassignments (key 45): move partitions to new replica lists (KIP-455).

Kafka 4.x serves v0-v1; so does Zurau. Every version is flexible. v1 (KIP-860) lets the caller
refuse a change of replication factor (``allow_replication_factor_change`` false: such a
partition gets INVALID_REPLICATION_FACTOR) and echoes the option in the response. Null
``replicas`` cancels the partition's ongoing reassignment.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, NULL, STRING, ApiSchema, Array, F, Struct

PARTITION = Struct(
    F("partition_index", INT32),
    F("replicas", Array(INT32), nullable="0+", default=NULL),
)

PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    name="AlterPartitionReassignments",
    valid="0-1",
    flexible="0+",
    request=(
        F("timeout_ms", INT32, default=60000),
        F("allow_replication_factor_change", BOOL, versions="1+", default=True),
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION))))),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("allow_replication_factor_change", BOOL, versions="1+", default=True),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("responses", Array(Struct(F("name", STRING), F("partitions", Array(PARTITION_RESPONSE))))),
    ),
)
