"""Running one task: the worker side of SourceTask and SinkTask.

Each task's methods run on a daemon thread of its own (:mod:`~zurau.connect.threads`), the Kafka clients on the
worker's event loop. A runner reports state changes through ``on_status(state, trace)``:
RUNNING once ``start`` returned, PAUSED/RUNNING on pause and resume, FAILED with the traceback
when any task method, converter or transform raises (the worker itself goes on).

Source: ``poll()`` → transforms → converters → (topic creation, :mod:`~zurau.connect.topic_creation`)
→ producer. Offsets of records Kafka acknowledged
are written every ``offset.flush.interval.ms`` and when the task stops, then ``commit()`` is
called. A record a transform drops counts as acknowledged. The periodic commit runs beside the
poll loop, as Kafka's offset committer does: polling goes on while the records sent so far are
acknowledged (one commit at a time, in order; a delivery failure then fails the task at its next
poll), so a commit never holds back the records committed in PostgreSQL meanwhile; the commit at
stop waits for everything.

Sink: a consumer in group ``connect-<connector>`` subscribed to ``topics`` (or the topics
matching ``topics.regex`` when the task starts) → converters → transforms → ``put()``. Every
``offset.flush.interval.ms`` and on stop: ``pre_commit()`` (by default ``flush()``) and then the
returned offsets are committed for the group. A ``put()`` raising RetriableException gets the same
batch again (after ``context.timeout(ms)``, else at the next offset flush); the batch's offsets
count only once ``put()`` took it.

Converters, header conversion and transforms run under the task's
:class:`~zurau.connect.errors.RetryWithToleranceOperator` (``errors.*``: retries, tolerance, the
error log and, for sinks, the dead letter queue); a failure it does not tolerate fails the task
with "Tolerance exceeded in error handler". Sink offsets are committed only after the dead letter
queue writes of the records before them are acknowledged. A source record whose send failed is
skipped (its offset committed) with ``errors.tolerance=all`` (KIP-779), else it fails the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import time
import traceback
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from zurau.client.admin import AdminClient
from zurau.client.cluster import Cluster
from zurau.client.consumer import Consumer
from zurau.client.producer import Producer
from zurau.client.types import ConsumerRecord, RecordMetadata, TopicPartition
from zurau.connect.api import (
    Converter,
    OffsetStorageReader,
    RetriableException,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
)
from zurau.connect.connector_config import TransformChain
from zurau.connect.errors import (
    ErrorHandlingConfig,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from zurau.connect.records import ConnectRecord, Header, SinkRecord, SourceRecord
from zurau.connect.stores import OffsetStore, offset_key
from zurau.connect.threads import CallThread, call_in_daemon
from zurau.connect.topic_creation import TopicCreator

log = logging.getLogger("zurau.connect.task")

T = TypeVar("T")
StatusCallback = Callable[[str, str | None], Awaitable[None]]
TopicCallback = Callable[[str], Awaitable[None]]


def header_bytes(value: Any) -> bytes | None:
    """A header value as bytes: str as UTF-8, bytes as they are, None as null, else JSON."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":"), default=str).encode("utf-8")


async def apply_transforms(chain: TransformChain, operator: RetryWithToleranceOperator, context: ProcessingContext,
                           record: ConnectRecord) -> ConnectRecord | None:
    """Kafka's TransformationChain: each step under the error handler (stage TRANSFORMATION, the
    transform's class); None when a step drops the record or fails tolerably."""
    current: ConnectRecord | None = record
    for step in chain.steps:
        if current is None:
            return None
        current = await operator.execute(context, functools.partial(step.apply, current), Stage.TRANSFORMATION,
                                         type(step.transform))
        if context.failed:
            return None
    return current


