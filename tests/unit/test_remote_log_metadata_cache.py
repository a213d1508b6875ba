"""The remote log metadata cache of one partition: Kafka's state machine and leader-epoch indexes,
strict on the write path, forgiving on replay, and equal to a brute-force recomputation for any
valid sequence of events (hypothesis)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zurau.storage.remote.remote_log_metadata_cache import RemoteLogMetadataCache
from zurau.storage.remote.remote_log_metadata_records import (
    RemoteLogMetadataEvent,
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata,
)
from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.types import TopicIdPartition

S = RemoteLogSegmentState
P = RemotePartitionDeleteState
TIP = TopicIdPartition(uuid.UUID(int=7), "t", 0)
OTHER = TopicIdPartition(uuid.UUID(int=8), "u", 0)


def seg(
    start: int,
    end: int,
    epochs: tuple[tuple[int, int], ...] | None = None,
    size: int = 10,
    sid: RemoteLogSegmentId | None = None,
) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(
        segment_id=sid or RemoteLogSegmentId.generate(TIP),
        start_offset=start,
        end_offset=end,
        max_timestamp_ms=end,
        broker_id=1,
        event_timestamp_ms=0,
        segment_size_in_bytes=size,
        segment_leader_epochs=epochs or ((0, start),),
    )


def to(m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> RemoteLogSegmentMetadata:
    return m.with_state(state, event_timestamp_ms=1, broker_id=2)


def copied(cache: RemoteLogMetadataCache, m: RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadata:
    cache.add_segment(m)
    done = to(m, S.COPY_SEGMENT_FINISHED)
    cache.update_segment(done)
    return done


def test_segments_are_found_by_epoch_and_offset_once_copied() -> None:
    cache = RemoteLogMetadataCache(TIP)
    a = seg(0, 99, ((0, 0), (2, 50)), size=100)
    cache.add_segment(a)
    assert cache.segment_for(0, 10) is None  # still copying: not data
    assert cache.list_segments() == (a,) and cache.remote_size() == 0
    assert cache.highest_offset_for_epoch(5) is None
    a = to(a, S.COPY_SEGMENT_FINISHED)
    cache.update_segment(a)
    b = copied(cache, seg(100, 149, ((2, 100), (3, 120)), size=50))
    assert cache.segment_for(0, 49) == a
    assert cache.segment_for(0, 50) is None  # offset 50 is a record of epoch 2
    assert cache.segment_for(2, 50) == a and cache.segment_for(2, 119) == b
    assert cache.segment_for(3, 119) is None and cache.segment_for(3, 149) == b
    assert cache.segment_for(3, 150) is None and cache.segment_for(1, 10) is None
    assert cache.highest_offset_in_epoch(2) == 119 and cache.highest_offset_in_epoch(1) is None
    assert [cache.highest_offset_for_epoch(e) for e in (0, 1, 2, 3, 9)] == [49, 49, 119, 149, 149]
    assert cache.remote_size() == 150
    assert [m.start_offset for m in cache.segments_for_epoch(2)] == [0, 100]

    b_deleting = to(b, S.DELETE_SEGMENT_STARTED)
    cache.update_segment(b_deleting)
    assert cache.segment_for(3, 149) is None and cache.remote_size() == 100
    assert cache.list_segments() == (a, b_deleting)
    assert cache.segments_for_epoch(3) == [b_deleting]  # unreferenced, still listed for cleanup
    assert cache.highest_offset_for_epoch(3) == 149  # what was copied once is not copied again
    cache.update_segment(to(b_deleting, S.DELETE_SEGMENT_FINISHED))
    assert cache.list_segments() == (a,) and cache.segments_for_epoch(3) == []


def test_the_write_path_refuses_invalid_events_and_changes_nothing() -> None:
    cache = RemoteLogMetadataCache(TIP)
    a = seg(0, 9)
    with pytest.raises(ValueError, match="must be COPY_SEGMENT_STARTED"):
        cache.add_segment(to(a, S.COPY_SEGMENT_FINISHED))
    with pytest.raises(ValueError, match="no remote segment"):
        cache.update_segment(to(a, S.COPY_SEGMENT_FINISHED))
    with pytest.raises(ValueError, match="given to the cache of"):
        cache.add_segment(seg(0, 9, sid=RemoteLogSegmentId.generate(OTHER)))
    cache.add_segment(a)
    with pytest.raises(ValueError, match="already known"):
        cache.add_segment(a)
    with pytest.raises(ValueError, match="COPY_SEGMENT_STARTED may not become DELETE_SEGMENT_FINISHED"):
        cache.update_segment(
            RemoteLogSegmentMetadataUpdate(a.segment_id, 1, None, S.DELETE_SEGMENT_FINISHED, 1)
        )
    with pytest.raises(ValueError, match="may not become COPY_SEGMENT_STARTED"):
        cache.update_segment(RemoteLogSegmentMetadataUpdate(a.segment_id, 1, None, S.COPY_SEGMENT_STARTED, 1))
    assert cache.list_segments() == (a,)

    cache.put_partition_delete(RemotePartitionDeleteMetadata(TIP, P.DELETE_PARTITION_STARTED, 1, 1))
    with pytest.raises(ValueError, match="may not go back"):
        cache.put_partition_delete(RemotePartitionDeleteMetadata(TIP, P.DELETE_PARTITION_MARKED, 2, 1))
    cache.put_partition_delete(
        RemotePartitionDeleteMetadata(TIP, P.DELETE_PARTITION_STARTED, 3, 1)
    )  # a retry
    cache.update_segment(to(a, S.DELETE_SEGMENT_STARTED))  # deleting goes on meanwhile
    cache.put_partition_delete(RemotePartitionDeleteMetadata(TIP, P.DELETE_PARTITION_FINISHED, 4, 1))
    assert cache.list_segments() == () and cache.partition_delete_state == P.DELETE_PARTITION_FINISHED
    with pytest.raises(ValueError, match="was deleted"):
        cache.add_segment(seg(10, 19))


def test_replay_ignores_invalid_events_with_a_warning_and_accepts_retried_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = RemoteLogMetadataCache(TIP)
    cache.initialized = True
    a = seg(0, 9)
    caplog.set_level(logging.WARNING)
    assert not cache.replay(RemoteLogSegmentMetadataUpdate(a.segment_id, 1, None, S.COPY_SEGMENT_FINISHED, 1))
    assert "unknown segment" in caplog.text
    assert not cache.replay(to(a, S.COPY_SEGMENT_FINISHED))  # an add must be COPY_SEGMENT_STARTED
    assert not cache.replay(seg(0, 9, sid=RemoteLogSegmentId.generate(OTHER)))
    assert cache.replay(a)
    assert cache.replay(a)  # a retried publish (Kafka: a self transition is valid)
    done = to(a, S.COPY_SEGMENT_FINISHED)
    assert cache.replay(RemoteLogSegmentMetadataUpdate.of(done))
    assert cache.replay(RemoteLogSegmentMetadataUpdate.of(done))
    assert cache.remote_size() == 10 and cache.segment_for(0, 5) == done
    assert not cache.replay(a)  # back to COPY_SEGMENT_STARTED
    assert not cache.replay(
        RemoteLogSegmentMetadataUpdate(a.segment_id, 1, None, S.DELETE_SEGMENT_FINISHED, 1)
    )
    assert not cache.replay(
        RemoteLogSegmentMetadataSnapshot(uuid.uuid4(), 0, 9, 0, 1, 0, 1, ((0, 0),), S.COPY_SEGMENT_STARTED)
    )
    assert cache.list_segments() == (done,) and cache.remote_size() == 10
    assert cache.replay(RemotePartitionDeleteMetadata(TIP, P.DELETE_PARTITION_FINISHED, 1, 1))
    assert not cache.replay(seg(10, 19))
    assert cache.list_segments() == ()


def test_an_unknown_segment_before_initialization_is_dropped_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    cache = RemoteLogMetadataCache(TIP)
    assert not cache.replay(
        RemoteLogSegmentMetadataUpdate(RemoteLogSegmentId.generate(TIP), 1, None, S.COPY_SEGMENT_FINISHED, 1)
    )
    assert caplog.text == ""


def test_a_new_leader_copying_a_covering_segment_replaces_the_old_leaders_segments() -> None:
    """Kafka's overlapping uploads: the old leader copied [0, 49] and [50, 99] of epoch 0; the new
    leader (behind) copies [0, 120] of epochs 0 and 1. Lookups go to the covering segment; the old
    ones stay listed (unreferenced) until deleted."""
    cache = RemoteLogMetadataCache(TIP)
    a = copied(cache, seg(0, 49))
    b = copied(cache, seg(50, 99))
    c = copied(cache, seg(0, 120, ((0, 0), (1, 110))))
    assert cache.segment_for(0, 10) == c and cache.segment_for(0, 60) == c and cache.segment_for(1, 115) == c
    assert {m.segment_id for m in cache.segments_for_epoch(0)} == {a.segment_id, b.segment_id, c.segment_id}
    assert cache.remote_size() == 30  # all three are COPY_SEGMENT_FINISHED
    # A segment that ends before the epoch's highest offset does not replace the later entries.
    d = copied(cache, seg(0, 20))
    assert cache.segment_for(0, 10) == d and cache.segment_for(0, 60) is None
    assert cache.highest_offset_in_epoch(0) == 109


# ---------------------------------------------------------------------------------- the property


@dataclass
class Model:
    """The brute-force truth: every segment's history of states."""

    segments: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = field(default_factory=dict)
    ever_finished: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = field(default_factory=dict)

    def live(self) -> list[RemoteLogSegmentMetadata]:
        return [m for m in self.segments.values() if m.state != S.DELETE_SEGMENT_FINISHED]

    def finished(self) -> list[RemoteLogSegmentMetadata]:
        return [m for m in self.segments.values() if m.state == S.COPY_SEGMENT_FINISHED]

    def segment_for(self, epoch: int, offset: int) -> RemoteLogSegmentMetadata | None:
        found = [m for m in self.finished() if m.epoch_of(offset) == epoch]
        assert len(found) <= 1
        return found[0] if found else None

    def highest_offset_for_epoch(self, epoch: int) -> int | None:
        ends = [
            o
            for m in self.ever_finished.values()
            for o in range(m.start_offset, m.end_offset + 1)
            if (e := m.epoch_of(o)) is not None and e <= epoch
        ]
        return max(ends) if ends else None


