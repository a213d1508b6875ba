"""The share-group admin half of the group coordinator shard (KIP-932): what the admin APIs
DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups need
of a share group's bookkeeping, as Kafka 4.2's ``GroupMetadataManager`` does it.

A share group's *start offsets* live in the share coordinator (``__share_group_state``); the
group coordinator only records which share partitions have state there (record 15:
initializing, initialized and deleting topics, see :mod:`.share_group`). Each admin operation is
therefore two-phased: a step here (a state-machine input that validates, writes record 15 and
says which share-group-state call to make), the share-coordinator call made by the service
(:class:`~zurau.coordinator.group.service.RuntimeGroupCoordinatorService`), and for some a
closing step here again:

==========================  ===================================================================
step                        semantics
==========================  ===================================================================
:meth:`initialized`         the initialized share partitions (DescribeShareGroupOffsets with
                            null topics reads their summaries)
:meth:`alter_offsets`       AlterShareGroupOffsets: the group must be empty (NON_EMPTY_GROUP);
                            a missing group is created (Kafka 4.2, KIP-1192: offsets may be set
                            before the group is first used). The group epoch is bumped and the
                            partitions not yet initialized become initializing; the service then
                            re-initializes every requested partition's state with the new epoch
                            as state epoch and the requested start offset, so a share-partition
                            leader still holding the old state is fenced (FENCED_STATE_EPOCH) on
                            its next write and reloads. Those initialized are then reported with
                            ``share_group_initialized`` (the heartbeat's path).
:meth:`delete_offsets`      DeleteShareGroupOffsets, first step: the group must exist (else
                            GROUP_ID_NOT_FOUND) and be empty; each initialized topic moves to
                            deleting and its partitions' state is to be deleted (a topic still
                            deleting from an earlier attempt: all its partitions again); other
                            topics: UNKNOWN_TOPIC_OR_PARTITION.
:meth:`deleted_offsets`     ... closing step: the topics whose state was deleted leave deleting.
:meth:`prepare_delete`      DeleteGroups for share groups, first step: an empty share group has
                            everything initialized or initializing moved to deleting, and its
                            state is to be deleted; only the groups whose state was deleted are
                            then deleted by the shard's ``delete_groups`` (tombstones).
==========================  ===================================================================

Invariants: persistent state changes only by replaying the records written here (record 11 and
15, replayed by :class:`~.share_group.ShareGroupManager`); a partition stays in at most one of
initializing and initialized (an altered partition that is already initialized stays
initialized: a failed re-initialization leaves its old state in place, never a reset to -1).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zurau.coordinator.group import share_group_records as SR
from zurau.coordinator.group.consumer_group import metadata_hash
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import Effects
from zurau.coordinator.group.share_group import ShareGroup, TopicInit, _merge
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.types import ZERO_UUID

if TYPE_CHECKING:
    from zurau.coordinator.group.shard_context import GroupShardContext

UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
NO_OFFSETS_MESSAGE = "There is no offset information to delete."

TopicPartitions = dict[uuid.UUID, frozenset[int]]


@dataclass
class AlterShareGroupOffsetsResult:
    """AlterShareGroupOffsets after its first step. ``responses``: the response topics
    (``topic_name``, ``topic_id``, ``partitions`` with ``partition_index``, ``error_code``,
    ``error_message``); ``to_initialize``: start offset per partition the service must
    initialize with state epoch ``state_epoch`` (those answered 0 in ``responses``)."""

    error_code: int = 0
    error_message: str | None = None
    responses: list[dict[str, Any]] = field(default_factory=list)
    to_initialize: dict[uuid.UUID, dict[int, int]] = field(default_factory=dict)
    state_epoch: int = -1


@dataclass
class DeleteShareGroupOffsetsResult:
    """DeleteShareGroupOffsets after its first step: ``errors`` are the response topics already
    answered with an error; ``to_delete`` the partitions whose state the service must delete
    (per topic id, named in ``names``)."""

    error_code: int = 0
    error_message: str | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    to_delete: TopicPartitions = field(default_factory=dict)
    names: dict[uuid.UUID, str] = field(default_factory=dict)


def _state_record(gid: str, value: dict[str, Any]) -> CoordinatorRecord:
    return CoordinatorRecord(SR.SHARE_GROUP_STATE_PARTITION_METADATA, {"group_id": gid}, 0, value)


def _deleting_value(group: ShareGroup, deleting: Mapping[uuid.UUID, str]) -> list[dict[str, Any]]:
    return [{"topic_id": t, "topic_name": deleting[t]} for t in sorted(deleting, key=str)]


class ShareGroupOffsetsManager:
    """The share-group admin steps of one shard (see the module docstring)."""

    def __init__(self, ctx: GroupShardContext) -> None:
        self.ctx = ctx
        self.topics = ctx.topics
        self.groups: MutableMapping[str, Any] = ctx.groups

    def _value(
        self,
        group: ShareGroup,
        initializing: Mapping[uuid.UUID, TopicInit],
        initialized: Mapping[uuid.UUID, TopicInit],
        deleting: Mapping[uuid.UUID, str],
    ) -> dict[str, Any]:
        value = group.state_partition_value(initializing, initialized)
        value["deleting_topics"] = _deleting_value(group, deleting)
        return value

    # ------------------------------------------------------------------ describe
    def initialized(self, group_id: str) -> TopicPartitions:
        """The group's initialized share partitions (none for an unknown or non-share group,
        as Kafka's ``initializedShareGroupPartitions``)."""
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            return {}
        return {t: ti.partitions for t, ti in group.initialized.items() if ti.partitions}

    # ------------------------------------------------------------------ alter
    def alter_offsets(
        self, token: Any, group_id: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]], now_ms: int
    ) -> Effects:
        """AlterShareGroupOffsets' first step. ``topics``: (name, [(partition, start offset)]).
        Reply: :class:`AlterShareGroupOffsetsResult`."""
        fx = Effects()
        group = self.groups.get(group_id)
        if group is not None and not isinstance(group, ShareGroup):
            fx.reply(
                token,
                AlterShareGroupOffsetsResult(
                    E.GroupIdNotFoundError.code, f"Group {group_id} is not a share group."
                ),
            )
            return fx
        if group is not None and group.members:
            fx.reply(
                token,
                AlterShareGroupOffsetsResult(E.NonEmptyGroupError.code, "The group is not empty."),
            )
            return fx
        share = group if group is not None else ShareGroup(group_id)  # materialized by the replay
        responses: list[dict[str, Any]] = []
        offsets: dict[uuid.UUID, dict[int, int]] = {}
        names: dict[uuid.UUID, str] = {}
        for name, parts in topics:
            t = self.topics.get(name)
            out_parts = []
            for p, offset in parts:
                ok = t is not None and 0 <= p < t.partitions
                if ok:
                    assert t is not None
                    offsets.setdefault(t.topic_id, {})[p] = offset
                    names[t.topic_id] = t.name
                out_parts.append(
                    {
                        "partition_index": p,
                        "error_code": 0 if ok else E.UnknownTopicOrPartitionError.code,
                        "error_message": None if ok else UNKNOWN_TOPIC_MESSAGE,
                    }
                )
            responses.append(
                {"topic_name": name, "topic_id": t.topic_id if t else ZERO_UUID, "partitions": out_parts}
            )
        if not offsets:
            fx.reply(token, AlterShareGroupOffsetsResult(responses=responses))
            return fx
        epoch = share.group_epoch + 1
        fresh = {
            t: TopicInit(
                names[t],
                frozenset(ps) - (share.initialized[t].partitions if t in share.initialized else frozenset()),
            )
            for t, ps in offsets.items()
        }
        fresh = {t: ti for t, ti in fresh.items() if ti.partitions}
        deleting = {t: n for t, n in share.deleting.items() if t not in offsets}
        group_hash = share.metadata_hash if group is not None else metadata_hash(set(), self.topics)
        records = [
            CoordinatorRecord(
                SR.SHARE_GROUP_METADATA,
                {"group_id": group_id},
                0,
                {"epoch": epoch, "metadata_hash": group_hash},
            ),
            _state_record(
                group_id, self._value(share, _merge(share.initializing, fresh), share.initialized, deleting)
            ),
        ]

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=False)
                fx2.reply(token, AlterShareGroupOffsetsResult(code.code, code.message))
                return
            g = self.groups.get(group_id)
            if isinstance(g, ShareGroup):
                for t in fresh:
                    g.initializing_since[t] = now  # no heartbeat initializes them meanwhile
            fx2.reply(token, AlterShareGroupOffsetsResult(0, None, responses, offsets, epoch))

        self.ctx.write(fx, group_id, records, stored)
        return fx

    # ------------------------------------------------------------------ delete offsets
    def delete_offsets(self, token: Any, group_id: str, topic_names: Iterable[str], now_ms: int) -> Effects:
        """DeleteShareGroupOffsets' first step. Reply: :class:`DeleteShareGroupOffsetsResult`."""
        fx = Effects()
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            msg = (
                f"Group {group_id} not found." if group is None else f"Group {group_id} is not a share group."
            )
            fx.reply(token, DeleteShareGroupOffsetsResult(E.GroupIdNotFoundError.code, msg))
            return fx
        if group.members:
            fx.reply(
                token, DeleteShareGroupOffsetsResult(E.NonEmptyGroupError.code, "The group is not empty.")
            )
            return fx
        result = DeleteShareGroupOffsetsResult()
        initialized = dict(group.initialized)
        deleting = dict(group.deleting)
        for name in dict.fromkeys(topic_names):
            t = self.topics.get(name)
            if t is None:
                result.errors.append(
                    _topic_error(name, ZERO_UUID, E.UnknownTopicOrPartitionError.code, UNKNOWN_TOPIC_MESSAGE)
                )
            elif t.topic_id in initialized:
                result.to_delete[t.topic_id] = initialized.pop(t.topic_id).partitions
                result.names[t.topic_id] = t.name
                deleting[t.topic_id] = t.name
            elif t.topic_id in deleting:
                result.to_delete[t.topic_id] = frozenset(range(t.partitions))
                result.names[t.topic_id] = t.name
            else:
                result.errors.append(
                    _topic_error(name, ZERO_UUID, E.UnknownTopicOrPartitionError.code, NO_OFFSETS_MESSAGE)
                )
        if not result.to_delete:
            fx.reply(token, result)
            return fx
        record = _state_record(group_id, self._value(group, group.initializing, initialized, deleting))

        def stored(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is not None:
                code = write_error(err, for_offsets=False)
                fx2.reply(token, DeleteShareGroupOffsetsResult(code.code, code.message))
            else:
                fx2.reply(token, result)

        self.ctx.write(fx, group_id, [record], stored)
        return fx

    def deleted_offsets(
        self, token: Any, group_id: str, topic_ids: Iterable[uuid.UUID], now_ms: int
    ) -> Effects:
        """DeleteShareGroupOffsets' closing step: these topics' state is gone; they leave
        deleting. Reply: None (or the write's error code)."""
        fx = Effects()
        group = self.groups.get(group_id)
        gone = set(topic_ids)
        if not isinstance(group, ShareGroup) or not gone & set(group.deleting):
            fx.reply(token, 0)
            return fx
        deleting = {t: n for t, n in group.deleting.items() if t not in gone}
        record = _state_record(group_id, self._value(group, group.initializing, group.initialized, deleting))
        self.ctx.write(
            fx,
            group_id,
            [record],
            lambda err, now, fx2: fx2.reply(
                token, 0 if err is None else write_error(err, for_offsets=False).code
            ),
        )
        return fx

    # ------------------------------------------------------------------ delete groups
    def prepare_delete(self, token: Any, group_ids: Sequence[str], now_ms: int) -> Effects:
        """DeleteGroups' share-group step (Kafka's ``sharePartitionDeleteRequests``). Reply:
        ``{group_id: (error_code, partitions whose state to delete)}`` for the share groups
        among ``group_ids`` (others are left to the shard's ``delete_groups``)."""
        fx = Effects()
        out: dict[str, tuple[int, TopicPartitions]] = {}
        records: dict[str, CoordinatorRecord] = {}
        for gid in dict.fromkeys(group_ids):
            group = self.groups.get(gid)
            if not isinstance(group, ShareGroup):
                continue
            if group.members:
                out[gid] = (E.NonEmptyGroupError.code, {})
                continue
            todo: dict[uuid.UUID, frozenset[int]] = {}
            names: dict[uuid.UUID, str] = {}
            for d in (group.initialized, group.initializing):
                for t, ti in d.items():
                    todo[t] = todo.get(t, frozenset()) | ti.partitions
                    names[t] = ti.name
            for t, name in group.deleting.items():  # an earlier deletion that did not finish
                topic = self.topics.by_id(t)
                if topic is not None:
                    todo[t] = todo.get(t, frozenset()) | frozenset(range(topic.partitions))
                    names[t] = name
            out[gid] = (0, {t: ps for t, ps in todo.items() if ps})
            if group.initialized or group.initializing or names.keys() != group.deleting.keys():
                records[gid] = _state_record(gid, self._value(group, {}, {}, names))
        if not records:
            fx.reply(token, out)
            return fx
        waiting = set(records)
        for gid, record in records.items():

            def stored(err: E.KafkaError | None, now: int, fx2: Effects, gid: str = gid) -> None:
                if err is not None:
                    out[gid] = (write_error(err, for_offsets=False).code, {})
                waiting.discard(gid)
                if not waiting:
                    fx2.reply(token, out)

            self.ctx.write(fx, gid, [record], stored)
        return fx


def _topic_error(name: str, topic_id: uuid.UUID, code: int, message: str | None) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": topic_id, "error_code": code, "error_message": message}


__all__ = [
    "AlterShareGroupOffsetsResult",
    "DeleteShareGroupOffsetsResult",
    "ShareGroupOffsetsManager",
]
