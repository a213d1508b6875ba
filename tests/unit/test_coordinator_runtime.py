"""The coordinator runtime: replies wait for the high watermark, shards load and unload, timers.

Driven through the test drivers (the real runtime on a ManualClock and an in-memory log whose high
watermark can be held back, as a slow ISR would), and once over a real ReplicaManager.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.unit.group_driver import BROKER_CONFIG, Driver, FakeTopics
from tests.unit.memory_writer import MemoryPartitionWriter
from tests.unit.test_group_coordinator import G, group, stable_group
from tests.unit.txn_driver import TID, TxnDriver
from zurau.clock import ManualClock
from zurau.coordinator.group.group_metadata import GroupState
from zurau.coordinator.group.group_runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from zurau.coordinator.group.results import OffsetCommitEntry
from zurau.coordinator.partition_writer import ReplicaManagerPartitionWriter
from zurau.coordinator.timers import PartitionedTimers
from zurau.coordinator.txn.results import EndTxnResult
from zurau.coordinator.txn.transaction_log_records import TxnState
from zurau.coordinator.txn.transaction_runtime import TRANSACTION_STATE_TOPIC
from zurau.protocol import errors as E
from zurau.replication.replica_manager import ReplicaManager
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager

GROUP_CONFIG = BROKER_CONFIG.group_coordinator


def commit(d: Driver, offsets: dict[tuple[str, int], int], group_id: str = G) -> int:
    """Send an OffsetCommit (simple group); returns the request's handle."""
    return d.call(
        "commit_offsets",
        group_id=group_id,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=[OffsetCommitEntry(tp[0], tp[1], o, 0, "") for tp, o in offsets.items()],
        api_version=8,
    )


def other_partition_group(d: Driver, gid: str = G) -> str:
    p = d.core.partition_for(gid)
    return next(g for g in (f"other-{i}" for i in range(100)) if d.core.partition_for(g) != p)


# ---------------------------------------------------------------------------------- high watermark


def test_a_commit_is_answered_only_once_the_high_watermark_passes_it() -> None:
    d = Driver()
    p = d.core.partition_for(G)
    d.writer.hold(OFFSETS_TOPIC, p)
    first = commit(d, {("t", 0): 5})
    assert d.pending(first), "written but not committed: no reply yet"
    assert d.committed(G)[0] == -1, "nor is the state machine told"
    assert d.writer.log(OFFSETS_TOPIC, p).end == 1
    second = commit(d, {("t", 0): 6})
    assert d.pending(second)
    assert d.writer.log(OFFSETS_TOPIC, p).end == 1, "the partition's next input waits its turn"
    other = other_partition_group(d)
    assert d.reply(commit(d, {("t", 1): 1}, other)) == {("t", 1): 0}, "other partitions go on"
    d.writer.release(OFFSETS_TOPIC, p)
    assert d.reply(first) == {("t", 0): 0} and d.reply(second) == {("t", 0): 0}
    assert [h for h in d.replies if h in (first, second)] == [first, second], "in order"
    assert d.committed(G)[0] == 6


def test_a_commit_not_replicated_in_time_is_answered_request_timed_out() -> None:
    """offsets.commit.timeout.ms (5 s): the client hears REQUEST_TIMED_OUT (and retries); the
    write stays and applies once the high watermark passes it."""
    d = Driver()
    p = d.core.partition_for(G)
    d.writer.hold(OFFSETS_TOPIC, p)
    first = commit(d, {("t", 0): 5})
    d.advance(4_999)
    assert d.pending(first)
    d.advance(1)
    assert isinstance(d.reply(first), E.RequestTimedOutError)
    d.writer.release(OFFSETS_TOPIC, p)
    assert d.committed(G)[0] == 5, "the write applied when it committed"
    assert d.reply(commit(d, {("t", 0): 6})) == {("t", 0): 0}


def test_a_failed_append_is_answered_at_once() -> None:
    d = Driver()
    d.fail_writes = E.NotEnoughReplicasError("isr")
    assert d.reply(commit(d, {("t", 0): 5})) == {("t", 0): E.CoordinatorNotAvailableError.code}
    d.fail_writes = None
    assert d.reply(commit(d, {("t", 0): 5})) == {("t", 0): 0}


def test_a_sync_group_is_answered_once_the_assignment_is_committed() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    d.writer.hold(OFFSETS_TOPIC, d.core.partition_for(G))
    join_a = d.join(G, a)
    join_b = d.join(G, b)
    assert not d.pending(join_a) and not d.pending(join_b), "a rebalance writes nothing until the sync"
    gen2 = d.reply(join_a).generation_id
    sync_b = d.sync(G, b, gen2)
    sync_a = d.sync(G, a, gen2, {a: b"x", b: b"y"})
    assert d.pending(sync_a) and d.pending(sync_b)
    d.writer.release()
    assert d.reply(sync_a).assignment == b"x" and d.reply(sync_b).assignment == b"y"
    assert group(d).state == GroupState.STABLE and gen2 == gen + 1


