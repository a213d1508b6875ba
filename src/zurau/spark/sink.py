"""The ``zurau`` sink: DataFrame rows -> Kafka records (batch and streaming), an Arrow writer.

Columns (Spark's Kafka sink): ``value`` (string or binary) is required; ``key`` (string or
binary), ``topic`` (string), ``partition`` (int), ``headers`` (``array<struct<key: string,
value: binary>>``) and ``timestamp`` (timestamp, or double seconds) are optional; other columns
are ignored. The ``topic`` option, when given, overrides the ``topic`` column; without either a
row has nowhere to go and the task fails. A null ``partition`` leaves the choice to the
partitioner, which is Kafka's Java default (murmur2 of the key) so keyed records land where
Java clients put them.

Delivery: each task sends through an idempotent producer (``enable.idempotence=true``,
``acks=all``; ``kafka.*`` may override), flushes, and fails if any record was not acknowledged,
so a task that succeeded has every record in Kafka: at-least-once (a retried task or a replayed
micro-batch writes its records again). ``commit(messages, batchId)`` only logs the totals the
commit messages carry and is idempotent per ``batchId``.

Exactly-once later (needs Kafka transactions in the broker and a client able to finish another
process's transaction): ``write()`` would open a transaction per task, with a
``transactional.id`` derived from the query id and the task's partition id, send, flush and
*prepare* it, returning its ``transactional.id``/producer id/epoch in :class:`KafkaCommitMessage`;
the driver's ``commit(messages, batchId)`` would commit those transactions and record ``batchId``
in the same transaction (for instance as a transactional offset commit of a group named after the
query), so a second ``commit`` for a replayed ``batchId`` finds it done; ``abort`` would abort them.
:class:`_TaskWrite` is the seam: it owns a task's producer and returns its commit message.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError, KafkaException, Producer
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from zurau.spark.errors import KafkaOptionError
from zurau.spark.options import SinkOptions, parse_sink_options

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 120.0
_HEADERS_TYPE = ArrayType(StructType().add("key", StringType()).add("value", BinaryType()))


class SinkSchemaError(ValueError):
    """The DataFrame cannot be written to Kafka (Spark raises an ``AnalysisException``)."""


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one write task reports to the driver's ``commit``.

    ``records`` were all acknowledged by Kafka; ``per_topic`` splits them by topic.
    ``batch_id`` is the micro-batch (None for a batch write); ``partition_id``/``attempt`` name the
    Spark task. An exactly-once mode adds its transaction's identity here.
    """

    records: int
    bytes: int
    partition_id: int
    attempt: int
    batch_id: int | None
    per_topic: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- validation
@dataclass(frozen=True)
class _Layout:
    """Which optional columns the input has; validated once on the driver."""

    has_key: bool
    has_topic: bool
    has_partition: bool
    has_headers: bool
    timestamp: str | None  # None, "timestamp" or "double"


def _check(schema: StructType, name: str, allowed: tuple[DataType, ...], required: str | None) -> bool:
    fields = {f.name: f for f in schema.fields}
    if name not in fields:
        if required is not None:
            raise SinkSchemaError(required)
        return False
    dtype = fields[name].dataType
    if not any(dtype == a for a in allowed):
        names = " or ".join(a.simpleString() for a in allowed)
        raise SinkSchemaError(
            f"{name} attribute unsupported type {dtype.simpleString()}. {name} must be a(n) {names}"
        )
    return True


def validate_schema(schema: StructType, topic_option: str | None) -> _Layout:
    """Spark's ``KafkaWriter.validateQuery``: raise :class:`SinkSchemaError` or describe the layout."""
    has_topic = _check(
        schema,
        "topic",
        (StringType(),),
        None
        if topic_option is not None
        else "topic option required when no 'topic' attribute is present. Use the topic option for setting a topic.",
    )
    _check(schema, "value", (StringType(), BinaryType()), "Required attribute 'value' not found")
    has_key = _check(schema, "key", (StringType(), BinaryType()), None)
    has_headers = _check(schema, "headers", (_HEADERS_TYPE,), None)
    has_partition = _check(schema, "partition", (IntegerType(),), None)
    ts: str | None = None
    if _check(schema, "timestamp", (TimestampType(), TimestampNTZType(), DoubleType()), None):
        dtype = next(f.dataType for f in schema.fields if f.name == "timestamp")
        ts = "double" if dtype == DoubleType() else "timestamp"
    return _Layout(has_key, has_topic and topic_option is None, has_partition, has_headers, ts)


