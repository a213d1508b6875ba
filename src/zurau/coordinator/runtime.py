"""The group coordinator's async shell: the only part that touches the log, the loop and the clock.

* Requests: :meth:`GroupCoordinatorRuntime.submit` gives the state machine a token and returns a
  future that the reply for that token completes (at once, or later for a parked JoinGroup or
  SyncGroup). A cancelled future (the client went away) is simply dropped when its reply comes.
* Writes: records are appended as one batch per write to their ``__consumer_offsets`` partition
  through the :class:`~zurau.replication.replica_manager.ReplicaManager` (acks=all); the append is
  synchronous on a single node, so the outcome is reported to the state machine at once and its
  continuation runs before the next input.
* Timers: one ``loop.call_later`` handle, re-armed to the state machine's next deadline after every
  input.
* Transactions: a TxnOffsetCommit is appended as a transactional batch of its producer; the
  transaction coordinator reports each COMMIT/ABORT marker it appends to a ``__consumer_offsets``
  partition through :meth:`GroupCoordinatorRuntime.on_txn_markers`, which commits or drops the
  pending offsets (the loader does the same with the markers it reads).
* ``__consumer_offsets`` is created on first use (``cleanup.policy=compact``,
  ``offsets.topic.num.partitions`` partitions, ``offsets.topic.segment.bytes``); if it exists at
  start-up every partition is read from its log start to its high watermark and replayed before
  the broker listens. An existing topic's partition count wins over the config, as in Kafka.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from zurau.coordinator.consumer_group import TopicsView
from zurau.coordinator.group_coordinator import CoordinatorConfig, Effects, GroupCoordinator, Write
from zurau.coordinator.internal_topic import replay_partition
from zurau.coordinator.records import CoordinatorRecord, TxnMarker, build_records_batch, iter_log_batches
from zurau.protocol.errors import (
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
    UnknownServerError,
)
from zurau.replication.replica_manager import ReplicaManager

log = logging.getLogger("zurau.coordinator")

OFFSETS_TOPIC = "__consumer_offsets"


class TopicCreator(Protocol):
    def __call__(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str | None]
    ) -> Any: ...


class GroupCoordinatorRuntime:
    def __init__(
        self,
        broker_config: Any,
        replica_manager: ReplicaManager,
        topics: TopicsView,
        create_topic: TopicCreator,
        now_ms: Callable[[], int],
    ) -> None:
        self.broker_config = broker_config
        self.replica_manager = replica_manager
        self.topics = topics
        self._create_topic = create_topic
        self.now_ms = now_ms
        self.core: GroupCoordinator
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._tokens = itertools.count(1)
        self._timer: asyncio.TimerHandle | None = None
        self._armed: int | None = None
        self._compression = int(broker_config.get("offsets.topic.compression.codec"))
        self.started = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Build the state machine, replay ``__consumer_offsets`` if it exists, arm the timers."""
        existing = self.topics.get(OFFSETS_TOPIC)
        n = existing.partitions if existing is not None else None
        self.core = GroupCoordinator(CoordinatorConfig.from_broker_config(self.broker_config, n), self.topics)
        if existing is not None:
            self._load(existing.partitions)
        self.core.start(self.now_ms())
        self.started = True
        self._rearm()

    def stop(self) -> None:
        self.started = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for fut in self._waiting.values():
            if not fut.done():
                fut.cancel()
        self._waiting.clear()

    def _load(self, partitions: int) -> None:
        t0 = time.monotonic()
        buffer = int(self.broker_config.get("offsets.load.buffer.size"))
        count = 0

        def records() -> Any:
            nonlocal count
            for index in range(partitions):
                p = self.replica_manager.get(OFFSETS_TOPIC, index)
                if p is None:
                    continue
                start = p.log.log_start_offset
                where = f"{OFFSETS_TOPIC}-{index}"
                for _nxt, recs in replay_partition(p.log, buffer, iter_log_batches, where):
                    for o, rec in recs:
                        if o >= start and rec is not None:
                            count += 1
                            if isinstance(rec, TxnMarker):
                                rec = TxnMarker(rec.producer_id, rec.commit, index)
                            yield rec

        self.core.load(records())
        log.info(
            "loaded %d groups (%d records) from %s in %.0f ms",
            len(self.core.groups),
            count,
            OFFSETS_TOPIC,
            (time.monotonic() - t0) * 1000,
        )

    # ------------------------------------------------------------------ topic
    def ensure_offsets_topic(self) -> Any:
        """Create ``__consumer_offsets`` if it does not exist yet; return its metadata."""
        t = self.topics.get(OFFSETS_TOPIC)
        if t is not None:
            return t
        cfg = self.broker_config
        self._create_topic(
            OFFSETS_TOPIC,
            self.core.config.num_partitions,
            int(cfg.get("offsets.topic.replication.factor")),
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(cfg.get("offsets.topic.segment.bytes")),
                "compression.type": "producer",
            },
        )
        return self.topics.get(OFFSETS_TOPIC)

    def coordinator_error(self, group_id: str) -> KafkaError | None:
        """None if this broker coordinates ``group_id`` (creating the offsets topic on first use)."""
        if not self.started:
            return CoordinatorNotAvailableError("the group coordinator is not running")
        try:
            self.ensure_offsets_topic()
        except KafkaError as e:
            log.error("cannot create %s: %s", OFFSETS_TOPIC, e)
            return CoordinatorNotAvailableError(f"{OFFSETS_TOPIC} cannot be created: {e}")
        p = self.replica_manager.get(OFFSETS_TOPIC, self.core.partition_for(group_id))
        if p is None or p.leader_id != self.replica_manager.node_id:
            return NotCoordinatorError(f"this broker does not coordinate group {group_id!r}")
        return None

    def on_txn_markers(self, producer_id: int, partitions: set[int], commit: bool) -> None:
        """COMMIT/ABORT markers of ``producer_id`` were appended to these ``__consumer_offsets``
        partitions: commit or drop its pending transactional offsets in their groups."""
        if self.started:
            self.core.complete_transaction(producer_id, partitions, commit)

    def on_topic_deleted(self, topic: str) -> None:
        """Drop committed offsets of a deleted topic (tombstones in ``__consumer_offsets``)."""
        if self.started and topic != OFFSETS_TOPIC and self.topics.get(OFFSETS_TOPIC) is not None:
            self._process(self.core.delete_topic_offsets(topic, self.now_ms()))

    # ------------------------------------------------------------------ requests
    def submit(self, op: Callable[[int, int], Effects]) -> asyncio.Future[Any]:
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

    def _process(self, fx: Effects) -> None:
        self._run(fx)
        self._rearm()

    def _run(self, fx: Effects) -> None:
        for w in fx.writes:
            err = self._append(w)
            self._run(self.core.complete_write(w, err, self.now_ms()))
        for token, result in fx.replies:
            fut = self._waiting.pop(token, None)
            if fut is not None and not fut.done():
                fut.set_result(result)

    def _append(self, w: Write) -> KafkaError | None:
        try:
            batch = build_records_batch(
                w.records,
                self.now_ms(),
                self._compression,
                producer_id=w.producer_id,
                producer_epoch=w.producer_epoch,
            )
            self.replica_manager.append(OFFSETS_TOPIC, w.partition, memoryview(batch), -1)
        except KafkaError as e:
            log.warning("cannot write %d records of group %s: %s", len(w.records), w.group_id, e)
            return e
        except Exception as e:
            log.exception("cannot write records of group %s", w.group_id)
            return UnknownServerError(f"{type(e).__name__}: {e}")
        return None

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
            log.exception("group coordinator timer failed")
            fx = Effects()
        self._process(fx)


__all__ = ["OFFSETS_TOPIC", "CoordinatorRecord", "GroupCoordinatorRuntime"]
