"""The Raft core: :class:`RaftNode`, a sans-I/O state machine with Kafka's KRaft semantics
(KIP-595, with KIP-996 pre-vote).

``RaftNode.step(now_ms, event)`` takes one input -- a :class:`Tick`, a :class:`Received` message, a
client :class:`Propose` or a graceful :class:`Resign` -- and returns an :class:`Output`: the messages
to send (with their destination), the entries that became committed, and role changes. The node
touches no clock, socket or file: time comes in as ``now_ms``, randomness (election jitter) from an
injected seeded ``random.Random``, the log and the quorum state through the injected
:class:`~zurau.raft.log.RaftLog` and :class:`~zurau.raft.quorum_state.QuorumStateStore`. Given the
same inputs and seed it behaves the same, which is what the deterministic simulation relies on.
``next_deadline_ms()`` tells the shell when to send the next Tick.

Roles (Kafka's names): Unattached (no leader known in the epoch, maybe having voted), Prospective
(asking for pre-votes without bumping the epoch), Candidate (epoch bumped, voted for itself),
Leader, Follower (voter or observer fetching from the leader) and Resigned (a leader that gave up
its epoch). Observers -- nodes that are not in the static voter set -- only ever fetch.

The leader also keeps what DescribeQuorum reports (:meth:`RaftNode.quorum_info`, KIP-595/KIP-836):
every fetcher's (voter's or observer's) fetch offset and last fetch time, and when it was last
caught up -- at a fetch whose offset reached the leader's log end offset as of that fetch, or, if
its offset reached the log end offset the leader had at the replica's previous fetch, at that
previous fetch (the replica had everything the leader had then). The leader itself is always caught
up "now". This bookkeeping starts afresh in each epoch the node leads and never feeds back into
elections or the high watermark; observers that stop fetching are forgotten after
``OBSERVER_SESSION_TIMEOUT_MS``.

Safety invariants this module keeps (the simulation checks them from outside):

* **One vote per epoch.** A vote is written to the quorum-state store before the VoteResponse
  that grants it is returned, and a node never grants a second candidate in the same epoch; a
  restarted node reads its vote back. Pre-votes change nothing persistent.
* **Up-to-date voting.** A vote (or pre-vote) is granted only if the candidate's log ends at an
  (epoch, offset) at least as large as the voter's, compared by epoch first.
* **At most one leader per epoch** follows from the two above and majorities intersecting; a node
  that led an epoch and restarts comes back Resigned, never leader of that epoch again.
* **Log matching.** Followers only ever append entries copied from the leader of their epoch at
  their log end, after the leader checked that (fetch offset, last fetched epoch) lies on its own
  log; otherwise the leader answers with a diverging epoch and the follower truncates to the
  point where the logs last agree (Kafka's reconciliation).
* **Commit rule.** The leader's high watermark is the largest offset durable (flushed) on a
  majority of voters, and moves only past the epoch's start offset -- that is, once the
  leader-change control entry that the leader writes on election is committed, so an entry of the
  leader's own epoch is committed first. The high watermark never moves back. Followers learn it
  from Fetch responses (clamped to their own log end). Committed means below the high watermark.

Snapshots (KIP-630). The shell snapshots the state machine and deletes log prefixes itself, between
steps, through the :class:`~zurau.raft.log.RaftLog` (``create_snapshot`` at an offset no higher
than the node's high watermark, ``delete_before`` at most up to the latest snapshot); the node only
reads the log start and the latest snapshot when it needs them, so the start may move at any time.

* **Start.** A node starts with everything below its latest snapshot (else below the log start)
  counted as committed and applied: the shell loads that snapshot into the state machine before it
  constructs the node, and ``Output.committed`` only ever carries entries from there on. The high
  watermark starts there too.
* **Leader.** A Fetch whose position the leader cannot check against its log -- an offset below its
  log start, a last fetched epoch below the epoch at the start (the *base epoch*), or an offset
  equal to the start with another epoch -- is answered with the latest snapshot's id instead of
  entries or a diverging epoch; it does not count as an acknowledgement. FetchSnapshot requests are
  checked like Fetch (role, epoch) and answered with one chunk of the named snapshot
  (SNAPSHOT_NOT_FOUND for an id it does not hold, POSITION_OUT_OF_RANGE for a position outside
  it). Both keep the check-quorum timer of a voter alive, as a Fetch does.
* **Follower.** Told to fetch a snapshot, a follower stops fetching entries and pulls the snapshot
  chunk by chunk (request timeouts resend the same chunk; a chunk for another snapshot, another
  position, another leader or epoch is dropped; SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE or a
  changed size sends it back to Fetch, which names the leader's current snapshot). A complete
  snapshot is installed (``log.install_snapshot``: the log restarts empty at its offset), counted
  committed and applied (``Output.snapshot_loaded``), the high watermark raised to at least its
  offset, and fetching resumes from the new log end. A partial snapshot is forgotten whenever the
  node changes role, leader or epoch. A diverging epoch whose truncation point would fall below the
  follower's own log start (or whose epoch lies below the follower's base epoch) is not applied;
  the follower then fetches from offset 0, which any leader whose log starts above 0 answers with
  its snapshot. (This cannot happen while the quorum is safe: everything below a log start is
  committed, and committed entries never diverge.)
* **Invariants** (the simulation checks them): a node never truncates its log below its log start
  or below its committed offset; the state machine the shell keeps from ``Output`` (the snapshot it
  started from or was handed, plus the committed entries since) is at every step the fold of the
  committed log prefix below the node's committed offset, which never moves back while the node
  runs; the high watermark never moves back either, and never passes what a majority committed.
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from zurau.raft.batches import encode_leader_change, snapshot_voters
from zurau.raft.log import RaftLog
from zurau.raft.messages import (
    DUPLICATE_VOTER,
    FENCED_LEADER_EPOCH,
    INCONSISTENT_VOTER_SET,
    INVALID_REQUEST,
    KRAFT_VERSION,
    KRAFT_VOTERS,
    NO_DIRECTORY,
    NO_LEADER,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    POSITION_OUT_OF_RANGE,
    REQUEST_TIMED_OUT,
    SNAPSHOT_NOT_FOUND,
    UNKNOWN_LEADER_EPOCH,
    UNSUPPORTED_VERSION,
    VOTER_NOT_FOUND,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    RaftMessage,
    VoteRequest,
    VoteResponse,
)
from zurau.raft.quorum_state import ElectionState, QuorumStateStore
from zurau.raft.voter_set import KRAFT_VERSION_1, ReplicaKey, Voter, VoterSet, encode_kraft_version


class Role(enum.Enum):
    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Timeouts in milliseconds, with Kafka's defaults where Kafka has the setting."""

    election_timeout_ms: int = 1000  # controller.quorum.election.timeout.ms (+ up to as much jitter)
    fetch_timeout_ms: int = 2000  # controller.quorum.fetch.timeout.ms
    append_linger_ms: int = 25  # controller.quorum.append.linger.ms: the leader flushes this late
    request_timeout_ms: int = 500  # an unanswered Fetch is sent again after this long
    # Stands in for the leader's long poll (fetch.max.wait.ms): after an empty Fetch response a
    # follower waits this long before fetching again.
    fetch_idle_backoff_ms: int = 100
    retry_backoff_ms: int = 100  # resending BeginQuorumEpoch / EndQuorumEpoch to unanswered voters
    # controller.quorum.election.backoff.max.ms: a resigned leader's later successors wait
    # retry_backoff_ms * 2**position before standing, at most this long.
    election_backoff_max_ms: int = 1000
    max_fetch_entries: int = 64
    # FetchSnapshot's max_bytes: a follower asks for at most this much of a snapshot at a time, and
    # a leader sends at most this much in one chunk.
    snapshot_chunk_bytes: int = 1 << 20


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed; the node checks its timers."""


@dataclass(frozen=True, slots=True)
class Received:
    source: int
    message: RaftMessage


@dataclass(frozen=True, slots=True)
class Propose:
    """Client entries for the leader to append; ``step`` raises :class:`NotLeaderError` on any
    other node. The entries are flushed ``append_linger_ms`` later (a crash before that loses them)."""

    payloads: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Resign:
    """Graceful shutdown of a leader: give up the epoch and send EndQuorumEpoch."""


@dataclass(frozen=True, slots=True)
class LeaderGone:
    """The shell's evidence that ``leader_id``'s process is gone: its connection ended and its
    port refuses new ones (a crash or kill -9 on a host that stays up). A follower of that leader
    stops waiting out ``fetch_timeout_ms`` and acts as if it had expired: a voter becomes
    Prospective (pre-vote), an observer looks for the leader again, and it no longer counts the
    leader as recently heard when asked for a pre-vote. Ignored on any other node. A live
    leader's port never refuses, and pre-vote keeps a node that acted on wrong evidence from
    disrupting a leader the other voters still hear."""

    leader_id: int


@dataclass(frozen=True, slots=True)
class AddVoter:
    """AddRaftVoter (KIP-853) at the leader: add ``voter``, an observer that is fetching and caught
    up. ``request_id`` comes back in :attr:`Output.voter_changes` when the change is committed or
    refused."""

    request_id: int
    voter: Voter


@dataclass(frozen=True, slots=True)
class RemoveVoter:
    """RemoveRaftVoter (KIP-853) at the leader: remove the voter ``key`` (id and directory id)."""

    request_id: int
    key: ReplicaKey


@dataclass(frozen=True, slots=True)
class UpdateVoter:
    """UpdateRaftVoter (KIP-853) at the leader: a voter's new endpoints and kraft.version range,
    sent by that voter while it believes ``current_epoch`` is the leader's epoch."""

    request_id: int
    voter: Voter
    current_epoch: int