def test_txn_end_is_answered_once_prepare_is_committed_and_completes_once_markers_are() -> None:
    d = TxnDriver()
    r = d.init()
    assert d.add(r.producer_id, r.producer_epoch, ("t", 0), ("t", 1)) == 0
    d.writer.hold(TRANSACTION_STATE_TOPIC, d.core.partition_for(TID))
    replies: list[Any] = []
    d.rt.request(
        TID,
        lambda token, now: d.core.end_transaction(
            token, transactional_id=TID, producer_id=r.producer_id, producer_epoch=0, commit=True, now_ms=now
        ),
        lambda result, err: replies.append((result, err)),
    )
    assert replies == [] and d.state().state == TxnState.ONGOING
    d.writer.hold("t", 1)  # one data partition's ISR is slow
    d.writer.release(TRANSACTION_STATE_TOPIC)
    # Transactions v1 (no EndTxn v5): the same producer id and epoch go on.
    assert replies == [(EndTxnResult(0, r.producer_id, r.producer_epoch), None)]
    assert d.state().state == TxnState.PREPARE_COMMIT
    assert [m[:2] for m in d.markers] == [("t", 0)], "the other marker is not committed yet"
    d.writer.release("t", 1)
    assert d.state().state == TxnState.COMPLETE_COMMIT and len(d.markers) == 2


def test_markers_not_committed_in_time_are_retried() -> None:
    d = TxnDriver()
    r = d.init()
    assert d.add(r.producer_id, r.producer_epoch, ("t", 0)) == 0
    d.writer.hold("t", 0)
    assert d.end(r.producer_id, 0, True) == 0
    d.advance(30_000)  # the marker wait times out: the state machine retries after its backoff
    d.writer.release("t", 0)
    d.advance(100)
    assert d.state().state == TxnState.COMPLETE_COMMIT
    assert d.markers == [("t", 0, r.producer_id, 0, True)] * 2, "written twice (harmless)"


# ---------------------------------------------------------------------------------- load / unload


def test_unload_answers_parked_and_waiting_requests_not_coordinator() -> None:
    d = Driver()
    p = d.core.partition_for(G)
    mid, join = d.join_with_id(G)
    assert d.pending(join), "parked in the join phase"
    d.writer.hold(OFFSETS_TOPIC, p)
    simple = other_partition_group(d)
    # A group of the same partition with a write in flight, and one queued behind it.
    same = next(g for g in (f"same-{i}" for i in range(500)) if d.core.partition_for(g) == p)
    held = commit(d, {("t", 0): 1}, same)
    queued = commit(d, {("t", 0): 2}, same)
    assert d.pending(held) and d.pending(queued)
    d.rt.unload(p)
    for h in (join, held, queued):
        assert isinstance(d.reply(h), E.NotCoordinatorError)
    assert G not in d.core.groups and same not in d.core.groups
    assert isinstance(d.rt.coordinator_error(G), E.NotCoordinatorError)
    assert isinstance(d.reply(commit(d, {("t", 0): 3})), E.NotCoordinatorError)
    d.advance(60_000)  # no timer of the unloaded partition fires
    assert d.reply(commit(d, {("u", 0): 7}, simple)) == {("u", 0): 0}, "other partitions are served"
    d.writer.release()
    assert mid not in d.core.member_ids(G)


def test_load_after_unload_restores_the_partition_from_its_records() -> None:
    d = Driver()
    (a, b), gen = stable_group(d, 2)
    d.commit(G, {("t", 0): 11, ("t", 3): 33}, member_id=a, generation=gen)
    p = d.core.partition_for(G)
    before = dict(d.core.offsets[G])
    d.rt.unload(p)
    assert G not in d.core.groups and G not in d.core.offsets
    d.rt.load(p)
    assert d.rt.coordinator_error(G) is None
    g = group(d)
    assert (g.state, g.generation_id, set(g.members)) == (GroupState.STABLE, gen, {a, b})
    assert d.core.offsets[G] == before
    # Fresh session timers: members that keep heartbeating stay, a silent one leaves.
    d.advance(6000)
    assert d.heartbeat(G, a, gen) == 0
    d.advance(6000)
    assert b not in g.members


