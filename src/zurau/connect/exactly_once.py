"""Exactly-once source connectors (KIP-618), in distributed mode.

With the worker property ``exactly.once.source.support=enabled`` every source task writes its
records and its source offsets in one Kafka transaction, with a producer of its own whose
``transactional.id`` is ``<group.id>-<connector>-<task>``:

* At start the task's producer calls ``init_transactions``: any earlier instance of the same task
  (a zombie on a worker that was cut off or killed) is fenced and its open transaction aborted.
  When a connector's task count shrinks, the worker fences the transactional ids of the tasks
  that are gone the same way (InitProducerId through the transactions admin).
* Each transaction holds the records the task polled and, written last, one offset record per
  source partition (key ``["<connector>", <partition>]``, JSON value, as Kafka's offset topic)
  to the connector's ``offsets.storage.topic`` or, if unset, the worker's offsets topic. So
  after a crash either both the records and their offsets are visible to read_committed readers,
  or neither: a restarted task resumes from the last committed offsets and produces nothing
  twice and loses nothing.
* ``transaction.boundary`` says when a transaction commits: ``poll`` (default) after the records
  of every non-empty ``poll()``, ``interval`` every ``transaction.boundary.interval.ms`` (default:
  the worker's ``offset.flush.interval.ms``), ``connector`` when the connector says so (no
  built-in connector can; validation refuses it unless ``can_define_transaction_boundaries``).
  A task stopping gracefully commits its open transaction; a task that fails aborts it.
* The offsets topics are read with read_committed, so aborted offsets are never applied.
* ``exactly.once.support``: ``requested`` (default) or ``required``, which refuses a connector
  whose ``exactly_once_support()`` is not ``"SUPPORTED"`` (checked only with the worker enabled).

Not done (differences from Kafka): no task-count record in the config topic and no fencing round
through the leader before a new generation's tasks start (each task fences its own id at start;
shrinking fences the removed ids); ``preparing`` behaves as ``disabled``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from json import dumps
from typing import Any

from zurau.client.producer import Producer
from zurau.client.types import RecordMetadata
from zurau.connect.api import SourceConnector, SourceTask, SourceTaskContext
from zurau.connect.records import SourceRecord
from zurau.connect.stores import OffsetStore, offset_key
from zurau.connect.task_runners import (
    FINAL_COMMIT_TIMEOUT_S,
    SourceTaskRunner,
    StoreOffsetReader,
    TaskEnv,
)
from zurau.connect.topic_creation import TopicCreator

log = logging.getLogger("zurau.connect.exactly_once")

EXACTLY_ONCE_SUPPORT = ("requested", "required")
TRANSACTION_BOUNDARIES = ("poll", "interval", "connector")


def transactional_id(group_id: str, connector: str, task: int) -> str:
    """Kafka's ``<groupId>-<connector>-<task>`` transactional id of a source task."""
    return f"{group_id}-{connector}-{task}"


@dataclass(frozen=True)
class ExactlyOnceSettings:
    """A source connector's KIP-618 settings."""

    support: str = "requested"
    boundary: str = "poll"
    interval_ms: int | None = None
    offsets_topic: str | None = None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> ExactlyOnceSettings:
        interval = config.get("transaction.boundary.interval.ms")
        topic = str(config.get("offsets.storage.topic") or "").strip()
        return cls(
            str(config.get("exactly.once.support") or "requested").strip().lower(),
            str(config.get("transaction.boundary") or "poll").strip().lower(),
            int(interval) if interval not in (None, "") else None,
            topic or None,
        )


def validation_errors(
    connector: SourceConnector, config: Mapping[str, Any], worker_enabled: bool
) -> dict[str, str]:
    """The KIP-618 errors of a source connector's config, by key (Kafka's wording)."""
    s = ExactlyOnceSettings.of(config)
    errors: dict[str, str] = {}
    if s.boundary == "interval" and s.interval_ms is not None and s.interval_ms < 0:
        errors["transaction.boundary.interval.ms"] = "Must be at least 0"
    if s.boundary != "interval" and s.interval_ms is not None:
        errors["transaction.boundary.interval.ms"] = (
            "This property may only be set when transaction.boundary is interval"
        )
    if not worker_enabled:
        return errors
    text = {str(k): str(v) for k, v in config.items()}
    if s.support == "required":
        answer = connector.exactly_once_support(text)
        if answer is None:
            errors["exactly.once.support"] = (
                "The connector does not implement the API required for preflight validation of exactly-once "
                "source support. Please consult the documentation for the connector to determine whether it "
                "supports exactly-once semantics, and then consider reconfiguring the connector to use the value "
                '"requested" for this property (which will disable this preflight check and allow the connector '
                "to be created)."
            )
        elif answer != "SUPPORTED":
            errors["exactly.once.support"] = (
                "The connector does not support exactly-once semantics with the provided configuration."
            )
    if s.boundary == "connector" and not connector.can_define_transaction_boundaries(text):
        errors["transaction.boundary"] = (
            "The connector does not support connector-defined transaction boundaries with the given configuration. "
            "Please reconfigure it to use a different transaction boundary definition."
        )
    return errors


