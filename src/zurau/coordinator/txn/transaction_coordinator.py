"""The transaction coordinator as a pure state machine (docs/architecture.md): no sockets, no clocks.

It mirrors Kafka's ``TransactionCoordinator`` / ``TransactionMetadata`` (transactions v1, and v2
when the cluster finalises ``transaction.version=2`` and the client sends EndTxn v5) and the group
coordinator's structure in this package. Every entry point takes the request's data and ``now_ms``
and returns :class:`TxnEffects`:

* ``replies``: ``(token, result)`` pairs, as in the group coordinator.
* ``writes``: one :class:`TxnWrite` per state change, a record for ``__transaction_state``. The
  shell appends it and calls :meth:`TransactionCoordinator.complete_write` once it is committed
  (below the high watermark) or the append failed; that applies the new state (on success) and
  runs the continuation, which yields more effects.
* ``markers``: :class:`MarkerRequest` s, COMMIT or ABORT markers to append to the partitions of
  a transaction that is being completed. The shell writes them and reports each partition's
  outcome (committed, or the error) to :meth:`complete_markers`; other inputs may come first.

Timers are virtual and kept per ``__transaction_state`` partition: :meth:`next_deadline` says
when :meth:`poll` must next be called for a partition.

Partitions: a transactional id and everything about it belongs to ``partition_for(id)``. The
shell loads a partition (:meth:`load` with its records, then :meth:`start_partition`) and
unloads it (:meth:`unload_partition`) independently of the others.

States and transitions (Kafka's)::

    Empty / CompleteCommit / CompleteAbort --AddPartitionsToTxn--> Ongoing --EndTxn--> PrepareCommit
                                                                           \\-------> PrepareAbort
    PrepareCommit --all markers written--> CompleteCommit;  PrepareAbort --> CompleteAbort
    Empty / Complete* --InitProducerId--> Empty (epoch + 1, or a new producer id once the epoch is
                                           exhausted)
    Ongoing --InitProducerId or transaction timeout--> PrepareAbort with epoch + 1 (the fence: the
              old producer's epoch is no longer valid), then CompleteAbort
    Empty / Complete* idle for transactional.id.expiration.ms --> Dead (a tombstone: forgotten)

``PrepareEpochFence`` is never stored: the fence is a PrepareAbort whose epoch is bumped.

Transactions v2 (KIP-890 part 2, :mod:`~zurau.coordinator.txn.transaction_version`): partitions
are added by partition leaders (``add_partitions(transaction_version=2)``); EndTxn v5
(:meth:`TransactionCoordinator._end_transaction_v2`) bumps the epoch in every Prepare record, so
the markers and the producer's next transaction use epoch + 1 (at an exhausted epoch the Prepare
record names ``next_producer_id`` and the Complete record switches to it with epoch 0); it also
allows an abort from Empty / Complete* (no markers). Aborts the coordinator starts itself run at
the cluster's finalized level (``transaction_version``) and bump the epoch once, as Kafka 4.x
(KAFKA-19367). ``client_transaction_version`` (stored) is 2 for transactions-v2 state changes, 0
otherwise, so transactions v1 records keep their version-0 bytes.

Invariants:

* Persistent state changes only by applying a committed record: :meth:`complete_write` once
  the record is below the high watermark, :meth:`replay` when loading a ``__transaction_state``
  partition. So the state after a reload equals the state before, except ``last_producer_epoch`` (not in Kafka's record
  format either; it only lets a retried InitProducerId get the epoch it already got).
  The one exception, as in Kafka: InitProducerId for an unknown id registers it in memory as
  Empty with a fresh producer id and epoch -1 before writing its first record.
* At most one state change per transactional id is in flight (``TxnEntry.pending``); requests
  meeting one get CONCURRENT_TRANSACTIONS, which clients retry. AddPartitionsToTxn and
  AddOffsetsToTxn (:meth:`TransactionCoordinator.add_partitions`) first wait up to
  ``concurrent_wait_ms`` (``TxnEntry.waiting``) and are run again, in arrival order (those of
  one producer id and epoch in one write), once the id has no state change in flight and no
  transaction completing: librdkafka retries
  AddOffsetsToTxn only after ``retry.backoff.ms`` (100 ms), so a transaction begun right after the
  previous one's EndTxn would otherwise pay that backoff whenever its markers take longer than
  the client needs to send it (a few ms). Every parked request is answered exactly once: when
  run again, with CONCURRENT_TRANSACTIONS at its deadline, or by the shell when the partition is
  unloaded.
* A PrepareCommit/PrepareAbort is always driven to CompleteCommit/CompleteAbort: markers are
  retried (every ``marker_retry_backoff_ms``) until each partition has one (a deleted partition
  needs none), after a reload too (:meth:`start_partition` resends the markers of every
  prepared transaction it loaded). Writing a marker twice is harmless: the second ends nothing.
* The client learns the outcome of EndTxn once the Prepare record is committed, as in Kafka; on
  a single node the markers and the Complete record follow in the same step.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from zurau.config.coordinator_views import TransactionCoordinatorConfig
from zurau.coordinator.partitioner import partition_for
from zurau.coordinator.timers import PartitionedTimers, TimerKey
from zurau.coordinator.txn.results import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    DescribedTransaction,
    EndTxnResult,
    InitProducerIdResult,
    ListedTransaction,
    ListTransactionsResult,
)
from zurau.coordinator.txn.transaction_log_records import (
    TxnLogRecord,
    TxnLogValue,
    TxnState,
)
from zurau.coordinator.txn.transaction_version import TV_2, supports_epoch_bump
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.coordinator.txn")

MAX_EPOCH = 2**15 - 1  # Short.MaxValue

PREPARE_STATES = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
COMPLETE_STATES = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
IDLE_STATES = (TxnState.EMPTY, *COMPLETE_STATES)


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps one epoch in reserve for a fence: at Short.MaxValue - 1 the id is rotated."""
    return epoch >= MAX_EPOCH - 1


