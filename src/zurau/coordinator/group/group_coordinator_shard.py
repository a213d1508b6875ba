"""The group coordinator shard: a pure state machine (docs/architecture.md), no sockets, no clocks.

Kafka's ``GroupCoordinatorShard``: it composes a :class:`~.classic_groups.ClassicGroupManager`
(JoinGroup/SyncGroup/Heartbeat/LeaveGroup), a :class:`~.consumer_groups.ConsumerGroupManager`
(KIP-848 ConsumerGroupHeartbeat/ConsumerGroupDescribe), a :class:`~.share_group.ShareGroupManager`
(KIP-932 ShareGroupHeartbeat/ShareGroupDescribe, records 10-15), a
:class:`~.share_group_offsets.ShareGroupOffsetsManager` (the share-group admin steps) and an
:class:`~.offset_manager.OffsetManager` (committed and transactional offsets), which share only
a :class:`~.shard_context.GroupShardContext` (groups, timers, writes) and the narrow references
passed to them. The shard routes each entry point and each replayed record to its manager,
drives the partitions' timers and answers the admin APIs over all groups.

Every entry point takes the request's data and ``now_ms`` and returns :class:`Effects`:

* ``replies``: ``(token, result)`` pairs. The caller hands each request a token; a reply may come
  at once, or later from another call (a JoinGroup is answered when the join phase completes, a
  SyncGroup once the leader's assignment is stored).
* ``writes``: records to append to a ``__consumer_offsets`` partition. The shell appends them and
  calls :meth:`GroupCoordinatorShard.complete_write` once they are committed (below the high
  watermark) or the append failed; that replays the records (on success) and runs the
  continuation, which yields more effects. The shell releases the replies of the same effects
  only after their writes completed.

Timers are virtual and kept per ``__consumer_offsets`` partition: :meth:`next_deadline` says
when :meth:`poll` must next be called for a partition.

Persistent state (committed offsets, KIP-848 group state) changes only by replaying committed
records (:meth:`replay`), at run time and when a partition is loaded, so the state after a
reload equals the state before. Classic groups run their JoinGroup/SyncGroup protocol in memory
and checkpoint themselves with a GroupMetadata record at Kafka's points (assignment stored,
group became Empty, static member replaced, group deleted); a reload restores each group as of
its last checkpoint (Stable with its members, or Empty), with fresh session timers.

Partitions: a group and everything about it belongs to ``partition_for(group_id)``. The shell
loads a partition (:meth:`load` with its records, then :meth:`start_partition`) and unloads it
(:meth:`unload_partition`) independently of the others; every write of an input goes to the
partition of the group the input is about.

The shell feeds a partition's next input only once every write of the previous inputs of that
partition has completed (:meth:`complete_write`): the state machine reads its state as
committed, and KIP-848 heartbeats compute new records from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zurau.config.coordinator_views import GroupCoordinatorConfig
from zurau.coordinator.group import records as R
from zurau.coordinator.group.classic_groups import ClassicGroupManager
from zurau.coordinator.group.consumer_group import ConsumerGroup, MemberState, member_topic_names
from zurau.coordinator.group.consumer_groups import ConsumerGroupManager
from zurau.coordinator.group.group_metadata import ClassicGroup, GroupState
from zurau.coordinator.group.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.group.offset_manager import OffsetManager, PendingTxnOffset
from zurau.coordinator.group.records import CoordinatorRecord, LogEntry, TransactionalRecord, TxnMarker
from zurau.coordinator.group.results import (
    DescribedGroup,
    DescribedMember,
    Effects,
    GroupTimer,
    ListedGroup,
    Write,
    offset_record,
)
from zurau.coordinator.group.shard_context import (
    Group,
    GroupConfigLookup,
    GroupShardContext,
    group_tombstones,
    is_deletable,
)
from zurau.coordinator.group.share_group import ShareGroup, ShareGroupConfig, ShareGroupManager
from zurau.coordinator.group.share_group_offsets import ShareGroupOffsetsManager
from zurau.coordinator.timers import PartitionedTimers
from zurau.coordinator.topics import TopicsView
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.types import TopicPartitionKey


class GroupCoordinatorShard:
    """The group coordinator's state machine for the ``__consumer_offsets`` partitions served here."""

    def __init__(
        self,
        config: GroupCoordinatorConfig,
        topics: TopicsView,
        group_configs: GroupConfigLookup | None = None,
    ) -> None:
        """``group_configs``: each group's dynamic group config overrides (none when not given)."""
        self.ctx = ctx = GroupShardContext(config, topics, group_configs)
        self.classic = ClassicGroupManager(ctx)
        self.consumer = ConsumerGroupManager(ctx)
        self.share = ShareGroupManager(
            ctx,
            ShareGroupConfig(
                session_timeout_ms=config.share_session_timeout_ms,
                heartbeat_interval_ms=config.share_heartbeat_interval_ms,
                max_size=config.share_max_size,
                initialize_retry_interval_ms=config.share_initialize_retry_interval_ms,
            ),
        )
        self.share_offsets = ShareGroupOffsetsManager(ctx)
        self.offset_manager = OffsetManager(ctx, self.classic.validate_offset_commit)
        # The APIs, each served by one manager.
        self.join_group = self.classic.join_group
        self.sync_group = self.classic.sync_group
        self.heartbeat = self.classic.heartbeat
        self.leave_group = self.classic.leave_group
        self.consumer_group_heartbeat = self.consumer.consumer_group_heartbeat
        self.consumer_group_describe = self.consumer.consumer_group_describe
        self.share_group_heartbeat = self.share.share_group_heartbeat
        self.share_group_describe = self.share.share_group_describe
        # The share coordinator's answer to a heartbeat's ``to_initialize`` (InitializeShareGroupState).
        self.share_group_initialized = self.share.share_group_initialized
        self.share_group_uninitialized = self.share.share_group_uninitialized
        # The share-group admin steps (Describe/Alter/DeleteShareGroupOffsets, DeleteGroups).
        self.initialized_share_partitions = self.share_offsets.initialized
        self.alter_share_group_offsets = self.share_offsets.alter_offsets
        self.delete_share_group_offsets = self.share_offsets.delete_offsets
        self.share_group_offsets_deleted = self.share_offsets.deleted_offsets
        self.prepare_share_group_deletion = self.share_offsets.prepare_delete
        self.commit_offsets = self.offset_manager.commit_offsets
        self.commit_txn_offsets = self.offset_manager.commit_txn_offsets
        self.fetch_offsets = self.offset_manager.fetch_offsets
        self.delete_offsets = self.offset_manager.delete_offsets
        self.delete_topic_offsets = self.offset_manager.delete_topic_offsets
        self.complete_transaction = self.offset_manager.complete_transaction
        self.has_pending_offsets = self.offset_manager.has_pending_offsets

    # ------------------------------------------------------------------ shared state (read by tests, metrics)
    @property
    def config(self) -> GroupCoordinatorConfig:
        return self.ctx.config

    @property
    def topics(self) -> TopicsView:
        return self.ctx.topics

    @property
    def groups(self) -> dict[str, Group]:
        return self.ctx.groups

    @property
    def timers(self) -> PartitionedTimers[GroupTimer]:
        return self.ctx.timers

    @property
    def offsets(self) -> dict[str, dict[TopicPartitionKey, OffsetAndMetadata]]:
        return self.offset_manager.offsets

    @property
    def pending_txn_offsets(self) -> dict[str, dict[TopicPartitionKey, dict[int, PendingTxnOffset]]]:
        return self.offset_manager.pending_txn_offsets

    # ------------------------------------------------------------------ partitions
    def partition_for(self, group_id: str) -> int:
        return self.ctx.partition_for(group_id)

    def unload_partition(self, partition: int) -> None:
        """Forget the groups of ``partition``: members, offsets, pending transactional offsets, timers."""
        for gid in [g for g in self.groups if self.partition_for(g) == partition]:
            self.ctx.drop_group(gid)
        self.offset_manager.unload_partition(partition)
        self.timers.drop(partition)

    def complete_write(self, write: Write, error: E.KafkaError | None, now_ms: int) -> Effects:
        """The shell reports a write's outcome: replay its records if committed, continue.

        A transactional write's offsets become pending (see :meth:`complete_transaction`).
        """
        if error is None:
            for rec in write.records:
                if write.producer_id >= 0:
                    self.offset_manager.replay_pending(write.producer_id, rec)
                else:
                    self.replay(rec)
        fx = Effects()
        write.then(error, now_ms, fx)
        return fx

    def next_deadline(self, partition: int) -> int | None:
        """When :meth:`poll` must next run for ``partition`` (None: no timer)."""
        return self.timers.next_deadline(partition)

    def start_partition(self, partition: int, now_ms: int) -> Effects:
        """After loading ``partition``: arm the session timers of its members and its retention check."""
        for group in self.groups.values():
            if self.partition_for(group.group_id) != partition:
                continue
            if isinstance(group, ClassicGroup):
                for m in group.members.values():
                    self.classic.rearm_session(group, m, now_ms)
            elif isinstance(group, ShareGroup):
                for mid in group.members:
                    self.share.schedule_session(group.group_id, mid, now_ms)
            else:
                if group.state_timestamp < 0:
                    group.state_timestamp = now_ms  # retention of an empty group counts from here
                for cm in group.members.values():
                    self.consumer.schedule_session(group.group_id, cm.member_id, now_ms)
                    if cm.state == MemberState.UNREVOKED_PARTITIONS:
                        self.consumer.schedule_revocation(group.group_id, cm, now_ms)
        self._schedule_retention(partition, now_ms)
        return Effects()

    def _schedule_retention(self, partition: int, now_ms: int) -> None:
        """The periodic offset expiry of ``partition`` (``offsets.retention.check.interval.ms``)."""

        def fire(now: int, fx: Effects) -> None:
            self.offset_manager.expire_offsets(now, fx, partition)
            self._schedule_retention(partition, now)

        self.timers.schedule(
            ("retention", partition), now_ms + self.config.offsets_retention_check_interval_ms, fire
        )

    def poll(self, now_ms: int, partition: int) -> Effects:
        """Fire every timer of ``partition`` due at ``now_ms``."""
        fx = Effects()
        for fire in self.timers.expired(now_ms, partition):
            fire(now_ms, fx)
        return fx

    # ------------------------------------------------------------------ replay (persistent state)
    def load(self, records: Iterable[LogEntry | None]) -> None:
        """Replay committed records read from ``__consumer_offsets`` (latest record per key wins).

        May be called several times for one partition (a chunk of its log at a time), in log
        order. Transactional offset commits are pending until their producer's marker in the same
        partition (a :class:`TxnMarker` with its ``partition`` set); those still pending at the
        end wait for the transaction coordinator to complete their transaction.
        """
        self.ctx.loading = True
        try:
            for rec in records:
                if rec is None:
                    continue
                if isinstance(rec, TransactionalRecord):
                    self.offset_manager.replay_pending(rec.producer_id, rec.record)
                elif isinstance(rec, TxnMarker):
                    parts = {rec.partition} if rec.partition >= 0 else None
                    self.complete_transaction(rec.producer_id, parts, rec.commit)
                else:
                    self.replay(rec)
        finally:
            self.ctx.loading = False

    def replay(self, rec: CoordinatorRecord) -> None:
        """Apply one committed record to the manager that owns its key."""
        kv = rec.key_version
        if kv in (0, R.OFFSET_COMMIT):
            self.offset_manager.replay_offset(rec)
        elif kv == R.GROUP_METADATA:
            self.classic.replay_group_metadata(rec)
        elif kv == R.CONSUMER_GROUP_PARTITION_METADATA:
            return
        elif kv in R.SHARE_GROUP_RECORDS:
            self.share.replay_record(rec)
        else:
            self.consumer.replay_record(rec)

    # ================================================================== admin
    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        states = {s.lower() for s in states_filter}
        types = {t.lower() for t in types_filter}
        out = []
        for gid in sorted(self.groups):
            group = self.groups[gid]
            if isinstance(group, ClassicGroup):
                if group.is_in(GroupState.DEAD):
                    continue
                item = ListedGroup(gid, group.protocol_type or "", group.state.value, "classic")
            elif isinstance(group, ShareGroup):
                item = ListedGroup(gid, "share", group.state_name(), "share")
            else:
                item = ListedGroup(gid, "consumer", group.state_name(), "consumer")
            if states and item.state.lower() not in states:
                continue
            if types and item.group_type not in types:
                continue
            out.append(item)
        return out

    def describe_groups(self, group_ids: Iterable[str]) -> list[DescribedGroup]:
        out = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if not gid:
                out.append(
                    DescribedGroup(
                        gid, E.InvalidGroupIdError.code, "The group id must not be empty.", "", "", "", []
                    )
                )
            elif not isinstance(group, ClassicGroup) or group.is_in(GroupState.DEAD):
                msg = f"Group {gid} not found." if group is None else f"Group {gid} is not a classic group."
                out.append(DescribedGroup(gid, E.GroupIdNotFoundError.code, msg, "Dead", "", "", []))
            elif group.is_in(GroupState.STABLE):
                members = [
                    DescribedMember(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        m.metadata(group.protocol_name),
                        m.assignment,
                    )
                    for m in group.members.values()
                ]
                out.append(
                    DescribedGroup(
                        gid,
                        0,
                        None,
                        group.state.value,
                        group.protocol_type or "",
                        group.protocol_name or "",
                        members,
                    )
                )
            else:
                members = [
                    DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", b"")
                    for m in group.members.values()
                ]
                out.append(
                    DescribedGroup(gid, 0, None, group.state.value, group.protocol_type or "", "", members)
                )
        return out

    def delete_groups(self, token: Any, group_ids: list[str], now_ms: int) -> Effects:
        """DeleteGroups. Reply: ``{group_id: error_code}``.

        The shell passes the ids of one ``__consumer_offsets`` partition at a time.
        """
        fx = Effects()
        result: dict[str, int] = {}
        waiting: set[str] = set()
        for gid in group_ids:
            if gid in result or gid in waiting:
                continue
            group = self.groups.get(gid) if gid else None
            if not gid:
                result[gid] = E.InvalidGroupIdError.code
            elif group is None or (isinstance(group, ClassicGroup) and group.is_in(GroupState.DEAD)):
                result[gid] = E.GroupIdNotFoundError.code
            elif not is_deletable(group):
                result[gid] = E.NonEmptyGroupError.code
            else:
                waiting.add(gid)
                records = [offset_record(gid, tp, None) for tp in sorted(self.offsets.get(gid, {}))]
                records += group_tombstones(group)

                def stored(err: E.KafkaError | None, now: int, fx2: Effects, gid: str = gid) -> None:
                    result[gid] = 0 if err is None else write_error(err, for_offsets=False).code
                    waiting.discard(gid)
                    if not waiting:
                        fx2.reply(token, result)

                self.ctx.write(fx, gid, records, stored)
        if not waiting:
            fx.reply(token, result)
        return fx

    # ================================================================== introspection (tests, tools)
    def member_ids(self, group_id: str) -> list[str]:
        g = self.groups.get(group_id)
        return list(g.members) if g is not None else []

    def subscribed_topics_of(self, group_id: str) -> set[str]:
        g = self.groups.get(group_id)
        if isinstance(g, ConsumerGroup):
            return set().union(*(member_topic_names(m, self.topics) for m in g.members.values()))
        if isinstance(g, ClassicGroup):
            return g.subscribed_topics() or set()
        return set()
