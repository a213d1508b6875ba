"""A Jepsen-style history of a produce/consume workload on one topic, and a checker for it.

The workload records into a :class:`History` (thread-safe: delivery callbacks, consumer threads and
the nemesis may all record at once):

* ``op = history.produce_invoked(producer, partition, value, txn=None)`` before a produce, then
  ``history.produce_acked(op, offset)`` or ``history.produce_failed(op, error, definite=False)``
  from its delivery report. Values must be unique across the history (the checker tells records
  apart by value). A failure is *indefinite* unless ``definite``: the record may or may not be in
  the log (a timeout after the broker appended it), but at most once.
* ``history.txn_ended(txn, outcome)`` with ``"committed"``, ``"aborted"`` or ``"unknown"`` for each
  transaction named in ``produce_invoked``.
* ``history.read(partition, offset, value, isolation)`` for each record a consumer saw during the
  run (``isolation`` is ``"read_uncommitted"`` or ``"read_committed"``).
* ``history.final_read(partition, isolation, records, end_offset=None)`` once the cluster is healed
  and quiet: every data record of the partition from the start, in the order read (``end_offset``:
  the high watermark / last stable offset the read went up to, when known).
* ``history.replica_log(partition, replica, records)``: optionally, one replica's own log (read from
  its files once the cluster is stopped), for replicas that were in the ISR at the final read.
* ``history.offset_committed(group, partition, offset)`` when an OffsetCommit was acknowledged and
  ``history.offset_fetched(group, partition, offset, invoked_at=t)`` for an OffsetFetch answer,
  ``t = history.now()`` taken before the fetch was sent.

:func:`check` returns every violation of these properties, each a message naming the partition,
offsets and values involved (Kafka's guarantees for an idempotent ``acks=all`` producer with
``min.insync.replicas`` and unclean leader election off):

``lost``
    every acknowledged record is in the final log, at its acknowledged offset;
``duplicate``
    no value is in the final log twice (idempotence), and no record of a definitely failed
    produce is there at all;
``offset-reused``
    one offset never holds two different values, over every acknowledgement and read;
``not-dense``
    final offsets increase, and gaps are no more than the transaction markers that could fill them
    (none for a partition that no transaction wrote to);
``unstable-read``
    every record read during the run is in the final log of the same isolation level, at the same
    offset (reads never see data that later disappears: the high watermark is safe);
``aborted-read`` / ``committed-missing`` / ``txn-atomicity``
    read_committed never shows an aborted transaction's record, shows every non-transactional
    record and every committed transaction's record, and shows all or none of a transaction of
    unknown outcome;
``replica-diverged``
    every replica log given holds exactly the final log's records below the final end offset
    (followers truncated what the leader did not have, and caught up);
``phantom``
    the log holds no value that was never produced;
``reordered``
    one producer's acknowledged records to one partition have increasing offsets in send order;
``group-offset-regressed``
    a committed group offset, once acknowledged or seen, is never seen to go back (the workload
    must commit non-decreasing offsets per group and partition; a fetch concurrent with a commit
    may answer either value).

The checker is pure (no I/O) so unit tests can feed it synthetic histories. Like the rest of
:mod:`zurau.testing`, only the standard library is imported.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Isolation = Literal["read_uncommitted", "read_committed"]
TxnOutcome = Literal["committed", "aborted", "unknown"]
READ_UNCOMMITTED: Isolation = "read_uncommitted"
READ_COMMITTED: Isolation = "read_committed"
ISOLATIONS: tuple[Isolation, ...] = (READ_UNCOMMITTED, READ_COMMITTED)

#: Violations of one kind listed in full in a report; the rest are counted.
REPORT_PER_KIND = 10


@dataclass
class ProduceOp:
    """One produce: ``offset`` once acknowledged, ``error`` once failed, neither while in flight."""

    op_id: int
    producer: str
    partition: int
    value: bytes
    txn: str | None
    invoked_at: int
    completed_at: int | None = None
    offset: int | None = None
    error: str | None = None
    definite: bool = False

    @property
    def acked(self) -> bool:
        return self.offset is not None


@dataclass(frozen=True)
class Read:
    """A record a consumer saw during the run."""

    partition: int
    offset: int
    value: bytes
    isolation: Isolation
    reader: str
    at: int


@dataclass(frozen=True)
class FinalRead:
    partition: int
    isolation: Isolation
    records: tuple[tuple[int, bytes], ...]
    end_offset: int | None
    log_start_offset: int


@dataclass(frozen=True)
class OffsetEvent:
    """An acknowledged OffsetCommit (``fetched`` False) or an OffsetFetch answer (True)."""

    group: str
    partition: int
    offset: int
    fetched: bool
    invoked_at: int
    completed_at: int


@dataclass(frozen=True)
class Violation:
    kind: str
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


@dataclass
class CheckResult:
    violations: list[Violation] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def report(self, per_kind: int = REPORT_PER_KIND) -> str:
        """A readable report: counts, then up to ``per_kind`` messages of each kind."""
        lines = [", ".join(f"{k}={v}" for k, v in sorted(self.stats.items()))]
        by_kind: dict[str, list[Violation]] = defaultdict(list)
        for v in self.violations:
            by_kind[v.kind].append(v)
        for kind, vs in sorted(by_kind.items()):
            lines.append(f"{kind}: {len(vs)} violation(s)")
            lines += [f"  {v.message}" for v in vs[:per_kind]]
            if len(vs) > per_kind:
                lines.append(f"  ... and {len(vs) - per_kind} more")
        return "\n".join(lines)

    def assert_ok(self) -> None:
        if self.violations:
            raise AssertionError(f"{len(self.violations)} violation(s) of the history:\n{self.report()}")


class History:
    """See the module docstring. Every method may be called from any thread."""

    def __init__(self, topic: str = "") -> None:
        self.topic = topic
        self._lock = threading.Lock()
        self._seq = 0
        self.ops: list[ProduceOp] = []
        self.txns: dict[str, TxnOutcome] = {}
        self.reads: list[Read] = []
        self.finals: dict[tuple[int, Isolation], FinalRead] = {}
        self.offsets: list[OffsetEvent] = []
        self.replicas: dict[tuple[int, int], tuple[tuple[int, bytes], ...]] = {}
        self.notes: list[tuple[int, str]] = []

    def _tick(self) -> int:
        self._seq += 1
        return self._seq

    def now(self) -> int:
        """A logical time: later calls (in real time, from any thread) return larger values."""
        with self._lock:
            return self._tick()

    # ------------------------------------------------------------------ produce
    def produce_invoked(self, producer: str, partition: int, value: bytes, txn: str | None = None) -> int:
        """Record a produce about to be sent; returns its op id."""
        with self._lock:
            op = ProduceOp(len(self.ops), producer, partition, bytes(value), txn, self._tick())
            self.ops.append(op)
            return op.op_id

    def produce_acked(self, op_id: int, offset: int, partition: int | None = None) -> None:
        """The produce was acknowledged at ``offset`` (``partition``: where the client put it, when
        the partitioner chose)."""
        with self._lock:
            op = self.ops[op_id]
            op.offset, op.completed_at = offset, self._tick()
            if partition is not None:
                op.partition = partition

    def produce_failed(self, op_id: int, error: str, *, definite: bool = False) -> None:
        with self._lock:
            op = self.ops[op_id]
            op.error, op.definite, op.completed_at = error, definite, self._tick()

    def txn_ended(self, txn: str, outcome: TxnOutcome) -> None:
        with self._lock:
            self.txns[txn] = outcome

    # ------------------------------------------------------------------ reads
    def read(self, partition: int, offset: int, value: bytes, isolation: Isolation, reader: str = "") -> None:
        with self._lock:
            self.reads.append(Read(partition, offset, bytes(value), isolation, reader, self._tick()))

    def final_read(
        self,
        partition: int,
        isolation: Isolation,
        records: Iterable[tuple[int, bytes]],
        end_offset: int | None = None,
        log_start_offset: int = 0,
    ) -> None:
        """The whole partition as read after the heal, in read order (a later call replaces it)."""
        recs = tuple((int(o), bytes(v)) for o, v in records)
        with self._lock:
            self.finals[(partition, isolation)] = FinalRead(
                partition, isolation, recs, end_offset, log_start_offset
            )

    def replica_log(self, partition: int, replica: int, records: Iterable[tuple[int, bytes]]) -> None:
        """Replica ``replica``'s own data records of ``partition`` (see the module docstring)."""
        recs = tuple((int(o), bytes(v)) for o, v in records)
        with self._lock:
            self.replicas[(partition, replica)] = recs

    # ------------------------------------------------------------------ group offsets
    def offset_committed(
        self, group: str, partition: int, offset: int, invoked_at: int | None = None
    ) -> None:
        """An OffsetCommit of ``offset`` was acknowledged."""
        with self._lock:
            t = self._tick()
            self.offsets.append(
                OffsetEvent(group, partition, offset, False, t if invoked_at is None else invoked_at, t)
            )

    def offset_fetched(self, group: str, partition: int, offset: int, invoked_at: int | None = None) -> None:
        """An OffsetFetch sent at logical time ``invoked_at`` answered ``offset`` (-1: none)."""
        with self._lock:
            t = self._tick()
            self.offsets.append(
                OffsetEvent(group, partition, offset, True, t if invoked_at is None else invoked_at, t)
            )

    def note(self, text: str) -> None:
        """A nemesis event or other context, kept for the report."""
        with self._lock:
            self.notes.append((self._tick(), text))

    def check(self) -> CheckResult:
        with self._lock:
            return check(self)