# ---------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class TransactionConfig:
    """The state machine's settings: Kafka's transaction coordinator settings (names in the
    comments, built from the broker's typed view with :meth:`from_view`) and three of its own."""

    num_partitions: int = 50  # transaction.state.log.num.partitions
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    remove_expired_interval_ms: int = 3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms
    marker_retry_backoff_ms: int = 100  # how soon a failed marker or Complete write is retried
    # How long AddPartitionsToTxn / AddOffsetsToTxn meeting a state change in flight (e.g. the
    # previous transaction's markers) waits for it before CONCURRENT_TRANSACTIONS (0: never).
    # Long enough for markers on a loaded cluster: a client that aborts while its AddPartitions
    # was answered CONCURRENT_TRANSACTIONS sends EndTxn(abort) into the previous PrepareCommit /
    # CompleteCommit, which Kafka (and so Zurau) answers INVALID_TXN_STATE, fatal for librdkafka.
    concurrent_wait_ms: int = 5_000
    coordinator_epoch: int = 0  # written into markers (the __transaction_state leader epoch)

    @classmethod
    def from_view(cls, view: TransactionCoordinatorConfig, num_partitions: int | None = None) -> TransactionConfig:
        """From the broker's transaction coordinator settings; ``num_partitions`` (an existing
        ``__transaction_state``' partition count) wins over the configured one."""
        return cls(
            num_partitions=num_partitions or view.num_partitions,
            max_timeout_ms=view.max_timeout_ms,
            id_expiration_ms=view.id_expiration_ms,
            remove_expired_interval_ms=view.remove_expired_interval_ms,
        )


# ---------------------------------------------------------------------------------- state


@dataclass(frozen=True)
class TxnMetadata:
    """The state of one transactional id: the stored value plus ``last_producer_epoch``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartitionKey] = frozenset()
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    # Transactions v2: the producer id a Prepare* record hands over once the transaction is
    # complete (the epoch was exhausted), and the transaction version of the last state change.
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0
    last_producer_epoch: int = NO_PRODUCER_EPOCH  # in memory only (Kafka does not store it)

    def to_value(self) -> TxnLogValue:
        return TxnLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state,
            partitions=frozenset() if self.state == TxnState.EMPTY else self.partitions,
            last_update_ms=self.last_update_ms,
            start_ms=self.start_ms,
            previous_producer_id=self.previous_producer_id,
            next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_transaction_version,
        )

    @classmethod
    def from_value(cls, transactional_id: str, v: TxnLogValue) -> TxnMetadata:
        return cls(
            transactional_id=transactional_id,
            producer_id=v.producer_id,
            producer_epoch=v.producer_epoch,
            timeout_ms=v.timeout_ms,
            state=v.state,
            partitions=v.partitions,
            last_update_ms=v.last_update_ms,
            start_ms=v.start_ms,
            previous_producer_id=v.previous_producer_id,
            next_producer_id=v.next_producer_id,
            client_transaction_version=v.client_transaction_version,
        )


@dataclass
class TxnEntry:
    """A transactional id as the coordinator holds it (committed state plus in-flight work)."""

    meta: TxnMetadata
    pending: TxnState | None = None  # the state being written, if a write is in flight
    pending_markers: set[TopicPartitionKey] = field(default_factory=set)  # Prepare*: markers missing
    markers_in_flight: bool = False
    waiting: list[ParkedRequest] = field(default_factory=list)  # in arrival order


@dataclass
class ParkedRequest:
    """AddPartitionsToTxn / AddOffsetsToTxn that met a state change in flight and waits for it.

    It runs again once the id is settled (it may wait once more, keeping ``deadline_ms``); the
    requests waiting together with the same producer id and epoch run as one: one
    ``__transaction_state`` write for all their partitions, every one answered with its outcome.
    ``token`` gets CONCURRENT_TRANSACTIONS if it is still waiting at ``deadline_ms``.
    """

    token: Any
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartitionKey]
    deadline_ms: int
    transaction_version: int = 0  # TV_2: added implicitly by a partition leader (KIP-890 part 2)


# ---------------------------------------------------------------------------------- effects


@dataclass
class TxnWrite:
    """One record to append to ``__transaction_state`` partition ``partition``, then ``then``.

    ``transit`` is the state that becomes current once the record is committed (None: the id is
    forgotten; the record is a tombstone).
    """

    transactional_id: str
    partition: int
    record: TxnLogRecord
    transit: TxnMetadata | None
    then: Callable[[E.KafkaError | None, int, TxnEffects], None]


@dataclass(frozen=True)
class MarkerRequest:
    """Write a COMMIT (``commit``) or ABORT marker for the producer into each partition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartitionKey, ...]
    # The transaction's version (WriteTxnMarkers v2): with transactions v2 a partition accepts
    # the marker only if its epoch is above the producer's epoch there.
    transaction_version: int = 0


@dataclass
class TxnEffects:
    replies: list[tuple[Any, Any]] = field(default_factory=list)
    writes: list[TxnWrite] = field(default_factory=list)
    markers: list[MarkerRequest] = field(default_factory=list)

    def reply(self, token: Any, result: Any) -> None:
        if token is not None:
            self.replies.append((token, result))


# What a transaction coordinator timer runs when it expires: ``fire(now_ms, effects)``.
TxnTimer = Callable[[int, TxnEffects], None]


# ---------------------------------------------------------------------------------- coordinator


