"""KIP-848 consumer groups: members, epochs, target and current assignments, reconciliation.

Vocabulary (Kafka's): the *group epoch* is bumped whenever membership, a subscription or the
subscribed topics' metadata change; the *target assignment* is computed by a server-side assignor
for a group epoch (its *assignment epoch*); each member converges to its target independently,
one heartbeat at a time, and its *member epoch* reaches the assignment epoch once it has revoked
what it must give up.

Member states (Kafka's ``MemberState`` values as stored in record 8):

* STABLE (0): the member owns its target (or all of it that is free).
* UNREVOKED_PARTITIONS (1): the member must first stop consuming ``pending_revocation``; it keeps
  its epoch until a heartbeat reports them gone.
* UNRELEASED_PARTITIONS (2): the member is at the new epoch but waits for partitions that other
  members have not released yet.

Invariants: a partition is owned (assigned or pending revocation) by at most one member;
``owners`` indexes exactly the members' ``assigned | pending_revocation``; a member never gets a
partition another member still owns. All fields here except the heartbeat bookkeeping are
persistent state, changed only by replaying records (see ``GroupCoordinatorShard.replay``).
"""

from __future__ import annotations

import hashlib
import re
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from zurau.coordinator.group.assignors import Assignment
from zurau.coordinator.topics import TopicsView
from zurau.protocol.messages import (
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponseAssignmentTopicPartitions,
)

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(frozen=True)
class ConsumerMember:
    """One member's persistent state (records 5 and 8); replaced, never mutated."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    pending_revocation: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)

    def metadata_value(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscribed_topic_names),
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "server_assignor": self.server_assignor,
            "classic_member_metadata": None,
        }

    def assignment_value(self) -> dict[str, Any]:
        return {
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "state": int(self.state),
            "assigned_partitions": to_topic_partitions(self.assigned),
            "partitions_pending_revocation": to_topic_partitions(self.pending_revocation),
        }

    def with_metadata_value(self, v: Mapping[str, Any]) -> ConsumerMember:
        return replace(
            self,
            instance_id=v["instance_id"],
            rack_id=v["rack_id"],
            client_id=v["client_id"],
            client_host=v["client_host"],
            subscribed_topic_names=tuple(v["subscribed_topic_names"]),
            subscribed_topic_regex=v["subscribed_topic_regex"],
            rebalance_timeout_ms=v["rebalance_timeout_ms"],
            server_assignor=v["server_assignor"],
        )

    def with_assignment_value(self, v: Mapping[str, Any]) -> ConsumerMember:
        try:
            state = MemberState(v["state"])
        except ValueError:
            state = MemberState.UNKNOWN
        return replace(
            self,
            member_epoch=v["member_epoch"],
            previous_member_epoch=v["previous_member_epoch"],
            state=state,
            assigned=from_topic_partitions(v["assigned_partitions"]),
            pending_revocation=from_topic_partitions(v["partitions_pending_revocation"]),
        )

    def same_metadata(self, other: ConsumerMember) -> bool:
        return self.metadata_value() == other.metadata_value()

    def same_assignment(self, other: ConsumerMember) -> bool:
        return self.assignment_value() == other.assignment_value()


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0
    created_ms: int = -1
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    owners: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    state_timestamp: int = -1  # when the group last became empty / non-empty (soft state)

    kind = "consumer"

    # ------------------------------------------------------------------ replay helpers
    def put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._unown(old)
        self.members[member.member_id] = member
        for t, ps in list(member.assigned.items()) + list(member.pending_revocation.items()):
            for p in ps:
                self.owners[(t, p)] = member.member_id

    def _unown(self, member: ConsumerMember) -> None:
        for t, ps in list(member.assigned.items()) + list(member.pending_revocation.items()):
            for p in ps:
                if self.owners.get((t, p)) == member.member_id:
                    del self.owners[(t, p)]

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._unown(old)

    # ------------------------------------------------------------------ queries
    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def state_name(self) -> str:
        """Kafka's ConsumerGroup state names: Empty, Assigning, Reconciling, Stable."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE:
                return "Reconciling"
        return "Stable"

    def subscribed_topic_names(
        self, topics: TopicsView, members: Iterable[ConsumerMember] | None = None
    ) -> set[str]:
        names: set[str] = set()
        for m in self.members.values() if members is None else members:
            names.update(member_topic_names(m, topics))
        return names

    def preferred_assignor(self, default: str, members: Iterable[ConsumerMember]) -> str:
        votes: dict[str, int] = {}
        for m in members:
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return max(sorted(votes), key=lambda n: votes[n])


# ---------------------------------------------------------------------- assignments


