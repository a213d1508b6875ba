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

Exactly-once (streaming only, ``exactlyOnce=true``; see :mod:`zurau.spark.eos` for the protocol):
each task writes inside a Kafka transaction with ``transactional.id`` ``zurau-sink-<queryId>-<partitionId>``
together with a batch marker (a record keyed ``<queryId>/<partitionId>`` in partition 0 of the
compacted topic ``exactlyOnce.markerTopic``, default ``zurau-sink-markers``), leaves it open and
reports that transaction's own producer id and epoch in an :class:`EosCommitMessage`; the driver's
``commit`` ends one transaction per partition with EndTxn (idempotent), or aborts it when the
partition's committed marker shows the batch committed already (a re-run); ``abort`` aborts them.
``transaction.timeout.ms`` defaults to 60 s (``kafka.transaction.timeout.ms``).
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

from zurau.spark import eos
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


@dataclass
class EosCommitMessage(KafkaCommitMessage):
    """An ``exactlyOnce`` task attempt's report: the open transaction the driver must end.

    ``transactional_id``/``producer_id``/``producer_epoch`` name the transaction this attempt wrote
    (read from the marker partition's leader, never from the coordinator's current state, which a
    concurrent attempt may have changed); ``query_id``, ``marker_offset`` and ``attempt_id`` locate
    and identify its batch marker.
    """

    transactional_id: str | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    query_id: str | None = None
    marker_offset: int | None = None
    attempt_id: str | None = None

    def open_txn(self) -> eos.OpenTxn | None:
        if (
            self.transactional_id is None
            or self.producer_id is None
            or self.producer_epoch is None
            or self.query_id is None
            or self.marker_offset is None
            or self.attempt_id is None
        ):
            return None
        return eos.OpenTxn(
            self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            self.query_id,
            self.partition_id,
            self.marker_offset,
            self.attempt_id,
        )


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
def new_producer(config: Mapping[str, Any], *, report_successes: bool = False) -> tuple[Producer, list[Any]]:
    """A producer whose failed deliveries and fatal errors land in the returned list.

    Delivery reports come only for failures unless ``report_successes`` (a per-message callback
    then also learns where a record landed).
    """
    errors: list[Any] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(err)

    def on_error(err: KafkaError) -> None:
        if err.fatal():  # e.g. the broker refused an idempotent producer id
            errors.append(err)

    cfg = dict(config)
    cfg["delivery.report.only.error"] = not report_successes
    cfg["on_delivery"] = on_delivery
    cfg["error_cb"] = on_error
    try:
        return Producer(cfg), errors
    except (KafkaException, ValueError, TypeError) as e:
        raise KafkaOptionError(f"Invalid Kafka producer configuration: {e}") from None


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
        return new_producer(config)

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


def _task_context() -> Any:
    try:
        from pyspark import TaskContext

        return TaskContext.get()
    except ImportError:  # pragma: no cover - pyspark is a dependency of this package
        return None


def _task_info() -> tuple[int, int, int | None]:
    """(partition id, attempt number, micro-batch id or None) of the running Spark task."""
    tc = _task_context()
    if tc is None:
        return 0, 0, None
    batch = tc.getLocalProperty("streaming.sql.batchId")
    return tc.partitionId(), tc.attemptNumber(), int(batch) if batch is not None else None


def _query_id() -> str | None:
    """The streaming query's id (stable across restarts from one checkpoint), from the task's properties."""
    tc = _task_context()
    return None if tc is None else tc.getLocalProperty("sql.streaming.queryId")


# --------------------------------------------------------------------------- one task's write
class _TaskWrite:
    """Sends one task's Arrow batches; :meth:`finish` flushes and returns the commit message."""

    def __init__(self, options: SinkOptions, layout: _Layout, transactional_id: str | None = None) -> None:
        self.options = options
        self.layout = layout
        self.config = options.producer_config()
        self.pooled = transactional_id is None
        if transactional_id is None:
            self.entry = PRODUCERS.acquire(self.config)
        else:  # a transactional producer is used for one transaction and never pooled
            self.config["transactional.id"] = transactional_id
            self.entry = new_producer(self.config, report_successes=True)  # the marker's offset
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

    def flush(self) -> None:
        """Wait for every record's acknowledgement; raise the first failure."""
        left = self._call(self.producer.flush, FLUSH_TIMEOUT_S)
        self._raise_errors()
        if left:
            raise TimeoutError(f"{left} records were not acknowledged within {FLUSH_TIMEOUT_S:.0f} s")

    def finish(self) -> KafkaCommitMessage:
        self.flush()
        part, attempt, batch_id = _task_info()
        return KafkaCommitMessage(self.records, self.bytes, part, attempt, batch_id, dict(self.per_topic))

    def release(self, healthy: bool) -> None:
        if self.pooled:
            PRODUCERS.release(self.config, self.entry, healthy)
        # A transactional producer is just dropped: destroying it neither commits nor aborts its
        # open transaction, which the driver ends (or a retried task's init_transactions aborts).


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


