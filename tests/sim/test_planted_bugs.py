"""The invariant checker catches deliberately broken Raft variants.

Each variant is a subclass of the real ``RaftNode`` defined here, in the tests, overriding one
rule; ``src`` has no switch for any of them. Each test asserts that the simulation finds a
violation within a bounded number of seeds. Two of them break snapshot transfer (KIP-630); the
checker catches those through the state machines (a node's state must be the fold of the committed
history up to its committed offset).
"""

from __future__ import annotations

import pytest

from tests.sim.harness import InvariantViolation, SimParams, run_seed
from zurau.raft.messages import (
    NONE,
    FetchRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    VoteRequest,
)
from zurau.raft.node import Output, RaftNode, Role


class DoubleVote(RaftNode):
    """Grants a second vote in an epoch in which it already voted for another candidate."""

    def _on_vote_request(self, now: int, source: int, req: VoteRequest, out: Output) -> None:
        if (
            not req.pre_vote
            and req.candidate_epoch == self.epoch
            and self.voted_id not in (None, req.candidate_id)
        ):
            self.voted_id = None
            if self.role is Role.CANDIDATE:
                self.role = Role.UNATTACHED
        super()._on_vote_request(now, source, req, out)


class HighWatermarkWithoutMajority(RaftNode):
    """Advances the high watermark to its own flushed offset, without waiting for a majority."""

    def _majority_offset(self) -> int:
        return self.log.flushed_offset()


class VoteForStaleLog(RaftNode):
    """Grants votes without checking that the candidate's log is at least as up to date."""

    def _log_is_up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        return True


class AckBeforeFlush(RaftNode):
    """A follower acknowledges (fetches past) entries it has not made durable."""

    def _fetch_request(self) -> FetchRequest:
        return FetchRequest(self.node_id, self.epoch, self.log.end_offset(), self.log.last_fetched_epoch())

    def _on_fetch_response(self, now, resp, out):  # type: ignore[no-untyped-def]
        flush = self.log.flush
        self.log.flush = lambda: None  # type: ignore[method-assign]
        try:
            super()._on_fetch_response(now, resp, out)
        finally:
            self.log.flush = flush  # type: ignore[method-assign]


class InstallSnapshotOneTooFar(RaftNode):
    """Snapshots (KIP-630): a follower records the snapshot it installs as ending one entry later
    than it does, so it counts an entry committed that its state machine never saw and fetches on
    from past it."""

    def _install_snapshot(self, now: int, snapshot_id: OffsetAndEpoch, data: bytes, out: Output) -> None:
        wrong = OffsetAndEpoch(snapshot_id.offset + 1, snapshot_id.epoch)
        super()._install_snapshot(now, wrong, data, out)


class AcceptStaleSnapshotChunks(RaftNode):
    """Snapshots (KIP-630): a follower appends every chunk of the snapshot it is fetching, whatever
    position the chunk starts at -- a duplicated, resent or late chunk lands twice."""

    def _on_fetch_snapshot_response(self, now: int, resp: FetchSnapshotResponse, out: Output) -> None:
        fetch = self._snapshot_fetch
        if fetch is not None and resp.error_code == NONE and resp.snapshot_id == fetch.snapshot_id:
            resp = FetchSnapshotResponse(
                resp.error_code,
                resp.leader_id,
                resp.leader_epoch,
                resp.snapshot_id,
                resp.size,
                len(fetch.data),  # pretend it continues what we have
                resp.data,
            )
        super()._on_fetch_snapshot_response(now, resp, out)


