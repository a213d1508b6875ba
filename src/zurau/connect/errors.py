"""Connect's error handling (KIP-298, KIP-610): retries with backoff, tolerance, error reporters.

One :class:`RetryWithToleranceOperator` per task runs each stage of a record's way through the
worker (:class:`Stage`): converters and transforms of sink and source tasks, and it is told of
failed producer sends of source tasks (``KAFKA_PRODUCE``).

Retries: an operation that raises :class:`~zurau.connect.api.RetriableException` is tried again
after 300 ms, 600 ms, 1.2 s ... (doubling), a delay above ``errors.retry.delay.max.ms`` replaced by
a random one below it (jitter), the last one cut to end at the deadline, until
``errors.retry.timeout`` ms after the first attempt (0: never retry; -1: retry forever). Other
exceptions are not retried.

Tolerance: a converter, header-converter or transform failure (any exception), or a retriable
failure whose retries ran out, is a failed record. With ``errors.tolerance=none`` the first one
fails the task with :class:`~zurau.connect.api.ConnectException` ``"Tolerance exceeded in error
handler"`` (caused by the record's error); with ``all`` the record is skipped. An exception of
any other stage that is not retriable fails the task (``"Unhandled exception in error handler"``).
Exhausted retries count as a failed record under the tolerance, as Kafka does since KAFKA-18073
(before it, such records were dropped even with ``none``).

Reporters see every failed record, also the one that fails the task:

* :class:`LogReporter` (``errors.log.enable``) logs ``Error encountered in task <connector>-<task>.
  Executing stage '<STAGE>' with class '<class>'[, where consumed record is {topic='t',
  partition=0, offset=7, timestamp=..., timestampType=CreateTime}].`` at ERROR with the error's
  traceback; the record part only with ``errors.log.include.messages``.
* :class:`DeadLetterQueueReporter` (sink connectors, ``errors.deadletterqueue.topic.name``)
  produces the original consumed record, key, value, headers and timestamp byte for byte, to the
  dead letter queue topic; with ``errors.deadletterqueue.context.headers.enable`` it appends the
  ``__connect.errors.*`` headers of :func:`context_headers`. Its produce futures are kept by the
  operator until :meth:`RetryWithToleranceOperator.await_reported`; the sink runner awaits them
  before it commits the consumer offsets that pass those records (a DLQ write that fails then
  fails the task instead of being committed past).

Counters are Kafka's ``task-error-metrics`` (:class:`ErrorHandlingMetrics`). Everything here runs
on the worker's event loop; time and sleeping are injected for tests.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from zurau.client.types import ConsumerRecord, RecordMetadata
from zurau.connect.api import ConnectException, RetriableException
from zurau.connect.data import DataException
from zurau.connect.records import SourceRecord

log = logging.getLogger("zurau.connect.errors")

V = TypeVar("V")

#: The first retry's delay; each later one doubles (Kafka's ``RETRIES_DELAY_MIN_MS``).
RETRIES_DELAY_MIN_MS = 300

HEADER_PREFIX = "__connect.errors."
ERROR_HEADER_ORIG_TOPIC = HEADER_PREFIX + "topic"
ERROR_HEADER_ORIG_PARTITION = HEADER_PREFIX + "partition"
ERROR_HEADER_ORIG_OFFSET = HEADER_PREFIX + "offset"
ERROR_HEADER_CONNECTOR_NAME = HEADER_PREFIX + "connector.name"
ERROR_HEADER_TASK_ID = HEADER_PREFIX + "task.id"
ERROR_HEADER_STAGE = HEADER_PREFIX + "stage"
ERROR_HEADER_EXECUTING_CLASS = HEADER_PREFIX + "class.name"
ERROR_HEADER_EXCEPTION = HEADER_PREFIX + "exception.class.name"
ERROR_HEADER_EXCEPTION_MESSAGE = HEADER_PREFIX + "exception.message"
ERROR_HEADER_EXCEPTION_STACK_TRACE = HEADER_PREFIX + "exception.stacktrace"

#: The dead letter queue topic is created with one partition (Kafka's ``DLQ_NUM_DESIRED_PARTITIONS``).
DLQ_NUM_PARTITIONS = 1

TOLERANCE_EXCEEDED = "Tolerance exceeded in error handler"
UNHANDLED = "Unhandled exception in error handler"

# Connect's own exceptions go by Kafka's class names in headers, so DLQ consumers written for
# Kafka match them; any other exception by its Python ``module.QualName``.
_KAFKA_EXCEPTION_NAMES: dict[type, str] = {
    ConnectException: "org.apache.kafka.connect.errors.ConnectException",
    RetriableException: "org.apache.kafka.connect.errors.RetriableException",
    DataException: "org.apache.kafka.connect.errors.DataException",
}


class Stage(enum.Enum):
    """Where in a record's pipeline an operation runs (Kafka's names, sent in the stage header)."""

    TASK_POLL = "TASK_POLL"
    TASK_PUT = "TASK_PUT"
    TRANSFORMATION = "TRANSFORMATION"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


#: Stages whose every exception is a record failure (tolerated with ``all``); at the others only
#: RetriableException is.
TOLERATES_ANY = frozenset(
    {Stage.TRANSFORMATION, Stage.HEADER_CONVERTER, Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER}
)


def python_class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def exception_class_name(error: BaseException) -> str:
    return _KAFKA_EXCEPTION_NAMES.get(type(error)) or python_class_name(type(error))


def _message(error: BaseException) -> str | None:
    """Java's ``getMessage()``: None for an exception raised without one."""
    return str(error) if error.args else None


