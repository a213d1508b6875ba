"""Executor-side reading of one offset range into Arrow record batches.

:func:`read_range` assigns a confluent-kafka consumer to the range's topic-partition at
``from_offset`` and yields ``pyarrow.RecordBatch``es (schema :func:`zurau.spark.schema.arrow_schema`)
until the range ``[from_offset, until_offset)`` is done. Invariants:

* every yielded record has ``from_offset <= offset < until_offset``, offsets strictly increase;
* the read ends when a record at or past ``until_offset`` arrives or the partition's end
  (``PARTITION_EOF``) is at or past it -- offsets that hold no visible record (transaction
  markers, aborted records under ``read_committed``, compacted-away records) are simply absent;
* offsets of the range that are gone from Kafka (below the log start offset after retention or
  DeleteRecords; past the log end after a topic was recreated; a deleted topic) are data loss:
  :class:`DataLossError` naming the topic-partition and ``[from, until)`` under
  ``failOnDataLoss=true``; otherwise a warning and the read continues at the earliest offset
  still available (or ends);
* no progress for ``kafkaConsumer.pollTimeoutMs`` raises :class:`KafkaFetchTimeoutError`.

Throughput: librdkafka fetches ahead on its own threads while Arrow builds a batch (the consumer
settings in :meth:`SourceOptions.consumer_config` keep that prefetch from pausing), and a batch
holds about ``BATCH_BYTES`` (between ``MIN_CONSUME_BATCH`` and ``CONSUME_BATCH`` records).

Consumers are pooled per worker process (Python workers are reused across tasks, like Spark's
executor consumer cache); a consumer is unassigned before it goes back to the pool and closed
after any error. The reader object Spark pickles stays stateless.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CKTopicPartition

from zurau.spark.errors import KafkaFetchTimeoutError, KafkaOptionError, report_data_loss
from zurau.spark.offsets import OffsetRange
from zurau.spark.schema import HEADERS_TYPE, arrow_schema

log = logging.getLogger(__name__)

CONSUME_BATCH = 20_000
"""Messages asked of librdkafka per ``consume()`` call; also the largest record batch yielded."""
BATCH_BYTES = 2 << 20
"""Target Arrow size of a yielded record batch: fewer records per ``consume()`` when records are big."""
MIN_CONSUME_BATCH = 500
"""Fewest messages asked per ``consume()`` however big the records."""
_POLL_S = 0.1
_POOL_MAX = 8
_POOL_IDLE_S = 300.0
_WATERMARK_TIMEOUT_S = 10.0

_TS_US = pa.timestamp("us", tz="UTC")
_GONE = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
)
_OUT_OF_RANGE = frozenset({KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE})


# --------------------------------------------------------------------------- consumer pool
class _ConsumerPool:
    """Idle consumers keyed by configuration (``group.id`` aside: nothing is ever committed).

    At most ``_POOL_MAX`` idle consumers are kept; one idle for ``_POOL_IDLE_S`` is closed at the
    next acquire or release (Spark evicts its cached consumers the same way).
    """

    def __init__(self) -> None:
        self._idle: OrderedDict[tuple[tuple[str, str], ...], list[tuple[Consumer, float]]] = OrderedDict()
        self._lock = threading.Lock()
        self._registered = False

    @staticmethod
    def key(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, str(v)) for k, v in config.items() if k != "group.id"))

    def acquire(self, config: Mapping[str, Any]) -> Consumer:
        key = self.key(config)
        with self._lock:
            stale = self._evict_locked(time.monotonic())
            idle = self._idle.get(key)
            found = idle.pop()[0] if idle else None
            if not self._registered:
                atexit.register(self.close_all)
                self._registered = True
        for c in stale:
            _close_quietly(c)
        if found is not None:
            return found
        try:
            return Consumer(dict(config))
        except (KafkaException, ValueError, TypeError) as e:
            raise KafkaOptionError(f"Invalid Kafka consumer configuration: {e}") from None

    def release(self, config: Mapping[str, Any], consumer: Consumer, healthy: bool) -> None:
        if healthy:
            try:
                consumer.unassign()
            except KafkaException:
                healthy = False
        if not healthy:
            _close_quietly(consumer)
            return
        with self._lock:
            key = self.key(config)
            self._idle.setdefault(key, []).append((consumer, time.monotonic()))
            self._idle.move_to_end(key)
            stale = self._evict_locked(time.monotonic())
        for c in stale:
            _close_quietly(c)

    def _evict_locked(self, now: float) -> list[Consumer]:
        out = []
        for key in list(self._idle):
            keep = [(c, t) for c, t in self._idle[key] if now - t < _POOL_IDLE_S]
            out += [c for c, t in self._idle[key] if now - t >= _POOL_IDLE_S]
            if keep:
                self._idle[key] = keep
            else:
                del self._idle[key]
        while sum(len(v) for v in self._idle.values()) > _POOL_MAX:
            oldest = next(iter(self._idle))
            out.append(self._idle[oldest].pop(0)[0])
            if not self._idle[oldest]:
                del self._idle[oldest]
        return out

    def close_all(self) -> None:
        with self._lock:
            consumers = [c for cs in self._idle.values() for c, _ in cs]
            self._idle.clear()
        for c in consumers:
            _close_quietly(c)


def _close_quietly(consumer: Consumer) -> None:
    try:
        consumer.close()
    except (KafkaException, RuntimeError):
        pass


POOL = _ConsumerPool()


# --------------------------------------------------------------------------- reading
def read_range(
    config: Mapping[str, Any],
    rng: OffsetRange,
    *,
    include_headers: bool,
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` as Arrow record batches (see the module docstring)."""
    if rng.size <= 0:
        return
    consumer = POOL.acquire(config)
    healthy = False
    try:
        yield from _RangeReader(consumer, rng, include_headers, fail_on_data_loss, poll_timeout_ms).run()
        healthy = True
    finally:
        POOL.release(config, consumer, healthy)


