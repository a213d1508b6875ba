"""The share coordinator's state machine and its ``__share_group_state`` records (KIP-932)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zurau.coordinator.share.share_coordinator_shard import (
    FENCED_STATE_EPOCH,
    Effects,
    ReadStateResult,
    ReadStateSummaryResult,
    ShareCoordinatorShard,
    ShareStateConfig,
    ShareStateResult,
    merge_batches,
)
from zurau.coordinator.share.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareStateRecord,
    ShareUpdateValue,
    build_records_batch,
    coordinator_key,
    decode_record,
    iter_log_records,
    partition_for_key,
)
from zurau.protocol import errors as E
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import set_base_offset
from zurau.protocol.share_states import RecordState, StateBatch

AVAILABLE, ACKNOWLEDGED, ARCHIVED = (
    int(RecordState.AVAILABLE),
    int(RecordState.ACKNOWLEDGED),
    int(RecordState.ARCHIVED),
)
INVALID_REQUEST = E.InvalidRequestError.code
FENCED_LEADER_EPOCH = E.FencedLeaderEpochError.code
UNKNOWN_TOPIC = E.UnknownTopicOrPartitionError.code

T1 = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
T2 = uuid.UUID(int=2)


@dataclass
class _Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int


class _Topics:
    def __init__(self, *topics: _Topic) -> None:
        self.topics = {t.topic_id: t for t in topics}

    def get(self, name: str) -> _Topic | None:
        return next((t for t in self.topics.values() if t.name == name), None)

    def by_id(self, topic_id: uuid.UUID) -> _Topic | None:
        return self.topics.get(topic_id)

    def names(self) -> list[str]:
        return [t.name for t in self.topics.values()]


@dataclass
class Harness:
    """Drives a shard as the runtime does: each write is appended as one batch to its partition's
    log (offsets assigned), committed at once (or failed), then completed."""

    config: ShareStateConfig = field(default_factory=ShareStateConfig)
    now: int = 1_000
    fail: E.KafkaError | None = None
    logs: dict[int, list[bytes]] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    written: list[ShareStateRecord] = field(default_factory=list)
    tokens: int = 0

    def __post_init__(self) -> None:
        self.topics = _Topics(_Topic("t1", T1, 4), _Topic("t2", T2, 1))
        self.shard = ShareCoordinatorShard(self.config, self.topics)

    def run(self, op: str, *args: Any) -> Any:
        self.tokens += 1
        token = self.tokens
        fx = getattr(self.shard, op)(token, *args, self.now)
        replies = self.drain(fx)
        assert [t for t, _ in replies] == [token]
        return replies[0][1]

    def drain(self, fx: Effects) -> list[tuple[Any, Any]]:
        replies = list(fx.replies)
        for w in fx.writes:
            err = self.fail
            if err is None:
                batch = build_records_batch(w.records, self.now)
                self.logs.setdefault(w.partition, []).append(batch)
                end = self.ends.get(w.partition, 0) + len(w.records)
                self.ends[w.partition] = end
                w.last_offset = end - 1
                self.written.extend(w.records)
            replies += self.drain(self.shard.complete_write(w, err, self.now))
        return replies

    def init(
        self,
        group: str = "g",
        topic: uuid.UUID | None = T1,
        partition: int = 0,
        state_epoch: int = 0,
        start: int = 0,
    ) -> Any:
        return self.run("initialize", group, topic, partition, state_epoch, start)

    def write(
        self,
        batches: list[StateBatch],
        start: int = -1,
        group: str = "g",
        topic: uuid.UUID | None = T1,
        partition: int = 0,
        state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> Any:
        return self.run("write", group, topic, partition, state_epoch, leader_epoch, start, batches)

    def read(
        self, group: str = "g", topic: uuid.UUID | None = T1, partition: int = 0, leader_epoch: int = 0
    ) -> Any:
        return self.run("read", group, topic, partition, leader_epoch)

    def replayed(self) -> ShareCoordinatorShard:
        """A fresh shard loaded from every partition's log, as after a restart."""
        fresh = ShareCoordinatorShard(self.config, self.topics)
        for partition in sorted(self.logs):
            for _nxt, records in iter_log_records(_with_offsets(self.logs[partition])):
                fresh.load(records)
        return fresh


