"""KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe) as a state machine.

:class:`ShareGroupManager` is the share-group half of Kafka's ``GroupMetadataManager``, a manager
of the group coordinator shard like :class:`~.consumer_groups.ConsumerGroupManager`: it sees the
shard's groups (one namespace with classic and consumer groups), timers and writes through the
:class:`~.shard_context.GroupShardContext`, returns :class:`~.results.Effects`, and changes its
persistent state only by replaying the records it wrote (:meth:`ShareGroupManager.replay_record`),
so replaying ``__consumer_offsets`` rebuilds exactly the live state. Formats:
:mod:`.share_group_records`; assignor: :mod:`.share_assignor`.

A heartbeat (Kafka's rules): members join with member epoch 0 and a member id of their own
(ShareGroupHeartbeat v1), heartbeat with their epoch, leave with -1. The group epoch is bumped
when membership, a subscription or the subscribed topics' metadata hash change, or when newly
initialized share partitions are not yet in the target assignment; the target assignment is then
recomputed by the ``simple`` assignor over the *initialized* partitions of the subscribed topics.
There is no revocation protocol: a member whose epoch is behind the assignment epoch takes its
target at once (epoch = assignment epoch, previous epoch = its old one). Members are fenced after
``group.share.session.timeout.ms`` without a heartbeat.

Share-partition state initialization (Kafka 4.1+): a heartbeat that finds subscribed partitions
neither initialized nor being initialized (or initializing for longer than
``group.share.initialize.retry.interval.ms``) records them as *initializing* and returns them in
:attr:`ShareGroupHeartbeatResult.to_initialize`; the caller asks the share coordinator to
initialize them (InitializeShareGroupState, state epoch = ``initialize_epoch``, start offset -1)
and reports the outcome with :meth:`ShareGroupManager.share_group_initialized` or
:meth:`ShareGroupManager.share_group_uninitialized`. Only initialized partitions are assigned.

Invariants: every member's ``member_epoch <= group_epoch`` and ``assignment_epoch <=
group_epoch``; a member's ``assigned`` is its target as of ``member_epoch``; a partition is in at
most one of ``initializing`` and ``initialized``; a group with members has a group metadata
record. Persistent fields compare equal after a replay (soft fields: ``compare=False``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from zurau.coordinator.group import share_group_records as SR
from zurau.coordinator.group.assignors import Assignment, MemberSubscription
from zurau.coordinator.group.consumer_group import from_topic_partitions, metadata_hash, to_topic_partitions
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import Effects, member_key
from zurau.coordinator.group.share_assignor import NAME as ASSIGNOR_NAME
from zurau.coordinator.group.share_assignor import simple_assign
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.protocol.messages import ConsumerGroupHeartbeatResponseAssignmentTopicPartitions

if TYPE_CHECKING:  # shard_context imports ShareGroup (its Group union)
    from zurau.coordinator.group.shard_context import GroupShardContext

log = logging.getLogger("zurau.coordinator")

LEAVE_GROUP_MEMBER_EPOCH = -1
MEMBER_STATE_STABLE = 0  # Kafka's MemberState.STABLE: a share member always is
SESSION_TIMER = "sg-session"


@dataclass(frozen=True)
class ShareGroupConfig:
    """The share-group settings (Kafka's names and defaults)."""

    session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.share.heartbeat.interval.ms
    max_size: int = 200  # group.share.max.size
    initialize_retry_interval_ms: int = 30_000  # group.share.initialize.retry.interval.ms

    @classmethod
    def from_values(cls, v: Mapping[str, Any]) -> ShareGroupConfig:
        """From a broker's typed values by config name."""
        return cls(
            session_timeout_ms=v["group.share.session.timeout.ms"],
            heartbeat_interval_ms=v["group.share.heartbeat.interval.ms"],
            max_size=v["group.share.max.size"],
            initialize_retry_interval_ms=v["group.share.initialize.retry.interval.ms"],
        )


@dataclass(frozen=True)
class ShareMember:
    """One member's persistent state (records 10 and 14); replaced, never mutated."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = MEMBER_STATE_STABLE
    assigned: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)

    def metadata_value(self) -> dict[str, Any]:
        return {
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscribed_topic_names),
        }

    def assignment_value(self) -> dict[str, Any]:
        return {
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "state": self.state,
            "assigned_partitions": to_topic_partitions(self.assigned),
        }

    def with_metadata_value(self, v: Mapping[str, Any]) -> ShareMember:
        return replace(
            self,
            rack_id=v["rack_id"],
            client_id=v["client_id"],
            client_host=v["client_host"],
            subscribed_topic_names=tuple(v["subscribed_topic_names"]),
        )

    def with_assignment_value(self, v: Mapping[str, Any]) -> ShareMember:
        return replace(
            self,
            member_epoch=v["member_epoch"],
            previous_member_epoch=v["previous_member_epoch"],
            state=v["state"],
            assigned=from_topic_partitions(v["assigned_partitions"]),
        )


@dataclass(frozen=True)
class TopicInit:
    """A topic's share partitions in the state-partition metadata (record 15)."""

    name: str
    partitions: frozenset[int]


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    initializing: dict[uuid.UUID, TopicInit] = field(default_factory=dict)
    initialized: dict[uuid.UUID, TopicInit] = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)
    # Soft state: when each initializing topic was last asked for (-1: unknown, e.g. replayed).
    initializing_since: dict[uuid.UUID, int] = field(default_factory=dict, compare=False)

    kind = "share"

    def state_name(self) -> str:
        """Kafka's ShareGroupState names: Empty or Stable (Dead once deleted: no longer here)."""
        return "Stable" if self.members else "Empty"

    def subscribed_topic_names(self, members: Iterable[ShareMember] | None = None) -> set[str]:
        names: set[str] = set()
        for m in self.members.values() if members is None else members:
            names.update(m.subscribed_topic_names)
        return names

    def state_partition_value(
        self, initializing: Mapping[uuid.UUID, TopicInit], initialized: Mapping[uuid.UUID, TopicInit]
    ) -> dict[str, Any]:
        def infos(d: Mapping[uuid.UUID, TopicInit]) -> list[dict[str, Any]]:
            return [
                {"topic_id": t, "topic_name": d[t].name, "partitions": sorted(d[t].partitions)}
                for t in sorted(d, key=str)
                if d[t].partitions
            ]

        return {
            "initializing_topics": infos(initializing),
            "initialized_topics": infos(initialized),
            "deleting_topics": [
                {"topic_id": t, "topic_name": self.deleting[t]} for t in sorted(self.deleting, key=str)
            ],
        }


