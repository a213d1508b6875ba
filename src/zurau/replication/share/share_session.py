"""Share sessions (KIP-932): what a broker remembers between one share consumer's ShareFetch and
ShareAcknowledge requests (Kafka's ``ShareSessionCache``), as pure logic (no I/O, clock passed in).

A share session is keyed by ``(group id, member id)`` and holds the share-partitions the member
fetches from this broker, in the order they were added, and the epoch its next request must
carry. The session epoch of a request says what it does:

* ``0`` (:data:`INITIAL_EPOCH`) opens a new session (an existing one of the same member is
  replaced) with the request's partitions; acknowledgements are not allowed (INVALID_REQUEST).
* ``n > 0`` continues the session: it must exist (else SHARE_SESSION_NOT_FOUND) and expect
  ``n`` (else INVALID_SHARE_SESSION_EPOCH). A ShareFetch adds its partitions and removes its
  forgotten ones.
* ``-1`` (:data:`FINAL_EPOCH`) closes the session after acknowledging (the share-partition
  manager then releases what the member still holds): it must exist; it may fetch nothing.

Every request that passes these checks moves the session to the next epoch (``n + 1``, after
2^31-1 back to 1), exactly as the client counts, whatever the per-partition outcome.

Invariants: at most ``max_sessions`` sessions; when full, a new session evicts the session used
least recently if that one was idle for at least ``evict_idle_ms``, else the request gets
SHARE_SESSION_LIMIT_REACHED. A member has at most one session.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from zurau.protocol.errors import (
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "ShareSession",
    "ShareSessionCache",
    "TopicIdPartition",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

TopicIdPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (wraps to 1, never 0 or -1)."""
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass
class ShareSession:
    """One member's share session on this broker."""

    group_id: str
    member_id: str
    epoch: int  # the epoch the member's next request must carry
    last_used_ms: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)  # insertion-ordered set

    def update(self, added: Iterable[TopicIdPartition], forgotten: Iterable[TopicIdPartition]) -> None:
        """Add the request's partitions, then remove its forgotten ones (a partition in both, as
        a client sends for a revoked partition it still acknowledges, ends up removed)."""
        for tp in added:
            self.partitions.setdefault(tp, None)
        for tp in forgotten:
            self.partitions.pop(tp, None)


class ShareSessionCache:
    """The share sessions of one broker (see the module docstring)."""

    def __init__(self, max_sessions: int = 2000, evict_idle_ms: int = 120_000) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        self.max_sessions = max_sessions
        self.evict_idle_ms = evict_idle_ms
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def sessions(self) -> list[ShareSession]:
        return list(self._sessions.values())

    def open(self, group_id: str, member_id: str, now_ms: int) -> ShareSession:
        """A new session at epoch 0 (the next request carries 1), replacing the member's old one
        (returned sessions are not affected). Raises ShareSessionLimitReachedError."""
        key = (group_id, member_id)
        self._sessions.pop(key, None)
        if len(self._sessions) >= self.max_sessions:
            oldest = min(self._sessions.values(), key=lambda s: s.last_used_ms)
            if now_ms - oldest.last_used_ms < self.evict_idle_ms:
                raise ShareSessionLimitReachedError(
                    f"The share session cache is full ({self.max_sessions} sessions)."
                )
            del self._sessions[(oldest.group_id, oldest.member_id)]
        session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), now_ms)
        self._sessions[key] = session
        return session

    def continue_session(self, group_id: str, member_id: str, epoch: int, now_ms: int) -> ShareSession:
        """The session a request with ``epoch`` (> 0 or -1) continues, moved to its next epoch
        (a final request's session stays in the cache until :meth:`remove`). Raises
        ShareSessionNotFoundError or InvalidShareSessionEpochError."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionNotFoundError(f"No share session for member {member_id} of group {group_id}.")
        if epoch != FINAL_EPOCH:
            if epoch != session.epoch:
                raise InvalidShareSessionEpochError(
                    f"The share session epoch is {epoch}, the session expects {session.epoch}."
                )
            session.epoch = next_epoch(epoch)
        session.last_used_ms = now_ms
        return session

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def remove_partitions(self, tps: Iterable[TopicIdPartition]) -> None:
        """Forget partitions in every session (their topic was deleted)."""
        gone = set(tps)
        for s in self._sessions.values():
            for tp in gone:
                s.partitions.pop(tp, None)
