"""KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe) as a state machine.

A mixin of :class:`~zurau.coordinator.group_coordinator.GroupCoordinator`. One heartbeat:
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
from dataclasses import replace
from typing import Any

from zurau.coordinator import records as R
from zurau.coordinator.assignors import ASSIGNORS, MemberSubscription
from zurau.coordinator.base import CoordinatorBase
from zurau.coordinator.consumer_group import (
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
from zurau.coordinator.group_metadata import ClassicGroup
from zurau.coordinator.records import CoordinatorRecord
from zurau.coordinator.results import ConsumerGroupHeartbeatResult, Effects, member_key, write_error
from zurau.protocol import errors as E

log = logging.getLogger("zurau.coordinator")


class ConsumerProtocol(CoordinatorBase):
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
        owned: list[Mapping[str, Any]] | None = None,
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
            owned_map = None if owned is None else from_topic_partitions(owned)
            self._cg_heartbeat(
                token,
                group,
                converting,
                member_id,
                member_epoch,
                instance_id,
                rack_id,
                rebalance_timeout_ms,
                subscribed_topic_names,
                subscribed_topic_regex,
                server_assignor,
                owned_map,
                client_id,
                client_host,
                now_ms,
                fx,
            )
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
        owned: list[Mapping[str, Any]] | None,
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
        self,
        token: Any,
        group: ConsumerGroup,
        converting: bool,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: list[str] | None,
        regex: str | None,
        assignor: str | None,
        owned: dict[Any, frozenset[int]] | None,
        client_id: str,
        client_host: str,
        now_ms: int,
        fx: Effects,
    ) -> None:
        gid = group.group_id
        records: list[CoordinatorRecord] = []
        if converting:
            records.append(CoordinatorRecord(R.GROUP_METADATA, {"group": gid}))
        old = group.members.get(member_id)
        replaced: ConsumerMember | None = None
        if member_epoch == 0:
            static = group.static_member(instance_id)
            if static is not None and static.member_id != member_id:
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise E.UnreleasedInstanceIdError(
                        f"Static member {instance_id} of group {gid} is still in use by {static.member_id}."
                    )
                replaced = static
            if old is None and replaced is None and len(group.members) >= self.config.consumer_max_size:
                raise E.GroupMaxSizeReachedError(f"group {gid} has reached group.consumer.max.size")
        else:
            if old is None:
                raise E.UnknownMemberIdError(f"member {member_id} is not in group {gid}")
            if member_epoch > old.member_epoch:
                raise E.FencedMemberEpochError(
                    f"member epoch {member_epoch} is newer than the current epoch {old.member_epoch}"
                )
            if member_epoch < old.member_epoch and (
                member_epoch != old.previous_member_epoch
                or owned is None
                or not is_subset(owned, old.assigned)
            ):
                raise E.FencedMemberEpochError(
                    f"member epoch {member_epoch} is older than the current epoch {old.member_epoch}"
                )
        if replaced is not None:
            # A static member rejoins under a new member id: it takes over the old one's
            # partitions and target, from epoch 0 (Kafka's static member replacement).
            base = replace(
                replaced,
                member_id=member_id,
                member_epoch=0,
                previous_member_epoch=0,
                state=MemberState.STABLE,
                pending_revocation={},
            )
            records += self._cg_member_tombstones(gid, replaced.member_id)
        elif old is not None:
            base = old
        else:
            base = ConsumerMember(member_id, member_epoch=0, previous_member_epoch=-1)
        updated = replace(
            base,
            instance_id=instance_id if instance_id is not None else base.instance_id,
            rack_id=rack_id if rack_id is not None else base.rack_id,
            client_id=client_id,
            client_host=client_host,
            subscribed_topic_names=tuple(names) if names is not None else base.subscribed_topic_names,
            subscribed_topic_regex=regex if regex is not None else base.subscribed_topic_regex,
            rebalance_timeout_ms=rebalance_timeout_ms
            if rebalance_timeout_ms != -1
            else base.rebalance_timeout_ms,
            server_assignor=assignor if assignor is not None else base.server_assignor,
        )
        is_new = old is None
        prev = old if old is not None else replaced
        if is_new or not updated.same_metadata(old):  # type: ignore[arg-type]
            records.append(
                CoordinatorRecord(
                    R.CONSUMER_GROUP_MEMBER_METADATA, member_key(gid, member_id), 0, updated.metadata_value()
                )
            )
        members_after = {
            k: v for k, v in group.members.items() if replaced is None or k != replaced.member_id
        }
        members_after[member_id] = updated
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
        target_epoch = group.assignment_epoch
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
        if group_epoch > group.assignment_epoch:
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
            targets = new_targets
            target_epoch = group_epoch
        owners = {tp: m for tp, m in group.owners.items() if replaced is None or m != replaced.member_id}
        reconciled = reconcile(
            updated,
            target_epoch,
            targets.get(member_id, {}),
            member_topic_ids(updated, self.topics),
            owners,
            owned,
        )
        if is_new or not reconciled.same_assignment(old):  # type: ignore[arg-type]
            records.append(
                CoordinatorRecord(
                    R.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                    member_key(gid, member_id),
                    0,
                    reconciled.assignment_value(),
                )
            )
        previous_assigned = None if old is None else dict(old.assigned)
        full_request = member_epoch == 0 or (
            rebalance_timeout_ms != -1 and (names is not None or regex is not None) and owned is not None
        )

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
            if is_new:
                g.state_timestamp = now
            self._cg_schedule_session(gid, member_id, now)
            if m.state == MemberState.UNREVOKED_PARTITIONS:
                self._cg_schedule_revocation(gid, m, now)
            else:
                self.timers.cancel(("cg-revoke", gid, member_id))
            assignment = None
            if full_request or previous_assigned != dict(m.assigned):
                assignment = to_topic_partitions(m.assigned)
            fx2.reply(
                token,
                ConsumerGroupHeartbeatResult(
                    0, None, member_id, m.member_epoch, self.config.consumer_heartbeat_interval_ms, assignment
                ),
            )

        if records:
            self._write(fx, gid, records, stored)
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
                ConsumerGroupHeartbeatResult(
                    0, None, mid, member_epoch, self.config.consumer_heartbeat_interval_ms
                ),
            )

        log.info("member %s leaves consumer group %s (epoch %d)", mid, gid, member_epoch)
        self._write(fx, gid, records, stored)

    def _cg_mark_empty(self, gid: str, now_ms: int) -> None:
        g = self.groups.get(gid)
        if isinstance(g, ConsumerGroup) and not g.members:
            g.state_timestamp = now_ms

    def _cg_schedule_session(self, gid: str, mid: str, now_ms: int) -> None:
        self.timers.schedule(("cg-session", gid, mid), now_ms + self.config.consumer_session_timeout_ms)

    def _cg_schedule_revocation(self, gid: str, member: ConsumerMember, now_ms: int) -> None:
        key = ("cg-revoke", gid, member.member_id)
        if key not in self.timers:
            timeout = (
                member.rebalance_timeout_ms
                if member.rebalance_timeout_ms > 0
                else self.config.consumer_session_timeout_ms
            )
            self.timers.schedule(key, now_ms + timeout)

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
        self._write(
            fx, gid, self._cg_remove_records(group, mid), lambda err, now, fx2: self._cg_mark_empty(gid, now)
        )

    # ================================================================== KIP-848: describe
    def consumer_group_describe(self, group_ids: Iterable[str]) -> list[dict[str, Any]]:
        out = []
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
            members = []
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

    def _named(self, a: Mapping[Any, frozenset[int]]) -> list[dict[str, Any]]:
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
