"""The share-partition state machine (KIP-932 in-flight records): transitions, errors, locks,
delivery limits, start-offset advance, persistence; and a stateful property test against a model."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from zurau.clock import ManualClock
from zurau.protocol.share_states import AcknowledgeType, RecordState, StateBatch
from zurau.replication.share.share_partition import (
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    AcquiredRecords,
    SharePartition,
    initial_start_offset,
)

A, R, J, G = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.GAP
AV, AQ, AK, AR = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED


def make(start: int = 0, **config: int) -> tuple[ManualClock, SharePartition]:
    clock = ManualClock(start_ms=1_000_000)
    config.setdefault("record_lock_duration_ms", 30_000)
    return clock, SharePartition(clock, start, **config)


def states(sp: SharePartition, first: int, last: int) -> list[tuple[RecordState, int, str | None]]:
    return [sp.record_state(o) for o in range(first, last + 1)]


# ---------------------------------------------------------------- acquire


def test_acquire_fresh_records() -> None:
    clock, sp = make()
    got = sp.acquire("m1", [(0, 4), (5, 9)], 100)
    assert got == [AcquiredRecords(0, 9, 1)]
    assert all(s == (AQ, 1, "m1") for s in states(sp, 0, 9))
    assert sp.end_offset == 9 and sp.start_offset == 0
    assert sp.next_fetch_offset() == 10
    assert sp.next_lock_deadline() == clock.now_ms() + 30_000
    assert sp.acquired_count() == 10 and sp.acquired_count("m1") == 10 and sp.acquired_count("m2") == 0


def test_acquire_caps_at_max_records_and_skips_unavailable() -> None:
    _, sp = make()
    assert sp.acquire("m1", [(0, 9)], 3) == [AcquiredRecords(0, 2, 1)]
    assert sp.next_fetch_offset() == 3
    # The same log read again: 0..2 are held by m1, so m2 gets 3..5.
    assert sp.acquire("m2", [(0, 9)], 3) == [AcquiredRecords(3, 5, 1)]
    assert sp.record_state(1) == (AQ, 1, "m1")
    assert sp.record_state(4) == (AQ, 1, "m2")


def test_acquire_splits_runs_by_delivery_count() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 5)], 10)
    assert sp.acknowledge("m1", [(0, 5, [A, R, R, A, R, A])]).ok
    assert sp.next_fetch_offset() == 1
    got = sp.acquire("m2", [(0, 9)], 10)
    assert got == [AcquiredRecords(1, 2, 2), AcquiredRecords(4, 4, 2), AcquiredRecords(6, 9, 1)]


def test_acquire_bounded_by_max_record_locks() -> None:
    _, sp = make(max_record_locks=4)
    assert sp.acquire("m1", [(0, 9)], 100) == [AcquiredRecords(0, 3, 1)]
    assert not sp.can_acquire()
    assert sp.acquire("m2", [(4, 9)], 100) == []
    # Releasing inside the window allows re-delivery but still no new offsets.
    assert sp.acknowledge("m1", [(1, 1, [R])]).ok
    assert sp.can_acquire()
    assert sp.acquire("m2", [(0, 9)], 100) == [AcquiredRecords(1, 1, 2)]
    # Finishing the prefix moves the start offset and makes room.
    assert sp.acknowledge("m1", [(0, 0, [A])]).ok
    assert sp.start_offset == 1
    assert sp.acquire("m2", [(4, 9)], 100) == [AcquiredRecords(4, 4, 1)]
    assert sp.end_offset - sp.start_offset + 1 <= 4


def test_acquire_ignores_offsets_below_start() -> None:
    _, sp = make(start=5)
    assert sp.acquire("m1", [(0, 7)], 100) == [AcquiredRecords(5, 7, 1)]
    with pytest.raises(ValueError):
        sp.record_state(4)


def test_acquire_gaps_between_batches_are_archived_not_delivered() -> None:
    _, sp = make()
    assert sp.acquire("m1", [(0, 2), (5, 6)], 100) == [AcquiredRecords(0, 2, 1), AcquiredRecords(5, 6, 1)]
    assert sp.record_state(3) == (AR, 0, None) and sp.record_state(4) == (AR, 0, None)
    assert sp.acknowledge("m1", [(0, 2, [A]), (5, 6, [A])]).ok
    assert sp.start_offset == 7 and sp.end_offset == 6


def test_acquire_gap_at_front_moves_start() -> None:
    _, sp = make()
    assert sp.acquire("m1", [(10, 12)], 100) == [AcquiredRecords(10, 12, 1)]
    assert sp.start_offset == 10


def test_acquire_archives_available_records_the_log_no_longer_has() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 5)], 100)
    assert sp.acknowledge("m1", [(0, 5, [R])]).ok
    # Compaction removed 2..3 meanwhile: the read from 0 returns 0..1 and 4..8.
    assert sp.acquire("m2", [(0, 1), (4, 8)], 100) == [
        AcquiredRecords(0, 1, 2),
        AcquiredRecords(4, 5, 2),
        AcquiredRecords(6, 8, 1),
    ]
    assert sp.record_state(2) == (AR, 1, None)


def test_acquire_with_explicit_fetch_offset_does_not_archive_unread_records() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 5)], 100)
    read_from = sp.next_fetch_offset()  # 6: the read is issued...
    assert sp.acknowledge("m1", [(2, 2, [R])]).ok  # ...then 2 becomes AVAILABLE again
    assert sp.acquire("m2", [(6, 8)], 100, fetch_offset=read_from) == [AcquiredRecords(6, 8, 1)]
    assert sp.record_state(2) == (AV, 1, None)


def test_skip_absent_archives_available_records_a_read_found_no_deliverable_record_for() -> None:
    # 0..4 were delivered and 0, 2, 4 released; then (share.isolation.level now read_committed)
    # a read from 0 met only aborted data and control batches up to 3: 0 and 2 are archived,
    # 1 stays with its holder, 4 (not read) stays AVAILABLE.
    _, sp = make()
    sp.acquire("m1", [(0, 4)], 100)
    assert sp.acknowledge("m1", [(0, 0, [R]), (2, 4, [R, A, R])]).ok
    sp.skip_absent(3, fetch_offset=0)
    assert sp.start_offset == 1
    assert states(sp, 1, 4) == [(AQ, 1, "m1"), (AR, 1, None), (AK, 1, None), (AV, 1, None)]
    assert sp.next_fetch_offset() == 4
    # a read from above the window: the offsets become gaps
    sp.skip_absent(7, fetch_offset=5)
    assert sp.end_offset == 7
    assert states(sp, 5, 7) == [(AR, 0, None)] * 3
    assert sp.next_fetch_offset() == 4


def test_skip_absent_without_fetch_offset_only_extends_the_window() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 1)], 100)
    assert sp.acknowledge("m1", [(0, 0, [R])]).ok
    sp.skip_absent(4)
    assert states(sp, 0, 4) == [(AV, 1, None), (AQ, 1, "m1"), (AR, 0, None), (AR, 0, None), (AR, 0, None)]
    sp.skip_absent(2)  # nothing new
    assert sp.end_offset == 4
    assert sp.acknowledge("m1", [(1, 1, [A])]).ok
    _, sp2 = make(10)
    sp2.skip_absent(12)  # an empty window moves past the gaps
    assert (sp2.start_offset, sp2.end_offset) == (13, 12)


def test_next_release_due_forgets_a_redelivery_delay_that_passed() -> None:
    # Regression (found by the share-partition simulation): a released record whose redelivery
    # delay had passed but that nobody had fetched yet kept reporting its past due time, so the
    # manager re-armed its timer at once, forever (a busy loop; with a ManualClock a hang).
    clock, sp = make(release_delay_ms=300)
    sp.acquire("m1", [(0, 1)], 100)
    assert sp.acknowledge("m1", [(0, 1, [R])]).ok
    assert sp.next_release_due() == clock.now_ms() + 300
    assert sp.next_fetch_offset() == 2  # held back
    clock.advance(300)
    assert sp.next_release_due() is None
    assert sp.next_fetch_offset() == 0
    assert sp.acquire("m2", [(0, 1)], 100) == [AcquiredRecords(0, 1, 2)]


def test_acquire_rejects_malformed_input() -> None:
    _, sp = make()
    with pytest.raises(ValueError):
        sp.acquire("m1", [(5, 4)], 10)
    with pytest.raises(ValueError):
        sp.acquire("m1", [(0, 4), (3, 6)], 10)
    with pytest.raises(ValueError):
        sp.acquire("", [(0, 4)], 10)
    with pytest.raises(ValueError):
        sp.acquire("m1", [(3, 4)], 10, fetch_offset=3)  # offsets 0..2 never seen
    assert sp.end_offset == -1


def test_per_acquisition_lock_duration() -> None:
    clock, sp = make()
    sp.acquire("m1", [(0, 0)], 1, lock_duration_ms=1000)
    sp.acquire("m1", [(1, 1)], 1)
    clock.advance(1000)
    assert sp.expire_locks() == 1
    assert sp.record_state(0) == (AV, 1, None) and sp.record_state(1) == (AQ, 1, "m1")


# ---------------------------------------------------------------- acknowledge


def test_acknowledge_transitions() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 9)], 100)
    assert sp.acknowledge("m1", [(1, 1, [A]), (2, 2, [R]), (3, 3, [J]), (4, 4, [G])]).ok
    assert states(sp, 1, 4) == [(AK, 1, None), (AV, 1, None), (AR, 1, None), (AR, 1, None)]
    assert sp.start_offset == 0  # offset 0 still acquired
    assert sp.next_fetch_offset() == 2
    assert sp.acknowledge("m1", [(0, 0, [A])]).ok
    assert sp.start_offset == 2


def test_acknowledge_one_type_for_a_range() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 9)], 100)
    assert sp.acknowledge("m1", [(0, 9, [A])]).ok
    assert sp.start_offset == 10 and sp.next_fetch_offset() == 10
    assert sp.to_state() == (10, [])


@pytest.mark.parametrize(
    ("batches", "code"),
    [
        ([(5, 5, [A])], INVALID_RECORD_STATE),  # held by m1, not m2
        ([(3, 3, [A])], INVALID_RECORD_STATE),  # released: AVAILABLE
        ([(4, 4, [A])], INVALID_RECORD_STATE),  # acknowledged already
        ([(20, 20, [A])], INVALID_RECORD_STATE),  # never fetched
        ([(3, 2, [A])], INVALID_REQUEST),
        ([(1, 3, [A, A])], INVALID_REQUEST),
        ([(1, 1, [9])], INVALID_REQUEST),
        ([(1, 2, [A]), (2, 2, [A])], INVALID_REQUEST),
        ([(0, 0, [A])], INVALID_REQUEST),  # overlaps the first range
    ],
)
def test_acknowledge_errors_change_nothing(batches: list[tuple[int, int, list[int]]], code: int) -> None:
    _, sp = make()
    sp.acquire("m2", [(0, 4)], 100)
    sp.acquire("m1", [(5, 9)], 100)
    assert sp.acknowledge("m2", [(3, 3, [R]), (4, 4, [A])]).ok
    before = states(sp, 0, 12)
    result = sp.acknowledge("m2", [(0, 0, [A]), *batches])
    assert result.error_code == code and not result.ok and result.error_message
    assert states(sp, 0, 12) == before  # the valid (0, 0) part was not applied either


def test_acknowledge_negative_offset_is_invalid_request() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 4)], 100)
    assert sp.acknowledge("m1", [(-1, 0, [A])]).error_code == INVALID_REQUEST


def test_acknowledge_below_start_offset_is_invalid_record_state() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 4)], 100)
    assert sp.acknowledge("m1", [(0, 1, [A])]).ok
    assert sp.acknowledge("m1", [(0, 0, [A])]).error_code == INVALID_RECORD_STATE


# ---------------------------------------------------------------- release, expiry, limits


def test_release_member() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 2)], 100)
    sp.acquire("m2", [(3, 5)], 100)
    assert sp.release_member("m1") == 3
    assert states(sp, 0, 3) == [(AV, 1, None)] * 3 + [(AQ, 1, "m2")]
    assert sp.release_member("m1") == 0
    assert sp.next_fetch_offset() == 0


def test_lock_expiry_with_fake_clock() -> None:
    clock, sp = make(record_lock_duration_ms=1000)
    sp.acquire("m1", [(0, 4)], 100)
    clock.advance(500)
    sp.acquire("m2", [(5, 9)], 100)
    assert sp.next_lock_deadline() == clock.now_ms() + 500
    clock.advance(499)
    assert sp.expire_locks() == 0
    clock.advance(1)
    assert sp.expire_locks() == 5
    assert states(sp, 0, 5) == [(AV, 1, None)] * 5 + [(AQ, 1, "m2")]
    assert sp.acknowledge("m1", [(0, 0, [A])]).error_code == INVALID_RECORD_STATE
    assert sp.expire_locks(clock.now_ms() + 500) == 5
    assert sp.next_lock_deadline() is None


def test_delivery_count_limit_archives_on_release_and_expiry() -> None:
    clock, sp = make(delivery_count_limit=2, record_lock_duration_ms=100)
    sp.acquire("m1", [(0, 1)], 100)
    assert sp.acknowledge("m1", [(0, 1, [R])]).ok
    assert sp.acquire("m1", [(0, 1)], 100) == [AcquiredRecords(0, 1, 2)]
    assert sp.acknowledge("m1", [(1, 1, [R])]).ok  # second delivery released: limit reached
    assert sp.record_state(1) == (AR, 2, None)
    assert sp.start_offset == 0
    clock.advance(100)
    assert sp.expire_locks() == 1  # offset 0 timed out on its last delivery
    assert sp.start_offset == 2 and sp.acquire("m2", [(0, 1)], 100) == []


def test_delivery_count_limit_on_member_leave() -> None:
    _, sp = make(delivery_count_limit=2)
    sp.acquire("m1", [(0, 0)], 1)
    sp.release_member("m1")
    sp.acquire("m1", [(0, 0)], 1)
    sp.release_member("m1")
    assert sp.start_offset == 1


def test_restored_count_above_a_lowered_limit_is_archived_not_delivered() -> None:
    clock = ManualClock()
    sp = SharePartition.from_state(clock, 0, [StateBatch(0, 0, AV, 4)], delivery_count_limit=3)
    assert sp.drain_failed() == [(0, 4, "DELIVERY_LIMIT")]  # archived on load: a failure to dead-letter
    assert sp.acquire("m1", [(0, 1)], 10) == [AcquiredRecords(1, 1, 1)]
    assert sp.start_offset == 1


def test_an_acquisition_at_the_limit_is_persisted_available_and_archived_by_the_next_leader() -> None:
    clock = ManualClock()
    sp = SharePartition(clock, 0, delivery_count_limit=2)
    for _ in range(2):
        assert sp.acquire("m1", [(0, 0)], 1) != []
        if sp.record_state(0)[1] < 2:
            assert sp.acknowledge("m1", [(0, 0, [R])]).ok
    start, batches = sp.to_state()
    assert batches == [StateBatch(0, 0, AV, 2)]  # not ARCHIVED: the holder may still accept it
    assert sp.acknowledge("m1", [(0, 0, [A])]).ok
    restored = SharePartition.from_state(clock, start, batches, delivery_count_limit=2)
    assert restored.drain_failed() == [(0, 2, "DELIVERY_LIMIT")]  # the leader failed first
    assert restored.start_offset == 1


# ---------------------------------------------------------------- start offset, log start


def test_start_offset_waits_for_unfinished_prefix() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 9)], 100)
    assert sp.acknowledge("m1", [(3, 9, [A])]).ok
    assert sp.start_offset == 0
    assert sp.acknowledge("m1", [(1, 2, [J])]).ok
    assert sp.start_offset == 0
    assert sp.acknowledge("m1", [(0, 0, [R])]).ok
    assert sp.start_offset == 0 and sp.next_fetch_offset() == 0
    assert sp.acquire("m2", [(0, 9)], 100) == [AcquiredRecords(0, 0, 2)]
    assert sp.acknowledge("m2", [(0, 0, [A])]).ok
    assert sp.start_offset == 10 and sp.end_offset == 9
    assert sp.to_state() == (10, [])


def test_update_log_start_offset() -> None:
    _, sp = make()
    sp.acquire("m1", [(0, 9)], 100)
    assert sp.acknowledge("m1", [(0, 1, [R]), (5, 9, [R])]).ok
    sp.update_log_start_offset(4)
    # 0..1 were AVAILABLE: archived; 2..3 still held by m1.
    assert sp.start_offset == 2
    assert sp.next_fetch_offset() == 5
    assert sp.release_member("m1") == 3  # 2..3 are below the log start: archived; 4 released
    assert sp.start_offset == 4 and sp.record_state(4) == (AV, 1, None)
    sp.update_log_start_offset(20)
    assert sp.start_offset == 20 and sp.end_offset == 19 and sp.next_fetch_offset() == 20


# ---------------------------------------------------------------- persistence, initialization


def test_to_state_merges_and_releases_acquisitions() -> None:
    _, sp = make(start=100, delivery_count_limit=2)
    sp.acquire("m1", [(100, 104), (107, 109)], 100)
    assert sp.acknowledge("m1", [(101, 101, [A]), (102, 102, [R]), (103, 103, [J])]).ok
    sp.acquire("m2", [(102, 102)], 1)  # second delivery of 102 (the limit)
    assert sp.to_state() == (
        100,
        [
            StateBatch(100, 100, AV, 1),  # acquired by m1: persisted released
            StateBatch(101, 101, AK, 1),
            StateBatch(102, 102, AV, 2),  # acquired at the limit: persisted available (archived on load)
            StateBatch(103, 103, AR, 1),
            StateBatch(104, 104, AV, 1),
            StateBatch(105, 106, AR, 0),  # gap
            StateBatch(107, 109, AV, 1),
        ],
    )


def test_persistence_round_trip() -> None:
    clock, sp = make(start=10)
    sp.acquire("m1", [(10, 19), (22, 25)], 100)
    assert sp.acknowledge("m1", [(11, 12, [A]), (13, 13, [R]), (14, 14, [J]), (22, 22, [A])]).ok
    start, batches = sp.to_state()
    restored = SharePartition.from_state(clock, start, batches)
    sp.release_all()
    assert restored.start_offset == sp.start_offset and restored.end_offset == sp.end_offset
    assert states(restored, 10, 30) == states(sp, 10, 30)
    assert restored.next_fetch_offset() == 10 and restored.acquired_count() == 0
    assert restored.to_state() == sp.to_state()


def test_from_state_defaults_and_acquired_batches() -> None:
    clock = ManualClock()
    sp = SharePartition.from_state(
        clock,
        5,
        [StateBatch(7, 8, AK, 1), StateBatch(9, 9, AQ, 3), StateBatch(10, 10, AQ, 1)],
        delivery_count_limit=3,
    )
    assert states(sp, 5, 11) == [
        (AV, 0, None),
        (AV, 0, None),
        (AK, 1, None),
        (AK, 1, None),
        (AR, 3, None),  # acquired at the limit: released means archived
        (AV, 1, None),
        (AV, 0, None),
    ]
    assert sp.end_offset == 10 and sp.next_fetch_offset() == 5
    empty = SharePartition.from_state(clock, 42, [])
    assert (empty.start_offset, empty.end_offset, empty.next_fetch_offset()) == (42, 41, 42)
    done = SharePartition.from_state(clock, 0, [StateBatch(0, 3, AK, 1)])
    assert done.start_offset == 4


@pytest.mark.parametrize(
    "batches",
    [
        [StateBatch(4, 5, AK, 1)],  # below the start offset
        [StateBatch(6, 8, AK, 1), StateBatch(8, 9, AK, 1)],  # overlapping
        [StateBatch(8, 9, AK, 1), StateBatch(6, 7, AK, 1)],  # unordered
        [StateBatch(6, 5, AK, 1)],  # first > last
        [StateBatch(6, 6, 3, 1)],  # unknown state id
        [StateBatch(6, 6, AK, -1)],
    ],
)
def test_from_state_rejects_bad_batches(batches: list[StateBatch]) -> None:
    with pytest.raises(ValueError):
        SharePartition.from_state(ManualClock(), 5, batches)


def test_initial_start_offset() -> None:
    assert initial_start_offset("earliest", 3, 50) == 3
    assert initial_start_offset("latest", 3, 50) == 50
    with pytest.raises(ValueError):
        initial_start_offset("none", 3, 50)
    sp = SharePartition.initial(ManualClock(), "latest", 3, 50, delivery_count_limit=4)
    assert sp.start_offset == 50 and sp.next_fetch_offset() == 50 and sp.delivery_count_limit == 4


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        SharePartition(ManualClock(), -1)
    with pytest.raises(ValueError):
        SharePartition(ManualClock(), 0, delivery_count_limit=0)
    with pytest.raises(ValueError):
        SharePartition(ManualClock(), 0, max_record_locks=0)


# ---------------------------------------------------------------- stateful property test

MEMBERS = ("a", "b", "c")
LIMIT = 3
MAX_LOCKS = 8
LOCK_MS = 1000
LOG_END = 40
FINISHED = (AK, AR)


class SharePartitionMachine(RuleBasedStateMachine):
    """Random acquire/acknowledge/expire/leave/restore against a dict model
    offset -> (state, delivery count, owner, lock deadline)."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(start_ms=0)
        self.sp = SharePartition(
            self.clock,
            0,
            record_lock_duration_ms=LOCK_MS,
            delivery_count_limit=LIMIT,
            max_record_locks=MAX_LOCKS,
        )
        self.model: dict[int, tuple[RecordState, int, str | None, int | None]] = {}
        self.log_batches: list[tuple[int, int]] = []
        self.present: set[int] = set()
        self.last_start = 0

    @initialize(absent=st.sets(st.integers(0, LOG_END - 1), max_size=10), size=st.integers(1, 4))
    def make_log(self, absent: set[int], size: int) -> None:
        self.present = set(range(LOG_END)) - absent
        batch: list[int] = []
        for offset in range(LOG_END + 1):
            if offset in self.present and len(batch) < size:
                batch.append(offset)
                continue
            if batch:
                self.log_batches.append((batch[0], batch[-1]))
            batch = [offset] if offset in self.present else []

    def view(self, offset: int) -> tuple[RecordState, int, str | None]:
        if offset in self.model:
            state, count, owner, _ = self.model[offset]
            return state, count, owner
        if offset not in self.present and offset <= self.sp.end_offset:
            return AR, 0, None
        return AV, 0, None

    def released(self, count: int) -> RecordState:
        return AR if count >= LIMIT else AV

    @rule(member=st.sampled_from(MEMBERS), n_batches=st.integers(0, 4), max_records=st.integers(1, 6))
    def acquire(self, member: str, n_batches: int, max_records: int) -> None:
        fetch_at = self.sp.next_fetch_offset()
        batches = [b for b in self.log_batches if b[1] >= fetch_at][:n_batches]
        before = {o: self.view(o) for o in range(self.sp.start_offset, LOG_END)}
        got = self.sp.acquire(member, batches, max_records)
        offsets: list[int] = []
        for run in got:
            for offset in range(run.first_offset, run.last_offset + 1):
                state, count, _ = before[offset]
                # Only AVAILABLE records in the log: never an ACKNOWLEDGED/ARCHIVED or held one.
                assert state is AV and offset in self.present
                assert run.delivery_count == count + 1 <= LIMIT
                offsets.append(offset)
                self.model[offset] = (AQ, count + 1, member, self.clock.now_ms() + LOCK_MS)
        assert offsets == sorted(set(offsets)) and len(offsets) <= max_records
        if len(offsets) < max_records:
            # Nothing acquirable was left behind, except new offsets beyond a full window.
            for base, last in batches:
                for offset in range(base, last + 1):
                    if offset in before and before[offset][0] is AV and offset not in offsets:
                        assert offset > self.sp.end_offset

    @rule(
        member=st.sampled_from(MEMBERS),
        first=st.integers(0, LOG_END),
        length=st.integers(1, 4),
        kinds=st.lists(st.sampled_from([A, R, J]), min_size=1, max_size=4),
        per_offset=st.booleans(),
    )
    def acknowledge(
        self, member: str, first: int, length: int, kinds: list[AcknowledgeType], per_offset: bool
    ) -> None:
        last = first + length - 1
        types = [kinds[i % len(kinds)] for i in range(length)] if per_offset else kinds[:1]
        valid = first >= self.sp.start_offset and all(
            self.view(o)[0] is AQ and self.view(o)[2] == member for o in range(first, last + 1)
        )
        result = self.sp.acknowledge(member, [(first, last, [int(t) for t in types])])
        assert result.ok == valid
        if not valid:
            assert result.error_code == INVALID_RECORD_STATE
            return
        for i, offset in enumerate(range(first, last + 1)):
            kind = types[i] if per_offset else types[0]
            _, count, _, _ = self.model[offset]
            new = AK if kind is A else AR if kind is J else self.released(count)
            self.model[offset] = (new, count, None, None)

    @rule(ms=st.integers(0, 1500))
    def expire(self, ms: int) -> None:
        self.clock.advance(ms)
        now = self.clock.now_ms()
        expected = 0
        for offset, (state, count, _, deadline) in list(self.model.items()):
            if state is AQ and deadline is not None and deadline <= now:
                self.model[offset] = (self.released(count), count, None, None)
                expected += 1
        assert self.sp.expire_locks() == expected

    @rule(member=st.sampled_from(MEMBERS))
    def leave(self, member: str) -> None:
        self.release_where(lambda owner: owner == member)
        self.sp.release_member(member)

    @precondition(lambda self: bool(self.log_batches))
    @rule()
    def persist_and_restore(self) -> None:
        start, batches = self.sp.to_state()
        assert all(b.delivery_state != AQ and b.first_offset >= start for b in batches)
        assert all(not (b.delivery_state == AV and b.delivery_count == 0) for b in batches)
        self.sp = SharePartition.from_state(
            self.clock,
            start,
            batches,
            record_lock_duration_ms=LOCK_MS,
            delivery_count_limit=LIMIT,
            max_record_locks=MAX_LOCKS,
        )
        self.release_where(lambda owner: True)

    def release_where(self, match: Callable[[str | None], bool]) -> None:
        for offset, (state, count, owner, _) in list(self.model.items()):
            if state is AQ and match(owner):
                self.model[offset] = (self.released(count), count, None, None)

    @invariant()
    def matches_model(self) -> None:
        start = self.sp.start_offset
        for offset in range(start, LOG_END + 2):
            assert self.sp.record_state(offset) == self.view(offset), offset

    @invariant()
    def start_offset_never_passes_an_unfinished_record(self) -> None:
        start = self.sp.start_offset
        assert start >= self.last_start
        self.last_start = start
        for offset in range(start):
            assert self.view(offset)[0] in FINISHED or offset not in self.present
        if self.sp.end_offset >= start:
            assert self.sp.record_state(start)[0] in (AV, AQ)

    @invariant()
    def bounds(self) -> None:
        held = [s for s in self.model.values() if s[0] is AQ]
        assert all(s[1] <= LIMIT for s in self.model.values())
        assert len(held) == self.sp.acquired_count() <= MAX_LOCKS
        assert self.sp.end_offset - self.sp.start_offset + 1 <= MAX_LOCKS
        # One owner per acquired record, and only acquired records have one.
        assert all((s[2] is not None) == (s[0] is AQ) for s in self.model.values())


SharePartitionMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_share_partition_state_machine = SharePartitionMachine.TestCase