@dataclass(frozen=True, slots=True)
class VoterChangeResult:
    """The answer to an :class:`AddVoter` / :class:`RemoveVoter` / :class:`UpdateVoter`: NONE once
    the new voter set is committed, else the error (with a message for the admin)."""

    request_id: int
    error_code: int
    message: str | None = None


Event = Tick | Received | Propose | Resign | LeaderGone | AddVoter | RemoveVoter | UpdateVoter


@dataclass(frozen=True, slots=True)
class Outbound:
    destination: int
    message: RaftMessage


@dataclass(frozen=True, slots=True)
class RoleChange:
    role: Role
    epoch: int
    leader_id: int | None


@dataclass(slots=True)
class Output:
    """What one step produced. ``committed`` entries continue the state machine in offset order.
    ``snapshot_loaded`` is a snapshot the follower fetched and installed: its (end offset, epoch)
    and bytes, which replace the state machine's state (apply it before ``committed``)."""

    sends: list[Outbound] = field(default_factory=list)
    committed: list[Entry] = field(default_factory=list)
    role_changes: list[RoleChange] = field(default_factory=list)
    appended: list[Entry] = field(default_factory=list)
    snapshot_loaded: tuple[OffsetAndEpoch, bytes] | None = None
    voter_changes: list[VoterChangeResult] = field(default_factory=list)


OBSERVER_SESSION_TIMEOUT_MS = 300_000
"""An observer that has not fetched for this long drops out of :meth:`RaftNode.quorum_info`."""

UNKNOWN = -1

