"""Persistent quorum state: the current epoch, the vote cast in it and its leader, behind the
:class:`QuorumStateStore` interface (Kafka keeps it in the ``quorum-state`` file).

Raft's safety needs this to be durable *before* the node acts on it: a vote is written before the
VoteResponse leaves, and a new epoch before the node talks in it. A restarted node reads it back, so
it never votes twice in one epoch and never leads again in an epoch it led before a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ElectionState:
    """``epoch`` with the candidate voted for (``voted_id``) and the leader known (``leader_id``);
    either may be ``None``. ``voters`` is the static voter set (``controller.quorum.voters``)."""

    epoch: int
    voted_id: int | None
    leader_id: int | None
    voters: frozenset[int]


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None:
        """The last state written, or ``None`` on a fresh node."""
        ...

    def write(self, state: ElectionState) -> None:
        """Durably replace the stored state (returns only once it would survive a crash)."""
        ...


class InMemoryQuorumStateStore:
    """A :class:`QuorumStateStore` that survives a simulated crash by living outside the node."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1