@dataclass
class ShareGroupHeartbeatResult:
    """A ShareGroupHeartbeat's answer; ``assignment`` None means unchanged (not sent).

    ``to_initialize`` (not on the wire): share partitions the caller must have the share
    coordinator initialize (InitializeShareGroupState, state epoch ``initialize_epoch``), then
    report with ``share_group_initialized`` / ``share_group_uninitialized``.
    """

    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    # {topic_id, partitions} entries, the same shape as ShareGroupHeartbeat's TopicPartitions
    assignment: list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions] | None = None
    to_initialize: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    initialize_epoch: int = -1


def _merge(a: Mapping[uuid.UUID, TopicInit], b: Mapping[uuid.UUID, TopicInit]) -> dict[uuid.UUID, TopicInit]:
    out = dict(a)
    for t, ti in b.items():
        old = out.get(t)
        out[t] = TopicInit(ti.name, ti.partitions | (old.partitions if old else frozenset()))
    return out


def _minus(
    a: Mapping[uuid.UUID, TopicInit], b: Mapping[uuid.UUID, Iterable[int]]
) -> dict[uuid.UUID, TopicInit]:
    out = {}
    for t, ti in a.items():
        left = ti.partitions - frozenset(b.get(t, ()))
        if left:
            out[t] = TopicInit(ti.name, left)
    return out


def _state_partition_from_value(
    v: Mapping[str, Any],
) -> tuple[dict[uuid.UUID, TopicInit], dict[uuid.UUID, TopicInit]]:
    def parse(items: Iterable[Mapping[str, Any]]) -> dict[uuid.UUID, TopicInit]:
        return {it["topic_id"]: TopicInit(it["topic_name"], frozenset(it["partitions"])) for it in items}

    return parse(v["initializing_topics"]), parse(v["initialized_topics"])