def _first_violation(node_cls: type[RaftNode], params: SimParams, max_seeds: int) -> tuple[int, str]:
    for seed in range(max_seeds):
        try:
            run_seed(seed, params, node_cls)
        except InvariantViolation as exc:
            return seed, str(exc)
    raise AssertionError(f"{node_cls.__name__}: no violation found in {max_seeds} seeds")


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize(
    ("node_cls", "max_seeds", "expected"),
    [
        (DoubleVote, 200, "two leaders in epoch"),
        (HighWatermarkWithoutMajority, 20, "lacks committed"),
        (VoteForStaleLog, 20, "lacks committed"),
        (AckBeforeFlush, 100, "lacks committed"),
        (InstallSnapshotOneTooFar, 20, "not the committed state at its offset"),
        (AcceptStaleSnapshotChunks, 200, "is not a state machine snapshot"),
    ],
    ids=[
        "double_vote",
        "hw_without_majority",
        "vote_for_stale_log",
        "ack_before_flush",
        "install_snapshot_one_too_far",
        "accept_stale_snapshot_chunks",
    ],
)
def test_checker_finds_planted_bug(
    node_cls: type[RaftNode], max_seeds: int, expected: str, voters: int
) -> None:
    seed, message = _first_violation(node_cls, SimParams(voters=voters), max_seeds)
    assert f"seed {seed}" in message
    assert expected in message, message


class HighWatermarkWithoutCurrentEpoch(RaftNode):
    """Commits on a majority alone, before any entry of the leader's own epoch is replicated."""

    def _maybe_advance_high_watermark(self, out: Output) -> None:
        candidate = self._majority_offset()
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            self._emit_committed(out)


def _old_epoch_high_watermark(node_cls: type[RaftNode]) -> int:
    """A leader of epoch 2 whose voter 2 holds only the epoch-1 entries (offsets 0..2): the high
    watermark it reaches before its leader-change entry (offset 3) is replicated."""
    import random

    from zurau.raft import InMemoryQuorumStateStore, InMemoryRaftLog, Received, Tick
    from zurau.raft.messages import VoteResponse

    log = InMemoryRaftLog()
    log.append_as_leader(1, [b"a", b"b", b"c"])
    log.flush()
    node = node_cls(1, (1, 2, 3), log, InMemoryQuorumStateStore(), random.Random(0), 0)
    node.step(0, Received(2, VoteRequest(1, 2, 1, 3)))
    node.step(5000, Tick())
    node.step(5000, Received(2, VoteResponse(0, -1, node.epoch, True, True)))
    node.step(5000, Received(2, VoteResponse(0, -1, node.epoch, True, False)))
    assert node.role is Role.LEADER and node.epoch == 2
    node.step(6000, Tick())
    node.step(6000, Received(2, FetchRequest(2, 2, 3, 1)))
    return node.high_watermark


def test_current_epoch_rule_bug_is_caught_by_the_directed_scenario() -> None:
    # The random simulation did not hit Raft's "figure 8" interleaving for this variant in 4000
    # seeds per configuration (the leader-change entry makes the window tiny), so a directed
    # scenario (the same as tests/unit/test_raft_node.py's high-watermark test) stands for it.
    assert _old_epoch_high_watermark(RaftNode) == 0
    assert _old_epoch_high_watermark(HighWatermarkWithoutCurrentEpoch) == 3


class ConcurrentVoterChanges(RaftNode):
    """KIP-853: starts a voter change while the previous one is still uncommitted."""

    def _voter_change_refused(self) -> tuple[int, str] | None:
        refused = super()._voter_change_refused()
        if refused is not None and "not committed yet" in refused[1]:
            self._pending_change = None
            return None
        return refused


@pytest.mark.parametrize(
    ("node_cls", "max_seeds", "expected"),
    [
        (ConcurrentVoterChanges, 100, "uncommitted"),
    ],
    ids=["concurrent_voter_changes"],
)
def test_checker_finds_planted_voter_change_bug(node_cls: type[RaftNode], max_seeds: int, expected: str) -> None:
    params = SimParams(voters=3, observers=2, dynamic=True)
    seed, message = _first_violation(node_cls, params, max_seeds)
    assert f"seed {seed}" in message
    assert expected in message, message
