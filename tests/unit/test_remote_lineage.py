"""The pure decisions of the remote log manager: epoch lineage, the highest remote offset, epoch
clipping and the retention plan."""

from __future__ import annotations

import uuid

from tests.unit.tiered_fakes import TIP, S
from zurau.replication.tiered.remote_lineage import (
    cache_ranges,
    clip_epochs,
    highest_remote_offset,
    in_lineage,
)
from zurau.replication.tiered.remote_retention import plan_remote_retention
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.remote.remote_log_segment import RemoteLogSegmentId, RemoteLogSegmentMetadata


def seg(
    start: int,
    end: int,
    epochs: tuple[tuple[int, int], ...],
    *,
    state: S = S.COPY_SEGMENT_FINISHED,
    ts: int = 0,
) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(
        RemoteLogSegmentId(TIP, uuid.uuid4()), start, end, ts, 0, 0, 100, epochs, state=state
    )


# The leader's cache: epoch 0 from 0, epoch 2 from 10; log end 30.
LINEAGE = cache_ranges([EpochEntry(0, 0), EpochEntry(2, 10)], 30)


def test_lineage_excludes_a_branch_cut_off_by_an_unclean_election() -> None:
    assert LINEAGE == {0: (0, 9), 2: (10, 29)}
    assert in_lineage(seg(0, 9, ((0, 0),)), LINEAGE)
    assert in_lineage(seg(5, 14, ((0, 5), (2, 10))), LINEAGE)
    assert not in_lineage(seg(5, 14, ((0, 5), (1, 10))), LINEAGE)  # epoch 1's records are not ours
    assert not in_lineage(seg(5, 14, ((0, 5), (2, 12))), LINEAGE)  # epoch 2 started elsewhere
    assert not in_lineage(seg(0, 12, ((0, 0),)), LINEAGE)  # epoch 0 ran longer on that branch


def test_highest_remote_offset_caps_each_epoch_at_the_lineage() -> None:
    assert highest_remote_offset([], LINEAGE) == -1
    segs = [
        seg(0, 9, ((0, 0),)),
        seg(10, 19, ((2, 10),)),
        seg(20, 24, ((2, 20),), state=S.COPY_SEGMENT_STARTED),
    ]
    assert highest_remote_offset(segs, LINEAGE) == 19  # a started upload is not remote yet
    assert highest_remote_offset([seg(0, 14, ((0, 0),))], LINEAGE) == 9  # a longer epoch 0 elsewhere


def test_clip_epochs_to_a_segment() -> None:
    entries = [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 25)]
    assert clip_epochs(entries, 5, 14) == ((0, 5), (2, 10))
    assert clip_epochs(entries, 10, 24) == ((2, 10),)
    assert clip_epochs(entries, 12, 30) == ((2, 12), (3, 25))
    assert clip_epochs([EpochEntry(4, 20)], 10, 24) == ()  # no entry covers the start


def test_retention_plan_orders_leftovers_log_start_and_expired_prefix() -> None:
    a = seg(0, 4, ((0, 0),), ts=100)
    b = seg(5, 9, ((0, 5),), ts=200)
    c = seg(10, 14, ((2, 10),), ts=100)  # old but after a young one: the expired run stops at b
    started = seg(15, 19, ((2, 15),), state=S.COPY_SEGMENT_STARTED)
    copying = seg(15, 19, ((2, 15),), state=S.COPY_SEGMENT_STARTED)
    branch = seg(10, 14, ((1, 10),), ts=0)
    plan = plan_remote_retention(
        [c, b, a, started, copying, branch],
        lineage=LINEAGE,
        log_start_offset=5,
        only_local_size=0,
        retention_ms=850,
        retention_bytes=-1,
        now_ms=1000,
        copying={copying.segment_id.id},
    )
    assert plan.leftovers == [started]
    assert plan.below_log_start == [a]
    assert plan.expired == []  # b (ts 200) is not expired at cut-off 150: c waits behind it
    assert plan.new_log_start_offset is None
    assert plan.remote_size_after == 200  # b and c; the branch never counts
    plan = plan_remote_retention(
        [a, b, c],
        lineage=LINEAGE,
        log_start_offset=0,
        only_local_size=150,
        retention_ms=-1,
        retention_bytes=300,
        now_ms=1000,
    )
    assert plan.expired == [a] and plan.new_log_start_offset == 5  # 450 bytes: one segment over
