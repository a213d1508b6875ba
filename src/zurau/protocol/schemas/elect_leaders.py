"""ElectLeaders (key 43): elect the preferred (or, unclean, any live) replica as partition leader.

Kafka 4.x serves v0-v2; so does Zurau. v1 (KIP-460) added the election type (0 PREFERRED,
1 UNCLEAN; v0 is always PREFERRED) and the top-level error code; v2 is the first flexible
version. A null ``topic_partitions`` asks for every partition of every topic. Each partition
gets its own error: ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT8, INT16, INT32, STRING, ApiSchema, Array, F, Struct

TOPIC_PARTITIONS = Struct(
    F("topic", STRING),
    F("partitions", Array(INT32)),
)

PARTITION_RESULT = Struct(
    F("partition_id", INT32),
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
)

SCHEMA = ApiSchema(
    key=ApiKey.ELECT_LEADERS,
    name="ElectLeaders",
    valid="0-2",
    flexible="2+",
    request=(
        F("election_type", INT8, versions="1+"),
        F("topic_partitions", Array(TOPIC_PARTITIONS), nullable="0+"),
        F("timeout_ms", INT32, default=60000),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16, versions="1+"),
        F(
            "replica_election_results",
            Array(Struct(F("topic", STRING), F("partition_result", Array(PARTITION_RESULT)))),
        ),
    ),
)
