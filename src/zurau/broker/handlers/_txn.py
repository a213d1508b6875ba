"""Helpers shared by the transaction handlers (AddPartitionsToTxn ... DescribeTransactions)."""

from __future__ import annotations

from collections.abc import Iterable

from zurau.broker.handlers._authz import TRANSACTIONAL_ID, Op, allowed
from zurau.broker.request_context import RequestContext
from zurau.coordinator.txn.service import TxnCoordinatorService
from zurau.protocol.errors import (
    InvalidProducerEpochError,
    KafkaError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
)
from zurau.types import TopicPartitionKey


def txn_coordinator(ctx: RequestContext) -> TxnCoordinatorService:
    return ctx.txns


def txn_denied(ctx: RequestContext, tid: str) -> KafkaError | None:
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED without WRITE on the transactional id, else None."""
    if not allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, tid):
        return TransactionalIdAuthorizationFailedError("Transactional id authorization failed.")
    return None


def txn_error(ctx: RequestContext, tid: str) -> KafkaError | None:
    """:func:`txn_denied` (checked first, as Kafka does), else the transaction coordinator's
    error for the id (None: proceed)."""
    return txn_denied(ctx, tid) or (ctx.txns.coordinator_error(tid) if tid else None)


def fenced_code(code: int, version: int, first_version_with_fenced: int) -> int:
    """PRODUCER_FENCED for the versions that know it, else INVALID_PRODUCER_EPOCH (as Kafka does)."""
    if code == ProducerFencedError.code and version < first_version_with_fenced:
        return InvalidProducerEpochError.code
    return code


def by_topic(codes: dict[TopicPartitionKey, int]) -> list[tuple[str, list[tuple[int, int]]]]:
    """``{(topic, partition): code}`` grouped by topic, in first-seen order."""
    out: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), code in codes.items():
        out.setdefault(topic, []).append((partition, code))
    return list(out.items())


def requested_partitions(topics: Iterable[tuple[str, Iterable[int]]]) -> list[TopicPartitionKey]:
    """The distinct (topic, partition) pairs of a request's (topic, partitions), in request order."""
    return list(dict.fromkeys((name, p) for name, parts in topics for p in parts))


def known_partition(ctx: RequestContext, tp: TopicPartitionKey) -> bool:
    t = ctx.image.get(tp[0])
    return t is not None and 0 <= tp[1] < t.num_partitions
