"""The rules of the Raft core, one node at a time: vote granting, pre-vote (KIP-996), the
leader-change entry, divergence truncation (KIP-595 reconciliation) and the high-watermark rules."""

from __future__ import annotations

import random

import pytest

from zurau.raft import (
    ElectionState,
    Entry,
    InMemoryQuorumStateStore,
    InMemoryRaftLog,
    LeaderGone,
    NotLeaderError,
    OffsetAndEpoch,
    Output,
    Propose,
    RaftConfig,
    RaftNode,
    Received,
    Resign,
    Role,
    Tick,
)
from zurau.raft.batches import decode_leader_change
from zurau.raft.messages import (
    FENCED_LEADER_EPOCH,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)

VOTERS = (1, 2, 3)
CONFIG = RaftConfig()


def make(
    node_id: int = 1,
    *,
    epochs: list[int] | None = None,
    state: ElectionState | None = None,
    voters: tuple[int, ...] = VOTERS,
) -> RaftNode:
    log = InMemoryRaftLog()
    for epoch in epochs or []:
        log.append_as_leader(epoch, [f"e{epoch}".encode()])
    log.flush()
    store = InMemoryQuorumStateStore()
    if state is not None:
        store.write(state)
    return RaftNode(node_id, voters, log, store, random.Random(0), 0, CONFIG)


def vote(
    node: RaftNode,
    candidate: int,
    epoch: int,
    last_epoch: int,
    last_offset: int,
    *,
    pre: bool = False,
    now: int = 10,
) -> VoteResponse:
    out = node.step(now, Received(candidate, VoteRequest(epoch, candidate, last_epoch, last_offset, pre)))
    (resp,) = [o.message for o in out.sends if isinstance(o.message, VoteResponse)]
    return resp


def messages(out: Output, kind: type) -> list:  # type: ignore[type-arg]
    return [(o.destination, o.message) for o in out.sends if isinstance(o.message, kind)]


def elect(node: RaftNode, now: int = 5000) -> Output:
    """Drive ``node`` from Unattached to Leader with votes from node 2."""
    out = node.step(now, Tick())
    assert node.role is Role.PROSPECTIVE
    pre = messages(out, VoteRequest)[0][1]
    assert pre.pre_vote
    node.step(now, Received(2, VoteResponse(0, -1, node.epoch, True, True)))
    assert node.role is Role.CANDIDATE
    return node.step(now, Received(2, VoteResponse(0, -1, node.epoch, True, False)))


# ------------------------------------------------------------------ voting


def test_one_vote_per_epoch_persisted_before_the_response() -> None:
    node = make()
    assert vote(node, 2, 1, 0, 0).vote_granted
    assert node.store.read() == ElectionState(1, 2, None, frozenset(VOTERS))
    assert not vote(node, 3, 1, 0, 0).vote_granted  # second candidate, same epoch
    assert vote(node, 2, 1, 0, 0).vote_granted  # the same candidate again is fine (retry)


def test_the_vote_survives_a_restart() -> None:
    node = make()
    vote(node, 2, 4, 0, 0)
    restarted = RaftNode(1, VOTERS, node.log, node.store, random.Random(1), 0, CONFIG)
    assert (restarted.epoch, restarted.voted_id) == (4, 2)
    assert not vote(restarted, 3, 4, 0, 0).vote_granted


def test_vote_requires_an_up_to_date_log_epoch_first() -> None:
    node = make(epochs=[1, 1, 2])  # ends at (epoch 2, offset 3)
    assert not vote(node, 2, 3, 1, 10).vote_granted  # longer but older last epoch
    assert not vote(node, 3, 4, 2, 2).vote_granted  # same last epoch, shorter
    assert vote(node, 2, 5, 2, 3).vote_granted  # equal
    assert node.epoch == 5


def test_higher_epoch_vote_moves_the_voter_to_that_epoch_and_stale_epochs_are_fenced() -> None:
    node = make(state=ElectionState(3, None, None, frozenset(VOTERS)))
    resp = vote(node, 2, 2, 0, 0)
    assert not resp.vote_granted and resp.error_code == FENCED_LEADER_EPOCH and resp.leader_epoch == 3
    resp = vote(node, 2, 7, 0, 0)
    assert resp.vote_granted and node.epoch == 7 and node.role is Role.UNATTACHED


