"""Pieces shared by the KRaft APIs' schemas (Vote, BeginQuorumEpoch, EndQuorumEpoch, ...).

Each is defined for the versions in which the message that uses it has it; a struct's fields
say ``"0+"`` and the enclosing field says which versions carry the struct.
"""

from zurau.protocol.schema import INT16, INT32, STRING, UINT16, Array, F, Struct

# The endpoint of a node that a response names as a leader (tagged ``NodeEndpoints`` lists).
NODE_ENDPOINT = Struct(
    F("node_id", INT32),
    F("host", STRING),
    F("port", UINT16),
)

# A named listener of a node: Raft requests carry the sender's (or the leader's) listeners.
LISTENER = Struct(
    F("name", STRING),
    F("host", STRING),
    F("port", UINT16),
)


def topics_of(partition: Struct) -> Struct:
    """The ``topics`` element of the quorum APIs: a topic name and its partitions."""
    return Struct(F("topic_name", STRING), F("partitions", Array(partition)))


# BeginQuorumEpoch's and EndQuorumEpoch's per-partition answer.
QUORUM_PARTITION_RESPONSE = Struct(
    F("partition_index", INT32),
    F("error_code", INT16),
    F("leader_id", INT32),
    F("leader_epoch", INT32),
)
