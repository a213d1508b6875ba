"""The remote tier's data model (KIP-405), shared by the storage plugins, the remote log metadata
and the remote log manager.

A segment is copied to remote storage under a fresh :class:`RemoteLogSegmentId` (a random UUID per
upload attempt, so a retried or abandoned upload never overwrites another one). Its life is a
sequence of :class:`RemoteLogSegmentState` values, each published as a metadata event before the
work it announces:

    COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED
    COPY_SEGMENT_STARTED -> DELETE_SEGMENT_STARTED (an upload abandoned by a crash or a failed copy)

Invariants:

* Only COPY_SEGMENT_FINISHED segments hold data a reader may see; a segment in any other state is
  never served and never counted in the remote size.
* ``start_offset <= end_offset``; ``segment_leader_epochs`` maps each leader epoch whose records
  the segment holds to that epoch's first offset in the segment, ascending in both, the first
  entry's offset == ``start_offset``.
* The data of a segment never changes once COPY_SEGMENT_FINISHED: a remote segment is read-only.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from zurau.types import TopicIdPartition


class RemoteLogSegmentState(enum.IntEnum):
    """Kafka's ``RemoteLogSegmentState`` (the ids are its wire values)."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3

    def may_become(self, new: RemoteLogSegmentState) -> bool:
        """Whether a segment in this state may move to ``new`` (Kafka's ``isValidTransition``)."""
        return new in _NEXT[self]


_S = RemoteLogSegmentState
_NEXT: dict[RemoteLogSegmentState, frozenset[RemoteLogSegmentState]] = {
    _S.COPY_SEGMENT_STARTED: frozenset({_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED}),
    _S.COPY_SEGMENT_FINISHED: frozenset({_S.DELETE_SEGMENT_STARTED}),
    _S.DELETE_SEGMENT_STARTED: frozenset({_S.DELETE_SEGMENT_FINISHED}),
    _S.DELETE_SEGMENT_FINISHED: frozenset(),
}


class RemotePartitionDeleteState(enum.IntEnum):
    """Kafka's ``RemotePartitionDeleteState``: a deleted topic's remote data being removed."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


class IndexType(enum.Enum):
    """The per-segment files a plugin keeps beside the segment's records (Kafka's ``IndexType``)."""

    OFFSET = "index"
    TIMESTAMP = "timeindex"
    PRODUCER_SNAPSHOT = "snapshot"
    TRANSACTION = "txnindex"
    LEADER_EPOCH = "leader-epoch-checkpoint"


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentId:
    """One upload of one segment of one partition: ``(topic id, topic, partition)`` and a UUID."""

    topic_id_partition: TopicIdPartition
    id: uuid.UUID

    @classmethod
    def generate(cls, tip: TopicIdPartition) -> RemoteLogSegmentId:
        return cls(tip, uuid.uuid4())


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadata:
    """What the remote tier knows of one segment upload (Kafka's ``RemoteLogSegmentMetadata``).

    ``event_timestamp_ms`` is when this state was published; ``broker_id`` the broker that
    published it; ``max_timestamp_ms`` the segment's largest record timestamp (remote retention by
    time compares it); ``segment_size_in_bytes`` the size of the ``.log`` file; ``custom_metadata``
    opaque bytes a plugin may return from its copy (Kafka's ``CustomMetadata``), at most
    ``remote.log.metadata.custom.metadata.max.bytes``; ``txn_index_empty`` whether the segment has
    no aborted transactions (readers then skip fetching its transaction index).
    """

    segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    custom_metadata: bytes | None = None
    txn_index_empty: bool = False

    def __post_init__(self) -> None:
        if self.start_offset < 0 or self.end_offset < self.start_offset:
            raise ValueError(f"bad offsets {self.start_offset}..{self.end_offset}")
        epochs = self.segment_leader_epochs
        if not epochs:
            raise ValueError("a remote segment needs at least one leader epoch")
        if epochs[0][1] > self.start_offset:
            raise ValueError("the first leader epoch must start at or before the segment's start")
        for (e1, o1), (e2, o2) in zip(epochs, epochs[1:], strict=False):
            if e2 <= e1 or o2 < o1:
                raise ValueError(f"leader epochs not ascending: {epochs}")

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.segment_id.topic_id_partition

    def with_state(
        self,
        state: RemoteLogSegmentState,
        *,
        event_timestamp_ms: int,
        broker_id: int,
        custom_metadata: bytes | None = None,
    ) -> RemoteLogSegmentMetadata:
        """This segment moved to ``state`` (ValueError when the transition is not allowed)."""
        if not self.state.may_become(state):
            raise ValueError(f"{self.segment_id}: {self.state.name} may not become {state.name}")
        return replace(
            self,
            state=state,
            event_timestamp_ms=event_timestamp_ms,
            broker_id=broker_id,
            custom_metadata=custom_metadata if custom_metadata is not None else self.custom_metadata,
        )

    def epoch_of(self, offset: int) -> int | None:
        """The leader epoch whose records include ``offset`` in this segment (None: outside it)."""
        if offset < self.start_offset or offset > self.end_offset:
            return None
        found = None
        for epoch, start in self.segment_leader_epochs:
            if start <= offset:
                found = epoch
            else:
                break
        return found


@dataclass(frozen=True, slots=True)
class LogSegmentData:
    """The files of one closed local segment, handed to :meth:`RemoteStorageManager.copy_log_segment_data`.

    ``log_segment``, ``offset_index`` and ``time_index`` are paths of the segment's own files
    (closed: never appended to again, but retention may delete them after the copy returns, so a
    plugin reads them during the call only). ``transaction_index`` is None when the segment has no
    ``.txnindex``. ``producer_snapshot`` is the path of the producer-state snapshot taken at the
    segment's end offset + 1. ``leader_epoch_index`` holds the leader-epoch checkpoint text of the
    entries up to the segment's end (bytes, not a file: the log's checkpoint keeps changing).
    """

    log_segment: Path
    offset_index: Path
    time_index: Path
    transaction_index: Path | None
    producer_snapshot: Path
    leader_epoch_index: bytes = field(repr=False)