def write_exactly_once(
    options: SinkOptions,
    layout: _Layout,
    batches: Iterable[pa.RecordBatch],
    *,
    query_id: str,
    partition_id: int,
    batch_id: int,
    attempt: int = 0,
) -> EosCommitMessage:
    """Executor side of ``exactlyOnce``: steps 1-3 of the protocol in :mod:`zurau.spark.eos`."""
    assert options.marker_topic is not None  # parse_sink_options guarantees it
    task = _TaskWrite(options, layout, eos.transactional_id(query_id, partition_id))
    try:
        txn = eos.write_transactional(
            task,
            batches,
            kafka=task.config,
            query_id=query_id,
            partition_id=partition_id,
            batch_id=batch_id,
            marker_topic=options.marker_topic,
        )
    finally:
        task.release(False)
    return EosCommitMessage(
        task.records,
        task.bytes,
        partition_id,
        attempt,
        batch_id,
        dict(task.per_topic),
        transactional_id=txn.transactional_id,
        producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        query_id=txn.query_id,
        marker_offset=txn.marker_offset,
        attempt_id=txn.attempt,
    )


def _open_txns(messages: list[WriterCommitMessage | None]) -> list[eos.OpenTxn]:
    return [t for m in messages if isinstance(m, EosCommitMessage) and (t := m.open_txn()) is not None]


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
        if self.options.exactly_once:
            raise KafkaOptionError("exactlyOnce is supported by streaming writes (writeStream) only")
        self.layout = validate_schema(schema, self.options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_batches(self.options, self.layout, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total, per_topic = _summarize(messages)
        log.info("zurau sink: wrote %d records %s", total, per_topic)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        total, _ = _summarize(messages)
        log.warning("zurau sink: write aborted; %d records of finished tasks stay in Kafka", total)


class ZurauStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("zurau")``: at-least-once, or exactly-once with ``exactlyOnce=true``.

    At-least-once: ``commit`` only logs and is idempotent per ``batchId``. Exactly-once: tasks leave
    transactions open and ``commit`` ends them with EndTxn, idempotently, aborting those of a batch
    their markers show committed already (see :mod:`zurau.spark.eos`). The constructor runs on the
    driver: with ``exactlyOnce`` it creates the compacted marker topic if missing.
    """

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = parse_sink_options(options)
        self.layout = validate_schema(schema, self.options.topic)
        if self.options.exactly_once:
            assert self.options.marker_topic is not None  # parse_sink_options guarantees it
            eos.ensure_marker_topic(self.options.producer_config(), self.options.marker_topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        if not self.options.exactly_once:
            return write_batches(self.options, self.layout, iterator)
        part, attempt, batch_id = _task_info()
        query_id = _query_id()
        if batch_id is None or query_id is None:
            raise RuntimeError("exactlyOnce needs the streaming query id and batch id of the task")
        return write_exactly_once(
            self.options,
            self.layout,
            iterator,
            query_id=query_id,
            partition_id=part,
            batch_id=batch_id,
            attempt=attempt,
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total, per_topic = _summarize(messages)
        if self.options.exactly_once:
            assert self.options.marker_topic is not None
            done = eos.commit_batch(
                self.options.producer_config(), self.options.marker_topic, batchId, _open_txns(messages)
            )
            log.info(
                "zurau sink: micro-batch %d committed %d transactions (aborted %d of partitions committed "
                "before, %d superseded)",
                batchId,
                len(done.committed),
                len(done.already_committed),
                len(done.superseded),
            )
        log.info("zurau sink: micro-batch %d wrote %d records %s", batchId, total, per_topic)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total, _ = _summarize(messages)
        if self.options.exactly_once:
            eos.end_transactions(self.options.producer_config(), _open_txns(messages), commit=False)
            log.warning("zurau sink: micro-batch %d aborted; its transactions were aborted", batchId)
            return
        log.warning(
            "zurau sink: micro-batch %d aborted; %d records of finished tasks stay in Kafka", batchId, total
        )