def test_a_follower_rejects_votes_in_its_leaders_epoch() -> None:
    node = make()
    node.step(10, Received(2, BeginQuorumEpochRequest(2, 1)))
    assert node.role is Role.FOLLOWER and node.leader_id == 2
    assert not vote(node, 3, 1, 0, 0).vote_granted


def test_observers_and_unknown_candidates_get_no_vote() -> None:
    observer = make(100)
    assert not vote(observer, 2, 1, 0, 0).vote_granted
    voter = make()
    assert not vote(voter, 9, 1, 0, 0).vote_granted


# ------------------------------------------------------------------ pre-vote (KIP-996)


def test_pre_vote_changes_neither_epoch_nor_vote() -> None:
    node = make()
    writes = node.store.writes
    resp = vote(node, 2, 1, 0, 0, pre=True)
    assert resp.vote_granted and resp.pre_vote
    assert node.epoch == 0 and node.voted_id is None and node.store.writes == writes
    assert vote(node, 3, 1, 0, 0, pre=True).vote_granted  # many pre-votes in one epoch


def test_pre_vote_rejected_while_the_leader_is_heard_from() -> None:
    node = make()
    node.step(10, Received(2, BeginQuorumEpochRequest(2, 1)))
    assert not vote(node, 3, 2, 0, 0, pre=True, now=20).vote_granted
    # No word from the leader within the fetch timeout: the pre-vote is granted (still following).
    assert vote(node, 3, 2, 0, 0, pre=True, now=10 + CONFIG.fetch_timeout_ms).vote_granted


def test_a_leader_whose_process_is_gone_is_not_waited_for() -> None:
    """LeaderGone (the shell saw the leader's port refuse connections): a voter following that
    leader goes Prospective at once, and grants pre-votes as if the fetch timeout had passed."""
    node = make()
    node.step(10, Received(2, BeginQuorumEpochRequest(2, 2)))
    assert node.role is Role.FOLLOWER and node.leader_id == 2
    node.step(20, LeaderGone(3))  # not its leader: nothing changes
    assert node.role is Role.FOLLOWER
    assert not vote(node, 3, 2, 0, 0, pre=True, now=30).vote_granted
    out = node.step(40, LeaderGone(2))
    assert node.role is Role.PROSPECTIVE and node.epoch == 2  # a pre-vote: no new epoch yet
    assert {dest for dest, m in messages(out, VoteRequest) if m.pre_vote} == {2, 3}
    assert vote(node, 3, 3, 0, 0, pre=True, now=50).vote_granted  # (a pre-vote names the next epoch)


def test_leader_gone_is_ignored_by_the_leader_and_by_unattached_nodes() -> None:
    node = make()
    node.step(10, LeaderGone(2))
    assert node.role is Role.UNATTACHED
    elect(node)
    assert node.role is Role.LEADER
    node.step(6000, LeaderGone(1))
    assert node.role is Role.LEADER


def test_pre_vote_still_checks_the_log() -> None:
    node = make(epochs=[1, 2])
    assert not vote(node, 2, 3, 1, 5, pre=True).vote_granted


def test_a_leader_rejects_pre_votes() -> None:
    node = make()
    elect(node)
    assert node.role is Role.LEADER
    assert not vote(node, 2, node.epoch + 1, 9, 9, pre=True).vote_granted


def test_election_goes_through_prospective_then_candidate() -> None:
    node = make()
    out = node.step(1, Tick())
    assert node.role is Role.UNATTACHED and not out.sends  # timeout not reached yet
    out = node.step(5000, Tick())
    assert node.role is Role.PROSPECTIVE and node.epoch == 0
    assert {d for d, _ in messages(out, VoteRequest)} == {2, 3}
    assert all(m.pre_vote and m.candidate_epoch == 1 for _, m in messages(out, VoteRequest))
    out = node.step(5001, Received(3, VoteResponse(0, -1, 0, True, True)))
    assert node.role is Role.CANDIDATE and node.epoch == 1 and node.voted_id == 1
    assert node.store.read() == ElectionState(1, 1, None, frozenset(VOTERS))
    assert all(not m.pre_vote and m.candidate_epoch == 1 for _, m in messages(out, VoteRequest))