@st.composite
def histories(draw: st.DrawFn) -> list[RemoteLogMetadataEvent]:
    """A lineage cut into segments; each slot is uploaded by attempts (all but the last abandoned),
    the slots' events interleaved at random, in a valid order per segment."""
    n_slots = draw(st.integers(1, 6))
    bounds = [0]
    for _ in range(n_slots):
        bounds.append(bounds[-1] + draw(st.integers(1, 12)))
    changes = (
        sorted(set(draw(st.lists(st.integers(1, bounds[-1] - 1), max_size=4)))) if bounds[-1] > 1 else []
    )
    epoch_starts = [(0, 0)] + [(i + 1, o) for i, o in enumerate(changes)]
    epoch_at = {o: max(e for e, s in epoch_starts if s <= o) for o in range(bounds[-1])}
    queues: list[list[RemoteLogMetadataEvent]] = []
    for start, nxt in zip(bounds, bounds[1:], strict=False):
        end = nxt - 1
        epochs: list[tuple[int, int]] = []
        for o in range(start, end + 1):
            if not epochs or epochs[-1][0] != epoch_at[o]:
                epochs.append((epoch_at[o], o))
        events: list[RemoteLogMetadataEvent] = []
        attempts = draw(st.integers(1, 3))
        for i in range(attempts):
            m = seg(start, end, tuple(epochs), size=draw(st.integers(1, 1000)))
            events.append(m)
            last = i == attempts - 1
            path = (
                draw(
                    st.sampled_from(
                        [
                            [],
                            [S.COPY_SEGMENT_FINISHED],
                            [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED],
                            [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED],
                            [S.DELETE_SEGMENT_STARTED],
                        ]
                    )
                )
                if last
                else [S.DELETE_SEGMENT_STARTED] + draw(st.sampled_from([[], [S.DELETE_SEGMENT_FINISHED]]))
            )
            for state in path:
                m = to(m, state)
                events.append(RemoteLogSegmentMetadataUpdate.of(m))
        queues.append(events)
    out: list[RemoteLogMetadataEvent] = []
    while any(queues):
        q = draw(st.sampled_from([q for q in queues if q]))
        out.append(q.pop(0))
    return out