class _RangeReader:
    def __init__(
        self,
        consumer: Consumer,
        rng: OffsetRange,
        include_headers: bool,
        fail_on_data_loss: bool,
        poll_timeout_ms: int,
    ) -> None:
        self.c = consumer
        self.rng = rng
        self.tp = rng.tp
        self.ctp = CKTopicPartition(rng.tp.topic, rng.tp.partition)
        self.until = rng.until_offset
        self.next = rng.from_offset
        self.include_headers = include_headers
        self.fail = fail_on_data_loss
        self.poll_timeout_s = poll_timeout_ms / 1000
        self.schema = arrow_schema(include_headers)
        self.topic_scalar = pa.scalar(rng.tp.topic, pa.string())
        self.partition_scalar = pa.scalar(rng.tp.partition, pa.int32())
        self.check_gap = True  # the first record after an (re)assignment is checked for a gap
        self.batch_records = CONSUME_BATCH  # adapted to the record size seen (BATCH_BYTES)

    def _assign(self, offset: int) -> None:
        self.c.assign([CKTopicPartition(self.tp.topic, self.tp.partition, offset)])
        self.next = offset
        self.check_gap = True

    def _watermarks(self) -> tuple[int, int]:
        low, high = self.c.get_watermark_offsets(self.ctp, timeout=_WATERMARK_TIMEOUT_S, cached=False)
        return int(low), int(high)

    def _lost(self, lo: int, hi: int, why: str) -> None:
        report_data_loss(
            f"Cannot fetch offsets [{lo}, {hi}) of {self.tp} ({why}); records in [{lo}, {hi}) of {self.tp} are lost",
            self.fail,
        )

    def run(self) -> Iterator[pa.RecordBatch]:
        self._assign(self.next)
        last_progress = time.monotonic()
        while self.next < self.until:
            # consume(n) returns early only once it has n messages: ask for no more than the
            # range's rest plus one (the record after it, or the end-of-partition event).
            msgs = self.c.consume(min(self.batch_records, self.until - self.next + 1), _POLL_S)
            before = self.next
            errors = [m for m in msgs if m.error() is not None]
            data = [m for m in msgs if m.error() is None] if errors else msgs
            done = False
            if data:
                batch = self._to_batch(data)
                if batch is not None:
                    self._size_batches(batch)
                    yield batch
                done = self.next >= self.until
            for m in errors:
                if done:
                    break
                done = self._on_error(m)
            if done:
                return
            if self.next != before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > self.poll_timeout_s:
                raise KafkaFetchTimeoutError(
                    f"Cannot fetch record for offset {self.next} of {self.tp} in "
                    f"{int(self.poll_timeout_s * 1000)} milliseconds"
                )

    def _size_batches(self, batch: pa.RecordBatch) -> None:
        """Ask for about ``BATCH_BYTES`` of records next: Arrow buffers of a few MiB stay in the
        CPU caches while they are built, sent to the JVM and read there (measured: 1 KiB records
        in 20,000-record batches, 20 MiB each, were read ~10% slower)."""
        per_record = max(batch.nbytes // batch.num_rows, 1)
        self.batch_records = max(MIN_CONSUME_BATCH, min(CONSUME_BATCH, BATCH_BYTES // per_record))

    def _on_error(self, m: Any) -> bool:
        """Handle an error event; True when the range is finished."""
        err = m.error()
        code = err.code()
        if code == KafkaError._PARTITION_EOF:
            eof = int(m.offset())
            if eof >= self.until:
                self.next = self.until
                return True
            if eof < self.next:
                return False
            low, high = self._watermarks()
            if high >= self.until:  # the log grew after the EOF event: keep reading
                return False
            self._lost(max(self.next, high), self.until, f"the log of {self.tp} now ends at offset {high}")
            self.next = self.until
            return True
        if code in _OUT_OF_RANGE:
            low, high = self._watermarks()
            if self.next < low:
                self._lost(self.next, min(low, self.until), f"the earliest available offset is {low}")
                if low >= self.until:
                    self.next = self.until
                    return True
                self._assign(low)
                return False
            if self.next > high:
                self._lost(self.next, self.until, f"the log of {self.tp} ends at offset {high}")
                self.next = self.until
                return True
            self._assign(self.next)
            return False
        if code in _GONE:
            self._lost(self.next, self.until, f"{self.tp.topic} or its partition no longer exists")
            self.next = self.until
            return True
        if err.fatal():
            raise KafkaException(err)
        log.debug("consumer error while reading %s: %s", self.tp, err)
        return False

    def _to_batch(self, msgs: list[Any]) -> pa.RecordBatch | None:
        """Records of ``msgs`` inside ``[next, until)`` as one batch; advances ``next``."""
        first = msgs[0].offset()
        last = msgs[-1].offset()
        contiguous = last - first == len(msgs) - 1
        offsets: list[int] | None = None if contiguous else [m.offset() for m in msgs]
        if first < self.next:  # stale records from before a re-assignment
            all_offsets = offsets if offsets is not None else list(range(first, last + 1))
            keep = next((i for i, o in enumerate(all_offsets) if o >= self.next), None)
            if keep is None:
                return None
            return self._to_batch(msgs[keep:])
        if self.check_gap:
            self.check_gap = False
            if first > self.next:
                low, _ = self._watermarks()
                if low > self.next:  # gone, not merely compacted away
                    self._lost(
                        self.next, min(low, first, self.until), f"the earliest available offset is {low}"
                    )
        if last >= self.until:
            # Records past the range arrived: the range is complete once they are cut off.
            if offsets is None:
                cut = self.until - first
            else:
                cut = next(i for i, o in enumerate(offsets) if o >= self.until)
                offsets = offsets[:cut]
            msgs = msgs[:cut]
            self.next = self.until
            if not msgs:
                return None
        else:
            self.next = last + 1
        n = len(msgs)

        stamps = [m.timestamp() for m in msgs]
        ts_ms = pa.array([t[1] for t in stamps], pa.int64())
        types = [t[0] for t in stamps]
        if types.count(types[0]) == n:
            ts_type: pa.Array = pa.repeat(pa.scalar(types[0] - 1, pa.int32()), n)
        else:
            ts_type = pa.array([t - 1 for t in types], pa.int32())
        if offsets is None:
            offset_arr = pa.array(np.arange(first, first + n, dtype=np.int64))
        else:
            offset_arr = pa.array(offsets, pa.int64())
        columns = [
            pa.array([m.key() for m in msgs], pa.binary()),
            pa.array([m.value() for m in msgs], pa.binary()),
            pa.repeat(self.topic_scalar, n),
            pa.repeat(self.partition_scalar, n),
            offset_arr,
            pc.multiply(ts_ms, 1000).cast(_TS_US),
            ts_type,
        ]
        if self.include_headers:
            columns.append(pa.array([_headers(m.headers()) for m in msgs], HEADERS_TYPE))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _headers(raw: list[tuple[str, bytes | None]] | None) -> list[dict[str, Any]] | None:
    """confluent-kafka headers -> Spark's ``array<struct<key, value>>`` (null when there are none)."""
    if not raw:
        return None
    return [{"key": k, "value": v} for k, v in raw]