def _with_offsets(batches: list[bytes]) -> bytes:
    """The batches as one log: each batch's base offset set where the previous one ended."""
    out = bytearray()
    base = 0
    for b in batches:
        buf = bytearray(b)
        set_base_offset(buf, 0, base)
        n = len(list(iter_log_records(bytes(buf)))[0][1])
        base += n
        out += buf
    return bytes(out)


def sb(first: int, last: int, state: int = ACKNOWLEDGED, count: int = 1) -> StateBatch:
    return StateBatch(first, last, state, count)


def key(group: str = "g", topic: uuid.UUID = T1, partition: int = 0) -> ShareStateKey:
    return ShareStateKey(group, topic, partition)


# ---------------------------------------------------------------------------------- records


def test_snapshot_record_bytes_are_kafkas() -> None:
    rec = ShareStateRecord.snapshot(
        ShareStateKey("g1", T1, 3),
        ShareSnapshotValue(
            snapshot_epoch=1,
            state_epoch=2,
            leader_epoch=5,
            start_offset=10,
            state_batches=(StateBatch(10, 12, ACKNOWLEDGED, 1),),
            create_timestamp=1_700_000_000_000,
            write_timestamp=1_700_000_000_001,
        ),
    )
    # int16 record type 0, string group, uuid, int32 partition
    assert rec.key_bytes() == bytes.fromhex("0000" + "00026731" + T1.hex + "00000003")
    # int16 version 0, then the flexible v0 struct: epochs, start, timestamps, compact array of
    # one batch (with its empty tagged fields), empty tagged fields (delivery_complete_count -1)
    assert rec.value_bytes() == bytes.fromhex(
        "0000"
        "00000001"
        "00000002"
        "00000005"
        "000000000000000a"
        "0000018bcfe56800"
        "0000018bcfe56801"
        "02"
        "000000000000000a"
        "000000000000000c"
        "02"
        "0001"
        "00"
        "00"
    )
    assert decode_record(rec.key_bytes(), rec.value_bytes()) == rec


def test_delivery_complete_count_is_tag_zero() -> None:
    v = ShareUpdateValue(snapshot_epoch=0, leader_epoch=1, start_offset=-1, delivery_complete_count=7)
    rec = ShareStateRecord.update(key(), v)
    assert rec.value_bytes() == bytes.fromhex("00000000000000000001ffffffffffffffff0101000400000007")
    assert rec.key_bytes()[:2] == b"\x00\x01"
    assert decode_record(rec.key_bytes(), rec.value_bytes()) == rec


def test_tombstone_and_unknown_and_malformed_records() -> None:
    tomb = ShareStateRecord.tombstone(key())
    assert tomb.record_type == SHARE_SNAPSHOT and tomb.value_bytes() is None
    assert decode_record(tomb.key_bytes(), None) == tomb
    # a record type this broker does not know is skipped
    assert decode_record(b"\x00\x07" + tomb.key_bytes()[2:], b"\x00\x00") is None
    snap = ShareStateRecord.snapshot(key(), ShareSnapshotValue(0, 0, 0, 0))
    value = snap.value_bytes()
    assert value is not None
    with pytest.raises(DecodeError):
        decode_record(snap.key_bytes(), b"\x00\x01" + value[2:])  # no value version 1
    with pytest.raises(DecodeError):
        decode_record(snap.key_bytes(), value[:-3])  # truncated
    with pytest.raises(DecodeError):
        decode_record(snap.key_bytes(), value + b"\x00")  # trailing bytes
    with pytest.raises(DecodeError):
        decode_record(b"\x00", None)


