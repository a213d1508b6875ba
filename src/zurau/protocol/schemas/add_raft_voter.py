"""AddRaftVoter (key 80): add a controller to the KRaft voter set (KIP-853, dynamic quorums).

Flexible from its first version. The request names the new voter by id and directory id, with its
listeners; the leader answers once the new voter set is written (v0), or, in v1, when
``ack_when_committed`` is false, as soon as it is appended rather than committed.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, STRING, UUID, ApiSchema, Array, F
from zurau.protocol.schemas._raft_common import LISTENER

SCHEMA = ApiSchema(
    key=ApiKey.ADD_RAFT_VOTER,
    name="AddRaftVoter",
    valid="0-1",
    flexible="0+",
    request=(
        F("cluster_id", STRING, nullable="0+"),
        F("timeout_ms", INT32),
        F("voter_id", INT32),
        F("voter_directory_id", UUID),
        F("listeners", Array(LISTENER)),
        F("ack_when_committed", BOOL, versions="1+", default=True),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),  # Kafka's default: null
    ),
)
