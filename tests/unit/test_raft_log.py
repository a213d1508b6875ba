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
