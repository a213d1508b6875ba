"""Vote (key 52): a KRaft candidate (or pre-candidate) asks the other voters for their vote.

Part of KIP-595 (the Raft quorum that replicates ``__cluster_metadata``). Flexible from its first
version. The request names the candidate's epoch and id and the epoch and offset of its last log
entry; a voter grants its vote only to a candidate whose log is at least as up to date as its own.

* v1 (KIP-853, dynamic quorums): the receiving voter's id at the top and both replicas' directory
  ids per partition; the response gains tagged endpoints of the leaders it names.
* v2 (KIP-996): ``pre_vote`` marks a PreVote, which asks without bumping the epoch or being
  persisted by the voter.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import BOOL, INT16, INT32, INT64, NULL, STRING, UUID, ApiSchema, Array, F, Struct
from zurau.protocol.schemas._raft_common import NODE_ENDPOINT, topics_of

PARTITION = Struct(
    F("partition_index", INT32),
    F("replica_epoch", INT32),  # the candidate's (bumped) epoch
    F("replica_id", INT32),  # the candidate
    F("replica_directory_id", UUID, versions="1+"),
    F("voter_directory_id", UUID, versions="1+"),
    F("last_offset_epoch", INT32),
    F("last_offset", INT64),
    F("pre_vote", BOOL, versions="2+"),
)

TOPIC = topics_of(PARTITION)

PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("leader_id", INT32),  # -1 when the voter knows no leader
    F("leader_epoch", INT32),
    F("vote_granted", BOOL),
)

TOPIC_RESPONSE = topics_of(PARTITION_RESPONSE)

SCHEMA = ApiSchema(
    key=ApiKey.VOTE,
    name="Vote",
    valid="0-2",
    flexible="0+",
    request=(
        F("cluster_id", STRING, nullable="0+", default=NULL),
        F("voter_id", INT32, versions="1+", default=-1),
        F("topics", Array(TOPIC)),
    ),
    response=(
        F("error_code", INT16),
        F("topics", Array(TOPIC_RESPONSE)),
        F("node_endpoints", Array(NODE_ENDPOINT), versions="1+", tag=0, tagged="1+"),
    ),
)