class TransactionCoordinator:
    """Transactional ids, their producer ids and epochs, and their transactions (see module doc)."""

    def __init__(self, config: TransactionConfig, next_producer_id: Callable[[], int]) -> None:
        self.config = config
        self._next_producer_id = next_producer_id
        # The cluster's finalized transaction.version: the version of the aborts the coordinator
        # starts itself (InitProducerId fencing an ongoing transaction, timeouts), as Kafka's.
        self.transaction_version: Callable[[], int] = lambda: 0
        self.transactions: dict[str, TxnEntry] = {}
        self.by_producer_id: dict[int, str] = {}  # current producer id -> transactional id
        self.timers: PartitionedTimers[TxnTimer] = PartitionedTimers(self._timer_partition)
        self._loading = False

    # ------------------------------------------------------------------ plumbing
    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition of an id (Kafka's mapping, as for groups)."""
        return partition_for(transactional_id, self.config.num_partitions)

    def _timer_partition(self, key: TimerKey) -> int:
        """Timer keys are ``(kind, transactional_id)`` or ``(kind, partition)``."""
        target = key[1]
        return target if isinstance(target, int) else self.partition_for(target)

    def next_deadline(self, partition: int) -> int | None:
        """When :meth:`poll` must next run for ``partition`` (None: no timer)."""
        return self.timers.next_deadline(partition)

    def unload_partition(self, partition: int) -> None:
        """Forget the transactional ids of ``partition`` and their timers."""
        for tid in [t for t in self.transactions if self.partition_for(t) == partition]:
            entry = self.transactions.pop(tid)
            if self.by_producer_id.get(entry.meta.producer_id) == tid:
                del self.by_producer_id[entry.meta.producer_id]
        self.timers.drop(partition)

    def _write(
        self,
        fx: TxnEffects,
        entry: TxnEntry,
        transit: TxnMetadata | None,
        then: Callable[[E.KafkaError | None, int, TxnEffects], None],
    ) -> None:
        tid = entry.meta.transactional_id
        entry.pending = transit.state if transit is not None else TxnState.DEAD
        record = TxnLogRecord(tid, transit.to_value() if transit is not None else None)
        fx.writes.append(TxnWrite(tid, self.partition_for(tid), record, transit, then))

    def complete_write(self, write: TxnWrite, error: E.KafkaError | None, now_ms: int) -> TxnEffects:
        """The shell reports a write's outcome: apply the new state if committed, continue."""
        entry = self.transactions.get(write.transactional_id)
        if entry is not None:
            entry.pending = None
        if error is None:
            self._apply(write.transactional_id, write.transit)
        fx = TxnEffects()
        write.then(error, now_ms, fx)
        if entry is not None and entry.waiting:
            self._wake(entry, now_ms, fx)
        return fx

    def _settled(self, entry: TxnEntry) -> bool:
        """Whether a request meeting ``entry`` now needs no wait: no state change in flight, no
        transaction completing, or the id was forgotten (the request then fails at once)."""
        current = self.transactions.get(entry.meta.transactional_id)
        return current is not entry or (entry.pending is None and entry.meta.state not in PREPARE_STATES)

    def _wake(self, entry: TxnEntry, now_ms: int, fx: TxnEffects) -> None:
        """Run the requests parked on ``entry`` again, in arrival order, once it is settled;
        consecutive ones of the same producer id and epoch together."""
        if not self._settled(entry):
            return
        tid = entry.meta.transactional_id
        parked, entry.waiting = entry.waiting, []
        self.timers.cancel(("concurrent", tid))
        group: list[ParkedRequest] = []
        for p in parked:
            if group and (p.producer_id, p.producer_epoch, p.transaction_version) != (
                group[0].producer_id,
                group[0].producer_epoch,
                group[0].transaction_version,
            ):
                self._add_partitions(fx, tid, group, now_ms)
                group = []
            group.append(p)
        if group:
            self._add_partitions(fx, tid, group, now_ms)

    def _park(self, entry: TxnEntry, requests: list[ParkedRequest], now_ms: int, fx: TxnEffects) -> None:
        """Park ``requests`` on ``entry`` until it is settled; one whose deadline passed gets
        CONCURRENT_TRANSACTIONS now."""
        for r in requests:
            if r.deadline_ms > now_ms:
                entry.waiting.append(r)
            else:
                fx.reply(r.token, E.ConcurrentTransactionsError.code)
        self._arm_parked_timer(entry.meta.transactional_id, entry)

    def _arm_parked_timer(self, tid: str, entry: TxnEntry) -> None:
        if not entry.waiting:
            self.timers.cancel(("concurrent", tid))
            return
        first = min(p.deadline_ms for p in entry.waiting)
        if self.timers.deadline(("concurrent", tid)) != first:
            self.timers.schedule(("concurrent", tid), first, lambda now, fx: self._expire_parked(tid, now, fx))

    def _expire_parked(self, tid: str, now_ms: int, fx: TxnEffects) -> None:
        """Answer the parked requests of ``tid`` whose deadline passed (CONCURRENT_TRANSACTIONS)."""
        entry = self.transactions.get(tid)
        if entry is None:
            return
        due = [p for p in entry.waiting if p.deadline_ms <= now_ms]
        entry.waiting = [p for p in entry.waiting if p.deadline_ms > now_ms]
        for p in due:
            fx.reply(p.token, E.ConcurrentTransactionsError.code)
        self._arm_parked_timer(tid, entry)

    # ------------------------------------------------------------------ replay (persistent state)
    def load(self, records: Iterable[TxnLogRecord]) -> None:
        """Replay committed ``__transaction_state`` records (the latest record per id wins).

        May be called several times for one partition (a chunk of its log at a time), in log order.
        """
        self._loading = True
        try:
            for rec in records:
                self.replay(rec)
        finally:
            self._loading = False

    def replay(self, rec: TxnLogRecord) -> None:
        meta = TxnMetadata.from_value(rec.transactional_id, rec.value) if rec.value is not None else None
        self._apply(rec.transactional_id, meta)

    def _apply(self, tid: str, meta: TxnMetadata | None) -> None:
        """Make ``meta`` the committed state of ``tid`` (None: forget it); keep indexes and timers."""
        entry = self.transactions.get(tid)
        if meta is None:
            if entry is not None:
                del self.transactions[tid]
                if self.by_producer_id.get(entry.meta.producer_id) == tid:
                    del self.by_producer_id[entry.meta.producer_id]
            for kind in ("timeout", "markers"):
                self.timers.cancel((kind, tid))
            return
        previous_state: TxnState | None = None
        if entry is None:
            entry = self.transactions[tid] = TxnEntry(meta)
        else:
            old = entry.meta
            previous_state = old.state
            if old.producer_id != meta.producer_id and self.by_producer_id.get(old.producer_id) == tid:
                del self.by_producer_id[old.producer_id]
            entry.meta = meta
        self.by_producer_id[meta.producer_id] = tid
        if meta.state == TxnState.ONGOING:
            deadline = meta.start_ms + meta.timeout_ms
            if self.timers.deadline(("timeout", tid)) != deadline:
                self._schedule_timeout(tid, deadline)
        else:
            self.timers.cancel(("timeout", tid))
        if meta.state in PREPARE_STATES:
            if previous_state != meta.state:
                entry.pending_markers = set(meta.partitions)
                entry.markers_in_flight = False
        else:
            entry.pending_markers = set()
            entry.markers_in_flight = False
            self.timers.cancel(("markers", tid))

    def start_partition(self, partition: int, now_ms: int) -> TxnEffects:
        """After loading ``partition``: resend the markers of its prepared transactions, arm its
        expiration check.

        Ongoing transactions keep their timeout timers (armed by replay): one that expired while
        the partition was not loaded is aborted by the next :meth:`poll`.
        """
        fx = TxnEffects()
        for tid in sorted(self.transactions):
            if self.partition_for(tid) != partition:
                continue
            entry = self.transactions[tid]
            if entry.meta.state in PREPARE_STATES:
                log.info(
                    "completing transaction of %s (%s) found at start-up", tid, entry.meta.state.kafka_name
                )
                self._send_markers(fx, entry, now_ms)
        self._schedule_expiration(partition, now_ms)
        return fx

    # ------------------------------------------------------------------ InitProducerId
    def init_producer_id(
        self,
        token: Any,
        *,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        now_ms: int,
    ) -> TxnEffects:
        """InitProducerId with a transactional id. Reply: :class:`InitProducerIdResult`.

        ``producer_id``/``producer_epoch`` (v3+, KIP-360) name the caller's current id and epoch:
        a producer recovering from an abortable error keeps its id and gets the next epoch, or
        the epoch it already got if this is a retry; anything else is fenced (PRODUCER_FENCED).
        """
        fx = TxnEffects()

        def fail(err: type[E.KafkaError]) -> TxnEffects:
            fx.reply(token, InitProducerIdResult(err.code))
            return fx

        if not transactional_id:
            return fail(E.InvalidRequestError)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return fail(E.InvalidRequestError)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return fail(E.InvalidTransactionTimeoutError)
        expected = (producer_id, producer_epoch) if producer_id != NO_PRODUCER_ID else None
        entry = self.transactions.get(transactional_id)
        if entry is None:
            meta = TxnMetadata(
                transactional_id,
                self._next_producer_id(),
                NO_PRODUCER_EPOCH,
                timeout_ms,
                TxnState.EMPTY,
                last_update_ms=now_ms,
            )
            entry = self.transactions[transactional_id] = TxnEntry(meta)
        meta = entry.meta
        if entry.pending is not None:
            return fail(E.ConcurrentTransactionsError)
        if expected is not None and not (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == meta.producer_id
            or (expected[0] == meta.previous_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return fail(E.ProducerFencedError)
        if meta.state in PREPARE_STATES:
            return fail(E.ConcurrentTransactionsError)
        if meta.state == TxnState.ONGOING:
            # Fence the current producer: abort its transaction with a bumped epoch, and let the
            # caller retry (CONCURRENT_TRANSACTIONS), which bumps the epoch once more.
            log.info(
                "%s: fencing producer id %d epoch %d and aborting its ongoing transaction",
                transactional_id,
                meta.producer_id,
                meta.producer_epoch,
            )

            def fenced(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
                code = E.ConcurrentTransactionsError.code if err is None else err.code
                fx2.reply(token, InitProducerIdResult(code))

            self._end(
                fx, entry, commit=False, fence=True, now_ms=now_ms, then=fenced, tv=self.transaction_version()
            )
            return fx
        if meta.state not in IDLE_STATES:
            raise AssertionError(f"transactional id {transactional_id} is in state {meta.state.kafka_name}")
        transit: TxnMetadata
        if is_epoch_exhausted(meta.producer_epoch) and (
            expected is None or expected[1] == meta.producer_epoch
        ):
            transit = replace(
                meta,
                producer_id=self._next_producer_id(),
                previous_producer_id=meta.producer_id,
                producer_epoch=0,
                last_producer_epoch=meta.producer_epoch if expected is not None else NO_PRODUCER_EPOCH,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                start_ms=-1,
                last_update_ms=now_ms,
            )
        else:
            bumped = meta.producer_epoch + 1
            if expected is None:
                epochs = (bumped, NO_PRODUCER_EPOCH)
            elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == meta.producer_epoch:
                epochs = (bumped, meta.producer_epoch)
            elif expected[1] == meta.last_producer_epoch:
                epochs = (meta.producer_epoch, meta.last_producer_epoch)  # a retry: same answer
            else:
                log.info(
                    "%s: epoch %d is neither the current epoch %d nor the previous one %d: fenced",
                    transactional_id,
                    expected[1],
                    meta.producer_epoch,
                    meta.last_producer_epoch,
                )
                return fail(E.ProducerFencedError)
            assert epochs[0] <= MAX_EPOCH  # an exhausted epoch is never bumped: it is rotated above
            transit = replace(
                meta,
                producer_epoch=epochs[0],
                last_producer_epoch=epochs[1],
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                start_ms=-1,
                last_update_ms=now_ms,
            )

        def stored(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            if err is not None:
                fx2.reply(token, InitProducerIdResult(write_error(err, for_offsets=False).code))
            else:
                log.info(
                    "initialized transactional id %s with producer id %d epoch %d",
                    transactional_id,
                    transit.producer_id,
                    transit.producer_epoch,
                )
                fx2.reply(token, InitProducerIdResult(0, transit.producer_id, transit.producer_epoch))

        self._write(fx, entry, transit, stored)
        return fx

    # ------------------------------------------------------------------ AddPartitionsToTxn
    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TxnEntry:
        """The id's entry if ``producer_id``/``producer_epoch`` are its current ones, else raise."""
        if not transactional_id:
            raise E.InvalidRequestError("the transactional id must not be empty")
        entry = self.transactions.get(transactional_id)
        if entry is None or entry.meta.producer_id != producer_id:
            raise E.InvalidProducerIdMappingError(
                f"producer id {producer_id} is not the current one of transactional id {transactional_id}"
            )
        if entry.meta.producer_epoch != producer_epoch:
            raise E.ProducerFencedError(
                f"producer epoch {producer_epoch} is not the current epoch {entry.meta.producer_epoch} "
                f"of transactional id {transactional_id}"
            )
        return entry

    def add_partitions(
        self,
        token: Any,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartitionKey],
        now_ms: int,
        transaction_version: int = 0,
    ) -> TxnEffects:
        """AddPartitionsToTxn (and AddOffsetsToTxn, with its ``__consumer_offsets`` partition).

        ``transaction_version`` 2: a partition leader adds the partition implicitly (a producer's
        first Produce v12 / TxnOffsetCommit v5 write there, Kafka's ``addPartition``); the
        transaction is then a transactions-v2 one. Reply: an error code for every partition
        together (0 when added).
        """
        fx = TxnEffects()
        request = ParkedRequest(
            token,
            producer_id,
            producer_epoch,
            frozenset(partitions),
            now_ms + self.config.concurrent_wait_ms,
            TV_2 if supports_epoch_bump(transaction_version) else 0,
        )
        self._add_partitions(fx, transactional_id, [request], now_ms)
        return fx

    def _add_partitions(
        self, fx: TxnEffects, transactional_id: str, requests: list[ParkedRequest], now_ms: int
    ) -> None:
        """:meth:`add_partitions` for ``requests`` (one producer id, epoch and version) together."""
        producer_id, producer_epoch = requests[0].producer_id, requests[0].producer_epoch
        tv = requests[0].transaction_version
        parts = frozenset().union(*(r.partitions for r in requests))
        current = self.transactions.get(transactional_id)
        if current is not None and self._handed_over(current, producer_id, producer_epoch):
            # Transactions v2: the producer already starts its next transaction with the
            # producer id the completing one hands over (epoch exhaustion): wait for it.
            if self.config.concurrent_wait_ms > 0:
                self._park(current, requests, now_ms, fx)
            else:
                for r in requests:
                    fx.reply(r.token, E.ConcurrentTransactionsError.code)
            return
        try:
            entry = self._check_producer(transactional_id, producer_id, producer_epoch)
            meta = entry.meta
            if entry.pending is not None or meta.state in PREPARE_STATES:
                if self.config.concurrent_wait_ms > 0:
                    self._park(entry, requests, now_ms, fx)
                    return
                raise E.ConcurrentTransactionsError(f"{transactional_id} is completing a transaction")
        except E.KafkaError as e:
            for r in requests:
                fx.reply(r.token, e.code)
            return
        if meta.state == TxnState.ONGOING and parts <= meta.partitions:
            for r in requests:
                fx.reply(r.token, 0)
            return
        transit = replace(
            meta,
            state=TxnState.ONGOING,
            partitions=meta.partitions | parts,
            start_ms=now_ms if meta.state in IDLE_STATES else meta.start_ms,
            last_update_ms=now_ms,
            client_transaction_version=tv,
        )

        def stored(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            code = 0 if err is None else write_error(err, for_offsets=False).code
            for r in requests:
                fx2.reply(r.token, code)

        self._write(fx, entry, transit, stored)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartitionKey],
    ) -> tuple[int, dict[TopicPartitionKey, int]]:
        """AddPartitionsToTxn v4+ ``verify_only``: ``(error, {partition: error})``, no state change.

        A partition of the ongoing transaction gets 0, any other INVALID_TXN_STATE.
        """
        parts = list(partitions)
        try:
            entry = self._check_producer(transactional_id, producer_id, producer_epoch)
            if entry.meta.state in PREPARE_STATES:
                raise E.ConcurrentTransactionsError(f"{transactional_id} is completing a transaction")
        except E.KafkaError as e:
            return e.code, dict.fromkeys(parts, e.code)
        meta = entry.meta
        ongoing = meta.state == TxnState.ONGOING
        return 0, {
            tp: 0 if ongoing and tp in meta.partitions else E.InvalidTxnStateError.code for tp in parts
        }

    def check_produce(self, producer_id: int, producer_epoch: int, tp: TopicPartitionKey) -> E.KafkaError | None:
        """KIP-890 verification of the first transactional write of a producer to a partition.

        None if ``tp`` is in the ongoing transaction of the producer id at its current epoch; else
        the error the write gets: INVALID_PRODUCER_ID_MAPPING (no transactional id uses the
        producer id), INVALID_PRODUCER_EPOCH (another epoch: a fenced zombie),
        NOT_ENOUGH_REPLICAS (retriable: the transaction is being completed), INVALID_TXN_STATE
        (no ongoing transaction holds the partition).
        """
        tid = self.by_producer_id.get(producer_id)
        entry = self.transactions.get(tid) if tid is not None else None
        if entry is None:
            return E.InvalidProducerIdMappingError(f"no transactional id uses producer id {producer_id}")
        meta = entry.meta
        if meta.producer_epoch != producer_epoch:
            return E.InvalidProducerEpochError(
                f"producer {producer_id} epoch {producer_epoch} is not the current epoch {meta.producer_epoch}"
            )
        # An AddPartitionsToTxn write in flight within an ongoing transaction (Ongoing -> Ongoing)
        # changes nothing a partition already in it depends on (Kafka checks the committed state
        # only); librdkafka sends AddOffsetsToTxn beside AddPartitionsToTxn, and refusing here
        # cost its TxnOffsetCommit a fixed 500 ms retry.
        adding = entry.pending == TxnState.ONGOING and meta.state == TxnState.ONGOING
        if (entry.pending is not None and not adding) or meta.state in PREPARE_STATES:
            return E.NotEnoughReplicasError(f"transaction of {tid} is being completed; retry")
        if meta.state != TxnState.ONGOING or tp not in meta.partitions:
            return E.InvalidTxnStateError(
                f"{tp[0]}-{tp[1]} is not part of an ongoing transaction of producer {producer_id}"
            )
        return None

    # ------------------------------------------------------------------ EndTxn
    @staticmethod
    def _handed_over(entry: TxnEntry, producer_id: int, producer_epoch: int) -> bool:
        """Whether ``producer_id``/``producer_epoch`` is the new producer id (epoch 0) that the
        transaction being completed hands over (transactions v2, epoch exhaustion)."""
        meta = entry.meta
        completing = entry.pending is not None or meta.state in PREPARE_STATES
        return (
            completing
            and meta.next_producer_id != NO_PRODUCER_ID
            and (producer_id, producer_epoch) == (meta.next_producer_id, 0)
        )

    def end_transaction(
        self,
        token: Any,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        transaction_version: int = 0,
    ) -> TxnEffects:
        """EndTxn from a client. Reply: :class:`EndTxnResult` (0 once the Prepare record is stored).

        Any process may send it: only the transactional id, producer id and epoch are checked.
        Transactions v1 (``transaction_version`` < 2, EndTxn v0-v4): ending a transaction that
        already completed the same way is answered with 0 (a retry). Transactions v2: see
        :meth:`_end_transaction_v2`.
        """
        if supports_epoch_bump(transaction_version):
            return self._end_transaction_v2(token, transactional_id, producer_id, producer_epoch, commit, now_ms)
        fx = TxnEffects()
        try:
            entry = self._check_producer(transactional_id, producer_id, producer_epoch)
            if entry.pending is not None:
                raise E.ConcurrentTransactionsError(f"{transactional_id} has a state change in flight")
            state = entry.meta.state
            wanted_prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            wanted_complete = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            if state == TxnState.ONGOING:
                pass
            elif state == wanted_complete:
                fx.reply(token, EndTxnResult(0, entry.meta.producer_id, entry.meta.producer_epoch))
                return fx
            elif state == wanted_prepare:
                raise E.ConcurrentTransactionsError(f"{transactional_id} is completing its transaction")
            else:
                raise E.InvalidTxnStateError(
                    f"cannot {'commit' if commit else 'abort'} transactional id {transactional_id} "
                    f"in state {state.kafka_name}"
                )
        except E.KafkaError as e:
            fx.reply(token, EndTxnResult(e.code))
            return fx

        def prepared(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            if err is not None:
                fx2.reply(token, EndTxnResult(write_error(err, for_offsets=False).code))
            else:
                meta = self.transactions[transactional_id].meta
                fx2.reply(token, EndTxnResult(0, meta.producer_id, meta.producer_epoch))

        self._end(fx, entry, commit=commit, fence=False, now_ms=now_ms, then=prepared)
        return fx

    def _end_transaction_v2(
        self, token: Any, tid: str, producer_id: int, producer_epoch: int, commit: bool, now_ms: int
    ) -> TxnEffects:
        """EndTxn v5 with transactions v2 (Kafka 4.x's ``endTransaction``).

        Every commit or abort bumps the epoch: the Prepare record and the markers carry epoch + 1
        and the reply hands the producer the id and epoch of its next transaction (once the
        epoch is exhausted, a new producer id with epoch 0: the Prepare record names it in
        ``next_producer_id`` and the Complete record switches to it). So a request with the
        epoch before the bump is either a retry of the same EndTxn (answered 0 with the current
        id and epoch once complete, CONCURRENT_TRANSACTIONS while completing) or a zombie
        (PRODUCER_FENCED: an older epoch, or the previous one while a new transaction is Ongoing
        or Empty). An abort with no partition added (Empty, Complete*) is allowed: the epoch is
        bumped with no marker to write. A state change in flight answers CONCURRENT_TRANSACTIONS
        before the epoch is looked at, so a producer never fences itself (KAFKA-18464).
        """
        fx = TxnEffects()

        def fail(err: type[E.KafkaError]) -> TxnEffects:
            fx.reply(token, EndTxnResult(err.code))
            return fx

        if not tid:
            return fail(E.InvalidRequestError)
        entry = self.transactions.get(tid)
        if entry is None:
            return fail(E.InvalidProducerIdMappingError)
        meta = entry.meta
        if self._handed_over(entry, producer_id, producer_epoch):
            return fail(E.ConcurrentTransactionsError)
        retry_on_overflow = (
            meta.previous_producer_id == producer_id
            and producer_id != meta.producer_id
            and producer_epoch == MAX_EPOCH - 1
            and meta.producer_epoch == 0
        )
        retry_on_bump = meta.producer_id == producer_id and meta.producer_epoch == producer_epoch + 1
        if meta.producer_id != producer_id and not retry_on_overflow:
            return fail(E.InvalidProducerIdMappingError)
        if entry.pending is not None:
            return fail(E.ConcurrentTransactionsError)
        state = meta.state
        current = producer_epoch == meta.producer_epoch and meta.producer_id == producer_id
        if state in PREPARE_STATES:
            valid = retry_on_bump
        elif state in COMPLETE_STATES:
            valid = retry_on_bump or retry_on_overflow or current
        else:  # Ongoing, Empty
            valid = current
        if not valid:
            log.info(
                "%s: EndTxn with producer id %d epoch %d fenced (current id %d epoch %d, %s)",
                tid,
                producer_id,
                producer_epoch,
                meta.producer_id,
                meta.producer_epoch,
                state.kafka_name,
            )
            return fail(E.ProducerFencedError)
        retry = retry_on_bump or retry_on_overflow
        wanted_complete = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        wanted_prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if state == TxnState.ONGOING:
            pass
        elif state in COMPLETE_STATES and retry:
            if state != wanted_complete:
                return fail(E.InvalidTxnStateError)
            fx.reply(token, EndTxnResult(0, meta.producer_id, meta.producer_epoch))
            return fx
        elif state in PREPARE_STATES:
            return fail(E.ConcurrentTransactionsError if state == wanted_prepare else E.InvalidTxnStateError)
        elif commit:  # Empty, or Complete* with the current epoch: nothing to commit
            return fail(E.InvalidTxnStateError)
        # else: an abort with no partition added (Empty, Complete*): bump the epoch, no markers

        def prepared(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            if err is not None:
                fx2.reply(token, EndTxnResult(write_error(err, for_offsets=False).code))
                return
            done = self.transactions[tid].meta
            if done.next_producer_id != NO_PRODUCER_ID:
                fx2.reply(token, EndTxnResult(0, done.next_producer_id, 0))
            else:
                fx2.reply(token, EndTxnResult(0, done.producer_id, done.producer_epoch))

        self._end(fx, entry, commit=commit, fence=False, now_ms=now_ms, then=prepared, tv=TV_2)
        return fx

    def _end(
        self,
        fx: TxnEffects,
        entry: TxnEntry,
        *,
        commit: bool,
        fence: bool,
        now_ms: int,
        then: Callable[[E.KafkaError | None, int, TxnEffects], None],
        tv: int = 0,
    ) -> None:
        """Ongoing (or, transactions v2 abort, Empty / Complete*) -> PrepareCommit/PrepareAbort,
        then markers and Complete*. ``then`` runs once the Prepare record is stored (or failed).

        The epoch is bumped once: by a fence (an abort started by the coordinator: InitProducerId
        or a timeout; transactions v2 adds no second bump, KAFKA-19367) or by a transactions-v2
        EndTxn, which also names the next producer id when the epoch is exhausted.
        """
        meta = entry.meta
        v2 = supports_epoch_bump(tv)
        bump = fence or (v2 and meta.producer_epoch < MAX_EPOCH)
        next_producer_id = NO_PRODUCER_ID
        if v2 and not fence and is_epoch_exhausted(meta.producer_epoch):
            next_producer_id = self._next_producer_id()
        if fence:
            last_epoch = NO_PRODUCER_EPOCH
        elif v2:
            last_epoch = meta.producer_epoch
        else:
            last_epoch = meta.last_producer_epoch
        transit = replace(
            meta,
            state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            producer_epoch=meta.producer_epoch + 1 if bump else meta.producer_epoch,
            last_producer_epoch=last_epoch,
            next_producer_id=next_producer_id,
            client_transaction_version=TV_2 if v2 else 0,
            start_ms=meta.start_ms if meta.state == TxnState.ONGOING else now_ms,
            last_update_ms=now_ms,
        )
        tid = meta.transactional_id

        def prepared(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            then(err, now, fx2)
            if err is None:
                current = self.transactions.get(tid)
                if current is not None:
                    self._send_markers(fx2, current, now)

        self._write(fx, entry, transit, prepared)

    def _send_markers(self, fx: TxnEffects, entry: TxnEntry, now_ms: int) -> None:
        meta = entry.meta
        if meta.state not in PREPARE_STATES or entry.markers_in_flight or entry.pending is not None:
            return
        if not entry.pending_markers:
            self._complete(fx, entry, now_ms)
            return
        entry.markers_in_flight = True
        fx.markers.append(
            MarkerRequest(
                meta.transactional_id,
                meta.producer_id,
                meta.producer_epoch,
                meta.state == TxnState.PREPARE_COMMIT,
                self.config.coordinator_epoch,
                tuple(sorted(entry.pending_markers)),
                meta.client_transaction_version,
            )
        )

    def complete_markers(
        self, request: MarkerRequest, results: dict[TopicPartitionKey, E.KafkaError | None], now_ms: int
    ) -> TxnEffects:
        """The shell reports each partition's marker outcome; when all are written, complete.

        A partition that no longer exists needs no marker; INVALID_PRODUCER_EPOCH means a newer
        epoch already wrote there (nothing of this transaction can follow): done too. Any other
        error is retried after ``marker_retry_backoff_ms``.
        """
        fx = TxnEffects()
        entry = self.transactions.get(request.transactional_id)
        if entry is None:
            return fx
        meta = entry.meta
        if (
            meta.state not in PREPARE_STATES
            or meta.producer_id != request.producer_id
            or meta.producer_epoch != request.producer_epoch
            or (meta.state == TxnState.PREPARE_COMMIT) != request.commit
        ):
            return fx
        entry.markers_in_flight = False
        failed = False
        for tp, err in results.items():
            if err is None or isinstance(err, E.UnknownTopicOrPartitionError | E.InvalidProducerEpochError):
                entry.pending_markers.discard(tp)
            else:
                failed = True
                log.warning("marker for %s of %s failed (%s); retrying", tp, request.transactional_id, err)
        if entry.pending_markers:
            if failed:
                self._schedule_marker_retry(request.transactional_id, now_ms + self.config.marker_retry_backoff_ms)
            else:
                self._send_markers(fx, entry, now_ms)
        else:
            self._complete(fx, entry, now_ms)
        return fx

    def _complete(self, fx: TxnEffects, entry: TxnEntry, now_ms: int) -> None:
        meta = entry.meta
        transit = replace(
            meta,
            state=TxnState.COMPLETE_COMMIT
            if meta.state == TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT,
            partitions=frozenset(),
            last_update_ms=now_ms,
            next_producer_id=NO_PRODUCER_ID,
        )
        if meta.next_producer_id != NO_PRODUCER_ID:
            # Transactions v2 at an exhausted epoch: the transaction hands its producer over to
            # the new id (the markers went out with the old one).
            transit = replace(
                transit, producer_id=meta.next_producer_id, producer_epoch=0, previous_producer_id=meta.producer_id
            )
        tid = meta.transactional_id

        def stored(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            if err is not None:
                log.warning("cannot complete the transaction of %s (%s); retrying", tid, err)
                self._schedule_marker_retry(tid, now + self.config.marker_retry_backoff_ms)
            else:
                log.debug("completed transaction of %s: %s", tid, transit.state.kafka_name)

        self._write(fx, entry, transit, stored)

    # ------------------------------------------------------------------ timers
    def poll(self, now_ms: int, partition: int) -> TxnEffects:
        """Fire every timer of ``partition`` due at ``now_ms``: transaction timeouts, marker
        retries, expiration."""
        fx = TxnEffects()
        for fire in self.timers.expired(now_ms, partition):
            fire(now_ms, fx)
        return fx

    def _schedule_timeout(self, tid: str, deadline_ms: int) -> None:
        self.timers.schedule(("timeout", tid), deadline_ms, lambda now, fx: self._on_timeout(tid, now, fx))

    def _schedule_marker_retry(self, tid: str, deadline_ms: int) -> None:
        def fire(now: int, fx: TxnEffects) -> None:
            entry = self.transactions.get(tid)
            if entry is not None:
                self._send_markers(fx, entry, now)

        self.timers.schedule(("markers", tid), deadline_ms, fire)

    def _schedule_expiration(self, partition: int, now_ms: int) -> None:
        """The periodic expiry of idle ids of ``partition`` (``transactional.id.expiration.ms``)."""

        def fire(now: int, fx: TxnEffects) -> None:
            self._expire_ids(now, fx, partition)
            self._schedule_expiration(partition, now)

        self.timers.schedule(("expire", partition), now_ms + self.config.remove_expired_interval_ms, fire)

    def _on_timeout(self, tid: str, now_ms: int, fx: TxnEffects) -> None:
        entry = self.transactions.get(tid)
        if entry is None or entry.meta.state != TxnState.ONGOING:
            return
        meta = entry.meta
        deadline = meta.start_ms + meta.timeout_ms
        if deadline > now_ms:
            self._schedule_timeout(tid, deadline)
            return
        if entry.pending is not None:
            self._schedule_timeout(tid, now_ms + self.config.marker_retry_backoff_ms)
            return
        log.info(
            "aborting the transaction of %s (producer id %d epoch %d): it ran longer than %d ms",
            tid,
            meta.producer_id,
            meta.producer_epoch,
            meta.timeout_ms,
        )

        def aborted(err: E.KafkaError | None, now: int, fx2: TxnEffects) -> None:
            if err is not None:
                log.warning("cannot abort the timed-out transaction of %s: %s", tid, err)
                self._schedule_timeout(tid, now + self.config.marker_retry_backoff_ms)

        self._end(fx, entry, commit=False, fence=True, now_ms=now_ms, then=aborted, tv=self.transaction_version())

    def _expire_ids(self, now_ms: int, fx: TxnEffects, partition: int) -> None:
        """Forget the ids of ``partition`` idle (Empty or completed) for ``transactional.id.expiration.ms``."""
        for tid in sorted(self.transactions):
            if self.partition_for(tid) != partition:
                continue
            entry = self.transactions[tid]
            meta = entry.meta
            if (
                entry.pending is None
                and meta.state in IDLE_STATES
                and meta.last_update_ms + self.config.id_expiration_ms <= now_ms
            ):
                log.info("transactional id %s expired", tid)
                self._write(fx, entry, None, lambda err, now, fx2: None)

    # ------------------------------------------------------------------ admin
    def describe(self, transactional_ids: Iterable[str]) -> list[DescribedTransaction]:
        out = []
        for tid in transactional_ids:
            entry = self.transactions.get(tid) if tid else None
            if not tid:
                out.append(DescribedTransaction(tid, E.InvalidRequestError.code))
            elif entry is None or entry.meta.state == TxnState.DEAD:
                out.append(DescribedTransaction(tid, E.TransactionalIdNotFoundError.code))
            else:
                m = entry.meta
                out.append(
                    DescribedTransaction(
                        tid,
                        0,
                        m.state.kafka_name,
                        m.timeout_ms,
                        m.start_ms,
                        m.producer_id,
                        m.producer_epoch,
                        tuple(sorted(m.partitions)),
                    )
                )
        return out

    def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int = -1,
        pattern: str | None = None,
        now_ms: int,
    ) -> ListTransactionsResult:
        """ListTransactions: every known id matching all the filters (an empty filter matches all).

        ``duration_ms`` >= 0 keeps transactions that started more than that long ago; ``pattern``
        must match the whole id (INVALID_REGULAR_EXPRESSION if it does not compile).
        """
        states = list(states)
        wanted: set[TxnState] = set()
        unknown: list[str] = []
        for name in states:
            s = TxnState.from_name(name)
            if s is None:
                unknown.append(name)
            else:
                wanted.add(s)
        if states and not wanted:
            return ListTransactionsResult(0, tuple(unknown))
        pids = set(producer_ids)
        regex = None
        if pattern:
            try:
                regex = re.compile(pattern)
            except re.error:
                return ListTransactionsResult(E.InvalidRegularExpressionError.code)
        out = []
        for tid in sorted(self.transactions):
            m = self.transactions[tid].meta
            if m.state == TxnState.DEAD:
                continue
            if pids and m.producer_id not in pids:
                continue
            if wanted and m.state not in wanted:
                continue
            if duration_ms >= 0 and now_ms - m.start_ms <= duration_ms:
                continue
            if regex is not None and regex.fullmatch(tid) is None:
                continue
            out.append(ListedTransaction(tid, m.producer_id, m.state.kafka_name))
        return ListTransactionsResult(0, tuple(unknown), tuple(out))


__all__ = [
    "DescribedTransaction",
    "InitProducerIdResult",
    "ListTransactionsResult",
    "ListedTransaction",
    "MarkerRequest",
    "ParkedRequest",
    "TransactionConfig",
    "TransactionCoordinator",
    "TxnEffects",
    "TxnEntry",
    "TxnMetadata",
    "TxnState",
    "TxnWrite",
]