@dataclass(frozen=True)
class ErrorHandlingConfig:
    """The ``errors.*`` settings of one connector (see :func:`from_connector_config`)."""

    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    tolerance_all: bool = False
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    @classmethod
    def from_connector_config(cls, config: Mapping[str, Any], sink: bool) -> ErrorHandlingConfig:
        """Read a validated connector config; the dead letter queue settings count for sinks only
        (Kafka defines them in SinkConnectorConfig: a source connector's are ignored)."""

        def text(key: str, default: str) -> str:
            v = config.get(key)
            return default if v is None or str(v).strip() == "" else str(v).strip()

        def flag(key: str) -> bool:
            return text(key, "false").lower() == "true"

        return cls(
            retry_timeout_ms=int(text("errors.retry.timeout", "0")),
            retry_delay_max_ms=int(text("errors.retry.delay.max.ms", "60000")),
            tolerance_all=text("errors.tolerance", "none").lower() == "all",
            log_enable=flag("errors.log.enable"),
            log_include_messages=flag("errors.log.include.messages"),
            dlq_topic=str(config.get("errors.deadletterqueue.topic.name") or "").strip() if sink else "",
            dlq_replication_factor=int(text("errors.deadletterqueue.topic.replication.factor", "3")),
            dlq_context_headers=sink and flag("errors.deadletterqueue.context.headers.enable"),
        )


class ErrorHandlingMetrics:
    """Kafka's ``task-error-metrics`` of one task (totals since the task started)."""

    NAMES = (
        "total-record-failures",
        "total-record-errors",
        "total-records-skipped",
        "total-retries",
        "total-errors-logged",
        "deadletterqueue-produce-requests",
        "deadletterqueue-produce-failures",
    )

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.record_failures = 0  # every failed attempt, retriable or not
        self.record_errors = 0  # operations that finally failed
        self.records_skipped = 0
        self.retries = 0
        self.errors_logged = 0
        self.dlq_produce_requests = 0
        self.dlq_produce_failures = 0
        self.last_error_timestamp = 0  # ms since the epoch; 0 before the first failure

    def record_error_timestamp(self) -> None:
        self.last_error_timestamp = self._clock_ms()

    def values(self) -> dict[str, int]:
        """Kafka's metric name -> value."""
        return {
            "total-record-failures": self.record_failures,
            "total-record-errors": self.record_errors,
            "total-records-skipped": self.records_skipped,
            "total-retries": self.retries,
            "total-errors-logged": self.errors_logged,
            "deadletterqueue-produce-requests": self.dlq_produce_requests,
            "deadletterqueue-produce-failures": self.dlq_produce_failures,
            "last-error-timestamp": self.last_error_timestamp,
        }


