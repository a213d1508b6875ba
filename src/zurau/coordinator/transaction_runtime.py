"""The transaction coordinator's async shell: the only part that touches the log, the loop and the clock.

Mirrors :mod:`zurau.coordinator.runtime` (the group coordinator's shell):

* Requests: :meth:`TransactionRuntime.submit` gives the state machine a token and returns a future
  that the reply for that token completes.
* Writes: each state change is one record appended (acks=all) to its ``__transaction_state``
  partition through the :class:`~zurau.replication.replica_manager.ReplicaManager`; the append is
  synchronous on a single node, so its outcome is reported to the state machine at once.
* Markers: :meth:`write_markers` appends a COMMIT or ABORT control batch to each partition of a
  completing transaction (``ReplicaManager.append_markers``); markers that reach a
  ``__consumer_offsets`` partition are reported to the group coordinator, which commits or drops
  the transaction's pending offsets there. The WriteTxnMarkers handler uses the same path.
* Timers: one ``loop.call_later`` handle, re-armed to the state machine's next deadline (transaction
  timeouts, marker retries, transactional-id expiration) after every input.
* ``__transaction_state`` is created on first use (``cleanup.policy=compact``,
  ``transaction.state.log.num.partitions`` partitions, ``transaction.state.log.segment.bytes``,
  ``min.insync.replicas=transaction.state.log.min.isr``). If it exists at start-up, every
  partition is replayed before the broker listens, and every transaction found prepared
  (PrepareCommit/PrepareAbort) is completed at once: that is the recovery after a crash. An
  ongoing one is aborted when its timeout passes, unless its producer ends it first.
* Verification (``transaction.partition.verification.enable``): the shell installs
  :meth:`TransactionCoordinator.check_produce` as the replica manager's ``txn_verifier``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

from zurau.coordinator.consumer_group import TopicsView
from zurau.coordinator.internal_topic import replay_partition
from zurau.coordinator.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime, TopicCreator
from zurau.coordinator.transaction_coordinator import (
    MarkerRequest,
    TransactionConfig,
    TransactionCoordinator,
    TxnEffects,
    TxnWrite,
)
from zurau.coordinator.transaction_log_records import (
    TopicPartition,
    TxnLogRecord,
    build_records_batch,
    iter_log_records,
)
from zurau.protocol.errors import (
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
    UnknownServerError,
)
from zurau.replication.replica_manager import ReplicaManager

log = logging.getLogger("zurau.coordinator.txn")

TRANSACTION_STATE_TOPIC = "__transaction_state"


class TransactionRuntime:
    def __init__(
        self,
        broker_config: Any,
        replica_manager: ReplicaManager,
        topics: TopicsView,
        create_topic: TopicCreator,
        now_ms: Callable[[], int],
        next_producer_id: Callable[[], int],
        groups: GroupCoordinatorRuntime | None = None,
    ) -> None:
        self.broker_config = broker_config
        self.replica_manager = replica_manager
        self.topics = topics
        self._create_topic = create_topic
        self.now_ms = now_ms
        self._next_producer_id = next_producer_id
        self.groups = groups
        self.core: TransactionCoordinator
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tokens = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._armed: int | None = None
        self.started = False

    def next_producer_id(self) -> int:
        """A fresh producer id for an idempotent (non-transactional) producer."""
        return self._next_producer_id()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Build the state machine, replay ``__transaction_state``, complete prepared transactions."""
        existing = self.topics.get(TRANSACTION_STATE_TOPIC)
        n = existing.partitions if existing is not None else None
        self.core = TransactionCoordinator(
            TransactionConfig.from_broker_config(self.broker_config, n), self._next_producer_id
        )
        if existing is not None:
            self._load(existing.partitions)
        if self.broker_config.get("transaction.partition.verification.enable"):
            self.replica_manager.txn_verifier = self._verify
        self.started = True
        self._process(self.core.start(self.now_ms()))

    def stop(self) -> None:
        self.started = False
        if self.replica_manager.txn_verifier == self._verify:
            self.replica_manager.txn_verifier = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for fut in self._waiting.values():
            if not fut.done():
                fut.cancel()
        self._waiting.clear()

    def _load(self, partitions: int) -> None:
        t0 = time.monotonic()
        buffer = int(self.broker_config.get("transaction.state.log.load.buffer.size"))
        count = 0

        def records() -> Any:
            nonlocal count
            for index in range(partitions):
                p = self.replica_manager.get(TRANSACTION_STATE_TOPIC, index)
                if p is None:
                    continue
                start = p.log.log_start_offset
                where = f"{TRANSACTION_STATE_TOPIC}-{index}"
                for nxt, recs in replay_partition(p.log, buffer, iter_log_records, where):
                    if nxt > start:
                        count += len(recs)
                        yield from recs

        self.core.load(records())
        log.info(
            "loaded %d transactional ids (%d records) from %s in %.0f ms",
            len(self.core.transactions),
            count,
            TRANSACTION_STATE_TOPIC,
            (time.monotonic() - t0) * 1000,
        )

    # ------------------------------------------------------------------ topic
    def ensure_topic(self) -> Any:
        """Create ``__transaction_state`` if it does not exist yet; return its metadata."""
        t = self.topics.get(TRANSACTION_STATE_TOPIC)
        if t is not None:
            return t
        cfg = self.broker_config
        self._create_topic(
            TRANSACTION_STATE_TOPIC,
            self.core.config.num_partitions,
            int(cfg.get("transaction.state.log.replication.factor")),
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(cfg.get("transaction.state.log.segment.bytes")),
                "min.insync.replicas": str(cfg.get("transaction.state.log.min.isr")),
                "compression.type": "producer",
                "unclean.leader.election.enable": "false",
            },
        )
        return self.topics.get(TRANSACTION_STATE_TOPIC)

    def coordinator_error(self, transactional_id: str) -> KafkaError | None:
        """None if this broker coordinates ``transactional_id`` (creating the topic on first use)."""
        if not self.started:
            return CoordinatorNotAvailableError("the transaction coordinator is not running")
        try:
            self.ensure_topic()
        except KafkaError as e:
            log.error("cannot create %s: %s", TRANSACTION_STATE_TOPIC, e)
            return CoordinatorNotAvailableError(f"{TRANSACTION_STATE_TOPIC} cannot be created: {e}")
        p = self.replica_manager.get(TRANSACTION_STATE_TOPIC, self.core.partition_for(transactional_id))
        if p is None or p.leader_id != self.replica_manager.node_id:
            return NotCoordinatorError(
                f"this broker does not coordinate transactional id {transactional_id!r}"
            )
        return None

    # ------------------------------------------------------------------ requests
    def submit(self, op: Callable[[int, int], TxnEffects]) -> asyncio.Future[Any]:
        """Run ``op(token, now_ms)`` on the state machine; the future gets the token's reply."""
        token = next(self._tokens)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[token] = fut
        fut.add_done_callback(lambda _f, t=token: self._waiting.pop(t, None))
        try:
            fx = op(token, self.now_ms())
        except BaseException:
            self._waiting.pop(token, None)
            fut.cancel()
            raise
        self._process(fx)
        return fut

    def _verify(self, topic: str, index: int, producer_id: int, producer_epoch: int) -> KafkaError | None:
        if not self.started:
            return CoordinatorNotAvailableError("the transaction coordinator is not running")
        return self.core.check_produce(producer_id, producer_epoch, (topic, index))

    def _process(self, fx: TxnEffects) -> None:
        self._run(fx)
        self._rearm()

    def _run(self, fx: TxnEffects) -> None:
        for w in fx.writes:
            err = self._append(w)
            self._run(self.core.complete_write(w, err, self.now_ms()))
        for m in fx.markers:
            results = self.write_markers(
                m.producer_id, m.producer_epoch, m.commit, m.coordinator_epoch, m.partitions
            )
            self._run(self.core.complete_markers(m, results, self.now_ms()))
        for token, result in fx.replies:
            fut = self._waiting.pop(token, None)
            if fut is not None and not fut.done():
                fut.set_result(result)

    def _append(self, w: TxnWrite) -> KafkaError | None:
        try:
            self.ensure_topic()
            batch = build_records_batch([w.record], self.now_ms())
            self.replica_manager.append(TRANSACTION_STATE_TOPIC, w.partition, memoryview(batch), -1)
        except KafkaError as e:
            log.warning("cannot write the state of transactional id %s: %s", w.transactional_id, e)
            return e
        except Exception as e:
            log.exception("cannot write the state of transactional id %s", w.transactional_id)
            return UnknownServerError(f"{type(e).__name__}: {e}")
        return None

    def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: tuple[TopicPartition, ...] | list[TopicPartition],
    ) -> dict[TopicPartition, KafkaError | None]:
        """Append a marker to each partition; report ``__consumer_offsets`` ones to the groups.

        Returns each partition's outcome (None: written). Also serves WriteTxnMarkers.
        """
        results: dict[TopicPartition, KafkaError | None] = {}
        offsets_partitions: set[int] = set()
        for topic, index in partitions:
            try:
                self.replica_manager.append_markers(
                    topic, index, producer_id, producer_epoch, commit, coordinator_epoch
                )
            except KafkaError as e:
                results[(topic, index)] = e
                continue
            except Exception as e:
                log.exception("cannot write a marker to %s-%d", topic, index)
                results[(topic, index)] = UnknownServerError(f"{type(e).__name__}: {e}")
                continue
            results[(topic, index)] = None
            if topic == OFFSETS_TOPIC:
                offsets_partitions.add(index)
        if offsets_partitions and self.groups is not None:
            self.groups.on_txn_markers(producer_id, offsets_partitions, commit)
        return results

    # ------------------------------------------------------------------ timers
    def _rearm(self) -> None:
        if not self.started:
            return
        deadline = self.core.next_deadline()
        if deadline == self._armed and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._armed = deadline
        if deadline is None:
            return
        delay = max(deadline - self.now_ms(), 0) / 1000 + 0.001
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._armed = None
        if not self.started:
            return
        try:
            fx = self.core.poll(self.now_ms())
        except Exception:
            log.exception("transaction coordinator timer failed")
            fx = TxnEffects()
        self._process(fx)


__all__ = ["TRANSACTION_STATE_TOPIC", "MarkerRequest", "TransactionRuntime", "TxnLogRecord"]
