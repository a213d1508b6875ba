"""Transaction administration and low-level transaction control over the Kafka protocol.

What ``kafka-transactions.sh`` needs, plus the calls a program needs to run a transaction whose
steps happen in different processes (the exactly-once hand-off of a distributed sink: executors
write, the driver commits). Only standard Kafka APIs are used, at the highest version both sides
know, so it works against Zurau and any Kafka cluster:

======================  ===================================================================
method                  APIs
======================  ===================================================================
find_coordinator        FindCoordinator (key type 1: transactional id)
list_transactions       ListTransactions to every broker (filters: state, producer id,
                        duration (v1+), transactional id regex (v2+))
describe_transactions   DescribeTransactions at each id's coordinator
describe_producers      DescribeProducers at each partition's leader
find_hanging            DescribeProducers + ListTransactions: open transactions in partitions
                        whose producer id has no ongoing transaction at any coordinator
abort_transaction       WriteTxnMarkers (an ABORT marker) at the partition's leader: ends a
                        *hanging* transaction, as ``kafka-transactions.sh abort`` does
force_terminate         InitProducerId for the transactional id: fences its current producer
                        and aborts its ongoing transaction (Kafka 4's forceTerminateTransaction)
init_producer_id        InitProducerId (transactional)
add_partitions          AddPartitionsToTxn
add_offsets             AddOffsetsToTxn
end_transaction         EndTxn: commit or abort, from any process that knows the
                        transactional id, producer id and epoch
======================  ===================================================================

Coordinator calls are retried after a new FindCoordinator while the answer is NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS, and after a short backoff while it is
CONCURRENT_TRANSACTIONS (a previous transaction still completing), until ``request.timeout.ms``.
Errors are raised as :class:`~zurau.protocol.errors.KafkaError` s with one-line messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from zurau.client import typed_api
from zurau.client.admin import AdminClient
from zurau.client.cluster import Cluster, TopicMetadata
from zurau.client.config import ClientConfig
from zurau.client.coordinator_lookup import COORDINATOR_RETRY, TRANSACTION, find_coordinator
from zurau.client.typed_api import Call
from zurau.client.types import TopicPartition, partitions_by_topic
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ConcurrentTransactionsError,
    KafkaError,
    UnknownServerError,
    for_code,
)
from zurau.protocol.messages import AddPartitionsToTxnResponse

#: A typed answer whose error is read by :meth:`TransactionsAdmin._request` (by default its
#: top-level ``error_code``).
A = TypeVar("A", bound=Mapping[str, Any])

#: Kafka's transaction state names.
TRANSACTION_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "PrepareEpochFence",
)


def _error(code: int, what: str, message: str | None = None) -> KafkaError:
    cls = for_code(code)
    return cls(f"{what}: {message or cls.__name__}")


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    coordinator: int


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    coordinator: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int  # -1: no transaction started
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    """A producer a partition leader remembers (DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction in the partition


@dataclass(frozen=True)
class HangingTransaction:
    partition: TopicPartition
    producer: ProducerState


class TransactionsAdmin:
    """Use as ``async with TransactionsAdmin(config) as txn``."""

    def __init__(self, config: ClientConfig | Cluster, *, retry_backoff_ms: int = 100) -> None:
        self.admin = AdminClient(config)
        self.cluster = self.admin.cluster
        self.retry_backoff = retry_backoff_ms / 1000

    async def __aenter__(self) -> TransactionsAdmin:
        await self.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.admin.close()

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.cluster.config.request_timeout

    # ------------------------------------------------------------------ coordinators
    async def find_coordinator(self, transactional_id: str) -> int:
        """The node id of the id's coordinator (retrying while none is available)."""
        return await find_coordinator(
            self.cluster,
            transactional_id,
            TRANSACTION,
            error=lambda tid, code, message: _error(
                code, f"no coordinator for transactional id '{tid}'", message
            ),
            retry_backoff=self.retry_backoff,
        )

    async def _at_coordinator(self, transactional_id: str, call: Callable[[int], Awaitable[int]]) -> None:
        """Run ``call(node)`` (returning an error code) at the id's coordinator, with retries."""
        deadline = self._deadline()
        loop = asyncio.get_running_loop()
        while True:
            node = await self.find_coordinator(transactional_id)
            code = await call(node)
            if not code:
                return
            retriable = code in COORDINATOR_RETRY or code == ConcurrentTransactionsError.code
            if not retriable or loop.time() >= deadline:
                raise _error(code, f"transactional id '{transactional_id}'")
            await asyncio.sleep(self.retry_backoff)

    # ------------------------------------------------------------------ admin
    async def list_transactions(
        self,
        *,
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        duration_ms: int = -1,
        pattern: str | None = None,
    ) -> list[TransactionListing]:
        """Every transactional id every broker coordinates, filtered (all filters must match)."""
        await self.cluster.refresh_metadata([])
        out: list[TransactionListing] = []

        async def one(node: int) -> None:
            conn = await self.cluster.connection(node)
            min_version = 2 if pattern else 1 if duration_ms >= 0 else 0
            version = conn.version(ApiKey.LIST_TRANSACTIONS, min_version=min_version)
            call = typed_api.LIST_TRANSACTIONS(
                {
                    "state_filters": list(states),
                    "producer_id_filters": list(producer_ids),
                    "duration_filter": duration_ms,
                    "transactional_id_pattern": pattern or None,
                }
            )
            resp = await conn.call(call, version=version)
            if resp["error_code"]:
                raise _error(resp["error_code"], f"ListTransactions at broker {node}")
            out.extend(
                TransactionListing(t["transactional_id"], t["producer_id"], t["transaction_state"], node)
                for t in resp["transaction_states"]
            )

        await asyncio.gather(*(one(n) for n in sorted(self.cluster.metadata.brokers)))
        return sorted(out, key=lambda t: t.transactional_id)

    async def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription | KafkaError]:
        out: dict[str, TransactionDescription | KafkaError] = {}

        async def one(tid: str) -> None:
            try:
                node = await self.find_coordinator(tid)
                resp = await self.cluster.call(node, typed_api.DESCRIBE_TRANSACTIONS({"transactional_ids": [tid]}))
            except KafkaError as e:
                out[tid] = e
                return
            (s,) = resp["transaction_states"]
            if s["error_code"]:
                msg = "no such transactional id" if s["error_code"] == 105 else None
                out[tid] = _error(s["error_code"], f"transactional id '{tid}'", msg)
                return
            out[tid] = TransactionDescription(
                transactional_id=tid,
                coordinator=node,
                state=s["transaction_state"],
                producer_id=s["producer_id"],
                producer_epoch=s["producer_epoch"],
                timeout_ms=s["transaction_timeout_ms"],
                start_time_ms=s["transaction_start_time_ms"],
                partitions=tuple(
                    sorted(TopicPartition(t["topic"], p) for t in s["topics"] for p in t["partitions"])
                ),
            )

        await asyncio.gather(*(one(t) for t in dict.fromkeys(transactional_ids)))
        return out

    async def describe_producers(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
        tps = list(dict.fromkeys(partitions))
        out: dict[TopicPartition, list[ProducerState] | KafkaError] = {}
        by_leader, errors = await self.admin._by_leader(tps)
        out.update(errors)

        async def one(node: int, group: list[TopicPartition]) -> None:
            topics = partitions_by_topic(group)
            call = typed_api.DESCRIBE_PRODUCERS(
                {"topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
            )
            resp = await self.cluster.call(node, call)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    if p["error_code"]:
                        out[tp] = _error(
                            p["error_code"], f"partition {tp.topic}-{tp.partition}", p.get("error_message")
                        )
                        continue
                    out[tp] = [
                        ProducerState(
                            s["producer_id"],
                            s["producer_epoch"],
                            s["last_sequence"],
                            s["last_timestamp"],
                            s["coordinator_epoch"],
                            s["current_txn_start_offset"],
                        )
                        for s in p["active_producers"]
                    ]

        await asyncio.gather(*(one(n, g) for n, g in by_leader.items()))
        return out

    async def find_hanging(self, partitions: Iterable[TopicPartition]) -> list[HangingTransaction]:
        """Open transactions of the partitions that no coordinator is going to end.

        A producer with an open transaction in a partition is hanging if no coordinator has an
        Ongoing, PrepareCommit or PrepareAbort transaction for its producer id.
        """
        described = await self.describe_producers(partitions)
        candidates = [
            (tp, s)
            for tp, states in described.items()
            if not isinstance(states, KafkaError)
            for s in states
            if s.current_txn_start_offset >= 0
        ]
        if not candidates:
            return []
        live = await self.list_transactions(
            states=("Ongoing", "PrepareCommit", "PrepareAbort"),
            producer_ids=sorted({s.producer_id for _tp, s in candidates}),
        )
        known = {t.producer_id for t in live}
        return [HangingTransaction(tp, s) for tp, s in candidates if s.producer_id not in known]

    async def abort_transaction(
        self,
        partition: TopicPartition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int = 0,
    ) -> None:
        """Write an ABORT marker for the producer into the partition (WriteTxnMarkers).

        For a hanging transaction only: a transaction its coordinator still tracks is ended by
        the coordinator (see :meth:`force_terminate`).
        """
        leader = await self.cluster.leader_for(partition.topic, partition.partition)
        call = typed_api.WRITE_TXN_MARKERS(
            {
                "markers": [
                    {
                        "producer_id": producer_id,
                        "producer_epoch": producer_epoch,
                        "transaction_result": False,
                        "topics": [{"name": partition.topic, "partition_indexes": [partition.partition]}],
                        "coordinator_epoch": coordinator_epoch,
                        "transaction_version": 0,
                    }
                ]
            }
        )
        resp = await self.cluster.call(leader, call)
        for m in resp["markers"]:
            for t in m["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        raise _error(p["error_code"], f"cannot abort in {t['name']}-{p['partition_index']}")
        if not resp["markers"]:
            raise UnknownServerError("WriteTxnMarkers sent no answer")

    async def force_terminate(
        self, transactional_id: str, timeout_ms: int | None = None
    ) -> ProducerIdAndEpoch:
        """Abort the id's ongoing transaction (if any) by fencing its producer: the id's next epoch.

        The producer that used the id gets PRODUCER_FENCED from then on. ``timeout_ms`` is the
        transaction timeout stored for the id (default: the one it has, else 60 s).
        """
        if timeout_ms is None:
            desc = (await self.describe_transactions([transactional_id]))[transactional_id]
            timeout_ms = desc.timeout_ms if isinstance(desc, TransactionDescription) else 60_000
        return await self.init_producer_id(transactional_id, timeout_ms)

    # ------------------------------------------------------------------ transaction control
    async def _request(
        self,
        transactional_id: str,
        request: Call[A],
        max_version: int,
        *,
        min_version: int = 0,
        error_code: Callable[[A], int] = lambda resp: int(resp["error_code"]),
    ) -> A:
        """Send ``request`` to the id's coordinator (retried as :meth:`_at_coordinator` says); the
        answer without error."""
        answers: list[A] = []

        async def call(node: int) -> int:
            conn = await self.cluster.connection(node)
            version = conn.version(request.api_key, max_version, min_version=min_version)
            answers.append(await conn.call(request, version=version))
            return error_code(answers[-1])

        await self._at_coordinator(transactional_id, call)
        return answers[-1]

    async def init_producer_id(
        self, transactional_id: str, transaction_timeout_ms: int, current: ProducerIdAndEpoch | None = None
    ) -> ProducerIdAndEpoch:
        """InitProducerId for a transactional id; ``current`` (v3+) to keep the id after an error."""
        call = typed_api.INIT_PRODUCER_ID(
            {
                "transactional_id": transactional_id,
                "transaction_timeout_ms": transaction_timeout_ms,
                "producer_id": current.producer_id if current else -1,
                "producer_epoch": current.producer_epoch if current else -1,
            }
        )
        resp = await self._request(transactional_id, call, 5, min_version=3 if current else 0)
        return ProducerIdAndEpoch(resp["producer_id"], resp["producer_epoch"])

    async def add_partitions(
        self, transactional_id: str, producer: ProducerIdAndEpoch, partitions: Iterable[TopicPartition]
    ) -> None:
        """Add partitions to the producer's transaction (starting it): before writing to them."""
        topics = partitions_by_topic(dict.fromkeys(partitions))
        call = typed_api.ADD_PARTITIONS_TO_TXN(
            {
                "v3_and_below_transactional_id": transactional_id,
                "v3_and_below_producer_id": producer.producer_id,
                "v3_and_below_producer_epoch": producer.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
        )

        def error_code(resp: AddPartitionsToTxnResponse) -> int:
            codes = [
                p["partition_error_code"]
                for t in resp["results_by_topic_v3_and_below"]
                for p in t["results_by_partition"]
            ]
            hard = [c for c in codes if c and c != 55]  # 55: OPERATION_NOT_ATTEMPTED (another failed)
            return hard[0] if hard else 0

        await self._request(transactional_id, call, 3, error_code=error_code)

    async def add_offsets(self, transactional_id: str, producer: ProducerIdAndEpoch, group_id: str) -> None:
        """Make ``group_id``'s offset commits (TxnOffsetCommit) part of the transaction."""
        call = typed_api.ADD_OFFSETS_TO_TXN(
            {
                "transactional_id": transactional_id,
                "producer_id": producer.producer_id,
                "producer_epoch": producer.producer_epoch,
                "group_id": group_id,
            }
        )
        await self._request(transactional_id, call, 3)

    async def end_transaction(
        self, transactional_id: str, producer: ProducerIdAndEpoch, commit: bool
    ) -> None:
        """Commit (``commit``) or abort the producer's ongoing transaction: EndTxn.

        Any process may call this with the transactional id, producer id and epoch the
        transaction was opened with (e.g. a driver committing what its workers wrote). Ending an
        already completed transaction the same way again succeeds (a retry); INVALID_TXN_STATE
        means no transaction was open or it was decided the other way, PRODUCER_FENCED that a
        newer producer (or a timeout) took the id over.
        """
        call = typed_api.END_TXN(
            {
                "transactional_id": transactional_id,
                "producer_id": producer.producer_id,
                "producer_epoch": producer.producer_epoch,
                "committed": commit,
            }
        )
        await self._request(transactional_id, call, 4)


def partitions_of(topic_metadata: TopicMetadata) -> list[TopicPartition]:
    """Every partition of a topic's metadata (for ``describe_producers``)."""
    return [TopicPartition(topic_metadata.name, p.partition) for p in topic_metadata.partitions]


__all__ = [
    "TRANSACTION_STATES",
    "HangingTransaction",
    "ProducerIdAndEpoch",
    "ProducerState",
    "TransactionDescription",
    "TransactionListing",
    "TransactionsAdmin",
    "partitions_of",
]