def test_prospective_that_loses_returns_to_unattached_without_an_epoch_bump() -> None:
    node = make()
    node.step(5000, Tick())
    node.step(5001, Received(2, VoteResponse(0, -1, 0, False, True)))
    node.step(5002, Received(3, VoteResponse(0, -1, 0, False, True)))
    assert node.role is Role.UNATTACHED and node.epoch == 0


# ------------------------------------------------------------------ leader


def test_new_leader_writes_a_leader_change_entry_and_begins_its_epoch() -> None:
    node = make(epochs=[1, 1])
    node.step(0, Received(3, VoteRequest(1, 3, 1, 2)))  # moves to epoch 1
    out = elect(node)
    assert node.role is Role.LEADER and node.epoch == 2
    entry = node.log.entry(2)
    assert entry.control and entry.epoch == 2 and decode_leader_change(entry.payload)[0] == 1
    assert {d for d, _ in messages(out, BeginQuorumEpochRequest)} == {2, 3}
    with pytest.raises(NotLeaderError):
        make(2).step(0, Propose((b"x",)))


def test_a_single_voter_elects_itself_and_commits_alone() -> None:
    node = make(voters=(1,))
    node.step(0, Tick())
    assert node.role is Role.LEADER
    node.step(1, Propose((b"a",)))
    out = node.step(100, Tick())  # flush after the linger
    assert [e.payload for e in out.committed if not e.control] == [b"a"]


def test_restart_after_leading_comes_back_resigned() -> None:
    node = make(state=ElectionState(3, 1, 1, frozenset(VOTERS)))
    assert node.role is Role.RESIGNED and node.epoch == 3
    assert not vote(node, 2, 3, 9, 9).vote_granted


# ------------------------------------------------------------------ replication and divergence


def fetch(leader: RaftNode, replica: int, offset: int, last_epoch: int, now: int = 6000) -> FetchResponse:
    out = leader.step(now, Received(replica, FetchRequest(replica, leader.epoch, offset, last_epoch)))
    (resp,) = [m for _, m in messages(out, FetchResponse)]
    return resp


def test_leader_answers_a_diverging_fetch_with_the_epoch_end_offset() -> None:
    leader = make(epochs=[1, 1, 3])
    leader.step(0, Received(2, VoteRequest(3, 2, 3, 3)))
    elect(leader)  # epoch 4: log (1,1,3,4)
    # Follower with entries of epoch 2 at offsets 2..4: not on the leader's log.
    resp = fetch(leader, 2, 5, 2)
    assert resp.diverging_epoch == OffsetAndEpoch(2, 1) and not resp.records
    # A follower on the leader's log gets records from its fetch offset.
    resp = fetch(leader, 3, 2, 1)
    assert resp.diverging_epoch is None and [e.offset for e in resp.records] == [2, 3]
    # Fetch offset past the end of the same epoch diverges too.
    assert fetch(leader, 3, 9, 4).diverging_epoch == OffsetAndEpoch(4, 4)


