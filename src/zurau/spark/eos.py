"""Exactly-once streaming sink (``exactlyOnce=true``): tasks leave transactions open, the driver ends them.

Protocol, for micro-batch ``B`` of the query with id ``Q`` (stable across restarts from one
checkpoint) and a write task with Spark partition id ``P``:

1. **Task** (executor): ``tid = "zurau-sink-Q-P"``. A transactional producer with that id calls
   ``init_transactions()``: this fences any earlier producer of ``tid`` and aborts its open
   transaction (a crashed, retried or speculative attempt of this task), so nothing of it becomes
   visible unless the driver committed it already.
2. It begins a transaction, produces its rows, and then produces the **batch marker** *in the same
   transaction*: a record keyed ``Q/P`` with value ``{"batchId": B, "attempt": <random id>}`` to
   partition 0 of the marker topic (option ``exactlyOnce.markerTopic``, default
   :data:`~zurau.spark.options.DEFAULT_MARKER_TOPIC`; format in :mod:`zurau.spark.batch_marker`).
   The marker topic is compacted (``cleanup.policy=compact``, checked or created by the driver), so
   the latest marker of each key is kept for good: nothing expires it, unlike a consumer-group
   offset, which ``offsets.retention.minutes`` removes. Rows may not go to the marker topic.
3. After the flush, the task learns **its own** transaction's producer id and epoch from the
   marker partition's leader (DescribeProducers): the producer whose open transaction starts at
   the marker's offset (the delivery report says where the marker landed). An offset holds one
   producer's batch, so this names exactly the transaction this attempt wrote; if no open
   transaction starts there, another attempt of the task fenced this one, and the task fails
   with PRODUCER_FENCED. It returns ``tid``, producer id, epoch, marker offset and attempt id,
   leaving the transaction open (the producer is dropped without commit or abort).
4. **Driver** ``commit(messages, B)``: per Spark partition it keeps one reported transaction (the one
   whose marker was written last, if a partition was somehow reported twice; the others are
   aborted), then reads the latest *committed* marker of every key ``Q/P`` below the lowest
   reported marker offset (:func:`~zurau.spark.batch_marker.read_committed_markers`: back from
   there in growing windows, each transaction judged by its COMMIT or ABORT record, so open
   transactions of other queries sharing the topic do not hold the read back). A key
   whose marker already says ``>= B`` was committed by an earlier driver (it died after EndTxn but
   before Spark recorded the batch, and Spark re-ran the batch): its new transaction is aborted.
   Every other transaction is committed with EndTxn (idempotent, so a second ``commit`` of the same
   messages succeeds). A partition's records and its marker become visible together; the
   partitions of one batch are committed one after the other, so a read_committed reader may see
   part of a batch for a moment. ``abort(messages, B)`` aborts the reported transactions.

Why the committed markers all lie below the lowest open marker of the batch: a marker becomes
committed only through the driver, and Spark runs micro-batches one after the other, so every
transaction committed before batch ``B``'s commit was committed before ``B``'s tasks wrote (a
driver that died mid-commit is gone before the re-run's tasks start).

``transaction.timeout.ms`` (default :data:`DEFAULT_TRANSACTION_TIMEOUT_MS`, ``kafka.transaction.timeout.ms``
overrides; at most the broker's ``transaction.max.timeout.ms``, 15 min by default) must cover the
time from a task's write to the driver's commit, or the coordinator aborts the transaction and
``commit`` fails with a fencing error (the query stops; a restart re-runs the batch). The same
error stops the query when a speculative or zombie attempt of a task started after the attempt
whose result Spark took: the later attempt's ``init_transactions`` aborted the reported transaction,
nothing of the batch for that partition is visible, and a restart re-runs the batch.

Requirements: the same input partitions must map to the same Spark partition ids when a batch is
re-run (true for a query without a shuffle whose source plans deterministically, as ``zurau`` does);
the driver side talks to the cluster with :mod:`zurau.client` (PLAINTEXT, SSL with PEM files, SASL
PLAIN/SCRAM; a PKCS#12 ``ssl.keystore.location`` client certificate is not read there).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaException

from zurau.client.transactions_admin import ProducerIdAndEpoch, TransactionsAdmin
from zurau.client.types import TopicPartition
from zurau.protocol.errors import InvalidTxnStateError, KafkaError, ProducerFencedError
from zurau.spark.batch_marker import (
    MARKER_PARTITION,
    BatchMarker,
    admin_config,
    ensure_marker_topic,
    read_committed_markers,
)
from zurau.spark.errors import KafkaOptionError

log = logging.getLogger(__name__)

DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
TXN_TIMEOUT_S = 60.0

__all__ = [
    "DEFAULT_TRANSACTION_TIMEOUT_MS",
    "CommitOutcome",
    "OpenTxn",
    "commit_batch",
    "end_transactions",
    "ensure_marker_topic",
    "transactional_id",
    "write_transactional",
]


def transactional_id(query_id: str, partition_id: int) -> str:
    """The task's ``transactional.id``: deterministic per (query, Spark partition)."""
    return f"zurau-sink-{query_id}-{partition_id}"