# --------------------------------------------------------------------------- producers
class _ProducerPool:
    """One idempotent producer per configuration and worker process (Spark caches them too).

    Delivery reports come only for failures (``delivery.report.only.error``); they land in the
    error list of the producer's current user, so a task learns of every record it lost.
    """

    def __init__(self) -> None:
        self._free: dict[tuple[tuple[str, str], ...], list[tuple[Producer, list[Any]]]] = {}
        self._lock = threading.Lock()
        self._registered = False

    def acquire(self, config: Mapping[str, Any]) -> tuple[Producer, list[Any]]:
        key = tuple(sorted((k, str(v)) for k, v in config.items()))
        with self._lock:
            free = self._free.get(key)
            if free:
                return free.pop()
            if not self._registered:
                atexit.register(self.close_all)
                self._registered = True
        errors: list[Any] = []

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(err)

        def on_error(err: KafkaError) -> None:
            if err.fatal():  # e.g. the broker refused an idempotent producer id
                errors.append(err)

        cfg = dict(config)
        cfg["delivery.report.only.error"] = True
        cfg["on_delivery"] = on_delivery
        cfg["error_cb"] = on_error
        try:
            return Producer(cfg), errors
        except (KafkaException, ValueError, TypeError) as e:
            raise KafkaOptionError(f"Invalid Kafka producer configuration: {e}") from None

    def release(self, config: Mapping[str, Any], entry: tuple[Producer, list[Any]], healthy: bool) -> None:
        producer, errors = entry
        if not healthy:  # dropped: a producer in an unknown (maybe fatal) state is not reused
            try:
                producer.flush(5)
            except KafkaException:
                pass
            return
        errors.clear()
        key = tuple(sorted((k, str(v)) for k, v in config.items()))
        with self._lock:
            self._free.setdefault(key, []).append(entry)

    def close_all(self) -> None:
        with self._lock:
            entries = [e for es in self._free.values() for e in es]
            self._free.clear()
        for producer, _ in entries:
            try:
                producer.flush(5)
            except KafkaException:
                pass


PRODUCERS = _ProducerPool()