def _java_hash(s: str) -> int:
    h = 0
    for ch in s:  # ASCII: one UTF-16 code unit per character
        h = (h * 31 + ord(ch)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def test_partition_of_a_key_is_kafkas() -> None:
    assert coordinator_key("group-a", T1, 2) == "group-a:Dx4tPEtaaXiHlqW0w9Lh8A:2"
    for group, partition in [("group-a", 2), ("g", 0), ("a-much-longer-share-group-name", 17)]:
        text = coordinator_key(group, T1, partition)
        expected = abs(_java_hash(text)) % 50
        assert partition_for_key(group, T1, partition, 50) == expected
    assert all(0 <= partition_for_key(f"g{i}", T2, i, 7) < 7 for i in range(200))


# ---------------------------------------------------------------------------------- operations


def test_initialize_writes_a_snapshot_and_fences_older_state_epochs() -> None:
    h = Harness()
    assert h.init(state_epoch=3, start=5) == ShareStateResult()
    rec = h.written[-1]
    assert rec.record_type == SHARE_SNAPSHOT
    assert rec.value == ShareSnapshotValue(0, 3, 0, 5, (), h.now, h.now)
    assert h.read() == ReadStateResult(0, None, 3, 5, ())
    h.now += 10
    assert h.init(state_epoch=3, start=7) == ShareStateResult()  # same epoch: allowed
    assert isinstance(h.written[-1].value, ShareSnapshotValue) and h.written[-1].value.snapshot_epoch == 1
    assert h.init(state_epoch=2).error_code == FENCED_STATE_EPOCH
    assert h.init(state_epoch=-1, start=1) == ShareStateResult()  # -1 skips the fence
    assert h.shard.state_epochs[key()] == 3  # the highest seen stays


@pytest.mark.parametrize(
    ("topic", "partition", "code"),
    [
        (None, 0, INVALID_REQUEST),
        (T1, -1, INVALID_REQUEST),
        (uuid.UUID(int=99), 0, UNKNOWN_TOPIC),
        (T1, 4, UNKNOWN_TOPIC),
    ],
)
def test_every_operation_checks_topic_and_partition(
    topic: uuid.UUID | None, partition: int, code: int
) -> None:
    h = Harness()
    n = len(h.written)
    assert h.run("initialize", "g", topic, partition, 0, 0).error_code == code
    assert h.run("write", "g", topic, partition, 0, 0, 0, [sb(0, 1)]).error_code in (code, INVALID_REQUEST)
    assert h.run("read", "g", topic, partition, 0).error_code in (code, INVALID_REQUEST)
    assert h.run("read_summary", "g", topic, partition).error_code == code
    assert h.run("delete", "g", topic, partition).error_code == code
    assert len(h.written) == n


def test_write_merges_into_the_state() -> None:
    h = Harness()
    h.init(start=0)
    assert h.write([sb(0, 9, ACKNOWLEDGED, 1)]) == ShareStateResult()
    upd = h.written[-1]
    assert upd.record_type == SHARE_UPDATE
    assert upd.value == ShareUpdateValue(0, 0, -1, (sb(0, 9),))
    h.write([sb(5, 14, AVAILABLE, 2), sb(12, 12, ARCHIVED, 3)], start=3)
    assert h.read().state_batches == (
        sb(3, 4, ACKNOWLEDGED, 1),
        sb(5, 11, AVAILABLE, 2),
        sb(12, 12, ARCHIVED, 3),
        sb(13, 14, AVAILABLE, 2),
    )
    assert h.read().start_offset == 3
    h.write([sb(15, 20, AVAILABLE, 2)], start=12)  # contiguous with equal state: joined
    assert h.read().state_batches == (sb(12, 12, ARCHIVED, 3), sb(13, 20, AVAILABLE, 2))
    h.write([], start=30)
    assert h.read() == ReadStateResult(0, None, 0, 30, ())


def test_write_errors() -> None:
    h = Harness()
    assert h.write([sb(0, 1)]) == ShareStateResult(
        INVALID_REQUEST, "Write operation on uninitialized share partition not allowed."
    )
    h.init(state_epoch=2)
    assert h.read(leader_epoch=5).error_code == 0  # leader 5 recorded
    assert h.write([sb(0, 1)], state_epoch=2, leader_epoch=4).error_code == FENCED_LEADER_EPOCH
    assert h.write([sb(0, 1)], state_epoch=1, leader_epoch=5).error_code == FENCED_STATE_EPOCH
    n = len(h.written)
    assert h.write([sb(3, 2)], state_epoch=2, leader_epoch=5).error_code == INVALID_REQUEST
    assert h.write([sb(0, 1, state=3)], state_epoch=2, leader_epoch=5).error_code == INVALID_REQUEST
    assert h.write([sb(0, 1, count=1 << 15)], state_epoch=2, leader_epoch=5).error_code == INVALID_REQUEST
    assert h.write([sb(0, 1)], start=-2, state_epoch=2, leader_epoch=5).error_code == INVALID_REQUEST
    assert len(h.written) == n
    assert h.read(leader_epoch=5).state_batches == ()
    # -1 skips both fences; the write does not change the state's epochs
    assert h.write([sb(0, 1)], state_epoch=-1, leader_epoch=-1) == ShareStateResult()
    assert h.shard.leader_epochs[key()] == 5 and h.read(leader_epoch=5).state_epoch == 2


def test_a_failed_append_answers_the_mapped_error_and_changes_nothing() -> None:
    h = Harness()
    h.init()
    h.write([sb(0, 4)])
    before = h.shard.states[key()]
    h.fail = E.NotEnoughReplicasError("too few")
    assert h.write([sb(0, 9, ARCHIVED, 2)]).error_code == E.CoordinatorNotAvailableError.code
    h.fail = E.NotLeaderOrFollowerError("moved")
    assert h.read(leader_epoch=3).error_code == E.NotCoordinatorError.code
    assert isinstance(h.read(leader_epoch=3), ReadStateResult)
    h.fail = None
    assert h.shard.states[key()] == before


def test_snapshot_cadence() -> None:
    h = Harness(config=ShareStateConfig(snapshot_update_records_per_snapshot=3))
    h.init()
    types = []
    for i in range(9):
        h.now += 1
        h.write([sb(i, i, ACKNOWLEDGED, 1)], start=0)
        types.append(h.written[-1].record_type)
    assert types == [SHARE_UPDATE] * 3 + [SHARE_SNAPSHOT] + [SHARE_UPDATE] * 3 + [SHARE_SNAPSHOT] + [
        SHARE_UPDATE
    ]
    snaps = [r.value for r in h.written if isinstance(r.value, ShareSnapshotValue)]
    assert [s.snapshot_epoch for s in snaps] == [0, 1, 2]
    assert snaps[1].state_batches == (sb(0, 3),)  # the merged state, not just the change
    assert snaps[1].create_timestamp == snaps[1].write_timestamp == 1_004
    # updates name the snapshot they apply to
    assert [r.value.snapshot_epoch for r in h.written if isinstance(r.value, ShareUpdateValue)] == [
        0,
        0,
        0,
        1,
        1,
        1,
        2,
    ]
    assert h.read().state_batches == (sb(0, 8),)


def test_every_write_snapshots_with_a_limit_of_zero() -> None:
    h = Harness(config=ShareStateConfig(snapshot_update_records_per_snapshot=0))
    h.init()
    h.write([sb(0, 0)])
    h.write([sb(1, 1)])
    assert [r.record_type for r in h.written] == [SHARE_SNAPSHOT] * 3


def test_read_records_a_new_leader_epoch() -> None:
    h = Harness()
    assert h.read() == ReadStateResult(
        INVALID_REQUEST, "Read operation on uninitialized share partition not allowed."
    )
    h.init(state_epoch=1, start=4)
    assert h.write([sb(4, 6)], state_epoch=1) == ShareStateResult()
    n = len(h.written)
    assert h.read(leader_epoch=0) == ReadStateResult(0, None, 1, 4, (sb(4, 6),))
    assert len(h.written) == n  # the epoch seen: nothing to write
    assert h.read(leader_epoch=2) == ReadStateResult(0, None, 1, 4, (sb(4, 6),))
    rec = h.written[-1]
    assert rec.value == ShareUpdateValue(0, 2, 4, ())
    assert h.shard.leader_epochs[key()] == 2
    assert h.read(leader_epoch=1).error_code == FENCED_LEADER_EPOCH
    assert h.read(leader_epoch=-1).error_code == FENCED_LEADER_EPOCH  # Kafka: -1 is below any epoch seen
    assert h.run("read_summary", "g", T1, 0) == ReadStateSummaryResult(0, None, 1, 2, 4, -1)


def test_read_summary_of_an_uninitialized_key_is_not_an_error() -> None:
    h = Harness()
    assert h.run("read_summary", "g", T1, 0) == ReadStateSummaryResult(0, None, 0, 0, -1, -1)


def test_delete_writes_a_tombstone() -> None:
    h = Harness()
    assert h.run("delete", "g", T1, 0) == ShareStateResult()
    assert h.written == []  # nothing to delete
    h.init(state_epoch=4)
    h.write([sb(0, 3)])
    assert h.run("delete", "g", T1, 0) == ShareStateResult()
    assert h.written[-1] == ShareStateRecord.tombstone(key())
    assert h.read().error_code == INVALID_REQUEST
    assert key() not in h.shard.state_epochs
    assert h.init(state_epoch=0) == ShareStateResult()  # the old state epoch is forgotten


def test_delete_topics_tombstones_their_keys() -> None:
    h = Harness()
    h.init(topic=T1)
    h.init(topic=T2)
    partitions = {h.shard.partition_of(key(topic=t)) for t in (T1, T2)}
    for p in partitions:
        h.drain(h.shard.delete_topics([T1], p, h.now))
    assert set(h.shard.states) == {key(topic=T2)}


# ---------------------------------------------------------------------------------- merging (property)


def _model_batches(model: dict[int, tuple[int, int]], start: int) -> tuple[StateBatch, ...]:
    out: list[StateBatch] = []
    for o in sorted(model):
        if start != -1 and o < start:
            continue
        s, c = model[o]
        if (
            out
            and out[-1].last_offset + 1 == o
            and (out[-1].delivery_state, out[-1].delivery_count) == (s, c)
        ):
            out[-1] = StateBatch(out[-1].first_offset, o, s, c)
        else:
            out.append(StateBatch(o, o, s, c))
    return tuple(out)


_batch = st.builds(
    lambda first, length, state, count: StateBatch(first, first + length, state, count),
    st.integers(0, 60),
    st.integers(0, 12),
    st.sampled_from([AVAILABLE, ACKNOWLEDGED, ARCHIVED]),
    st.integers(0, 3),
)
_write = st.tuples(st.one_of(st.just(-1), st.integers(0, 50)), st.lists(_batch, max_size=5))


@settings(max_examples=200, deadline=None)
@given(initial_start=st.integers(0, 20), writes=st.lists(_write, max_size=12), per_snapshot=st.integers(0, 4))
def test_merging_writes_equals_an_offset_model(
    initial_start: int, writes: list[tuple[int, list[StateBatch]]], per_snapshot: int
) -> None:
    h = Harness(config=ShareStateConfig(snapshot_update_records_per_snapshot=per_snapshot))
    h.init(start=initial_start)
    model: dict[int, tuple[int, int]] = {}
    start = initial_start
    for new_start, batches in writes:
        h.now += 1
        assert h.write(batches, start=new_start) == ShareStateResult()
        if new_start != -1:
            start = new_start
        for b in batches:
            for o in range(b.first_offset, b.last_offset + 1):
                model[o] = (b.delivery_state, b.delivery_count)
        model = {o: v for o, v in model.items() if o >= start}
        got = h.read()
        assert got.start_offset == start
        assert got.state_batches == _model_batches(model, start)
    # the replayed state is the same
    assert h.replayed().states == h.shard.states


@given(st.lists(_batch, max_size=8), st.lists(_batch, max_size=8), st.integers(-1, 40))
def test_merge_batches_is_canonical(current: list[StateBatch], newer: list[StateBatch], start: int) -> None:
    merged = merge_batches(current, newer, start)
    for a, b in zip(merged, merged[1:], strict=False):
        assert a.last_offset < b.first_offset
        assert not (
            a.last_offset + 1 == b.first_offset
            and (a.delivery_state, a.delivery_count) == (b.delivery_state, b.delivery_count)
        )
    assert all(start == -1 or b.first_offset >= start for b in merged)
    assert merge_batches(merged, (), start) == merged


# ---------------------------------------------------------------------------------- replay


_op = st.one_of(
    st.tuples(
        st.just("init"),
        st.sampled_from(["a", "b"]),
        st.integers(0, 3),
        st.integers(-1, 3),
        st.integers(0, 20),
    ),
    st.tuples(
        st.just("write"),
        st.sampled_from(["a", "b"]),
        st.integers(0, 3),
        st.integers(-1, 30),
        st.lists(_batch, max_size=3),
    ),
    st.tuples(st.just("read"), st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(0, 6)),
    st.tuples(st.just("delete"), st.sampled_from(["a", "b"]), st.integers(0, 3)),
)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(_op, max_size=40), per_snapshot=st.integers(0, 3))
def test_replaying_the_emitted_records_rebuilds_the_same_state(
    ops: list[tuple[Any, ...]], per_snapshot: int
) -> None:
    h = Harness(config=ShareStateConfig(num_partitions=3, snapshot_update_records_per_snapshot=per_snapshot))
    for op in ops:
        h.now += 7
        kind, group, partition = op[0], op[1], op[2]
        if kind == "init":
            h.init(group, T1, partition, op[3], op[4])
        elif kind == "write":
            h.write(op[4], start=op[3], group=group, partition=partition, state_epoch=-1, leader_epoch=-1)
        elif kind == "read":
            h.read(group, T1, partition, op[3])
        else:
            h.run("delete", group, T1, partition)
    fresh = h.replayed()
    assert fresh.states == h.shard.states
    assert fresh.leader_epochs == h.shard.leader_epochs
    assert fresh.state_epochs == h.shard.state_epochs
    assert fresh.update_counts == h.shard.update_counts
    assert fresh.snapshot_offsets == h.shard.snapshot_offsets


