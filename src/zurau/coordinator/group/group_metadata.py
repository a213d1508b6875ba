"""Classic consumer groups (JoinGroup/SyncGroup protocol): members and the group state machine.

States and transitions (Kafka's ``ClassicGroupState``)::

    Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
      ▲                 ▲      │                                               │ leader's
      │                 │      └──no member left──▶ Empty                      │ SyncGroup stored
      │                 └──join, leave, member expiry, metadata change─────────┤
      │                                                                        ▼
      └────────────────────── (via PreparingRebalance) ◀─────────────────── Stable
    any ──▶ Dead (the group is being deleted)

Invariants kept by the coordinator:

* ``generation_id`` only grows; it is bumped when a join phase completes.
* ``leader_id`` is a member of the group whenever the group has members, else None.
* ``protocol_name`` is set exactly in CompletingRebalance and Stable (the one selected for the
  generation) and None in Empty.
* ``static_members`` maps each group.instance.id to the member currently holding it.
* A member with ``join_token`` set is waiting for its JoinGroup response; one with ``sync_token``
  set for its SyncGroup response. Only those members lack a session timer (they are alive by
  definition while the coordinator holds their request).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from zurau.protocol.consumer_protocol import subscription_topics
from zurau.protocol.primitives import DecodeError


class GroupState(StrEnum):
    """Classic group states, named as Kafka reports them (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's valid previous states of each state.
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(Exception):
    """A transition Kafka's state machine does not allow (a coordinator bug, never a client error)."""


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_token: Any = None  # the parked JoinGroup, answered when the join phase completes
    join_version: int = 0
    sync_token: Any = None  # the parked SyncGroup, answered once the assignment is stored
    is_new: bool = False

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _meta in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)  # told MEMBER_ID_REQUIRED, not joined
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_sync: set[str] = field(default_factory=set)  # joined this generation, not yet synced
    new_member_added: bool = False  # extends the initial delayed join
    initial_join: bool = False  # the join phase is Kafka's InitialDelayedJoin (group was Empty)
    initial_join_remaining_ms: int = 0

    kind = "classic"

    # ------------------------------------------------------------------ state
    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp = now_ms

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # ------------------------------------------------------------------ members
    def add(self, member: ClassicMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> ClassicMember | None:
        member = self.members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> ClassicMember:
        """Hand the static member's slot (assignment, place in the group) to a new member id."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """Kafka's ``validateMember``: UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID, else nothing."""
        from zurau.protocol.errors import FencedInstanceIdError, UnknownMemberIdError

        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise UnknownMemberIdError(f"static member {instance_id} is not in group {self.group_id}")
            if existing != member_id:
                raise FencedInstanceIdError(
                    f"static member {instance_id} of group {self.group_id} is now {existing}, not {member_id}"
                )
        if member_id not in self.members:
            raise UnknownMemberIdError(f"member {member_id} is not in group {self.group_id}")

    @property
    def size(self) -> int:
        return len(self.members)

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.join_token is not None)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ------------------------------------------------------------------ protocols
    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """The protocol every member supports that most members prefer (ties: the leader's order)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id} has no common protocol")
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        best = max(votes.values())
        for name, _meta in leader.protocols:
            if votes.get(name) == best:
                return name
        return max(votes, key=lambda n: votes[n])

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), or None if unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_consumer_subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics


def parse_consumer_subscription_topics(data: bytes) -> list[str] | None:
    """Topics of a ConsumerProtocolSubscription (``version int16, topics [string], ...``).

    Every version starts with the same two fields; None if the bytes cannot hold them (or the
    version is negative, or a topic name is not UTF-8).
    """
    try:
        return subscription_topics(data)
    except DecodeError:
        return None
