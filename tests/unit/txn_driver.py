"""A deterministic driver for the transaction coordinator: virtual clock, in-memory log and partitions.

Every write is encoded to Kafka's ``__transaction_state`` record bytes and decoded again before it
is "committed" (kept in ``self.log``), so the tests also exercise the record formats;
``rebuild()`` replays that log into a fresh coordinator, as a broker restart does. Markers are
recorded in ``self.markers`` as ``(topic, partition, producer_id, epoch, commit)``; a partition
in ``fail_markers`` answers its error instead, and ``hold_markers`` leaves marker requests
unanswered (a crash before the markers were written).
"""

from __future__ import annotations

import itertools
from typing import Any

from zurau.coordinator.transaction_coordinator import (
    MarkerRequest,
    TransactionConfig,
    TransactionCoordinator,
    TxnEffects,
)
from zurau.coordinator.transaction_log_records import TxnLogRecord, decode_record
from zurau.protocol import errors as E

TID = "app-1"


class TxnDriver:
    def __init__(self, **config: Any) -> None:
        self.config = TransactionConfig(**{"num_partitions": 5, "max_timeout_ms": 60_000, **config})
        self._pids = itertools.count(1000)
        self.core = TransactionCoordinator(self.config, lambda: next(self._pids))
        self.now = 1_000_000
        self.log: list[TxnLogRecord] = []
        self.markers: list[tuple[str, int, int, int, bool]] = []
        self.replies: dict[int, Any] = {}
        self.fail_writes: E.KafkaError | None = None
        self.fail_markers: dict[tuple[str, int], E.KafkaError] = {}
        self.hold_markers = False
        self.held: list[MarkerRequest] = []
        self._tokens = itertools.count(1)
        self.run(self.core.start(self.now))

    # ------------------------------------------------------------------ effects
    def run(self, fx: TxnEffects) -> None:
        for w in fx.writes:
            err = self.fail_writes
            if err is None:
                again = decode_record(w.record.key_bytes(), w.record.value_bytes())
                assert again == w.record
                assert w.partition == self.core.partition_for(w.transactional_id)
                self.log.append(again)
            self.run(self.core.complete_write(w, err, self.now))
        for m in fx.markers:
            if self.hold_markers:
                self.held.append(m)
                continue
            results: dict[tuple[str, int], E.KafkaError | None] = {}
            for tp in m.partitions:
                err = self.fail_markers.get(tp)
                results[tp] = err
                if err is None:
                    self.markers.append((tp[0], tp[1], m.producer_id, m.producer_epoch, m.commit))
            self.run(self.core.complete_markers(m, results, self.now))
        for token, result in fx.replies:
            assert token not in self.replies, f"token {token} answered twice"
            self.replies[token] = result

    def call(self, method: str, **kwargs: Any) -> Any:
        token = next(self._tokens)
        self.run(getattr(self.core, method)(token, now_ms=self.now, **kwargs))
        assert token in self.replies, f"no reply to {method}"
        return self.replies[token]

    def advance(self, ms: int) -> None:
        target = self.now + ms
        while True:
            d = self.core.next_deadline()
            if d is None or d > target:
                break
            self.now = max(self.now, d)
            self.run(self.core.poll(self.now))
        self.now = target

    def rebuild(self) -> None:
        """Replace the coordinator by one loaded from the committed records (a broker restart)."""
        self.core = TransactionCoordinator(self.config, lambda: next(self._pids))
        self.core.load(self.log)
        self.hold_markers = False
        self.held = []
        self.run(self.core.start(self.now))

    # ------------------------------------------------------------------ helpers
    def init(self, tid: str = TID, timeout: int = 10_000, pid: int = -1, epoch: int = -1) -> Any:
        return self.call(
            "init_producer_id",
            transactional_id=tid,
            timeout_ms=timeout,
            producer_id=pid,
            producer_epoch=epoch,
        )

    def add(self, pid: int, epoch: int, *tps: tuple[str, int], tid: str = TID) -> int:
        return self.call(
            "add_partitions",
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            partitions=list(tps),
        )

    def end(self, pid: int, epoch: int, commit: bool, tid: str = TID) -> int:
        return self.call(
            "end_transaction", transactional_id=tid, producer_id=pid, producer_epoch=epoch, commit=commit
        )

    def state(self, tid: str = TID) -> Any:
        return self.core.transactions[tid].meta
