"""The in-memory RaftLog: offsets, the leader-epoch cache, truncation and crash (unflushed loss)."""

from __future__ import annotations

import pytest

from zurau.raft import Entry, InMemoryRaftLog, OffsetAndEpoch


def _log(epochs: list[int]) -> InMemoryRaftLog:
    log = InMemoryRaftLog()
    for epoch in epochs:
        log.append_as_leader(epoch, [b"x"])
    return log


def test_append_assigns_offsets_and_tracks_last_epoch() -> None:
    log = InMemoryRaftLog()
    assert (log.end_offset(), log.last_fetched_epoch()) == (0, 0)
    entries = log.append_as_leader(3, [b"a", b"b"])
    assert [(e.offset, e.epoch, e.payload) for e in entries] == [(0, 3, b"a"), (1, 3, b"b")]
    assert (log.end_offset(), log.last_fetched_epoch()) == (2, 3)


def test_end_offset_for_epoch_is_the_leader_epoch_cache() -> None:
    log = _log([1, 1, 3, 3, 3, 5])
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)  # largest epoch <= 2 is 1
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_truncate_updates_the_epoch_cache_and_flushed_offset() -> None:
    log = _log([1, 1, 3, 3])
    log.flush()
    log.truncate_to(2)
    assert log.end_offset() == 2 and log.flushed_offset() == 2
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)
    assert log.last_fetched_epoch() == 1


def test_crash_loses_only_the_unflushed_suffix() -> None:
    log = _log([1, 1])
    log.flush()
    log.append_as_leader(1, [b"late"])
    log.crash()
    assert log.end_offset() == 2


def test_follower_append_must_continue_the_log_and_not_lower_the_epoch() -> None:
    log = _log([2])
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(5, 2, b"gap")])
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(1, 1, b"older epoch")])
    log.append_as_follower([Entry(1, 2, b"ok")])
    assert log.end_offset() == 2


# ------------------------------------------------------------------ snapshots (KIP-630)


def test_a_snapshot_is_stored_at_an_entry_boundary_with_the_epoch_below_it() -> None:
    log = _log([1, 1, 2, 2, 3])
    assert log.latest_snapshot() is None and log.start_offset() == 0
    log.create_snapshot(OffsetAndEpoch(3, 2), b"state-3")
    assert log.latest_snapshot() == OffsetAndEpoch(3, 2)
    assert log.snapshot_size(OffsetAndEpoch(3, 2)) == 7
    assert log.read_snapshot(OffsetAndEpoch(3, 2), 2, 3) == b"ate"
    assert log.read_snapshot(OffsetAndEpoch(3, 2), 7, 3) == b""  # at the end: nothing
    log.create_snapshot(OffsetAndEpoch(3, 2), b"other")  # the same id again: kept as it was
    assert log.read_snapshot(OffsetAndEpoch(3, 2), 0, 100) == b"state-3"
    with pytest.raises(ValueError):
        log.create_snapshot(OffsetAndEpoch(3, 1), b"x")  # entry 2 has epoch 2
    with pytest.raises(ValueError):
        log.create_snapshot(OffsetAndEpoch(6, 3), b"x")  # beyond the log end
    with pytest.raises(KeyError):
        log.snapshot_size(OffsetAndEpoch(2, 1))
    with pytest.raises(KeyError):
        log.read_snapshot(OffsetAndEpoch(2, 1), 0, 1)
    with pytest.raises(ValueError):
        log.read_snapshot(OffsetAndEpoch(3, 2), -1, 1)


def test_delete_before_keeps_offsets_absolute_and_the_base_epoch() -> None:
    log = _log([1, 1, 2, 2, 3])  # offsets 0..4
    log.flush()
    with pytest.raises(ValueError):
        log.delete_before(2)  # no snapshot yet
    log.create_snapshot(OffsetAndEpoch(2, 1), b"s2")
    log.create_snapshot(OffsetAndEpoch(3, 2), b"s3")
    with pytest.raises(ValueError):
        log.delete_before(4)  # above the latest snapshot
    log.delete_before(3)
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (3, 5, 3)
    assert log.snapshots() == [OffsetAndEpoch(3, 2)]  # the older snapshot went with the prefix
    assert [e.offset for e in log.read(3, 10)] == [3, 4] and log.entry(3).epoch == 2
    with pytest.raises(ValueError):
        log.read(2, 1)
    with pytest.raises(ValueError):
        log.entry(2)
    with pytest.raises(ValueError):
        log.truncate_to(2)
    # The epoch straddling the start (2) is still known; older epochs answer (start, base epoch).
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(4, 2)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 2)
    assert log.end_offset_for_epoch(-1) == OffsetAndEpoch(3, 2)
    assert log.end_offset_for_epoch(7) == OffsetAndEpoch(5, 3)
    log.truncate_to(3)  # down to the start: empty, last epoch = the base epoch
    assert (log.end_offset(), log.last_fetched_epoch(), log.flushed_offset()) == (3, 2, 3)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(3, 2)
    log.append_as_follower([Entry(3, 4, b"y")])
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 2)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(4, 4)


def test_delete_before_an_epoch_boundary_and_of_the_whole_log() -> None:
    log = _log([1, 1, 2, 2])
    log.create_snapshot(OffsetAndEpoch(2, 1), b"s")
    log.delete_before(2)  # the first entry left starts epoch 2; the base epoch is 1
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(4, 2)
    log.create_snapshot(OffsetAndEpoch(4, 2), b"s4")
    log.delete_before(4)
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (4, 4, 2)
    assert log.entries() == [] and log.end_offset_for_epoch(5) == OffsetAndEpoch(4, 2)
    appended = log.append_as_leader(5, [b"z"])
    assert appended[0].offset == 4 and log.end_offset_for_epoch(4) == OffsetAndEpoch(4, 2)


def test_install_snapshot_restarts_the_log_empty_at_the_snapshot() -> None:
    log = _log([1, 1, 1])
    log.flush()
    log.install_snapshot(OffsetAndEpoch(10, 4), b"leader's state")
    assert (log.start_offset(), log.end_offset(), log.flushed_offset()) == (10, 10, 10)
    assert log.last_fetched_epoch() == 4 and log.entries() == []
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(10, 4)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(10, 4)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(10, 4)
    assert log.latest_snapshot() == OffsetAndEpoch(10, 4)
    log.append_as_follower([Entry(10, 5, b"next")])
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(10, 4)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(11, 5)
    with pytest.raises(ValueError):
        log.install_snapshot(OffsetAndEpoch(8, 4), b"older")
    with pytest.raises(ValueError):
        log.append_as_follower([Entry(12, 5, b"gap")])


def test_crash_keeps_snapshots_and_restarts_at_one_beyond_the_durable_log() -> None:
    log = _log([1, 1, 1, 1])
    log.flush()
    log.append_as_leader(2, [b"a", b"b"])  # offsets 4, 5: not durable
    log.create_snapshot(OffsetAndEpoch(5, 2), b"state-5")  # committed elsewhere, snapshotted here
    log.crash()
    # The snapshot survives; the log lost what it covers beyond offset 4, so it restarts at it.
    assert log.latest_snapshot() == OffsetAndEpoch(5, 2)
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (5, 5, 2)

    log = _log([1, 1, 1, 1])
    log.flush()
    log.create_snapshot(OffsetAndEpoch(2, 1), b"state-2")
    log.delete_before(2)
    log.append_as_leader(1, [b"lost"])
    log.crash()
    assert (log.start_offset(), log.end_offset(), log.latest_snapshot()) == (2, 4, OffsetAndEpoch(2, 1))
