"""KIP-890 verification against a transaction coordinator on another broker
(Kafka's AddPartitionsToTxnManager).

A partition leader that receives the first transactional batch of a producer (no transaction of
that producer is open in the partition yet) must make sure the partition belongs to the
producer's ongoing transaction before appending: otherwise a late retry of an already-ended
transaction could open a "hanging" transaction that no marker will ever close, blocking
read_committed readers at the last stable offset. When this broker coordinates the producer's
transactional id, the check is local (:meth:`TransactionRuntime.verify`); otherwise
:class:`TxnVerificationChannel` asks the coordinator with AddPartitionsToTxn v4+
``verify_only=true``, the broker-to-broker form, which changes nothing and answers 0 for each
partition already in the ongoing transaction. With transactions v2 the leader instead has the
coordinator *add* the partition (:meth:`TxnVerificationChannel.add`: AddPartitionsToTxn v5,
``verify_only=false``, Kafka's ``addPartition`` operation): the producer sent no
AddPartitionsToTxn of its own.

Errors (the produce response carries them per partition):

* the coordinator's answer for a partition: INVALID_TXN_STATE (not in the transaction),
  INVALID_PRODUCER_EPOCH (also for the coordinator's PRODUCER_FENCED, which the produce API
  does not name) or INVALID_PRODUCER_ID_MAPPING (a zombie or a stranger);
* the coordinator cannot be asked, or answers NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
  COORDINATOR_LOAD_IN_PROGRESS or CONCURRENT_TRANSACTIONS: NOT_ENOUGH_REPLICAS, which every
  producer retries (the produce API of the clients in use predates those coordinator errors;
  Kafka maps them the same way).

Requests are not batched across produce requests (Kafka batches per coordinator): a producer
verifies a partition once per transaction, so the cost is one round trip per partition and
transaction, paid by the first batch only.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import ADD_PARTITIONS_TO_TXN
from zurau.coordinator.txn.inter_broker import inter_broker_connection
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    InvalidProducerEpochError,
    KafkaError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    ProducerFencedError,
    for_code,
)
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.coordinator.txn")

# Coordinator-side conditions a producer must simply retry.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset(
    e.code
    for e in (
        NotCoordinatorError,
        CoordinatorNotAvailableError,
        CoordinatorLoadInProgressError,
        ConcurrentTransactionsError,
        NotEnoughReplicasError,
    )
)
# The first AddPartitionsToTxn version with the broker-to-broker (batched, verify_only) form.
VERIFY_VERSION = 4
# The first one whose non-verify-only entries add partitions to a transactions-v2 transaction.
ADD_VERSION = 5

VerifyResults = dict[TopicPartitionKey, KafkaError | None]


def produce_error(code: int, what: str) -> KafkaError | None:
    """The produce error for a coordinator's error ``code`` about ``what`` (None for 0)."""
    if code == 0:
        return None
    if code in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return NotEnoughReplicasError(f"cannot verify {what} with its transaction coordinator yet (error {code})")
    if code == ProducerFencedError.code:  # the produce API names a fenced epoch so
        return InvalidProducerEpochError(f"{what}: its epoch is not the transactional id's current one")
    return for_code(code)(f"transaction verification of {what} failed")


class TxnVerificationChannel:
    """Asks remote transaction coordinators whether partitions are in a producer's transaction.

    ``coordinator_of(transactional_id)`` is the broker leading the transactional id's
    ``__transaction_state`` partition in the current metadata (-1 when none);
    ``endpoint(broker_id)`` that broker's inter-broker (host, port), or None.
    """

    def __init__(
        self,
        node_id: int,
        coordinator_of: Callable[[str], int],
        endpoint: Callable[[int], tuple[str, int] | None],
        request_timeout_ms: int = 30_000,
        security: ClientSecurity | None = None,
    ) -> None:
        self.node_id = node_id
        self.coordinator_of = coordinator_of
        self.endpoint = endpoint
        self.request_timeout_ms = request_timeout_ms
        self.security = security
        self._closed = False
        self._conns: ConnectionCache[int] = ConnectionCache(self._new_connection, request_timeout_ms / 1000)

    def _new_connection(self, broker_id: int) -> BrokerConnection:
        return inter_broker_connection(
            self.endpoint,
            broker_id,
            client_id=f"zurau-txn-verify-{self.node_id}",
            request_timeout_ms=self.request_timeout_ms,
            security=self.security,
            unreachable=CoordinatorNotAvailableError,
        )

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartitionKey],
    ) -> VerifyResults:
        """Each partition's verdict: None (in the ongoing transaction) or the produce error."""
        what = f"producer {producer_id} ({transactional_id!r})"
        codes = await self._ask(transactional_id, producer_id, producer_epoch, partitions, verify_only=True)
        return {tp: produce_error(code, what) for tp, code in codes.items()}

    async def add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartitionKey],
    ) -> dict[TopicPartitionKey, int]:
        """Transactions v2 (Kafka's ``addPartition``): ask the coordinator to add the partitions
        to the producer's transaction (AddPartitionsToTxn v5, ``verify_only=false``); each
        partition's coordinator error code (COORDINATOR_NOT_AVAILABLE when it cannot be asked)."""
        return await self._ask(transactional_id, producer_id, producer_epoch, partitions, verify_only=False)

    async def _ask(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        *,
        verify_only: bool,
    ) -> dict[TopicPartitionKey, int]:
        parts = list(dict.fromkeys(partitions))
        what = f"producer {producer_id} ({transactional_id!r})"
        broker = self.coordinator_of(transactional_id)
        unavailable = CoordinatorNotAvailableError.code
        if self._closed or broker < 0:
            return dict.fromkeys(parts, unavailable)
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in parts:
            by_topic[topic].append(index)
        call = ADD_PARTITIONS_TO_TXN({
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "verify_only": verify_only,
                    "topics": [{"name": t, "partitions": idx} for t, idx in by_topic.items()],
                }
            ]
        })
        results: dict[TopicPartitionKey, int] = {}
        try:
            conn = await self._conns.get(broker)
            version = conn.version(
                ApiKey.ADD_PARTITIONS_TO_TXN, min_version=VERIFY_VERSION if verify_only else ADD_VERSION
            )
            resp = await conn.call(call, version=version)
            top = resp.get("error_code", 0)
            for tr in resp.get("results_by_transaction", []):
                for t in tr["topic_results"]:
                    for p in t["results_by_partition"]:
                        results[(t["name"], p["partition_index"])] = p["partition_error_code"] or top
            if top and not results:
                results = dict.fromkeys(parts, top)
        except (ClientError, KafkaError, OSError) as e:
            log.info("cannot %s %s with broker %d: %s", "verify" if verify_only else "add partitions of", what, broker, e)
            await self._conns.drop(broker)
        return {tp: results.get(tp, unavailable) for tp in parts}

    async def close(self) -> None:
        self._closed = True
        await self._conns.close()


__all__ = ["TxnVerificationChannel", "VerifyResults", "produce_error"]