class ConnectorOffsetStore(OffsetStore):
    """A connector's own offsets topic (``offsets.storage.topic``) read first, the worker's
    offsets topic for the source partitions it does not have (as Kafka reads them)."""

    def __init__(self, own: OffsetStore, worker: OffsetStore) -> None:
        super().__init__()
        self.own, self.worker = own, worker

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.own.get(connector, partition)
        return found if found is not None else self.worker.get(connector, partition)

    def offsets_of(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        merged = {dumps(p, sort_keys=True): (p, o) for p, o in self.worker.offsets_of(connector)}
        merged.update({dumps(p, sort_keys=True): (p, o) for p, o in self.own.offsets_of(connector)})
        return list(merged.values())

    async def refresh(self) -> None:
        await self.own.refresh()
        await self.worker.refresh()

    async def put(self, connector: str, offsets: Mapping[bytes, dict[str, Any] | None]) -> None:
        await self.own.put(connector, offsets)


class ExactlyOnceSourceTaskRunner(SourceTaskRunner):
    """A source task whose records and offsets commit in one transaction (see the module docstring).

    ``producer`` is the task's own transactional producer (closed by the runner); ``offsets`` the
    store its offsets are read from; ``offsets_topic`` the topic they are written to."""

    def __init__(
        self,
        env: TaskEnv,
        task: SourceTask,
        producer: Producer,
        offsets: OffsetStore,
        offsets_topic: str,
        settings: ExactlyOnceSettings,
        topic_creator: TopicCreator | None = None,
    ) -> None:
        super().__init__(env, task, producer, offsets, topic_creator)
        self.offsets_topic = offsets_topic
        self.settings = settings
        interval_ms = settings.interval_ms if settings.interval_ms is not None else env.flush_interval * 1000
        self.interval = interval_ms / 1000
        self._open_since: float | None = None

    async def run(self) -> None:
        env = self.env
        try:
            await self.producer.init_transactions()  # fences the task's zombies
            await self.offsets.refresh()
            self.task.initialize(
                SourceTaskContext(env.task_config, StoreOffsetReader(self.offsets, env.connector))
            )
            await self.call(self.task.start, env.task_config)
            await self.set_state("RUNNING")
            failed = True
            try:
                while await self.wait_resumed():
                    try:
                        records = await self.call(self.task.poll)
                    except Exception:
                        if self.stopping.is_set():
                            break
                        raise
                    if self.stopping.is_set() and not records:
                        break
                    if records:
                        if self._open_since is None:
                            self.producer.begin_transaction()
                            self._open_since = time.monotonic()
                        for record in records:
                            await self._send(record)
                    if self._open_since is not None and self._boundary_reached(bool(records)):
                        await self._commit_transaction()
                failed = False
            finally:
                if not self.killed and self._open_since is not None:
                    if failed:
                        await self._abort_quietly()
                    else:
                        await asyncio.wait_for(self._commit_transaction(), FINAL_COMMIT_TIMEOUT_S)
            if not self.stop_called:
                await self.call(self.task.stop)
        finally:
            await self._close_producer()

    def _boundary_reached(self, polled: bool) -> bool:
        if self.settings.boundary == "interval":
            assert self._open_since is not None
            return time.monotonic() - self._open_since >= self.interval
        return polled  # poll (and connector, which no built-in connector defines)

    async def _commit_transaction(self) -> None:
        """Write the latest offset per source partition, then commit records and offsets together."""
        done = list(self.outstanding)
        latest: dict[bytes, dict[str, Any]] = {}
        for record, _ in done:
            if record.source_partition is not None and record.source_offset is not None:
                latest[offset_key(self.env.connector, record.source_partition)] = dict(record.source_offset)
        try:
            for key, value in latest.items():
                await self.producer.send(self.offsets_topic, dumps(value).encode(), key)
            await self.producer.commit_transaction()
        except Exception:
            await self._abort_quietly()
            raise
        self._open_since = None
        self.outstanding.clear()
        acked: list[tuple[SourceRecord, RecordMetadata | None]] = []
        for record, fut in done:
            acked.append(
                (record, fut.result() if fut is not None and fut.done() and not fut.exception() else None)
            )

        def hooks() -> None:
            for record, meta in acked:
                self.task.commit_record(record, meta)
            self.task.commit()

        await self.call(hooks)

    async def _abort_quietly(self) -> None:
        self._open_since = None
        self.outstanding.clear()
        try:
            await self.producer.abort_transaction()
        except Exception as e:
            log.warning("task %s: aborting its transaction failed: %s", self.name, e)

    async def _close_producer(self) -> None:
        try:  # killed: the open transaction stays open until the task's next instance fences it
            await self.producer.close()
        except Exception as e:
            log.debug("task %s: closing its producer: %s", self.name, e)

    async def commit_offsets(self) -> None:  # offsets commit with the transaction only
        return None


__all__ = [
    "ConnectorOffsetStore",
    "EXACTLY_ONCE_SUPPORT",
    "TRANSACTION_BOUNDARIES",
    "ExactlyOnceSettings",
    "ExactlyOnceSourceTaskRunner",
    "transactional_id",
    "validation_errors",
]
