"""BeginQuorumEpoch (key 53): a newly elected KRaft leader tells the voters of its epoch.

Part of KIP-595. v0 is not flexible; v1 (KIP-853) is, and adds the receiving voter's id and
directory id and the leader's listener endpoints to the request, and tagged endpoints of the
leaders named in the response.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, NULL, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas._raft_common import LISTENER, NODE_ENDPOINT, QUORUM_PARTITION_RESPONSE, topics_of

PARTITION = Struct(
    F("partition_index", INT32),
    F("voter_directory_id", UUID, versions="1+"),
    F("leader_id", INT32),
    F("leader_epoch", INT32),
)

TOPIC = topics_of(PARTITION)

PARTITION_RESPONSE = QUORUM_PARTITION_RESPONSE

TOPIC_RESPONSE = topics_of(PARTITION_RESPONSE)

SCHEMA = ApiSchema(
    key=ApiKey.BEGIN_QUORUM_EPOCH,
    name="BeginQuorumEpoch",
    valid="0-1",
    flexible="1+",
    request=(
        F("cluster_id", STRING, nullable="0+", default=NULL),
        F("voter_id", INT32, versions="1+", default=-1),
        F("topics", Array(TOPIC)),
        F("leader_endpoints", Array(LISTENER), versions="1+"),
    ),
    response=(
        F("error_code", INT16),
        F("topics", Array(TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT), versions="1+", tag=0, tagged="1+"),
    ),
)
