"""A follower's start beyond the leader's local log start (Kafka's OFFSET_MOVED_TO_TIERED_STORAGE
path, ``ReplicaFetcherTierStateMachine.buildRemoteLogAuxState``).

When a follower's fetch offset is below the leader's *local* log start, the leader answers
OFFSET_MOVED_TO_TIERED_STORAGE; the records below are in the remote tier and the follower does not
copy them. It asks the leader for its local log start offset and that offset's leader epoch
(ListOffsets EARLIEST_LOCAL_TIMESTAMP), and :func:`build_remote_log_aux_state` finds, in the remote
log metadata, the remote segment holding ``local_start - 1`` and fetches that segment's
leader-epoch checkpoint and producer-state snapshot. The follower then:

1. truncates its log fully and starts it at :attr:`RemoteLogAuxState.next_offset` (the segment's
   end offset + 1, which is the leader's local log start when segments line up, as they do: local
   segments are deleted only once copied),
2. sets its log start offset to the leader's (``leader_log_start_offset``, passed through),
3. assigns :attr:`RemoteLogAuxState.leader_epochs` to its leader-epoch cache,
4. writes :attr:`RemoteLogAuxState.producer_snapshot` as the producer snapshot of ``next_offset``
   (``%020d.snapshot``) and reloads its producer state from it,
5. fetches from ``next_offset``.

The replica fetchers get this as their ``tier_bootstrap`` through :func:`remote_tier_bootstrap`.

The epoch to look the offset up under is Kafka's: the leader's epoch of its local start, unless an
earlier epoch ends after ``local_start - 1`` (a gap of epochs without records); the leader answers
that through OffsetForLeaderEpoch, handed in as ``earlier_epoch_end``. Without it (or when the
metadata has no segment under that epoch) the segments holding the offset are scanned and the one
of the highest epoch not above the leader's wins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import NamedTuple

from zurau.protocol.errors import KafkaStorageError
from zurau.replication.replica_fetcher import EarlierEpochEnd, TierBootstrap
from zurau.storage.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    parse_leader_epoch_checkpoint,
)
from zurau.storage.remote.remote_log_metadata_manager import RemoteLogMetadataManager
from zurau.storage.remote.remote_log_segment import IndexType, RemoteLogSegmentMetadata, RemoteLogSegmentState
from zurau.storage.remote.remote_storage_manager import RemoteStorageError, RemoteStorageManager
from zurau.types import TopicIdPartition


class RemoteLogAuxState(NamedTuple):
    """What a follower needs to start at :attr:`next_offset` (see the module docstring)."""

    segment: RemoteLogSegmentMetadata
    next_offset: int
    leader_log_start_offset: int
    leader_epochs: list[EpochEntry]
    producer_snapshot: bytes


def _segment_holding(
    rlmm: RemoteLogMetadataManager, tip: TopicIdPartition, epoch: int, offset: int
) -> RemoteLogSegmentMetadata | None:
    seg = rlmm.segment_for(tip, epoch, offset)
    if seg is not None and seg.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
        return seg
    best: tuple[int, RemoteLogSegmentMetadata] | None = None
    for s in rlmm.list_segments(tip):
        if s.state is not RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
            continue
        e = s.epoch_of(offset)
        if e is not None and e <= epoch and (best is None or e > best[0]):
            best = (e, s)
    return best[1] if best else None


def _fetch_aux(rsm: RemoteStorageManager, seg: RemoteLogSegmentMetadata) -> tuple[list[EpochEntry], bytes]:
    """(worker thread) The segment's leader-epoch checkpoint entries and producer snapshot."""
    with rsm.fetch_index(seg, IndexType.LEADER_EPOCH) as stream:
        checkpoint = stream.read()
    with rsm.fetch_index(seg, IndexType.PRODUCER_SNAPSHOT) as stream:
        snapshot = stream.read()
    # Parsed as the local log's own checkpoint is (its format checks and error messages).
    try:
        entries = parse_leader_epoch_checkpoint(checkpoint, f"{seg.segment_id}/{LEADER_EPOCH_CHECKPOINT}")
    except KafkaStorageError as e:
        raise RemoteStorageError(f"{seg.segment_id}: bad leader-epoch checkpoint: {e}") from e
    return entries, snapshot


async def build_remote_log_aux_state(
    tip: TopicIdPartition,
    *,
    leader_local_log_start_offset: int,
    leader_epoch_of_local_start: int,
    leader_log_start_offset: int,
    rlmm: RemoteLogMetadataManager,
    rsm: RemoteStorageManager,
    earlier_epoch_end: Callable[[int], Awaitable[tuple[int, int]]] | None = None,
    executor: Executor | None = None,
) -> RemoteLogAuxState:
    """Find the remote segment holding ``leader_local_log_start_offset - 1`` and fetch its
    auxiliary state (see the module docstring). ``earlier_epoch_end(epoch)`` is the leader's
    OffsetForLeaderEpoch answer ``(epoch, end_offset)`` for ``epoch``. Raises RemoteStorageError
    (retriable: the follower tries again) when no segment holds the offset or a fetch fails."""
    offset = leader_local_log_start_offset - 1
    if offset < 0:
        raise RemoteStorageError(f"{tip}: the leader's local log starts at 0, nothing is remote")
    target = leader_epoch_of_local_start
    if target > 0 and earlier_epoch_end is not None:
        earlier_epoch, end_offset = await earlier_epoch_end(target - 1)
        if end_offset > offset:  # the offset lies in that earlier epoch (end offsets are exclusive)
            target = earlier_epoch
    seg = _segment_holding(rlmm, tip, target, offset)
    if seg is None:
        raise RemoteStorageError(f"{tip}: no remote segment holds offset {offset} (epoch {target})")
    entries, snapshot = await asyncio.get_running_loop().run_in_executor(executor, _fetch_aux, rsm, seg)
    return RemoteLogAuxState(
        segment=seg,
        next_offset=seg.end_offset + 1,
        leader_log_start_offset=leader_log_start_offset,
        leader_epochs=[e for e in entries if e.start_offset <= seg.end_offset],
        producer_snapshot=snapshot,
    )


def remote_tier_bootstrap(
    rlmm: RemoteLogMetadataManager, rsm: RemoteStorageManager, executor: Executor | None = None
) -> TierBootstrap:
    """The replica fetchers' ``tier_bootstrap`` (``zurau.replication.replica_fetcher.TierBootstrap``)
    over this broker's remote log metadata and storage: :func:`build_remote_log_aux_state`, after
    checking that the partition's remote log metadata is loaded (RemoteStorageError until then:
    the fetcher backs off and tries again)."""

    async def tier_bootstrap(
        tip: TopicIdPartition,
        leader_local_log_start_offset: int,
        leader_epoch_of_local_start: int,
        leader_log_start_offset: int,
        /,
        *,
        earlier_epoch_end: EarlierEpochEnd,
    ) -> RemoteLogAuxState:
        if not rlmm.ready(tip):
            raise RemoteStorageError(f"{tip}: the remote log metadata is not loaded yet")
        return await build_remote_log_aux_state(
            tip,
            leader_local_log_start_offset=leader_local_log_start_offset,
            leader_epoch_of_local_start=leader_epoch_of_local_start,
            leader_log_start_offset=leader_log_start_offset,
            rlmm=rlmm,
            rsm=rsm,
            earlier_epoch_end=earlier_epoch_end,
            executor=executor,
        )

    return tier_bootstrap
