"""The share coordinator's part of the coordinator runtime: ``__share_group_state`` (KIP-932).

:class:`ShareRuntime` runs
:class:`~zurau.coordinator.share.share_coordinator_shard.ShareCoordinatorShard` in the shared
:class:`~zurau.coordinator.coordinator_runtime.CoordinatorRuntime`, as the group and transaction
coordinators run theirs: a request is routed by its share-partition's coordinator key
(``groupId:topicId:partition``) to the shard of its ``__share_group_state`` partition, answered
once the records it wrote are committed (below the high watermark); a partition this broker does
not lead answers NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.

What is specific to the share coordinator:

* Records: each write is one batch of ShareSnapshot/ShareUpdate records (or a tombstone) in
  Kafka 4.2's format (:mod:`.share_state_records`), compressed with
  ``share.coordinator.state.topic.compression.codec``.
* ``__share_group_state`` is created on first use with KIP-932's settings:
  ``share.coordinator.state.topic.num.partitions`` partitions, replication factor
  ``share.coordinator.state.topic.replication.factor`` (capped at the live brokers),
  ``min.insync.replicas=share.coordinator.state.topic.min.isr``,
  ``segment.bytes=share.coordinator.state.topic.segment.bytes``, ``cleanup.policy=delete`` and
  ``retention.ms=-1`` (state is never compacted away: a key's latest snapshot plus the updates
  after it rebuild it, so only records below every key's latest snapshot could go).
* A write not committed within ``share.coordinator.write.timeout.ms`` is answered
  REQUEST_TIMED_OUT (the record stays and applies if it commits later).
* A deleted topic: every served partition writes tombstones for the share-partitions of that
  topic (Kafka's ``maybeCleanupShareState``), see :meth:`ShareRuntime.on_topics_deleted`.

Invariant: the state a partition serves after a reload (a restart, a leadership move) is the
state it served before, since the shard's persistent state changes only by replaying committed
records (see the shard's docstring).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator

from zurau.clock import Clock
from zurau.config.coordinator_views import ShareCoordinatorConfig
from zurau.coordinator.coordinator_runtime import CoordinatorRuntime, TopicCreator
from zurau.coordinator.internal_topic import ChunkParser
from zurau.coordinator.partition_writer import PartitionWriter
from zurau.coordinator.share.share_coordinator_shard import (
    Effects,
    ShareCoordinatorShard,
    ShareStateConfig,
    Write,
)
from zurau.coordinator.share.share_state_records import (
    SHARE_GROUP_STATE_TOPIC,
    ShareStateRecord,
    build_records_batch,
    iter_log_records,
)
from zurau.coordinator.topics import TopicsView


class ShareRuntime(CoordinatorRuntime[ShareCoordinatorShard, Write, Effects]):
    topic = SHARE_GROUP_STATE_TOPIC
    what = "share-partition"

    def __init__(
        self,
        config: ShareCoordinatorConfig,
        writer: PartitionWriter,
        topics: TopicsView,
        create_topic: TopicCreator,
        clock: Clock,
    ) -> None:
        """``config``: the broker's :attr:`~zurau.config.broker_config.BrokerConfig.share_coordinator`.
        An existing ``__share_group_state``'s partition count wins over ``config.num_partitions``."""
        self.config = config
        self.write_timeout_ms = config.write_timeout_ms
        super().__init__(writer, topics, create_topic, clock)

    # ------------------------------------------------------------------ hooks
    def _new_core(self, num_partitions: int | None) -> ShareCoordinatorShard:
        c = self.config
        state_config = ShareStateConfig(
            num_partitions=num_partitions if num_partitions is not None else c.num_partitions,
            snapshot_update_records_per_snapshot=c.snapshot_update_records_per_snapshot,
            cold_partition_snapshot_interval_ms=c.cold_partition_snapshot_interval_ms,
        )
        return ShareCoordinatorShard(state_config, self.topics)

    def _num_partitions(self) -> int:
        return self.core.config.num_partitions

    def _encode(self, write: Write, now_ms: int) -> bytearray:
        return bytearray(build_records_batch(write.records, now_ms, self.config.compression_codec))

    def _parser(self, partition: int) -> ChunkParser[tuple[int, ShareStateRecord]]:
        def parse(data: bytes, log_start: int) -> Iterator[tuple[int, list[tuple[int, ShareStateRecord]]]]:
            for nxt, records in iter_log_records(data):
                yield nxt, [(o, r) for o, r in records if o >= log_start]

        return parse

    def _topic_spec(self) -> tuple[int, int, dict[str, str | None]]:
        return (
            self._num_partitions(),
            self.config.replication_factor,
            {
                "cleanup.policy": "delete",
                "retention.ms": "-1",
                "segment.bytes": str(self.config.segment_bytes),
                "min.insync.replicas": str(self.config.min_isr),
                "compression.type": "producer",
                "unclean.leader.election.enable": "false",
            },
        )

    def _load_buffer_bytes(self) -> int:
        return self.config.load_buffer_size

    # ------------------------------------------------------------------ topics
    def on_topics_deleted(self, topic_ids: Iterable[uuid.UUID]) -> None:
        """Topics are gone: tombstone their share-partitions' state in every served partition."""
        gone = frozenset(topic_ids)
        if gone:
            self._broadcast(lambda partition, now: self.core.delete_topics(gone, partition, now))


__all__ = ["SHARE_GROUP_STATE_TOPIC", "ShareRuntime"]
