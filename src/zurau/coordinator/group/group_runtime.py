"""The group coordinator's part of the coordinator runtime: ``__consumer_offsets``.

:class:`GroupCoordinatorRuntime` runs :class:`~zurau.coordinator.group.group_coordinator_shard.GroupCoordinatorShard`
in the shared :class:`~zurau.coordinator.coordinator_runtime.CoordinatorRuntime` (shards, writes
committed at the high watermark, timers) and adds what is specific to groups:

* Records: each write is one batch of Kafka's ``__consumer_offsets`` records
  (``offsets.topic.compression.codec``); a TxnOffsetCommit's batch is transactional, of its
  producer and epoch.
* Transaction markers: the transaction coordinator writes its COMMIT/ABORT markers for a
  ``__consumer_offsets`` partition through :meth:`GroupCoordinatorRuntime.write_txn_marker`, in
  that partition's turn; once the marker is committed, the producer's pending offsets in the
  partition's groups are committed or dropped (a load does the same with the markers it reads).
* ``__consumer_offsets`` is created on first use (``cleanup.policy=compact``,
  ``offsets.topic.num.partitions`` partitions, ``offsets.topic.segment.bytes``). An existing
  topic's partition count wins over the config, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from zurau.clock import Clock
from zurau.config.coordinator_views import GroupCoordinatorConfig
from zurau.coordinator.coordinator_runtime import CoordinatorRuntime, TopicCreator
from zurau.coordinator.group.group_coordinator_shard import GroupCoordinatorShard
from zurau.coordinator.group.records import LogEntry, TxnMarker, build_records_batch, iter_log_batches
from zurau.coordinator.group.results import Effects, Write
from zurau.coordinator.group.shard_context import GroupConfigLookup
from zurau.coordinator.internal_topic import ChunkParser
from zurau.coordinator.partition_writer import PartitionWriter
from zurau.coordinator.topics import TopicsView
from zurau.protocol.errors import KafkaError

OFFSETS_TOPIC = "__consumer_offsets"


class GroupCoordinatorRuntime(CoordinatorRuntime[GroupCoordinatorShard, Write, Effects]):
    topic = OFFSETS_TOPIC
    what = "group"

    def __init__(
        self,
        config: GroupCoordinatorConfig,
        writer: PartitionWriter,
        topics: TopicsView,
        create_topic: TopicCreator,
        clock: Clock,
        group_configs: GroupConfigLookup | None = None,
    ) -> None:
        """``group_configs``: each group's dynamic group config overrides, typed and within the
        broker's bounds (the broker reads them from the metadata image on every call; none when
        not given). ``config``: the group settings, the broker's
        :attr:`~zurau.config.broker_config.BrokerConfig.group_coordinator` (tests change fields of
        it with :func:`dataclasses.replace`). An existing ``__consumer_offsets``' partition count
        wins over ``config.num_partitions``."""
        self.config = config
        self.group_configs = group_configs
        super().__init__(writer, topics, create_topic, clock)
        self.write_timeout_ms = config.commit_timeout_ms

    # ------------------------------------------------------------------ hooks
    def _new_core(self, num_partitions: int | None) -> GroupCoordinatorShard:
        config = replace(self.config, num_partitions=num_partitions or self.config.num_partitions)
        return GroupCoordinatorShard(config, self.topics, self._group_configs)

    def _group_configs(self, group_id: str) -> Mapping[str, Any]:
        return self.group_configs(group_id) if self.group_configs is not None else {}

    def _num_partitions(self) -> int:
        return self.core.config.num_partitions

    def _encode(self, write: Write, now_ms: int) -> bytearray:
        return bytearray(
            build_records_batch(
                write.records,
                now_ms,
                self.config.compression_codec,
                producer_id=write.producer_id,
                producer_epoch=write.producer_epoch,
            )
        )

    def _parser(self, partition: int) -> ChunkParser[LogEntry]:
        def parse(data: bytes, log_start: int) -> Iterator[tuple[int, list[LogEntry]]]:
            for nxt, entries in iter_log_batches(data):
                out: list[LogEntry] = []
                for offset, rec in entries:
                    if offset < log_start or rec is None:
                        continue
                    if isinstance(rec, TxnMarker):
                        rec = TxnMarker(rec.producer_id, rec.commit, partition)
                    out.append(rec)
                yield nxt, out

        return parse

    def _topic_spec(self) -> tuple[int, int, dict[str, str | None]]:
        return (
            self._num_partitions(),
            self.config.replication_factor,
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config.segment_bytes),
                "compression.type": "producer",
            },
        )

    def _load_buffer_bytes(self) -> int:
        return self.config.load_buffer_size

    # ------------------------------------------------------------------ group-specific inputs
    def ensure_offsets_topic(self) -> Any:
        """Create ``__consumer_offsets`` if it does not exist yet; return its metadata."""
        return self.ensure_topic()

    def on_topic_deleted(self, topic: str) -> None:
        """Drop committed offsets of a deleted topic (tombstones in ``__consumer_offsets``)."""
        if topic != OFFSETS_TOPIC:
            self._broadcast(lambda partition, now: self.core.delete_topic_offsets(topic, now, partition))

    def write_txn_marker(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        done: Callable[[KafkaError | None], None],
        transaction_version: int = 0,
    ) -> None:
        """Append a COMMIT/ABORT marker of the producer to ``__consumer_offsets`` ``partition`` in
        that partition's turn; once committed, commit or drop the producer's pending offsets there.

        ``done(None)`` once the marker is committed, ``done(error)`` if it could not be written
        (NOT_COORDINATOR if the partition is not served here).
        """
        err = self._shard_error(f"{OFFSETS_TOPIC}-{partition}", partition)
        if err is not None:
            done(err)
            return

        def append() -> int:
            return self.writer.append_markers(
                OFFSETS_TOPIC, partition, producer_id, producer_epoch, commit, coordinator_epoch, transaction_version
            )

        def complete(error: KafkaError | None, now: int) -> None:
            if error is None:
                self.core.complete_transaction(producer_id, {partition}, commit)
            done(error)

        self._write_raw(partition, append, complete, done)


__all__ = ["OFFSETS_TOPIC", "GroupCoordinatorRuntime", "TopicCreator"]
