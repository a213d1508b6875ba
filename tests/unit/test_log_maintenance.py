"""The log manager's scheduled tasks (storage/log_maintenance.py) over real logs on disk: flushes
with the extra logs, retention, producer expiration and checkpoints on their intervals, a failing
tick, plans left unrun, and cancellation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.partition_logs import NOW, make_batch, open_log
from zurau.storage.checkpoint import read_offsets_checkpoint
from zurau.storage.log_config import LogConfig
from zurau.storage.log_flush import FlushPlan
from zurau.storage.log_maintenance import LogMaintenance, MaintenanceIntervals
from zurau.storage.log_manager import RECOVERY_POINT_CHECKPOINT, LogManager

FAST = {
    "log.retention.check.interval.ms": 10,
    "log.flush.offset.checkpoint.interval.ms": 10,
    "log.flush.scheduler.interval.ms": 10,
    "producer.id.expiration.check.interval.ms": 10,
    "producer.id.expiration.ms": 60_000,
}


class Env:
    """A LogManager with one log ``t-0`` that wants every append flushed, and a flush thread."""

    def __init__(self, root: Path, **cfg: Any) -> None:
        self.now = NOW
        self.config = LogConfig(**{"flush_ms": 0, **cfg})
        self.lm = LogManager([root / "data"], lambda: self.now, default_config=self.config)
        self.log = self.lm.get_or_create("t", 0, self.config)
        self.off_loop_calls = 0
        self.synced: list[float] = []

    async def run_off_loop(self, fn: Callable[[], object]) -> None:
        self.off_loop_calls += 1
        await asyncio.to_thread(fn)

    def maintenance(self, **kw: Any) -> LogMaintenance:
        return LogMaintenance(
            self.lm, FAST.__getitem__, lambda: self.now, self.run_off_loop, on_flush_synced=self.synced.append, **kw
        )

    def append(self, n: int = 1) -> None:
        self.log.append(make_batch(n, ts=self.now), leader_epoch=0, now_ms=self.now)
        self.log.update_high_watermark(self.log.log_end_offset)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    yield e
    e.lm.close()


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def test_intervals_come_from_the_broker_config_and_the_flush_tick_is_at_most_a_second() -> None:
    settings = {**FAST, "log.flush.scheduler.interval.ms": 9_000, "producer.id.expiration.check.interval.ms": 600_000,
                "log.retention.check.interval.ms": 300_000, "log.flush.offset.checkpoint.interval.ms": 60_000}
    every = MaintenanceIntervals.from_broker_config(settings.__getitem__)
    assert (every.retention_s, every.checkpoint_s, every.flush_s, every.expiration_s) == (300, 60, 1.0, 600)
    assert every.tick_s == 1.0
    assert MaintenanceIntervals.from_broker_config(FAST.__getitem__).tick_s == 0.01


async def test_a_flush_covers_dirty_logs_and_the_extra_logs_off_the_loop(env: Env, tmp_path: Path) -> None:
    metadata = open_log(tmp_path / "meta-0")
    metadata.append(make_batch(2), leader_epoch=0, now_ms=NOW)
    env.append(3)
    assert env.log.recovery_point == 0 and metadata.recovery_point == 0
    await env.maintenance(also_flush=[metadata]).flush_dirty()
    assert env.log.recovery_point == env.log.log_end_offset == 3
    assert metadata.recovery_point == 2
    assert env.off_loop_calls == 1, "one trip to the flush thread for all plans"
    assert len(env.synced) == 2 and all(t >= 0 for t in env.synced)
    await env.maintenance().flush_dirty()  # nothing dirty: nothing to do, no thread
    assert env.off_loop_calls == 1
    metadata.close()


async def test_plans_a_failed_sync_left_unrun_are_discarded_and_advance_nothing(env: Env) -> None:
    env.append(2)

    async def failing(fn: Callable[[], object]) -> None:
        raise OSError("the flush thread is gone")

    discarded: list[FlushPlan] = []
    real_discard = FlushPlan.discard

    def discard(plan: FlushPlan) -> None:
        discarded.append(plan)
        real_discard(plan)

    m = LogMaintenance(env.lm, FAST.__getitem__, lambda: env.now, failing)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FlushPlan, "discard", discard)
        with pytest.raises(OSError, match="the flush thread is gone"):
            await m.flush_dirty()
    assert len(discarded) == 1 and not discarded[0].synced
    assert env.log.recovery_point == 0
    await env.maintenance().flush_dirty()  # the next tick flushes it
    assert env.log.recovery_point == 2


async def test_the_loop_runs_every_task_on_its_interval_until_cancelled(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, list[tuple[Any, ...]]] = {"retention": [], "expiration": []}
    real_retention, real_expiration = env.lm.run_retention, env.lm.remove_expired_producers

    def retention(now_ms: int) -> int:
        calls["retention"].append((now_ms,))
        return real_retention(now_ms)

    def expiration(now_ms: int, expiration_ms: int = 0) -> int:
        calls["expiration"].append((now_ms, expiration_ms))
        return real_expiration(now_ms, expiration_ms)

    monkeypatch.setattr(env.lm, "run_retention", retention)
    monkeypatch.setattr(env.lm, "remove_expired_producers", expiration)
    env.append(4)
    task = asyncio.create_task(env.maintenance().run())
    checkpoint = env.lm.log_dirs[0] / RECOVERY_POINT_CHECKPOINT
    await until(lambda: len(calls["retention"]) >= 2 and len(calls["expiration"]) >= 2)
    await until(lambda: read_offsets_checkpoint(checkpoint).get(("t", 0)) == 4)
    assert env.log.recovery_point == 4
    assert calls["retention"][0] == (NOW,) and calls["expiration"][0] == (NOW, 60_000)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_expiration_runs_at_the_first_tick_and_reads_its_setting_each_time(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = {**FAST, "log.retention.check.interval.ms": 3_600_000,
                "log.flush.offset.checkpoint.interval.ms": 3_600_000}
    seen: list[int] = []
    lm = env.lm
    real = lm.remove_expired_producers

    def expiration(now_ms: int, expiration_ms: int = 0) -> int:
        seen.append(expiration_ms)
        settings["producer.id.expiration.ms"] = 1_000
        return real(now_ms, expiration_ms)

    retention_calls: list[int] = []
    monkeypatch.setattr(lm, "remove_expired_producers", expiration)
    monkeypatch.setattr(lm, "run_retention", retention_calls.append)
    maintenance = LogMaintenance(lm, settings.__getitem__, lambda: env.now, env.run_off_loop)
    task = asyncio.create_task(maintenance.run())
    await until(lambda: len(seen) >= 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen[:2] == [60_000, 1_000]
    assert retention_calls == [], "retention waits for its own (hour-long) interval"


async def test_a_failing_tick_is_logged_and_the_next_one_runs(
    env: Env, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks: list[int] = []

    def retention(now_ms: int) -> int:
        ticks.append(now_ms)
        if len(ticks) == 1:
            raise RuntimeError("disk on fire")
        return 0

    monkeypatch.setattr(env.lm, "run_retention", retention)
    with caplog.at_level(logging.ERROR, logger="zurau.broker"):
        task = asyncio.create_task(env.maintenance().run())
        await until(lambda: len(ticks) >= 3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    failures = [r for r in caplog.records if r.getMessage() == "log maintenance failed"]
    assert len(failures) == 1 and failures[0].exc_info is not None

