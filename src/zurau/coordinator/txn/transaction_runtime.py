"""The transaction coordinator's part of the coordinator runtime: ``__transaction_state``.

:class:`TransactionRuntime` runs
:class:`~zurau.coordinator.txn.transaction_coordinator.TransactionCoordinator` in the shared
:class:`~zurau.coordinator.coordinator_runtime.CoordinatorRuntime` (shards, writes committed at
the high watermark, timers) and adds what is specific to transactions:

* Records: each state change is one ``__transaction_state`` record in a batch of its own.
* Markers: a :class:`MarkerRequest` of the state machine becomes a COMMIT or ABORT marker in
  each partition of the transaction. A marker counts as written once it is committed (the
  partition's high watermark passed it) or failed; when every partition has an outcome, the
  outcomes go back to the state machine (``complete_markers``) in the transactional id's turn.
  Markers for ``__consumer_offsets`` go through the group coordinator
  (:meth:`~zurau.coordinator.group.group_runtime.GroupCoordinatorRuntime.write_txn_marker`), which also
  commits or drops the transaction's pending offsets there. The WriteTxnMarkers handler uses
  the same path (:meth:`TransactionRuntime.write_markers`). In a cluster, a partition led by
  another broker gets its marker from that leader: the
  :class:`~zurau.coordinator.txn.marker_channel.TxnMarkerChannel` sends it WriteTxnMarkers; a marker
  waiting here for a partition whose leadership moves away fails (NOT_LEADER_OR_FOLLOWER) and is
  retried.
* A loaded partition resends the markers of every transaction it finds prepared
  (PrepareCommit/PrepareAbort): that is the recovery after a crash or a coordinator move. An
  ongoing one is aborted when its timeout passes, unless its producer ends it first.
* ``__transaction_state`` is created on first use (``cleanup.policy=compact``,
  ``transaction.state.log.num.partitions`` partitions, ``transaction.state.log.segment.bytes``,
  ``min.insync.replicas=transaction.state.log.min.isr``).
* Verification (``transaction.partition.verification.enable``): :meth:`TransactionRuntime.verify`
  is the replica manager's ``txn_verifier``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator

from zurau.clock import Clock, TimerHandle
from zurau.config.coordinator_views import TransactionCoordinatorConfig
from zurau.coordinator.coordinator_runtime import CoordinatorRuntime, TopicCreator
from zurau.coordinator.group.group_runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from zurau.coordinator.internal_topic import ChunkParser
from zurau.coordinator.partition_writer import PartitionWriter, ResignNotifier
from zurau.coordinator.topics import TopicsView
from zurau.coordinator.txn.marker_channel import TxnMarkerChannel
from zurau.coordinator.txn.transaction_coordinator import (
    MarkerRequest,
    TransactionConfig,
    TransactionCoordinator,
    TxnEffects,
    TxnWrite,
)
from zurau.coordinator.txn.transaction_log_records import (
    TxnLogRecord,
    build_records_batch,
    iter_log_records,
)
from zurau.coordinator.txn.txn_verification_channel import TxnVerificationChannel
from zurau.protocol.errors import (
    CoordinatorNotAvailableError,
    KafkaError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownServerError,
)
from zurau.types import TopicPartitionKey

TRANSACTION_STATE_TOPIC = "__transaction_state"

# How long a marker may wait for its partition's high watermark before it counts as failed (and
# is retried by the state machine): Kafka's default request.timeout.ms.
MARKER_TIMEOUT_MS = 30_000

MarkerCallback = Callable[[TopicPartitionKey, KafkaError | None], None]


class TransactionRuntime(CoordinatorRuntime[TransactionCoordinator, TxnWrite, TxnEffects]):
    topic = TRANSACTION_STATE_TOPIC
    what = "transactional id"

    def __init__(
        self,
        config: TransactionCoordinatorConfig,
        writer: PartitionWriter,
        topics: TopicsView,
        create_topic: TopicCreator,
        clock: Clock,
        next_producer_id: Callable[[], int],
        groups: GroupCoordinatorRuntime | None = None,
    ) -> None:
        """``config``: the transaction settings, the broker's
        :attr:`~zurau.config.broker_config.BrokerConfig.transaction_coordinator` (tests change
        fields of it with :func:`dataclasses.replace`). An existing ``__transaction_state``'
        partition count wins over ``config.num_partitions``."""
        self.config = config
        self._next_producer_id = next_producer_id
        self.groups = groups
        # (topic, partition) -> markers waiting for its high watermark: (last offset, done)
        self._marker_waits: dict[TopicPartitionKey, list[tuple[int, Callable[[KafkaError | None], None]]]] = {}
        # Cluster mode: markers for partitions led by other brokers go through WriteTxnMarkers.
        self.marker_channel: TxnMarkerChannel | None = None
        # Cluster mode: a producer id unknown to this broker's coordinator may belong to a
        # transaction coordinated by another broker, so KIP-890 verification lets it through.
        self.verify_unknown_producers = False
        # Cluster mode: KIP-890 verification with the coordinator of a transactional id led elsewhere.
        self.verification_channel: TxnVerificationChannel | None = None
        # The cluster's finalized transaction.version (the composition root reads the metadata
        # image): the version of the aborts the coordinator starts itself.
        self.transaction_version: Callable[[], int] = lambda: 0
        super().__init__(writer, topics, create_topic, clock)
        if isinstance(writer, ResignNotifier):
            writer.add_resign_listener(self._on_resigned)

    def next_producer_id(self) -> int:
        """A fresh producer id for an idempotent (non-transactional) producer."""
        return self._next_producer_id()

    # ------------------------------------------------------------------ hooks
    def _new_core(self, num_partitions: int | None) -> TransactionCoordinator:
        config = TransactionConfig.from_view(self.config, num_partitions)
        core = TransactionCoordinator(config, self._next_producer_id)
        core.transaction_version = lambda: self.transaction_version()
        return core

    def _num_partitions(self) -> int:
        return self.core.config.num_partitions

    def _encode(self, write: TxnWrite, now_ms: int) -> bytearray:
        return bytearray(build_records_batch([write.record], now_ms))

    def _parser(self, partition: int) -> ChunkParser[TxnLogRecord]:
        def parse(data: bytes, log_start: int) -> Iterator[tuple[int, list[TxnLogRecord]]]:
            for nxt, records in iter_log_records(data):
                yield nxt, records if nxt > log_start else []

        return parse

    def _topic_spec(self) -> tuple[int, int, dict[str, str | None]]:
        return (
            self._num_partitions(),
            self.config.replication_factor,
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(self.config.segment_bytes),
                "min.insync.replicas": str(self.config.min_isr),
                "compression.type": "producer",
                "unclean.leader.election.enable": "false",
            },
        )

    def _load_buffer_bytes(self) -> int:
        return self.config.load_buffer_size

    def _on_effects(self, partition: int, fx: TxnEffects) -> None:
        for m in fx.markers:
            self._send_markers(partition, m)

    # ------------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        """Stop serving (see :meth:`CoordinatorRuntime.stop`); markers still waiting for their
        partition's high watermark are answered COORDINATOR_NOT_AVAILABLE."""
        super().stop()
        waits, self._marker_waits = self._marker_waits, {}
        err = CoordinatorNotAvailableError("the transaction coordinator is shutting down")
        for entries in waits.values():
            for _offset, done in entries:
                self._guard(done, err)

    # ------------------------------------------------------------------ verification
    def remote_coordinator(self, transactional_id: str) -> bool:
        """Whether another broker coordinates ``transactional_id`` (cluster mode only): produce
        then verifies a transaction's first batches with it (see txn_verification_channel)."""
        if self.verification_channel is None or not self.started:
            return False
        partition = self.core.partition_for(transactional_id)
        return partition not in self._shards and partition not in self._failed

    def verify(self, topic: str, index: int, producer_id: int, producer_epoch: int) -> KafkaError | None:
        """KIP-890: may this producer's first transactional batch go to ``topic-index``?"""
        if not self.started:
            return CoordinatorNotAvailableError("the transaction coordinator is not running")
        if self.verify_unknown_producers and producer_id not in self.core.by_producer_id:
            return None  # coordinated elsewhere (see ``verify_unknown_producers``)
        return self.core.check_produce(producer_id, producer_epoch, (topic, index))

    # ------------------------------------------------------------------ markers
    def _send_markers(self, partition: int, m: MarkerRequest) -> None:
        """Write the markers of ``m``; report all outcomes to the state machine in ``partition``'s turn."""
        results: dict[TopicPartitionKey, KafkaError | None] = {}
        wanted = len(set(m.partitions))
        shard = self._shards.get(partition)

        def one(tp: TopicPartitionKey, err: KafkaError | None) -> None:
            results[tp] = err
            if len(results) == wanted and self._shards.get(partition) is shard:
                self._schedule(partition, lambda now: self.core.complete_markers(m, results, now))

        self._write_markers(
            m.producer_id, m.producer_epoch, m.commit, m.coordinator_epoch, m.partitions, one, m.transaction_version
        )

    def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        transaction_version: int = 0,
    ) -> asyncio.Future[dict[TopicPartitionKey, KafkaError | None]]:
        """WriteTxnMarkers: a marker in each partition, written here (a partition this broker
        does not lead gets NOT_LEADER_OR_FOLLOWER, never a forwarded request); the future gets
        each outcome (None: committed). ``transaction_version`` 2: a marker must carry an epoch
        above the producer's epoch in the partition (else INVALID_PRODUCER_EPOCH)."""
        fut: asyncio.Future[dict[TopicPartitionKey, KafkaError | None]] = (
            asyncio.get_running_loop().create_future()
        )
        parts = list(dict.fromkeys(partitions))
        results: dict[TopicPartitionKey, KafkaError | None] = {}

        def one(tp: TopicPartitionKey, err: KafkaError | None) -> None:
            results[tp] = err
            if len(results) == len(parts) and not fut.done():
                fut.set_result(results)

        if not parts:
            fut.set_result(results)
        self._write_local_markers(
            producer_id, producer_epoch, commit, coordinator_epoch, parts, one, transaction_version
        )
        return fut

    def _write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        one: MarkerCallback,
        transaction_version: int = 0,
    ) -> None:
        """The coordinator's markers: in-process where this broker leads the partition, through
        WriteTxnMarkers to the leader elsewhere (cluster mode)."""
        parts = list(dict.fromkeys(partitions))
        channel = self.marker_channel
        tv = transaction_version
        if channel is None:
            self._write_local_markers(producer_id, producer_epoch, commit, coordinator_epoch, parts, one, tv)
            return
        local, remote = channel.split(parts)
        for broker_id, tps in remote.items():

            def report(results: dict[TopicPartitionKey, KafkaError | None], tps: list[TopicPartitionKey] = tps) -> None:
                for tp in tps:
                    self._guard(one, tp, results.get(tp))

            channel.send(broker_id, producer_id, producer_epoch, commit, coordinator_epoch, tps, report, tv)
        self._write_local_markers(producer_id, producer_epoch, commit, coordinator_epoch, local, one, tv)

    def _write_local_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        one: MarkerCallback,
        transaction_version: int = 0,
    ) -> None:
        for tp in dict.fromkeys(partitions):
            topic, index = tp

            def done(err: KafkaError | None, tp: TopicPartitionKey = tp) -> None:
                one(tp, err)

            if topic == OFFSETS_TOPIC and self.groups is not None:
                self.groups.write_txn_marker(
                    index, producer_id, producer_epoch, commit, coordinator_epoch, done, transaction_version
                )
                continue
            try:
                last = self.writer.append_markers(
                    topic, index, producer_id, producer_epoch, commit, coordinator_epoch, transaction_version
                )
            except KafkaError as e:
                done(e)
                continue
            except Exception as e:
                self._guard(done, UnknownServerError(f"{type(e).__name__}: {e}"))
                continue
            self._await_high_watermark(tp, last, done)

    def _await_high_watermark(
        self, tp: TopicPartitionKey, last_offset: int, done: Callable[[KafkaError | None], None]
    ) -> None:
        try:
            hw = self.writer.high_watermark(*tp)
        except KafkaError as e:
            done(e)
            return
        if hw > last_offset:
            done(None)
            return
        timer: TimerHandle | None = None

        def finish(err: KafkaError | None) -> None:
            if timer is not None:
                timer.cancel()
            done(err)

        entry = (last_offset, finish)
        self._marker_waits.setdefault(tp, []).append(entry)

        def expire() -> None:
            waits = self._marker_waits.get(tp)
            if waits is not None and entry in waits:
                waits.remove(entry)
                if not waits:
                    del self._marker_waits[tp]
                done(RequestTimedOutError(f"the marker in {tp[0]}-{tp[1]} was not committed in time"))

        timer = self.clock.call_later(MARKER_TIMEOUT_MS, expire)

    def _on_resigned(self, topic: str, partition: int) -> None:
        """This broker no longer leads ``topic-partition``: its markers waiting for the high
        watermark fail (NOT_LEADER_OR_FOLLOWER) and are retried, by then at the new leader."""
        waits = self._marker_waits.pop((topic, partition), None)
        if not waits:
            return
        err = NotLeaderOrFollowerError(f"leadership of {topic}-{partition} moved before the marker was committed")
        for _offset, finish in waits:
            self._guard(finish, err)

    def _on_high_watermark(self, topic: str, partition: int, high_watermark: int) -> None:
        super()._on_high_watermark(topic, partition, high_watermark)
        if not self._marker_waits:
            return
        waits = self._marker_waits.get((topic, partition))
        if not waits:
            return
        committed = [w for w in waits if w[0] < high_watermark]
        if not committed:
            return
        rest = [w for w in waits if w[0] >= high_watermark]
        if rest:
            self._marker_waits[(topic, partition)] = rest
        else:
            del self._marker_waits[(topic, partition)]
        for _offset, finish in committed:
            self._guard(finish, None)


__all__ = ["TRANSACTION_STATE_TOPIC", "MarkerRequest", "TransactionRuntime", "TxnLogRecord"]