# ---------------------------------------------------------------------------------- partitions, timers


def test_unload_forgets_only_the_partitions_keys() -> None:
    h = Harness(config=ShareStateConfig(num_partitions=2))
    groups = [f"g{i}" for i in range(8)]
    for g in groups:
        h.init(group=g)
    by_partition = {g: h.shard.partition_of(key(g)) for g in groups}
    assert set(by_partition.values()) == {0, 1}
    h.shard.start_partition(0, h.now)
    h.shard.unload_partition(0)
    assert {k.group_id for k in h.shard.states} == {g for g, p in by_partition.items() if p == 1}
    assert h.shard.next_deadline(0) is None


def test_cold_snapshots_and_the_redundant_offset() -> None:
    h = Harness(config=ShareStateConfig(num_partitions=1, cold_partition_snapshot_interval_ms=100))
    h.shard.start_partition(0, h.now)
    assert h.shard.next_deadline(0) == 1_100
    assert h.shard.last_redundant_offset(0) is None  # no key
    h.init(group="a")  # offset 0
    h.init(group="b")  # offset 1
    h.write([sb(0, 0)], group="a")  # offset 2 (update)
    assert h.shard.last_redundant_offset(0) is None  # "a"'s snapshot is at offset 0: nothing to prune
    assert h.drain(h.shard.poll(1_099, 0)) == [] and len(h.written) == 3  # not due
    h.now = 1_100
    h.drain(h.shard.poll(h.now, 0))
    cold = h.written[3:]
    assert [(r.key.group_id, r.record_type) for r in cold] == [("a", SHARE_SNAPSHOT), ("b", SHARE_SNAPSHOT)]
    a = cold[0].value
    assert isinstance(a, ShareSnapshotValue)
    assert (a.snapshot_epoch, a.create_timestamp, a.write_timestamp, a.state_batches) == (
        1,
        1_000,
        1_100,
        (sb(0, 0),),
    )
    assert h.shard.last_redundant_offset(0) == 3  # everything before the cold snapshots
    assert h.shard.next_deadline(0) == 1_200
    h.now = 1_200
    h.drain(h.shard.poll(h.now, 0))
    assert len(h.written) == 5  # quiet: nothing rewritten
    h.write([sb(1, 1)], group="b")  # offset 5
    h.now = 1_300
    h.drain(h.shard.poll(h.now, 0))
    assert [(r.key.group_id, r.value.snapshot_epoch) for r in h.written[6:] if r.value is not None] == [
        ("a", 2),
        ("b", 2),
    ]
    assert h.shard.last_redundant_offset(0) == 6
    assert h.replayed().states == h.shard.states