class ShareGroupManager:
    def __init__(self, ctx: GroupShardContext, config: ShareGroupConfig) -> None:
        self.ctx = ctx
        self.config = config
        self.topics = ctx.topics
        # One namespace with the classic and consumer groups (Kafka's GroupMetadataManager).
        self.groups: MutableMapping[str, Any] = ctx.groups
        self.timers = ctx.timers

    # ================================================================== ShareGroupHeartbeat
    def share_group_heartbeat(
        self,
        token: Any,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None = None,
        subscribed_topic_names: list[str] | None = None,
        client_id: str = "",
        client_host: str = "",
        now_ms: int,
    ) -> Effects:
        fx = Effects()
        try:
            self._validate(group_id, member_id, member_epoch, rack_id, subscribed_topic_names)
            if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                self._leave(token, group_id, member_id, fx)
            else:
                self._heartbeat(
                    token,
                    group_id,
                    member_id,
                    member_epoch,
                    rack_id,
                    subscribed_topic_names,
                    client_id,
                    client_host,
                    now_ms,
                    fx,
                )
        except E.KafkaError as e:
            fx.reply(token, ShareGroupHeartbeatResult(e.code, e.message, member_id or None, member_epoch))
        return fx

    @staticmethod
    def _validate(
        group_id: str, member_id: str, member_epoch: int, rack_id: str | None, names: list[str] | None
    ) -> None:
        """Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid`` (INVALID_REQUEST)."""
        bad = E.InvalidRequestError
        if not member_id:
            raise bad("MemberId can't be empty.")
        if not group_id:
            raise bad("GroupId can't be empty.")
        if rack_id == "":
            raise bad("RackId can't be empty.")
        if member_epoch == 0:
            if not names:
                raise bad("SubscribedTopicNames must be set in first request.")
        elif member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise bad("MemberEpoch is invalid.")

    def _share_group(self, gid: str, create: bool) -> ShareGroup:
        group = self.groups.get(gid)
        if group is None:
            if not create:
                raise E.GroupIdNotFoundError(f"Share group {gid} not found.")
            return ShareGroup(gid)  # materialized by the replay of its records
        if not isinstance(group, ShareGroup):
            raise E.GroupIdNotFoundError(f"Group {gid} is not a share group.")
        return group

    def _heartbeat(
        self,
        token: Any,
        gid: str,
        mid: str,
        member_epoch: int,
        rack_id: str | None,
        names: list[str] | None,
        client_id: str,
        client_host: str,
        now_ms: int,
        fx: Effects,
    ) -> None:
        """Join or heartbeat; records in Kafka's order: member metadata, group epoch, target
        assignment (members, then its epoch), current assignment, state-partition metadata."""
        joining = member_epoch == 0
        group = self._share_group(gid, joining)
        if len(group.members) >= self.config.max_size and mid not in group.members:
            raise E.GroupMaxSizeReachedError(
                f"The share group has reached its maximum capacity of {self.config.max_size} members."
            )
        old = group.members.get(mid)
        if old is None and not joining:
            raise E.UnknownMemberIdError(f"Member {mid} is not a member of group {gid}.")
        base = old if old is not None else ShareMember(mid)
        if member_epoch > base.member_epoch:
            raise E.FencedMemberEpochError(
                f"The share group member has a greater member epoch ({member_epoch}) than the one known "
                f"by the group coordinator ({base.member_epoch}). The member must abandon all its partitions and rejoin."
            )
        if member_epoch < base.member_epoch and member_epoch != base.previous_member_epoch:
            raise E.FencedMemberEpochError(
                f"The share group member has a smaller member epoch ({member_epoch}) than the one known "
                f"by the group coordinator ({base.member_epoch}), and it does not match the previous member "
                f"epoch ({base.previous_member_epoch}). The member must abandon all its partitions and rejoin."
            )
        updated = replace(
            base,
            rack_id=rack_id if rack_id is not None else base.rack_id,
            subscribed_topic_names=tuple(names) if names is not None else base.subscribed_topic_names,
            client_id=client_id,
            client_host=client_host,
        )
        records: list[CoordinatorRecord] = []
        key = member_key(gid, mid)
        bump = False
        if old is None or updated.metadata_value() != old.metadata_value():
            records.append(
                CoordinatorRecord(SR.SHARE_GROUP_MEMBER_METADATA, key, 0, updated.metadata_value())
            )
            bump = old is None or set(updated.subscribed_topic_names) != set(old.subscribed_topic_names)
        members_after = dict(group.members)
        members_after[mid] = updated
        bump = bump or self._initialized_assignment_pending(group)
        names_after = group.subscribed_topic_names(members_after.values())
        new_hash = metadata_hash(names_after, self.topics)
        group_epoch = group.group_epoch
        if bump or new_hash != group.metadata_hash:
            bump = True
            group_epoch += 1
            records.append(
                CoordinatorRecord(
                    SR.SHARE_GROUP_METADATA,
                    {"group_id": gid},
                    0,
                    {"epoch": group_epoch, "metadata_hash": new_hash},
                )
            )
        if group_epoch > group.assignment_epoch:
            targets = self._compute_target(group, members_after)
            for m in sorted(targets):
                if m not in group.target or group.target[m] != targets[m]:
                    records.append(
                        CoordinatorRecord(
                            SR.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                            member_key(gid, m),
                            0,
                            {"topic_partitions": to_topic_partitions(targets[m])},
                        )
                    )
            records.append(
                CoordinatorRecord(
                    SR.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                    {"group_id": gid},
                    0,
                    {"assignment_epoch": group_epoch},
                )
            )
            target_epoch, target = group_epoch, targets.get(mid, {})
        else:
            target_epoch, target = group.assignment_epoch, group.target.get(mid, {})
        reconciled = updated
        if bump or updated.member_epoch != target_epoch:
            reconciled = replace(
                updated,
                member_epoch=target_epoch,
                previous_member_epoch=updated.member_epoch,
                state=MEMBER_STATE_STABLE,
                assigned=dict(target),
            )
        if old is None or reconciled.assignment_value() != old.assignment_value():
            records.append(
                CoordinatorRecord(
                    SR.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, key, 0, reconciled.assignment_value()
                )
            )
        to_init = self._to_initialize(group, names_after, now_ms)
        if to_init:
            new_initializing = _merge(group.initializing, to_init)
            records.append(
                CoordinatorRecord(
                    SR.SHARE_GROUP_STATE_PARTITION_METADATA,
                    {"group_id": gid},
                    0,
                    group.state_partition_value(new_initializing, group.initialized),
                )
            )
        full = joining or names is not None
        previous_assigned = None if old is None else dict(old.assigned)

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=False)
                fx2.reply(token, ShareGroupHeartbeatResult(code.code, code.message, mid, member_epoch))
                return
            g = self.groups.get(gid)
            m = g.members.get(mid) if isinstance(g, ShareGroup) else None
            if m is None or not isinstance(g, ShareGroup):
                fx2.reply(
                    token, ShareGroupHeartbeatResult(E.UnknownMemberIdError.code, None, mid, member_epoch)
                )
                return
            for t in to_init:
                g.initializing_since[t] = now
            self.schedule_session(gid, mid, now)
            assignment = None
            if full or previous_assigned != dict(m.assigned):
                assignment = to_topic_partitions(m.assigned)
            fx2.reply(
                token,
                ShareGroupHeartbeatResult(
                    0,
                    None,
                    mid,
                    m.member_epoch,
                    self.heartbeat_interval_ms(gid),
                    assignment,
                    {t: ti.partitions for t, ti in to_init.items()},
                    g.group_epoch if to_init else -1,
                ),
            )

        if records:
            self.ctx.write(fx, gid, records, stored)
        else:
            stored(None, now_ms, fx)

    # ------------------------------------------------------------------ assignment
    def _assignable(self, group: ShareGroup, names: Iterable[str]) -> dict[uuid.UUID, frozenset[int]]:
        """The initialized partitions of the subscribed topics, as they exist now."""
        out: dict[uuid.UUID, frozenset[int]] = {}
        for name in names:
            t = self.topics.get(name)
            if t is None or t.topic_id not in group.initialized:
                continue
            ps = frozenset(p for p in group.initialized[t.topic_id].partitions if 0 <= p < t.partitions)
            if ps:
                out[t.topic_id] = ps
        return out

    def _topic_ids(self, names: Iterable[str]) -> frozenset[uuid.UUID]:
        out = set()
        for name in names:
            t = self.topics.get(name)
            if t is not None:
                out.add(t.topic_id)
        return frozenset(out)

    def _compute_target(self, group: ShareGroup, members: Mapping[str, ShareMember]) -> dict[str, Assignment]:
        subs = {
            mid: MemberSubscription(self._topic_ids(m.subscribed_topic_names), group.target.get(mid, {}))
            for mid, m in members.items()
        }
        return simple_assign(subs, self._assignable(group, group.subscribed_topic_names(members.values())))

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Kafka's ``initializedAssignmentPending``: initialized partitions of subscribed topics
        that the target assignment does not cover yet (a new epoch must assign them)."""
        if not group.members or not group.initialized:
            return False
        assigned: dict[uuid.UUID, set[int]] = {}
        for a in group.target.values():
            for t, ps in a.items():
                assigned.setdefault(t, set()).update(ps)
        for t, ps in self._assignable(group, group.subscribed_topic_names()).items():
            if assigned.get(t, set()) != set(ps):
                return True
        return False

    def _to_initialize(
        self, group: ShareGroup, names: Iterable[str], now_ms: int
    ) -> dict[uuid.UUID, TopicInit]:
        """Subscribed partitions neither initialized nor recently asked for (Kafka's
        ``subscribedTopicsChangeMap``)."""
        out: dict[uuid.UUID, TopicInit] = {}
        retry = self.config.initialize_retry_interval_ms
        for name in sorted(names):
            t = self.topics.get(name)
            if t is None or t.partitions <= 0:
                continue
            done: set[int] = set()
            if t.topic_id in group.initialized:
                done |= group.initialized[t.topic_id].partitions
            pending = group.initializing.get(t.topic_id)
            since = group.initializing_since.get(t.topic_id, -1)
            if pending is not None and since >= 0 and now_ms - since < retry:
                done |= pending.partitions
            missing = frozenset(range(t.partitions)) - done
            if missing:
                out[t.topic_id] = TopicInit(t.name, missing)
        return out

    # ------------------------------------------------------------------ share-state initialization
    def share_group_initialized(
        self, group_id: str, topic_partitions: Mapping[uuid.UUID, Iterable[int]]
    ) -> Effects:
        """The share coordinator initialized these partitions' state: move them from
        initializing to initialized (the next heartbeat assigns them)."""
        return self._update_init(group_id, topic_partitions, initialized=True)

    def share_group_uninitialized(
        self, group_id: str, topic_partitions: Mapping[uuid.UUID, Iterable[int]]
    ) -> Effects:
        """Initializing them failed: forget them, so a later heartbeat asks again."""
        return self._update_init(group_id, topic_partitions, initialized=False)

    def _update_init(self, gid: str, tps: Mapping[uuid.UUID, Iterable[int]], *, initialized: bool) -> Effects:
        fx = Effects()
        group = self.groups.get(gid)
        if not isinstance(group, ShareGroup) or not any(True for ps in tps.values() for _ in ps):
            return fx
        initializing = _minus(group.initializing, tps)
        done = dict(group.initialized)
        if initialized:
            add: dict[uuid.UUID, TopicInit] = {}
            for t, ps in tps.items():
                known = group.initializing.get(t) or group.initialized.get(t)
                topic = self.topics.by_id(t)
                name = known.name if known else topic.name if topic else ""
                add[t] = TopicInit(name, frozenset(ps))
            done = _merge(done, add)
        value = group.state_partition_value(initializing, done)
        if value == group.state_partition_value(group.initializing, group.initialized):
            return fx
        record = CoordinatorRecord(SR.SHARE_GROUP_STATE_PARTITION_METADATA, {"group_id": gid}, 0, value)
        self.ctx.write(fx, gid, [record], lambda err, now, fx2: None)
        return fx

    # ------------------------------------------------------------------ leave and fencing
    def _fence_records(self, group: ShareGroup, mid: str) -> list[CoordinatorRecord]:
        """Tombstones of a member and the group epoch bump its removal causes."""
        gid = group.group_id
        key = member_key(gid, mid)
        others = [m for k, m in group.members.items() if k != mid]
        new_hash = metadata_hash(group.subscribed_topic_names(others), self.topics)
        return [
            CoordinatorRecord(SR.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, key),
            CoordinatorRecord(SR.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, key),
            CoordinatorRecord(SR.SHARE_GROUP_MEMBER_METADATA, key),
            CoordinatorRecord(
                SR.SHARE_GROUP_METADATA,
                {"group_id": gid},
                0,
                {"epoch": group.group_epoch + 1, "metadata_hash": new_hash},
            ),
        ]

    def _leave(self, token: Any, gid: str, mid: str, fx: Effects) -> None:
        group = self._share_group(gid, False)
        if mid not in group.members:
            raise E.UnknownMemberIdError(f"Member {mid} is not a member of group {gid}.")
        self.timers.cancel((SESSION_TIMER, gid, mid))

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=False)
                fx2.reply(
                    token, ShareGroupHeartbeatResult(code.code, code.message, mid, LEAVE_GROUP_MEMBER_EPOCH)
                )
                return
            fx2.reply(
                token,
                ShareGroupHeartbeatResult(
                    0, None, mid, LEAVE_GROUP_MEMBER_EPOCH, self.heartbeat_interval_ms(gid)
                ),
            )

        log.info("member %s leaves share group %s", mid, gid)
        self.ctx.write(fx, gid, self._fence_records(group, mid), stored)

    def session_timeout_ms(self, gid: str) -> int:
        """The group's ``share.session.timeout.ms``, else ``group.share.session.timeout.ms``."""
        return self.ctx.group_config(gid, "share.session.timeout.ms", self.config.session_timeout_ms)

    def heartbeat_interval_ms(self, gid: str) -> int:
        """The group's ``share.heartbeat.interval.ms``, else ``group.share.heartbeat.interval.ms``."""
        return self.ctx.group_config(gid, "share.heartbeat.interval.ms", self.config.heartbeat_interval_ms)

    def schedule_session(self, gid: str, mid: str, now_ms: int) -> None:
        """(Re)arm the member's session timer; also for every member after a partition loads."""
        self.timers.schedule(
            (SESSION_TIMER, gid, mid),
            now_ms + self.session_timeout_ms(gid),
            lambda now, fx: self._on_session_timeout(gid, mid, now, fx),
        )

    def _on_session_timeout(self, gid: str, mid: str, now_ms: int, fx: Effects) -> None:
        group = self.groups.get(gid)
        if not isinstance(group, ShareGroup) or mid not in group.members:
            return
        log.info("member %s of share group %s is fenced: the member session expired", mid, gid)
        self.ctx.write(fx, gid, self._fence_records(group, mid), lambda err, now, fx2: None)

    # ================================================================== ShareGroupDescribe
    def share_group_describe(self, group_ids: Iterable[str]) -> list[dict[str, Any]]:
        """ShareGroupDescribe's group entries (``authorized_operations`` is the handler's)."""
        out: list[dict[str, Any]] = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if not isinstance(group, ShareGroup):
                msg = f"Group {gid} not found." if group is None else f"Group {gid} is not a share group."
                out.append(
                    {
                        "error_code": E.GroupIdNotFoundError.code,
                        "error_message": msg,
                        "group_id": gid,
                        "group_state": "",
                        "group_epoch": -1,
                        "assignment_epoch": -1,
                        "assignor_name": "",
                        "members": [],
                    }
                )
                continue
            members = [
                {
                    "member_id": m.member_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": sorted(m.subscribed_topic_names),
                    "assignment": {"topic_partitions": self._named(m.assigned)},
                }
                for _, m in sorted(group.members.items())
            ]
            out.append(
                {
                    "error_code": 0,
                    "error_message": None,
                    "group_id": gid,
                    "group_state": group.state_name(),
                    "group_epoch": group.group_epoch,
                    "assignment_epoch": group.assignment_epoch,
                    "assignor_name": ASSIGNOR_NAME,
                    "members": members,
                }
            )
        return out

    def _named(self, a: Mapping[uuid.UUID, frozenset[int]]) -> list[dict[str, Any]]:
        out = []
        for tp in to_topic_partitions(a):
            t = self.topics.by_id(tp["topic_id"])
            out.append(
                {
                    "topic_id": tp["topic_id"],
                    "topic_name": t.name if t else "",
                    "partitions": tp["partitions"],
                }
            )
        return out

    # ================================================================== deletion
    @staticmethod
    def tombstones(group: ShareGroup) -> list[CoordinatorRecord]:
        """The records that delete the group (Kafka's ``createGroupTombstoneRecords`` order)."""
        gid = group.group_id
        mids = sorted(group.members)
        return (
            [CoordinatorRecord(SR.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, member_key(gid, m)) for m in mids]
            + [CoordinatorRecord(SR.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, member_key(gid, m)) for m in mids]
            + [CoordinatorRecord(SR.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": gid})]
            + [CoordinatorRecord(SR.SHARE_GROUP_MEMBER_METADATA, member_key(gid, m)) for m in mids]
            + [
                CoordinatorRecord(SR.SHARE_GROUP_STATE_PARTITION_METADATA, {"group_id": gid}),
                CoordinatorRecord(SR.SHARE_GROUP_METADATA, {"group_id": gid}),
            ]
        )

    def drop(self, gid: str) -> None:
        """Forget a share group and cancel its members' session timers."""
        group = self.groups.get(gid)
        if not isinstance(group, ShareGroup):
            return
        del self.groups[gid]
        for mid in group.members:
            self.timers.cancel((SESSION_TIMER, gid, mid))

    # ================================================================== replay
    def replay_record(self, rec: CoordinatorRecord) -> None:
        """Apply one committed share-group record (key versions 10-15)."""
        gid = rec.key["group_id"]
        kv, v = rec.key_version, rec.value
        group = self.groups.get(gid)
        if not isinstance(group, ShareGroup):
            if v is None:
                return
            if group is not None:
                log.warning(
                    "ignoring share-group record for %s group %s", getattr(group, "kind", "classic"), gid
                )
                return
            group = ShareGroup(gid)
            self.groups[gid] = group
        if kv == SR.SHARE_GROUP_METADATA:
            if v is None:
                self.drop(gid)
            else:
                group.group_epoch = v["epoch"]
                group.metadata_hash = v["metadata_hash"]
        elif kv == SR.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = 0 if v is None else v["assignment_epoch"]
        elif kv == SR.SHARE_GROUP_STATE_PARTITION_METADATA:
            if v is None:
                group.initializing, group.initialized, group.deleting = {}, {}, {}
            else:
                group.initializing, group.initialized = _state_partition_from_value(v)
                group.deleting = {it["topic_id"]: it["topic_name"] for it in v["deleting_topics"]}
            for t in list(group.initializing_since):
                if t not in group.initializing:
                    del group.initializing_since[t]
        elif kv == SR.SHARE_GROUP_MEMBER_METADATA:
            mid = rec.key["member_id"]
            if v is None:
                group.members.pop(mid, None)
                self.timers.cancel((SESSION_TIMER, gid, mid))
            else:
                group.members[mid] = (group.members.get(mid) or ShareMember(mid)).with_metadata_value(v)
        elif kv == SR.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            mid = rec.key["member_id"]
            if v is None:
                group.target.pop(mid, None)
            else:
                group.target[mid] = from_topic_partitions(v["topic_partitions"])
        elif kv == SR.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            mid = rec.key["member_id"]
            if v is None:
                if mid in group.members:
                    group.members[mid] = replace(
                        group.members[mid], member_epoch=0, previous_member_epoch=0, state=0, assigned={}
                    )
            else:
                group.members[mid] = (group.members.get(mid) or ShareMember(mid)).with_assignment_value(v)
