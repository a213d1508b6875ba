"""The share-partition state machine (KIP-932): what a partition leader keeps for one share group
on one topic-partition (Kafka's ``SharePartition``), as pure logic (no I/O, no asyncio, the clock
injected).

Offsets and the window
----------------------
``start_offset`` (SPSO) is the first offset that is not yet finished; everything below it has
been acknowledged, archived or was never a record. ``end_offset`` (SPEO) is the highest offset
this share partition has seen in a fetch (``start_offset - 1`` when it has seen none since the
start). The *window* (Kafka's in-flight records) is ``[start_offset, end_offset]``. Inside it:

* an offset with an entry has a :class:`RecordState`, a delivery count and, when ACQUIRED, the
  member holding it and the deadline of its acquisition lock;
* an offset without an entry is a *gap*: the log had no record there (compacted away; a log
  read that covered the offset returned no batch holding it). A gap reads as ARCHIVED with delivery count 0 and is never
  delivered. (An entry ARCHIVED with count 0 reads the same; the two are interchangeable.)

Offsets above ``end_offset`` are AVAILABLE with delivery count 0: never delivered yet.

Transitions (delivery count = how many times the record was acquired)
---------------------------------------------------------------------
* acquire: AVAILABLE -> ACQUIRED by one member, count + 1, lock deadline now + lock duration.
* acknowledge by the holder: ACCEPT -> ACKNOWLEDGED; REJECT or GAP -> ARCHIVED; RELEASE ->
  AVAILABLE (count kept). Acknowledging anything the member does not hold is
  INVALID_RECORD_STATE, and the whole acknowledgement of the partition is rejected (no partial
  effect), as Kafka rolls back.
* lock timeout (:meth:`SharePartition.expire_locks`) and member departure
  (:meth:`SharePartition.release_member`) release like RELEASE.
* A release (of any kind) of a record whose count reached ``delivery_count_limit``, or that lies
  below the log start offset (:meth:`SharePartition.update_log_start_offset`), archives it
  instead. A record AVAILABLE with a count at or above the limit (possible only after a restore
  with a lowered limit) is archived when a fetch reaches it, never delivered.
* ACKNOWLEDGED and ARCHIVED are final.
* Redelivery delay (a Zurau extension, ``release_delay_ms`` > 0): a record released (by RELEASE,
  lock expiry or member departure) back to AVAILABLE is not delivered again before that many
  milliseconds passed; :meth:`next_release_due` gives the caller the time to look again. The
  delay is not persisted (after a reload the record is deliverable at once).
* Failures: a REJECT, and a release that archives at the delivery limit, are recorded for
  :meth:`drain_failed` (the manager dead-letters them when the group has a DLQ topic).

After every operation the start offset advances past the finished prefix (ACKNOWLEDGED,
ARCHIVED, gaps) and those entries are dropped; when nothing in the window is unfinished the
window is empty and ``start_offset == end_offset + 1``.

Invariants (checked by the unit and stateful tests)
---------------------------------------------------
* every ACQUIRED entry has exactly one owner and a lock deadline; no other entry has either;
* ``start_offset <= end_offset + 1``; the entry at ``start_offset``, if the window is non-empty,
  is AVAILABLE or ACQUIRED (the start offset never passes an unfinished record);
* no record is ever delivered with a count above ``delivery_count_limit``, and an ACKNOWLEDGED or
  ARCHIVED record is never delivered again;
* new offsets (above ``end_offset``) are taken only while the window holds fewer than
  ``max_record_locks`` offsets, and never so many that it exceeds it (Kafka's
  ``group.share.partition.max.record.locks`` bound on in-flight records), so the number of
  ACQUIRED records never exceeds it either. Re-delivery of AVAILABLE records inside the window
  is always allowed.

Persistence
-----------
:meth:`SharePartition.to_state` gives ``(start_offset, batches)`` for WriteShareGroupState:
maximal runs of equal (state, count), leaving out AVAILABLE records with count 0 (the default).
ACQUIRED records are written AVAILABLE with their count (locks are not persisted), gaps as
ARCHIVED count 0. :meth:`SharePartition.from_state` rebuilds; ``from_state(*x.to_state())`` is
equivalent to ``x`` after :meth:`SharePartition.release_all`.

Out of scope: ``isolation.level = read_committed`` for share groups (aborted transactional
records would need archiving from the aborted-transaction index; the fetched batches here are
taken as read_uncommitted data), and ``share.auto.offset.reset = by_duration:...`` (the caller
resolves the offset by timestamp and passes it to :meth:`SharePartition.initial`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zurau.clock import Clock
from zurau.protocol.errors import InvalidRecordStateError, InvalidRequestError
from zurau.protocol.share_states import AcknowledgeType, RecordState, StateBatch

__all__ = [
    "AcknowledgeResult",
    "AcquiredRecords",
    "INVALID_RECORD_STATE",
    "INVALID_REQUEST",
    "SharePartition",
    "initial_start_offset",
]

NONE = 0
INVALID_REQUEST = InvalidRequestError.code  # a malformed acknowledgement
INVALID_RECORD_STATE = InvalidRecordStateError.code  # a record the member does not hold

DEFAULT_RECORD_LOCK_DURATION_MS = 30_000  # group.share.record.lock.duration.ms
DEFAULT_DELIVERY_COUNT_LIMIT = 5  # group.share.delivery.count.limit
DEFAULT_MAX_RECORD_LOCKS = 2000  # group.share.partition.max.record.locks

_FINISHED = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(frozen=True)
class AcquiredRecords:
    """Offsets ``first_offset..last_offset`` (inclusive) acquired with one delivery count: the
    ``AcquiredRecords`` entry of a ShareFetch response partition."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class AcknowledgeResult:
    """The per-partition outcome of an acknowledgement: a Kafka error code (0 = none) and a
    message for the response's ``ErrorMessage``."""

    error_code: int = NONE
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code == NONE


