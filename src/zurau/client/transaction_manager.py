"""The transactional producer's side of Kafka transactions (KIP-98, KIP-890): state and coordinator calls.

:class:`~zurau.client.producer.Producer` with a ``transactional_id`` owns one
:class:`TransactionManager`; the producer sends the records, the manager talks to the
transaction coordinator (and, for offsets, to the group coordinator):

=============================  ==============================================================
producer method                requests
=============================  ==============================================================
``init_transactions``          FindCoordinator (key type 1), InitProducerId: the producer id
                               and a new epoch, fencing every earlier producer of the id and
                               aborting its open transaction
``begin_transaction``          none (local state only)
``send``                       v1: AddPartitionsToTxn before the first record to a partition;
                               v2: none (Produce v12 adds the partition)
``send_offsets_to_transaction``v1: AddOffsetsToTxn then TxnOffsetCommit (v0-4); v2:
                               TxnOffsetCommit v5 only
``commit_transaction``         flush, then EndTxn(commit)
``abort_transaction``          EndTxn(abort) after in-flight batches are answered
=============================  ==============================================================

Transactions v2 (KIP-890 part 2) are used when the coordinator's ApiVersions finalized
``transaction.version`` >= 2 and it serves EndTxn v5 (read at ``init_transactions`` and again at
each ``begin_transaction`` from the coordinator's connection). Then EndTxn answers with the
producer id and epoch to use next (the epoch goes up with every commit and abort), and the
producer restarts its sequence numbers at 0. Under v1 the id and epoch stay for the producer's
life, except that an abort after a failed send bumps the epoch with InitProducerId (v3+, KIP-360)
so that sequence numbers lost with the failed batches do not stop the next transaction.

States (Kafka's names): UNINITIALIZED -> READY (init) -> IN_TRANSACTION (begin) -> READY (commit
or abort). An error that leaves the producer usable once the transaction is aborted (a record
refused, an offset commit refused by the group) moves IN_TRANSACTION to ABORTABLE_ERROR: every
call but ``abort_transaction`` raises :class:`AbortableTransactionError`. Fencing
(PRODUCER_FENCED, INVALID_PRODUCER_EPOCH: a newer producer with the same transactional id called
InitProducerId, or the coordinator timed the transaction out and bumped the epoch), an
authorization failure, INVALID_TXN_STATE or an unsupported version move to FATAL_ERROR: every
call raises that error again; only ``close`` is left. CONCURRENT_TRANSACTIONS,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR (after a new
FindCoordinator) are retried with ``retry_backoff`` until ``max_block`` seconds have passed.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zurau.client import typed_api
from zurau.client.cluster import Cluster
from zurau.client.connection import BrokerConnection
from zurau.client.coordinator_lookup import GROUP, TRANSACTION, find_coordinator
from zurau.client.errors import BrokerUnreachableError, ClientError, ConnectionLostError, RequestTimeoutError
from zurau.client.typed_api import Call
from zurau.client.types import TopicPartition, partitions_by_topic
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    KafkaError,
    NotCoordinatorError,
    ProducerFencedError,
    RequestTimedOutError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    for_code,
)

log = logging.getLogger("zurau.client.transactions")

TRANSACTION_VERSION_FEATURE = "transaction.version"
TV2_END_TXN = 5
TV2_PRODUCE = 12
TV2_TXN_OFFSET_COMMIT = 5

_FENCED = {ProducerFencedError.code, InvalidProducerEpochError.code}
_FATAL = _FENCED | {
    TransactionalIdAuthorizationFailedError.code,
    InvalidTxnStateError.code,
    35,  # UNSUPPORTED_VERSION
    73,  # UNSUPPORTED_FOR_MESSAGE_FORMAT
}
_FIND_AGAIN = {NotCoordinatorError.code, CoordinatorNotAvailableError.code}
_RETRY = _FIND_AGAIN | {
    CoordinatorLoadInProgressError.code,
    ConcurrentTransactionsError.code,
    RequestTimedOutError.code,
    UnknownTopicOrPartitionError.code,
}
_OPERATION_NOT_ATTEMPTED = 55


class TransactionState(enum.Enum):
    UNINITIALIZED = "Uninitialized"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


class TransactionStateError(ClientError):
    """A transactional method called in a state that does not allow it (e.g. commit before begin)."""


class TransactionAbortedError(ClientError):
    """A record's future when its transaction was aborted before the record was sent."""