# --------------------------------------------------------------------------- task side
@dataclass(frozen=True)
class OpenTxn:
    """An open transaction a task attempt left for the driver to end, and its batch marker."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    query_id: str
    partition_id: int
    marker_offset: int
    attempt: str


def write_transactional(
    task: Any,
    batches: Iterable[pa.RecordBatch],
    *,
    kafka: Mapping[str, Any],
    query_id: str,
    partition_id: int,
    batch_id: int,
    marker_topic: str,
) -> OpenTxn:
    """Steps 1-3 of the protocol with ``task`` (a ``sink._TaskWrite`` over a transactional producer
    that reports successful deliveries). The caller builds the commit message."""
    producer = task.producer
    tid = transactional_id(query_id, partition_id)
    task._call(producer.init_transactions, TXN_TIMEOUT_S)  # fences and aborts earlier attempts
    task._call(producer.begin_transaction)
    for batch in batches:
        task.send(batch)
    if marker_topic in task.per_topic:
        raise KafkaOptionError(
            f"rows may not be written to the exactlyOnce marker topic '{marker_topic}' (set exactlyOnce.markerTopic)"
        )
    marker = BatchMarker(query_id, partition_id, batch_id, uuid.uuid4().hex)
    delivered: list[tuple[Any, Any]] = []
    while True:
        try:
            producer.produce(
                marker_topic,
                marker.value,
                marker.key,
                MARKER_PARTITION,
                on_delivery=lambda err, msg: delivered.append((err, msg)),
            )
            break
        except BufferError:
            task._call(producer.poll, 0.05)
    task.flush()
    if not delivered:
        raise RuntimeError(f"{tid}: the batch marker's delivery was not reported")
    err, msg = delivered[0]
    if err is not None:
        raise KafkaException(err)
    offset = int(msg.offset())
    producer_id, epoch = asyncio.run(
        own_transaction(kafka, TopicPartition(marker_topic, MARKER_PARTITION), offset, tid)
    )
    log.info(
        "zurau sink: %s batch %d written (producer %d epoch %d, marker at %d)",
        tid,
        batch_id,
        producer_id,
        epoch,
        offset,
    )
    return OpenTxn(tid, producer_id, epoch, query_id, partition_id, offset, marker.attempt)


async def own_transaction(
    kafka: Mapping[str, Any], marker: TopicPartition, offset: int, tid: str
) -> tuple[int, int]:
    """(producer id, epoch) of the open transaction whose first record in ``marker`` is at ``offset``."""
    async with TransactionsAdmin(admin_config(kafka)) as admin:
        states = (await admin.describe_producers([marker]))[marker]
    if isinstance(states, KafkaError):
        raise states
    mine = [s for s in states if s.current_txn_start_offset == offset]
    if not mine:
        raise ProducerFencedError(
            f"{tid}: this attempt's transaction (batch marker at {marker.topic}-{marker.partition}@{offset}) "
            "is no longer open: another attempt of the task fenced it"
        )
    return mine[0].producer_id, mine[0].producer_epoch


# --------------------------------------------------------------------------- driver side
@dataclass(frozen=True)
class CommitOutcome:
    """What :func:`commit_batch` did: committed, aborted as already committed, aborted as superseded."""

    committed: tuple[OpenTxn, ...]
    already_committed: tuple[OpenTxn, ...]
    superseded: tuple[OpenTxn, ...]


def choose_per_partition(txns: Sequence[OpenTxn]) -> tuple[list[OpenTxn], list[OpenTxn]]:
    """(one transaction per (query, partition): the one whose marker was written last, the others).

    Spark reports one attempt per partition; should two arrive, the later marker belongs to the
    later ``init_transactions``, which fenced the earlier attempt.
    """
    best: dict[tuple[str, int], OpenTxn] = {}
    for t in txns:
        k = (t.query_id, t.partition_id)
        if k not in best or t.marker_offset > best[k].marker_offset:
            best[k] = t
    chosen = sorted(best.values(), key=lambda t: (t.query_id, t.partition_id))
    return chosen, [t for t in txns if t not in chosen]


def commit_batch(
    kafka: Mapping[str, Any], marker_topic: str, batch_id: int, txns: Sequence[OpenTxn]
) -> CommitOutcome:
    """Step 4: commit each partition's transaction unless its marker shows ``batch_id`` committed."""
    if not txns:
        return CommitOutcome((), (), ())
    return asyncio.run(_commit_batch(kafka, marker_topic, batch_id, txns))


