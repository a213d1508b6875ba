"""The log cleaner's scheduler (storage/log_cleaner_threads.py) on a real event loop: passes run on
worker threads and swap on the loop, a failed pass frees its worker, and cancellation stops the
cleaner and waits for the passes in flight."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.partition_logs import NOW
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.storage.cleaner import CleanerStats, LogToClean
from zurau.storage.log_cleaner import CleanerConfig, LogCleaner
from zurau.storage.log_cleaner_threads import owner_loop_caller, run_cleaner_threads
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager

KEYS = 5


class Env:
    """A LogManager with one dirty compacted log ``t-0`` (many values over few keys)."""

    def __init__(self, root: Path) -> None:
        config = LogConfig(cleanup_policy="compact", segment_bytes=1024, min_cleanable_dirty_ratio=0.01)
        self.lm = LogManager([root / "data"], lambda: NOW, default_config=config)
        self.log = self.lm.get_or_create("t", 0, config)
        for i in range(200):
            batch = build_batch([NewRecord(b"key-%d" % (i % KEYS), b"value-%05d" % i, (), NOW + i)])
            self.log.append(batch, leader_epoch=0, now_ms=NOW + i)
        self.log.roll(NOW + 200)
        self.log.update_high_watermark(self.log.log_end_offset)

    def cleaner(self, loop: asyncio.AbstractEventLoop, **props: Any) -> LogCleaner:
        config = CleanerConfig.from_props({"log.cleaner.backoff.ms": 20, **props})
        return LogCleaner(config, self.lm, lambda: NOW + 10_000, run_on_owner=owner_loop_caller(loop))


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    yield e
    e.lm.close()


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_pass_runs_on_a_worker_thread_swaps_on_the_loop_and_is_reported(env: Env) -> None:
    loop = asyncio.get_running_loop()
    cleaner = env.cleaner(loop)
    passes: list[CleanerStats] = []
    threads: set[str] = set()
    real_clean = cleaner.clean

    def clean(ltc: LogToClean, worker: int = 0) -> CleanerStats | None:
        threads.add(threading.current_thread().name)
        return real_clean(ltc, worker)

    cleaner.clean = clean  # type: ignore[method-assign]
    bytes_before = sum(seg.size for seg in env.log.log_segments())
    task = asyncio.create_task(run_cleaner_threads(cleaner, passes.append))
    await until(lambda: len(passes) >= 1)
    await stop(task)
    assert cleaner.stopping
    assert passes[0].records_removed > 0
    assert sum(seg.size for seg in env.log.log_segments()) < bytes_before, "the cleaned segments were swapped in"
    assert all(name.startswith("zurau-log-cleaner") for name in threads)


async def test_a_failed_pass_is_logged_and_its_worker_cleans_again(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    cleaner = env.cleaner(asyncio.get_running_loop())
    real_clean = cleaner.clean
    calls: list[int] = []

    def clean(ltc: LogToClean, worker: int = 0) -> CleanerStats | None:
        calls.append(worker)
        if len(calls) == 1:
            cleaner.manager.release(ltc)  # as LogCleaner.clean does when a pass raises
            raise RuntimeError("bad disk")
        return real_clean(ltc, worker)

    cleaner.clean = clean  # type: ignore[method-assign]
    passes: list[CleanerStats] = []
    with caplog.at_level(logging.ERROR, logger="zurau.broker"):
        task = asyncio.create_task(run_cleaner_threads(cleaner, passes.append))
        await until(lambda: len(passes) >= 1)
        await stop(task)
    assert [r.getMessage() for r in caplog.records].count("log cleaner pass failed") == 1
    assert calls[:2] == [0, 0], "one worker: the same one, idle again after its failure"


async def test_cancelling_waits_for_the_pass_in_flight(env: Env) -> None:
    cleaner = env.cleaner(asyncio.get_running_loop())
    started, finished = threading.Event(), threading.Event()
    release = threading.Event()

    def clean(ltc: LogToClean, worker: int = 0) -> CleanerStats | None:
        started.set()
        release.wait(5)
        finished.set()
        return None

    cleaner.clean = clean  # type: ignore[method-assign]
    task = asyncio.create_task(run_cleaner_threads(cleaner))
    await until(started.is_set)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done(), "the loop waits for the pass it started"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set() and cleaner.stopping


async def test_the_owner_caller_runs_on_the_loop_and_carries_results_and_errors() -> None:
    loop = asyncio.get_running_loop()
    call = owner_loop_caller(loop)
    loop_thread = threading.get_ident()

    def boom() -> None:
        raise ValueError("no")

    assert await asyncio.to_thread(call, lambda: threading.get_ident() == loop_thread)
    with pytest.raises(ValueError, match="no"):
        await asyncio.to_thread(call, boom)


class _BusyCleaner:
    """A LogCleaner stand-in whose passes end at once, one after another: ``wake`` is set again
    and again, so a cancellation keeps arriving as a pass ends."""

    def __init__(self) -> None:
        self.config = CleanerConfig.from_props({"log.cleaner.threads": 2, "log.cleaner.backoff.ms": 1000})
        self.stopped = False

    def grab(self) -> object | None:
        return None if self.stopped else object()

    def clean(self, ltc: object, worker: int = 0) -> None:
        return None

    def stop(self) -> None:
        self.stopped = True


async def test_a_cancellation_arriving_as_a_pass_ends_is_never_lost() -> None:
    for i in range(200):
        cleaner = _BusyCleaner()
        task = asyncio.create_task(run_cleaner_threads(cleaner))  # type: ignore[arg-type]
        for _ in range(1 + i % 7):  # the task has started: its finally runs
            await asyncio.sleep(0)
        task.cancel()
        async with asyncio.timeout(5):
            with pytest.raises(asyncio.CancelledError):
                await task
        assert cleaner.stopped
