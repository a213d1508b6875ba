"""Classic groups: the JoinGroup/SyncGroup/Heartbeat/LeaveGroup protocol as a state machine.

:class:`ClassicGroupManager` is the classic half of Kafka's ``GroupMetadataManager``, one of the
managers the group coordinator shard composes (:mod:`.group_coordinator_shard`); it sees the
shard's groups, timers and writes through a :class:`~.shard_context.GroupShardContext` and
nothing else. The group model and its state diagram are in :mod:`.group_metadata`. Kafka's behaviour throughout:
MEMBER_ID_REQUIRED for v4+ joins without an id, the initial delayed join for groups that were
Empty (``group.initial.rebalance.delay.ms``, extended while members keep arriving, bounded by
the rebalance timeout), join completion as soon as every member has rejoined (else at the
rebalance timeout, dropping dynamic members that did not), protocol selection by vote among the
protocols every member supports, the leader's assignment stored before anyone gets theirs,
members that never sync removed after the rebalance timeout, static members replaced in place.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from zurau.coordinator.group import records as R
from zurau.coordinator.group.consumer_group import ConsumerGroup
from zurau.coordinator.group.group_metadata import ClassicGroup, ClassicMember, GroupState
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import (
    Effects,
    JoinGroupResult,
    LeaveGroupResult,
    SyncGroupResult,
)
from zurau.coordinator.group.shard_context import GroupShardContext
from zurau.coordinator.group.share_group import ShareGroup
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E

log = logging.getLogger("zurau.coordinator")


class ClassicGroupManager:
    def __init__(self, ctx: GroupShardContext) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.topics = ctx.topics
        self.groups = ctx.groups
        self.timers = ctx.timers

    # ================================================================== classic: JoinGroup
    def join_group(
        self,
        token: Any,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        api_version: int,
        now_ms: int,
    ) -> Effects:
        fx = Effects()
        created: ClassicGroup | None = None
        try:
            if not group_id:
                raise E.InvalidGroupIdError("the group id must not be empty")
            cfg = self.config
            if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
                raise E.InvalidSessionTimeoutError(
                    f"session timeout {session_timeout_ms} ms is outside [{cfg.min_session_timeout_ms}, "
                    f"{cfg.max_session_timeout_ms}]"
                )
            if "classic" not in cfg.rebalance_protocols:
                raise E.InconsistentGroupProtocolError("the classic group protocol is disabled")
            if rebalance_timeout_ms <= 0:
                rebalance_timeout_ms = session_timeout_ms
            group = self.groups.get(group_id)
            if isinstance(group, ShareGroup):
                raise E.InconsistentGroupProtocolError(f"group {group_id} is a share group")
            if isinstance(group, ConsumerGroup):
                if group.members:
                    raise E.InconsistentGroupProtocolError(
                        f"group {group_id} is a consumer group; classic members cannot join it"
                    )
                self._convert_to_classic(group, now_ms, fx)
                group = None
            if group is None:
                if member_id:
                    raise E.UnknownMemberIdError(f"group {group_id} does not exist")
                group = created = ClassicGroup(group_id, state_timestamp=now_ms)
                self.groups[group_id] = group
            assert isinstance(group, ClassicGroup)
            if group.is_in(GroupState.DEAD):
                raise E.CoordinatorNotAvailableError(f"group {group_id} is being deleted")
            if not group.supports_protocols(protocol_type, protocols):
                raise E.InconsistentGroupProtocolError(
                    f"protocols of the joining member do not match those of group {group_id}"
                )
            args = dict(
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocols=protocols,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                client_id=client_id,
                client_host=client_host,
                api_version=api_version,
            )
            if not member_id:
                self._join_new_member(token, group, require_known_member_id, now_ms, fx, **args)
            else:
                self._join_known_member(token, group, member_id, now_ms, fx, **args)
        except E.KafkaError as e:
            if created is not None and not created.members and not created.pending_members:
                self.groups.pop(group_id, None)  # a failed first join leaves no group behind
            fx.reply(token, JoinGroupResult(e.code, member_id=member_id))
        return fx

    def _check_group_size(self, group: ClassicGroup) -> None:
        if len(group.members) + len(group.pending_members) >= self.config.group_max_size:
            raise E.GroupMaxSizeReachedError(f"group {group.group_id} has reached group.max.size")

    def _join_new_member(
        self,
        token: Any,
        group: ClassicGroup,
        require_known_member_id: bool,
        now_ms: int,
        fx: Effects,
        **a: Any,
    ) -> None:
        new_id = f"{a['client_id']}-{uuid.uuid4()}"
        instance_id = a["group_instance_id"]
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is not None:
                self._replace_static_member(token, group, instance_id, old_id, new_id, now_ms, fx, **a)
                return
            self._check_group_size(group)
            self._add_member_and_rebalance(token, group, new_id, now_ms, fx, **a)
        elif require_known_member_id:
            self._check_group_size(group)
            group.pending_members.add(new_id)
            self._schedule_pending_member(group.group_id, new_id, now_ms + a["session_timeout_ms"])
            fx.reply(token, JoinGroupResult(E.MemberIdRequiredError.code, member_id=new_id))
        else:
            self._check_group_size(group)
            self._add_member_and_rebalance(token, group, new_id, now_ms, fx, **a)

    def _join_known_member(
        self, token: Any, group: ClassicGroup, member_id: str, now_ms: int, fx: Effects, **a: Any
    ) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.timers.cancel(("pending", group.group_id, member_id))
            self._add_member_and_rebalance(token, group, member_id, now_ms, fx, **a)
            return
        group.validate_member(member_id, a["group_instance_id"])
        member = group.members[member_id]
        protocols = a["protocols"]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(token, group, member, now_ms, fx, **a)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # The member lost its JoinGroup response: answer again for this generation.
                fx.reply(token, self._join_result(group, member))
                self.rearm_session(group, member, now_ms)
            else:
                self._update_member_and_rebalance(token, group, member, now_ms, fx, **a)
        elif group.is_in(GroupState.STABLE):
            if member_id == group.leader_id or not member.matches(protocols):
                self._update_member_and_rebalance(token, group, member, now_ms, fx, **a)
            else:
                fx.reply(token, self._join_result(group, member))
                self.rearm_session(group, member, now_ms)
        else:
            raise E.UnknownMemberIdError(f"member {member_id} is not in group {group.group_id}")

    def _join_result(
        self,
        group: ClassicGroup,
        member: ClassicMember,
        skip_assignment: bool = False,
        leader_id: str | None = None,
    ) -> JoinGroupResult:
        """The JoinGroup answer for ``member`` in the current generation; the member list goes to
        the leader only. ``leader_id`` overrides the leader named (a v0-v8 static rejoin)."""
        leader = group.leader_id if leader_id is None else leader_id
        is_leader = member.member_id == leader
        members = (
            [
                (m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                for m in group.members.values()
            ]
            if is_leader
            else []
        )
        return JoinGroupResult(
            0,
            member_id=member.member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=leader or "",
            members=members,
            skip_assignment=skip_assignment,
        )

    def _add_member_and_rebalance(
        self, token: Any, group: ClassicGroup, member_id: str, now_ms: int, fx: Effects, **a: Any
    ) -> None:
        member = ClassicMember(
            member_id=member_id,
            group_instance_id=a["group_instance_id"],
            client_id=a["client_id"],
            client_host=a["client_host"],
            rebalance_timeout_ms=a["rebalance_timeout_ms"],
            session_timeout_ms=a["session_timeout_ms"],
            protocol_type=a["protocol_type"],
            protocols=a["protocols"],
            join_token=token,
            join_version=a["api_version"],
            is_new=True,
        )
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self.timers.cancel(("session", group.group_id, member_id))
        self._rebalance_or_complete(group, now_ms, fx)

    def _update_member_and_rebalance(
        self, token: Any, group: ClassicGroup, member: ClassicMember, now_ms: int, fx: Effects, **a: Any
    ) -> None:
        if member.join_token is not None and member.join_token is not token:
            fx.reply(
                member.join_token,
                JoinGroupResult(E.RebalanceInProgressError.code, member_id=member.member_id),
            )
        member.protocols = a["protocols"]
        member.rebalance_timeout_ms = a["rebalance_timeout_ms"]
        member.session_timeout_ms = a["session_timeout_ms"]
        member.client_id = a["client_id"]
        member.client_host = a["client_host"]
        member.join_token = token
        member.join_version = a["api_version"]
        self.timers.cancel(("session", group.group_id, member.member_id))
        self._rebalance_or_complete(group, now_ms, fx)

    def _replace_static_member(
        self,
        token: Any,
        group: ClassicGroup,
        instance_id: str,
        old_id: str,
        new_id: str,
        now_ms: int,
        fx: Effects,
        **a: Any,
    ) -> None:
        """A static member rejoins with an empty member id (a restart): Kafka's static rejoin.

        The slot (assignment, place in the group, leadership) passes to ``new_id`` and the old id
        is fenced (FENCED_INSTANCE_ID from then on). In Stable, as long as the protocol the group
        would select stays the one in use, nobody rebalances: the new id is checkpointed and the
        member is answered with the current generation, so its SyncGroup returns the assignment it
        had. A v0-v8 join is told the previous leader id, so that a rejoining leader does not run
        an assignment no one would receive; v9+ (KIP-814) names the leader and sets
        ``skip_assignment`` instead. Otherwise (protocol change, CompletingRebalance) the group
        rebalances; in PreparingRebalance the member simply counts as joined.
        """
        old = group.members[old_id]
        fenced = E.FencedInstanceIdError.code
        if old.join_token is not None:
            fx.reply(old.join_token, JoinGroupResult(fenced, member_id=old_id))
            old.join_token = None
        if old.sync_token is not None:
            fx.reply(old.sync_token, SyncGroupResult(fenced))
            old.sync_token = None
        self.timers.cancel(("session", group.group_id, old_id))
        previous_leader = group.leader_id
        member = group.replace_static_member(instance_id, old_id, new_id)
        saved = (
            member.protocols,
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
            member.client_id,
            member.client_host,
        )
        if not group.is_in(GroupState.STABLE):
            self._update_member_and_rebalance(token, group, member, now_ms, fx, **a)
            return
        member.protocols = a["protocols"]
        member.rebalance_timeout_ms = a["rebalance_timeout_ms"]
        member.session_timeout_ms = a["session_timeout_ms"]
        member.client_id, member.client_host = a["client_id"], a["client_host"]
        if group.select_protocol() != group.protocol_name:
            self._update_member_and_rebalance(token, group, member, now_ms, fx, **a)
            return
        generation = group.generation_id
        skip_supported = a["api_version"] >= 9

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if self.groups.get(group.group_id) is not group or group.generation_id != generation:
                fx2.reply(token, JoinGroupResult(E.RebalanceInProgressError.code, member_id=new_id))
                return
            if err is not None:
                # The new id is not durable: give the slot back to the old id.
                if group.members.get(new_id) is member:
                    (
                        member.protocols,
                        member.rebalance_timeout_ms,
                        member.session_timeout_ms,
                        member.client_id,
                        member.client_host,
                    ) = saved
                    group.replace_static_member(instance_id, new_id, old_id)
                    self.rearm_session(group, member, now)
                fx2.reply(token, JoinGroupResult(write_error(err, for_offsets=False).code))
                return
            if skip_supported:
                leader = new_id == group.leader_id
                fx2.reply(token, self._join_result(group, member, skip_assignment=leader))
            else:
                fx2.reply(token, self._join_result(group, member, leader_id=previous_leader))
            self.rearm_session(group, member, now)

        self.ctx.write(fx, group.group_id, [self._group_metadata_record(group)], stored)

    # ------------------------------------------------------------------ classic: rebalance
    def _rebalance_or_complete(self, group: ClassicGroup, now_ms: int, fx: Effects) -> None:
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, now_ms, fx)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now_ms, fx)

    def _prepare_rebalance(self, group: ClassicGroup, now_ms: int, fx: Effects) -> None:
        gid = group.group_id
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate(group, E.RebalanceInProgressError.code, now_ms, fx)
        group.pending_sync.clear()
        self.timers.cancel(("sync", gid))
        delay = self.config.initial_rebalance_delay_ms
        initial = group.is_in(GroupState.EMPTY) and delay > 0
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
        if initial:
            group.initial_join = True
            group.new_member_added = False
            group.initial_join_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_join(gid, now_ms + delay)
        else:
            group.initial_join = False
            self._schedule_join(gid, now_ms + group.rebalance_timeout_ms())
            self._maybe_complete_join(group, now_ms, fx)

    def _maybe_complete_join(self, group: ClassicGroup, now_ms: int, fx: Effects) -> None:
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and not group.initial_join
            and group.has_all_members_joined()
        ):
            self._complete_join(group, now_ms, fx)

    def _on_join_deadline(self, gid: str, now_ms: int, fx: Effects) -> None:
        group = self.groups.get(gid)
        if not isinstance(group, ClassicGroup) or not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if group.initial_join and group.new_member_added and group.initial_join_remaining_ms > 0:
            delay = self.config.initial_rebalance_delay_ms
            group.new_member_added = False
            step = min(delay, group.initial_join_remaining_ms)
            group.initial_join_remaining_ms = max(group.initial_join_remaining_ms - delay, 0)
            self._schedule_join(gid, now_ms + step)
            return
        self._complete_join(group, now_ms, fx)

    def _complete_join(self, group: ClassicGroup, now_ms: int, fx: Effects) -> None:
        gid = group.group_id
        self.timers.cancel(("join", gid))
        group.initial_join = False
        # Dynamic members that did not rejoin are gone; static ones keep their slot.
        for m in list(group.members.values()):
            if m.join_token is None and m.group_instance_id is None:
                self._remove_member(group, m, fx)
        joined = [m for m in group.members.values() if m.join_token is not None]
        if group.members and not joined:
            # Only static members that have not rejoined: wait for them (or their session expiry).
            self._schedule_join(gid, now_ms + group.rebalance_timeout_ms())
            return
        if group.leader_id is None or group.members[group.leader_id].join_token is None:
            group.leader_id = joined[0].member_id if joined else None
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(GroupState.EMPTY, now_ms)
            self.ctx.write(fx, gid, [self._group_metadata_record(group)], lambda err, now, fx2: None)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        group.pending_sync = set(group.members)
        self.timers.schedule(
            ("sync", gid), now_ms + group.rebalance_timeout_ms(), lambda now, fx: self._on_sync_deadline(gid, now, fx)
        )
        for m in joined:
            token = m.join_token
            m.join_token = None
            m.is_new = False
            fx.reply(token, self._join_result(group, m))
            self.rearm_session(group, m, now_ms)

    def _reset_and_propagate(self, group: ClassicGroup, error_code: int, now_ms: int, fx: Effects) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error_code, now_ms, fx)

    def _propagate_assignment(self, group: ClassicGroup, error_code: int, now_ms: int, fx: Effects) -> None:
        for m in group.members.values():
            if m.sync_token is not None:
                token = m.sync_token
                m.sync_token = None
                fx.reply(
                    token,
                    SyncGroupResult(
                        error_code,
                        group.protocol_type,
                        group.protocol_name,
                        m.assignment if error_code == 0 else b"",
                    ),
                )
                self.rearm_session(group, m, now_ms)

    def _on_sync_deadline(self, gid: str, now_ms: int, fx: Effects) -> None:
        group = self.groups.get(gid)
        if not isinstance(group, ClassicGroup) or not group.pending_sync:
            return
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        for mid in list(group.pending_sync):
            m = group.members.get(mid)
            if m is not None:
                self._remove_member(group, m, fx)
        group.pending_sync.clear()
        self._prepare_rebalance(group, now_ms, fx)

    def _schedule_join(self, gid: str, deadline_ms: int) -> None:
        self.timers.schedule(("join", gid), deadline_ms, lambda now, fx: self._on_join_deadline(gid, now, fx))

    def _schedule_pending_member(self, gid: str, mid: str, deadline_ms: int) -> None:
        self.timers.schedule(
            ("pending", gid, mid), deadline_ms, lambda now, fx: self._on_pending_member_expired(gid, mid, now, fx)
        )

    def rearm_session(self, group: ClassicGroup, member: ClassicMember, now_ms: int) -> None:
        gid, mid = group.group_id, member.member_id
        key = ("session", gid, mid)
        if member.join_token is not None or member.sync_token is not None:
            self.timers.cancel(key)
        else:
            self.timers.schedule(
                key, now_ms + member.session_timeout_ms, lambda now, fx: self._on_session_expired(gid, mid, now, fx)
            )

    def _remove_member(self, group: ClassicGroup, member: ClassicMember, fx: Effects) -> None:
        """Take a member out, answering its parked requests with UNKNOWN_MEMBER_ID."""
        unknown = E.UnknownMemberIdError.code
        if member.join_token is not None:
            fx.reply(member.join_token, JoinGroupResult(unknown, member_id=member.member_id))
            member.join_token = None
        if member.sync_token is not None:
            fx.reply(member.sync_token, SyncGroupResult(unknown))
            member.sync_token = None
        self.timers.cancel(("session", group.group_id, member.member_id))
        group.remove(member.member_id)

    def _remove_member_and_update_group(
        self, group: ClassicGroup, member: ClassicMember, now_ms: int, fx: Effects
    ) -> None:
        self._remove_member(group, member, fx)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms, fx)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now_ms, fx)

    def _on_session_expired(self, gid: str, mid: str, now_ms: int, fx: Effects) -> None:
        group = self.groups.get(gid)
        if not isinstance(group, ClassicGroup):
            return
        member = group.members.get(mid)
        if member is None or member.join_token is not None or member.sync_token is not None:
            return
        log.info("member %s of group %s failed: session timeout", mid, gid)
        self._remove_member_and_update_group(group, member, now_ms, fx)

    def _on_pending_member_expired(self, gid: str, mid: str, now_ms: int, fx: Effects) -> None:
        group = self.groups.get(gid)
        if isinstance(group, ClassicGroup) and mid in group.pending_members:
            group.pending_members.discard(mid)
            self._maybe_complete_join(group, now_ms, fx)

    def _group_metadata_record(
        self, group: ClassicGroup, assignments: Mapping[str, bytes] | None = None
    ) -> CoordinatorRecord:
        protocol = group.protocol_name
        value = {
            "protocol_type": group.protocol_type or "",
            "generation": group.generation_id,
            "protocol": protocol,
            "leader": group.leader_id,
            "current_state_timestamp": group.state_timestamp,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "rebalance_timeout": m.rebalance_timeout_ms,
                    "session_timeout": m.session_timeout_ms,
                    "subscription": m.metadata(protocol),
                    "assignment": assignments.get(m.member_id, b"")
                    if assignments is not None
                    else m.assignment,
                }
                for m in group.members.values()
            ],
        }
        from zurau.coordinator.group.group_metadata_record import VALUE_VERSION

        return CoordinatorRecord(R.GROUP_METADATA, {"group": group.group_id}, VALUE_VERSION, value)

    def _convert_to_classic(self, group: ConsumerGroup, now_ms: int, fx: Effects) -> None:
        """An empty consumer group becomes a classic group (its offsets stay)."""
        gid = group.group_id
        self.ctx.drop_group(gid)
        records = [
            CoordinatorRecord(R.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": gid}),
            CoordinatorRecord(R.CONSUMER_GROUP_METADATA, {"group_id": gid}),
        ]
        self.ctx.write(fx, gid, records, lambda err, now, fx2: None)

    # ================================================================== classic: SyncGroup
    def sync_group(
        self,
        token: Any,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        now_ms: int,
    ) -> Effects:
        fx = Effects()
        try:
            if not group_id:
                raise E.InvalidGroupIdError("the group id must not be empty")
            group = self.groups.get(group_id)
            if not isinstance(group, ClassicGroup):
                raise E.UnknownMemberIdError(f"group {group_id} is not a classic group with members")
            if group.is_in(GroupState.DEAD):
                raise E.CoordinatorNotAvailableError(f"group {group_id} is being deleted")
            group.validate_member(member_id, group_instance_id)
            if generation_id != group.generation_id:
                raise E.IllegalGenerationError(f"generation {generation_id} is not {group.generation_id}")
            if protocol_type is not None and protocol_type != group.protocol_type:
                raise E.InconsistentGroupProtocolError(
                    f"protocol type {protocol_type} is not {group.protocol_type}"
                )
            if protocol_name is not None and protocol_name != group.protocol_name:
                raise E.InconsistentGroupProtocolError(
                    f"protocol {protocol_name} is not {group.protocol_name}"
                )
            member = group.members[member_id]
            if group.is_in(GroupState.PREPARING_REBALANCE):
                raise E.RebalanceInProgressError(f"group {group_id} is rebalancing")
            if group.is_in(GroupState.STABLE):
                group.pending_sync.discard(member_id)
                fx.reply(
                    token, SyncGroupResult(0, group.protocol_type, group.protocol_name, member.assignment)
                )
                self.rearm_session(group, member, now_ms)
                return fx
            if not group.is_in(GroupState.COMPLETING_REBALANCE):
                raise E.UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
            if member.sync_token is not None:
                fx.reply(member.sync_token, SyncGroupResult(E.RebalanceInProgressError.code))
            member.sync_token = token
            self.timers.cancel(("session", group_id, member_id))
            group.pending_sync.discard(member_id)
            if member_id == group.leader_id:
                assigned = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}
                generation = group.generation_id

                def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
                    if (
                        self.groups.get(group_id) is not group
                        or not group.is_in(GroupState.COMPLETING_REBALANCE)
                        or group.generation_id != generation
                    ):
                        return
                    if err is not None:
                        code = write_error(err, for_offsets=False).code
                        self._reset_and_propagate(group, code, now, fx2)
                        self._prepare_rebalance(group, now, fx2)
                        return
                    for mid, data in assigned.items():
                        if mid in group.members:
                            group.members[mid].assignment = data
                    self._propagate_assignment(group, 0, now, fx2)
                    group.transition_to(GroupState.STABLE, now)
                    if not group.pending_sync:
                        self.timers.cancel(("sync", group_id))

                self.ctx.write(fx, group_id, [self._group_metadata_record(group, assigned)], stored)
        except E.KafkaError as e:
            fx.reply(token, SyncGroupResult(e.code))
        return fx

    # ================================================================== classic: Heartbeat
    def heartbeat(
        self,
        token: Any,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> Effects:
        fx = Effects()
        fx.reply(token, self._heartbeat(group_id, generation_id, member_id, group_instance_id, now_ms))
        return fx

    def _heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None, now_ms: int
    ) -> int:
        if not group_id:
            return E.InvalidGroupIdError.code
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            return E.UnknownMemberIdError.code
        if group.is_in(GroupState.DEAD):
            return E.CoordinatorNotAvailableError.code
        try:
            group.validate_member(member_id, instance_id)
        except E.KafkaError as e:
            return e.code
        if generation_id != group.generation_id:
            return E.IllegalGenerationError.code
        member = group.members[member_id]
        self.rearm_session(group, member, now_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return E.RebalanceInProgressError.code
        if group.is_in(GroupState.EMPTY):
            return E.UnknownMemberIdError.code
        return 0

    # ================================================================== classic: LeaveGroup
    def leave_group(
        self, token: Any, *, group_id: str, members: list[tuple[str, str | None]], now_ms: int
    ) -> Effects:
        fx = Effects()
        if not group_id:
            fx.reply(token, LeaveGroupResult(E.InvalidGroupIdError.code))
            return fx
        group = self.groups.get(group_id)
        unknown = E.UnknownMemberIdError.code
        if not isinstance(group, ClassicGroup):
            fx.reply(token, LeaveGroupResult(0, [(mid, iid, unknown) for mid, iid in members]))
            return fx
        if group.is_in(GroupState.DEAD):
            fx.reply(token, LeaveGroupResult(E.CoordinatorNotAvailableError.code))
            return fx
        # Each result echoes the member id and instance id as requested.
        results: list[tuple[str, str | None, int]] = []
        for requested, iid in members:
            mid = requested
            if iid is not None:
                current = group.static_members.get(iid)
                if current is None:
                    results.append((requested, iid, unknown))
                    continue
                if mid and mid != current:
                    results.append((requested, iid, E.FencedInstanceIdError.code))
                    continue
                mid = current
            if mid in group.pending_members:
                group.pending_members.discard(mid)
                self.timers.cancel(("pending", group_id, mid))
                results.append((requested, iid, 0))
                self._maybe_complete_join(group, now_ms, fx)
                continue
            member = group.members.get(mid)
            if member is None:
                results.append((requested, iid, unknown))
                continue
            log.info("member %s leaves group %s", mid, group_id)
            self._remove_member_and_update_group(group, member, now_ms, fx)
            results.append((requested, iid, 0))
        fx.reply(token, LeaveGroupResult(0, results))
        return fx

    # ================================================================== offsets and replay
    def validate_offset_commit(
        self,
        group: ClassicGroup,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
        now_ms: int,
        transactional: bool = False,
    ) -> None:
        """Kafka's ClassicGroup.validateOffsetCommit (``transactional``: for TxnOffsetCommit)."""
        if group.is_in(GroupState.DEAD):
            raise E.CoordinatorNotAvailableError(f"group {group.group_id} is being deleted")
        if generation_id < 0 and group.is_in(GroupState.EMPTY):
            return  # a group used only to store offsets (standalone consumers, admin tools)
        if generation_id >= 0 or member_id or instance_id is not None:
            group.validate_member(member_id, instance_id)
            if generation_id != group.generation_id:
                raise E.IllegalGenerationError(f"generation {generation_id} is not {group.generation_id}")
        elif not transactional and not group.is_in(GroupState.EMPTY):
            raise E.UnknownMemberIdError(f"group {group.group_id} has members; commits need a member id")
        if not transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
            raise E.RebalanceInProgressError(f"group {group.group_id} is completing a rebalance")
        if member_id in group.members:
            self.rearm_session(group, group.members[member_id], now_ms)

    def replay_group_metadata(self, rec: CoordinatorRecord) -> None:
        gid = rec.key["group"]
        existing = self.groups.get(gid)
        if rec.value is None:
            if isinstance(existing, ClassicGroup):
                self.ctx.drop_group(gid)
            return
        if existing is not None and not self.ctx.loading:
            return  # our own checkpoint of a live group: the group already reflects it
        v = rec.value
        members = v["members"]
        group = ClassicGroup(
            gid,
            state=GroupState.STABLE if members else GroupState.EMPTY,
            state_timestamp=v.get("current_state_timestamp", -1),
            protocol_type=v["protocol_type"] or None,
            protocol_name=v["protocol"] if members else None,
            generation_id=v["generation"],
        )
        for m in members:
            group.add(
                ClassicMember(
                    member_id=m["member_id"],
                    group_instance_id=m.get("group_instance_id"),
                    client_id=m["client_id"],
                    client_host=m["client_host"],
                    rebalance_timeout_ms=m.get("rebalance_timeout") or m["session_timeout"],
                    session_timeout_ms=m["session_timeout"],
                    protocol_type=group.protocol_type or "",
                    protocols=[(v["protocol"] or "", bytes(m["subscription"]))],
                    assignment=bytes(m["assignment"]),
                )
            )
        group.leader_id = v["leader"] if v["leader"] in group.members else next(iter(group.members), None)
        if existing is not None:
            self.ctx.drop_group(gid)
        self.groups[gid] = group
