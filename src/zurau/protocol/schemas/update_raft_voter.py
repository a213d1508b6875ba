"""UpdateRaftVoter (key 82): a voter tells the KRaft leader its current listeners and the range
of ``kraft.version`` it supports (KIP-853), so that the voter set stays up to date.

Flexible from its only version. The response carries the current leader (tagged) so that a voter
that asked the wrong node can find the right one.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas._raft_common import LISTENER

KRAFT_VERSION_FEATURE = Struct(
    F("min_supported_version", INT16),
    F("max_supported_version", INT16),
)

CURRENT_LEADER = Struct(
    F("leader_id", INT32, default=-1),
    F("leader_epoch", INT32, default=-1),
    F("host", STRING),
    F("port", INT32),
)

SCHEMA = ApiSchema(
    key=ApiKey.UPDATE_RAFT_VOTER,
    name="UpdateRaftVoter",
    valid="0",
    flexible="0+",
    request=(
        F("cluster_id", STRING, nullable="0+"),
        F("current_leader_epoch", INT32),
        F("voter_id", INT32),
        F("voter_directory_id", UUID),
        F("listeners", Array(LISTENER)),
        # Kafka's field is KRaftVersionFeature; its snake_case form is what kio (and we) call it.
        F("k_raft_version_feature", KRAFT_VERSION_FEATURE),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("current_leader", CURRENT_LEADER, tag=0, tagged="0+"),
    ),
)
