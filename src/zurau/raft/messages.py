"""The messages Raft nodes exchange, as plain frozen dataclasses named after Kafka's KRaft APIs
(KIP-595 with KIP-996 pre-vote, KIP-630 snapshots): Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch
and FetchSnapshot.

Only the fields the quorum protocol needs are here; the wire encoding in Kafka's request/response
formats is a separate, later step (the shell will translate). Every response carries the
responder's view of the quorum (``leader_id``, ``leader_epoch``) so that a node that is behind learns
of a newer epoch from any answer, as in Kafka.

``leader_id`` is ``NO_LEADER`` (-1) when the responder knows no leader in ``leader_epoch``.

A successful FetchResponse says exactly one of three things: here are entries continuing your log
(``records``, possibly none), your log leaves mine at ``diverging_epoch`` (truncate), or what you
need is no longer in my log: fetch snapshot ``snapshot_id`` (KIP-630). A snapshot is then pulled
in chunks with FetchSnapshot; each chunk names the snapshot id and the byte position it starts at,
so that a late, duplicated or foreign chunk is recognised and dropped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from zurau.protocol import errors

NO_LEADER = -1
NO_DIRECTORY = uuid.UUID(int=0)

NONE = errors.NONE
NOT_LEADER_OR_FOLLOWER = errors.NotLeaderOrFollowerError.code
FENCED_LEADER_EPOCH = errors.FencedLeaderEpochError.code
UNKNOWN_LEADER_EPOCH = errors.UnknownLeaderEpochError.code
INCONSISTENT_VOTER_SET = errors.InconsistentVoterSetError.code
SNAPSHOT_NOT_FOUND = errors.SnapshotNotFoundError.code
POSITION_OUT_OF_RANGE = errors.PositionOutOfRangeError.code
REQUEST_TIMED_OUT = errors.RequestTimedOutError.code
UNSUPPORTED_VERSION = errors.UnsupportedVersionError.code
INVALID_REQUEST = errors.InvalidRequestError.code
DUPLICATE_VOTER = errors.DuplicateVoterError.code
VOTER_NOT_FOUND = errors.VoterNotFoundError.code

# Kafka's control record types that Raft writes in the metadata log.
LEADER_CHANGE = 2
KRAFT_VERSION = 5
KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry: its ``offset``, the leader ``epoch`` that appended it and opaque ``payload``
    bytes. ``control`` marks Raft's own entries (the leader-change entry a new leader writes), which
    the state machine above skips, like Kafka's control batches. Entries appended by one
    ``append_as_leader`` call form one batch (one Kafka record batch on disk and on the wire);
    ``last_in_batch`` marks the batch's last entry, so that the state machine applies a batch
    whole, never half of it. ``control_type`` says which control record a control entry is
    (``LEADER_CHANGE``, ``KRAFT_VERSION``, ``KRAFT_VOTERS``); data entries ignore it."""

    offset: int
    epoch: int
    payload: bytes
    control: bool = False
    last_in_batch: bool = True
    control_type: int = LEADER_CHANGE


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    """An (end) offset together with the epoch it belongs to (Kafka's ``OffsetAndEpoch``)."""

    offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """Ask for a vote in ``candidate_epoch``. With ``pre_vote`` (KIP-996) the sender is only
    Prospective: ``candidate_epoch`` is the epoch it would use (its own epoch + 1), and the receiver
    neither bumps its epoch nor records a vote. ``last_offset_epoch``/``last_offset`` describe the
    end of the candidate's log (epoch of its last entry, log end offset)."""

    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """A new leader announces itself to the voters of its epoch."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error_code: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """A leader that resigns gracefully tells the voters; ``preferred_successors`` lists voters
    by how far their logs reached (most up to date first) so that they stand for election first."""

    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error_code: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A follower (voter or observer) pulls entries from ``fetch_offset`` (its log end offset).
    ``last_fetched_epoch`` is the epoch of its last entry; the leader checks that
    (``fetch_offset``, ``last_fetched_epoch``) lies on its own log. ``replica_epoch`` is the epoch
    the follower believes current (Kafka's ``current_leader_epoch``)."""

    replica_id: int
    replica_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    # The directory id of the fetcher's metadata log (Fetch v17+, KIP-853); the leader checks it
    # when the fetcher is to be added as a voter.
    replica_directory_id: uuid.UUID = NO_DIRECTORY


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """The leader's answer. Exactly one of these holds when ``error_code`` is NONE: ``records``
    (possibly empty) continue the follower's log from ``fetch_offset``; or ``diverging_epoch`` gives
    the (epoch, end offset) where the follower's log leaves the leader's and the follower must
    truncate; or ``snapshot_id`` names the leader's latest snapshot, which the follower must fetch
    (FetchSnapshot) because its position lies below the leader's log start or cannot be checked
    against what the leader still holds. ``fetch_offset``/``last_fetched_epoch`` echo the request
    so that a late or duplicated response is recognised."""

    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    fetch_offset: int
    last_fetched_epoch: int
    records: tuple[Entry, ...] = field(default=())
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """A follower asks the leader for up to ``max_bytes`` of snapshot ``snapshot_id`` from byte
    ``position`` on (KIP-630). ``replica_epoch`` is the epoch the follower believes current, checked
    as for Fetch."""

    replica_id: int
    replica_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """One chunk: ``data`` is the snapshot's bytes from ``position`` on, ``size`` the snapshot's total
    size. On an error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
    SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE) ``data`` is empty and ``size`` meaningless;
    ``snapshot_id`` and ``position`` echo the request."""

    error_code: int
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch
    size: int
    position: int
    data: bytes = b""


RaftRequest = (
    VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest
)
RaftResponse = (
    VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse | FetchSnapshotResponse
)
RaftMessage = RaftRequest | RaftResponse

RESPONSE_TYPES: tuple[type, ...] = (
    VoteResponse,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotResponse,
)
"""Every response class (for ``isinstance``): a node answers each request it receives with exactly
one of these, addressed to the requester."""
