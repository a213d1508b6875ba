"""Records of ``__transaction_state``: Kafka's TransactionLogKey / TransactionLogValue formats.

One record per transactional id and state change; the topic is compacted, so the latest record
per key is the id's state, and a tombstone (null value) forgets the id (transactional id
expiration). Every key and value starts with an int16 version, followed by a struct in Kafka's
message-schema encoding (:mod:`zurau.protocol.schema`), so Kafka's own tools (the
``TransactionLogMessageFormatter`` of ``kafka-console-consumer.sh``, ``kafka-dump-log.sh``)
read what Zurau writes.

Key (version 0, never flexible)::

    transactional_id                     string

Value (versions 0-1; flexible from 1; Zurau writes 0 unless a tagged field differs from its
default, as then only version 1 can hold it)::

    producer_id                          int64    v0+  the producer id in use by the id
    previous_producer_id                 int64    tag 0 (v1+), default -1: the id before the last
                                                  producer-id rotation (epoch exhaustion)
    next_producer_id                     int64    tag 1 (v1+), default -1
    producer_epoch                       int16    v0+  its current epoch
    transaction_timeout_ms               int32    v0+
    transaction_status                   int8     v0+  a :class:`TxnState` id
    transaction_partitions               [topic]? v0+  null when Empty, else the partitions of the
        topic                            string        transaction (empty once it completed)
        partition_ids                    [int32]
    transaction_last_update_timestamp_ms int64    v0+
    transaction_start_timestamp_ms       int64    v0+  -1 when no transaction has started
    client_transaction_version           int16    tag 2 (v1+), default 0

Invariant: decoding then encoding a value gives the same bytes (partitions are written grouped by
topic, topics and partitions ascending).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache
from typing import Any

from zurau.protocol.codec import compile_struct
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.protocol.schema import INT8, INT16, INT32, INT64, STRING, Array, F, Struct
from zurau.types import TopicPartitionKey

_I16 = struct.Struct(">h")

KEY_VERSION = 0

KEY = (F("transactional_id", STRING),)

PARTITIONS = Struct(
    F("topic", STRING),
    F("partition_ids", Array(INT32)),
)

VALUE = (
    F("producer_id", INT64),
    F("previous_producer_id", INT64, versions="1+", tag=0, tagged="1+", default=-1),
    F("next_producer_id", INT64, versions="1+", tag=1, tagged="1+", default=-1),
    F("producer_epoch", INT16),
    F("transaction_timeout_ms", INT32),
    F("transaction_status", INT8),
    F("transaction_partitions", Array(PARTITIONS), nullable="0+"),
    F("transaction_last_update_timestamp_ms", INT64),
    F("transaction_start_timestamp_ms", INT64),
    F("client_transaction_version", INT16, versions="1+", tag=2, tagged="1+", default=0),
)


class TxnState(IntEnum):
    """Kafka's ``TransactionState`` ids (as stored) with their names (as DescribeTransactions shows)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {v: k for k, v in _NAMES.items()}


