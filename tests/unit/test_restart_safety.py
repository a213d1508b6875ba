"""The pieces that keep a restarted cluster node safe and its quorum live (issue 27), one by one:
a log manager that loads nothing until told (and then writes no checkpoint it did not read),
the lifecycle's want_fence until the broker is ready, directory and leader-epoch fsyncs taken off
the caller's thread, bounded flush rounds, the chunked metadata publisher and the loop watchdog.
The process-level behaviour is in tests/fault/test_restart_*.py."""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from zurau.broker import metadata_publisher as publisher_module
from zurau.broker.metadata_publisher import ChunkedPublishing, MetadataPublisher
from zurau.loop_watchdog import LoopWatchdog
from zurau.metadata import image as image_module
from zurau.metadata.broker_lifecycle_manager import BrokerLifecycleManager
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import PartitionChangeRecord, PartitionRecord, TopicRecord
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.records.builder import build_batch
from zurau.storage.checkpoint import read_offsets_checkpoint
from zurau.storage.leader_epoch_cache import LeaderEpochCache
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT, LogManager

NOW = 1_700_000_000_000


def _now() -> int:
    return NOW


# -- LogManager(load=False) ---------------------------------------------------------------------


def _dir_with_a_log(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    mgr = LogManager([d], _now)
    log = mgr.get_or_create("t", 0)
    log.append(build_batch([(b"k", b"v", [], NOW)]), leader_epoch=0, now_ms=NOW)
    mgr.close()
    return d


def test_an_unloaded_log_manager_creates_nothing_and_leaves_the_checkpoints_as_they_were(tmp_path: Path) -> None:
    d = _dir_with_a_log(tmp_path)
    before = (d / RECOVERY_POINT_CHECKPOINT).read_bytes()
    mgr = LogManager([d], _now, load=False)
    assert mgr.get("t", 0) is None and not mgr.loaded
    with pytest.raises(KafkaStorageError, match="not loaded"):
        mgr.get_or_create("t", 0)
    mgr.checkpoint()  # an empty snapshot must not replace the previous run's recovery points
    mgr.close()  # stopped before catching up: the clean marker and checkpoints stay the old ones
    assert (d / RECOVERY_POINT_CHECKPOINT).read_bytes() == before
    assert (d / CLEAN_SHUTDOWN_FILE).exists()
    mgr = LogManager([d], _now, load=False)
    mgr.load()
    log = mgr.get("t", 0)
    assert log is not None and log.log_end_offset == 1
    mgr.close()
    assert read_offsets_checkpoint(d / RECOVERY_POINT_CHECKPOINT)[("t", 0)] == 1


def test_load_takes_the_config_its_callback_gives_at_load_time(tmp_path: Path) -> None:
    d = _dir_with_a_log(tmp_path)
    compact = LogConfig(cleanup_policy="compact", min_insync_replicas=2)
    configs = {"t": LogConfig()}
    mgr = LogManager([d], _now, config_for=lambda topic: configs[topic], load=False)
    configs["t"] = compact  # the metadata caught up between construction and loading
    mgr.load()
    log = mgr.get("t", 0)
    assert log is not None and log.config == compact
    mgr.close()


# -- directory and leader-epoch durability off the caller's thread -------------------------------


def test_a_new_log_directory_and_a_leader_epoch_are_made_durable_by_the_next_flush_plan(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    log = mgr.get_or_create("t", 0)
    assert log.directory_sync_pending and log.needs_flush
    assert log.assign_leader_epoch(3, 0)
    assert not log.assign_leader_epoch(3, 0)  # the same epoch again changes nothing
    assert LeaderEpochCache.load(log.directory)[0].entries == [(3, 0)]  # written, not yet fsynced
    plans = mgr.prepare_flush_dirty(NOW)
    assert [lg for lg, _plan in plans] == [log]
    plan = plans[0][1]
    # the .log (a new log's index files come with their first entries), the epoch checkpoint,
    # the partition dir, the log dir
    assert plan.descriptor_count == 4
    plan.run()
    mgr.complete_flushes(plans)
    assert not log.directory_sync_pending and not log.needs_flush
    assert mgr.prepare_flush_dirty(NOW) == []
    mgr.close()


def test_a_flush_round_holds_a_bounded_number_of_descriptors_and_every_log_gets_its_turn(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], _now)
    logs = [mgr.get_or_create("t", i) for i in range(10)]
    flushed: list[Any] = []
    for _round in range(5):
        plans = mgr.prepare_flush_dirty(NOW, max_descriptors=12)
        assert 0 < sum(p.descriptor_count for _lg, p in plans) <= 12 + 5
        for _lg, p in plans:
            p.run()
        mgr.complete_flushes(plans)
        flushed += [lg for lg, _p in plans]
        if not any(lg.needs_flush for lg in logs):
            break
    assert sorted(id(lg) for lg in flushed) == sorted(id(lg) for lg in logs)
    assert not any(lg.needs_flush for lg in logs)
    mgr.close()


# -- the broker lifecycle: fenced until ready ----------------------------------------------------


def test_the_broker_asks_to_stay_fenced_until_it_is_ready() -> None:
    beats: list[dict[str, Any]] = []

    async def register(_body: dict[str, Any]) -> dict[str, Any]:
        return {"error_code": 0, "broker_epoch": 7}

    async def heartbeat(body: dict[str, Any]) -> dict[str, Any]:
        beats.append(body)
        want_fence = body["want_fence"]
        return {"error_code": 0, "is_caught_up": True, "is_fenced": want_fence, "should_shut_down": False}

    async def run() -> None:
        lifecycle = BrokerLifecycleManager(
            node_id=1, cluster_id="c", endpoints=lambda: [], rack=None, heartbeat_interval_ms=20,
            metadata_offset=lambda: 10, register=register, heartbeat=heartbeat,
        )
        lifecycle.start()
        await asyncio.wait_for(lifecycle.wait_caught_up(5000), 5)
        await asyncio.sleep(0.1)
        assert not lifecycle.unfenced.is_set()
        assert beats and all(b["want_fence"] for b in beats)
        lifecycle.ready()
        await asyncio.wait_for(lifecycle.wait_unfenced(5000), 5)
        assert beats[-1]["want_fence"] is False
        await lifecycle.close()

    asyncio.run(run())


# -- the chunked metadata publisher --------------------------------------------------------------


class _Replicas:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int, int]] = []

    def make_leader(self, topic: str, index: int, *, leader_epoch: int, **_: Any) -> None:
        self.calls.append(("leader", topic, index, leader_epoch))

    def make_follower(self, topic: str, index: int, *, leader_id: int, leader_epoch: int, **_: Any) -> None:
        self.calls.append(("follower", topic, index, leader_epoch))

    def stop_hosting(self, topic: str, index: int, delete: bool) -> None:
        self.calls.append(("stop", topic, index, -1))

    def update_config(self, topic: str) -> None:
        self.calls.append(("config", topic, -1, -1))


