"""Exactly-once streaming sink (``exactlyOnce=true``): tasks leave transactions open, the driver ends them.

Protocol, for micro-batch ``B`` of the query with id ``Q`` (stable across restarts from one
checkpoint) and a write task with Spark partition id ``P``:

1. **Task** (executor): ``tid = "zurau-sink-Q-P"``. A transactional producer with that id calls
   ``init_transactions()``: this fences any earlier producer of ``tid`` and aborts its open
   transaction (a crashed or replayed attempt of this task), so nothing of it becomes visible.
2. The task reads the **marker**: the committed offset of group ``zurau-sink-Q-P`` on partition 0 of
   the marker topic (option ``exactlyOnce.markerTopic``, default the ``topic`` option). The marker
   holds ``last committed batch + 1``. If it is ``> B``, batch ``B`` was committed already (the
   driver died after EndTxn but before Spark recorded the batch): the task writes nothing and
   reports :attr:`EosCommitMessage.already_committed`.
3. Otherwise it begins a transaction, produces its rows, and writes the marker ``B + 1`` *in the same
   transaction* (``send_offsets_to_transaction``: AddOffsetsToTxn + TxnOffsetCommit), flushes, reads
   the transaction's producer id and epoch (DescribeTransactions) and returns them with ``tid``,
   leaving the transaction open (the producer is dropped without commit or abort).
4. **Driver** ``commit(messages, B)``: EndTxn(commit) for each reported transaction
   (:class:`~zurau.client.transactions_admin.TransactionsAdmin`). EndTxn commit is idempotent, so a
   second ``commit`` of the same batch succeeds. The records and the marker become visible together.
   ``abort(messages, B)``: EndTxn(abort); already-decided or fenced transactions are only logged.

``transaction.timeout.ms`` (default :data:`DEFAULT_TRANSACTION_TIMEOUT_MS`, ``kafka.transaction.timeout.ms``
overrides; at most the broker's ``transaction.max.timeout.ms``, 15 min by default) must cover the
time from a task's write to the driver's commit, or the coordinator aborts the transaction and
``commit`` fails with a fencing error (the query stops; a restart re-runs the batch).

Requirements: the same input partitions must map to the same Spark partition ids when a batch is
re-run (true for a query without a shuffle whose source plans deterministically, as ``zurau`` does);
the driver side talks to the cluster with :mod:`zurau.client`, which supports PLAINTEXT only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaException, TopicPartition

from zurau.client.config import ClientConfig
from zurau.client.transactions_admin import ProducerIdAndEpoch, TransactionDescription, TransactionsAdmin
from zurau.protocol.errors import InvalidTxnStateError, KafkaError, ProducerFencedError

log = logging.getLogger(__name__)

DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
TXN_TIMEOUT_S = 60.0
_ADMIN_KEYS = ("bootstrap.servers", "security.protocol", "client.id", "request.timeout.ms")


def transactional_id(query_id: str, partition_id: int) -> str:
    """The task's ``transactional.id``: deterministic per (query, Spark partition)."""
    return f"zurau-sink-{query_id}-{partition_id}"


def marker_group(query_id: str, partition_id: int) -> str:
    """The consumer group whose committed offset is the task's marker (last committed batch + 1)."""
    return f"zurau-sink-{query_id}-{partition_id}"


def admin_config(kafka: Mapping[str, Any]) -> ClientConfig:
    """A :mod:`zurau.client` config from the sink's librdkafka settings (connection keys only)."""
    return ClientConfig.from_props({k: str(kafka[k]) for k in _ADMIN_KEYS if k in kafka})


def read_marker(kafka: Mapping[str, Any], query_id: str, partition_id: int, marker_topic: str) -> int:
    """The committed marker of (query, partition): next batch id to commit, or -1 if none."""
    c = _marker_consumer(kafka, query_id, partition_id)
    try:
        return _committed(c, marker_topic)
    finally:
        c.close()


def _marker_consumer(kafka: Mapping[str, Any], query_id: str, partition_id: int) -> Consumer:
    cfg = {k: v for k, v in kafka.items() if k in _ADMIN_KEYS or k.startswith(("sasl.", "ssl."))}
    cfg.update(
        {
            "group.id": marker_group(query_id, partition_id),
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "log_level": 3,
        }
    )
    return Consumer(cfg)


def _committed(consumer: Consumer, marker_topic: str) -> int:
    (tp,) = consumer.committed([TopicPartition(marker_topic, 0)], timeout=TXN_TIMEOUT_S)
    if tp.error is not None:
        raise KafkaException(tp.error)
    return tp.offset if tp.offset >= 0 else -1


async def describe(kafka: Mapping[str, Any], tid: str) -> TransactionDescription:
    """The coordinator's view of ``tid`` (its producer id, epoch and state)."""
    async with TransactionsAdmin(admin_config(kafka)) as admin:
        d = (await admin.describe_transactions([tid]))[tid]
    if not isinstance(d, TransactionDescription):
        raise RuntimeError(f"cannot describe transaction {tid}: {d}")
    return d


@dataclass(frozen=True)
class OpenTxn:
    """An open transaction a task left for the driver to end."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


def write_transactional(
    task: Any,
    batches: Iterable[pa.RecordBatch],
    *,
    kafka: Mapping[str, Any],
    query_id: str,
    partition_id: int,
    batch_id: int,
    marker_topic: str,
) -> tuple[OpenTxn | None, bool]:
    """Steps 1-3 of the protocol with ``task`` (a ``sink._TaskWrite`` over a transactional producer).

    Returns ``(open transaction or None, already_committed)``. The caller builds the commit message.
    """
    producer = task.producer
    tid = transactional_id(query_id, partition_id)
    task._call(producer.init_transactions, TXN_TIMEOUT_S)  # fences and aborts earlier attempts
    consumer = _marker_consumer(kafka, query_id, partition_id)
    try:
        marker = _committed(consumer, marker_topic)
        if marker > batch_id:
            log.info("zurau sink: %s batch %d committed already (marker %d)", tid, batch_id, marker)
            for _ in batches:  # Spark expects the input consumed; nothing is written
                pass
            return None, True
        task._call(producer.begin_transaction)
        for batch in batches:
            task.send(batch)
        task._call(
            producer.send_offsets_to_transaction,
            [TopicPartition(marker_topic, 0, batch_id + 1)],
            consumer.consumer_group_metadata(),
            TXN_TIMEOUT_S,
        )
    finally:
        consumer.close()
    task.flush()
    d = asyncio.run(describe(kafka, tid))
    if d.state != "Ongoing":
        raise RuntimeError(f"transaction {tid} is {d.state} after the write, not Ongoing")
    return OpenTxn(tid, d.producer_id, d.producer_epoch), False


async def _end_all(kafka: Mapping[str, Any], txns: Sequence[OpenTxn], commit: bool) -> None:
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
    """Step 4: EndTxn for every open transaction; commit errors propagate, abort errors are logged."""
    if txns:
        asyncio.run(_end_all(kafka, txns, commit))