def test_follower_truncates_to_the_diverging_point_and_fetches_again() -> None:
    follower = make(2, epochs=[1, 1, 2, 2, 2])
    follower.step(0, Received(1, BeginQuorumEpochRequest(1, 3)))
    assert follower.role is Role.FOLLOWER
    resp = FetchResponse(0, 1, 3, 0, 5, 2, diverging_epoch=OffsetAndEpoch(2, 1))
    out = follower.step(10, Received(1, resp))
    assert follower.log.end_offset() == 2
    ((_, req),) = messages(out, FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (2, 1)
    records = (Entry(2, 3, b"new"),)
    out = follower.step(20, Received(1, FetchResponse(0, 1, 3, 3, 2, 1, records)))
    assert follower.log.end_offset() == 3 and follower.log.flushed_offset() == 3
    assert follower.high_watermark == 3  # learnt from the leader
    assert [e.offset for e in out.committed] == [0, 1, 2]


def test_follower_clamps_the_high_watermark_to_its_log_and_ignores_stale_responses() -> None:
    follower = make(2)
    follower.step(0, Received(1, BeginQuorumEpochRequest(1, 1)))
    follower.step(10, Received(1, FetchResponse(0, 1, 1, 5, 0, 0, (Entry(0, 1, b"a"),))))
    assert follower.high_watermark == 1
    # A duplicate of the same response no longer matches the fetch position: ignored.
    follower.step(11, Received(1, FetchResponse(0, 1, 1, 5, 0, 0, (Entry(0, 1, b"a"),))))
    assert follower.log.end_offset() == 1


def test_high_watermark_needs_a_majority_and_an_entry_of_the_current_epoch() -> None:
    leader = make(epochs=[1, 1, 1])
    leader.step(0, Received(2, VoteRequest(1, 2, 1, 3)))
    elect(leader)  # epoch 2; leader-change entry at offset 3
    leader.step(6000, Tick())  # flush after the linger
    assert leader.log.flushed_offset() == 4
    # Voter 2 has the old-epoch entries (0..2) only: a majority holds offset 3, but nothing of
    # epoch 2 yet -- the high watermark must not move.
    fetch(leader, 2, 3, 1)
    assert leader.high_watermark == 0
    # Voter 2 now has the leader-change entry: offsets 0..3 are committed.
    fetch(leader, 2, 4, 2)
    assert leader.high_watermark == 4
    # Without a second voter, nothing more commits.
    leader.step(6001, Propose((b"x",)))
    leader.step(7000, Tick())
    assert leader.high_watermark == 4
    # The high watermark never goes back, even if a voter's fetch offset does.
    fetch(leader, 3, 5, 2)
    assert leader.high_watermark == 5
    fetch(leader, 2, 0, 0)
    fetch(leader, 3, 0, 0)
    assert leader.high_watermark == 5


def test_the_leader_counts_only_its_flushed_entries() -> None:
    leader = make()
    elect(leader)
    leader.step(5001, Propose((b"a",)))  # offsets 0 (leader change) and 1, none flushed yet
    fetch(leader, 2, 2, 1, now=5002)
    assert leader.high_watermark == 0
    leader.step(5000 + CONFIG.append_linger_ms, Tick())
    assert leader.high_watermark == 2


def test_graceful_resignation_sends_end_quorum_epoch_with_successors() -> None:
    leader = make()
    elect(leader)
    leader.step(5001, Tick())
    fetch(leader, 3, 1, leader.epoch)
    out = leader.step(6001, Resign())
    assert leader.role is Role.RESIGNED
    ends = messages(out, EndQuorumEpochRequest)
    assert {d for d, _ in ends} == {2, 3}
    assert ends[0][1].preferred_successors == (3, 2)


def test_end_quorum_epoch_makes_the_preferred_successor_stand_first() -> None:
    follower = make(3)
    follower.step(0, Received(1, BeginQuorumEpochRequest(1, 1)))
    follower.step(10, Received(1, EndQuorumEpochRequest(1, 1, (3, 2))))
    assert follower.role is Role.UNATTACHED
    follower.step(10, Tick())
    assert follower.role is Role.PROSPECTIVE
    # It now grants pre-votes: it no longer hears from a leader.
    other = make(2)
    other.step(0, Received(1, BeginQuorumEpochRequest(1, 1)))
    other.step(10, Received(1, EndQuorumEpochRequest(1, 1, (3, 2))))
    assert vote(other, 3, 2, 0, 0, pre=True, now=11).vote_granted


def test_the_leader_steps_down_on_a_higher_epoch() -> None:
    leader = make()
    elect(leader)
    epoch = leader.epoch
    leader.step(6000, Received(2, FetchResponse(0, 3, epoch + 1, 0, 0, 0)))
    assert leader.role is Role.FOLLOWER and leader.leader_id == 3 and leader.epoch == epoch + 1
