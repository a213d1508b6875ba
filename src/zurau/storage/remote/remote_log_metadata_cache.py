"""The remote log metadata of one partition, built from its events in order (Kafka's
``RemoteLogMetadataCache`` and ``RemoteLogLeaderEpochState``).

A :class:`RemoteLogMetadataCache` holds every upload of the partition that has not reached
DELETE_SEGMENT_FINISHED, by :class:`RemoteLogSegmentId`, with its latest state, and, per leader
epoch, an index of the COPY_SEGMENT_FINISHED segments holding records of that epoch:

* ``offsets``: the start offset of the epoch's records in a segment -> that segment (sorted), so
  :meth:`segment_for` is a bisection;
* ``unreferenced``: the epoch's other segments (still copying, being deleted, or replaced by a
  segment that covers them), listed by :meth:`segments_for_epoch` so that they can be cleaned up;
* ``highest``: the largest offset of the epoch ever copied (the end of the epoch's records in a
  COPY_SEGMENT_FINISHED segment). As in Kafka, deleting segments does not lower it: it says where
  copying resumes, and what was copied once is never copied again.

Overlapping uploads (a new leader that was behind copies a segment that covers segments the old
leader copied) follow Kafka: when a segment finishes copying for an epoch and reaches at least the
epoch's highest offset, the entries of that epoch starting at or after its start are replaced by it
(they become unreferenced).

Events are applied in two ways:

* the write path (:meth:`add_segment`, :meth:`update_segment`, :meth:`put_partition_delete`)
  raises ValueError for an event that is not a valid next step, and changes nothing then;
* :meth:`replay` applies an event read from ``__remote_log_metadata`` and *never raises* for bad
  data: an invalid event (unknown segment, a transition the state machine does not allow, a
  segment event after the partition's remote data was deleted) is ignored with a warning, as
  Kafka drops them (a replayed log must never stop a broker). As in Kafka, replay also accepts a
  transition to the state a segment is already in (a retried publish), which the write path
  refuses.

A DELETE_PARTITION_FINISHED partition delete empties the cache (Kafka drops the partition's cache
then); the write path refuses a partition delete state lower than the current one.

Invariants (checked against a brute-force recomputation by the property tests): for segments
whose COPY_SEGMENT_FINISHED offsets do not overlap, :meth:`segment_for` ``(e, o)`` is the finished
segment whose leader-epoch map gives ``e`` for ``o``; :meth:`remote_size` is the sum of the finished
segments' sizes; :meth:`list_segments` is every segment not DELETE_SEGMENT_FINISHED, by start offset.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

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

log = logging.getLogger("zurau.storage.remote.remote_log_metadata_cache")

_S = RemoteLogSegmentState


@dataclass(slots=True)
class RemoteLogLeaderEpochState:
    """The segments of one leader epoch (Kafka's ``RemoteLogLeaderEpochState``)."""

    starts: list[int] = field(default_factory=list)  # sorted keys of ``offsets``
    offsets: dict[int, RemoteLogSegmentId] = field(default_factory=dict)
    unreferenced: dict[RemoteLogSegmentId, None] = field(default_factory=dict)  # an ordered set
    highest: int | None = None

    def copy_started(self, sid: RemoteLogSegmentId) -> None:
        self.unreferenced[sid] = None

    def copy_finished(self, start: int, sid: RemoteLogSegmentId, epoch_end: int) -> None:
        # A segment reaching at least this epoch's highest offset replaces the entries starting at
        # or after its start (copied earlier by a leader that was ahead of the one copying now).
        while (
            self.starts
            and self.starts[-1] >= start
            and self.highest is not None
            and self.highest <= epoch_end
        ):
            self.unreferenced[self.offsets.pop(self.starts.pop())] = None
        replaced = self.offsets.get(start)
        if replaced is None:
            bisect.insort(self.starts, start)
        elif replaced != sid:
            self.unreferenced[replaced] = None
        self.offsets[start] = sid
        self.unreferenced.pop(sid, None)
        if self.highest is None or epoch_end > self.highest:
            self.highest = epoch_end

    def delete_started(self, start: int, sid: RemoteLogSegmentId) -> None:
        if self.offsets.get(start) == sid:
            del self.offsets[start]
            self.starts.pop(bisect.bisect_left(self.starts, start))
        self.unreferenced[sid] = None

    def delete_finished(self, sid: RemoteLogSegmentId) -> None:
        self.unreferenced.pop(sid, None)

    def floor(self, offset: int) -> RemoteLogSegmentId | None:
        """The segment of the greatest start offset <= ``offset``."""
        i = bisect.bisect_right(self.starts, offset)
        return self.offsets[self.starts[i - 1]] if i else None

    def segment_ids(self) -> Iterator[RemoteLogSegmentId]:
        yield from self.offsets.values()
        yield from self.unreferenced


def _epoch_end(metadata: RemoteLogSegmentMetadata, index: int) -> int:
    """The last offset of the ``index``-th leader epoch's records in ``metadata``."""
    epochs = metadata.segment_leader_epochs
    return epochs[index + 1][1] - 1 if index + 1 < len(epochs) else metadata.end_offset


class RemoteLogMetadataCache:
    """The remote segments of one partition and their indexes (see the module docstring)."""

    def __init__(self, topic_id_partition: TopicIdPartition) -> None:
        self.topic_id_partition = topic_id_partition
        self._segments: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = {}
        self._epochs: dict[int, RemoteLogLeaderEpochState] = {}
        self._epoch_keys: list[int] = []  # sorted keys of _epochs
        self._finished_bytes = 0
        self._sorted: tuple[RemoteLogSegmentMetadata, ...] | None = None
        self.partition_delete: RemotePartitionDeleteMetadata | None = None
        self.initialized = False

    # ------------------------------------------------------------------ queries
    def segment(self, sid: RemoteLogSegmentId) -> RemoteLogSegmentMetadata | None:
        return self._segments.get(sid)

    def segment_for(self, epoch: int, offset: int) -> RemoteLogSegmentMetadata | None:
        """The COPY_SEGMENT_FINISHED segment holding ``offset`` as a record of leader epoch ``epoch``."""
        state = self._epochs.get(epoch)
        sid = state.floor(offset) if state is not None else None
        if sid is None:
            return None
        metadata = self._segments[sid]
        for i, (e, _) in enumerate(metadata.segment_leader_epochs):
            if e == epoch:
                return metadata if offset <= _epoch_end(metadata, i) else None
        return None  # unreachable: a segment is indexed under its own epochs only

    def highest_offset_in_epoch(self, epoch: int) -> int | None:
        """The largest offset of leader epoch ``epoch`` ever copied (Kafka's ``highestOffsetForEpoch``)."""
        state = self._epochs.get(epoch)
        return state.highest if state is not None else None

    def highest_offset_for_epoch(self, epoch: int) -> int | None:
        """The largest offset ever copied among the records of leader epochs <= ``epoch``."""
        best: int | None = None
        for e in self._epoch_keys[: bisect.bisect_right(self._epoch_keys, epoch)]:
            h = self._epochs[e].highest
            if h is not None and (best is None or h > best):
                best = h
        return best

    def list_segments(self) -> Sequence[RemoteLogSegmentMetadata]:
        """Every segment not DELETE_SEGMENT_FINISHED, in any state, by start offset (ties: in the
        order they were added)."""
        if self._sorted is None:
            self._sorted = tuple(sorted(self._segments.values(), key=lambda m: m.start_offset))
        return self._sorted

    def segments_for_epoch(self, epoch: int) -> list[RemoteLogSegmentMetadata]:
        """The segments holding records of ``epoch``, in any state, by start offset (Kafka's
        ``listRemoteLogSegments(leaderEpoch)``)."""
        state = self._epochs.get(epoch)
        if state is None:
            return []
        return sorted((self._segments[sid] for sid in state.segment_ids()), key=lambda m: m.start_offset)

    def remote_size(self) -> int:
        """Bytes of the COPY_SEGMENT_FINISHED segments."""
        return self._finished_bytes

    @property
    def partition_delete_state(self) -> RemotePartitionDeleteState | None:
        return self.partition_delete.state if self.partition_delete is not None else None

    # ------------------------------------------------------------------ checks
    def _check_partition(self, tip: TopicIdPartition) -> None:
        if tip != self.topic_id_partition:
            raise ValueError(f"an event of {tip} given to the cache of {self.topic_id_partition}")
        if self.partition_delete_state == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
            raise ValueError(f"the remote data of {tip} was deleted")

    def check_add(self, metadata: RemoteLogSegmentMetadata) -> None:
        """ValueError unless ``metadata`` may be added (a new upload, COPY_SEGMENT_STARTED)."""
        self._check_partition(metadata.topic_id_partition)
        if metadata.state != _S.COPY_SEGMENT_STARTED:
            raise ValueError(f"a new upload must be COPY_SEGMENT_STARTED, not {metadata.state.name}")
        existing = self._segments.get(metadata.segment_id)
        if existing is not None:
            raise ValueError(f"{metadata.segment_id} is already known ({existing.state.name})")

    def check_update(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        """ValueError unless ``update`` is a valid next state of a known upload."""
        self._check_partition(update.topic_id_partition)
        existing = self._segments.get(update.segment_id)
        if existing is None:
            raise ValueError(f"no remote segment {update.segment_id}")
        if not existing.state.may_become(update.state):
            raise ValueError(f"{update.segment_id}: {existing.state.name} may not become {update.state.name}")

    def check_partition_delete(self, event: RemotePartitionDeleteMetadata) -> None:
        """ValueError when ``event`` would move the partition's delete state backwards."""
        if event.topic_id_partition != self.topic_id_partition:
            raise ValueError(
                f"an event of {event.topic_id_partition} given to the cache of {self.topic_id_partition}"
            )
        current = self.partition_delete_state
        if current is not None and event.state < current:
            raise ValueError(
                f"{event.topic_id_partition}: partition delete {current.name} may not go back to {event.state.name}"
            )

    # ------------------------------------------------------------------ the write path
    def add_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        self.check_add(metadata)
        self._apply_add(metadata)

    def update_segment(self, update: RemoteLogSegmentMetadataUpdate | RemoteLogSegmentMetadata) -> None:
        if isinstance(update, RemoteLogSegmentMetadata):
            update = RemoteLogSegmentMetadataUpdate.of(update)
        self.check_update(update)
        self._apply_update(update)

    def put_partition_delete(self, event: RemotePartitionDeleteMetadata) -> None:
        self.check_partition_delete(event)
        self._apply_partition_delete(event)

    # ------------------------------------------------------------------ replay
    def replay(self, event: RemoteLogMetadataEvent) -> bool:
        """Apply an event read from the topic; False (with a warning) when it is ignored."""
        try:
            if isinstance(event, RemoteLogSegmentMetadata):
                return self._replay_add(event)
            if isinstance(event, RemoteLogSegmentMetadataUpdate):
                return self._replay_update(event)
            if isinstance(event, RemotePartitionDeleteMetadata):
                if event.topic_id_partition != self.topic_id_partition:
                    return self._ignore(event, "it is of another partition")
                self._apply_partition_delete(event)
                return True
            if isinstance(event, RemoteLogSegmentMetadataSnapshot):
                return self._ignore(event, "snapshot records belong in snapshot files, not the topic")
            return self._ignore(event, "unknown event type")
        except Exception:  # a bug must not stop the reader of the topic either
            log.exception("%s: ignoring %s", self.topic_id_partition, event)
            return False

    def _replay_add(self, metadata: RemoteLogSegmentMetadata) -> bool:
        if metadata.topic_id_partition != self.topic_id_partition:
            return self._ignore(metadata, "it is of another partition")
        if self.partition_delete_state == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
            return self._ignore(metadata, "the partition's remote data was deleted")
        if metadata.state != _S.COPY_SEGMENT_STARTED:
            return self._ignore(metadata, f"a new upload in state {metadata.state.name}")
        existing = self._segments.get(metadata.segment_id)
        if existing is not None and existing.state != _S.COPY_SEGMENT_STARTED:
            return self._ignore(metadata, f"the segment is already {existing.state.name}")
        self._apply_add(metadata)
        return True

    def _replay_update(self, update: RemoteLogSegmentMetadataUpdate) -> bool:
        if update.topic_id_partition != self.topic_id_partition:
            return self._ignore(update, "it is of another partition")
        if self.partition_delete_state == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
            return self._ignore(update, "the partition's remote data was deleted")
        existing = self._segments.get(update.segment_id)
        if existing is None:
            # Before the cache is initialized this is normal when the segment's first events are
            # gone (Kafka drops these silently then).
            return self._ignore(update, "unknown segment", quiet=not self.initialized)
        if update.state == _S.COPY_SEGMENT_STARTED:
            return self._ignore(update, "an update cannot go back to COPY_SEGMENT_STARTED")
        if update.state != existing.state and not existing.state.may_become(update.state):
            return self._ignore(update, f"{existing.state.name} may not become {update.state.name}")
        self._apply_update(update)
        return True

    def _ignore(self, event: object, why: str, *, quiet: bool = False) -> bool:
        (log.debug if quiet else log.warning)("%s: ignoring %s: %s", self.topic_id_partition, event, why)
        return False

    # ------------------------------------------------------------------ applying
    def _epoch(self, epoch: int) -> RemoteLogLeaderEpochState:
        state = self._epochs.get(epoch)
        if state is None:
            state = self._epochs[epoch] = RemoteLogLeaderEpochState()
            bisect.insort(self._epoch_keys, epoch)
        return state

    def _put(self, metadata: RemoteLogSegmentMetadata) -> None:
        old = self._segments.get(metadata.segment_id)
        if old is not None and old.state == _S.COPY_SEGMENT_FINISHED:
            self._finished_bytes -= old.segment_size_in_bytes
        self._segments[metadata.segment_id] = metadata
        if metadata.state == _S.COPY_SEGMENT_FINISHED:
            self._finished_bytes += metadata.segment_size_in_bytes
        self._sorted = None

    def _apply_add(self, metadata: RemoteLogSegmentMetadata) -> None:
        for epoch, _ in metadata.segment_leader_epochs:
            self._epoch(epoch).copy_started(metadata.segment_id)
        self._put(metadata)

    def _apply_update(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        existing = self._segments[update.segment_id]
        metadata = RemoteLogSegmentMetadata(
            segment_id=existing.segment_id,
            start_offset=existing.start_offset,
            end_offset=existing.end_offset,
            max_timestamp_ms=existing.max_timestamp_ms,
            broker_id=update.broker_id,
            event_timestamp_ms=update.event_timestamp_ms,
            segment_size_in_bytes=existing.segment_size_in_bytes,
            segment_leader_epochs=existing.segment_leader_epochs,
            state=update.state,
            custom_metadata=update.custom_metadata
            if update.custom_metadata is not None
            else existing.custom_metadata,
            txn_index_empty=existing.txn_index_empty,
        )
        sid = metadata.segment_id
        for i, (epoch, start) in enumerate(metadata.segment_leader_epochs):
            state = self._epoch(epoch)
            if update.state == _S.COPY_SEGMENT_FINISHED:
                state.copy_finished(start, sid, _epoch_end(metadata, i))
            elif update.state == _S.DELETE_SEGMENT_STARTED:
                state.delete_started(start, sid)
            elif update.state == _S.DELETE_SEGMENT_FINISHED:
                state.delete_finished(sid)
        if update.state == _S.DELETE_SEGMENT_FINISHED:
            if existing.state == _S.COPY_SEGMENT_FINISHED:  # unreachable through valid transitions
                self._finished_bytes -= existing.segment_size_in_bytes
            del self._segments[sid]
            self._sorted = None
        else:
            self._put(metadata)

    def _apply_partition_delete(self, event: RemotePartitionDeleteMetadata) -> None:
        self.partition_delete = event
        if event.state == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
            self._segments.clear()
            self._epochs.clear()
            self._epoch_keys.clear()
            self._finished_bytes = 0
            self._sorted = None


__all__ = ["RemoteLogLeaderEpochState", "RemoteLogMetadataCache"]