class StoreOffsetReader(OffsetStorageReader):
    """A task's view of its connector's committed offsets (read from the task's thread)."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self.store = store
        self.connector = connector

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.store.get(self.connector, partition)
        return dict(found) if found is not None else None


@dataclass
class TaskEnv:
    """What a runner needs from its worker."""

    connector: str
    task_id: int
    config: dict[str, str]
    connector_config: dict[str, str]
    key_converter: Converter
    value_converter: Converter
    transforms: TransformChain
    flush_interval: float
    on_status: StatusCallback
    on_topic: TopicCallback
    errors: RetryWithToleranceOperator | None = None  # None: errors.* defaults (nothing tolerated)
    start_config: dict[str, str] | None = None  # ``config`` with config-provider placeholders resolved

    def __post_init__(self) -> None:
        if self.errors is None:
            self.errors = RetryWithToleranceOperator(ErrorHandlingConfig())

    @property
    def operator(self) -> RetryWithToleranceOperator:
        assert self.errors is not None
        return self.errors

    @property
    def task_config(self) -> dict[str, str]:
        return dict(self.start_config if self.start_config is not None else self.config)


class TaskRunner(ABC):
    """Common lifecycle: :meth:`run` until :meth:`stop`; pause/resume; failure reporting."""

    def __init__(self, env: TaskEnv, task: Task) -> None:
        self.env = env
        self.task = task
        self.thread = CallThread(f"connect-{env.connector}-{env.task_id}")
        self.stopping = asyncio.Event()
        self.resumed = asyncio.Event()
        self.resumed.set()
        self.state = "UNASSIGNED"
        self.killed = False
        self.stop_called = False
        self._runner: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return f"{self.env.connector}-{self.env.task_id}"

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a task method on the task's thread."""
        return await self.thread.call(fn, *args)

    def start(self, paused: bool = False) -> None:
        if paused:
            self.resumed.clear()
        self._runner = asyncio.create_task(self._main(), name=f"zurau-connect-task-{self.name}")

    async def _main(self) -> None:
        try:
            await self.run()
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            trace = "".join(traceback.format_exception(e))
            log.error("task %s failed: %s", self.name, e)
            self.state = "FAILED"
            with contextlib.suppress(Exception):
                await self.env.on_status("FAILED", trace)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self.call(self.task.stop), 5)
        finally:
            self.thread.shutdown()

    async def set_state(self, state: str) -> None:
        self.state = state
        await self.env.on_status(state, None)

    def pause(self) -> None:
        self.resumed.clear()

    def resume(self) -> None:
        self.resumed.set()

    async def wait_resumed(self) -> bool:
        """Block while paused; False once stopping."""
        if not self.resumed.is_set():
            await self.set_state("PAUSED")
            stop = asyncio.create_task(self.stopping.wait())
            resume = asyncio.create_task(self.resumed.wait())
            await asyncio.wait({stop, resume}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            resume.cancel()
            if self.stopping.is_set():
                return False
            await self.set_state("RUNNING")
        return not self.stopping.is_set()

    async def stop(self, timeout: float = 5.0, kill: bool = False) -> None:
        """Ask the task to stop and wait up to ``timeout`` (``kill``: skip the final commit)."""
        self.killed = kill
        self.stopping.set()
        self.env.operator.trigger_stop()  # a record waiting for its next retry gives up
        runner = self._runner
        if runner is None:
            return
        # Interrupt a blocking poll: Kafka calls stop() from another thread as well.
        if isinstance(self.task, SourceTask) and not runner.done():
            self.stop_called = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(call_in_daemon(self.task.stop, name=f"connect-stop-{self.name}"), timeout)
        try:
            await asyncio.wait_for(asyncio.shield(runner), timeout)
        except (TimeoutError, asyncio.CancelledError):
            runner.cancel()
            with contextlib.suppress(BaseException):
                await runner
        except BaseException:
            pass

    @abstractmethod
    async def run(self) -> None:
        """Start the task and drive it until :attr:`stopping` is set; raise to fail it."""


#: How long a stopping source task waits for its records' acknowledgements before it gives up
#: committing their offsets (Kafka's ``offset.flush.timeout.ms`` default).
FINAL_COMMIT_TIMEOUT_S = 5.0


class SourceTaskRunner(TaskRunner):
    task: SourceTask

    def __init__(self, env: TaskEnv, task: SourceTask, producer: Producer, offsets: OffsetStore,
                 topic_creator: TopicCreator | None = None) -> None:
        super().__init__(env, task)
        self.producer = producer
        self.offsets = offsets
        self.topic_creator = topic_creator
        # (record, ack future or None when dropped) in poll order
        self.outstanding: deque[tuple[SourceRecord, asyncio.Future[RecordMetadata] | None]] = deque()
        self.topics_seen: set[str] = set()
        self._committing: asyncio.Task[None] | None = None  # the latest background commit

    async def run(self) -> None:
        env = self.env
        await self.offsets.refresh()
        self.task.initialize(SourceTaskContext(env.task_config, StoreOffsetReader(self.offsets, env.connector)))
        await self.call(self.task.start, env.task_config)
        await self.set_state("RUNNING")
        last_flush = time.monotonic()
        failed = True
        try:
            while await self.wait_resumed():
                try:
                    records = await self.call(self.task.poll)
                except Exception:
                    if self.stopping.is_set():  # stop() closed what poll() was reading
                        break
                    raise
                if self.stopping.is_set() and not records:
                    break
                for record in records or []:
                    await self._send(record)
                committing = self._committing
                if committing is not None and committing.done():
                    self._committing = None
                    committing.result()  # a delivery failure fails the task here
                if time.monotonic() - last_flush >= env.flush_interval:
                    self.commit_offsets_in_background()
                    last_flush = time.monotonic()
            failed = False
        finally:
            if not self.killed and self.state != "FAILED":
                # The final commit, also of a failing task (what Kafka acknowledged before the
                # failure is not produced again after a restart), for at most
                # FINAL_COMMIT_TIMEOUT_S (Kafka's offset.flush.timeout.ms); records still
                # unacknowledged then are sent again after a restart (at least once).
                try:
                    await asyncio.wait_for(self.commit_offsets(), FINAL_COMMIT_TIMEOUT_S)
                except TimeoutError:
                    log.warning("task %s: records not acknowledged within %.0f s; their offsets are not "
                                "committed", self.name, FINAL_COMMIT_TIMEOUT_S)
                except Exception as e:
                    if not failed:
                        raise
                    log.warning("task %s: the final offset commit of a failing task failed: %s", self.name, e)
        if not self.stop_called:
            await self.call(self.task.stop)

    async def _send(self, record: SourceRecord) -> None:
        """Transforms, then converters, each under the error handler (Kafka's order); a record
        dropped by a transform or skipped as a tolerated failure counts as acknowledged."""
        env = self.env
        op = env.operator
        context = ProcessingContext(source_record=record)
        transformed = await apply_transforms(env.transforms, op, context, record)
        if transformed is None:
            self.outstanding.append((record, None))
            return
        key = await op.execute(context, lambda: env.key_converter.from_connect_data(
            transformed.topic, transformed.key_schema, transformed.key), Stage.KEY_CONVERTER, type(env.key_converter))
        value = await op.execute(context, lambda: env.value_converter.from_connect_data(
            transformed.topic, transformed.value_schema, transformed.value), Stage.VALUE_CONVERTER,
            type(env.value_converter))
        headers = await op.execute(context, lambda: [(k, header_bytes(v)) for k, v in transformed.headers],
                                   Stage.HEADER_CONVERTER, type(self))
        if context.failed:
            self.outstanding.append((record, None))
            return
        if self.topic_creator is not None:
            await self.topic_creator.ensure(transformed.topic)
        fut = await self.producer.send(transformed.topic, value, key, headers=headers or [],
                                       partition=transformed.kafka_partition, timestamp_ms=transformed.timestamp)
        self.outstanding.append((record, fut))
        if transformed.topic not in self.topics_seen:
            self.topics_seen.add(transformed.topic)
            await env.on_topic(transformed.topic)

    def commit_offsets_in_background(self) -> None:
        """Start committing the records sent so far (:meth:`_commit`) after the commit before it,
        without waiting: the poll loop goes on meanwhile."""
        if not self.outstanding:
            return
        done = list(self.outstanding)
        self.outstanding.clear()
        self._committing = asyncio.get_running_loop().create_task(self._commit(done, self._committing))

    async def commit_offsets(self) -> None:
        """Commit every record sent so far and wait for it, and for any commit still running."""
        self.commit_offsets_in_background()
        committing, self._committing = self._committing, None
        if committing is not None:
            await committing

    async def _commit(
        self,
        done: list[tuple[SourceRecord, asyncio.Future[RecordMetadata] | None]],
        previous: asyncio.Task[None] | None,
    ) -> None:
        """Once the commit before has finished, wait for every record's acknowledgement, store
        the latest offset per source partition, then call the task's commit hooks."""
        if previous is not None:
            await previous
        latest: dict[bytes, dict[str, Any] | None] = {}
        acked: list[tuple[SourceRecord, RecordMetadata | None]] = []
        for record, fut in done:
            meta = None
            if fut is not None:
                try:
                    meta = await fut
                except Exception as e:
                    # KIP-779: with errors.tolerance=all a failed send is reported and skipped (its
                    # offset committed); otherwise the delivery failure fails the task.
                    if not self.env.operator.config.tolerance_all:
                        raise
                    await self.env.operator.execute_failed(ProcessingContext(source_record=record),
                                                           Stage.KAFKA_PRODUCE, type(self), e)
            acked.append((record, meta))
            if record.source_partition is not None and record.source_offset is not None:
                latest[offset_key(self.env.connector, record.source_partition)] = dict(record.source_offset)
        if latest:
            await self.offsets.put(self.env.connector, latest)

        def hooks() -> None:
            for record, meta in acked:
                self.task.commit_record(record, meta)
            self.task.commit()

        await self.call(hooks)


class SinkTaskRunner(TaskRunner):
    task: SinkTask

    def __init__(self, env: TaskEnv, task: SinkTask, cluster: Cluster, session_timeout_ms: int,
                 heartbeat_interval_ms: int, dlq_setup: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__(env, task)
        self.cluster = cluster
        self.dlq_setup = dlq_setup  # creates the dead letter queue topic if missing
        self.consumer = Consumer(cluster, group_id=f"connect-{env.connector}", auto_offset_reset="earliest",
                                 fetch_max_wait_ms=200, session_timeout_ms=session_timeout_ms,
                                 heartbeat_interval_ms=heartbeat_interval_ms)
        self.positions: dict[TopicPartition, int] = {}
        self.assigned: list[TopicPartition] = []

    async def _topics(self) -> list[str]:
        topics = [t.strip() for t in self.env.connector_config.get("topics", "").split(",") if t.strip()]
        regex = self.env.connector_config.get("topics.regex", "").strip()
        if regex:
            pattern = re.compile(regex)
            names = await AdminClient(self.cluster).list_topics()
            topics = sorted(t for t in names if pattern.fullmatch(t))
        return topics

    async def run(self) -> None:
        env = self.env
        if self.dlq_setup is not None:
            await self.dlq_setup()
        context = SinkTaskContext(env.task_config)
        self.task.initialize(context)
        await self.call(self.task.start, env.task_config)
        topics = await self._topics()
        await self.consumer.subscribe(topics)
        for t in topics:
            await env.on_topic(t)
        await self._sync_assignment(context)
        await self.set_state("RUNNING")
        last_flush = time.monotonic()
        try:
            while await self.wait_resumed():
                for tp, off in list(context.requested_offsets.items()):
                    if tp in self.consumer.assignment():
                        self.consumer.seek(tp, off)
                        self.positions[tp] = off
                context.requested_offsets.clear()
                batches = await self.consumer.getmany(timeout_ms=200, max_records=500)
                await self._sync_assignment(context)
                records: list[SinkRecord] = []
                consumed: dict[TopicPartition, int] = {}
                for tp, recs in batches.items():
                    for r in recs:
                        converted = await self._convert(r)
                        if converted is not None:
                            records.append(converted)
                    if recs:
                        consumed[tp] = recs[-1].offset + 1
                if records and not await self._put(context, records, last_flush):
                    break  # stopping while put() kept asking for redelivery: nothing of this batch counts
                for tp, off in consumed.items():
                    if tp in self.assigned:
                        self.positions[tp] = off
                if context.commit_requested or time.monotonic() - last_flush >= env.flush_interval:
                    context.commit_requested = False
                    await self.commit_offsets()
                    last_flush = time.monotonic()
            if not self.killed:
                await self.commit_offsets()
            await self.call(self.task.stop)
        finally:
            with contextlib.suppress(Exception):
                if self.killed:
                    assert self.consumer.group is not None
                    await self.consumer.group.stop_heartbeat()
                else:
                    await self.consumer.close()
            with contextlib.suppress(Exception):
                await self.cluster.close()

    async def _sync_assignment(self, context: SinkTaskContext) -> None:
        now = self.consumer.assignment()
        if now == self.assigned:
            return
        lost = [tp for tp in self.assigned if tp not in now]
        new = [tp for tp in now if tp not in self.assigned]
        self.assigned = now
        context._assignment = list(now)
        for tp in lost:
            self.positions.pop(tp, None)
        if lost:
            await self.call(self.task.close, lost)
        if new:
            await self.call(self.task.open, new)

    async def _put(self, context: SinkTaskContext, records: list[SinkRecord], last_flush: float) -> bool:
        """``put(records)``; a RetriableException hands the same batch again after
        ``context.timeout(ms)`` (else at the next offset flush), as Kafka's redelivery does, with
        offset commits of what came before going on meanwhile. False when the task stops first."""
        while True:
            try:
                await self.call(self.task.put, records)
                return True
            except RetriableException as e:
                log.warning("task %s: RetriableException from put(), the %d records are delivered again: %s",
                            self.name, len(records), e)
            wait = context.timeout_ms / 1000 if context.timeout_ms > 0 else max(
                0.0, self.env.flush_interval - (time.monotonic() - last_flush))
            context.timeout_ms = -1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), max(wait, 0.01))
            if self.stopping.is_set():
                return False
            if context.commit_requested or time.monotonic() - last_flush >= self.env.flush_interval:
                context.commit_requested = False
                await self.commit_offsets()
                last_flush = time.monotonic()

    async def _convert(self, r: ConsumerRecord) -> SinkRecord | None:
        """Converters (key, value, headers), then transforms, each under the error handler with the
        consumed record in the context (for the dead letter queue); None: dropped or skipped."""
        env = self.env
        op = env.operator
        context = ProcessingContext(consumer_record=r)
        key = await op.execute(context, lambda: env.key_converter.to_connect_data(r.topic, r.key),
                               Stage.KEY_CONVERTER, type(env.key_converter))
        value = await op.execute(context, lambda: env.value_converter.to_connect_data(r.topic, r.value),
                                 Stage.VALUE_CONVERTER, type(env.value_converter))
        headers: tuple[Header, ...] | None = await op.execute(
            context, lambda: tuple((k, v) for k, v in r.headers), Stage.HEADER_CONVERTER, type(self))
        if context.failed or key is None or value is None:
            return None
        record = SinkRecord(topic=r.topic, kafka_partition=r.partition, key_schema=key.schema, key=key.value,
                            value_schema=value.schema, value=value.value, timestamp=r.timestamp,
                            headers=headers or (), kafka_offset=r.offset,
                            timestamp_type="LogAppendTime" if r.timestamp_type == 1 else "CreateTime")
        out = await apply_transforms(env.transforms, op, context, record)
        return out if isinstance(out, SinkRecord) else None

    async def commit_offsets(self) -> None:
        """Flush the task (``pre_commit``) and commit what it returns, after every dead letter queue
        write of the records before these offsets is acknowledged (a failed one fails the task)."""
        if not self.positions:
            return
        await self.env.operator.await_reported()
        current = dict(self.positions)
        to_commit = await self.call(self.task.pre_commit, current)
        if to_commit:
            await self.consumer.commit(to_commit)