def _v(value: bytes) -> str:
    """A value for a message: short, printable."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Checker:
    def __init__(self, h: History) -> None:
        self.h = h
        self.out: list[Violation] = []
        self.ops_by_value: dict[bytes, ProduceOp] = {}
        for op in h.ops:
            if op.value in self.ops_by_value:
                self.add(
                    "history",
                    f"value {_v(op.value)} was produced twice (ops {self.ops_by_value[op.value].op_id} "
                    f"and {op.op_id}); values must be unique",
                )
            self.ops_by_value.setdefault(op.value, op)
        self.partitions = sorted(
            {op.partition for op in h.ops} | {r.partition for r in h.reads} | {p for p, _ in h.finals}
        )

    def add(self, kind: str, message: str) -> None:
        self.out.append(Violation(kind, message))

    def where(self, partition: int) -> str:
        return f"{self.h.topic}-{partition}" if self.h.topic else f"partition {partition}"

    def txn_of(self, value: bytes) -> tuple[str | None, TxnOutcome | None]:
        op = self.ops_by_value.get(value)
        if op is None or op.txn is None:
            return None, None
        return op.txn, self.h.txns.get(op.txn, "unknown")

    # ------------------------------------------------------------------ per partition
    def final_log(self, p: int, isolation: Isolation) -> dict[int, bytes] | None:
        """The final read as offset -> value, after checking its own shape."""
        f = self.h.finals.get((p, isolation))
        if f is None:
            return None
        log: dict[int, bytes] = {}
        prev = -1
        for offset, value in f.records:
            if offset <= prev:
                self.add(
                    "not-dense",
                    f"{self.where(p)} {isolation}: offset {offset} read after offset {prev} "
                    "(offsets must increase)",
                )
            if offset in log and log[offset] != value:
                self.add(
                    "offset-reused",
                    f"{self.where(p)} {isolation}: offset {offset} read twice with different "
                    f"values {_v(log[offset])} and {_v(value)}",
                )
            log.setdefault(offset, value)
            prev = max(prev, offset)
        return log

    def check_partition(self, p: int) -> None:
        where = self.where(p)
        ops = [op for op in self.h.ops if op.partition == p]
        acked = [op for op in ops if op.acked]
        log = self.final_log(p, READ_UNCOMMITTED)
        committed_log = self.final_log(p, READ_COMMITTED)
        if log is None:
            if ops or any(r.partition == p for r in self.h.reads):
                self.add("history", f"{where}: no final read_uncommitted read to check against")
            return
        final = self.h.finals[(p, READ_UNCOMMITTED)]

        # offset-reused: acknowledgements and reads against each other and the final log.
        seen: dict[int, tuple[bytes, str]] = {o: (v, "the final log") for o, v in log.items()}
        for op in sorted(acked, key=lambda o: o.completed_at or 0):
            assert op.offset is not None
            self._same_offset(p, seen, op.offset, op.value, f"the ack of op {op.op_id}")
        for r in self.h.reads:
            if r.partition == p:
                self._same_offset(
                    p, seen, r.offset, r.value, f"a {r.isolation} read by {r.reader or 'a reader'}"
                )

        offsets_of: dict[bytes, list[int]] = defaultdict(list)
        for o, v in sorted(log.items()):
            offsets_of[v].append(o)

        # lost: every acknowledged record at its offset.
        for op in acked:
            assert op.offset is not None
            got = log.get(op.offset)
            if got == op.value:
                continue
            elsewhere = offsets_of.get(op.value, [])
            if elsewhere:
                self.add(
                    "lost",
                    f"{where}: acknowledged record {_v(op.value)} (op {op.op_id}) is at offset "
                    f"{elsewhere[0]}, not at its acknowledged offset {op.offset}",
                )
            elif got is None:
                self.add(
                    "lost",
                    f"{where}: acknowledged record {_v(op.value)} (op {op.op_id}, offset {op.offset}) "
                    f"is missing from the final log (which ends at offset {max(log, default=-1)})",
                )
            else:
                self.add(
                    "lost",
                    f"{where}: acknowledged record {_v(op.value)} (op {op.op_id}, offset {op.offset}) "
                    f"is missing from the final log; offset {op.offset} holds {_v(got)}",
                )

        # duplicate / phantom.
        for value, offs in offsets_of.items():
            n = len(offs)
            producer_op = self.ops_by_value.get(value)
            if producer_op is None:
                self.add("phantom", f"{where}: offset(s) {offs} hold {_v(value)}, which was never produced")
            elif producer_op.partition != p:
                self.add(
                    "phantom", f"{where}: holds {_v(value)}, produced to partition {producer_op.partition}"
                )
            if n > 1:
                self.add(
                    "duplicate", f"{where}: {_v(value)} is in the final log {n} times, at offsets {offs}"
                )
            if producer_op is not None and producer_op.definite and not producer_op.acked:
                self.add(
                    "duplicate",
                    f"{where}: {_v(value)} is in the final log although its produce failed "
                    f"definitely ({producer_op.error})",
                )

        # not-dense: gaps only where transaction markers may be.
        txns_here = {op.txn for op in ops if op.txn is not None}
        markers = len(txns_here)
        offsets = sorted(log)
        start = final.log_start_offset
        end = final.end_offset if final.end_offset is not None else (offsets[-1] + 1 if offsets else start)
        missing = (end - start) - len([o for o in offsets if start <= o < end])
        if missing > markers:
            gaps = self._gaps(offsets, start, end)
            self.add(
                "not-dense",
                f"{where}: {missing} offset(s) in [{start}, {end}) hold no record but at most "
                f"{markers} transaction marker(s) could be there; gaps {gaps[:5]}",
            )

        # reordered: one producer's acknowledged records, in send order.
        last: dict[str, ProduceOp] = {}
        for op in sorted(acked, key=lambda o: o.invoked_at):
            prev = last.get(op.producer)
            assert op.offset is not None
            if prev is not None and prev.offset is not None and op.offset <= prev.offset:
                self.add(
                    "reordered",
                    f"{where}: producer {op.producer} sent {_v(prev.value)} before {_v(op.value)} "
                    f"but they were acknowledged at offsets {prev.offset} and {op.offset}",
                )
            last[op.producer] = op

        # unstable-read: everything read during the run is still there.
        for r in self.h.reads:
            if r.partition != p:
                continue
            ref = log if r.isolation == READ_UNCOMMITTED else committed_log
            if ref is None:
                continue
            got = ref.get(r.offset)
            if got is None:
                self.add(
                    "unstable-read",
                    f"{where}: {r.reader or 'a reader'} read {_v(r.value)} at offset "
                    f"{r.offset} ({r.isolation}) during the run, but the final {r.isolation} log has no "
                    "record there: data above the high watermark was exposed, then truncated",
                )
            elif got != r.value:
                self.add(
                    "unstable-read",
                    f"{where}: {r.reader or 'a reader'} read {_v(r.value)} at offset "
                    f"{r.offset} ({r.isolation}) during the run, but the final log holds {_v(got)} there: "
                    "a diverged suffix was served",
                )

        # replica-diverged: every replica given agrees with the final log below its end.
        for (rp, replica), recs in sorted(self.h.replicas.items()):
            if rp == p:
                self._check_replica(p, replica, recs, log, end)

        # read_committed.
        if committed_log is not None:
            self.check_committed(p, log, committed_log)
        for r in self.h.reads:
            if r.partition == p and r.isolation == READ_COMMITTED:
                txn, outcome = self.txn_of(r.value)
                if outcome == "aborted":
                    self.add(
                        "aborted-read",
                        f"{where}: a read_committed read by {r.reader or 'a reader'} during "
                        f"the run saw {_v(r.value)} at offset {r.offset}, of aborted transaction {txn}",
                    )

    def _check_replica(
        self, p: int, replica: int, recs: Sequence[tuple[int, bytes]], log: dict[int, bytes], end: int
    ) -> None:
        where = self.where(p)
        mine = {o: v for o, v in recs if o < end}
        diverged = sorted(o for o, v in mine.items() if o in log and log[o] != v)
        extra = sorted(o for o in mine if o not in log)
        missing = sorted(o for o in log if o < end and o not in mine)
        if diverged:
            o = diverged[0]
            self.add(
                "replica-diverged",
                f"{where}: replica {replica} holds {_v(mine[o])} at offset {o} where the final log holds "
                f"{_v(log[o])} ({len(diverged)} offset(s) differ, from {o} to {diverged[-1]}): a suffix "
                "that should have been truncated",
            )
        if extra:
            self.add(
                "replica-diverged",
                f"{where}: replica {replica} holds records at {len(extra)} offset(s) below the final end "
                f"offset {end} that the final log lacks, first {extra[0]} ({_v(mine[extra[0]])})",
            )
        if missing:
            self.add(
                "replica-diverged",
                f"{where}: replica {replica} lacks {len(missing)} record(s) of the final log below offset "
                f"{end}, first at offset {missing[0]} ({_v(log[missing[0]])})",
            )

    @staticmethod
    def _gaps(offsets: Sequence[int], start: int, end: int) -> list[tuple[int, int]]:
        """Missing [from, to) ranges of ``offsets`` within [start, end)."""
        gaps, expect = [], start
        for o in offsets:
            if o > expect:
                gaps.append((expect, o))
            expect = max(expect, o + 1)
        if end > expect:
            gaps.append((expect, end))
        return gaps

    def _same_offset(
        self, p: int, seen: dict[int, tuple[bytes, str]], offset: int, value: bytes, who: str
    ) -> None:
        prior = seen.get(offset)
        if prior is None:
            seen[offset] = (value, who)
        elif prior[0] != value:
            self.add(
                "offset-reused",
                f"{self.where(p)}: offset {offset} holds two values: {_v(prior[0])} "
                f"({prior[1]}) and {_v(value)} ({who})",
            )

    def check_committed(self, p: int, log: dict[int, bytes], committed: dict[int, bytes]) -> None:
        where = self.where(p)
        for offset, value in committed.items():
            if log.get(offset) != value:
                self.add(
                    "unstable-read",
                    f"{where}: read_committed shows {_v(value)} at offset {offset}, the "
                    f"read_uncommitted log {_v(log[offset]) if offset in log else 'nothing'}",
                )
            txn, outcome = self.txn_of(value)
            if outcome == "aborted":
                self.add(
                    "aborted-read",
                    f"{where}: read_committed shows {_v(value)} at offset {offset}, of "
                    f"aborted transaction {txn}",
                )
        for offset, value in log.items():
            if offset in committed:
                continue
            txn, outcome = self.txn_of(value)
            if txn is None:
                self.add(
                    "committed-missing",
                    f"{where}: read_committed lacks non-transactional record {_v(value)} at offset {offset}",
                )
            elif outcome == "committed":
                self.add(
                    "committed-missing",
                    f"{where}: read_committed lacks {_v(value)} at offset {offset} of "
                    f"committed transaction {txn}",
                )

    # ------------------------------------------------------------------ transactions
    def check_txn_atomicity(self) -> None:
        by_txn: dict[str, list[ProduceOp]] = defaultdict(list)
        for op in self.h.ops:
            if op.txn is not None:
                by_txn[op.txn].append(op)
        committed_values: set[bytes] = set()
        for (_, isolation), f in self.h.finals.items():
            if isolation == READ_COMMITTED:
                committed_values.update(v for _, v in f.records)
        partitions_read = {p for (p, i) in self.h.finals if i == READ_COMMITTED}
        for txn, ops in sorted(by_txn.items()):
            ops = [op for op in ops if op.partition in partitions_read]
            if self.h.txns.get(txn, "unknown") != "unknown" or not ops:
                continue
            visible = [op for op in ops if op.value in committed_values]
            written = [op for op in ops if op.acked]
            if visible and len(visible) < len(written):
                hidden = [op for op in written if op.value not in committed_values]
                self.add(
                    "txn-atomicity",
                    f"transaction {txn} (outcome unknown): read_committed shows "
                    f"{len(visible)} of its records but not acknowledged {_v(hidden[0].value)}",
                )

    # ------------------------------------------------------------------ group offsets
    def check_group_offsets(self) -> None:
        events: dict[tuple[str, int], list[OffsetEvent]] = defaultdict(list)
        for e in self.h.offsets:
            events[(e.group, e.partition)].append(e)
        for (group, p), es in sorted(events.items()):
            for e in es:
                if not e.fetched:
                    continue
                # What was known before this fetch was sent: acknowledged commits and earlier answers.
                floor = [x for x in es if x.completed_at < e.invoked_at and x is not e]
                if not floor:
                    continue
                best = max(floor, key=lambda x: x.offset)
                if e.offset < best.offset:
                    what = "seen" if best.fetched else "acknowledged as committed"
                    self.add(
                        "group-offset-regressed",
                        f"group {group} {self.where(p)}: committed offset "
                        f"{best.offset} was {what}, then an OffsetFetch answered {e.offset}",
                    )

    def run(self) -> CheckResult:
        for p in self.partitions:
            self.check_partition(p)
        self.check_txn_atomicity()
        self.check_group_offsets()
        ops = self.h.ops
        stats = {
            "produced": len(ops),
            "acked": sum(op.acked for op in ops),
            "failed": sum(op.error is not None for op in ops),
            "in_flight": sum(op.completed_at is None for op in ops),
            "reads": len(self.h.reads),
            "final_records": sum(
                len(f.records) for (_, i), f in self.h.finals.items() if i == READ_UNCOMMITTED
            ),
            "partitions": len(self.partitions),
            "replica_logs": len(self.h.replicas),
            "offset_commits": sum(not e.fetched for e in self.h.offsets),
            "offset_fetches": sum(e.fetched for e in self.h.offsets),
            "notes": len(self.h.notes),
        }
        return CheckResult(self.out, stats)


def check(history: History) -> CheckResult:
    """Check ``history`` (see the module docstring); call it once the workload has finished."""
    return _Checker(history).run()


__all__ = [
    "ISOLATIONS",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "CheckResult",
    "FinalRead",
    "History",
    "Isolation",
    "OffsetEvent",
    "ProduceOp",
    "Read",
    "TxnOutcome",
    "Violation",
    "check",
]