class AbortableTransactionError(ClientError):
    """The open transaction failed (its cause is chained); abort it, then the producer can go on."""


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` tells the group coordinator about the consumer whose
    offsets it commits (Kafka's ``ConsumerGroupMetadata``); generation -1 and member "" skip the
    member check (a stand-alone consumer)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


def fencing_error(code: int, what: str) -> KafkaError:
    """PRODUCER_FENCED for both fencing codes (an older coordinator answers INVALID_PRODUCER_EPOCH)."""
    if code in _FENCED:
        return ProducerFencedError(
            f"{what}: the producer was fenced by a newer producer with the same transactional id"
        )
    cls = for_code(code)
    return cls(f"{what}: {cls.__name__}")


class TransactionManager:
    """State and coordinator requests of one transactional producer (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        retry_backoff: float = 0.1,
        max_block: float = 60.0,
    ) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff = retry_backoff
        self.max_block = max_block
        self.state = TransactionState.UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.transaction_version = 0
        self.partitions: set[TopicPartition] = set()
        self.groups: set[str] = set()
        #: Whether the coordinator may know of the current transaction: a partition or group was
        #: added (v1), or a Produce / TxnOffsetCommit was sent (v2). EndTxn is skipped otherwise.
        self.started = False
        self.error: BaseException | None = None
        self._coordinator: int | None = None
        self._coordinator_conn: BrokerConnection | None = None
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ state
    @property
    def v2(self) -> bool:
        return self.transaction_version >= 2

    def produce_versions(self) -> tuple[int, int]:
        """(min, max) Produce versions for this transaction version: exactly v12 for v2, at most v11 before."""
        return (TV2_PRODUCE, TV2_PRODUCE) if self.v2 else (3, TV2_PRODUCE - 1)

    def check_usable(self) -> None:
        """Raise the fatal error, or AbortableTransactionError, if the producer is in either state."""
        if self.state is TransactionState.FATAL_ERROR:
            assert self.error is not None
            raise self.error
        if self.state is TransactionState.ABORTABLE_ERROR:
            raise AbortableTransactionError(
                f"transactional id '{self.transactional_id}': the transaction failed and must be aborted"
                f" ({self.error})"
            ) from self.error

    def check_in_transaction(self, action: str) -> None:
        self.check_usable()
        if self.state is not TransactionState.IN_TRANSACTION:
            raise TransactionStateError(f"cannot {action}: no transaction is open (state {self.state.value})")

    def begin(self) -> None:
        self.check_usable()
        if self.state is not TransactionState.READY:
            raise TransactionStateError(f"cannot begin a transaction in state {self.state.value}")
        self._read_transaction_version()
        self.partitions.clear()
        self.groups.clear()
        self.started = False
        self.state = TransactionState.IN_TRANSACTION

    def fail(self, error: BaseException) -> None:
        """A send or request of the transaction failed: fatal or abortable by its code."""
        if isinstance(error, TransactionAbortedError):
            return
        code = getattr(error, "code", None)
        if isinstance(error, ProducerFencedError | InvalidProducerEpochError) or code in _FATAL:
            if self.state is not TransactionState.FATAL_ERROR:
                if code in _FENCED:
                    error = fencing_error(int(code), f"transactional id '{self.transactional_id}'")
                log.warning("transactional id %s: fatal error %s", self.transactional_id, error)
                self.error = error
                self.state = TransactionState.FATAL_ERROR
        elif self.state is TransactionState.IN_TRANSACTION:
            self.error = error
            self.state = TransactionState.ABORTABLE_ERROR

    def _read_transaction_version(self) -> None:
        conn = self._coordinator_conn
        if conn is None:
            return
        level = conn.finalized_features.get(TRANSACTION_VERSION_FEATURE, 0)
        theirs = conn.api_versions.get(ApiKey.END_TXN, (0, 0))[1]
        self.transaction_version = level if level < 2 or theirs >= TV2_END_TXN else 1

    # ------------------------------------------------------------------ coordinator calls
    async def _find(self, key: str, key_type: int) -> int:
        def error(k: str, code: int, message: str | None) -> KafkaError:
            return for_code(code)(f"no coordinator for '{k}': {message or for_code(code).__name__}")

        return await find_coordinator(
            self.cluster, key, key_type, error=error, retry_backoff=self.retry_backoff
        )

    async def _retrying(self, what: str, attempt: Any, *, group: str | None = None) -> Any:
        """Run ``attempt(node)`` -> (error code, answer) at the coordinator until it succeeds, a
        non-retriable code comes back (raised, and recorded as fatal or abortable), or
        ``max_block`` passes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_block
        while True:
            if group is not None:
                node = await self._find(group, GROUP)
            else:
                if self._coordinator is None:
                    self._coordinator = await self._find(self.transactional_id, TRANSACTION)
                node = self._coordinator
            try:
                code, answer = await attempt(node)
            except (BrokerUnreachableError, ConnectionLostError, RequestTimeoutError) as e:
                # The coordinator's node is gone (killed, stopping, or unreachable): look the
                # coordinator up again, as for NOT_COORDINATOR.
                code, answer = NotCoordinatorError.code, e
            if not code:
                return answer
            if code in _FIND_AGAIN and group is None:
                self._coordinator = None
            if code not in _RETRY or loop.time() >= deadline:
                err = fencing_error(code, f"{what} for transactional id '{self.transactional_id}'")
                self.fail(err)
                raise err
            await asyncio.sleep(self.retry_backoff)

    async def _call(self, node: int, call: Call[Any], max_version: int, min_version: int = 0) -> Any:
        conn = await self.cluster.connection(node)
        if node == self._coordinator:
            self._coordinator_conn = conn
        return await conn.call(call, version=conn.version(call.api_key, max_version, min_version=min_version))

    async def init(self) -> tuple[int, int]:
        """InitProducerId: a producer id and epoch (fencing earlier producers); READY after it."""
        self.check_usable()
        if self.state is not TransactionState.UNINITIALIZED:
            raise TransactionStateError(f"init_transactions was already called (state {self.state.value})")
        await self._init_producer_id(bump=False)
        self._read_transaction_version()
        self.state = TransactionState.READY
        log.info(
            "transactional id %s: producer id %d epoch %d, transactions v%d",
            self.transactional_id,
            self.producer_id,
            self.producer_epoch,
            2 if self.v2 else 1,
        )
        return self.producer_id, self.producer_epoch

    async def _init_producer_id(self, *, bump: bool) -> None:
        call = typed_api.INIT_PRODUCER_ID(
            {
                "transactional_id": self.transactional_id,
                "transaction_timeout_ms": self.transaction_timeout_ms,
                "producer_id": self.producer_id if bump else -1,
                "producer_epoch": self.producer_epoch if bump else -1,
            }
        )

        async def attempt(node: int) -> tuple[int, Any]:
            resp = await self._call(node, call, 5, 3 if bump else 0)
            return resp["error_code"], resp

        resp = await self._retrying("InitProducerId", attempt)
        self.producer_id, self.producer_epoch = resp["producer_id"], resp["producer_epoch"]

    async def add_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """v1: AddPartitionsToTxn for the partitions not yet in the transaction (no-op under v2)."""
        if self.v2:  # the leader adds it; ``started`` is set when a Produce goes out
            return
        async with self._lock:
            self.check_in_transaction("send")
            new = [tp for tp in dict.fromkeys(tps) if tp not in self.partitions]
            if not new:
                return
            topics = partitions_by_topic(dict.fromkeys(new))
            call = typed_api.ADD_PARTITIONS_TO_TXN(
                {
                    "v3_and_below_transactional_id": self.transactional_id,
                    "v3_and_below_producer_id": self.producer_id,
                    "v3_and_below_producer_epoch": self.producer_epoch,
                    "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                }
            )

            async def attempt(node: int) -> tuple[int, Any]:
                resp = await self._call(node, call, 3)
                if resp.get("error_code"):
                    return resp["error_code"], resp
                codes = [
                    p["partition_error_code"]
                    for t in resp["results_by_topic_v3_and_below"]
                    for p in t["results_by_partition"]
                ]
                hard = [c for c in codes if c and c != _OPERATION_NOT_ATTEMPTED]
                return (hard[0] if hard else 0), resp

            await self._retrying("AddPartitionsToTxn", attempt)
            self.partitions.update(new)
            self.started = True

    async def send_offsets(self, offsets: Mapping[TopicPartition, int], group: ConsumerGroupMetadata) -> None:
        """Commit ``offsets`` for the group as part of the transaction (visible on commit only)."""
        async with self._lock:
            self.check_in_transaction("send offsets")
            if not self.v2 and group.group_id not in self.groups:
                add = typed_api.ADD_OFFSETS_TO_TXN(
                    {
                        "transactional_id": self.transactional_id,
                        "producer_id": self.producer_id,
                        "producer_epoch": self.producer_epoch,
                        "group_id": group.group_id,
                    }
                )

                async def add_attempt(node: int) -> tuple[int, Any]:
                    resp = await self._call(node, add, 3)
                    return resp["error_code"], resp

                await self._retrying("AddOffsetsToTxn", add_attempt)
                self.groups.add(group.group_id)
            self.started = True
            by_topic: dict[str, list[Any]] = {}
            for tp, offset in offsets.items():
                by_topic.setdefault(tp.topic, []).append(
                    {
                        "partition_index": tp.partition,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                )
            commit = typed_api.TXN_OFFSET_COMMIT(
                {
                    "transactional_id": self.transactional_id,
                    "group_id": group.group_id,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.producer_epoch,
                    "generation_id": group.generation_id,
                    "member_id": group.member_id,
                    "group_instance_id": group.group_instance_id,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                }
            )
            lo, hi = (
                (TV2_TXN_OFFSET_COMMIT, TV2_TXN_OFFSET_COMMIT) if self.v2 else (0, TV2_TXN_OFFSET_COMMIT - 1)
            )

            async def commit_attempt(node: int) -> tuple[int, Any]:
                resp = await self._call(node, commit, hi, lo)
                codes = [p["error_code"] for t in resp["topics"] for p in t["partitions"] if p["error_code"]]
                return (codes[0] if codes else 0), resp

            await self._retrying("TxnOffsetCommit", commit_attempt, group=group.group_id)

    async def end(self, commit: bool) -> bool:
        """EndTxn (skipped when the transaction wrote nothing); READY after it. Returns whether the
        producer id or epoch changed (v2 adopts EndTxn's, v1 bumps after a failed abort)."""
        before = (self.producer_id, self.producer_epoch)
        had_error = self.state is TransactionState.ABORTABLE_ERROR
        if self.started:
            call = typed_api.END_TXN(
                {
                    "transactional_id": self.transactional_id,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.producer_epoch,
                    "committed": commit,
                }
            )
            lo, hi = (TV2_END_TXN, TV2_END_TXN) if self.v2 else (0, TV2_END_TXN - 1)

            async def attempt(node: int) -> tuple[int, Any]:
                resp = await self._call(node, call, hi, lo)
                return resp["error_code"], resp

            resp = await self._retrying("EndTxn(commit)" if commit else "EndTxn(abort)", attempt)
            if self.v2 and resp.get("producer_id", -1) >= 0:
                self.producer_id, self.producer_epoch = resp["producer_id"], resp["producer_epoch"]
        if had_error and not self.v2:
            await self._init_producer_id(bump=True)
        self.partitions.clear()
        self.groups.clear()
        self.started = False
        self.error = None
        self.state = TransactionState.READY
        return (self.producer_id, self.producer_epoch) != before


__all__ = [
    "AbortableTransactionError",
    "TransactionAbortedError",
    "ConsumerGroupMetadata",
    "TransactionManager",
    "TransactionState",
    "TransactionStateError",
]
