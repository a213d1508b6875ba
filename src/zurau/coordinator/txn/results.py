"""The transaction coordinator's replies, as the handlers shape them into responses.

Plain values: an error code first (0: success), then what the API returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from zurau.types import TopicPartitionKey

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@dataclass(frozen=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class DescribedTransaction:
    transactional_id: str
    error_code: int
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: tuple[TopicPartitionKey, ...] = ()


@dataclass(frozen=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class ListTransactionsResult:
    error_code: int
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[ListedTransaction, ...] = ()


@dataclass(frozen=True)
class EndTxnResult:
    """EndTxn's answer: an error code, and (transactions v2, EndTxn v5) the producer id and
    epoch the producer must use next (-1 when not given)."""

    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
