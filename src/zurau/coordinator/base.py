"""State and plumbing shared by the group coordinator's protocol mixins.

Holds the groups, the committed offsets, the pending transactional offsets and the virtual
timers; ``_write`` queues records for ``__consumer_offsets`` with a continuation (see
:class:`~zurau.coordinator.results.Effects`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zurau.coordinator.consumer_group import ConsumerGroup, TopicsView
from zurau.coordinator.group_metadata import ClassicGroup
from zurau.coordinator.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.partitioner import partition_for
from zurau.coordinator.records import CoordinatorRecord
from zurau.coordinator.results import CoordinatorConfig, Effects, TopicPartition, Write
from zurau.coordinator.timers import TimerQueue
from zurau.protocol import errors as E

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
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # group -> partition -> producer id -> its pending transactional commit
        self.pending_txn_offsets: dict[str, dict[TopicPartition, dict[int, PendingTxnOffset]]] = {}
        self._txn_groups: dict[int, set[str]] = {}  # producer id -> groups it has pending offsets in
        self._txn_seq = 0
        self.timers = TimerQueue()
        self._loading = False
        self._started = False

    # ------------------------------------------------------------------ plumbing
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

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
