"""The share coordinator's state machine (KIP-932 share-group state persistence), pure: no
sockets, no clocks (``now_ms`` is passed in), no I/O.

Kafka's ``ShareCoordinatorShard``. It keeps, for each *share-partition* (a share group's view of
one topic partition, :class:`~.share_state_records.ShareStateKey`), the state the share-partition
leader persists: ``state_epoch``, ``leader_epoch``, ``start_offset`` and state batches (offsets
``>= start_offset`` in no batch are AVAILABLE with delivery count 0). Share-partition leaders and
the group coordinator reach it through the five share-group-state APIs, one share-partition per
call (the service splits requests):

=====================  ======================================================================
operation              semantics
=====================  ======================================================================
:meth:`initialize`     InitializeShareGroupState: a fresh snapshot (``state_epoch`` and
                       ``start_offset`` from the request, leader epoch 0, no batches, snapshot
                       epoch one above the previous one or 0). FENCED_STATE_EPOCH if a higher
                       state epoch was seen (a request epoch of -1 skips the check).
:meth:`write`          WriteShareGroupState: INVALID_REQUEST on an uninitialized key,
                       FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH if a higher epoch was seen (-1
                       skips each check). The request's start offset (-1: unchanged) and
                       batches are merged into the state (see :func:`merge_batches`). The
                       leader epoch and state epoch of the state are not changed by a write.
                       Appends a ShareUpdate, or a ShareSnapshot holding the merged state once
                       ``snapshot_update_records_per_snapshot`` updates follow the last snapshot.
:meth:`read`           ReadShareGroupState: state epoch, start offset and batches.
                       INVALID_REQUEST on an uninitialized key, FENCED_LEADER_EPOCH if the
                       request's leader epoch is below the highest seen. A request leader epoch
                       other than -1 and the highest seen is recorded (an update/snapshot record,
                       the reply released once it is committed).
:meth:`read_summary`   ReadShareGroupStateSummary: start offset, leader and state epochs (-1, 0,
                       0 for an uninitialized key, not an error).
:meth:`delete`         DeleteShareGroupState: a tombstone (nothing for an unknown key).
=====================  ======================================================================

Every operation first checks Kafka's way: a null topic id or negative partition is
INVALID_REQUEST, a topic or partition the metadata does not hold is UNKNOWN_TOPIC_OR_PARTITION
(checked after the epoch fences, as Kafka does). Write also refuses malformed state batches
(INVALID_REQUEST).

Merge semantics (a deliberate, documented reading of Kafka's ``PersisterStateBatchCombiner``):
batches are applied in order, a later batch overriding the state of every offset it covers; the
result is pruned at the start offset (batches wholly below dropped, one straddling it trimmed)
and kept canonical: sorted, non-overlapping, contiguous batches of equal (state, count) joined.
Kafka's combiner lets the batch with the higher (delivery count, delivery state) win an overlap
instead; the two agree whenever a record's (count, state) never goes backwards, which holds for
the writes of a share-partition leader (counts grow at acquisition, ACKNOWLEDGED/ARCHIVED are
terminal).

Persistent state changes only by replaying committed records (:meth:`replay`), at run time
(:meth:`complete_write`) and when a partition is loaded (:meth:`load`), so the state after a
reload equals the state before: the highest leader and state epochs seen per key, the state
(Kafka's ``ShareGroupOffset``) and the number of updates since the last snapshot. A tombstone
forgets all of it.

Cold snapshots (Kafka's ``snapshotColdPartitions``): every
``cold_partition_snapshot_interval_ms`` each served ``__share_group_state`` partition rewrites a
snapshot (snapshot epoch + 1, create timestamp kept, write timestamp now) of every key not
snapshotted for that long, unless every key's last snapshot already is such a rewrite (a quiet
partition). With :meth:`last_redundant_offset` (the lowest offset holding a key's latest
snapshot), this lets the runtime delete the records before it (the topic is
``cleanup.policy=delete``, ``retention.ms=-1``, as KIP-932 defines it). The check is skipped
while the partition is quiet: every key's latest snapshot is a cold rewrite with no update after
it (Kafka looks only at the first half, so a key updated after a cold rewrite would hold the
partition's pruning back forever; this one is rewritten once more).

Partitions: a key and everything about it belongs to ``partition_for(key.coordinator_key)``
(:func:`~.share_state_records.partition_for_coordinator_key`). The runtime
(:class:`~zurau.coordinator.coordinator_runtime.CoordinatorRuntime`) loads and unloads partitions
independently and feeds a partition's next input only once the writes of the previous ones have
completed, so every operation computes from committed state.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from zurau.coordinator.share.share_state_records import (
    DEFAULT_NUM_PARTITIONS,
    ShareSnapshotValue,
    ShareStateKey,
    ShareStateRecord,
    ShareUpdateValue,
    partition_for_coordinator_key,
)
from zurau.coordinator.topics import TopicsView
from zurau.coordinator.write_errors import write_error
from zurau.protocol import errors as E
from zurau.protocol.share_states import StateBatch

FENCED_STATE_EPOCH = E.FencedStateEpochError.code  # KIP-932
FENCED_STATE_EPOCH_MESSAGE = (
    "The share coordinator rejected the request because the share-group state epoch did not match."
)
UNINITIALIZED_START_OFFSET = -1
DEFAULT_STATE_EPOCH = 0
DEFAULT_LEADER_EPOCH = 0

_INT16_MAX = (1 << 15) - 1
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class ShareStateConfig:
    """The share coordinator's settings (Kafka's names and defaults)."""

    num_partitions: int = DEFAULT_NUM_PARTITIONS  # share.coordinator.state.topic.num.partitions
    snapshot_update_records_per_snapshot: int = 500  # share.coordinator.snapshot.update.records.per.snapshot
    cold_partition_snapshot_interval_ms: int = (
        300_000  # share.coordinator.cold.partition.snapshot.interval.ms
    )


@dataclass(frozen=True)
class SharePartitionState:
    """The persisted state of one share-partition (Kafka's ``ShareGroupOffset``).

    ``state_batches`` is canonical (see the module docstring) and holds no offset below
    ``start_offset`` (when that is not -1).
    """

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    create_timestamp: int = 0
    write_timestamp: int = 0
    delivery_complete_count: int = -1

    def to_snapshot(self) -> ShareSnapshotValue:
        return ShareSnapshotValue(
            snapshot_epoch=self.snapshot_epoch,
            state_epoch=self.state_epoch,
            leader_epoch=self.leader_epoch,
            start_offset=self.start_offset,
            state_batches=self.state_batches,
            create_timestamp=self.create_timestamp,
            write_timestamp=self.write_timestamp,
            delivery_complete_count=self.delivery_complete_count,
        )

    @classmethod
    def from_snapshot(cls, v: ShareSnapshotValue) -> SharePartitionState:
        return cls(
            snapshot_epoch=v.snapshot_epoch,
            state_epoch=v.state_epoch,
            leader_epoch=v.leader_epoch,
            start_offset=v.start_offset,
            state_batches=merge_batches((), v.state_batches, v.start_offset),
            create_timestamp=v.create_timestamp,
            write_timestamp=v.write_timestamp,
            delivery_complete_count=v.delivery_complete_count,
        )

    def apply_update(self, u: ShareUpdateValue) -> SharePartitionState:
        """This state with the update ``u`` applied (Kafka's ``merge``)."""
        start = self.start_offset if u.start_offset == -1 else u.start_offset
        return replace(
            self,
            leader_epoch=self.leader_epoch if u.leader_epoch == -1 else u.leader_epoch,
            start_offset=start,
            state_batches=merge_batches(self.state_batches, u.state_batches, start),
            delivery_complete_count=_next_delivery_complete_count(
                self.delivery_complete_count, u.delivery_complete_count, u.start_offset, u.state_batches
            ),
        )


def _next_delivery_complete_count(
    current: int, given: int, start_offset: int, batches: Sequence[StateBatch]
) -> int:
    """The count a change leaves: the one it carries; else the current one if it changes no
    offset's state (a leader-epoch-only update); else unknown (-1)."""
    if given != -1:
        return given
    return current if start_offset == -1 and not batches else -1


# ---------------------------------------------------------------------------------- merging


def _overlay(batches: list[StateBatch], b: StateBatch) -> None:
    """Put ``b`` over the sorted, non-overlapping ``batches`` (in place): offsets it covers take
    its state; parts of older batches outside it stay."""
    # The first batch ending at or after b starts, and the first starting after b ends.
    i = bisect.bisect_left(batches, b.first_offset, key=lambda x: x.last_offset)
    j = bisect.bisect_right(batches, b.last_offset, key=lambda x: x.first_offset)
    middle: list[StateBatch] = []
    if i < j:
        head, tail = batches[i], batches[j - 1]
        if head.first_offset < b.first_offset:
            middle.append(replace(head, last_offset=b.first_offset - 1))
        middle.append(b)
        if tail.last_offset > b.last_offset:
            middle.append(replace(tail, first_offset=b.last_offset + 1))
    else:
        middle.append(b)
    batches[i:j] = middle


def merge_batches(
    current: Iterable[StateBatch], newer: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """``current`` with ``newer`` applied in order (each overriding the offsets it covers), pruned
    at ``start_offset`` (-1: no pruning), in canonical form: sorted, non-overlapping, contiguous
    batches of equal (delivery state, delivery count) joined."""
    out: list[StateBatch] = []
    for b in current:
        _overlay(out, b)
    for b in newer:
        _overlay(out, b)
    result: list[StateBatch] = []
    for b in out:
        if start_offset != -1:
            if b.last_offset < start_offset:
                continue
            if b.first_offset < start_offset:
                b = replace(b, first_offset=start_offset)
        if result:
            prev = result[-1]
            if (
                prev.last_offset + 1 == b.first_offset
                and prev.delivery_state == b.delivery_state
                and prev.delivery_count == b.delivery_count
            ):
                result[-1] = replace(prev, last_offset=b.last_offset)
                continue
        result.append(b)
    return tuple(result)


def _valid_batch(b: StateBatch) -> bool:
    return b.is_valid() and b.last_offset <= _INT64_MAX and b.delivery_count <= _INT16_MAX


# ---------------------------------------------------------------------------------- effects


@dataclass
class Effects:
    """What every entry point returns: ``(token, result)`` replies and writes to make. The
    runtime releases the replies only after the writes completed."""

    replies: list[tuple[Any, Any]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)

    def reply(self, token: Any, result: Any) -> None:
        if token is not None:
            self.replies.append((token, result))


@dataclass
class Write:
    """Records to append, in order, to one ``__share_group_state`` partition, then ``then``.

    ``last_offset`` is the offset of the last record once appended: the runtime sets it (before
    :meth:`ShareCoordinatorShard.complete_write`) so the shard knows where each key's latest
    snapshot is (:meth:`ShareCoordinatorShard.last_redundant_offset`); left at -1, those
    offsets are unknown and nothing is reported redundant for the keys written.
    """

    partition: int
    records: list[ShareStateRecord]
    then: Callable[[E.KafkaError | None, int, Effects], None]
    last_offset: int = -1


# ---------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ShareStateResult:
    """The outcome of initialize, write and delete for one share-partition."""

    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True)
class ReadStateResult:
    """ReadShareGroupState's answer for one share-partition (defaults: the error case)."""

    error_code: int = 0
    error_message: str | None = None
    state_epoch: int = DEFAULT_STATE_EPOCH
    start_offset: int = UNINITIALIZED_START_OFFSET
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True)
class ReadStateSummaryResult:
    """ReadShareGroupStateSummary's answer for one share-partition."""

    error_code: int = 0
    error_message: str | None = None
    state_epoch: int = DEFAULT_STATE_EPOCH
    leader_epoch: int = DEFAULT_LEADER_EPOCH
    start_offset: int = UNINITIALIZED_START_OFFSET
    delivery_complete_count: int = -1


NULL_TOPIC_ID = "The topic id cannot be null."
NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."


# ---------------------------------------------------------------------------------- the shard


class ShareCoordinatorShard:
    """The share coordinator's state machine for the ``__share_group_state`` partitions served here."""

    def __init__(self, config: ShareStateConfig, topics: TopicsView) -> None:
        self.config = config
        self.topics = topics
        self.states: dict[ShareStateKey, SharePartitionState] = {}
        self.leader_epochs: dict[ShareStateKey, int] = {}  # the highest leader epoch seen
        self.state_epochs: dict[ShareStateKey, int] = {}  # the highest state epoch seen
        self.update_counts: dict[ShareStateKey, int] = {}  # updates since the last snapshot
        self.snapshot_offsets: dict[ShareStateKey, int] = {}  # offset of the latest snapshot, -1 unknown
        self._deadlines: dict[int, int] = {}  # partition -> next cold-snapshot check

    # ------------------------------------------------------------------ partitions
    def partition_for(self, key: str) -> int:
        """The partition of a coordinator key string (``groupId:topicId:partition``)."""
        return partition_for_coordinator_key(key, self.config.num_partitions)

    def partition_of(self, key: ShareStateKey) -> int:
        return self.partition_for(key.coordinator_key)

    def keys_of(self, partition: int) -> list[ShareStateKey]:
        return [k for k in self.states if self.partition_of(k) == partition]

    def unload_partition(self, partition: int) -> None:
        """Forget every key of ``partition`` and its timer."""
        for m in (
            self.states,
            self.leader_epochs,
            self.state_epochs,
            self.update_counts,
            self.snapshot_offsets,
        ):
            for k in [k for k in m if self.partition_of(k) == partition]:
                del m[k]
        self._deadlines.pop(partition, None)

    def start_partition(self, partition: int, now_ms: int) -> Effects:
        """After loading ``partition``: arm its cold-snapshot check."""
        self._deadlines[partition] = now_ms + self.config.cold_partition_snapshot_interval_ms
        return Effects()

    def next_deadline(self, partition: int) -> int | None:
        return self._deadlines.get(partition)

    def poll(self, now_ms: int, partition: int) -> Effects:
        """Run the cold-snapshot check of ``partition`` if due, and re-arm it."""
        fx = Effects()
        deadline = self._deadlines.get(partition)
        if deadline is None or now_ms < deadline:
            return fx
        self._deadlines[partition] = now_ms + self.config.cold_partition_snapshot_interval_ms
        records = self._cold_snapshots(partition, now_ms)
        if records:
            fx.writes.append(Write(partition, records, _nothing))
        return fx

    def _cold_snapshots(self, partition: int, now_ms: int) -> list[ShareStateRecord]:
        keys = sorted(self.keys_of(partition))
        if all(self._quiet(k) for k in keys):
            return []  # nothing changed since every key's last cold rewrite
        out = []
        for k in keys:
            s = self.states[k]
            if now_ms - s.write_timestamp >= self.config.cold_partition_snapshot_interval_ms:
                cold = replace(s, snapshot_epoch=s.snapshot_epoch + 1, write_timestamp=now_ms)
                out.append(ShareStateRecord.snapshot(k, cold.to_snapshot()))
        return out

    def _quiet(self, key: ShareStateKey) -> bool:
        """No update follows ``key``'s latest snapshot, which is a cold rewrite."""
        s = self.states[key]
        return self.update_counts.get(key, 0) == 0 and s.create_timestamp != s.write_timestamp

    def last_redundant_offset(self, partition: int) -> int | None:
        """The offset below which ``partition`` holds no record needed to rebuild its state (the
        lowest offset of a live key's latest snapshot), or None if that is not known (no live
        key, or a key whose snapshot offset is unknown). Records below it may be deleted."""
        offsets = [self.snapshot_offsets.get(k, -1) for k in self.keys_of(partition)]
        if not offsets or min(offsets) < 0:
            return None
        return min(offsets) or None

    # ------------------------------------------------------------------ replay (persistent state)
    def load(self, records: Iterable[tuple[int, ShareStateRecord] | ShareStateRecord]) -> None:
        """Replay committed records read from ``__share_group_state`` (in log order; may be called
        chunk by chunk). Each is a record or an ``(offset, record)`` pair."""
        for item in records:
            if isinstance(item, tuple):
                offset, rec = item
                self.replay(rec, offset)
            else:
                self.replay(item)

    def replay(self, rec: ShareStateRecord, offset: int = -1) -> None:
        """Apply one committed record (at ``offset``, -1 if unknown)."""
        key = rec.key
        value = rec.value
        if value is None:
            for m in (
                self.states,
                self.leader_epochs,
                self.state_epochs,
                self.update_counts,
                self.snapshot_offsets,
            ):
                m.pop(key, None)
            return
        self.leader_epochs[key] = max(self.leader_epochs.get(key, value.leader_epoch), value.leader_epoch)
        if isinstance(value, ShareSnapshotValue):
            self.state_epochs[key] = max(self.state_epochs.get(key, value.state_epoch), value.state_epoch)
            self.states[key] = SharePartitionState.from_snapshot(value)
            self.update_counts[key] = 0
            self.snapshot_offsets[key] = offset
        else:
            current = self.states.get(key)
            if current is None:
                # An update without a snapshot before it (its snapshot was pruned away): it is
                # the state, with the default state epoch, as Kafka does.
                current = SharePartitionState(
                    value.snapshot_epoch, DEFAULT_STATE_EPOCH, value.leader_epoch, value.start_offset
                )
                self.snapshot_offsets[key] = offset
            self.states[key] = current.apply_update(value)
            self.update_counts[key] = self.update_counts.get(key, 0) + 1

    def complete_write(self, write: Write, error: E.KafkaError | None, now_ms: int) -> Effects:
        """The runtime reports a write's outcome: replay its records if committed, continue."""
        if error is None:
            n = len(write.records)
            for i, rec in enumerate(write.records):
                self.replay(rec, write.last_offset - n + 1 + i if write.last_offset >= 0 else -1)
        fx = Effects()
        write.then(error, now_ms, fx)
        return fx

    # ------------------------------------------------------------------ checks
    def _topic_error(self, topic_id: uuid.UUID, partition: int) -> tuple[int, str] | None:
        info = self.topics.by_id(topic_id)
        if info is None or info.partitions <= partition:
            e = E.UnknownTopicOrPartitionError
            return e.code, "This server does not host this topic-partition."
        return None

    @staticmethod
    def _request_error(topic_id: uuid.UUID | None, partition: int) -> tuple[int, str] | None:
        if topic_id is None:
            return E.InvalidRequestError.code, NULL_TOPIC_ID
        if partition < 0:
            return E.InvalidRequestError.code, NEGATIVE_PARTITION_ID
        return None

    def _fenced_leader(self, key: ShareStateKey, leader_epoch: int) -> bool:
        seen = self.leader_epochs.get(key)
        return seen is not None and seen > leader_epoch

    def _fenced_state(self, key: ShareStateKey, state_epoch: int) -> bool:
        seen = self.state_epochs.get(key)
        return state_epoch != -1 and seen is not None and seen > state_epoch

    def _stored(
        self, fx: Effects, token: Any, key: ShareStateKey, records: list[ShareStateRecord], result: Any
    ) -> None:
        """Append ``records`` for ``key``; reply ``result`` once committed, the mapped append
        error otherwise."""

        def then(err: E.KafkaError | None, now: int, fx2: Effects) -> None:
            if err is None:
                fx2.reply(token, result)
            else:
                mapped = write_error(err, for_offsets=False)
                fx2.reply(token, _error_like(result, mapped.code, str(mapped)))

        fx.writes.append(Write(self.partition_of(key), records, then))

    # ------------------------------------------------------------------ operations
    def initialize(
        self,
        token: Any,
        group_id: str,
        topic_id: uuid.UUID | None,
        partition: int,
        state_epoch: int,
        start_offset: int,
        now_ms: int,
    ) -> Effects:
        """InitializeShareGroupState for one share-partition. Reply: :class:`ShareStateResult`."""
        fx = Effects()
        err = self._request_error(topic_id, partition)
        if err is None and start_offset < -1:
            err = E.InvalidRequestError.code, f"Invalid start offset {start_offset}."
        if err is not None:
            fx.reply(token, ShareStateResult(*err))
            return fx
        assert topic_id is not None
        key = ShareStateKey(group_id, topic_id, partition)
        if self._fenced_state(key, state_epoch):
            fx.reply(token, ShareStateResult(FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE))
            return fx
        terr = self._topic_error(topic_id, partition)
        if terr is not None:
            fx.reply(token, ShareStateResult(*terr))
            return fx
        current = self.states.get(key)
        value = ShareSnapshotValue(
            snapshot_epoch=current.snapshot_epoch + 1 if current is not None else 0,
            state_epoch=state_epoch,
            leader_epoch=DEFAULT_LEADER_EPOCH,
            start_offset=start_offset,
            state_batches=(),
            create_timestamp=now_ms,
            write_timestamp=now_ms,
        )
        self._stored(fx, token, key, [ShareStateRecord.snapshot(key, value)], ShareStateResult())
        return fx

    def write(
        self,
        token: Any,
        group_id: str,
        topic_id: uuid.UUID | None,
        partition: int,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        state_batches: Sequence[StateBatch],
        now_ms: int,
        delivery_complete_count: int = -1,
    ) -> Effects:
        """WriteShareGroupState for one share-partition. Reply: :class:`ShareStateResult`."""
        fx = Effects()
        err = self._request_error(topic_id, partition)
        if err is None and start_offset < -1:
            err = E.InvalidRequestError.code, f"Invalid start offset {start_offset}."
        if err is None:
            bad = next((b for b in state_batches if not _valid_batch(b)), None)
            if bad is not None:
                err = E.InvalidRequestError.code, f"Invalid state batch {bad}."
        if err is not None:
            fx.reply(token, ShareStateResult(*err))
            return fx
        assert topic_id is not None
        key = ShareStateKey(group_id, topic_id, partition)
        if key not in self.states:
            fx.reply(token, ShareStateResult(E.InvalidRequestError.code, WRITE_UNINITIALIZED))
            return fx
        if leader_epoch != -1 and self._fenced_leader(key, leader_epoch):
            fx.reply(
                token,
                ShareStateResult(
                    E.FencedLeaderEpochError.code,
                    "The leader epoch in the request is older than the epoch on the broker.",
                ),
            )
            return fx
        if self._fenced_state(key, state_epoch):
            fx.reply(token, ShareStateResult(FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE))
            return fx
        terr = self._topic_error(topic_id, partition)
        if terr is not None:
            fx.reply(token, ShareStateResult(*terr))
            return fx
        record = self._state_record(
            key, None, start_offset, tuple(state_batches), delivery_complete_count, now_ms
        )
        self._stored(fx, token, key, [record], ShareStateResult())
        return fx

    def _state_record(
        self,
        key: ShareStateKey,
        new_leader_epoch: int | None,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int,
        now_ms: int,
    ) -> ShareStateRecord:
        """A snapshot of the merged state once ``snapshot_update_records_per_snapshot`` updates
        follow the last snapshot, else an update carrying just the change."""
        current = self.states[key]
        leader = current.leader_epoch if new_leader_epoch is None else new_leader_epoch
        if self.update_counts.get(key, 0) >= self.config.snapshot_update_records_per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            snapshot = SharePartitionState(
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=current.state_epoch,
                leader_epoch=leader,
                start_offset=start,
                state_batches=merge_batches(current.state_batches, batches, start),
                create_timestamp=now_ms,
                write_timestamp=now_ms,
                delivery_complete_count=_next_delivery_complete_count(
                    current.delivery_complete_count, delivery_complete_count, start_offset, batches
                ),
            )
            return ShareStateRecord.snapshot(key, snapshot.to_snapshot())
        update = ShareUpdateValue(
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=leader,
            start_offset=start_offset,
            state_batches=merge_batches((), batches, start_offset),
            delivery_complete_count=delivery_complete_count,
        )
        return ShareStateRecord.update(key, update)

    def read(
        self,
        token: Any,
        group_id: str,
        topic_id: uuid.UUID | None,
        partition: int,
        leader_epoch: int,
        now_ms: int,
    ) -> Effects:
        """ReadShareGroupState for one share-partition. Reply: :class:`ReadStateResult`."""
        fx = Effects()
        err = self._request_error(topic_id, partition)
        if err is not None:
            fx.reply(token, ReadStateResult(*err))
            return fx
        assert topic_id is not None
        key = ShareStateKey(group_id, topic_id, partition)
        state = self.states.get(key)
        if state is None:
            fx.reply(token, ReadStateResult(E.InvalidRequestError.code, READ_UNINITIALIZED))
            return fx
        if self._fenced_leader(key, leader_epoch):
            fx.reply(
                token,
                ReadStateResult(
                    E.FencedLeaderEpochError.code,
                    "The leader epoch in the request is older than the epoch on the broker.",
                ),
            )
            return fx
        terr = self._topic_error(topic_id, partition)
        if terr is not None:
            fx.reply(token, ReadStateResult(*terr))
            return fx
        result = ReadStateResult(0, None, state.state_epoch, state.start_offset, state.state_batches)
        if leader_epoch == -1 or self.leader_epochs.get(key) == leader_epoch:
            fx.reply(token, result)
            return fx
        # A new leader of the share-partition: record its epoch (fences the previous leader).
        record = self._state_record(key, leader_epoch, state.start_offset, (), -1, now_ms)
        self._stored(fx, token, key, [record], result)
        return fx

    def read_summary(
        self, token: Any, group_id: str, topic_id: uuid.UUID | None, partition: int, now_ms: int
    ) -> Effects:
        """ReadShareGroupStateSummary for one share-partition. Reply: :class:`ReadStateSummaryResult`."""
        fx = Effects()
        err = self._request_error(topic_id, partition)
        if err is None:
            assert topic_id is not None
            err = self._topic_error(topic_id, partition)
        if err is not None:
            fx.reply(token, ReadStateSummaryResult(*err))
            return fx
        assert topic_id is not None
        state = self.states.get(ShareStateKey(group_id, topic_id, partition))
        if state is None:
            fx.reply(token, ReadStateSummaryResult())
        else:
            fx.reply(
                token,
                ReadStateSummaryResult(
                    0,
                    None,
                    state.state_epoch,
                    state.leader_epoch,
                    state.start_offset,
                    state.delivery_complete_count,
                ),
            )
        return fx

    def delete(
        self, token: Any, group_id: str, topic_id: uuid.UUID | None, partition: int, now_ms: int
    ) -> Effects:
        """DeleteShareGroupState for one share-partition. Reply: :class:`ShareStateResult`."""
        fx = Effects()
        err = self._request_error(topic_id, partition)
        if err is None:
            assert topic_id is not None
            err = self._topic_error(topic_id, partition)
        if err is not None:
            fx.reply(token, ShareStateResult(*err))
            return fx
        assert topic_id is not None
        key = ShareStateKey(group_id, topic_id, partition)
        if key not in self.states:
            fx.reply(token, ShareStateResult())
            return fx
        self._stored(fx, token, key, [ShareStateRecord.tombstone(key)], ShareStateResult())
        return fx

    def delete_topics(self, topic_ids: Iterable[uuid.UUID], partition: int, now_ms: int) -> Effects:
        """Tombstones for every key of ``partition`` on a deleted topic (Kafka's
        ``maybeCleanupShareState``); nobody waits for them."""
        gone = set(topic_ids)
        fx = Effects()
        records = [
            ShareStateRecord.tombstone(k) for k in sorted(self.keys_of(partition)) if k.topic_id in gone
        ]
        if records:
            fx.writes.append(Write(partition, records, _nothing))
        return fx


def _nothing(err: E.KafkaError | None, now_ms: int, fx: Effects) -> None:
    """The continuation of a write nobody waits for (a failed one is redone by the next check)."""


def _error_like(result: Any, code: int, message: str) -> Any:
    """An error answer of the same type as ``result``."""
    return type(result)(code, message)


__all__ = [
    "FENCED_STATE_EPOCH",
    "Effects",
    "ReadStateResult",
    "ReadStateSummaryResult",
    "ShareCoordinatorShard",
    "SharePartitionState",
    "ShareStateConfig",
    "ShareStateResult",
    "Write",
    "merge_batches",
]