def _task_info() -> tuple[int, int, int | None]:
    """(partition id, attempt number, micro-batch id or None) of the running Spark task."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
    except ImportError:  # pragma: no cover - pyspark is a dependency of this package
        tc = None
    if tc is None:
        return 0, 0, None
    batch = tc.getLocalProperty("streaming.sql.batchId")
    return tc.partitionId(), tc.attemptNumber(), int(batch) if batch is not None else None


# --------------------------------------------------------------------------- one task's write
class _TaskWrite:
    """Sends one task's Arrow batches; :meth:`finish` flushes and returns the commit message."""

    def __init__(self, options: SinkOptions, layout: _Layout) -> None:
        self.options = options
        self.layout = layout
        self.config = options.producer_config()
        self.entry = PRODUCERS.acquire(self.config)
        self.producer, self.errors = self.entry
        self.records = 0
        self.bytes = 0
        self.per_topic: dict[str, int] = {}

    def send(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if n == 0:
            return
        lay = self.layout
        names = batch.schema.names
        values = batch.column(names.index("value")).to_pylist()
        keys = batch.column(names.index("key")).to_pylist() if lay.has_key else None
        if lay.has_topic:
            topics: list[str | None] = batch.column(names.index("topic")).to_pylist()
        else:
            topics = [self.options.topic] * n
        partitions = batch.column(names.index("partition")).to_pylist() if lay.has_partition else None
        headers = batch.column(names.index("headers")).to_pylist() if lay.has_headers else None
        stamps = (
            _timestamps_ms(batch.column(names.index("timestamp")), lay.timestamp) if lay.timestamp else None
        )

        produce = self.producer.produce
        poll = self.producer.poll
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise SinkSchemaError(
                    "null topic present in the data. Use the topic option for setting a default topic."
                )
            kwargs: dict[str, Any] = {}
            if keys is not None:
                kwargs["key"] = keys[i]
            if partitions is not None and partitions[i] is not None:
                kwargs["partition"] = partitions[i]
            if stamps is not None and stamps[i] is not None:
                kwargs["timestamp"] = stamps[i]
            if headers is not None and headers[i]:
                kwargs["headers"] = [(h["key"], h["value"]) for h in headers[i]]
            value = values[i]
            while True:
                try:
                    produce(topic, value, **kwargs)
                    break
                except BufferError:
                    self._call(poll, 0.05)
                except KafkaException:
                    self._call(poll, 0)  # runs error_cb: a fatal error's cause is reported
                    self._raise_errors()
                    raise
            self.per_topic[topic] = self.per_topic.get(topic, 0) + 1
        self._call(poll, 0)
        self.records += n
        self.bytes += batch.column(names.index("value")).nbytes
        self._raise_errors()

    def _call(self, fn: Any, *args: Any) -> Any:
        """Call a producer method; its exceptions become the first delivery error, if any."""
        try:
            return fn(*args)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if not (isinstance(err, KafkaError) and err.fatal()):
                self._raise_errors()
            raise
        except SystemError as e:  # a callback ran while an exception (its cause) was pending
            if isinstance(e.__cause__, KafkaException):
                raise e.__cause__ from None
            self._raise_errors()
            raise KafkaException(str(e)) from e

    def _raise_errors(self) -> None:
        if self.errors:  # a fatal error explains the purged records that follow it
            err = next((e for e in self.errors if isinstance(e, KafkaError) and e.fatal()), self.errors[0])
            raise KafkaException(err) if isinstance(err, KafkaError) else err

    def finish(self) -> KafkaCommitMessage:
        left = self._call(self.producer.flush, FLUSH_TIMEOUT_S)
        self._raise_errors()
        if left:
            raise TimeoutError(f"{left} records were not acknowledged within {FLUSH_TIMEOUT_S:.0f} s")
        part, attempt, batch_id = _task_info()
        return KafkaCommitMessage(self.records, self.bytes, part, attempt, batch_id, dict(self.per_topic))

    def release(self, healthy: bool) -> None:
        PRODUCERS.release(self.config, self.entry, healthy)


def _timestamps_ms(col: pa.Array, kind: str) -> list[int | None]:
    if kind == "double":
        return pc.multiply(col, 1000.0).cast(pa.int64(), safe=False).to_pylist()
    return pc.divide(col.cast(pa.int64()), 1000).to_pylist()


def write_batches(
    options: SinkOptions, layout: _Layout, batches: Iterable[pa.RecordBatch]
) -> KafkaCommitMessage:
    """Executor side of both writers: send every batch, flush, report (see the module docstring)."""
    task = _TaskWrite(options, layout)
    healthy = False
    try:
        for batch in batches:
            task.send(batch)
        msg = task.finish()
        healthy = True
        return msg
    finally:
        task.release(healthy)


def _summarize(messages: list[WriterCommitMessage | None]) -> tuple[int, dict[str, int]]:
    total = 0
    per_topic: dict[str, int] = {}
    for m in messages:
        if isinstance(m, KafkaCommitMessage):
            total += m.records
            for t, n in m.per_topic.items():
                per_topic[t] = per_topic.get(t, 0) + n
    return total, per_topic


# --------------------------------------------------------------------------- writers
class ZurauBatchWriter(DataSourceArrowWriter):
    """``df.write.format("zurau")``: at-least-once, each task flushes before it reports."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = parse_sink_options(options)
        self.layout = validate_schema(schema, self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:  # type: ignore[override]
        return write_batches(self.options, self.layout, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        total, per_topic = _summarize(messages)
        log.info("zurau sink: wrote %d records %s", total, per_topic)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:  # type: ignore[override]
        total, _ = _summarize(messages)
        log.warning("zurau sink: write aborted; %d records of finished tasks stay in Kafka", total)


class ZurauStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("zurau")``: at-least-once; ``commit`` is idempotent per ``batchId``."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = parse_sink_options(options)
        self.layout = validate_schema(schema, self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:  # type: ignore[override]
        return write_batches(self.options, self.layout, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        total, per_topic = _summarize(messages)
        log.info("zurau sink: micro-batch %d wrote %d records %s", batchId, total, per_topic)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # type: ignore[override]
        total, _ = _summarize(messages)
        log.warning(
            "zurau sink: micro-batch %d aborted; %d records of finished tasks stay in Kafka", batchId, total
        )
