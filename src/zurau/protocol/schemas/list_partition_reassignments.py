"""ListPartitionReassignments (key 46): the ongoing partition reassignments (KIP-455).

Only v0 exists; it is flexible. A null ``topics`` lists every ongoing reassignment; named
partitions that are not being reassigned are left out of the answer, as Kafka does.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, ApiSchema, Array, F, Struct

ONGOING_PARTITION = Struct(
    F("partition_index", INT32),
    F("replicas", Array(INT32)),
    F("adding_replicas", Array(INT32)),
    F("removing_replicas", Array(INT32)),
)

SCHEMA = ApiSchema(
    key=ApiKey.LIST_PARTITION_REASSIGNMENTS,
    name="ListPartitionReassignments",
    valid="0",
    flexible="0+",
    request=(
        F("timeout_ms", INT32, default=60000),
        F("topics", Array(Struct(F("name", STRING), F("partition_indexes", Array(INT32)))), nullable="0+"),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("topics", Array(Struct(F("name", STRING), F("partitions", Array(ONGOING_PARTITION))))),
    ),
)