@dataclass
class ProcessingContext:
    """One record's way through the stages: the record, where it is, and its error if any."""

    consumer_record: ConsumerRecord | None = None  # sink: the record as consumed
    source_record: SourceRecord | None = None  # source: the record as polled
    stage: Stage | None = None
    executing_class: type | None = None
    attempt: int = 0
    error: BaseException | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def describe(self, include_message: bool, class_name: Callable[[type], str] = python_class_name) -> str:
        """Kafka's ``ProcessingContext.toString(includeMessage)``."""
        stage = self.stage.value if self.stage is not None else "null"
        cls = class_name(self.executing_class) if self.executing_class is not None else "null"
        out = f"Executing stage '{stage}' with class '{cls}'"
        if include_message and self.source_record is not None:
            out += f", where source record is = {_source_record_text(self.source_record)}"
        elif include_message and self.consumer_record is not None:
            r = self.consumer_record
            out += (
                f", where consumed record is {{topic='{r.topic}', partition={r.partition}, offset={r.offset}"
            )
            if r.timestamp >= 0 and r.timestamp_type in (0, 1):
                out += f", timestamp={r.timestamp}, timestampType={'LogAppendTime' if r.timestamp_type else 'CreateTime'}"
            out += "}"
        return out + "."


def _source_record_text(r: SourceRecord) -> str:
    return (
        f"SourceRecord{{sourcePartition={dict(r.source_partition or {})}, "
        f"sourceOffset={dict(r.source_offset or {})}}} ConnectRecord{{topic='{r.topic}', "
        f"kafkaPartition={r.kafka_partition}, key={r.key!r}, keySchema={r.key_schema}, value={r.value!r}, "
        f"valueSchema={r.value_schema}, timestamp={r.timestamp}, headers={list(r.headers)}}}"
    )


class ErrorReporter(Protocol):
    async def report(self, context: ProcessingContext) -> asyncio.Future[RecordMetadata] | None:
        """Report a failed record; a future when the report completes later (a DLQ write)."""

    def close(self) -> None: ...


class LogReporter:
    """``errors.log.enable``: each failure at ERROR on ``zurau.connect.errors`` with its traceback."""

    def __init__(
        self,
        connector: str,
        task_id: int,
        include_messages: bool,
        metrics: ErrorHandlingMetrics,
        class_name: Callable[[type], str] = python_class_name,
    ) -> None:
        self.task = f"{connector}-{task_id}"
        self.include_messages = include_messages
        self.metrics = metrics
        self.class_name = class_name

    def message(self, context: ProcessingContext) -> str:
        return f"Error encountered in task {self.task}. {context.describe(self.include_messages, self.class_name)}"

    async def report(self, context: ProcessingContext) -> None:
        if not context.failed:
            return None
        error = context.error
        assert error is not None
        log.error(self.message(context), exc_info=(type(error), error, error.__traceback__))
        self.metrics.errors_logged += 1
        return None

    def close(self) -> None:
        pass


class RecordSender(Protocol):
    """The part of :class:`zurau.client.producer.Producer` the dead letter queue uses."""

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> asyncio.Future[RecordMetadata]: ...


def _utf8(value: str | None) -> bytes | None:
    return value.encode("utf-8") if value is not None else None


def context_headers(
    context: ProcessingContext,
    connector: str,
    task_id: int,
    class_name: Callable[[type], str] = python_class_name,
) -> list[tuple[str, bytes | None]]:
    """The ``__connect.errors.*`` headers of a failed record, in Kafka's order and encoding: every
    value is UTF-8 text, numbers (partition, offset, task id) in decimal; the exception message is
    a null header when the exception has none; the stack trace is the Python traceback."""
    out: list[tuple[str, bytes | None]] = []
    r = context.consumer_record
    if r is not None:
        out += [
            (ERROR_HEADER_ORIG_TOPIC, _utf8(r.topic)),
            (ERROR_HEADER_ORIG_PARTITION, _utf8(str(r.partition))),
            (ERROR_HEADER_ORIG_OFFSET, _utf8(str(r.offset))),
        ]
    out.append((ERROR_HEADER_CONNECTOR_NAME, _utf8(connector)))
    out.append((ERROR_HEADER_TASK_ID, _utf8(str(task_id))))
    out.append((ERROR_HEADER_STAGE, _utf8(context.stage.value if context.stage is not None else None)))
    out.append(
        (
            ERROR_HEADER_EXECUTING_CLASS,
            _utf8(class_name(context.executing_class) if context.executing_class is not None else None),
        )
    )
    error = context.error
    if error is not None:
        out.append((ERROR_HEADER_EXCEPTION, _utf8(exception_class_name(error))))
        out.append((ERROR_HEADER_EXCEPTION_MESSAGE, _utf8(_message(error))))
        out.append((ERROR_HEADER_EXCEPTION_STACK_TRACE, _utf8("".join(traceback.format_exception(error)))))
    return out