class _Coordinator:
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.loaded: list[int] = []

    def load(self, partition: int, *, blocking: bool = False) -> None:
        self.loaded.append(partition)

    def unload(self, partition: int) -> None:
        self.loaded.remove(partition)

    def on_topic_deleted(self, topic: str) -> None:
        pass


def _big_topic(n: int) -> tuple[MetadataImage, uuid.UUID]:
    tid = uuid.uuid4()
    records: list[Any] = [TopicRecord("big", tid)]
    records += [PartitionRecord(i, tid, (1, 2), (1, 2), 1 if i % 2 == 0 else 2) for i in range(n)]
    return MetadataImage("c").apply(records, 10), tid


def test_publish_steps_pause_every_chunk_and_apply_what_publish_applies() -> None:
    empty = MetadataImage("c")
    image, _tid = _big_topic(1000)
    whole = _Replicas()
    MetadataPublisher(1, whole, _Coordinator("__consumer_offsets"), _Coordinator("__transaction_state")).publish(
        empty, image
    )
    stepped = _Replicas()
    publisher = MetadataPublisher(1, stepped, _Coordinator("__consumer_offsets"), _Coordinator("__transaction_state"))
    pauses = sum(1 for _ in publisher.publish_steps(empty, image, chunk=100))
    assert pauses == 10
    assert stepped.calls == whole.calls
    assert sum(1 for c in whole.calls if c[0] == "leader") == 500


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class _SlowReplicas(_Replicas):
    """Each partition costs 1 ms of the (fake) clock, as creating a log does."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.clock = clock

    def make_leader(self, topic: str, index: int, *, leader_epoch: int, **kw: Any) -> None:
        self.clock.now += 0.001
        super().make_leader(topic, index, leader_epoch=leader_epoch, **kw)

    def make_follower(self, topic: str, index: int, *, leader_id: int, leader_epoch: int, **kw: Any) -> None:
        self.clock.now += 0.001
        super().make_follower(topic, index, leader_id=leader_id, leader_epoch=leader_epoch, **kw)


@pytest.mark.parametrize("other_work_s", [0.0, 0.02])
def test_publish_steps_with_a_budget_pause_often_on_an_idle_loop_and_keep_their_share_of_a_busy_one(
    monkeypatch: pytest.MonkeyPatch, other_work_s: float
) -> None:
    clock = _Clock()
    monkeypatch.setattr(publisher_module, "time", clock)
    empty = MetadataImage("c")
    image, _tid = _big_topic(1000)
    whole = _Replicas()
    MetadataPublisher(1, whole, _Coordinator("__consumer_offsets"), _Coordinator("__transaction_state")).publish(
        empty, image
    )
    replicas = _SlowReplicas(clock)
    publisher = MetadataPublisher(1, replicas, _Coordinator("__consumer_offsets"), _Coordinator("__transaction_state"))
    pauses = 0
    for _ in publisher.publish_steps(empty, image, chunk=256, budget_s=0.01):
        pauses += 1
        clock.now += other_work_s  # what the event loop ran during the pause
    assert replicas.calls == whole.calls
    if other_work_s == 0.0:
        assert pauses >= 1000 // 16  # slices of 8 partitions, a pause once 10 ms have passed
    else:
        # Each slice may run 9 times as long as the pause before it (up to the 256-partition
        # chunk): the publisher keeps about 90% of a busy loop's time, not a third of it.
        assert pauses <= 6


def test_the_image_copies_a_big_topics_partitions_once_per_batch_not_once_per_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    image, tid = _big_topic(10_000)
    copies: list[int] = []

    def counting_dict(*args: Any, **kwargs: Any) -> dict[Any, Any]:
        d: dict[Any, Any] = builtins.dict(*args, **kwargs)
        copies.append(len(d))
        return d

    monkeypatch.setattr(image_module, "dict", counting_dict, raising=False)
    after = image.apply([PartitionChangeRecord(i, tid, leader=2) for i in range(0, 10_000, 2)], 11)
    # One copy of the 10,000-entry map for the batch (it was one per record: 5,000 copies, 1.6 s).
    assert sum(1 for n in copies if n == 10_000) == 1
    t = after.get("big")
    assert t is not None and t.partitions[0].leader == 2 and t.partitions[0].leader_epoch == 1
    assert t.partitions[1] is image.topics_by_name["big"].partitions[1]


def test_chunked_publishing_applies_changes_in_order_and_yields_to_the_loop() -> None:
    async def run() -> None:
        replicas = _Replicas()
        publisher = MetadataPublisher(1, replicas, _Coordinator("__consumer_offsets"), _Coordinator("__transaction_state"))
        chunked = ChunkedPublishing(publisher, chunk=50)
        empty = MetadataImage("c")
        first, tid = _big_topic(400)
        second = first.apply([PartitionChangeRecord(i, tid, leader=2) for i in range(0, 400, 2)], 11)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        chunked.publish(empty, first)
        chunked.publish(first, second)  # queued behind the first: coalesced into one change
        assert not chunked.idle.is_set()
        await asyncio.wait_for(chunked.idle.wait(), 5)
        t.cancel()
        assert ticks >= 4  # the loop ran other work between chunks
        # Everything ends as ``second`` says: every partition followed, led by 2 at epoch 1.
        final = {(c[1], c[2]): c for c in replicas.calls}
        assert len(final) == 400
        assert all(c[0] == "follower" for (_t, i), c in final.items() if i % 2 == 0)
        assert all(c[0] == "follower" and c[3] == 0 for (_t, i), c in final.items() if i % 2 == 1)
        await chunked.close()

    asyncio.run(run())


# -- the loop watchdog ---------------------------------------------------------------------------


def _blocking_step() -> None:
    time.sleep(0.4)


def test_the_watchdog_reports_a_stall_with_the_stack_that_held_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> LoopWatchdog:
        watchdog = LoopWatchdog("test", warn_after_s=0.15)
        watchdog.start()
        await asyncio.sleep(0.1)
        _blocking_step()
        await asyncio.sleep(0.2)
        watchdog.stop()
        return watchdog

    with caplog.at_level(logging.WARNING, logger="zurau.loop"):
        watchdog = asyncio.run(run())
    assert watchdog.stalls == 1
    assert 0.3 <= watchdog.max_stall_s < 1.0
    text = caplog.text
    assert "event loop stalled" in text and "_blocking_step" in text
    assert "stall ended" in text


# -- a follower that led an empty epoch ----------------------------------------------------------


def test_truncating_at_the_log_end_drops_an_epoch_that_starts_there(tmp_path: Path) -> None:
    """This replica led epoch 1 and wrote nothing before the leader of epoch 2 took over: the
    leader answers its Fetch (last fetched epoch 1) with the diverging epoch (0, end 3), and the
    truncation to 3 must drop epoch 1 or every later Fetch diverges again."""
    mgr = LogManager([tmp_path], _now)
    log = mgr.get_or_create("t", 0)
    for i in range(3):
        log.append(build_batch([(b"k", b"v%d" % i, [], NOW)]), leader_epoch=0, now_ms=NOW)
    log.assign_leader_epoch(1, log.log_end_offset)
    assert log.leader_epoch_cache.latest_epoch == 1
    log.truncate_to(3)
    assert log.log_end_offset == 3
    assert log.leader_epoch_cache.entries == [(0, 0)]
    assert LeaderEpochCache.load(log.directory)[0].entries == [(0, 0)]
    mgr.close()