@dataclass(frozen=True)
class TxnLogValue:
    """The stored state of one transactional id (one TransactionLogValue)."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartitionKey] = field(default_factory=frozenset)
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0

    @property
    def version(self) -> int:
        """0, unless a field only version 1 holds differs from its default."""
        if self.previous_producer_id != -1 or self.next_producer_id != -1 or self.client_transaction_version:
            return 1
        return 0

    def to_struct(self) -> dict[str, Any]:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.partitions):
            by_topic.setdefault(t, []).append(p)
        return {
            "producer_id": self.producer_id,
            "previous_producer_id": self.previous_producer_id,
            "next_producer_id": self.next_producer_id,
            "producer_epoch": self.producer_epoch,
            "transaction_timeout_ms": self.timeout_ms,
            "transaction_status": int(self.state),
            "transaction_partitions": None
            if self.state == TxnState.EMPTY
            else [{"topic": t, "partition_ids": ps} for t, ps in by_topic.items()],
            "transaction_last_update_timestamp_ms": self.last_update_ms,
            "transaction_start_timestamp_ms": self.start_ms,
            "client_transaction_version": self.client_transaction_version,
        }

    @classmethod
    def from_struct(cls, v: dict[str, Any]) -> TxnLogValue:
        try:
            state = TxnState(v["transaction_status"])
        except ValueError:
            raise DecodeError(f"unknown transaction status {v['transaction_status']}") from None
        parts = frozenset(
            (t["topic"], p) for t in v["transaction_partitions"] or () for p in t["partition_ids"]
        )
        return cls(
            producer_id=v["producer_id"],
            producer_epoch=v["producer_epoch"],
            timeout_ms=v["transaction_timeout_ms"],
            state=state,
            partitions=parts,
            last_update_ms=v["transaction_last_update_timestamp_ms"],
            start_ms=v["transaction_start_timestamp_ms"],
            previous_producer_id=v["previous_producer_id"],
            next_producer_id=v["next_producer_id"],
            client_transaction_version=v["client_transaction_version"],
        )


@dataclass(frozen=True)
class TxnLogRecord:
    """One record of ``__transaction_state``; ``value is None`` is a tombstone."""

    transactional_id: str
    value: TxnLogValue | None

    def key_bytes(self) -> bytes:
        out = bytearray(_I16.pack(KEY_VERSION))
        _key_codec()[1](out, {"transactional_id": self.transactional_id}, [])
        return bytes(out)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        version = self.value.version
        out = bytearray(_I16.pack(version))
        _value_codec(version)[1](out, self.value.to_struct(), [])
        return bytes(out)


@cache
def _key_codec() -> Any:
    return compile_struct(KEY, KEY_VERSION, False)


@cache
def _value_codec(version: int) -> Any:
    if version not in (0, 1):
        raise DecodeError(f"TransactionLogValue has no version {version}")
    return compile_struct(VALUE, version, version >= 1)


def decode_record(key: bytes | memoryview, value: bytes | memoryview | None) -> TxnLogRecord | None:
    """Decode one stored record; None for a key version this broker does not know (skipped).

    Raises DecodeError for a malformed key or value.
    """
    kmv = memoryview(key)
    if len(kmv) < 2:
        raise DecodeError("transaction log key is shorter than its version")
    if _I16.unpack_from(kmv, 0)[0] != KEY_VERSION:
        return None
    try:
        k, _pos = _key_codec()[0](kmv, 2)
        if value is None:
            return TxnLogRecord(k["transactional_id"], None)
        vmv = memoryview(value)
        if len(vmv) < 2:
            raise DecodeError("transaction log value is shorter than its version")
        v, _pos = _value_codec(_I16.unpack_from(vmv, 0)[0])[0](vmv, 2)
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, struct.error) as e:
        raise DecodeError(f"malformed transaction log record: {e}") from None
    return TxnLogRecord(k["transactional_id"], TxnLogValue.from_struct(v))


def build_records_batch(records: Iterable[TxnLogRecord], timestamp_ms: int) -> bytes:
    """One uncompressed v2 batch (CreateTime ``timestamp_ms``) holding ``records`` in order."""
    return build_batch([NewRecord(r.key_bytes(), r.value_bytes(), (), timestamp_ms) for r in records])


def iter_log_records(data: bytes | memoryview) -> Iterator[tuple[int, list[TxnLogRecord]]]:
    """``(next_offset, records)`` for every whole batch in ``data`` (control batches: none)."""
    mv = memoryview(data)
    for pos, h in iter_batches(mv):
        if h.is_control:
            yield h.next_offset, []
            continue
        out = []
        for rec in decode_batch_records(mv[pos : pos + h.size]):
            if rec.key is None:
                continue
            r = decode_record(rec.key, rec.value)
            if r is not None:
                out.append(r)
        yield h.next_offset, out


__all__ = [
    "TopicPartitionKey",
    "TxnLogRecord",
    "TxnLogValue",
    "TxnState",
    "build_records_batch",
    "decode_record",
    "iter_log_records",
]
