"""Transactional offset commits in the group coordinator: pending until the producer's marker.

TxnOffsetCommit writes a transactional batch; its offsets are invisible to OffsetFetch (and
UNSTABLE_OFFSET_COMMIT with require_stable) until the transaction's COMMIT marker reaches the
group's ``__consumer_offsets`` partition, and dropped by an ABORT marker. A restart rebuilds the
same state from the log, markers included.
"""

from __future__ import annotations

from typing import Any

from tests.unit.group_driver import Driver
from tests.unit.test_group_coordinator import G, stable_group
from zurau.coordinator.group.records import TransactionalRecord
from zurau.coordinator.group.results import OffsetCommitEntry
from zurau.protocol import errors as E

PID, PID2 = 4000, 4001


def txn_commit(
    d: Driver,
    offsets: dict[tuple[str, int], int],
    *,
    group: str = G,
    pid: int = PID,
    member_id: str = "",
    generation: int = -1,
    instance: str | None = None,
    metadata: str = "",
) -> dict[Any, int]:
    t = d.call(
        "commit_txn_offsets",
        group_id=group,
        producer_id=pid,
        producer_epoch=2,
        member_id=member_id,
        generation_id=generation,
        group_instance_id=instance,
        offsets=[OffsetCommitEntry(tp[0], tp[1], o, -1, metadata) for tp, o in offsets.items()],
    )
    return d.reply(t)


def stable_fetch(
    d: Driver, group: str = G, partitions: tuple[int, ...] = (0, 1)
) -> dict[int, tuple[int, int]]:
    r = d.core.fetch_offsets(group, [("t", list(partitions))], require_stable=True)
    assert r.error_code == 0
    return {f.partition: (f.offset, f.error_code) for f in r.topics[0][1]}


def test_txn_offsets_are_pending_until_the_commit_marker() -> None:
    d = Driver()
    assert txn_commit(d, {("t", 0): 5, ("t", 1): 6}) == {("t", 0): 0, ("t", 1): 0}
    assert [type(r) for r in d.log] == [TransactionalRecord, TransactionalRecord]
    assert {r.producer_id for r in d.log} == {PID}  # type: ignore[union-attr]
    assert d.committed(G)[0] == -1
    unstable = E.UnstableOffsetCommitError.code
    assert stable_fetch(d) == {0: (-1, unstable), 1: (-1, unstable)}
    assert d.core.has_pending_offsets(G, ("t", 0)) and not d.core.has_pending_offsets(G, ("t", 2))
    d.marker(PID, G, commit=True)
    assert stable_fetch(d) == {0: (5, 0), 1: (6, 0)}
    assert not d.core.has_pending_offsets(G)


def test_abort_marker_drops_the_pending_offsets() -> None:
    d = Driver()
    assert d.commit(G, {("t", 0): 3}) == {("t", 0): 0}
    txn_commit(d, {("t", 0): 9})
    assert d.committed(G)[0] == 3  # without require_stable: the last committed offset
    d.marker(PID, G, commit=False)
    assert stable_fetch(d, partitions=(0,)) == {0: (3, 0)}


def test_a_marker_of_another_partition_or_producer_changes_nothing() -> None:
    d = Driver()
    txn_commit(d, {("t", 0): 9})
    other_group = next(
        g for g in (f"g{i}" for i in range(100)) if d.core.partition_for(g) != d.core.partition_for(G)
    )
    d.marker(PID, other_group, commit=True)
    d.marker(PID2, G, commit=True)
    assert d.core.has_pending_offsets(G, ("t", 0))


def test_newer_commits_win_over_an_older_pending_one() -> None:
    d = Driver()
    txn_commit(d, {("t", 0): 5, ("t", 1): 5})
    assert d.commit(G, {("t", 0): 7}) == {("t", 0): 0}  # a plain commit after the txn's record
    d.marker(PID, G, commit=True)
    assert stable_fetch(d) == {0: (7, 0), 1: (5, 0)}
    # Two transactions: the one whose record came later wins, whichever commits first.
    txn_commit(d, {("t", 0): 20}, pid=PID)
    txn_commit(d, {("t", 0): 30}, pid=PID2)
    d.marker(PID2, G, commit=True)
    d.marker(PID, G, commit=True)
    assert stable_fetch(d, partitions=(0,)) == {0: (30, 0)}
    txn_commit(d, {("t", 0): 40}, pid=PID)
    txn_commit(d, {("t", 0): 50}, pid=PID2)
    d.marker(PID, G, commit=True)
    assert d.committed(G)[0] == 40
    d.marker(PID2, G, commit=True)
    assert d.committed(G)[0] == 50


def test_rebuild_replays_pending_offsets_and_markers() -> None:
    d = Driver()
    txn_commit(d, {("t", 0): 5})
    d.marker(PID, G, commit=True)
    txn_commit(d, {("t", 0): 8})
    d.marker(PID, G, commit=False)
    txn_commit(d, {("t", 1): 11}, pid=PID2)  # still open at the "crash"
    d.core = d.rebuild()
    assert stable_fetch(d) == {0: (5, 0), 1: (-1, E.UnstableOffsetCommitError.code)}
    d.marker(PID2, G, commit=True)  # the transaction coordinator completes it after the restart
    assert stable_fetch(d) == {0: (5, 0), 1: (11, 0)}


def test_txn_commit_group_checks() -> None:
    d = Driver()
    # A group nobody is in: fine without a generation, refused with one.
    assert txn_commit(d, {("t", 0): 1}, group="simple") == {("t", 0): 0}
    assert txn_commit(d, {("t", 0): 1}, group="absent", generation=3) == {
        ("t", 0): E.IllegalGenerationError.code
    }
    (a, b), gen = stable_group(d, 2)
    # Older clients send no member id or generation: accepted even though the group has members.
    assert txn_commit(d, {("t", 0): 1}) == {("t", 0): 0}
    assert txn_commit(d, {("t", 0): 1}, member_id=a, generation=gen) == {("t", 0): 0}
    assert txn_commit(d, {("t", 0): 1}, member_id=a, generation=gen + 1) == {
        ("t", 0): E.IllegalGenerationError.code
    }
    assert txn_commit(d, {("t", 0): 1}, member_id="stranger", generation=gen) == {
        ("t", 0): E.UnknownMemberIdError.code
    }
    assert txn_commit(d, {("t", 0): 1}, metadata="x" * 5000) == {("t", 0): E.OffsetMetadataTooLargeError.code}


def test_txn_commit_write_errors_pass_through() -> None:
    d = Driver()
    d.fail_writes = E.InvalidProducerEpochError("fenced")
    assert txn_commit(d, {("t", 0): 1}) == {("t", 0): E.InvalidProducerEpochError.code}
    d.fail_writes = E.NotEnoughReplicasError("verifying")
    assert txn_commit(d, {("t", 0): 1}) == {("t", 0): E.CoordinatorNotAvailableError.code}
    assert not d.core.has_pending_offsets(G)


def test_retention_keeps_offsets_a_transaction_is_about_to_replace() -> None:
    d = Driver(offsets_retention_ms=10_000, offsets_retention_check_interval_ms=1_000)
    assert d.commit("simple", {("t", 0): 3}) == {("t", 0): 0}
    txn_commit(d, {("t", 0): 4}, group="simple")
    d.advance(20_000)
    assert d.committed("simple")[0] == 3 and "simple" in d.core.groups
    d.marker(PID, "simple", commit=True)
    assert d.committed("simple")[0] == 4
