"""KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe) as a state machine.

:class:`ConsumerGroupManager` is the KIP-848 half of Kafka's ``GroupMetadataManager``, one of the
managers the group coordinator shard composes (:mod:`.group_coordinator_shard`); it sees the
shard's groups, timers and writes through a :class:`~.shard_context.GroupShardContext`. One heartbeat:
validate the request, update the member (a MemberMetadata record when it changed), bump the
group epoch when membership, a subscription or the subscribed topics' metadata changed, compute
a new target assignment with the server-side assignor when the group epoch is ahead of the
assignment epoch, reconcile the member toward its target (:func:`.consumer_group.reconcile`),
write all of it as one batch, and answer from the replayed state. Members are fenced after
``group.consumer.session.timeout.ms`` without a heartbeat, or when they keep partitions they
must revoke for longer than their rebalance timeout.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from zurau.coordinator.group import records as R
from zurau.coordinator.group.assignors import ASSIGNORS, MemberSubscription
from zurau.coordinator.group.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    from_topic_partitions,
    is_subset,
    member_topic_ids,
    metadata_hash,
    reconcile,
    to_topic_partitions,
)
from zurau.coordinator.group.group_metadata import ClassicGroup
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import ConsumerGroupHeartbeatResult, Effects, member_key
from zurau.coordinator.group.shard_context import GroupShardContext
from zurau.coordinator.group.share_group import ShareGroup
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.protocol.messages import (
    ConsumerGroupDescribeResponseGroups,
    ConsumerGroupDescribeResponseGroupsMembers,
    ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions,
    ConsumerGroupHeartbeatRequestTopicPartitions,
)

log = logging.getLogger("zurau.coordinator")


@dataclass(frozen=True)
class _Heartbeat:
    """A ConsumerGroupHeartbeat's member fields, validated (``owned`` by topic id)."""

    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    names: list[str] | None
    regex: str | None
    assignor: str | None
    owned: dict[uuid.UUID, frozenset[int]] | None
    client_id: str
    client_host: str

    @property
    def full_request(self) -> bool:
        """Joining, or every field set: the response carries the assignment even if unchanged."""
        return self.member_epoch == 0 or (
            self.rebalance_timeout_ms != -1
            and (self.names is not None or self.regex is not None)
            and self.owned is not None
        )