def to_topic_partitions(
    a: Mapping[uuid.UUID, Iterable[int]],
) -> list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions]:
    """``a`` as the ``{topic_id, partitions}`` entries of KIP-848's messages and records."""
    return [{"topic_id": t, "partitions": sorted(a[t])} for t in sorted(a, key=str) if a[t]]


def from_topic_partitions(
    items: Iterable[ConsumerGroupHeartbeatRequestTopicPartitions] | None,
) -> dict[uuid.UUID, frozenset[int]]:
    """The ``{topic_id, partitions}`` entries of a heartbeat (or a record) by topic id."""
    out: dict[uuid.UUID, set[int]] = {}
    for it in items or ():
        out.setdefault(it["topic_id"], set()).update(it["partitions"])
    return {t: frozenset(ps) for t, ps in out.items() if ps}


def _overlaps(a: Mapping[uuid.UUID, frozenset[int]], b: Mapping[uuid.UUID, frozenset[int]]) -> bool:
    return any(ps & b.get(t, frozenset()) for t, ps in a.items())


def is_subset(a: Mapping[uuid.UUID, frozenset[int]], b: Mapping[uuid.UUID, frozenset[int]]) -> bool:
    return all(ps <= b.get(t, frozenset()) for t, ps in a.items())


def member_topic_names(m: ConsumerMember, topics: TopicsView) -> set[str]:
    """Existing topics the member subscribes to, by name or by regular expression.

    A regex must match the whole name (as RE2/J ``matches`` does); internal topics never match.
    """
    names = {n for n in m.subscribed_topic_names if topics.get(n) is not None}
    if m.subscribed_topic_regex:
        try:
            rx = re.compile(m.subscribed_topic_regex)
        except re.error:
            return names
        names.update(n for n in topics.names() if not n.startswith("__") and rx.fullmatch(n))
    return names


def member_topic_ids(m: ConsumerMember, topics: TopicsView) -> frozenset[uuid.UUID]:
    out = set()
    for n in member_topic_names(m, topics):
        t = topics.get(n)
        if t is not None:
            out.add(t.topic_id)
    return frozenset(out)


def metadata_hash(names: Iterable[str], topics: TopicsView) -> int:
    """A stable int64 hash of the subscribed topics' names, ids and partition counts (0 if none)."""
    parts = []
    for n in sorted(names):
        t = topics.get(n)
        if t is not None:
            parts.append(f"{n}\x00{t.topic_id}\x00{t.partitions}")
    if not parts:
        return 0
    digest = hashlib.blake2b("\x01".join(parts).encode(), digest_size=8).digest()
    return struct.unpack(">q", digest)[0]


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    subscribed_ids: frozenset[uuid.UUID],
    owner_of: Mapping[tuple[uuid.UUID, int], str],
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
) -> ConsumerMember:
    """Kafka's CurrentAssignmentBuilder: the member's next state toward ``target``.

    ``owned`` is what the member reported owning in this heartbeat (None: not reported).
    ``owner_of`` maps partitions to the member that owns them (assigned or pending revocation).
    """

    def owns_revoked(pending: Mapping[uuid.UUID, frozenset[int]]) -> bool:
        return owned is None or _overlaps(owned, pending)

    def next_assignment(epoch: int) -> ConsumerMember:
        current = member.assigned
        new_assigned: dict[uuid.UUID, frozenset[int]] = {}
        new_pending: dict[uuid.UUID, frozenset[int]] = {}
        to_assign: dict[uuid.UUID, frozenset[int]] = {}
        unreleased = False
        for t in set(target) | set(current):
            tgt = target.get(t, frozenset()) if t in subscribed_ids else frozenset()
            cur = current.get(t, frozenset())
            kept = cur & tgt
            revoke = cur - kept
            want = tgt - kept
            own_pending = member.pending_revocation.get(t, frozenset())
            free = frozenset(
                p for p in want if owner_of.get((t, p)) in (None, member.member_id) or p in own_pending
            )
            if free != want:
                unreleased = True
            if kept:
                new_assigned[t] = kept
            if revoke:
                new_pending[t] = revoke
            if free:
                to_assign[t] = free
        if new_pending and owns_revoked(new_pending):
            return replace(
                member,
                state=MemberState.UNREVOKED_PARTITIONS,
                member_epoch=epoch,
                previous_member_epoch=member.member_epoch,
                assigned=new_assigned,
                pending_revocation=new_pending,
            )
        for t, ps in to_assign.items():
            new_assigned[t] = new_assigned.get(t, frozenset()) | ps
        return replace(
            member,
            state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
            member_epoch=target_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=new_assigned,
            pending_revocation={},
        )

    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return next_assignment(member.member_epoch)
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if owns_revoked(member.pending_revocation):
            return member
        return next_assignment(member.member_epoch)
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return next_assignment(member.member_epoch)
    return next_assignment(target_epoch)  # UNKNOWN: start over
