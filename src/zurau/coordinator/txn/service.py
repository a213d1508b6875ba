"""The transaction coordinator's service face: one async method per Kafka transaction API.

Handlers see the transaction coordinator only through :class:`TxnCoordinatorService` (Kafka's
``TransactionCoordinator`` as ``KafkaApis`` calls it). :class:`RuntimeTxnCoordinatorService`
implements it over a :class:`~zurau.coordinator.txn.transaction_runtime.TransactionRuntime`:
each state change is one operation submitted to the shard of the transactional id's
``__transaction_state`` partition (answered once its record is committed); the read APIs read
the state machine's committed state directly.

Invariants:

* Handlers keep authorisation and response shaping; the service returns results and error codes
  (a coordinator problem, NOT_COORDINATOR and the like, is the result's error code, as the
  handlers' fallbacks answered before this face existed).
* WriteTxnMarkers is served by the same in-process path the coordinator's own markers take.
* Idempotent producers get their ids here too (:meth:`TxnCoordinatorService.next_producer_id`),
  and produce asks :meth:`~TxnCoordinatorService.remote_coordinator` / ``verification_channel``
  for KIP-890 verification with another broker's coordinator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from zurau.coordinator.group.group_runtime import OFFSETS_TOPIC
from zurau.coordinator.txn.results import (
    DescribedTransaction,
    EndTxnResult,
    InitProducerIdResult,
    ListTransactionsResult,
)
from zurau.coordinator.txn.transaction_runtime import TransactionRuntime
from zurau.coordinator.txn.transaction_version import TV_2
from zurau.coordinator.txn.txn_verification_channel import TxnVerificationChannel
from zurau.protocol.errors import CoordinatorNotAvailableError, KafkaError
from zurau.types import TopicPartitionKey


class TxnCoordinatorService(Protocol):
    """What the broker's handlers may ask of the transaction coordinator."""

    # ------------------------------------------------------------------ routing
    @property
    def topic(self) -> str: ...

    def partition_for(self, transactional_id: str) -> int: ...

    def coordinator_error(self, transactional_id: str) -> KafkaError | None:
        """None if this broker coordinates the id now (creating ``__transaction_state`` on first use)."""
        ...

    def lookup_error(self, transactional_id: str) -> KafkaError | None:
        """:meth:`coordinator_error` as FindCoordinator needs it."""
        ...

    # ------------------------------------------------------------------ producers and verification
    def next_producer_id(self) -> int:
        """A fresh producer id for an idempotent (non-transactional) producer."""
        ...

    def remote_coordinator(self, transactional_id: str) -> bool:
        """Whether another broker coordinates the id (cluster mode): produce verifies with it."""
        ...

    @property
    def verification_channel(self) -> TxnVerificationChannel | None: ...

    # ------------------------------------------------------------------ APIs
    async def init_producer_id(
        self, *, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> InitProducerIdResult: ...

    async def add_partitions_to_txn(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
        verify_only: bool = False,
        transaction_version: int = 0,
    ) -> dict[TopicPartitionKey, int]:
        """An error code per partition (``verify_only``: 0 for those already in the transaction;
        ``transaction_version`` 2: added by a partition leader for a transactions-v2 producer)."""
        ...

    async def add_partitions_implicitly(
        self, *, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, int]:
        """Transactions v2 (Kafka's ``addPartition``): a partition leader adds the partitions a
        producer writes first (Produce v12+, TxnOffsetCommit v5+) to its transaction, with this
        broker's coordinator or the remote one that coordinates the id; a coordinator error code
        per partition (0: added)."""
        ...

    async def add_offsets_to_txn(
        self, *, transactional_id: str, producer_id: int, producer_epoch: int, offsets_partition: int
    ) -> int:
        """Add the group's ``__consumer_offsets`` partition to the transaction; its error code."""
        ...

    async def end_txn(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        transaction_version: int = 0,
    ) -> EndTxnResult:
        """``transaction_version`` 2: EndTxn v5 with transactions v2 finalized (epoch bump)."""
        ...

    async def write_txn_markers(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        transaction_version: int = 0,
    ) -> dict[TopicPartitionKey, KafkaError | None]:
        """Each partition's marker outcome (None: committed)."""
        ...

    async def describe_transactions(self, transactional_ids: Sequence[str]) -> list[DescribedTransaction]: ...

    async def list_transactions(
        self,
        *,
        states: Iterable[str],
        producer_ids: Iterable[int],
        duration_ms: int,
        pattern: str | None,
    ) -> ListTransactionsResult: ...


class RuntimeTxnCoordinatorService:
    """:class:`TxnCoordinatorService` over the transaction coordinator runtime."""

    def __init__(self, runtime: TransactionRuntime) -> None:
        self.runtime = runtime

    # ------------------------------------------------------------------ routing
    @property
    def topic(self) -> str:
        return self.runtime.topic

    def partition_for(self, transactional_id: str) -> int:
        return self.runtime.partition_for(transactional_id)

    def coordinator_error(self, transactional_id: str) -> KafkaError | None:
        return self.runtime.coordinator_error(transactional_id)

    def lookup_error(self, transactional_id: str) -> KafkaError | None:
        return self.runtime.lookup_error(transactional_id)

    # ------------------------------------------------------------------ producers and verification
    def next_producer_id(self) -> int:
        return self.runtime.next_producer_id()

    def remote_coordinator(self, transactional_id: str) -> bool:
        return self.runtime.remote_coordinator(transactional_id)

    @property
    def verification_channel(self) -> TxnVerificationChannel | None:
        return self.runtime.verification_channel

    # ------------------------------------------------------------------ APIs
    async def init_producer_id(
        self, *, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> InitProducerIdResult:
        rt = self.runtime
        result: InitProducerIdResult = await rt.submit(
            transactional_id,
            lambda token, now: rt.core.init_producer_id(
                token,
                transactional_id=transactional_id,
                timeout_ms=timeout_ms,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                now_ms=now,
            ),
            lambda e: InitProducerIdResult(e.code),
        )
        return result

    async def add_partitions_to_txn(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
        verify_only: bool = False,
        transaction_version: int = 0,
    ) -> dict[TopicPartitionKey, int]:
        if verify_only:
            _top, codes = self.runtime.core.verify_partitions(
                transactional_id, producer_id, producer_epoch, partitions
            )
            return codes
        code = await self._add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, transaction_version
        )
        return dict.fromkeys(partitions, code)

    async def add_partitions_implicitly(
        self, *, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, int]:
        channel = self.runtime.verification_channel
        if channel is not None and self.runtime.remote_coordinator(transactional_id):
            return await channel.add(transactional_id, producer_id, producer_epoch, partitions)
        err = self.runtime.coordinator_error(transactional_id)
        if err is not None:
            return dict.fromkeys(partitions, err.code)
        code = await self._add_partitions(transactional_id, producer_id, producer_epoch, partitions, TV_2)
        return dict.fromkeys(partitions, code)

    async def add_offsets_to_txn(
        self, *, transactional_id: str, producer_id: int, producer_epoch: int, offsets_partition: int
    ) -> int:
        return await self._add_partitions(
            transactional_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, offsets_partition)]
        )

    async def _add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
        transaction_version: int = 0,
    ) -> int:
        rt = self.runtime
        code: int = await rt.submit(
            transactional_id,
            lambda token, now: rt.core.add_partitions(
                token,
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=partitions,
                now_ms=now,
                transaction_version=transaction_version,
            ),
            lambda e: e.code,
        )
        return code

    async def end_txn(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        transaction_version: int = 0,
    ) -> EndTxnResult:
        rt = self.runtime
        result: EndTxnResult = await rt.submit(
            transactional_id,
            lambda token, now: rt.core.end_transaction(
                token,
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                commit=commit,
                now_ms=now,
                transaction_version=transaction_version,
            ),
            lambda e: EndTxnResult(e.code),
        )
        return result

    async def write_txn_markers(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        transaction_version: int = 0,
    ) -> dict[TopicPartitionKey, KafkaError | None]:
        return await self.runtime.write_markers(
            producer_id, producer_epoch, commit, coordinator_epoch, partitions, transaction_version
        )

    async def describe_transactions(self, transactional_ids: Sequence[str]) -> list[DescribedTransaction]:
        if not self.runtime.started:
            return [DescribedTransaction(tid, CoordinatorNotAvailableError.code) for tid in transactional_ids]
        return self.runtime.core.describe(transactional_ids)

    async def list_transactions(
        self,
        *,
        states: Iterable[str],
        producer_ids: Iterable[int],
        duration_ms: int,
        pattern: str | None,
    ) -> ListTransactionsResult:
        rt = self.runtime
        err = rt.listing_error()
        if err is not None:
            return ListTransactionsResult(err.code)
        return rt.core.list_transactions(
            states=states, producer_ids=producer_ids, duration_ms=duration_ms, pattern=pattern, now_ms=rt.clock.now_ms()
        )