class _Record:
    __slots__ = ("count", "deadline_ms", "not_before", "owner", "state")

    def __init__(self, state: RecordState, count: int) -> None:
        self.state = state
        self.count = count
        self.owner: str | None = None
        self.deadline_ms: int | None = None
        self.not_before: int | None = None  # an AVAILABLE record released with a redelivery delay


def initial_start_offset(reset: str, log_start_offset: int, log_end_offset: int) -> int:
    """The first start offset of a share partition with no persisted state, by
    ``share.auto.offset.reset``: ``earliest`` -> the log start offset, ``latest`` (Kafka's
    default) -> the log end offset."""
    if reset == "earliest":
        return log_start_offset
    if reset == "latest":
        return log_end_offset
    raise ValueError(f"share.auto.offset.reset must be earliest or latest, not {reset!r}")


class SharePartition:
    """The delivery state of one share group on one topic-partition (see the module docstring).

    ``record_lock_duration_ms`` is the default lock of an acquisition, ``delivery_count_limit``
    the number of deliveries after which a released record is archived, ``max_record_locks`` the
    bound on the window's size for taking new offsets.
    """

    def __init__(
        self,
        clock: Clock,
        start_offset: int = 0,
        *,
        record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS,
        delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
        max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS,
        release_delay_ms: int = 0,
    ) -> None:
        if start_offset < 0:
            raise ValueError("start_offset must be >= 0")
        if delivery_count_limit < 1 or max_record_locks < 1 or record_lock_duration_ms < 0:
            raise ValueError("delivery_count_limit and max_record_locks must be >= 1, lock duration >= 0")
        self._clock = clock
        self.record_lock_duration_ms = record_lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_record_locks = max_record_locks
        self.release_delay_ms = max(release_delay_ms, 0)
        # Records finished unsuccessfully since the last drain_failed(): (offset, delivery count,
        # "REJECTED" or "DELIVERY_LIMIT"), for dead-lettering and metrics.
        self._failed: list[tuple[int, int, str]] = []
        self._start = start_offset
        self._end = start_offset - 1
        self._log_start = 0  # records below it are archived instead of released
        # Entries of the window in ascending offset order (insertion order: new offsets are only
        # ever added above end_offset, removed only from the front).
        self._records: dict[int, _Record] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def initial(
        cls,
        clock: Clock,
        reset: str,
        log_start_offset: int,
        log_end_offset: int,
        **config: int,
    ) -> SharePartition:
        """A share partition for a group that has no state yet on this partition, starting where
        ``share.auto.offset.reset`` says (see :func:`initial_start_offset`)."""
        return cls(clock, initial_start_offset(reset, log_start_offset, log_end_offset), **config)

    @classmethod
    def from_state(
        cls, clock: Clock, start_offset: int, batches: Iterable[StateBatch], **config: int
    ) -> SharePartition:
        """Rebuild from persisted state (ReadShareGroupState): batches must be valid, in
        ascending order, non-overlapping and at or above ``start_offset`` (else ValueError).
        Offsets between batches are AVAILABLE with count 0; persisted ACQUIRED records come back
        released (AVAILABLE, or ARCHIVED at the delivery limit) since locks are not persisted."""
        sp = cls(clock, start_offset, **config)
        next_offset = start_offset
        for batch in batches:
            if not batch.is_valid():
                raise ValueError(f"invalid state batch {batch}")
            if batch.first_offset < next_offset:
                raise ValueError(f"state batch {batch} overlaps, is unordered or below the start offset")
            state = RecordState(batch.delivery_state)
            for offset in range(next_offset, batch.first_offset):
                sp._records[offset] = _Record(RecordState.AVAILABLE, 0)
            if not (state is RecordState.ARCHIVED and batch.delivery_count == 0):  # else a gap
                if state in (RecordState.ACQUIRED, RecordState.AVAILABLE):
                    state = sp._released_state(batch.delivery_count)
                    if state is RecordState.ARCHIVED:  # delivered up to the limit: a failure now
                        sp._failed.extend(
                            (o, batch.delivery_count, "DELIVERY_LIMIT")
                            for o in range(batch.first_offset, batch.last_offset + 1)
                        )
                for offset in range(batch.first_offset, batch.last_offset + 1):
                    sp._records[offset] = _Record(state, batch.delivery_count)
            next_offset = batch.last_offset + 1
        sp._end = next_offset - 1
        sp._advance_start()
        return sp

    def to_state(self) -> tuple[int, list[StateBatch]]:
        """``(start_offset, batches)`` for WriteShareGroupState (see the module docstring)."""
        batches: list[StateBatch] = []
        run: list[int] = []  # [first, last, state, count] of the open run

        def add(first: int, last: int, state: int, count: int) -> None:
            if state == RecordState.AVAILABLE and count == 0:
                flush()
                return
            if run and run[1] + 1 == first and run[2] == state and run[3] == count:
                run[1] = last
                return
            flush()
            run.extend((first, last, state, count))

        def flush() -> None:
            if run:
                batches.append(StateBatch(run[0], run[1], run[2], run[3]))
                run.clear()

        expected = self._start
        for offset, rec in self._records.items():
            if offset > expected:
                add(expected, offset - 1, RecordState.ARCHIVED, 0)
            # An acquisition is written as AVAILABLE with its count, even at the delivery limit: a
            # leader that takes over archives it when it meets it (and dead-letters it then), where
            # writing it ARCHIVED would finish it without a dead letter.
            state = RecordState.AVAILABLE if rec.state is RecordState.ACQUIRED else rec.state
            add(offset, offset, state, rec.count)
            expected = offset + 1
        if self._records and expected <= self._end:
            add(expected, self._end, RecordState.ARCHIVED, 0)
        flush()
        return self._start, batches

    # ------------------------------------------------------------------ queries

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    def next_fetch_offset(self) -> int:
        """Where the next log read should start: the lowest AVAILABLE offset of the window, else
        the first offset above it."""
        now: int | None = None
        for offset, rec in self._records.items():
            if rec.state is RecordState.AVAILABLE:
                if rec.not_before is None:
                    return offset
                if now is None:
                    now = self._clock.now_ms()
                if rec.not_before <= now:
                    return offset
        return max(self._start, self._end + 1)

    def can_acquire(self) -> bool:
        """Whether an acquire may deliver anything: some record of the window is AVAILABLE, or
        the window has room for new offsets (Kafka's ``canAcquireRecords``)."""
        return self.next_fetch_offset() <= self._end or self._window_size() < self.max_record_locks

    def record_state(self, offset: int) -> tuple[RecordState, int, str | None]:
        """``(state, delivery count, owner)`` of an offset at or above the start offset (a gap
        reads ARCHIVED with count 0). Below the start offset the record is finished but its
        exact state is forgotten: ValueError."""
        if offset < self._start:
            raise ValueError(f"offset {offset} is below the start offset {self._start}")
        rec = self._records.get(offset)
        if rec is not None:
            return rec.state, rec.count, rec.owner
        if offset <= self._end:
            return RecordState.ARCHIVED, 0, None
        return RecordState.AVAILABLE, 0, None

    def acquired_count(self, member_id: str | None = None) -> int:
        """How many records are ACQUIRED (by ``member_id``, or by anyone)."""
        return sum(
            1
            for rec in self._records.values()
            if rec.state is RecordState.ACQUIRED and (member_id is None or rec.owner == member_id)
        )

    def delivery_complete_count(self) -> int:
        """How many offsets of the window (``start_offset..end_offset``) are finished
        (acknowledged, archived, or gaps): what WriteShareGroupState v1 carries as
        ``DeliveryCompleteCount`` so that the lag (high watermark - start offset - this) counts only
        records still to deliver."""
        if not self._records:
            return 0
        unfinished = sum(1 for rec in self._records.values() if rec.state not in _FINISHED)
        return self._end - self._start + 1 - unfinished

    def next_release_due(self) -> int | None:
        """The earliest time (epoch ms) a record released with a redelivery delay becomes
        deliverable again, for the caller's timer (None: none is waiting; a delay that has
        passed is not waited for, even before the record is acquired again)."""
        now = self._clock.now_ms()
        dues = [
            rec.not_before
            for rec in self._records.values()
            if rec.not_before is not None and rec.not_before > now and rec.state is RecordState.AVAILABLE
        ]
        return min(dues) if dues else None

    def drain_failed(self) -> list[tuple[int, int, str]]:
        """The records finished unsuccessfully since the last call: ``(offset, delivery count,
        reason)`` with reason ``REJECTED`` (acknowledged with REJECT) or ``DELIVERY_LIMIT`` (released
        or expired at ``delivery_count_limit``). Records archived because the log no longer holds
        them are not failures."""
        out, self._failed = self._failed, []
        return out

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline (epoch ms), for the caller's timer."""
        deadlines = [rec.deadline_ms for rec in self._records.values() if rec.deadline_ms is not None]
        return min(deadlines) if deadlines else None

    # ------------------------------------------------------------------ operations

    def acquire(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int]],
        max_records: int,
        *,
        fetch_offset: int | None = None,
        lock_duration_ms: int | None = None,
    ) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` up to ``max_records`` AVAILABLE records among the fetched
        ``batches``: ``(base_offset, last_offset)`` of each record batch of one contiguous log
        read that started at ``fetch_offset`` (default :meth:`next_fetch_offset` now; pass the
        offset actually read when the state may have changed since the read was issued), in
        ascending order. The read is taken as the whole log from ``fetch_offset`` to its last
        offset: an offset of that span in no returned batch is absent from the log (compacted
        or deleted), so an AVAILABLE record there is archived and a new offset there becomes a
        gap. Returns maximal runs of consecutive acquired offsets with equal delivery counts,
        in offset order. ValueError if the batches are malformed or ``fetch_offset`` lies above
        ``end_offset + 1`` (a read that skipped offsets never seen)."""
        if not member_id:
            raise ValueError("member_id must be non-empty")
        fetch_at = self.next_fetch_offset() if fetch_offset is None else fetch_offset
        if fetch_at > self._end + 1:
            raise ValueError(f"fetch offset {fetch_at} skips offsets above the end offset {self._end}")
        prev_last: int | None = None
        for base, last in batches:
            if base < 0 or last < base or (prev_last is not None and base <= prev_last):
                raise ValueError(f"fetched batches must be ascending and disjoint: ({base}, {last})")
            prev_last = last
        if batches:
            self._archive_absent(fetch_at, batches)
        duration = self.record_lock_duration_ms if lock_duration_ms is None else lock_duration_ms
        now = self._clock.now_ms()
        deadline = now + duration
        remaining = max_records
        acquired: list[tuple[int, int]] = []  # (offset, delivery count)
        for base, last in batches:
            if remaining <= 0:
                break
            for offset in range(max(base, self._start), last + 1):
                if remaining <= 0:
                    break
                if offset > self._end:
                    grown = offset - self._start + 1 if self._records else 1
                    if grown > self.max_record_locks:
                        remaining = 0  # the window is full: no new offsets in this acquire
                        break
                    if not self._records:
                        self._start = offset  # everything below is finished or absent
                    self._end = offset  # offsets skipped since the old end are gaps
                    rec = _Record(RecordState.AVAILABLE, 0)
                    self._records[offset] = rec
                else:
                    maybe = self._records.get(offset)
                    if maybe is None or maybe.state is not RecordState.AVAILABLE:
                        continue
                    if maybe.not_before is not None and maybe.not_before > now:
                        continue  # released with a redelivery delay that has not passed
                    rec = maybe
                if rec.count >= self.delivery_count_limit:
                    rec.state = RecordState.ARCHIVED  # only after a restore with a lower limit
                    rec.not_before = None
                    self._failed.append((offset, rec.count, "DELIVERY_LIMIT"))
                    continue
                rec.not_before = None
                rec.state = RecordState.ACQUIRED
                rec.count += 1
                rec.owner = member_id
                rec.deadline_ms = deadline
                acquired.append((offset, rec.count))
                remaining -= 1
        self._advance_start()
        return _runs(acquired)

    def acknowledge(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int, Sequence[int]]],
    ) -> AcknowledgeResult:
        """Apply ``member_id``'s acknowledgements: ``(first_offset, last_offset, ack_types)`` with
        one :class:`AcknowledgeType` id for the whole range or one per offset. All or nothing: a
        malformed batch (bad range, wrong number or unknown ack types, ranges not ascending and
        disjoint) is INVALID_REQUEST; an offset the member does not hold ACQUIRED is
        INVALID_RECORD_STATE; either way nothing changes."""
        plan: list[tuple[int, _Record, AcknowledgeType]] = []
        prev_last: int | None = None
        for first, last, types in batches:
            if first < 0 or last < first or (prev_last is not None and first <= prev_last):
                return AcknowledgeResult(INVALID_REQUEST, f"bad acknowledgement range {first}..{last}")
            prev_last = last
            if len(types) not in (1, last - first + 1):
                return AcknowledgeResult(
                    INVALID_REQUEST, f"{len(types)} acknowledge types for {last - first + 1} offsets"
                )
            try:
                kinds = [AcknowledgeType(t) for t in types]
            except ValueError:
                return AcknowledgeResult(INVALID_REQUEST, f"unknown acknowledge type in {list(types)}")
            for i, offset in enumerate(range(first, last + 1)):
                rec = self._records.get(offset) if offset >= self._start else None
                if rec is None or rec.state is not RecordState.ACQUIRED or rec.owner != member_id:
                    return AcknowledgeResult(
                        INVALID_RECORD_STATE, f"offset {offset} is not acquired by member {member_id}"
                    )
                plan.append((offset, rec, kinds[i] if len(kinds) > 1 else kinds[0]))
        for offset, rec, kind in plan:
            if kind is AcknowledgeType.ACCEPT:
                self._finish(rec, RecordState.ACKNOWLEDGED)
            elif kind is AcknowledgeType.RELEASE:
                self._release(offset, rec)
            else:  # REJECT, GAP
                self._finish(rec, RecordState.ARCHIVED)
                if kind is AcknowledgeType.REJECT:
                    self._failed.append((offset, rec.count, "REJECTED"))
        self._advance_start()
        return AcknowledgeResult()

    def release_member(self, member_id: str) -> int:
        """Release every record ``member_id`` holds (it left the group or its share session
        closed); returns how many."""
        released = 0
        for offset, rec in self._records.items():
            if rec.state is RecordState.ACQUIRED and rec.owner == member_id:
                self._release(offset, rec)
                released += 1
        self._advance_start()
        return released

    def release_all(self) -> int:
        """Release every acquisition (what a leader change does to in-memory locks)."""
        released = 0
        for offset, rec in self._records.items():
            if rec.state is RecordState.ACQUIRED:
                self._release(offset, rec)
                released += 1
        self._advance_start()
        return released

    def expire_locks(self, now_ms: int | None = None) -> int:
        """Release every acquisition whose lock deadline is at or before ``now_ms`` (default: the
        clock's now); returns how many."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        expired = 0
        for offset, rec in self._records.items():
            if rec.deadline_ms is not None and rec.deadline_ms <= now:
                self._release(offset, rec)
                expired += 1
        self._advance_start()
        return expired

    def skip_absent(self, upto: int, fetch_offset: int | None = None) -> None:
        """The log holds no deliverable record in ``fetch_offset .. upto`` (default: from
        ``end_offset + 1``; a read from ``fetch_offset`` found only control batches or aborted
        transactional data there): AVAILABLE records of the window there are archived (as
        :meth:`acquire` archives those no fetched batch covers; e.g. records of an aborted
        transaction delivered before ``share.isolation.level`` became read_committed), offsets
        above ``end_offset`` become gaps, and the start offset moves past them when nothing
        unfinished lies below."""
        if fetch_offset is not None:
            for offset, rec in self._records.items():
                if offset > upto:
                    break
                if offset >= fetch_offset and rec.state is RecordState.AVAILABLE:
                    rec.state = RecordState.ARCHIVED
        if upto > self._end:
            if not self._records:
                self._start = upto + 1
            self._end = upto
        self._advance_start()

    def update_log_start_offset(self, log_start_offset: int) -> None:
        """The log's start offset moved (retention, DeleteRecords): records below it can no longer
        be fetched. AVAILABLE ones are archived; ACQUIRED ones stay with their holder (an
        acknowledgement is still accepted) but are archived rather than released later. The start
        offset then advances past the finished prefix, to at least ``log_start_offset`` when no
        unfinished record lies below it."""
        for offset, rec in self._records.items():
            if offset >= log_start_offset:
                break
            if rec.state is RecordState.AVAILABLE:
                rec.state = RecordState.ARCHIVED
        self._log_start = max(self._log_start, log_start_offset)
        self._advance_start()
        if not self._records and self._start < log_start_offset:
            self._start = log_start_offset
            self._end = max(self._end, log_start_offset - 1)

    # ------------------------------------------------------------------ internals

    def _window_size(self) -> int:
        return self._end - self._start + 1 if self._records else 0

    def _released_state(self, count: int) -> RecordState:
        return RecordState.ARCHIVED if count >= self.delivery_count_limit else RecordState.AVAILABLE

    def _release(self, offset: int, rec: _Record) -> None:
        if offset < self._log_start:
            self._finish(rec, RecordState.ARCHIVED)  # no longer in the log
            return
        state = self._released_state(rec.count)
        self._finish(rec, state)
        if state is RecordState.ARCHIVED:
            self._failed.append((offset, rec.count, "DELIVERY_LIMIT"))
        elif self.release_delay_ms:
            rec.not_before = self._clock.now_ms() + self.release_delay_ms

    def _archive_absent(self, fetch_at: int, batches: Sequence[tuple[int, int]]) -> None:
        """Archive AVAILABLE window records in ``[fetch_at, last fetched offset]`` that no fetched
        batch covers: the log no longer has them."""
        upto = min(batches[-1][1], self._end)
        i = 0
        for offset, rec in self._records.items():
            if offset > upto:
                break
            if offset < fetch_at or rec.state is not RecordState.AVAILABLE:
                continue
            while batches[i][1] < offset:
                i += 1
            if batches[i][0] > offset:
                rec.state = RecordState.ARCHIVED

    def _finish(self, rec: _Record, state: RecordState) -> None:
        rec.state = state
        rec.owner = None
        rec.deadline_ms = None
        rec.not_before = None

    def _advance_start(self) -> None:
        done: list[int] = []
        for offset, rec in self._records.items():
            if rec.state not in _FINISHED:
                self._start = offset
                break
            done.append(offset)
        else:
            self._start = self._end + 1
        for offset in done:
            del self._records[offset]


def _runs(acquired: list[tuple[int, int]]) -> list[AcquiredRecords]:
    out: list[AcquiredRecords] = []
    if not acquired:
        return out
    first, count = acquired[0]
    last = first
    for offset, c in acquired[1:]:
        if offset == last + 1 and c == count:
            last = offset
            continue
        out.append(AcquiredRecords(first, last, count))
        first, last, count = offset, offset, c
    out.append(AcquiredRecords(first, last, count))
    return out
