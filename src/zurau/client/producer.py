"""An asyncio producer: records batched per partition, sent to partition leaders with Produce.

Behaviour, with Kafka's producer property names in brackets:

* Partitioning: an explicit partition wins; a non-null key goes to ``murmur2(key)`` like every
  Java-compatible client (:mod:`zurau.client.partitioner`); null keys stick to one random
  partition per topic until its batch closes (KIP-480).
* Batching: one open batch per partition, closed when it reaches ``batch_size`` bytes
  [``batch.size``] or ``linger_ms`` after its first record [``linger.ms``]; closed batches are
  grouped by leader into one Produce request per broker, up to ``max_request_size`` bytes.
* Ordering and retries: at most one batch per partition is in flight, so a retried batch can
  never be overtaken by a later one; retriable errors (not leader, leader not available, unknown
  partition while a topic is being created, timeouts, lost connections) refresh metadata and
  resend the same bytes until ``delivery_timeout_ms`` [``delivery.timeout.ms``] has passed since
  the batch was closed.
* ``acks`` [``acks``]: 0 (no answer; offsets unknown, reported as -1), 1 or -1/all.
* ``compression`` [``compression.type``]: none, gzip, snappy, lz4 or zstd.
* Idempotence [``enable.idempotence``]: InitProducerId gives a producer id and epoch; each batch
  carries the partition's next sequence number, assigned once when the batch is first built, so a
  resent batch is recognised by the broker as a duplicate (DUPLICATE_SEQUENCE_NUMBER counts as
  success). Requires ``acks=all``.
* Transactions [``transactional.id``, ``transaction.timeout.ms``]: ``init_transactions``,
  ``begin_transaction``, sends, ``send_offsets_to_transaction``, ``commit_transaction`` (flush,
  then EndTxn) or ``abort_transaction``, as Kafka's Java producer; transactions v2 (KIP-890 part 2)
  when the cluster's finalized ``transaction.version`` is 2 or more, else v1. The coordinator side
  and the error states are :mod:`zurau.client.transaction_manager`'s. A transactional producer is
  idempotent; its batches carry the transactional flag and its Produce requests the id.

Invariants: every record future returned by :meth:`Producer.send` is completed exactly once
(with its :class:`~zurau.client.types.RecordMetadata` or an exception); after :meth:`close` no
task of the producer is running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zurau.client import typed_api
from zurau.client.cluster import Cluster, TopicMetadata
from zurau.client.config import ClientConfig
from zurau.client.errors import ClientError
from zurau.client.partitioner import partition_for_key
from zurau.client.transaction_manager import (
    ConsumerGroupMetadata,
    TransactionAbortedError,
    TransactionManager,
    TransactionState,
    TransactionStateError,
)
from zurau.client.types import RecordMetadata, TopicPartition
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    DuplicateSequenceNumberError,
    KafkaError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
    for_code,
)
from zurau.protocol.messages import ProduceRequestTopicDataPartitionData
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.compression import CODEC_NAMES
from zurau.protocol.records.record import encode_record

log = logging.getLogger("zurau.client.producer")

PRODUCE_MAX_VERSION = 12  # v13 names topics by id
CODECS = {name: code for code, name in CODEC_NAMES.items()}
_RETRIABLE_EXTRA = {3, 5, 6, 7, 13, 19, 20, 74, 75}  # also retried when the class says otherwise


def parse_acks(value: str | int) -> int:
    """``all``/``-1``/``0``/``1`` -> -1, 0 or 1 (ValueError otherwise)."""
    text = str(value).strip().lower()
    if text in ("all", "-1"):
        return -1
    if text in ("0", "1"):
        return int(text)
    raise ValueError(f"acks must be all, -1, 0 or 1, not {value!r}")


def parse_compression(value: str | int) -> int:
    text = str(value).strip().lower()
    if text in CODECS:
        return CODECS[text]
    raise ValueError(f"compression must be one of {', '.join(CODECS)}, not {value!r}")


@dataclass
class _Batch:
    tp: TopicPartition
    created: float
    records: list[NewRecord] = field(default_factory=list)
    futures: list[asyncio.Future[RecordMetadata]] = field(default_factory=list)
    size: int = 61
    closed_at: float = 0.0
    payload: bytes | None = None
    base_sequence: int = -1
    attempts: int = 0
    last_error: BaseException | None = None


class Producer:
    """Produce records to a Kafka-compatible cluster. Use as ``async with Producer(cfg) as p``."""

    def __init__(
        self,
        config: ClientConfig | Cluster,
        *,
        acks: int | str = -1,
        compression: int | str = "none",
        linger_ms: float = 5.0,
        batch_size: int = 16_384,
        max_request_size: int = 1_048_576,
        buffer_memory: int = 32 * 1024 * 1024,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        enable_idempotence: bool = False,
        allow_auto_topic_creation: bool = True,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
        max_block_ms: int = 60_000,
    ) -> None:
        self.cluster, self._owns_cluster = Cluster.of(config)
        self.acks = parse_acks(acks)
        if transactional_id is not None:
            if self.acks != -1:
                raise ValueError("a transactional producer needs acks=all")
            enable_idempotence = True
        self.compression = compression if isinstance(compression, int) else parse_compression(compression)
        if self.compression not in CODEC_NAMES:
            raise ValueError(f"unknown compression codec {compression}")
        if enable_idempotence and self.acks != -1:
            raise ValueError("an idempotent producer needs acks=all")
        self.linger = linger_ms / 1000
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        self.buffer_memory = buffer_memory
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.enable_idempotence = enable_idempotence
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.producer_id = -1
        self.producer_epoch = -1
        self.transactional_id = transactional_id
        self._txn = (
            TransactionManager(
                self.cluster,
                transactional_id,
                transaction_timeout_ms=transaction_timeout_ms,
                retry_backoff=self.retry_backoff,
                max_block=max_block_ms / 1000,
            )
            if transactional_id is not None
            else None
        )
        self._sequences: dict[TopicPartition, int] = {}
        self._open: dict[TopicPartition, _Batch] = {}
        self._ready: dict[TopicPartition, deque[_Batch]] = {}
        self._retry_at: dict[TopicPartition, float] = {}
        self._in_flight: set[TopicPartition] = set()
        self._sticky: dict[str, int] = {}
        self._topics: dict[str, TopicMetadata] = {}
        self._buffered = 0
        self._unfinished = 0
        self._wakeup: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._space: asyncio.Event | None = None
        self._sender: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refreshing: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self._started:
            return
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._space = asyncio.Event()
        self._space.set()
        await self.cluster.bootstrap()
        if self.enable_idempotence and self._txn is None:
            await self._init_producer_id()
        self._sender = asyncio.get_running_loop().create_task(
            self._run_sender(), name="zurau-producer-sender"
        )
        self._started = True

    async def _init_producer_id(self) -> None:
        deadline = time.monotonic() + self.cluster.config.request_timeout
        while True:
            call = typed_api.INIT_PRODUCER_ID({"transactional_id": None, "transaction_timeout_ms": 60_000})
            resp = await self.cluster.call(None, call)
            code = resp["error_code"]
            if not code:
                self.producer_id, self.producer_epoch = resp["producer_id"], resp["producer_epoch"]
                return
            err = for_code(code)(f"InitProducerId failed (error {code})")
            if not err.retriable or time.monotonic() > deadline:
                raise err
            await asyncio.sleep(self.retry_backoff)

    # ------------------------------------------------------------------ transactions
    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise TransactionStateError("this producer has no transactional.id")
        return self._txn

    @property
    def transaction_state(self) -> TransactionState | None:
        return None if self._txn is None else self._txn.state

    @property
    def transaction_version(self) -> int:
        """1 or 2: the transaction protocol in use (0 before ``init_transactions``)."""
        if self._txn is None or self._txn.state is TransactionState.UNINITIALIZED:
            return 0
        return 2 if self._txn.v2 else 1

    async def init_transactions(self) -> None:
        """Get a producer id and epoch for the transactional id, fencing every earlier producer of
        it (its open transaction is aborted). Call once, before the first transaction."""
        txn = self._transactions()
        if not self._started:
            await self.start()
        self._adopt(*await txn.init())

    def begin_transaction(self) -> None:
        self._transactions().begin()

    async def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group: ConsumerGroupMetadata | str
    ) -> None:
        """Commit a consumer group's ``offsets`` (the next offset to read per partition) in the
        open transaction: the group sees them only if the transaction commits."""
        meta = ConsumerGroupMetadata(group) if isinstance(group, str) else group
        await self._transactions().send_offsets(offsets, meta)

    async def commit_transaction(self) -> None:
        """Send every buffered record, then commit. A failed send raises
        :class:`~zurau.client.transaction_manager.AbortableTransactionError` (abort, then go on);
        fencing raises ProducerFencedError (close the producer)."""
        txn = self._transactions()
        txn.check_in_transaction("commit")
        await self.flush()
        txn.check_in_transaction("commit")
        if await txn.end(commit=True):
            self._adopt(txn.producer_id, txn.producer_epoch)

    async def abort_transaction(self) -> None:
        """Abort the open transaction: batches not yet sent are dropped (their futures fail),
        those in flight are waited for, then EndTxn(abort)."""
        txn = self._transactions()
        if txn.state is TransactionState.FATAL_ERROR:
            txn.check_usable()
        if txn.state not in (TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR):
            raise TransactionStateError(f"cannot abort: no transaction is open (state {txn.state.value})")
        self._drop_unsent(TransactionAbortedError(f"transactional id '{txn.transactional_id}': aborted"))
        if self._idle is not None:
            await self._idle.wait()
        if await txn.end(commit=False):
            self._adopt(txn.producer_id, txn.producer_epoch)

    def _adopt(self, producer_id: int, producer_epoch: int) -> None:
        """Use a new producer id/epoch: sequence numbers start again at 0."""
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self._sequences.clear()

    def _drop_unsent(self, error: BaseException) -> None:
        """Fail the batches that were never sent (no sequence number given out yet)."""
        for tp in list(self._open):
            self._close_batch(tp)
        for tp, queue in self._ready.items():
            keep = deque(b for b in queue if b.payload is not None)
            for b in queue:
                if b.payload is None:
                    self._finish(b, error=error)
            self._ready[tp] = keep

    async def flush(self) -> None:
        """Send every buffered record and wait until each one is acknowledged or failed."""
        if not self._started:
            return
        assert self._wakeup is not None and self._idle is not None
        for tp in list(self._open):
            self._close_batch(tp)
        self._wakeup.set()
        await self._idle.wait()

    async def close(self) -> None:
        """Flush, stop the sender, and close the connections this producer opened."""
        if self._closed:
            return
        try:
            if self._started:
                await self.flush()
        finally:
            self._closed = True
            tasks = [t for t in (self._sender, self._refreshing, *self._tasks) if t is not None]
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            self._fail_everything(ClientError("producer closed"))
            if self._owns_cluster:
                await self.cluster.close()

    # ------------------------------------------------------------------ sending
    async def _topic(self, topic: str) -> TopicMetadata:
        t = self._topics.get(topic)
        if t is None:
            t = await self.cluster.topic(topic, allow_auto_topic_creation=self.allow_auto_topic_creation)
            self._topics[topic] = t
        return t

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Buffer one record; the returned future completes when it is acknowledged.

        Raises at once (not through the future) for an unknown topic or partition and for a
        record larger than ``max_request_size``.
        """
        if self._closed:
            raise ClientError("producer is closed")
        if not self._started:
            await self.start()
        if self._txn is not None:
            self._txn.check_in_transaction("send")
        assert self._wakeup is not None and self._space is not None and self._idle is not None
        t = await self._topic(topic)
        n = len(t.partitions)
        if partition is None:
            if key is not None:
                partition = partition_for_key(key, n)
            else:
                partition = self._sticky.get(topic)
                if partition is None or partition >= n:
                    partition = self._sticky[topic] = random.randrange(n)
        elif not 0 <= partition < n:
            raise UnknownTopicOrPartitionError(f"topic '{topic}' has no partition {partition} (it has {n})")
        ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        rec = NewRecord(key, value, tuple(headers), ts)
        size = len(encode_record(0, 0, key, value, rec.headers)) + 8
        if size + 61 > self.max_request_size:
            raise MessageTooLargeError(
                f"a record of {size} bytes is larger than max.request.size ({self.max_request_size})"
            )
        while self._buffered + size > self.buffer_memory and self._buffered:
            self._space.clear()
            await self._space.wait()
        tp = TopicPartition(topic, partition)
        if self._txn is not None:
            await self._txn.add_partitions([tp])
        batch = self._open.get(tp)
        if batch is not None and batch.size + size > max(self.batch_size, size + 61):
            self._close_batch(tp)
            batch = None
        if batch is None:
            batch = self._open[tp] = _Batch(tp, time.monotonic())
            self._unfinished += 1
            self._idle.clear()
            self._wakeup.set()
        fut: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        batch.records.append(rec)
        batch.futures.append(fut)
        batch.size += size
        self._buffered += size
        if batch.size >= self.batch_size:
            self._close_batch(tp)
            self._wakeup.set()
        return fut

    async def send_and_wait(
        self, topic: str, value: bytes | None, key: bytes | None = None, **kw: Any
    ) -> RecordMetadata:
        fut = await self.send(topic, value, key, **kw)
        await self.flush()
        return await fut

    def _close_batch(self, tp: TopicPartition) -> None:
        batch = self._open.pop(tp, None)
        if batch is None:
            return
        batch.closed_at = time.monotonic()
        self._ready.setdefault(tp, deque()).append(batch)
        if self._sticky.get(tp.topic) == tp.partition:
            n = len(self._topics[tp.topic].partitions) if tp.topic in self._topics else 1
            if n > 1:
                choice = random.randrange(n - 1)
                self._sticky[tp.topic] = choice if choice < tp.partition else choice + 1

    # ------------------------------------------------------------------ sender
    async def _run_sender(self) -> None:
        assert self._wakeup is not None
        loop_time = time.monotonic
        while True:
            self._wakeup.clear()
            now = loop_time()
            next_at: float | None = None
            for tp, b in list(self._open.items()):
                due = b.created + self.linger
                if now >= due:
                    self._close_batch(tp)
                else:
                    next_at = due if next_at is None else min(next_at, due)
            retry_next = self._dispatch(now)
            if retry_next is not None:
                next_at = retry_next if next_at is None else min(next_at, retry_next)
            timeout = None if next_at is None else max(0.0, next_at - loop_time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    def _dispatch(self, now: float) -> float | None:
        """Start one Produce per leader for ready batches; returns the next retry time, if any."""
        by_node: dict[int, list[_Batch]] = {}
        sizes: dict[int, int] = {}
        next_retry: float | None = None
        missing: set[str] = set()
        for tp, queue in self._ready.items():
            if not queue or tp in self._in_flight:
                continue
            at = self._retry_at.get(tp, 0.0)
            if at > now:
                next_retry = at if next_retry is None else min(next_retry, at)
                continue
            batch = queue[0]
            if now - batch.closed_at > self.delivery_timeout:
                queue.popleft()
                self._finish(batch, error=batch.last_error or KafkaError(f"delivery to {tp} timed out"))
                continue
            leader = self._leader(tp)
            if leader is None:
                missing.add(tp.topic)
                self._retry_at[tp] = now + self.retry_backoff
                next_retry = (
                    now + self.retry_backoff
                    if next_retry is None
                    else min(next_retry, now + self.retry_backoff)
                )
                continue
            payload = self._payload(batch)
            if by_node.get(leader) and sizes[leader] + len(payload) > self.max_request_size:
                continue
            queue.popleft()
            by_node.setdefault(leader, []).append(batch)
            sizes[leader] = sizes.get(leader, 0) + len(payload)
            self._in_flight.add(tp)
        if missing:
            self._schedule_refresh(missing)
        for node, batches in by_node.items():
            task = asyncio.get_running_loop().create_task(self._send_batches(node, batches))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return next_retry

    def _leader(self, tp: TopicPartition) -> int | None:
        md = self.cluster.metadata.topics.get(tp.topic) or self._topics.get(tp.topic)
        if md is None:
            return None
        for p in md.partitions:
            if p.partition == tp.partition:
                return p.leader if p.leader >= 0 else None
        return None

    def _payload(self, batch: _Batch) -> bytes:
        if batch.payload is None:
            if self.enable_idempotence:
                seq = self._sequences.get(batch.tp, 0)
                batch.base_sequence = seq
                self._sequences[batch.tp] = (seq + len(batch.records)) & 0x7FFFFFFF
            batch.payload = build_batch(
                batch.records,
                compression=self.compression,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=batch.base_sequence,
                is_transactional=self._txn is not None,
            )
        return batch.payload

    def _schedule_refresh(self, topics: set[str]) -> None:
        if self._refreshing is not None and not self._refreshing.done():
            return

        async def refresh() -> None:
            with contextlib.suppress(ClientError, KafkaError):
                await self.cluster.refresh_metadata(sorted(topics))
                for name in topics:
                    if name in self.cluster.metadata.topics:
                        self._topics[name] = self.cluster.metadata.topics[name]
            assert self._wakeup is not None
            self._wakeup.set()

        self._refreshing = asyncio.get_running_loop().create_task(refresh())

    async def _send_batches(self, node: int, batches: list[_Batch]) -> None:
        topics: dict[str, list[ProduceRequestTopicDataPartitionData]] = {}
        for b in batches:
            topics.setdefault(b.tp.topic, []).append({"index": b.tp.partition, "records": b.payload})
        call = typed_api.PRODUCE(
            {
                "transactional_id": self.transactional_id,
                "acks": self.acks,
                "timeout_ms": self.cluster.config.request_timeout_ms,
                "topic_data": [{"name": n, "partition_data": ps} for n, ps in topics.items()],
            }
        )
        retry: list[tuple[_Batch, BaseException]] = []
        try:
            conn = await self.cluster.connection(node)
            if self._txn is not None:
                self._txn.started = True
                lo, hi = self._txn.produce_versions()
                version = conn.version(ApiKey.PRODUCE, hi, min_version=lo)
            else:
                version = conn.version(ApiKey.PRODUCE, PRODUCE_MAX_VERSION, min_version=3)
            if self.acks == 0:
                await conn.send_only(call, version=version)
                for b in batches:
                    self._finish(b, base_offset=-1)
                return
            resp = await conn.call(call, version=version, timeout=self.cluster.config.request_timeout + 5)
            by_tp = {b.tp: b for b in batches}
            for t in resp["responses"]:
                for p in t["partition_responses"]:
                    answered = by_tp.pop(TopicPartition(t["name"], p["index"]), None)
                    if answered is None:
                        continue
                    b = answered
                    code = p["error_code"]
                    if not code or code == DuplicateSequenceNumberError.code:
                        self._finish(
                            b, base_offset=p["base_offset"], append_time=p.get("log_append_time_ms", -1)
                        )
                        continue
                    err = for_code(code)(p.get("error_message") or f"produce to {b.tp} failed (error {code})")
                    if err.retriable or code in _RETRIABLE_EXTRA:
                        retry.append((b, err))
                    else:
                        self._finish(b, error=err)
            for b in by_tp.values():  # no answer for it: try again
                retry.append((b, KafkaError(f"no answer for {b.tp}")))
        except asyncio.CancelledError:
            raise
        except (ClientError, KafkaError, OSError) as e:
            retry.extend((b, e) for b in batches if not self._is_finished(b))
        finally:
            now = time.monotonic()
            for b, failure in retry:
                b.last_error = failure
                b.attempts += 1
                self._ready.setdefault(b.tp, deque()).appendleft(b)
                self._retry_at[b.tp] = now + min(self.retry_backoff * b.attempts, 1.0)
            if retry:
                self._schedule_refresh({b.tp.topic for b, _ in retry})
            for b in batches:
                self._in_flight.discard(b.tp)
            assert self._wakeup is not None
            self._wakeup.set()

    @staticmethod
    def _is_finished(b: _Batch) -> bool:
        return all(f.done() for f in b.futures) and b.payload is None and not b.records

    def _finish(
        self, b: _Batch, *, base_offset: int = -1, append_time: int = -1, error: BaseException | None = None
    ) -> None:
        if error is not None and self._txn is not None and b.records:
            self._txn.fail(error)
        for i, (rec, fut) in enumerate(zip(b.records, b.futures, strict=True)):
            if fut.done():
                continue
            if error is not None:
                fut.set_exception(error)
            else:
                offset = base_offset + i if base_offset >= 0 else -1
                ts = append_time if append_time is not None and append_time >= 0 else rec.timestamp_ms
                fut.set_result(RecordMetadata(b.tp.topic, b.tp.partition, offset, ts))
        self._buffered -= b.size
        b.records, b.futures, b.payload = [], [], None
        self._unfinished -= 1
        assert self._space is not None and self._idle is not None
        self._space.set()
        if self._unfinished == 0:
            self._idle.set()

    def _fail_everything(self, error: BaseException) -> None:
        batches = list(self._open.values()) + [b for q in self._ready.values() for b in q]
        self._open.clear()
        self._ready.clear()
        for b in batches:
            self._finish(b, error=error)