SNAPSHOT_VOTERS_SCAN_BYTES = 1 << 16
"""How much of a snapshot's start is read for its voter set (its leading control batches)."""


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One replica as the leader sees it (DescribeQuorum's ``ReplicaState``). ``log_end_offset`` is
    the offset of its last accepted fetch; the timestamps are the ``now_ms`` of the leader's steps.
    Each is ``-1`` when unknown (no fetch yet in the leader's epoch)."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp_ms: int
    last_caught_up_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """The leader's view of the quorum: voters (the leader among them) and observers, each sorted by
    replica id."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[ReplicaInfo]
    observers: list[ReplicaInfo]


@dataclass(slots=True)
class _SnapshotFetch:
    """A snapshot being pulled from the leader: the bytes so far, and its size once known."""

    snapshot_id: OffsetAndEpoch
    data: bytearray = field(default_factory=bytearray)
    size: int | None = None


class NotLeaderError(Exception):
    def __init__(self, leader_id: int | None, epoch: int) -> None:
        super().__init__(f"not the leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


def leader_change_payload(leader_id: int, voters: Iterable[int], granting: Iterable[int]) -> bytes:
    """The body of the leader-change control entry: Kafka's LeaderChangeMessage v0 (see
    :func:`zurau.raft.batches.encode_leader_change`)."""
    return encode_leader_change(leader_id, voters, granting)


class RaftNode:
    """One member of the quorum (voter) or an observer. See the module docstring."""

    def __init__(
        self,
        node_id: int,
        voters: Iterable[int] | VoterSet,
        log: RaftLog,
        store: QuorumStateStore,
        rng: random.Random,
        now_ms: int,
        config: RaftConfig | None = None,
        *,
        directory_id: uuid.UUID = NO_DIRECTORY,
        bootstrap: Sequence[int] = (),
    ) -> None:
        """``voters`` is a static voter set (node ids, ``controller.quorum.voters``) or, for a
        dynamic quorum (KIP-853), the bootstrap :class:`VoterSet` (``--standalone`` /
        ``--initial-controllers``; empty for a node that joins later), which the voter sets found in
        the latest snapshot and the log override. ``bootstrap`` are the ids (negative, as Kafka's)
        under which the shell knows ``controller.quorum.bootstrap.servers``: an observer that knows
        no leader asks them. ``directory_id`` is this node's metadata directory id."""
        self.node_id = node_id
        self.directory_id = directory_id
        self.bootstrap_ids = tuple(bootstrap)
        self.dynamic = isinstance(voters, VoterSet)
        self.kraft_version = KRAFT_VERSION_1 if self.dynamic else 0
        self.log = log
        self.store = store
        self.rng = rng
        self.config = config or RaftConfig()
        self._load_voters(voters if isinstance(voters, VoterSet) else VoterSet.of_ids(voters))
        # The voter change in flight (leader only): (request id, offset of its VotersRecord, the
        # voter it removes or None); answered once the high watermark passes the offset.
        self._pending_change: tuple[int, int, ReplicaKey | None] | None = None
        self._resign_at: int | None = None  # a leader that removed itself resigns then
        self._last_now = now_ms  # the time of the step in progress

        self.role = Role.UNATTACHED
        self.epoch = 0
        self.leader_id: int | None = None
        self.voted_id: int | None = None
        # Everything below the latest snapshot (else below the log start) is committed and already
        # in the state machine the shell restored (see the module docstring).
        snapshot = log.latest_snapshot()
        self._committed_upto = snapshot.offset if snapshot is not None else log.start_offset()
        if self._committed_upto > log.end_offset():
            raise ValueError(
                f"the log ends at {log.end_offset()}, below its latest snapshot {snapshot}: "
                "it should have restarted at the snapshot when it was opened"
            )
        self.high_watermark = self._committed_upto
        # Follower: the snapshot being fetched, and whether the next Fetch must ask for one.
        self._snapshot_fetch: _SnapshotFetch | None = None
        self._snapshot_wanted = False

        # Timers (absolute ms); None when not armed.
        self._election_deadline: int | None = None
        self._fetch_deadline: int | None = None
        self._next_fetch_at: int | None = None
        self._fetch_sent_at: int | None = None
        self._check_quorum_deadline: int | None = None
        self._next_resend_at: int | None = None
        self._flush_at: int | None = None
        # Election bookkeeping (Prospective / Candidate).
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        # Leader bookkeeping.
        self._epoch_start_offset = 0
        self._replica_end: dict[int, int] = {}
        self._fetched_voters: set[int] = set()
        self._last_fetch_ms: dict[int, int] = {}
        self._acked: set[int] = set()  # voters that answered BeginQuorumEpoch / EndQuorumEpoch
        # DescribeQuorum bookkeeping (leader only; see the module docstring). _last_fetch_ms holds
        # voters and observers alike.
        self._observer_end: dict[int, int] = {}
        self._caught_up_ms: dict[int, int] = {}
        self._leader_end_at_fetch: dict[int, int] = {}
        self._fetcher_directory: dict[int, uuid.UUID] = {}
        self._successors: tuple[int, ...] = ()
        # When we last heard from our leader directly (a successful Fetch or BeginQuorumEpoch).
        self._last_leader_contact: int | None = None
        # (leader, epoch) that told us it resigned: do not follow it again.
        self._ended: tuple[int, int] | None = None

        stored = store.read()
        if stored is not None:
            self.epoch = stored.epoch
            self.voted_id = stored.voted_id
            if stored.leader_id == node_id:
                # We led this epoch before a restart: never lead it again.
                self.leader_id = node_id
                self._enter_resigned(now_ms, Output(), notify=False)
                return
            if stored.leader_id is not None:
                self._enter_follower(now_ms, stored.leader_id, Output(), fetch_now=False)
                return
        self._enter_unattached(now_ms, Output())
        if self.voters == {node_id}:
            self._election_deadline = now_ms

    # ------------------------------------------------------------------ voter set (KIP-853)

    def _load_voters(self, bootstrap: VoterSet) -> None:
        """The voter set history: the bootstrap set, overridden by the latest snapshot's, then
        every VotersRecord in the log from that snapshot on (committed entries below it cannot be
        truncated, so nothing older is needed)."""
        log = self.log
        self._base_voters = bootstrap
        # Whether the base set is in the replicated history (a snapshot past offset 0), or only in
        # this node's bootstrap configuration -- then a leader writes it to the log first.
        self._base_in_log = False
        self._voter_history: list[tuple[int, VoterSet]] = []
        if not self.dynamic:
            return
        scan_from = log.start_offset()
        snapshot = log.latest_snapshot()
        if snapshot is not None:
            scan_from = max(scan_from, snapshot.offset)
            found = snapshot_voters(log.read_snapshot(snapshot, 0, SNAPSHOT_VOTERS_SCAN_BYTES))
            if found is not None:
                self._base_voters = found
                self._base_in_log = snapshot.offset > 0
        end = log.end_offset()
        while scan_from < end:
            entries = log.read(scan_from, 4096)
            if not entries:
                break
            self._scan_voters(entries)
            scan_from = entries[-1].offset + 1

    def _scan_voters(self, entries: Sequence[Entry]) -> bool:
        """Note the VotersRecords among newly appended ``entries``; True if any."""
        if not self.dynamic:
            return False
        found = False
        for e in entries:
            if e.control and e.control_type == KRAFT_VOTERS:
                self._voter_history.append((e.offset, VoterSet.decode(e.payload)))
                found = True
        return found

    def _truncate(self, offset: int) -> None:
        self.log.truncate_to(offset)
        history = self._voter_history
        while history and history[-1][0] >= offset:
            history.pop()

    @property
    def voter_set(self) -> VoterSet:
        """The effective voter set: the last one in the log, committed or not (Kafka's rule)."""
        history = self._voter_history
        return history[-1][1] if history else self._base_voters

    @property
    def voters(self) -> frozenset[int]:
        return self.voter_set.ids

    @property
    def majority(self) -> int:
        return self.voter_set.majority

    @property
    def is_voter(self) -> bool:
        return self.voter_set.is_voter(ReplicaKey(self.node_id, self.directory_id))

    def voters_at(self, offset: int) -> VoterSet:
        """The voter set in effect for a snapshot at ``offset`` (every entry below it applied):
        what the shell writes into that snapshot. ``offset`` must not lie below the latest
        snapshot."""
        found = self._base_voters
        for at, voters in self._voter_history:
            if at >= offset:
                break
            found = voters
        return found

    def _voters_changed(self, now: int, out: Output) -> None:
        """The effective voter set changed (append, truncation or snapshot)."""
        if self.role is Role.LEADER:
            voters = self.voters
            for v in voters:
                if v != self.node_id and v not in self._replica_end:
                    self._replica_end[v] = self._observer_end.pop(v, 0)
            for v in list(self._replica_end):
                if v not in voters:
                    self._replica_end.pop(v)
            self._fetched_voters &= voters
            self._maybe_advance_high_watermark(out)
        elif not self.is_voter and self.role in (Role.PROSPECTIVE, Role.CANDIDATE):
            self._enter_unattached(now, out)
        elif self.role is Role.UNATTACHED and self.is_voter != (self._election_deadline is not None):
            self._enter_unattached(now, out)  # re-arm: an election timer for voters, fetching otherwise

    def _voter_change_refused(self) -> tuple[int, str] | None:
        """Why the leader cannot start a voter change now, or None."""
        if self.role is not Role.LEADER:
            return NOT_LEADER_OR_FOLLOWER, f"node {self.node_id} is not the leader"
        if not self.dynamic:
            return UNSUPPORTED_VERSION, (
                "the quorum's voters are static (controller.quorum.voters, kraft.version 0); a dynamic "
                "quorum is configured with controller.quorum.bootstrap.servers and formatted with "
                "--standalone or --initial-controllers"
            )
        if self.high_watermark <= self._epoch_start_offset:
            return REQUEST_TIMED_OUT, "the leader has not committed an offset in its epoch yet; retry"
        if self._pending_change is not None or (
            self._voter_history and self._voter_history[-1][0] >= self.high_watermark
        ):
            return REQUEST_TIMED_OUT, "another voter change is not committed yet; retry"
        return None

    def _append_voters(
        self, now: int, voters: VoterSet, request_id: int, removed: ReplicaKey | None, out: Output
    ) -> None:
        (entry,) = self.log.append_as_leader(
            self.epoch, [voters.encode()], control=True, control_types=(KRAFT_VOTERS,)
        )
        self._voter_history.append((entry.offset, voters))
        self._pending_change = (request_id, entry.offset, removed)
        if self._flush_at is None:
            self._flush_at = now + self.config.append_linger_ms
        self._voters_changed(now, out)

    def _on_add_voter(self, now: int, ev: AddVoter, out: Output) -> None:
        def refuse(code: int, message: str) -> None:
            out.voter_changes.append(VoterChangeResult(ev.request_id, code, message))

        refused = self._voter_change_refused()
        if refused is not None:
            refuse(*refused)
            return
        key = ev.voter.key
        if key.node_id in self.voters:
            refuse(DUPLICATE_VOTER, f"node {key.node_id} is already a voter")
            return
        if key.directory_id == NO_DIRECTORY:
            refuse(INVALID_REQUEST, f"voter {key.node_id} needs its metadata directory id")
            return
        if not ev.voter.endpoints:
            refuse(INVALID_REQUEST, f"voter {key} needs at least one listener endpoint")
            return
        fetched = self._last_fetch_ms.get(key.node_id)
        if fetched is None or key.node_id not in self._observer_end or now - fetched > self.config.fetch_timeout_ms:
            refuse(REQUEST_TIMED_OUT, f"node {key.node_id} is not fetching from the leader as an observer")
            return
        directory = self._fetcher_directory.get(key.node_id, NO_DIRECTORY)
        if directory != key.directory_id:
            refuse(
                INVALID_REQUEST,
                f"node {key.node_id} fetches with metadata directory {directory}, not {key.directory_id}",
            )
            return
        if self._observer_end[key.node_id] < self.high_watermark:
            refuse(REQUEST_TIMED_OUT, f"node {key.node_id} has not caught up with the leader yet; retry")
            return
        self._append_voters(now, self.voter_set.with_voter(ev.voter), ev.request_id, None, out)

    def _on_remove_voter(self, now: int, ev: RemoveVoter, out: Output) -> None:
        def refuse(code: int, message: str) -> None:
            out.voter_changes.append(VoterChangeResult(ev.request_id, code, message))

        refused = self._voter_change_refused()
        if refused is not None:
            refuse(*refused)
            return
        voter = self.voter_set.get(ev.key.node_id)
        if voter is None or not voter.key.matches(ev.key):
            refuse(VOTER_NOT_FOUND, f"{ev.key} is not a voter (voters: {self.voter_set!r})")
            return
        if len(self.voter_set) == 1:
            refuse(INVALID_REQUEST, f"{ev.key} is the only voter; a quorum cannot be empty")
            return
        self._append_voters(now, self.voter_set.without(ev.key.node_id), ev.request_id, voter.key, out)

    def _on_update_voter(self, now: int, ev: UpdateVoter, out: Output) -> None:
        def answer(code: int, message: str | None = None) -> None:
            out.voter_changes.append(VoterChangeResult(ev.request_id, code, message))

        if self.role is Role.LEADER and ev.current_epoch != self.epoch:
            code = FENCED_LEADER_EPOCH if ev.current_epoch < self.epoch else UNKNOWN_LEADER_EPOCH
            answer(code, f"the leader's epoch is {self.epoch}")
            return
        voter = self.voter_set.get(ev.voter.node_id)
        if self.role is Role.LEADER and (voter is None or not voter.key.matches(ev.voter.key)):
            answer(VOTER_NOT_FOUND, f"{ev.voter.key} is not a voter")
            return
        if self.role is Role.LEADER and voter is not None and self.voter_set.updated(ev.voter) == self.voter_set:
            answer(NONE)  # nothing changes
            return
        refused = self._voter_change_refused()
        if refused is not None:
            answer(*refused)
            return
        self._append_voters(now, self.voter_set.updated(ev.voter), ev.request_id, None, out)

    def _complete_voter_change(self, now: int, out: Output) -> None:
        pending = self._pending_change
        if pending is None or self.high_watermark <= pending[1]:
            return
        self._pending_change = None
        request_id, _, removed = pending
        out.voter_changes.append(VoterChangeResult(request_id, NONE))
        if removed is not None and removed.node_id == self.node_id:
            self._resign_at = now  # no longer a voter: hand leadership on (next tick)

    # ------------------------------------------------------------------ public API

    def step(self, now_ms: int, event: Event) -> Output:
        out = Output()
        self._last_now = now_ms
        if isinstance(event, Tick):
            self._on_tick(now_ms, out)
        elif isinstance(event, Received):
            self._on_message(now_ms, event.source, event.message, out)
        elif isinstance(event, Propose):
            if self.role is not Role.LEADER:
                raise NotLeaderError(self.leader_id, self.epoch)
            out.appended.extend(self.log.append_as_leader(self.epoch, event.payloads))
            if self._flush_at is None:
                self._flush_at = now_ms + self.config.append_linger_ms
        elif isinstance(event, Resign):
            if self.role is Role.LEADER:
                self._enter_resigned(now_ms, out, notify=True)
        elif isinstance(event, LeaderGone):
            if self.role is Role.FOLLOWER and self.leader_id == event.leader_id:
                self._last_leader_contact = None
                self._fetch_deadline = now_ms
                self._on_tick(now_ms, out)
        elif isinstance(event, AddVoter):
            self._on_add_voter(now_ms, event, out)
        elif isinstance(event, RemoveVoter):
            self._on_remove_voter(now_ms, event, out)
        elif isinstance(event, UpdateVoter):
            self._on_update_voter(now_ms, event, out)
        return out

    def next_deadline_ms(self) -> int | None:
        timers = [
            self._election_deadline,
            self._fetch_deadline,
            self._next_fetch_at,
            None if self._fetch_sent_at is None else self._fetch_sent_at + self.config.request_timeout_ms,
            self._check_quorum_deadline,
            self._next_resend_at,
            self._flush_at,
            self._resign_at,
        ]
        live = [t for t in timers if t is not None]
        return min(live) if live else None

    def election_state(self) -> ElectionState:
        # A dynamic quorum's voters live in the log; the quorum state names none (data version 1).
        voters = frozenset() if self.dynamic else self.voters
        return ElectionState(self.epoch, self.voted_id, self.leader_id, voters)

    def quorum_info(self, now_ms: int) -> QuorumInfo | None:
        """What DescribeQuorum reports, or None unless this node is the leader."""
        if self.role is not Role.LEADER:
            return None
        expired = [
            r
            for r in self._observer_end
            if now_ms - self._last_fetch_ms.get(r, now_ms) >= OBSERVER_SESSION_TIMEOUT_MS
        ]
        for r in expired:
            self._forget_replica(r)

        def info(r: int, end: int) -> ReplicaInfo:
            if r == self.node_id:
                return ReplicaInfo(r, self.log.end_offset(), now_ms, now_ms)
            fetched = self._last_fetch_ms.get(r, UNKNOWN)
            return ReplicaInfo(
                r,
                end if fetched != UNKNOWN else UNKNOWN,
                fetched,
                self._caught_up_ms.get(r, UNKNOWN),
            )

        voters = [info(v, self._replica_end.get(v, UNKNOWN)) for v in sorted(self.voters)]
        observers = [info(o, self._observer_end[o]) for o in sorted(self._observer_end)]
        return QuorumInfo(self.node_id, self.epoch, self.high_watermark, voters, observers)

    # ------------------------------------------------------------------ transitions

    def _persist(self) -> None:
        state = self.election_state()
        if self.store.read() != state:
            self.store.write(state)

    def _reset_timers(self) -> None:
        self._election_deadline = None
        self._fetch_deadline = None
        self._next_fetch_at = None
        self._fetch_sent_at = None
        self._check_quorum_deadline = None
        self._next_resend_at = None
        self._flush_at = None
        self._resign_at = None
        self._granted = set()
        self._rejected = set()
        self._acked = set()

    def _set_role(self, role: Role, out: Output) -> None:
        if self._pending_change is not None and role is not Role.LEADER:
            request_id = self._pending_change[0]
            self._pending_change = None
            out.voter_changes.append(
                VoterChangeResult(request_id, NOT_LEADER_OR_FOLLOWER, "the leader lost its leadership")
            )
        self.role = role
        self._reset_timers()
        self._snapshot_fetch = None
        self._snapshot_wanted = False
        out.role_changes.append(RoleChange(role, self.epoch, self.leader_id))

    def _random_election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randrange(t)

    def _enter_unattached(self, now: int, out: Output, epoch: int | None = None) -> None:
        if epoch is not None and epoch != self.epoch:
            self.epoch = epoch
            self.voted_id = None
        self.leader_id = None
        self._persist()
        self._set_role(Role.UNATTACHED, out)
        self._election_deadline = now + self._random_election_timeout()
        if not self.is_voter:
            self._election_deadline = None
            self._next_fetch_at = now  # observers look for the leader by asking voters

    def _enter_follower(self, now: int, leader_id: int, out: Output, fetch_now: bool = True) -> None:
        if self.role is not Role.PROSPECTIVE or self.leader_id != leader_id:
            self._last_leader_contact = None
        self.leader_id = leader_id
        self._persist()
        self._set_role(Role.FOLLOWER, out)
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        self._next_fetch_at = now
        if fetch_now:
            self._maybe_send_fetch(now, out)

    def _enter_prospective(self, now: int, out: Output) -> None:
        self._set_role(Role.PROSPECTIVE, out)
        self._election_deadline = now + self._random_election_timeout()
        self._granted = {self.node_id}
        request = VoteRequest(
            candidate_epoch=self.epoch + 1,
            candidate_id=self.node_id,
            last_offset_epoch=self.log.last_fetched_epoch(),
            last_offset=self.log.end_offset(),
            pre_vote=True,
        )
        for v in sorted(self.voters - {self.node_id}):
            out.sends.append(Outbound(v, request))
        self._check_election(now, out)

    def _enter_candidate(self, now: int, out: Output) -> None:
        self.epoch += 1
        self.voted_id = self.node_id
        self.leader_id = None
        self._persist()  # the vote for ourselves is durable before anyone is asked
        self._set_role(Role.CANDIDATE, out)
        self._election_deadline = now + self._random_election_timeout()
        self._granted = {self.node_id}
        request = VoteRequest(
            candidate_epoch=self.epoch,
            candidate_id=self.node_id,
            last_offset_epoch=self.log.last_fetched_epoch(),
            last_offset=self.log.end_offset(),
        )
        for v in sorted(self.voters - {self.node_id}):
            out.sends.append(Outbound(v, request))
        self._check_election(now, out)

    def _enter_leader(self, now: int, out: Output) -> None:
        granting = set(self._granted)
        self.leader_id = self.node_id
        self._persist()
        self._set_role(Role.LEADER, out)
        self._epoch_start_offset = self.log.end_offset()
        self.log.append_as_leader(
            self.epoch, [leader_change_payload(self.node_id, self.voters, granting)], control=True
        )
        if self.dynamic and not self._voter_history and not self._base_in_log:
            # The voter set came from this node's bootstrap checkpoint: write it to the log, where
            # observers that never had that checkpoint learn it (KIP-853).
            entries = self.log.append_as_leader(
                self.epoch,
                [encode_kraft_version(self.kraft_version), self._base_voters.encode()],
                control=True,
                control_types=(KRAFT_VERSION, KRAFT_VOTERS),
            )
            self._voter_history.append((entries[-1].offset, self._base_voters))
        self._flush_at = now + self.config.append_linger_ms
        self._replica_end = {v: 0 for v in self.voters if v != self.node_id}
        self._last_fetch_ms = {}
        self._observer_end = {}
        self._caught_up_ms = {}
        self._leader_end_at_fetch = {}
        self._fetched_voters = {self.node_id} & self.voters
        self._fetcher_directory = {}
        if self.majority > 1:
            self._check_quorum_deadline = now + self.config.fetch_timeout_ms * 3 // 2
        self._acked = {self.node_id}
        self._send_begin_quorum(now, out)
        self._maybe_advance_high_watermark(out)

    def _enter_resigned(self, now: int, out: Output, notify: bool) -> None:
        ends = {v: e for v, e in self._replica_end.items() if v in self.voters}
        self._successors = tuple(sorted(ends, key=lambda v: (-ends[v], v)))
        self._set_role(Role.RESIGNED, out)
        self._election_deadline = now + self._random_election_timeout()
        self._acked = {self.node_id}
        if notify:
            self._send_end_quorum(now, out)

    def _maybe_transition(self, now: int, leader_id: int, epoch: int, out: Output) -> None:
        """Adopt what a message says about the quorum: a newer epoch, or the leader of ours."""
        leader = None if leader_id == NO_LEADER else leader_id
        if leader is not None and self._ended == (leader, epoch):
            leader = None
        if epoch > self.epoch:
            if leader is not None and leader != self.node_id:
                self.epoch = epoch
                self.voted_id = None
                self._enter_follower(now, leader, out)
            else:
                self._enter_unattached(now, out, epoch)
        elif (
            epoch == self.epoch
            and leader is not None
            and leader != self.node_id
            and self.leader_id is None
            and self.role in (Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE)
        ):
            self._enter_follower(now, leader, out)

    # ------------------------------------------------------------------ timers

    def _on_tick(self, now: int, out: Output) -> None:
        role = self.role
        if role is Role.LEADER:
            if self._flush_at is not None and now >= self._flush_at:
                self._flush_at = None
                self.log.flush()
                self._maybe_advance_high_watermark(out)
            if self._resign_at is not None and now >= self._resign_at:
                self._enter_resigned(now, out, notify=True)
                return
            if self._check_quorum_deadline is not None and now >= self._check_quorum_deadline:
                # Check quorum: no majority fetched within 1.5 x fetch timeout; stop leading.
                self._enter_resigned(now, out, notify=True)
                return
            if self._next_resend_at is not None and now >= self._next_resend_at:
                self._send_begin_quorum(now, out)
        elif role is Role.FOLLOWER:
            if self._fetch_deadline is not None and now >= self._fetch_deadline:
                if self.is_voter:
                    self._enter_prospective(now, out)
                else:
                    self._enter_unattached(now, out)
                return
            self._maybe_send_fetch(now, out)
        elif role is Role.UNATTACHED:
            if self.is_voter:
                if self._election_deadline is None:
                    self._enter_unattached(now, out)  # became a voter: arm the election timer
                elif now >= self._election_deadline:
                    self._enter_prospective(now, out)
            elif self._election_deadline is not None:
                self._enter_unattached(now, out)  # no longer a voter: look for the leader instead
            elif self._next_fetch_at is not None and now >= self._next_fetch_at:
                # An observer looks for the leader: ask a voter or a bootstrap server.
                targets = [*sorted(self.voters - {self.node_id}), *self.bootstrap_ids]
                if targets:
                    target = targets[self.rng.randrange(len(targets))]
                    out.sends.append(Outbound(target, self._fetch_request()))
                self._next_fetch_at = now + self.config.request_timeout_ms
        elif role in (Role.PROSPECTIVE, Role.CANDIDATE, Role.RESIGNED):
            if self._election_deadline is not None and now >= self._election_deadline:
                if self.is_voter:
                    self._enter_prospective(now, out)
                else:
                    self._enter_unattached(now, out)  # removed from the voters: observe
            elif role is Role.RESIGNED and self._next_resend_at is not None and now >= self._next_resend_at:
                self._send_end_quorum(now, out)

    def _fetch_position(self) -> tuple[int, int]:
        """(fetch offset, last fetched epoch) of our next Fetch: our log end, or (0, 0) -- the
        position of a replica that holds nothing -- when our log cannot be reconciled and we need
        the leader's snapshot."""
        if self._snapshot_wanted:
            return 0, 0
        return self.log.end_offset(), self.log.last_fetched_epoch()

    def _fetch_request(self) -> FetchRequest:
        # The fetch offset acknowledges our log up to it, so that prefix must be durable (a former
        # leader may still hold entries it never flushed).
        if self.log.flushed_offset() < self.log.end_offset():
            self.log.flush()
        offset, epoch = self._fetch_position()
        return FetchRequest(
            replica_id=self.node_id,
            replica_epoch=self.epoch,
            fetch_offset=offset,
            last_fetched_epoch=epoch,
            replica_directory_id=self.directory_id,
        )

    def _fetch_snapshot_request(self, fetch: _SnapshotFetch) -> FetchSnapshotRequest:
        return FetchSnapshotRequest(
            replica_id=self.node_id,
            replica_epoch=self.epoch,
            snapshot_id=fetch.snapshot_id,
            position=len(fetch.data),
            max_bytes=self.config.snapshot_chunk_bytes,
        )

    def _maybe_send_fetch(self, now: int, out: Output) -> None:
        """Send the next Fetch -- or, while a snapshot is being fetched, the next FetchSnapshot --
        when it is due (resending after a request timeout)."""
        assert self.leader_id is not None
        if self._fetch_sent_at is not None:
            if now < self._fetch_sent_at + self.config.request_timeout_ms:
                return
        elif self._next_fetch_at is None or now < self._next_fetch_at:
            return
        request: FetchRequest | FetchSnapshotRequest
        if self._snapshot_fetch is not None:
            request = self._fetch_snapshot_request(self._snapshot_fetch)
        else:
            request = self._fetch_request()
        out.sends.append(Outbound(self.leader_id, request))
        self._fetch_sent_at = now
        self._next_fetch_at = None

    def _send_begin_quorum(self, now: int, out: Output) -> None:
        """To voters that have not answered yet, and every half fetch timeout to voters that have not
        fetched lately: a voter stuck in a higher epoch (its candidacy failed in a partition, and
        pre-votes cannot move anyone's epoch) answers with that epoch, which ends ours."""
        request = BeginQuorumEpochRequest(self.node_id, self.epoch)
        quiet_since = now - self.config.fetch_timeout_ms // 2
        for v in sorted(self.voters - {self.node_id}):
            if v not in self._acked or self._last_fetch_ms.get(v, -1) < quiet_since:
                out.sends.append(Outbound(v, request))
        if self.voters - self._acked:
            self._next_resend_at = now + self.config.retry_backoff_ms
        else:
            self._next_resend_at = now + self.config.fetch_timeout_ms // 2

    def _send_end_quorum(self, now: int, out: Output) -> None:
        request = EndQuorumEpochRequest(self.node_id, self.epoch, self._successors)
        for v in sorted(self.voters - self._acked):
            out.sends.append(Outbound(v, request))
        self._next_resend_at = now + self.config.retry_backoff_ms if self.voters - self._acked else None

    # ------------------------------------------------------------------ messages

    def _on_message(self, now: int, source: int, msg: RaftMessage, out: Output) -> None:
        if isinstance(msg, VoteRequest):
            self._on_vote_request(now, source, msg, out)
        elif isinstance(msg, VoteResponse):
            self._on_vote_response(now, source, msg, out)
        elif isinstance(msg, FetchRequest):
            self._on_fetch_request(now, source, msg, out)
        elif isinstance(msg, FetchResponse):
            self._on_fetch_response(now, msg, out)
        elif isinstance(msg, FetchSnapshotRequest):
            self._on_fetch_snapshot_request(now, source, msg, out)
        elif isinstance(msg, FetchSnapshotResponse):
            self._on_fetch_snapshot_response(now, msg, out)
        elif isinstance(msg, BeginQuorumEpochRequest):
            self._maybe_transition(now, msg.leader_id, msg.leader_epoch, out)
            if self.role is Role.FOLLOWER and (self.leader_id, self.epoch) == (
                msg.leader_id,
                msg.leader_epoch,
            ):
                self._last_leader_contact = now
            error = FENCED_LEADER_EPOCH if msg.leader_epoch < self.epoch else NONE
            out.sends.append(
                Outbound(source, BeginQuorumEpochResponse(error, self._leader_or_none(), self.epoch))
            )
        elif isinstance(msg, BeginQuorumEpochResponse):
            self._maybe_transition(now, msg.leader_id, msg.leader_epoch, out)
            if self.role is Role.LEADER and msg.leader_epoch == self.epoch and msg.error_code == NONE:
                self._acked.add(source)
        elif isinstance(msg, EndQuorumEpochRequest):
            self._on_end_quorum(now, source, msg, out)
        elif isinstance(msg, EndQuorumEpochResponse):
            self._maybe_transition(now, msg.leader_id, msg.leader_epoch, out)
            if self.role is Role.RESIGNED and msg.leader_epoch == self.epoch:
                self._acked.add(source)

    def _leader_or_none(self) -> int:
        """The leader we announce in responses (a resigned leader announces none)."""
        if self.leader_id is None or self.role is Role.RESIGNED:
            return NO_LEADER
        return self.leader_id

    def _leader_recently_heard(self, now: int) -> bool:
        contact = self._last_leader_contact
        return (
            self.role is Role.FOLLOWER
            and contact is not None
            and now - contact < self.config.fetch_timeout_ms
        )

    def _log_is_up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        return (last_epoch, last_offset) >= (self.log.last_fetched_epoch(), self.log.end_offset())

    def _on_vote_request(self, now: int, source: int, req: VoteRequest, out: Output) -> None:
        def reply(granted: bool, error: int = NONE) -> None:
            out.sends.append(
                Outbound(
                    source, VoteResponse(error, self._leader_or_none(), self.epoch, granted, req.pre_vote)
                )
            )

        # A static quorum refuses candidates outside its voter set, and votes only as a voter. A
        # dynamic one (KIP-853) votes whatever its own log says of the voter set: either side may
        # not have replicated the latest change yet (a voter just added must be able to vote for
        # the candidate that needs it, or neither could ever win); the candidate counts votes
        # against its own voter set, and the up-to-date check stands in the way of stale logs.
        if not self.dynamic and (not self.is_voter or req.candidate_id not in self.voters):
            reply(False, INCONSISTENT_VOTER_SET)
            return
        up_to_date = self._log_is_up_to_date(req.last_offset_epoch, req.last_offset)
        if req.pre_vote:
            # KIP-996: no epoch bump, nothing persisted. Refuse if we lead, or while we follow a
            # leader we heard from directly within the fetch timeout.
            if req.candidate_epoch <= self.epoch:
                reply(False, FENCED_LEADER_EPOCH)
                return
            reply(self.role is not Role.LEADER and not self._leader_recently_heard(now) and up_to_date)
            return
        if req.candidate_epoch < self.epoch:
            reply(False, FENCED_LEADER_EPOCH)
            return
        if req.candidate_epoch > self.epoch:
            self._enter_unattached(now, out, req.candidate_epoch)
        grant = (
            self.role in (Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE)
            and self.leader_id is None
            and self.voted_id in (None, req.candidate_id)
            and up_to_date
        )
        if grant:
            self.voted_id = req.candidate_id
            self._persist()  # durable before the response leaves
            if self.role is not Role.UNATTACHED:
                self._enter_unattached(now, out)
            else:
                self._election_deadline = now + self._random_election_timeout()
        reply(grant)

    def _on_vote_response(self, now: int, source: int, resp: VoteResponse, out: Output) -> None:
        self._maybe_transition(now, resp.leader_id, resp.leader_epoch, out)
        if source not in self.voters:
            return
        if resp.pre_vote:
            # A granting voter may be in an older epoch than ours; a refusal from a newer epoch
            # has already moved us on above.
            if self.role is not Role.PROSPECTIVE or resp.leader_epoch > self.epoch:
                return
        elif self.role is not Role.CANDIDATE or resp.leader_epoch != self.epoch:
            return
        if resp.vote_granted:
            self._granted.add(source)
            self._rejected.discard(source)
        else:
            self._rejected.add(source)
        self._check_election(now, out)

    def _check_election(self, now: int, out: Output) -> None:
        if len(self._granted) >= self.majority:
            if self.role is Role.PROSPECTIVE:
                self._enter_candidate(now, out)
            elif self.role is Role.CANDIDATE:
                self._enter_leader(now, out)
        elif len(self._rejected) > len(self.voters) - self.majority:
            # Lost: wait for the next election timeout (a known leader is followed again).
            if self.role is Role.PROSPECTIVE and self.leader_id not in (None, self.node_id):
                self._enter_follower(now, self.leader_id, out)
            else:
                self._enter_unattached(now, out)

    def _on_end_quorum(self, now: int, source: int, req: EndQuorumEpochRequest, out: Output) -> None:
        self._maybe_transition(now, req.leader_id, req.leader_epoch, out)
        if req.leader_epoch == self.epoch and self.role is Role.FOLLOWER and self.leader_id == req.leader_id:
            self._ended = (req.leader_id, req.leader_epoch)
            self._enter_unattached(now, out)
            if self.node_id in req.preferred_successors:
                position = req.preferred_successors.index(self.node_id)
                backoff = 0 if position == 0 else self.config.retry_backoff_ms * 2**position
                self._election_deadline = now + min(backoff, self.config.election_backoff_max_ms)
        error = FENCED_LEADER_EPOCH if req.leader_epoch < self.epoch else NONE
        out.sends.append(Outbound(source, EndQuorumEpochResponse(error, self._leader_or_none(), self.epoch)))

    # ------------------------------------------------------------------ replication

    def _log_base(self) -> OffsetAndEpoch:
        """(log start offset, base epoch): what the log answers for an epoch below all of its own
        (see :mod:`zurau.raft.log`); (0, 0) for a log starting at 0."""
        return self.log.end_offset_for_epoch(-1)

    def _needs_snapshot(self, fetch_offset: int, last_fetched_epoch: int) -> bool:
        """Whether a fetcher at (fetch_offset, last_fetched_epoch) must get our snapshot: its
        position lies below our log start, or cannot be checked against the entries we still hold
        (its last epoch is older than the entry just below our start, or it sits exactly at our
        start with another epoch than that entry's), so that any truncation point we could name
        would fall below our start."""
        start = self.log.start_offset()
        if start == 0:
            return False
        if fetch_offset < start:
            return True
        base = self._log_base()
        return last_fetched_epoch < base.epoch or (fetch_offset == start and last_fetched_epoch != base.epoch)

    def _validate_fetch(self, req: FetchRequest) -> OffsetAndEpoch | None:
        """None if (fetch offset, last fetched epoch) lies on our log, else the diverging epoch."""
        if req.fetch_offset == 0 and req.last_fetched_epoch == 0:
            return None
        end = self.log.end_offset_for_epoch(req.last_fetched_epoch)
        if end.epoch != req.last_fetched_epoch or end.offset < req.fetch_offset:
            return end
        return None

    def _on_fetch_request(self, now: int, source: int, req: FetchRequest, out: Output) -> None:
        def error(code: int) -> FetchResponse:
            return FetchResponse(
                code,
                self._leader_or_none(),
                self.epoch,
                self.high_watermark,
                req.fetch_offset,
                req.last_fetched_epoch,
            )

        def answer(**what: Any) -> None:
            """A leader's answer: records, a diverging epoch or a snapshot id (``what``)."""
            resp = FetchResponse(
                NONE, self.node_id, self.epoch, self.high_watermark, req.fetch_offset, req.last_fetched_epoch, **what
            )
            out.sends.append(Outbound(source, resp))

        if self.role is not Role.LEADER:
            out.sends.append(Outbound(source, error(NOT_LEADER_OR_FOLLOWER)))
            return
        if req.replica_epoch < self.epoch:
            out.sends.append(Outbound(source, error(FENCED_LEADER_EPOCH)))
            return
        if req.replica_epoch > self.epoch:
            out.sends.append(Outbound(source, error(UNKNOWN_LEADER_EPOCH)))
            return
        snapshot = self.log.latest_snapshot()
        if snapshot is not None and self._needs_snapshot(req.fetch_offset, req.last_fetched_epoch):
            self._note_voter_contact(now, source)
            answer(snapshot_id=snapshot)
            return
        diverging = self._validate_fetch(req)
        if diverging is not None:
            answer(diverging_epoch=diverging)
            return
        self._track_fetch(now, source, req.fetch_offset)
        self._fetcher_directory[source] = req.replica_directory_id
        if source in self.voters:
            self._replica_end[source] = req.fetch_offset
            self._note_voter_contact(now, source)
            self._maybe_advance_high_watermark(out)
        answer(records=tuple(self.log.read(req.fetch_offset, self.config.max_fetch_entries)))

    def _note_voter_contact(self, now: int, source: int) -> None:
        """A voter fetched from us (entries or a snapshot): it follows this epoch (no need to resend
        BeginQuorumEpoch) and counts towards check quorum."""
        if source not in self.voters:
            return
        self._acked.add(source)
        self._fetched_voters.add(source)
        if len(self._fetched_voters) >= self.majority:
            self._fetched_voters = {self.node_id}
            self._check_quorum_deadline = now + self.config.fetch_timeout_ms * 3 // 2

    def _on_fetch_snapshot_request(
        self, now: int, source: int, req: FetchSnapshotRequest, out: Output
    ) -> None:
        def reply(code: int, size: int = -1, data: bytes = b"") -> None:
            resp = FetchSnapshotResponse(
                code, self._leader_or_none(), self.epoch, req.snapshot_id, size, req.position, data
            )
            out.sends.append(Outbound(source, resp))

        if self.role is not Role.LEADER:
            reply(NOT_LEADER_OR_FOLLOWER)
            return
        if req.replica_epoch < self.epoch:
            reply(FENCED_LEADER_EPOCH)
            return
        if req.replica_epoch > self.epoch:
            reply(UNKNOWN_LEADER_EPOCH)
            return
        try:
            size = self.log.snapshot_size(req.snapshot_id)
        except KeyError:
            reply(SNAPSHOT_NOT_FOUND)
            return
        # Position == size is only a valid request for an empty snapshot (whose one chunk is empty).
        if req.position < 0 or req.position > size or (req.position == size and size > 0):
            reply(POSITION_OUT_OF_RANGE, size)
            return
        self._note_voter_contact(now, source)
        max_bytes = max(0, min(req.max_bytes, self.config.snapshot_chunk_bytes))
        reply(NONE, size, bytes(self.log.read_snapshot(req.snapshot_id, req.position, max_bytes)))

    def _track_fetch(self, now: int, replica: int, fetch_offset: int) -> None:
        """Record an accepted fetch for DescribeQuorum (last fetch, last caught up)."""
        leader_end = self.log.end_offset()
        previous_end = self._leader_end_at_fetch.get(replica)
        if fetch_offset >= leader_end:
            self._caught_up_ms[replica] = now
        elif previous_end is not None and fetch_offset >= previous_end:
            # It has all the leader had at its previous fetch: caught up as of that fetch.
            before = self._last_fetch_ms[replica]
            self._caught_up_ms[replica] = max(self._caught_up_ms.get(replica, UNKNOWN), before)
        self._leader_end_at_fetch[replica] = leader_end
        self._last_fetch_ms[replica] = now
        if replica not in self.voters:
            self._observer_end[replica] = fetch_offset

    def _forget_replica(self, replica: int) -> None:
        self._observer_end.pop(replica, None)
        self._caught_up_ms.pop(replica, None)
        self._leader_end_at_fetch.pop(replica, None)
        self._last_fetch_ms.pop(replica, None)

    def _on_fetch_response(self, now: int, resp: FetchResponse, out: Output) -> None:
        self._maybe_transition(now, resp.leader_id, resp.leader_epoch, out)
        if resp.error_code != NONE or resp.leader_epoch != self.epoch:
            return
        if self.role is not Role.FOLLOWER or resp.leader_id != self.leader_id:
            return
        if self._snapshot_fetch is not None:
            return  # we stopped fetching entries: a late answer to an earlier Fetch
        if (resp.fetch_offset, resp.last_fetched_epoch) != self._fetch_position():
            return  # late or duplicated answer to an earlier fetch
        self._fetch_sent_at = None
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        self._last_leader_contact = now
        if resp.snapshot_id is not None:
            self._snapshot_wanted = False
            self._snapshot_fetch = _SnapshotFetch(resp.snapshot_id)
            self._next_fetch_at = now
        elif self._snapshot_wanted:
            # We asked from nothing for the leader's snapshot and got entries or a divergence
            # instead (the leader holds its whole log): nothing we can use; ask again later.
            self._next_fetch_at = now + self.config.fetch_idle_backoff_ms
        elif resp.diverging_epoch is not None:
            truncate_to = self._truncation_offset(resp.diverging_epoch)
            base = self._log_base()
            if base.offset > 0 and (resp.diverging_epoch.epoch < base.epoch or truncate_to < base.offset):
                # The logs part below our start: only the leader's snapshot can reconcile them.
                self._snapshot_wanted = True
            else:
                before = self.voter_set
                self._truncate(truncate_to)
                if self.voter_set != before:
                    self._voters_changed(now, out)
            self._next_fetch_at = now
        else:
            if resp.records:
                self.log.append_as_follower(resp.records)
                self.log.flush()  # what we fetch next acknowledges it: it must be durable
                if self._scan_voters(resp.records):
                    self._voters_changed(now, out)
                self._next_fetch_at = now
            else:
                self._next_fetch_at = now + self.config.fetch_idle_backoff_ms
            new_hw = min(resp.high_watermark, self.log.end_offset())
            if new_hw > self.high_watermark:
                self.high_watermark = new_hw
            self._emit_committed(out)
        self._maybe_send_fetch(now, out)

    def _on_fetch_snapshot_response(self, now: int, resp: FetchSnapshotResponse, out: Output) -> None:
        self._maybe_transition(now, resp.leader_id, resp.leader_epoch, out)
        fetch = self._snapshot_fetch
        if fetch is None or self.role is not Role.FOLLOWER:
            return
        if resp.leader_epoch != self.epoch or resp.leader_id != self.leader_id:
            return
        if resp.snapshot_id != fetch.snapshot_id or resp.position != len(fetch.data):
            return  # late, duplicated or for another snapshot
        if resp.error_code != NONE:
            if resp.error_code in (SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE):
                self._abandon_snapshot_fetch(now, out)
            return
        if resp.size < 0 or (fetch.size is not None and resp.size != fetch.size):
            self._abandon_snapshot_fetch(now, out)
            return
        fetch.size = resp.size
        self._fetch_sent_at = None
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        self._last_leader_contact = now
        fetch.data += resp.data
        if len(fetch.data) > fetch.size:
            self._abandon_snapshot_fetch(now, out)
        elif len(fetch.data) == fetch.size:
            self._install_snapshot(now, fetch.snapshot_id, bytes(fetch.data), out)
        else:
            self._next_fetch_at = now if resp.data else now + self.config.fetch_idle_backoff_ms
            self._maybe_send_fetch(now, out)

    def _abandon_snapshot_fetch(self, now: int, out: Output) -> None:
        """Back to Fetch, whose answer names the leader's current snapshot if we still need one."""
        self._snapshot_fetch = None
        self._fetch_sent_at = None
        self._next_fetch_at = now + self.config.fetch_idle_backoff_ms

    def _install_snapshot(self, now: int, snapshot_id: OffsetAndEpoch, data: bytes, out: Output) -> None:
        self._snapshot_fetch = None
        latest = self.log.latest_snapshot()
        if latest is not None and (snapshot_id.offset, snapshot_id.epoch) < (latest.offset, latest.epoch):
            # Older than one we hold: the log cannot go back to it; fetch again.
            self._abandon_snapshot_fetch(now, out)
            return
        self.log.install_snapshot(snapshot_id, data)
        if self.dynamic:
            found = snapshot_voters(data)
            if found is not None:
                self._base_voters = found
                self._base_in_log = True
            self._voter_history = []
        self._committed_upto = snapshot_id.offset
        if self.high_watermark < snapshot_id.offset:
            self.high_watermark = snapshot_id.offset
        out.snapshot_loaded = (snapshot_id, data)
        self._fetch_sent_at = None
        self._next_fetch_at = now
        self._maybe_send_fetch(now, out)

    def _truncation_offset(self, diverging: OffsetAndEpoch) -> int:
        """Where our log stops agreeing with the leader's (Kafka's truncateToEndOffset)."""
        if diverging.epoch == 0:
            return min(diverging.offset, self.log.end_offset())
        local = self.log.end_offset_for_epoch(diverging.epoch)
        if local.epoch == diverging.epoch:
            return min(local.offset, diverging.offset)
        return local.offset

    def _majority_offset(self) -> int:
        """The largest offset durable on a majority of the effective voter set (a leader that is
        removing itself does not count its own log)."""
        voters = self.voters
        ends = [self._replica_end.get(v, 0) for v in voters if v != self.node_id]
        if self.node_id in voters:
            ends.append(self.log.flushed_offset())
        ends.sort(reverse=True)
        return ends[self.majority - 1]

    def _maybe_advance_high_watermark(self, out: Output) -> None:
        candidate = self._majority_offset()
        if candidate > self._epoch_start_offset and candidate > self.high_watermark:
            self.high_watermark = candidate
            self._emit_committed(out)
            if self._pending_change is not None:
                self._complete_voter_change(self._last_now, out)

    def _emit_committed(self, out: Output) -> None:
        upto = min(self.high_watermark, self.log.end_offset())
        if upto > self._committed_upto:
            out.committed.extend(self.log.read(self._committed_upto, upto - self._committed_upto))
            self._committed_upto = upto


__all__ = [
    "OBSERVER_SESSION_TIMEOUT_MS",
    "Event",
    "NotLeaderError",
    "Output",
    "Outbound",
    "Propose",
    "QuorumInfo",
    "RaftConfig",
    "RaftNode",
    "Received",
    "ReplicaInfo",
    "Resign",
    "Role",
    "RoleChange",
    "Tick",
    "leader_change_payload",
]