class ConsumerGroupManager:
    def __init__(self, ctx: GroupShardContext) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.topics = ctx.topics
        self.groups = ctx.groups
        self.timers = ctx.timers

    # ================================================================== KIP-848: ConsumerGroupHeartbeat
    def consumer_group_heartbeat(
        self,
        token: Any,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topic_names: list[str] | None = None,
        subscribed_topic_regex: str | None = None,
        server_assignor: str | None = None,
        owned: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None = None,
        client_id: str = "",
        client_host: str = "",
        api_version: int = 1,
        now_ms: int,
    ) -> Effects:
        fx = Effects()
        try:
            self._validate_cg_heartbeat(
                group_id,
                member_id,
                member_epoch,
                instance_id,
                rack_id,
                rebalance_timeout_ms,
                subscribed_topic_names,
                subscribed_topic_regex,
                server_assignor,
                owned,
                api_version,
            )
            if member_epoch == 0 and not member_id:
                member_id = str(uuid.uuid4())  # v0: the coordinator names the member
            group = self.groups.get(group_id)
            converting = False
            if isinstance(group, ShareGroup):
                raise E.GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
            if isinstance(group, ClassicGroup):
                if group.members or group.pending_members:
                    raise E.GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
                converting = True
                group = None
            if group is None:
                if member_epoch != 0:
                    raise E.UnknownMemberIdError(f"Consumer group {group_id} not found.")
                group = ConsumerGroup(group_id, created_ms=now_ms, state_timestamp=now_ms)
            assert isinstance(group, ConsumerGroup)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                self._cg_leave(token, group, member_id, instance_id, member_epoch, now_ms, fx)
                return fx
            hb = _Heartbeat(
                member_id,
                member_epoch,
                instance_id,
                rack_id,
                rebalance_timeout_ms,
                subscribed_topic_names,
                subscribed_topic_regex,
                server_assignor,
                None if owned is None else from_topic_partitions(owned),
                client_id,
                client_host,
            )
            self._cg_heartbeat(token, group, converting, hb, now_ms, fx)
        except E.KafkaError as e:
            fx.reply(
                token,
                ConsumerGroupHeartbeatResult(
                    e.code, e.message, member_id=member_id or None, member_epoch=member_epoch
                ),
            )
        return fx

    def _validate_cg_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: list[str] | None,
        regex: str | None,
        assignor: str | None,
        owned: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None,
        api_version: int,
    ) -> None:
        bad = E.InvalidRequestError
        if "consumer" not in self.config.rebalance_protocols:
            raise E.UnsupportedVersionError("the consumer group protocol is disabled")
        if not group_id:
            raise bad("GroupId can't be empty.")
        if instance_id == "":
            raise bad("InstanceId can't be empty.")
        if rack_id == "":
            raise bad("RackId can't be empty.")
        if api_version >= 1 and not member_id:
            raise bad("MemberId can't be empty.")
        if member_epoch > 0 or member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not member_id:
                raise bad("MemberId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise bad("RebalanceTimeoutMs must be provided in first request.")
            if owned is None or owned:
                raise bad("TopicPartitions must be empty when (re-)joining.")
            if names is None and regex is None:
                raise bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise bad("InstanceId can't be null.")
        elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise bad(f"MemberEpoch {member_epoch} is invalid.")
        if assignor is not None and assignor not in self.config.consumer_assignors:
            raise E.UnsupportedAssignorError(f"ServerAssignor {assignor} is not supported.")
        if regex is not None:
            import re

            try:
                re.compile(regex)
            except re.error as e:
                raise bad(f"SubscribedTopicRegex {regex!r} is invalid: {e}") from None

    def _cg_heartbeat(
        self, token: Any, group: ConsumerGroup, converting: bool, hb: _Heartbeat, now_ms: int, fx: Effects
    ) -> None:
        """A joining or heartbeating member: check it, update it, assign, reconcile, respond.

        The records go out as one batch, in this order: the classic group's tombstone (when an
        empty classic group converts), a replaced static member's tombstones, the member's
        metadata, the group epoch, the target assignment, the member's current assignment.
        """
        gid = group.group_id
        records: list[CoordinatorRecord] = []
        if converting:
            records.append(CoordinatorRecord(R.GROUP_METADATA, {"group": gid}))
        old, replaced = self._check_member(group, hb)
        if replaced is not None:
            records += self._cg_member_tombstones(gid, replaced.member_id)
        updated = self._updated_member(hb, old, replaced)
        if old is None or not updated.same_metadata(old):
            records.append(
                CoordinatorRecord(
                    R.CONSUMER_GROUP_MEMBER_METADATA,
                    member_key(gid, hb.member_id),
                    0,
                    updated.metadata_value(),
                )
            )
        members_after = {
            k: v for k, v in group.members.items() if replaced is None or k != replaced.member_id
        }
        members_after[hb.member_id] = updated
        prev = old if old is not None else replaced
        assign_records, targets, target_epoch = self._assign(
            group, hb.member_id, prev, updated, replaced, members_after, converting
        )
        records += assign_records
        records += self._reconcile(group, hb, updated, old, replaced, targets, target_epoch)
        self._respond(token, gid, hb, old, replaced, records, now_ms, fx)

    def _check_member(
        self, group: ConsumerGroup, hb: _Heartbeat
    ) -> tuple[ConsumerMember | None, ConsumerMember | None]:
        """(the member as it is, the static member it replaces); raises the heartbeat's error
        (UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH)."""
        gid = group.group_id
        old = group.members.get(hb.member_id)
        if hb.member_epoch == 0:
            replaced: ConsumerMember | None = None
            static = group.static_member(hb.instance_id)
            if static is not None and static.member_id != hb.member_id:
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise E.UnreleasedInstanceIdError(
                        f"Static member {hb.instance_id} of group {gid} is still in use by {static.member_id}."
                    )
                replaced = static
            if old is None and replaced is None and len(group.members) >= self.config.consumer_max_size:
                raise E.GroupMaxSizeReachedError(f"group {gid} has reached group.consumer.max.size")
            return old, replaced
        if old is None:
            raise E.UnknownMemberIdError(f"member {hb.member_id} is not in group {gid}")
        if hb.member_epoch > old.member_epoch:
            raise E.FencedMemberEpochError(
                f"member epoch {hb.member_epoch} is newer than the current epoch {old.member_epoch}"
            )
        if hb.member_epoch < old.member_epoch and (
            hb.member_epoch != old.previous_member_epoch
            or hb.owned is None
            or not is_subset(hb.owned, old.assigned)
        ):
            raise E.FencedMemberEpochError(
                f"member epoch {hb.member_epoch} is older than the current epoch {old.member_epoch}"
            )
        return old, None

    @staticmethod
    def _updated_member(
        hb: _Heartbeat, old: ConsumerMember | None, replaced: ConsumerMember | None
    ) -> ConsumerMember:
        """The member with the heartbeat's fields applied (a field the request leaves out keeps its value)."""
        if replaced is not None:
            # A static member rejoins under a new member id: it takes over the old one's
            # partitions and target, from epoch 0 (Kafka's static member replacement).
            base = replace(
                replaced,
                member_id=hb.member_id,
                member_epoch=0,
                previous_member_epoch=0,
                state=MemberState.STABLE,
                pending_revocation={},
            )
        elif old is not None:
            base = old
        else:
            base = ConsumerMember(hb.member_id, member_epoch=0, previous_member_epoch=-1)
        return replace(
            base,
            instance_id=hb.instance_id if hb.instance_id is not None else base.instance_id,
            rack_id=hb.rack_id if hb.rack_id is not None else base.rack_id,
            client_id=hb.client_id,
            client_host=hb.client_host,
            subscribed_topic_names=tuple(hb.names) if hb.names is not None else base.subscribed_topic_names,
            subscribed_topic_regex=hb.regex if hb.regex is not None else base.subscribed_topic_regex,
            rebalance_timeout_ms=hb.rebalance_timeout_ms
            if hb.rebalance_timeout_ms != -1
            else base.rebalance_timeout_ms,
            server_assignor=hb.assignor if hb.assignor is not None else base.server_assignor,
        )

    def _assign(
        self,
        group: ConsumerGroup,
        member_id: str,
        prev: ConsumerMember | None,
        updated: ConsumerMember,
        replaced: ConsumerMember | None,
        members_after: dict[str, ConsumerMember],
        converting: bool,
    ) -> tuple[list[CoordinatorRecord], dict[str, Any], int]:
        """Bump the group epoch when membership, a subscription or the subscribed topics'
        metadata changed, and compute a new target assignment for it: (records, targets, the
        targets' assignment epoch)."""
        gid = group.group_id
        records: list[CoordinatorRecord] = []
        subscription_changed = prev is None or (prev.subscribed_topic_names, prev.subscribed_topic_regex) != (
            updated.subscribed_topic_names,
            updated.subscribed_topic_regex,
        )
        new_hash = metadata_hash(
            group.subscribed_topic_names(self.topics, members_after.values()), self.topics
        )
        group_epoch = group.group_epoch
        if subscription_changed or new_hash != group.metadata_hash or converting:
            group_epoch += 1
            records.append(
                CoordinatorRecord(
                    R.CONSUMER_GROUP_METADATA,
                    {"group_id": gid},
                    0,
                    {"epoch": group_epoch, "metadata_hash": new_hash, "creation_time_ms": group.created_ms},
                )
            )
        targets: dict[str, Any] = dict(group.target)
        if replaced is not None and replaced.member_id in targets:
            targets[member_id] = targets.pop(replaced.member_id)
            records.append(
                CoordinatorRecord(
                    R.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                    member_key(gid, member_id),
                    0,
                    {"topic_partitions": to_topic_partitions(targets[member_id])},
                )
            )
        if group_epoch <= group.assignment_epoch:
            return records, targets, group.assignment_epoch
        new_targets = self._compute_target(group, members_after, targets)
        for mid, tgt in sorted(new_targets.items()):
            if targets.get(mid) != tgt or mid not in targets:
                records.append(
                    CoordinatorRecord(
                        R.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                        member_key(gid, mid),
                        0,
                        {"topic_partitions": to_topic_partitions(tgt)},
                    )
                )
        records.append(
            CoordinatorRecord(
                R.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                {"group_id": gid},
                0,
                {"assignment_epoch": group_epoch},
            )
        )
        return records, new_targets, group_epoch

    def _reconcile(
        self,
        group: ConsumerGroup,
        hb: _Heartbeat,
        updated: ConsumerMember,
        old: ConsumerMember | None,
        replaced: ConsumerMember | None,
        targets: dict[str, Any],
        target_epoch: int,
    ) -> list[CoordinatorRecord]:
        """Walk the member toward its target (:func:`.consumer_group.reconcile`); the record of its
        new current assignment, if it changed."""
        owners = {tp: m for tp, m in group.owners.items() if replaced is None or m != replaced.member_id}
        reconciled = reconcile(
            updated,
            target_epoch,
            targets.get(hb.member_id, {}),
            member_topic_ids(updated, self.topics),
            owners,
            hb.owned,
        )
        if old is not None and reconciled.same_assignment(old):
            return []
        return [
            CoordinatorRecord(
                R.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                member_key(group.group_id, hb.member_id),
                0,
                reconciled.assignment_value(),
            )
        ]

    def _respond(
        self,
        token: Any,
        gid: str,
        hb: _Heartbeat,
        old: ConsumerMember | None,
        replaced: ConsumerMember | None,
        records: list[CoordinatorRecord],
        now_ms: int,
        fx: Effects,
    ) -> None:
        """Write the records; once they are committed, re-arm the member's timers and answer from
        the replayed state (the assignment only when it changed, or on a full request)."""
        member_id, member_epoch = hb.member_id, hb.member_epoch
        previous_assigned = None if old is None else dict(old.assigned)

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=False)
                fx2.reply(
                    token, ConsumerGroupHeartbeatResult(code.code, code.message, member_id, member_epoch)
                )
                return
            g = self.groups.get(gid)
            m = g.members.get(member_id) if isinstance(g, ConsumerGroup) else None
            if m is None or not isinstance(g, ConsumerGroup):
                fx2.reply(
                    token,
                    ConsumerGroupHeartbeatResult(E.UnknownMemberIdError.code, None, member_id, member_epoch),
                )
                return
            if replaced is not None:
                self.timers.cancel(("cg-session", gid, replaced.member_id))
                self.timers.cancel(("cg-revoke", gid, replaced.member_id))
            if old is None:
                g.state_timestamp = now
            self.schedule_session(gid, member_id, now)
            if m.state == MemberState.UNREVOKED_PARTITIONS:
                self.schedule_revocation(gid, m, now)
            else:
                self.timers.cancel(("cg-revoke", gid, member_id))
            assignment = None
            if hb.full_request or previous_assigned != dict(m.assigned):
                assignment = to_topic_partitions(m.assigned)
            fx2.reply(
                token,
                ConsumerGroupHeartbeatResult(
                    0, None, member_id, m.member_epoch, self.heartbeat_interval_ms(gid), assignment
                ),
            )

        if records:
            self.ctx.write(fx, gid, records, stored)
        else:
            stored(None, now_ms, fx)

    def _compute_target(
        self, group: ConsumerGroup, members: Mapping[str, ConsumerMember], previous: Mapping[str, Any]
    ) -> dict[str, Any]:
        assignor = group.preferred_assignor(self.config.consumer_assignors[0], members.values())
        subs = {
            mid: MemberSubscription(member_topic_ids(m, self.topics), previous.get(mid, {}))
            for mid, m in members.items()
        }
        partitions: dict[Any, int] = {}
        for name in group.subscribed_topic_names(self.topics, members.values()):
            t = self.topics.get(name)
            if t is not None:
                partitions[t.topic_id] = t.partitions
        return ASSIGNORS[assignor](subs, partitions)

    @staticmethod
    def _cg_member_tombstones(gid: str, mid: str) -> list[CoordinatorRecord]:
        key = member_key(gid, mid)
        return [
            CoordinatorRecord(R.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, key),
            CoordinatorRecord(R.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, key),
            CoordinatorRecord(R.CONSUMER_GROUP_MEMBER_METADATA, key),
        ]

    def _cg_remove_records(self, group: ConsumerGroup, member_id: str) -> list[CoordinatorRecord]:
        """Tombstones for a member and the group epoch bump that removing it causes."""
        gid = group.group_id
        others = [m for mid, m in group.members.items() if mid != member_id]
        new_hash = metadata_hash(group.subscribed_topic_names(self.topics, others), self.topics)
        return self._cg_member_tombstones(gid, member_id) + [
            CoordinatorRecord(
                R.CONSUMER_GROUP_METADATA,
                {"group_id": gid},
                0,
                {
                    "epoch": group.group_epoch + 1,
                    "metadata_hash": new_hash,
                    "creation_time_ms": group.created_ms,
                },
            )
        ]

    def _cg_leave(
        self,
        token: Any,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        now_ms: int,
        fx: Effects,
    ) -> None:
        gid = group.group_id
        member = group.members.get(member_id)
        if member is None and instance_id is not None:
            member = group.static_member(instance_id)
        if member is None or gid not in self.groups:
            raise E.UnknownMemberIdError(f"member {member_id} is not in group {gid}")
        mid = member.member_id
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            left = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
            records = [
                CoordinatorRecord(
                    R.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                    member_key(gid, mid),
                    0,
                    left.assignment_value(),
                )
            ]
        else:
            records = self._cg_remove_records(group, mid)

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=False)
                fx2.reply(token, ConsumerGroupHeartbeatResult(code.code, code.message, mid, member_epoch))
                return
            if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                self.timers.cancel(("cg-session", gid, mid))
                self._cg_mark_empty(gid, now)
            self.timers.cancel(("cg-revoke", gid, mid))
            fx2.reply(
                token,
                ConsumerGroupHeartbeatResult(0, None, mid, member_epoch, self.heartbeat_interval_ms(gid)),
            )

        log.info("member %s leaves consumer group %s (epoch %d)", mid, gid, member_epoch)
        self.ctx.write(fx, gid, records, stored)

    def _cg_mark_empty(self, gid: str, now_ms: int) -> None:
        g = self.groups.get(gid)
        if isinstance(g, ConsumerGroup) and not g.members:
            g.state_timestamp = now_ms

    def session_timeout_ms(self, gid: str) -> int:
        """The group's ``consumer.session.timeout.ms``, else ``group.consumer.session.timeout.ms``."""
        return self.ctx.group_config(
            gid, "consumer.session.timeout.ms", self.config.consumer_session_timeout_ms
        )

    def heartbeat_interval_ms(self, gid: str) -> int:
        """The group's ``consumer.heartbeat.interval.ms``, else ``group.consumer.heartbeat.interval.ms``."""
        return self.ctx.group_config(
            gid, "consumer.heartbeat.interval.ms", self.config.consumer_heartbeat_interval_ms
        )

    def schedule_session(self, gid: str, mid: str, now_ms: int) -> None:
        self.timers.schedule(
            ("cg-session", gid, mid),
            now_ms + self.session_timeout_ms(gid),
            lambda now, fx: self._cg_on_timeout(gid, mid, "cg-session", now, fx),
        )

    def schedule_revocation(self, gid: str, member: ConsumerMember, now_ms: int) -> None:
        mid = member.member_id
        key = ("cg-revoke", gid, mid)
        if key not in self.timers:
            timeout = (
                member.rebalance_timeout_ms
                if member.rebalance_timeout_ms > 0
                else self.session_timeout_ms(gid)
            )
            self.timers.schedule(
                key, now_ms + timeout, lambda now, fx: self._cg_on_timeout(gid, mid, "cg-revoke", now, fx)
            )

    def _cg_on_timeout(self, gid: str, mid: str, kind: str, now_ms: int, fx: Effects) -> None:
        group = self.groups.get(gid)
        if not isinstance(group, ConsumerGroup):
            return
        member = group.members.get(mid)
        if member is None:
            return
        if kind == "cg-revoke" and member.state != MemberState.UNREVOKED_PARTITIONS:
            return
        why = "session timeout" if kind == "cg-session" else "did not revoke its partitions in time"
        log.info("member %s of consumer group %s is fenced: %s", mid, gid, why)
        self.timers.cancel(("cg-session", gid, mid))
        self.timers.cancel(("cg-revoke", gid, mid))
        self.ctx.write(
            fx, gid, self._cg_remove_records(group, mid), lambda err, now, fx2: self._cg_mark_empty(gid, now)
        )

    # ================================================================== KIP-848: describe
    def consumer_group_describe(self, group_ids: Iterable[str]) -> list[ConsumerGroupDescribeResponseGroups]:
        """ConsumerGroupDescribe's group entries (``authorized_operations`` is the handler's)."""
        out: list[ConsumerGroupDescribeResponseGroups] = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if not isinstance(group, ConsumerGroup):
                msg = f"Group {gid} not found." if group is None else f"Group {gid} is not a consumer group."
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
            members: list[ConsumerGroupDescribeResponseGroupsMembers] = []
            for m in group.members.values():
                members.append(
                    {
                        "member_id": m.member_id,
                        "instance_id": m.instance_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.member_epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": sorted(m.subscribed_topic_names),
                        "subscribed_topic_regex": m.subscribed_topic_regex,
                        "assignment": {"topic_partitions": self._named(m.assigned)},
                        "target_assignment": {
                            "topic_partitions": self._named(group.target.get(m.member_id, {}))
                        },
                        "member_type": 1,
                    }
                )
            out.append(
                {
                    "error_code": 0,
                    "error_message": None,
                    "group_id": gid,
                    "group_state": group.state_name(),
                    "group_epoch": group.group_epoch,
                    "assignment_epoch": group.assignment_epoch,
                    "assignor_name": group.preferred_assignor(
                        self.config.consumer_assignors[0], group.members.values()
                    ),
                    "members": members,
                }
            )
        return out

    def _named(
        self, a: Mapping[uuid.UUID, frozenset[int]]
    ) -> list[ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]:
        out: list[ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions] = []
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

    # ================================================================== replay
    def replay_record(self, rec: CoordinatorRecord) -> None:
        gid = rec.key["group_id"]
        kv = rec.key_version
        group = self.groups.get(gid)
        if not isinstance(group, ConsumerGroup):
            if rec.value is None:
                return
            if isinstance(group, ClassicGroup) and group.members:
                log.warning("ignoring consumer-group record for classic group %s", gid)
                return
            if group is not None:
                self.ctx.drop_group(gid)
            group = ConsumerGroup(gid)
            self.groups[gid] = group
        v = rec.value
        if kv == R.CONSUMER_GROUP_METADATA:
            if v is None:
                self.ctx.drop_group(gid)
            else:
                group.group_epoch = v["epoch"]
                group.metadata_hash = v.get("metadata_hash", 0)
                group.created_ms = v.get("creation_time_ms", -1)
        elif kv == R.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = 0 if v is None else v["assignment_epoch"]
        elif kv == R.CONSUMER_GROUP_MEMBER_METADATA:
            mid = rec.key["member_id"]
            if v is None:
                group.remove_member(mid)
            else:
                base = group.members.get(mid) or ConsumerMember(mid)
                group.put_member(base.with_metadata_value(v))
        elif kv == R.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            mid = rec.key["member_id"]
            if v is None:
                group.target.pop(mid, None)
            else:
                group.target[mid] = from_topic_partitions(v["topic_partitions"])
        elif kv == R.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            mid = rec.key["member_id"]
            base = group.members.get(mid) or ConsumerMember(mid)
            if v is None:
                if mid in group.members:
                    group.put_member(
                        replace(
                            base,
                            member_epoch=0,
                            previous_member_epoch=-1,
                            state=MemberState.STABLE,
                            assigned={},
                            pending_revocation={},
                        )
                    )
            else:
                group.put_member(base.with_assignment_value(v))
