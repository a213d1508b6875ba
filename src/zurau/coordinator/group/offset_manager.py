"""Committed offsets of the groups of one shard (Kafka's ``OffsetMetadataManager``).

OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, offset retention and the offsets of
deleted topics. Committed offsets change only by replaying committed records
(:meth:`OffsetManager.replay_offset`). A TxnOffsetCommit's offsets are *pending* until their
producer's marker reaches the partition (:meth:`OffsetManager.complete_transaction`): then they
become committed offsets, unless a newer commit of the same partition superseded them, or are
dropped.

Narrow references: the shard's :class:`~.shard_context.GroupShardContext` (groups, config,
writes) and, for commits against a classic group, Kafka's ``ClassicGroup.validateOffsetCommit``
(:meth:`~.classic_groups.ClassicGroupManager.validate_offset_commit`), passed in as one callable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zurau.coordinator.group import records as R
from zurau.coordinator.group.consumer_group import ConsumerGroup
from zurau.coordinator.group.group_metadata import ClassicGroup, GroupState
from zurau.coordinator.group.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import (
    Effects,
    FetchedOffset,
    OffsetCommitEntry,
    OffsetFetchResult,
    Write,
    offset_record,
)
from zurau.coordinator.group.shard_context import GroupShardContext, group_tombstones, is_deletable
from zurau.coordinator.group.share_group import ShareGroup
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.coordinator")

# Kafka's ClassicGroup.validateOffsetCommit: (group, member id, generation, instance id, now,
# transactional) -> None, or raises the commit's error.
ClassicCommitValidator = Callable[[ClassicGroup, str, int, str | None, int, bool], None]


@dataclass
class PendingTxnOffset:
    """A TxnOffsetCommit stored but not yet committed by its producer's COMMIT marker.

    ``seq`` orders pending commits of one group by their place in the log; ``superseded`` is set
    when a newer commit of the same partition (a plain one, or another producer's transaction
    committed first) made this one stale, so that its marker must not overwrite the newer offset
    (Kafka compares the records' log offsets to the same effect).
    """

    offset: OffsetAndMetadata
    seq: int
    superseded: bool = False


class OffsetManager:
    def __init__(self, ctx: GroupShardContext, validate_classic_commit: ClassicCommitValidator) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.topics = ctx.topics
        self.groups = ctx.groups
        self._validate_classic_commit = validate_classic_commit
        self.offsets: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = {}
        # group -> partition -> producer id -> its pending transactional commit
        self.pending_txn_offsets: dict[str, dict[TopicPartitionKey, dict[int, PendingTxnOffset]]] = {}
        self._txn_groups: dict[int, set[str]] = {}  # producer id -> groups it has pending offsets in
        self._txn_seq = 0

    def unload_partition(self, partition: int) -> None:
        """Forget the offsets and pending transactional offsets of the groups of ``partition``."""
        mine = self.ctx.partition_for
        for gid in [g for g in self.offsets if mine(g) == partition]:
            del self.offsets[gid]
        for gid in [g for g in self.pending_txn_offsets if mine(g) == partition]:
            del self.pending_txn_offsets[gid]
        for pid in list(self._txn_groups):
            gids = self._txn_groups[pid]
            gids.difference_update([g for g in gids if mine(g) == partition])
            if not gids:
                del self._txn_groups[pid]

    def replay_offset(self, rec: CoordinatorRecord) -> None:
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

    def replay_pending(self, producer_id: int, rec: CoordinatorRecord) -> None:
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
            if partitions is not None and self.ctx.partition_for(gid) not in partitions:
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
            elif isinstance(group, ShareGroup):
                raise E.GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
            elif isinstance(group, ClassicGroup):
                self._validate_classic_commit(group, member_id, generation_id, group_instance_id, now_ms, True)
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
            Write(group_id, self.ctx.partition_for(group_id), records, stored, producer_id, producer_epoch)
        )
        return fx

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
            elif isinstance(group, ShareGroup):
                raise E.GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
            elif isinstance(group, ClassicGroup):
                self._validate_classic_commit(group, member_id, generation_id, group_instance_id, now_ms, False)
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

        self.ctx.write(fx, group_id, records, stored)
        return fx

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
            if isinstance(group, ShareGroup):
                raise E.GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
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

        self.ctx.write(fx, group_id, records, stored)
        return fx

    def expire_offsets(self, now_ms: int, fx: Effects, partition: int) -> None:
        """Kafka's cleanupGroupMetadata for the groups of ``partition``: expire offsets, then
        delete empty groups without offsets."""
        retention = self.config.offsets_retention_ms
        for gid in sorted(set(self.groups) | set(self.offsets)):
            if self.ctx.partition_for(gid) != partition:
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
            if remaining == 0 and not pending and group is not None and is_deletable(group):
                records += group_tombstones(group)
            if records:
                log.info("group %s: %d offsets expired", gid, len(expired))
                self.ctx.write(fx, gid, records, lambda err, now, fx2: None)

    def delete_topic_offsets(self, topic: str, now_ms: int, partition: int | None = None) -> Effects:
        """A topic was deleted: drop the groups' committed offsets for it (Kafka does the same).

        ``partition``: only the groups of that ``__consumer_offsets`` partition (None: all).
        """
        fx = Effects()
        for gid in sorted(self.offsets):
            if partition is not None and self.ctx.partition_for(gid) != partition:
                continue
            doomed = [tp for tp in self.offsets[gid] if tp[0] == topic]
            if doomed:
                records = [offset_record(gid, tp, None) for tp in sorted(doomed)]
                self.ctx.write(fx, gid, records, lambda err, now, fx2: None)
        return fx
