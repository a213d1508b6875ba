"""RemoveRaftVoter (key 81): remove a controller from the KRaft voter set (KIP-853).

Flexible from its only version. The voter is named by id and directory id.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, UUID, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.REMOVE_RAFT_VOTER,
    name="RemoveRaftVoter",
    valid="0",
    flexible="0+",
    request=(
        F("cluster_id", STRING, nullable="0+"),
        F("voter_id", INT32),
        F("voter_directory_id", UUID),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    ),
)
