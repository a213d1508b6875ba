"""Raft for the metadata quorum (KRaft: KIP-595 with KIP-996 pre-vote and KIP-630 snapshots), as a
sans-I/O core.

``node.RaftNode`` is the state machine; ``messages`` the requests and responses it exchanges;
``log.RaftLog`` and ``quorum_state.QuorumStateStore`` the injected persistence interfaces, with
in-memory implementations for tests and the simulation. Snapshots live in the ``RaftLog``: the
shell takes them (and deletes log prefixes) between steps; the node sends its snapshot to
followers below its log start and installs the leader's when it is one of them
(``Output.snapshot_loaded``). This package imports only the standard library,
``zurau.protocol``, ``zurau.types`` and ``zurau.clock``: no asyncio, sockets or files.
"""

from zurau.raft.log import InMemoryRaftLog, RaftLog
from zurau.raft.messages import Entry, OffsetAndEpoch
from zurau.raft.node import (
    LeaderGone,
    NotLeaderError,
    Outbound,
    Output,
    Propose,
    QuorumInfo,
    RaftConfig,
    RaftNode,
    Received,
    ReplicaInfo,
    Resign,
    Role,
    RoleChange,
    Tick,
)
from zurau.raft.quorum_state import ElectionState, InMemoryQuorumStateStore, QuorumStateStore

__all__ = [
    "ElectionState",
    "Entry",
    "InMemoryQuorumStateStore",
    "InMemoryRaftLog",
    "LeaderGone",
    "NotLeaderError",
    "OffsetAndEpoch",
    "Outbound",
    "Output",
    "Propose",
    "QuorumInfo",
    "QuorumStateStore",
    "RaftConfig",
    "RaftLog",
    "RaftNode",
    "Received",
    "ReplicaInfo",
    "Resign",
    "Role",
    "RoleChange",
    "Tick",
]
