"""EndQuorumEpoch (key 54): a KRaft leader that resigns asks the voters to start an election.

Part of KIP-595. The request lists the voters the leader would prefer as its successor, most
caught-up first, so that they time out sooner. v0 is not flexible and lists them by id; v1
(KIP-853) is flexible, lists them by id and directory id, and carries the leader's listener
endpoints; its response gains tagged endpoints of the leaders it names.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, NULL, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas._raft_common import LISTENER, NODE_ENDPOINT, QUORUM_PARTITION_RESPONSE, topics_of

CANDIDATE = Struct(
    F("candidate_id", INT32),
    F("candidate_directory_id", UUID),
)

PARTITION = Struct(
    F("partition_index", INT32),
    F("leader_id", INT32),
    F("leader_epoch", INT32),
    F("preferred_successors", Array(INT32), versions="0"),
    F("preferred_candidates", Array(CANDIDATE), versions="1+"),
)

TOPIC = topics_of(PARTITION)

PARTITION_RESPONSE = QUORUM_PARTITION_RESPONSE

TOPIC_RESPONSE = topics_of(PARTITION_RESPONSE)

SCHEMA = ApiSchema(
    key=ApiKey.END_QUORUM_EPOCH,
    name="EndQuorumEpoch",
    valid="0-1",
    flexible="1+",
    request=(
        F("cluster_id", STRING, nullable="0+", default=NULL),
        F("topics", Array(TOPIC)),
        F("leader_endpoints", Array(LISTENER), versions="1+"),
    ),
    response=(
        F("error_code", INT16),
        F("topics", Array(TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT), versions="1+", tag=0, tagged="1+"),
    ),
)