class DeadLetterQueueReporter:
    """Writes the original consumed record of each failure to the dead letter queue topic (which
    the worker has created, with :data:`DLQ_NUM_PARTITIONS` partition, before the task starts)."""

    def __init__(
        self,
        producer: RecordSender,
        topic: str,
        context_headers_enabled: bool,
        connector: str,
        task_id: int,
        metrics: ErrorHandlingMetrics,
        class_name: Callable[[type], str] = python_class_name,
    ) -> None:
        self.producer = producer
        self.topic = topic.strip()
        self.context_headers_enabled = context_headers_enabled
        self.connector = connector
        self.task_id = task_id
        self.metrics = metrics
        self.class_name = class_name

    async def report(self, context: ProcessingContext) -> asyncio.Future[RecordMetadata] | None:
        if not self.topic:
            return None
        self.metrics.dlq_produce_requests += 1
        r = context.consumer_record
        if r is None:
            self.metrics.dlq_produce_failures += 1
            return None
        headers = list(r.headers)
        if self.context_headers_enabled:
            headers += context_headers(context, self.connector, self.task_id, self.class_name)
        try:
            fut = await self.producer.send(
                self.topic,
                r.value,
                r.key,
                headers=headers,
                timestamp_ms=r.timestamp if r.timestamp >= 0 else None,
            )
        except Exception as e:
            log.error("Could not produce message to dead letter queue. topic=%s", self.topic, exc_info=True)
            self.metrics.dlq_produce_failures += 1
            failed: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
            failed.set_exception(e)
            return failed
        fut.add_done_callback(self._done)
        return fut

    def _done(self, fut: asyncio.Future[RecordMetadata]) -> None:
        if fut.cancelled():
            return
        e = fut.exception()
        if e is not None:
            log.error("Could not produce message to dead letter queue. topic=%s: %s", self.topic, e)
            self.metrics.dlq_produce_failures += 1

    def close(self) -> None:
        pass


Sleep = Callable[[float], Awaitable[None]]


