"""A deterministic driver for the transaction coordinator: the real runtime on a virtual clock and
in-memory partitions.

The driver runs :class:`~zurau.coordinator.txn.transaction_runtime.TransactionRuntime` with a
:class:`~zurau.clock.ManualClock` and a :class:`~tests.unit.memory_writer.MemoryPartitionWriter`,
every partition of ``__transaction_state`` loaded. Every write is encoded to Kafka's
``__transaction_state`` record bytes and decoded again when loaded, so the tests also exercise
the record formats; ``self.log`` is what was committed. ``rebuild()`` replaces the runtime by one
loaded from the committed records (a broker restart). ``self.markers`` lists the committed
markers as ``(topic, partition, producer_id, epoch, commit)``; a partition in ``fail_markers``
refuses its marker with that error, and ``hold_markers`` keeps every data partition's high
watermark where it is (markers written but never committed: a crash before they were).
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from tests.unit.memory_writer import MemoryPartitionWriter
from zurau.clock import ManualClock
from zurau.config import BrokerConfig
from zurau.coordinator.txn.transaction_coordinator import TransactionCoordinator
from zurau.coordinator.txn.transaction_log_records import TxnLogRecord, iter_log_records
from zurau.coordinator.txn.transaction_runtime import TRANSACTION_STATE_TOPIC, TransactionRuntime
from zurau.protocol import errors as E
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.control import parse_control_record
from zurau.protocol.records.record import decode_batch_records

TID = "app-1"
BROKER_CONFIG = BrokerConfig({})


class _NoTopics:
    def get(self, name: str) -> None:
        return None


def no_create(name: str, partitions: int, replication_factor: int, configs: dict[str, str | None]) -> None:
    raise AssertionError("the driver's runtime never creates topics")


class TxnDriver:
    def __init__(self, **config: Any) -> None:
        self.config = replace(
            BROKER_CONFIG.transaction_coordinator, **{"num_partitions": 5, "max_timeout_ms": 60_000, **config}
        )
        self._pids = itertools.count(1000)
        self.writer = MemoryPartitionWriter()
        self.replies: dict[int, Any] = {}
        self._tokens = itertools.count(1)
        self.rt = self.new_runtime(ManualClock(1_000_000))

    def new_runtime(self, clock: ManualClock, *, load: bool = True) -> TransactionRuntime:
        rt = TransactionRuntime(
            self.config,
            self.writer,
            _NoTopics(),  # type: ignore[arg-type]
            no_create,
            clock,
            lambda: next(self._pids),
        )
        if load:
            for i in range(self.config.num_partitions):
                rt.load(i)
        return rt

    # ------------------------------------------------------------------ state and time
    @property
    def core(self) -> TransactionCoordinator:
        return self.rt.core

    @property
    def clock(self) -> ManualClock:
        clock = self.rt.clock
        assert isinstance(clock, ManualClock)
        return clock

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    @now.setter
    def now(self, now_ms: int) -> None:
        self.clock.set(now_ms)

    @property
    def fail_writes(self) -> E.KafkaError | None:
        return self.writer.fail_topics.get(TRANSACTION_STATE_TOPIC)

    @fail_writes.setter
    def fail_writes(self, err: E.KafkaError | None) -> None:
        if err is None:
            self.writer.fail_topics.pop(TRANSACTION_STATE_TOPIC, None)
        else:
            self.writer.fail_topics[TRANSACTION_STATE_TOPIC] = err

    @property
    def fail_markers(self) -> dict[tuple[str, int], E.KafkaError]:
        return self.writer.fail_partitions

    @fail_markers.setter
    def fail_markers(self, errors: dict[tuple[str, int], E.KafkaError]) -> None:
        self.writer.fail_partitions = dict(errors)

    @property
    def hold_markers(self) -> bool:
        return self.writer.hold_all_but is not None

    @hold_markers.setter
    def hold_markers(self, hold: bool) -> None:
        if hold:
            self.writer.hold_all_but = {TRANSACTION_STATE_TOPIC}
        else:
            self.writer.release()

    @property
    def log(self) -> list[TxnLogRecord]:
        """The committed ``__transaction_state`` records, in the order they were appended."""
        out: list[TxnLogRecord] = []
        for (topic, _partition), data in self.writer.committed():
            if topic == TRANSACTION_STATE_TOPIC:
                for _nxt, records in iter_log_records(data):
                    out.extend(records)
        return out

    @property
    def markers(self) -> list[tuple[str, int, int, int, bool]]:
        """The committed markers, in the order they were appended."""
        out = []
        for (topic, partition), data in self.writer.committed():
            for pos, h in iter_batches(data):
                if h.is_control:
                    (rec,) = decode_batch_records(memoryview(data)[pos : pos + h.size])
                    commit, _coordinator_epoch = parse_control_record(rec.key, rec.value)
                    out.append((topic, partition, h.producer_id, h.producer_epoch, commit))
        return out

    # ------------------------------------------------------------------ requests
    def call(self, method: str, **kwargs: Any) -> Any:
        """Run a request; it must be answered at once."""
        handle = self.send(method, **kwargs)
        assert handle in self.replies, f"no reply to {method}"
        return self.replies[handle]

    def send(self, method: str, **kwargs: Any) -> int:
        """Run a request that may be answered later: its handle, a key of ``self.replies`` once answered."""
        handle = next(self._tokens)

        def done(result: Any, err: E.KafkaError | None) -> None:
            assert handle not in self.replies, f"request {handle} answered twice"
            self.replies[handle] = result if err is None else err

        rt = self.rt
        rt.request(
            kwargs["transactional_id"],
            lambda token, now: getattr(rt.core, method)(token, now_ms=now, **kwargs),
            done,
        )
        return handle

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    def rebuild(self, down_ms: int = 0) -> None:
        """Replace the runtime by one loaded from the committed records (a broker restart after
        ``down_ms``): what was not committed is lost, holds end."""
        self.rt.stop()
        self.writer.crash()
        self.rt = self.new_runtime(ManualClock(self.now + down_ms))

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

    def send_add(self, pid: int, epoch: int, *tps: tuple[str, int], tid: str = TID) -> int:
        """AddPartitionsToTxn that may wait (a state change in flight): its handle."""
        return self.send(
            "add_partitions", transactional_id=tid, producer_id=pid, producer_epoch=epoch, partitions=list(tps)
        )

    def end(self, pid: int, epoch: int, commit: bool, tid: str = TID) -> int:
        """EndTxn v0-v4 (transactions v1): its error code."""
        return int(self.end_result(pid, epoch, commit, tid=tid).error_code)

    def end_result(self, pid: int, epoch: int, commit: bool, tid: str = TID, tv: int = 0) -> Any:
        """EndTxn (``tv`` 2: v5 with transactions v2): its :class:`EndTxnResult`."""
        return self.call(
            "end_transaction",
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            commit=commit,
            transaction_version=tv,
        )

    def add_v2(self, pid: int, epoch: int, *tps: tuple[str, int], tid: str = TID) -> int:
        """A partition leader's implicit add (transactions v2): its error code."""
        return self.call(
            "add_partitions",
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            partitions=list(tps),
            transaction_version=2,
        )

    def state(self, tid: str = TID) -> Any:
        return self.core.transactions[tid].meta
