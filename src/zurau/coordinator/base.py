"""State and plumbing shared by the group coordinator's protocol mixins.

Holds the groups, the committed offsets, the pending transactional offsets and the virtual
timers; ``_write`` queues records for ``__consumer_offsets`` with a continuation (see
:class:`~zurau.coordinator.results.Effects`).

Everything is kept per ``__consumer_offsets`` partition in the sense that a group, its offsets,
its pending transactional offsets and its timers all belong to ``partition_for(group_id)``:
:meth:`CoordinatorBase.unload_partition` forgets one partition's share and nothing else, and the
timers of one partition are polled on their own (timer keys name a group, or a partition).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from zurau.coordinator.consumer_group import ConsumerGroup, TopicsView
from zurau.coordinator.group_metadata import ClassicGroup
from zurau.coordinator.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.partitioner import partition_for
from zurau.coordinator.records import CoordinatorRecord
from zurau.coordinator.results import CoordinatorConfig, Effects, Write
from zurau.coordinator.timers import PartitionedTimers
from zurau.protocol import errors as E
from zurau.types import TopicPartitionKey

Group = ClassicGroup | ConsumerGroup


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


class CoordinatorBase:
    def __init__(self, config: CoordinatorConfig, topics: TopicsView) -> None:
        self.config = config
        self.topics = topics
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = {}
        # group -> partition -> producer id -> its pending transactional commit
        self.pending_txn_offsets: dict[str, dict[TopicPartitionKey, dict[int, PendingTxnOffset]]] = {}
        self._txn_groups: dict[int, set[str]] = {}  # producer id -> groups it has pending offsets in
        self._txn_seq = 0
        self.timers = PartitionedTimers(self._timer_partition)
        self._loading = False

    # ------------------------------------------------------------------ plumbing
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def _timer_partition(self, key: Hashable) -> int:
        """Timer keys are ``(kind, group_id, ...)`` or ``(kind, partition)``."""
        target = key[1]  # type: ignore[index]
        return target if isinstance(target, int) else self.partition_for(target)

    def unload_partition(self, partition: int) -> None:
        """Forget the groups of ``partition``: members, offsets, pending transactional offsets, timers."""
        mine = self.partition_for
        for gid in [g for g in self.groups if mine(g) == partition]:
            self._drop_group(gid)
        for gid in [g for g in self.offsets if mine(g) == partition]:
            del self.offsets[gid]
        for gid in [g for g in self.pending_txn_offsets if mine(g) == partition]:
            del self.pending_txn_offsets[gid]
        for pid in list(self._txn_groups):
            gids = self._txn_groups[pid]
            gids.difference_update([g for g in gids if mine(g) == partition])
            if not gids:
                del self._txn_groups[pid]
        self.timers.drop(partition)

    def _write(
        self,
        fx: Effects,
        group_id: str,
        records: list[CoordinatorRecord],
        then: Callable[[E.KafkaError | None, int, Effects], None],
    ) -> None:
        fx.writes.append(Write(group_id, self.partition_for(group_id), records, then))

    def _drop_group(self, gid: str) -> None:
        group = self.groups.pop(gid, None)
        if group is None:
            return
        if isinstance(group, ClassicGroup):
            for mid in list(group.members) + list(group.pending_members):
                self.timers.cancel(("session", gid, mid))
                self.timers.cancel(("pending", gid, mid))
            self.timers.cancel(("join", gid))
            self.timers.cancel(("sync", gid))
        else:
            for mid in group.members:
                self.timers.cancel(("cg-session", gid, mid))
                self.timers.cancel(("cg-revoke", gid, mid))