class RetryWithToleranceOperator:
    """Runs one task's per-record operations with retries, tolerance and reporting (see the module
    docstring). ``clock_ms`` and ``sleep`` (milliseconds) are injectable; by default the sleep
    ends early when :meth:`trigger_stop` is called."""

    def __init__(
        self,
        config: ErrorHandlingConfig,
        metrics: ErrorHandlingMetrics | None = None,
        reporters: Sequence[ErrorReporter] = (),
        *,
        clock_ms: Callable[[], float] | None = None,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        class_name: Callable[[type], str] = python_class_name,
    ) -> None:
        self.config = config
        self.class_name = class_name  # how executing classes are named in logs and headers
        self.metrics = metrics or ErrorHandlingMetrics()
        self.reporters = list(reporters)
        self._clock_ms = clock_ms or (lambda: time.monotonic() * 1000)
        self._sleep = sleep or self._interruptible_sleep
        self._rng = rng or random.Random()
        self._stop = asyncio.Event()
        self.total_failures = 0
        self.pending: list[asyncio.Future[RecordMetadata]] = []  # reporters' writes not awaited yet

    # ------------------------------------------------------------------ running operations
    async def execute(
        self, context: ProcessingContext, operation: Callable[[], V], stage: Stage, executing_class: type
    ) -> V | None:
        """``operation()``'s result; None when it failed and the failure is tolerated (then
        ``context.failed``), or when the context had failed at an earlier stage. Raises
        ConnectException when the failure is not tolerated."""
        context.stage, context.executing_class = stage, executing_class
        if context.failed:
            return None
        try:
            return await self._exec_and_handle_error(context, operation, stage)
        finally:
            if context.failed:
                self.metrics.record_errors += 1
                await self.report(context)

    async def _exec_and_retry(self, context: ProcessingContext, operation: Callable[[], V]) -> V | None:
        attempt = 0
        start = self._clock_ms()
        timeout = self.config.retry_timeout_ms
        deadline = start + timeout if timeout >= 0 else float("inf")
        while True:
            attempt += 1
            context.attempt = attempt
            try:
                return operation()
            except RetriableException as e:
                log.debug("retriable failure at %s (attempt %d): %s", context.stage, attempt, e)
                self.metrics.record_failures += 1
                if self._clock_ms() < deadline and not self._stop.is_set():
                    await self.backoff(attempt, deadline)
                    self.metrics.retries += 1
                    if not self._stop.is_set():
                        continue
                context.error = e
                return None

    async def _exec_and_handle_error(
        self, context: ProcessingContext, operation: Callable[[], V], stage: Stage
    ) -> V | None:
        try:
            result = await self._exec_and_retry(context, operation)
        except Exception as e:
            self.metrics.record_failures += 1
            self._mark_as_failed()
            context.error = e
            if stage not in TOLERATES_ANY:
                raise ConnectException(UNHANDLED) from e
            if not self.within_tolerance_limits():
                raise ConnectException(TOLERANCE_EXCEEDED) from e
            self.metrics.records_skipped += 1
            return None
        if context.failed:  # retries ran out (KAFKA-18073: under the tolerance like any failure)
            self._mark_as_failed()
            if not self.within_tolerance_limits():
                assert context.error is not None
                raise ConnectException(TOLERANCE_EXCEEDED) from context.error
            self.metrics.records_skipped += 1
        return result

    async def execute_failed(
        self, context: ProcessingContext, stage: Stage, executing_class: type, error: BaseException
    ) -> None:
        """Tell of an operation that failed outside :meth:`execute` (a producer send): report it,
        then raise ConnectException unless it is tolerated."""
        self._mark_as_failed()
        context.stage, context.executing_class, context.error = stage, executing_class, error
        self.metrics.record_failures += 1
        await self.report(context)
        if not self.within_tolerance_limits():
            self.metrics.record_errors += 1
            raise ConnectException(TOLERANCE_EXCEEDED) from error

    def _mark_as_failed(self) -> None:
        self.metrics.record_error_timestamp()
        self.total_failures += 1

    def within_tolerance_limits(self) -> bool:
        return self.config.tolerance_all or self.total_failures == 0

    async def backoff(self, attempt: int, deadline: float) -> None:
        """Sleep 300 ms << (attempt - 1); above ``errors.retry.delay.max.ms`` a random delay below
        it instead; never past ``deadline``."""
        delay: float = RETRIES_DELAY_MIN_MS << min(attempt - 1, 40)
        max_delay = self.config.retry_delay_max_ms
        if delay > max_delay:
            delay = self._rng.randrange(max_delay) if max_delay > 0 else 0
        now = self._clock_ms()
        if delay + now > deadline:
            delay = max(0.0, deadline - now)
        log.debug("Sleeping for up to %s millis", delay)
        await self._sleep(delay)

    async def _interruptible_sleep(self, delay_ms: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), delay_ms / 1000)
        except TimeoutError:
            pass

    def trigger_stop(self) -> None:
        """End retries: a sleeping retry wakes up and its operation counts as failed."""
        self._stop.set()

    # ------------------------------------------------------------------ reporting
    async def report(self, context: ProcessingContext) -> None:
        for reporter in self.reporters:
            try:
                fut = await reporter.report(context)
            except Exception:
                log.exception("error reporter %s failed", type(reporter).__name__)
                continue
            if fut is not None:
                self.pending.append(fut)

    async def await_reported(self) -> None:
        """Wait until every report so far is written (the dead letter queue writes); raise
        ConnectException if one failed. Called before committing offsets past those records."""
        pending, self.pending = self.pending, []
        for fut in pending:
            try:
                await fut
            except Exception as e:
                raise ConnectException(
                    "Encountered an error while awaiting an errant record future's completion."
                ) from e

    def close(self) -> None:
        for reporter in self.reporters:
            try:
                reporter.close()
            except Exception:
                log.exception("error reporter %s failed to close", type(reporter).__name__)
