"""What the managers of one group coordinator shard share, and nothing more.

The group coordinator shard (:mod:`.group_coordinator_shard`) composes four managers: classic
groups (:mod:`.classic_groups`), KIP-848 consumer groups (:mod:`.consumer_groups`), KIP-932 share
groups (:mod:`.share_group`) and committed offsets (:mod:`.offset_manager`). They hand each other
no ``self``; what they share is this :class:`GroupShardContext`:

* ``groups``: every group by id, classic, consumer or share (one namespace, as in Kafka's
  ``GroupMetadataManager``); a group belongs to ``partition_for(group_id)``.
* ``timers``: the virtual timers, one queue per ``__consumer_offsets`` partition; each timer
  carries the callback it runs on expiry (:mod:`zurau.coordinator.timers`).
* :meth:`GroupShardContext.write`: queue records for a group's partition with a continuation
  (see :class:`~zurau.coordinator.group.results.Effects`).
* ``loading``: True while a partition's records are being replayed.
* :meth:`GroupShardContext.group_config`: a group's dynamic group config (Kafka's ``GroupConfig``:
  ``consumer.session.timeout.ms``, ``share.heartbeat.interval.ms`` ...), read on every use from
  the ``group_configs`` lookup the composition root wires to the metadata image (typed overrides
  within the broker's bounds, :func:`zurau.config.group_configs.effective_group_overrides`); a
  group without an override gets the coordinator's configured value.

:meth:`GroupShardContext.drop_group` forgets a group and cancels its timers; the helpers below
say when a group may be deleted and which tombstones delete it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zurau.config.coordinator_views import GroupCoordinatorConfig
from zurau.coordinator.group import records as R
from zurau.coordinator.group.consumer_group import ConsumerGroup
from zurau.coordinator.group.group_metadata import ClassicGroup, GroupState
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.coordinator.group.results import Effects, GroupTimer, Write
from zurau.coordinator.group.share_group import SESSION_TIMER as SHARE_SESSION_TIMER
from zurau.coordinator.group.share_group import ShareGroup, ShareGroupManager
from zurau.coordinator.partitioner import partition_for
from zurau.coordinator.timers import PartitionedTimers, TimerKey
from zurau.coordinator.topics import TopicsView
from zurau.protocol import errors as E

Group = ClassicGroup | ConsumerGroup | ShareGroup
WriteCallback = Callable[[E.KafkaError | None, int, Effects], None]
#: group id -> that group's group config overrides, typed and within the broker's bounds.
GroupConfigLookup = Callable[[str], Mapping[str, Any]]


def no_group_configs(group_id: str) -> Mapping[str, Any]:
    return {}


class GroupShardContext:
    def __init__(
        self,
        config: GroupCoordinatorConfig,
        topics: TopicsView,
        group_configs: GroupConfigLookup | None = None,
    ) -> None:
        self.config = config
        self.topics = topics
        self.group_configs: GroupConfigLookup = group_configs or no_group_configs
        self.groups: dict[str, Group] = {}
        self.timers: PartitionedTimers[GroupTimer] = PartitionedTimers(self._timer_partition)
        self.loading = False

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def group_config(self, group_id: str, name: str, default: int) -> int:
        """The group's override of group config ``name`` (e.g. ``consumer.session.timeout.ms``),
        else ``default`` (the coordinator's configured value)."""
        value = self.group_configs(group_id).get(name)
        return default if value is None else int(value)

    def _timer_partition(self, key: TimerKey) -> int:
        """Timer keys are ``(kind, group_id, ...)`` or ``(kind, partition)``."""
        target = key[1]
        return target if isinstance(target, int) else self.partition_for(target)

    def write(
        self, fx: Effects, group_id: str, records: list[CoordinatorRecord], then: WriteCallback
    ) -> None:
        fx.writes.append(Write(group_id, self.partition_for(group_id), records, then))

    def drop_group(self, gid: str) -> None:
        """Forget the group and cancel its timers."""
        group = self.groups.pop(gid, None)
        if group is None:
            return
        if isinstance(group, ClassicGroup):
            for mid in list(group.members) + list(group.pending_members):
                self.timers.cancel(("session", gid, mid))
                self.timers.cancel(("pending", gid, mid))
            self.timers.cancel(("join", gid))
            self.timers.cancel(("sync", gid))
        elif isinstance(group, ShareGroup):
            for mid in group.members:
                self.timers.cancel((SHARE_SESSION_TIMER, gid, mid))
        else:
            for mid in group.members:
                self.timers.cancel(("cg-session", gid, mid))
                self.timers.cancel(("cg-revoke", gid, mid))


def is_deletable(group: Group) -> bool:
    """A group without members (DeleteGroups, offset expiry may delete it)."""
    if isinstance(group, ClassicGroup):
        return group.is_in(GroupState.EMPTY) and not group.pending_members
    return not group.members


def group_tombstones(group: Group) -> list[CoordinatorRecord]:
    """The records that delete the group from ``__consumer_offsets``."""
    gid = group.group_id
    if isinstance(group, ClassicGroup):
        return [CoordinatorRecord(R.GROUP_METADATA, {"group": gid})]
    if isinstance(group, ShareGroup):
        return ShareGroupManager.tombstones(group)
    return [
        CoordinatorRecord(R.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {"group_id": gid}),
        CoordinatorRecord(R.CONSUMER_GROUP_PARTITION_METADATA, {"group_id": gid}),
        CoordinatorRecord(R.CONSUMER_GROUP_METADATA, {"group_id": gid}),
    ]