def test_txn_unload_and_load_restores_transactions() -> None:
    d = TxnDriver()
    r = d.init()
    assert d.add(r.producer_id, 0, ("t", 0)) == 0
    p = d.core.partition_for(TID)
    d.rt.unload(p)
    assert TID not in d.core.transactions and r.producer_id not in d.core.by_producer_id
    assert isinstance(
        d.call(
            "end_transaction", transactional_id=TID, producer_id=r.producer_id, producer_epoch=0, commit=True
        ),
        E.NotCoordinatorError,
    )
    d.rt.load(p)
    assert d.state().state == TxnState.ONGOING and d.core.by_producer_id[r.producer_id] == TID
    assert d.end(r.producer_id, 0, True) == 0 and d.state().state == TxnState.COMPLETE_COMMIT


def test_a_large_partition_loads_in_chunks_and_answers_load_in_progress_meanwhile() -> None:
    d = Driver()
    for i in range(20):
        assert d.commit(G, {("t", i % 6): i}) == {("t", i % 6): 0}
    p = d.core.partition_for(G)
    clock = ManualClock(d.now)
    small = replace(d.config, load_buffer_size=1)  # one batch per chunk
    rt = GroupCoordinatorRuntime(small, d.writer, d.topics, lambda *a: None, clock)
    rt.load(p)
    assert isinstance(rt.coordinator_error(G), E.CoordinatorLoadInProgressError)
    outcome: list[Any] = []
    rt.request(
        G,
        lambda token, now: rt.core.heartbeat(
            token, group_id=G, generation_id=0, member_id="m", group_instance_id=None, now_ms=now
        ),
        lambda result, err: outcome.append(err),
    )
    assert isinstance(outcome[0], E.CoordinatorLoadInProgressError)
    assert rt.core.offsets[G] != d.core.offsets[G], "one chunk (batch) replayed so far"
    clock.advance(0)  # the next chunks, each on a later turn of the clock
    assert rt.loaded(p) and rt.coordinator_error(G) is None
    assert rt.core.offsets[G] == d.core.offsets[G]


# ---------------------------------------------------------------------------------- the internal topic


class _Creator:
    """Creates ``__consumer_offsets`` in the fake topics, loading its partitions inside the call
    (as on one node, where the metadata publisher loads them within ``create_topic``) or not (they
    are loaded later, when the metadata reaches their leader)."""

    def __init__(self, topics: FakeTopics, load_inside: bool) -> None:
        self.topics = topics
        self.load_inside = load_inside
        self.rt: GroupCoordinatorRuntime | None = None
        self.calls: list[tuple[str, int, int, dict[str, str | None]]] = []

    def __call__(self, name: str, partitions: int, rf: int, configs: dict[str, str | None]) -> None:
        self.calls.append((name, partitions, rf, configs))
        self.topics.add(name, partitions)
        if self.load_inside:
            assert self.rt is not None
            for i in range(partitions):
                self.rt.load(i)


def _runtime(load_inside: bool, partitions: int = 3) -> tuple[GroupCoordinatorRuntime, _Creator]:
    topics = FakeTopics(t=6)
    creator = _Creator(topics, load_inside)
    config = replace(GROUP_CONFIG, num_partitions=partitions)
    rt = GroupCoordinatorRuntime(config, MemoryPartitionWriter(), topics, creator, ManualClock())
    creator.rt = rt
    return rt, creator


def test_the_internal_topic_is_created_on_first_use_and_loaded_inside_the_creation() -> None:
    rt, creator = _runtime(load_inside=True)
    assert rt.coordinator_error(G) is None
    assert [(c[0], c[1]) for c in creator.calls] == [(OFFSETS_TOPIC, 3)]
    assert creator.calls[0][3]["cleanup.policy"] == "compact"
    assert rt.loaded_partitions() == [0, 1, 2]


def test_the_internal_topic_is_created_on_first_use_and_loaded_afterwards() -> None:
    rt, creator = _runtime(load_inside=False)
    assert isinstance(rt.coordinator_error(G), E.CoordinatorNotAvailableError)
    assert isinstance(rt.coordinator_error(G), E.NotCoordinatorError), "created: not ours until loaded"
    for i in range(3):
        rt.load(i)
    assert rt.coordinator_error(G) is None and len(creator.calls) == 1


def test_nothing_is_loaded_before_the_topic_exists_and_what_is_created_is_loaded_inside() -> None:
    rt, creator = _runtime(load_inside=True)
    assert creator.topics.get(OFFSETS_TOPIC) is None, "at start there is no partition to load"
    assert rt.loaded_partitions() == []
    assert rt.coordinator_error(G) is None and rt.loaded_partitions() == [0, 1, 2]