def check(cache: RemoteLogMetadataCache, model: Model, max_offset: int) -> None:
    live = model.live()
    assert sorted(cache.list_segments(), key=lambda m: m.segment_id.id.int) == sorted(
        live, key=lambda m: m.segment_id.id.int
    )
    starts = [m.start_offset for m in cache.list_segments()]
    assert starts == sorted(starts)
    assert cache.remote_size() == sum(m.segment_size_in_bytes for m in model.finished())
    epochs = {e for m in model.segments.values() for e, _ in m.segment_leader_epochs}
    for epoch in epochs | {max(epochs, default=0) + 1}:
        assert cache.highest_offset_for_epoch(epoch) == model.highest_offset_for_epoch(epoch)
        assert {m.segment_id for m in cache.segments_for_epoch(epoch)} == {
            m.segment_id for m in live if epoch in dict(m.segment_leader_epochs)
        }
        for offset in range(max_offset + 2):
            assert cache.segment_for(epoch, offset) == model.segment_for(epoch, offset), (epoch, offset)


@settings(max_examples=60, deadline=None)
@given(histories(), st.booleans(), st.data())
def test_any_valid_history_keeps_the_indexes_equal_to_a_brute_force_recomputation(
    events: list[RemoteLogMetadataEvent], replay: bool, data: st.DataObject
) -> None:
    cache = RemoteLogMetadataCache(TIP)
    model = Model()
    max_offset = max(m.end_offset for m in events if isinstance(m, RemoteLogSegmentMetadata))
    for event in events:
        if replay:
            assert cache.replay(event)
        elif isinstance(event, RemoteLogSegmentMetadata):
            cache.add_segment(event)
        else:
            assert isinstance(event, RemoteLogSegmentMetadataUpdate)
            cache.update_segment(event)
        if isinstance(event, RemoteLogSegmentMetadata):
            model.segments[event.segment_id] = event
        else:
            assert isinstance(event, RemoteLogSegmentMetadataUpdate)
            old = model.segments[event.segment_id]
            model.segments[event.segment_id] = to(old, event.state)
            if event.state == S.COPY_SEGMENT_FINISHED:
                model.ever_finished[event.segment_id] = old
        # An invalid event on the way changes nothing (refused on write, ignored on replay).
        victim = data.draw(st.sampled_from(list(model.segments.values())))
        bad = next((s for s in S if s != victim.state and not victim.state.may_become(s)), None)
        if bad is not None and bad != S.COPY_SEGMENT_STARTED:
            bad_event = RemoteLogSegmentMetadataUpdate(victim.segment_id, 9, None, bad, 9)
            if replay:
                assert not cache.replay(bad_event)
            else:
                with pytest.raises(ValueError):
                    cache.update_segment(bad_event)
        check(cache, model, max_offset)