def _timeout_s(kafka: Mapping[str, Any]) -> float:
    ms = int(kafka.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS))
    return max(ms, DEFAULT_TRANSACTION_TIMEOUT_MS) / 1000 + 30


async def _commit_batch(
    kafka: Mapping[str, Any], marker_topic: str, batch_id: int, txns: Sequence[OpenTxn]
) -> CommitOutcome:
    chosen, superseded = choose_per_partition(txns)
    below = min(t.marker_offset for t in chosen)
    latest = await read_committed_markers(
        kafka,
        marker_topic,
        [(t.query_id, t.partition_id) for t in chosen],
        below,
        timeout_s=_timeout_s(kafka),
    )
    done = []
    for t in chosen:
        m = latest.get((t.query_id, t.partition_id))
        if m is not None and m.batch_id >= batch_id:
            log.info(
                "zurau sink: %s batch %d was committed already (marker: batch %d); aborting the re-run's transaction",
                t.transactional_id,
                batch_id,
                m.batch_id,
            )
            done.append(t)
    todo = [t for t in chosen if t not in done]
    await _end_all(kafka, [*superseded, *done], commit=False)
    await _end_all(kafka, todo, commit=True)
    return CommitOutcome(tuple(todo), tuple(done), tuple(superseded))


async def _end_all(kafka: Mapping[str, Any], txns: Sequence[OpenTxn], commit: bool) -> None:
    if not txns:
        return
    async with TransactionsAdmin(admin_config(kafka)) as admin:
        for t in txns:
            pe = ProducerIdAndEpoch(t.producer_id, t.producer_epoch)
            if commit:
                await admin.end_transaction(t.transactional_id, pe, commit=True)
                continue
            try:
                await admin.end_transaction(t.transactional_id, pe, commit=False)
            except (InvalidTxnStateError, ProducerFencedError) as e:  # decided already or superseded
                log.warning("zurau sink: abort of %s: %s", t.transactional_id, e)
            except KafkaError as e:
                log.warning(
                    "zurau sink: abort of %s failed (the timeout will abort it): %s", t.transactional_id, e
                )


def end_transactions(kafka: Mapping[str, Any], txns: Sequence[OpenTxn], *, commit: bool) -> None:
    """EndTxn for every transaction, unconditionally; commit errors propagate, abort errors are logged."""
    if txns:
        asyncio.run(_end_all(kafka, txns, commit))