def test_the_existing_topic_partition_count_wins() -> None:
    rt, creator = _runtime(load_inside=False, partitions=50)
    creator.topics.add(OFFSETS_TOPIC, 4)
    rt.load(0)
    assert rt.core.config.num_partitions == 4


def test_a_topic_that_cannot_be_created_means_coordinator_not_available() -> None:
    def refuse(*args: object) -> None:
        raise E.InvalidReplicationFactorError("one broker")

    rt = GroupCoordinatorRuntime(GROUP_CONFIG, MemoryPartitionWriter(), FakeTopics(), refuse, ManualClock())
    assert isinstance(rt.coordinator_error(G), E.CoordinatorNotAvailableError)


def test_stop_answers_waiting_requests_and_cancels_timers() -> None:
    d = Driver()
    _mid, join = d.join_with_id(G)
    d.rt.stop()
    assert isinstance(d.reply(join), E.CoordinatorNotAvailableError)
    assert d.clock.next_deadline() is None
    assert isinstance(d.rt.coordinator_error(G), E.CoordinatorNotAvailableError)


# ---------------------------------------------------------------------------------- a real replica manager


def test_the_runtime_over_a_replica_manager(tmp_path: Path) -> None:
    clock = ManualClock()
    config = LogConfig()
    lm = LogManager([tmp_path], clock.now_ms, default_config=config)
    rm = ReplicaManager(1, lm, lambda _t: config, clock)
    topics = FakeTopics(t=6)

    def create(name: str, partitions: int, rf: int, configs: dict[str, str | None]) -> None:
        topics.add(name, partitions)
        for i in range(partitions):
            rm.host(name, i)
            rt.load(i, blocking=True)  # as the metadata publisher does, within create_topic

    writer = ReplicaManagerPartitionWriter(rm)
    small = replace(GROUP_CONFIG, num_partitions=2)
    rt = GroupCoordinatorRuntime(small, writer, topics, create, clock)
    assert rt.coordinator_error(G) is None, "created and loaded on first use"
    replies: list[Any] = []
    rt.request(
        G,
        lambda token, now: rt.core.commit_offsets(
            token,
            group_id=G,
            member_id="",
            generation_id=-1,
            group_instance_id=None,
            offsets=[OffsetCommitEntry("t", 0, 42, 0, "")],
            api_version=8,
            now_ms=now,
        ),
        lambda result, err: replies.append((result, err)),
    )
    assert replies == [({("t", 0): 0}, None)], "answered within the append: one node is the whole ISR"
    assert rm.high_watermark(OFFSETS_TOPIC, rt.partition_for(G)) == 1
    # A second runtime over the same logs (a restart) loads the commit back.
    again = GroupCoordinatorRuntime(small, writer, topics, create, ManualClock())
    for i in range(small.num_partitions):
        again.load(i, blocking=True)
    assert again.core.offsets[G][("t", 0)].offset == 42
    lm.close()


def test_listing_waits_for_partitions_being_loaded() -> None:
    d = Driver()
    for i in range(3):
        d.commit(G, {("t", i): i})
    p = d.core.partition_for(G)
    small = replace(d.config, load_buffer_size=1)
    clock = ManualClock(d.now)
    rt = GroupCoordinatorRuntime(small, d.writer, d.topics, lambda *a: None, clock)
    assert rt.listing_error() is None
    rt.load(p)
    assert isinstance(rt.listing_error(), E.CoordinatorLoadInProgressError)
    clock.advance(0)
    assert rt.listing_error() is None
    rt.stop()
    assert isinstance(rt.listing_error(), E.CoordinatorNotAvailableError)


def test_partitioned_timers_keep_each_partition_apart() -> None:
    timers: PartitionedTimers[str] = PartitionedTimers(lambda key: key[1] if isinstance(key[1], int) else len(key[1]))
    timers.schedule(("session", "ab"), 10, "ab expired")
    timers.schedule(("session", "abc"), 5, "abc expired")
    timers.schedule(("retention", 2), 20, "retention")
    assert timers.next_deadline(2) == 10 and timers.next_deadline(3) == 5
    assert ("session", "ab") in timers and timers.deadline(("session", "ab")) == 10
    assert timers.expired(15, 2) == ["ab expired"]
    timers.drop(3)
    assert timers.next_deadline(3) is None and ("session", "abc") not in timers
    timers.cancel(("retention", 2))
    assert timers.next_deadline(2) is None


def test_the_runtime_runs_on_the_clock_it_is_given() -> None:
    clock = ManualClock()
    rt = GroupCoordinatorRuntime(GROUP_CONFIG, MemoryPartitionWriter(), FakeTopics(), lambda *a: None, clock)
    assert rt.clock is clock
