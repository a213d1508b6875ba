"""The group coordinator as a pure state machine (docs/architecture.md): no sockets, no clocks.

Every entry point takes the request's data and ``now_ms`` and returns :class:`Effects`:

* ``replies``: ``(token, result)`` pairs. The caller hands each request a token; a reply may come
  at once, or later from another call (a JoinGroup is answered when the join phase completes, a
  SyncGroup once the leader's assignment is stored).
* ``writes``: records to append to a ``__consumer_offsets`` partition. The shell appends them and
  calls :meth:`GroupCoordinator.complete_write` once they are committed (below the high
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

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from zurau.coordinator import records as R
from zurau.coordinator.base import Group, PendingTxnOffset
from zurau.coordinator.classic_protocol import ClassicProtocol
from zurau.coordinator.consumer_group import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    from_topic_partitions,
    member_topic_names,
)
from zurau.coordinator.consumer_protocol import ConsumerProtocol
from zurau.coordinator.group_metadata import ClassicGroup, ClassicMember, GroupState
from zurau.coordinator.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.records import CoordinatorRecord, LogEntry, TransactionalRecord, TxnMarker
from zurau.coordinator.results import (
    ConsumerGroupHeartbeatResult,
    CoordinatorConfig,
    DescribedGroup,
    DescribedMember,
    Effects,
    FetchedOffset,
    JoinGroupResult,
    LeaveGroupResult,
    ListedGroup,
    OffsetCommitEntry,
    OffsetFetchResult,
    SyncGroupResult,
    Write,
    offset_record,
    write_error,
)
from zurau.protocol import errors as E
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.coordinator")


class GroupCoordinator(ClassicProtocol, ConsumerProtocol):
    """The group coordinator: classic and KIP-848 protocols, offsets, replay, admin (see module doc)."""

    def complete_write(self, write: Write, error: E.KafkaError | None, now_ms: int) -> Effects:
        """The shell reports a write's outcome: replay its records if committed, continue.

        A transactional write's offsets become pending (see :meth:`complete_transaction`).
        """
        if error is None:
            for rec in write.records:
                if write.producer_id >= 0:
                    self._replay_pending(write.producer_id, rec)
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
                    self._rearm_session(group, m, now_ms)
            else:
                if group.state_timestamp < 0:
                    group.state_timestamp = now_ms  # retention of an empty group counts from here
                for cm in group.members.values():
                    self._cg_schedule_session(group.group_id, cm.member_id, now_ms)
                    if cm.state == MemberState.UNREVOKED_PARTITIONS:
                        self._cg_schedule_revocation(group.group_id, cm, now_ms)
        self.timers.schedule(
            ("retention", partition), now_ms + self.config.offsets_retention_check_interval_ms
        )
        return Effects()

    def poll(self, now_ms: int, partition: int) -> Effects:
        """Fire every timer of ``partition`` due at ``now_ms``."""
        fx = Effects()
        for key in self.timers.expired(now_ms, partition):
            kind = key[0]  # type: ignore[index]
            if kind == "session":
                self._on_session_expired(key[1], key[2], now_ms, fx)  # type: ignore[index]
            elif kind == "pending":
                self._on_pending_member_expired(key[1], key[2], now_ms, fx)  # type: ignore[index]
            elif kind == "join":
                self._on_join_deadline(key[1], now_ms, fx)  # type: ignore[index]
            elif kind == "sync":
                self._on_sync_deadline(key[1], now_ms, fx)  # type: ignore[index]
            elif kind in ("cg-session", "cg-revoke"):
                self._cg_on_timeout(key[1], key[2], kind, now_ms, fx)  # type: ignore[index]
            elif kind == "retention":
                self._expire_offsets(now_ms, fx, partition)
                self.timers.schedule(
                    ("retention", partition), now_ms + self.config.offsets_retention_check_interval_ms
                )
        return fx

    # ------------------------------------------------------------------ replay (persistent state)
    def load(self, records: Iterable[LogEntry | None]) -> None:
        """Replay committed records read from ``__consumer_offsets`` (latest record per key wins).

        May be called several times for one partition (a chunk of its log at a time), in log
        order. Transactional offset commits are pending until their producer's marker in the same
        partition (a :class:`TxnMarker` with its ``partition`` set); those still pending at the
        end wait for the transaction coordinator to complete their transaction.
        """
        self._loading = True
        try:
            for rec in records:
                if rec is None:
                    continue
                if isinstance(rec, TransactionalRecord):
                    self._replay_pending(rec.producer_id, rec.record)
                elif isinstance(rec, TxnMarker):
                    parts = {rec.partition} if rec.partition >= 0 else None
                    self.complete_transaction(rec.producer_id, parts, rec.commit)
                else:
                    self.replay(rec)
        finally:
            self._loading = False

    def replay(self, rec: CoordinatorRecord) -> None:
        kv = rec.key_version
        if kv in (0, R.OFFSET_COMMIT):
            self._replay_offset(rec)
        elif kv == R.GROUP_METADATA:
            self._replay_group_metadata(rec)
        elif kv == R.CONSUMER_GROUP_PARTITION_METADATA:
            return
        else:
            self._replay_consumer_group(rec)

    def _replay_offset(self, rec: CoordinatorRecord) -> None:
        gid = rec.key["group"]
        tp = (rec.key["topic"], rec.key["partition"])
        if rec.value is None:
            offs = self.offsets.get(gid)
            if offs is not None:
                offs.pop(tp, None)
                if not offs:
                    del self.offsets[gid]
            return
        om = OffsetAndMetadata.from_value(rec.value, rec.value_version)
        self.offsets.setdefault(gid, {})[tp] = om
        for pending in self.pending_txn_offsets.get(gid, {}).get(tp, {}).values():
            pending.superseded = True  # this plain commit is newer than every pending one
        if gid not in self.groups:
            # Offsets without a group: a "simple" group (standalone consumers, admin commits).
            self.groups[gid] = ClassicGroup(gid, state_timestamp=om.commit_timestamp)

    def _replay_group_metadata(self, rec: CoordinatorRecord) -> None:
        gid = rec.key["group"]
        existing = self.groups.get(gid)
        if rec.value is None:
            if isinstance(existing, ClassicGroup):
                self._drop_group(gid)
            return
        if existing is not None and not self._loading:
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
            self._drop_group(gid)
        self.groups[gid] = group

    def _replay_consumer_group(self, rec: CoordinatorRecord) -> None:
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
                self._drop_group(gid)
            group = ConsumerGroup(gid)
            self.groups[gid] = group
        v = rec.value
        if kv == R.CONSUMER_GROUP_METADATA:
            if v is None:
                self._drop_group(gid)
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

    # ------------------------------------------------------------------ transactional offsets
    def _replay_pending(self, producer_id: int, rec: CoordinatorRecord) -> None:
        """A committed record of a transactional batch: pending until the producer's marker."""
        if rec.key_version not in (0, R.OFFSET_COMMIT) or rec.value is None:
            return  # TxnOffsetCommit writes offset commits only
        gid = rec.key["group"]
        tp = (rec.key["topic"], rec.key["partition"])
        om = OffsetAndMetadata.from_value(rec.value, rec.value_version)
        self._txn_seq += 1
        self.pending_txn_offsets.setdefault(gid, {}).setdefault(tp, {})[producer_id] = PendingTxnOffset(
            om, self._txn_seq
        )
        self._txn_groups.setdefault(producer_id, set()).add(gid)
        if gid not in self.groups:
            self.groups[gid] = ClassicGroup(gid, state_timestamp=om.commit_timestamp)

    def complete_transaction(self, producer_id: int, partitions: set[int] | None, commit: bool) -> None:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id`` was appended to these
        ``__consumer_offsets`` partitions (None: all): its pending offsets in the groups there
        become committed offsets (unless a newer commit superseded them) or are dropped."""
        gids = self._txn_groups.get(producer_id)
        if not gids:
            return
        for gid in sorted(gids):
            if partitions is not None and self.partition_for(gid) not in partitions:
                continue
            gids.discard(gid)
            by_tp = self.pending_txn_offsets.get(gid, {})
            for tp in sorted(by_tp):
                producers = by_tp[tp]
                mine = producers.pop(producer_id, None)
                if mine is not None and commit and not mine.superseded:
                    self.offsets.setdefault(gid, {})[tp] = mine.offset
                    for other in producers.values():
                        if other.seq < mine.seq:
                            other.superseded = True
                if not producers:
                    del by_tp[tp]
            if not by_tp:
                self.pending_txn_offsets.pop(gid, None)
        if not gids:
            del self._txn_groups[producer_id]

    def has_pending_offsets(self, group_id: str, tp: TopicPartitionKey | None = None) -> bool:
        """True if a transaction has an uncommitted offset commit for the group (and partition)."""
        pending = self.pending_txn_offsets.get(group_id)
        if not pending:
            return False
        return tp is None or tp in pending

    def commit_txn_offsets(
        self,
        token: Any,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: list[OffsetCommitEntry],
        now_ms: int,
    ) -> Effects:
        """TxnOffsetCommit: store offsets inside the producer's transaction.

        Reply: ``{(topic, partition): error_code}``. The records are appended as one
        transactional batch of ``producer_id``/``producer_epoch`` (the log fences an older epoch
        and, with partition verification, refuses a partition outside the producer's ongoing
        transaction); they stay pending (OffsetFetch with require_stable answers
        UNSTABLE_OFFSET_COMMIT) until the transaction's marker reaches the partition.
        Group checks are Kafka's for transactional commits: member id and generation are
        checked only when given (older clients send none).
        """
        fx = Effects()
        keys = [(o.topic, o.partition) for o in offsets]
        try:
            if not group_id:
                raise E.InvalidGroupIdError("the group id must not be empty")
            group = self.groups.get(group_id)
            if group is None:
                if generation_id >= 0:
                    raise E.IllegalGenerationError(f"group {group_id} does not exist")
            elif isinstance(group, ClassicGroup):
                self._validate_classic_commit(
                    group, member_id, generation_id, group_instance_id, now_ms, transactional=True
                )
            elif not (generation_id < 0 and not group.members) and not (
                generation_id == -1 and not member_id and group_instance_id is None
            ):
                cm = group.members.get(member_id)
                if cm is None:
                    raise E.UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
                if generation_id != cm.member_epoch:
                    raise E.IllegalGenerationError(
                        f"member epoch {generation_id} is not the current epoch {cm.member_epoch}"
                    )
        except E.KafkaError as e:
            fx.reply(token, dict.fromkeys(keys, e.code))
            return fx
        result: dict[TopicPartitionKey, int] = {}
        records: list[CoordinatorRecord] = []
        max_meta = self.config.offset_metadata_max_bytes
        for o in offsets:
            meta = o.metadata or ""
            if len(meta.encode("utf-8", "surrogatepass")) > max_meta:
                result[(o.topic, o.partition)] = E.OffsetMetadataTooLargeError.code
                continue
            om = OffsetAndMetadata(o.offset, o.leader_epoch, meta, now_ms, -1)
            records.append(offset_record(group_id, (o.topic, o.partition), om))
            result[(o.topic, o.partition)] = 0
        if not records:
            fx.reply(token, result)
            return fx

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=True).code
                for k, c in result.items():
                    if c == 0:
                        result[k] = code
            fx2.reply(token, result)

        fx.writes.append(
            Write(group_id, self.partition_for(group_id), records, stored, producer_id, producer_epoch)
        )
        return fx

    # ================================================================== offsets
    def commit_offsets(
        self,
        token: Any,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: list[OffsetCommitEntry],
        retention_ms: int = -1,
        api_version: int = 8,
        now_ms: int,
    ) -> Effects:
        """Reply: ``{(topic, partition): error_code}`` for every entry."""
        fx = Effects()
        keys = [(o.topic, o.partition) for o in offsets]
        try:
            if not group_id:
                raise E.InvalidGroupIdError("the group id must not be empty")
            group = self.groups.get(group_id)
            if group is None:
                if generation_id >= 0 or member_id or group_instance_id is not None:
                    if api_version >= 9:
                        raise E.GroupIdNotFoundError(f"group {group_id} does not exist")
                    raise E.IllegalGenerationError(f"group {group_id} does not exist")
            elif isinstance(group, ClassicGroup):
                self._validate_classic_commit(group, member_id, generation_id, group_instance_id, now_ms)
            else:
                if generation_id >= 0 or member_id or group.members:
                    cm = group.members.get(member_id)
                    if cm is None:
                        raise E.UnknownMemberIdError(f"member {member_id} is not in group {group_id}")
                    if generation_id != cm.member_epoch:
                        raise E.StaleMemberEpochError(
                            f"member epoch {generation_id} is not the current epoch {cm.member_epoch}"
                        )
        except E.KafkaError as e:
            fx.reply(token, dict.fromkeys(keys, e.code))
            return fx
        result: dict[TopicPartitionKey, int] = {}
        records: list[CoordinatorRecord] = []
        max_meta = self.config.offset_metadata_max_bytes
        for o in offsets:
            meta = o.metadata or ""
            if len(meta.encode("utf-8", "surrogatepass")) > max_meta:
                result[(o.topic, o.partition)] = E.OffsetMetadataTooLargeError.code
                continue
            expire = now_ms + retention_ms if retention_ms >= 0 else -1
            om = OffsetAndMetadata(o.offset, o.leader_epoch, meta, now_ms, expire)
            records.append(offset_record(group_id, (o.topic, o.partition), om))
            result[(o.topic, o.partition)] = 0
        if not records:
            fx.reply(token, result)
            return fx

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=True).code
                for k, c in result.items():
                    if c == 0:
                        result[k] = code
            fx2.reply(token, result)

        self._write(fx, group_id, records, stored)
        return fx

    def _validate_classic_commit(
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
            self._rearm_session(group, group.members[member_id], now_ms)

    def fetch_offsets(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
        require_stable: bool = False,
    ) -> OffsetFetchResult:
        """Committed offsets (-1 and "" where none); ``topics=None`` means every committed one.

        ``require_stable`` (OffsetFetch v7+): a partition with a transactional commit still
        pending answers UNSTABLE_OFFSET_COMMIT (retriable) instead of an offset.
        """
        if not group_id:
            return OffsetFetchResult(E.InvalidGroupIdError.code)
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and member_id is not None:
            cm = group.members.get(member_id)
            if cm is None:
                return OffsetFetchResult(E.UnknownMemberIdError.code)
            if member_epoch != cm.member_epoch:
                return OffsetFetchResult(E.StaleMemberEpochError.code)
        offs = self.offsets.get(group_id, {})
        pending = self.pending_txn_offsets.get(group_id, {}) if require_stable else {}
        unstable = E.UnstableOffsetCommitError.code
        out: list[tuple[str, list[FetchedOffset]]] = []
        if topics is None:
            by_topic: dict[str, list[FetchedOffset]] = {}
            for (t, p), om in sorted(offs.items()):
                if (t, p) in pending:
                    by_topic.setdefault(t, []).append(FetchedOffset(p, -1, -1, "", unstable))
                    continue
                by_topic.setdefault(t, []).append(FetchedOffset(p, om.offset, om.leader_epoch, om.metadata))
            out = list(by_topic.items())
        else:
            for t, parts in topics:
                lst = []
                for p in parts:
                    found = offs.get((t, p))
                    if (t, p) in pending:
                        lst.append(FetchedOffset(p, -1, -1, "", unstable))
                    elif found is None:
                        lst.append(FetchedOffset(p, -1, -1, ""))
                    else:
                        lst.append(FetchedOffset(p, found.offset, found.leader_epoch, found.metadata))
                out.append((t, lst))
        return OffsetFetchResult(0, out)

    def delete_offsets(
        self, token: Any, *, group_id: str, partitions: list[TopicPartitionKey], now_ms: int
    ) -> Effects:
        """OffsetDelete. Reply: ``(error_code, {(topic, partition): error_code})``."""
        fx = Effects()
        group = self.groups.get(group_id) if group_id else None
        try:
            if not group_id:
                raise E.InvalidGroupIdError("the group id must not be empty")
            if group is None or (isinstance(group, ClassicGroup) and group.is_in(GroupState.DEAD)):
                raise E.GroupIdNotFoundError(f"group {group_id} does not exist")
            subscribed: set[str] | None
            if isinstance(group, ClassicGroup):
                if group.is_in(GroupState.EMPTY):
                    subscribed = set()
                elif group.protocol_type == "consumer":
                    subscribed = group.subscribed_topics()
                else:
                    raise E.NonEmptyGroupError(f"group {group_id} is not empty")
            else:
                subscribed = group.subscribed_topic_names(self.topics)
        except E.KafkaError as e:
            fx.reply(token, (e.code, {}))
            return fx
        offs = self.offsets.get(group_id, {})
        result: dict[TopicPartitionKey, int] = {}
        records = []
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                result[tp] = E.GroupSubscribedToTopicError.code
                continue
            result[tp] = 0
            if tp in offs:
                records.append(offset_record(group_id, tp, None))
        if not records:
            fx.reply(token, (0, result))
            return fx

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                fx2.reply(token, (write_error(err, for_offsets=True).code, {}))
            else:
                fx2.reply(token, (0, result))

        self._write(fx, group_id, records, stored)
        return fx

    # ------------------------------------------------------------------ retention
    def _expire_offsets(self, now_ms: int, fx: Effects, partition: int) -> None:
        """Kafka's cleanupGroupMetadata for the groups of ``partition``: expire offsets, then
        delete empty groups without offsets."""
        retention = self.config.offsets_retention_ms
        for gid in sorted(set(self.groups) | set(self.offsets)):
            if self.partition_for(gid) != partition:
                continue
            group = self.groups.get(gid)
            offs = self.offsets.get(gid, {})
            expired: list[TopicPartitionKey] = []
            base_state: int | None = None
            subscribed: set[str] | None = None
            only_unsubscribed = False
            if isinstance(group, ClassicGroup):
                if group.is_in(GroupState.EMPTY):
                    if group.protocol_type:
                        base_state = group.state_timestamp
                elif group.protocol_type == "consumer" and group.is_in(GroupState.STABLE):
                    # Offsets of topics no member subscribes to expire by commit time.
                    subscribed = group.subscribed_topics()
                    if subscribed is None:
                        continue  # subscriptions we cannot read: keep everything
                    only_unsubscribed = True
                else:
                    continue
            elif isinstance(group, ConsumerGroup):
                if group.members:
                    subscribed = group.subscribed_topic_names(self.topics)
                    only_unsubscribed = True
                else:
                    base_state = group.state_timestamp
            pending = self.pending_txn_offsets.get(gid, {})
            for tp, om in offs.items():
                if tp in pending:
                    continue  # a transaction is about to replace it
                if om.expire_timestamp >= 0:
                    if now_ms >= om.expire_timestamp:
                        expired.append(tp)
                    continue
                if only_unsubscribed and subscribed is not None and tp[0] in subscribed:
                    continue
                base = om.commit_timestamp if base_state is None else max(om.commit_timestamp, base_state)
                if base + retention <= now_ms:
                    expired.append(tp)
            records = [offset_record(gid, tp, None) for tp in expired]
            remaining = len(offs) - len(expired)
            if remaining == 0 and not pending and group is not None and self._is_deletable(group):
                records += self._group_tombstones(group)
            if records:
                log.info("group %s: %d offsets expired", gid, len(expired))
                self._write(fx, gid, records, lambda err, now, fx2: None)

    @staticmethod
    def _is_deletable(group: Group) -> bool:
        if isinstance(group, ClassicGroup):
            return group.is_in(GroupState.EMPTY) and not group.pending_members
        return not group.members

    @staticmethod
    def _group_tombstones(group: Group) -> list[CoordinatorRecord]:
        gid = group.group_id
        if isinstance(group, ClassicGroup):
            return [CoordinatorRecord(R.GROUP_METADATA, {"group": gid})]
        return [
            CoordinatorRecord(R.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": gid}),
            CoordinatorRecord(R.CONSUMER_GROUP_PARTITION_METADATA, {"group_id": gid}),
            CoordinatorRecord(R.CONSUMER_GROUP_METADATA, {"group_id": gid}),
        ]

    def delete_topic_offsets(self, topic: str, now_ms: int, partition: int | None = None) -> Effects:
        """A topic was deleted: drop the groups' committed offsets for it (Kafka does the same).

        ``partition``: only the groups of that ``__consumer_offsets`` partition (None: all).
        """
        fx = Effects()
        for gid in sorted(self.offsets):
            if partition is not None and self.partition_for(gid) != partition:
                continue
            doomed = [tp for tp in self.offsets[gid] if tp[0] == topic]
            if doomed:
                records = [offset_record(gid, tp, None) for tp in sorted(doomed)]
                self._write(fx, gid, records, lambda err, now, fx2: None)
        return fx

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
            elif not self._is_deletable(group):
                result[gid] = E.NonEmptyGroupError.code
            else:
                waiting.add(gid)
                records = [offset_record(gid, tp, None) for tp in sorted(self.offsets.get(gid, {}))]
                records += self._group_tombstones(group)

                def stored(err: E.KafkaError | None, now: int, fx2: Effects, gid: str = gid) -> None:
                    result[gid] = 0 if err is None else write_error(err, for_offsets=False).code
                    waiting.discard(gid)
                    if not waiting:
                        fx2.reply(token, result)

                self._write(fx, gid, records, stored)
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


__all__ = [
    "CoordinatorConfig",
    "ConsumerGroupHeartbeatResult",
    "DescribedGroup",
    "Effects",
    "FetchedOffset",
    "GroupCoordinator",
    "JoinGroupResult",
    "LeaveGroupResult",
    "ListedGroup",
    "OffsetCommitEntry",
    "OffsetFetchResult",
    "SyncGroupResult",
    "Write",
]
