"""The log cleaner's scheduler (storage/log_cleaner_threads.py) on a real event loop: passes run on
worker threads and swap on the loop, a failed pass frees its worker, cancellation stops the
cleaner and waits for the passes in flight, and a reconfiguration (a dynamic
``log.cleaner.threads``) restarts the workers with the new config, aborting a pass in flight
without losing what the log holds."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.partition_logs import NOW
from tests.unit.test_log_cleaner import read_all
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
        self.reconfiguring = False
        self.on_reconfigure: object = None

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


def _records(env: Env) -> dict[bytes, bytes]:
    """The latest value of each key in ``t-0``, as a consumer reads it (compaction keeps it)."""
    return {bytes(r.key or b""): bytes(r.value or b"") for r in read_all(env.log)}


async def test_a_reconfiguration_restarts_the_workers_with_the_new_thread_count(env: Env) -> None:
    loop = asyncio.get_running_loop()
    cleaner = env.cleaner(loop)
    assert cleaner.config.threads == 1 and len(cleaner.cleaners) == 1
    before = _records(env)
    aborted = threading.Event()
    real_clean = cleaner.clean
    workers: list[tuple[int, str]] = []
    first: list[CleanerStats | None] = []

    def clean(ltc: LogToClean, worker: int = 0) -> CleanerStats | None:
        workers.append((worker, threading.current_thread().name))
        if len(workers) == 1:  # the first pass is in flight when the config changes
            async_reconfigured.wait(5)
            stats = real_clean(ltc, worker)
            first.append(stats)
            aborted.set()
            return stats
        return real_clean(ltc, worker)

    async_reconfigured = threading.Event()
    cleaner.clean = clean  # type: ignore[method-assign]
    passes: list[CleanerStats] = []
    task = asyncio.create_task(run_cleaner_threads(cleaner, passes.append))
    await until(lambda: len(workers) == 1)
    new = CleanerConfig.from_props({"log.cleaner.threads": 2, "log.cleaner.backoff.ms": 20})
    assert cleaner.reconfigure(new) and cleaner.reconfiguring
    assert not cleaner.reconfigure(new), "the same config again changes nothing"
    async_reconfigured.set()
    await until(aborted.is_set)
    await until(lambda: len(passes) >= 1)  # a complete pass with the new workers
    await stop(task)
    assert first == [None], "the pass in flight was aborted by the reconfiguration"
    assert cleaner.config == new and len(cleaner.cleaners) == 2
    assert cleaner.manager.in_progress == set(), "the aborted pass released its log"
    assert cleaner.manager.checkpointed_offset("t", 0) == passes[-1].end_offset
    assert _records(env) == before, "every key keeps its latest value: nothing lost"
    assert passes[0].records_removed > 0


async def test_a_reconfiguration_asked_for_while_idle_is_applied_at_once(env: Env) -> None:
    cleaner = env.cleaner(asyncio.get_running_loop(), **{"log.cleaner.backoff.ms": 60_000})
    passes: list[CleanerStats] = []
    task = asyncio.create_task(run_cleaner_threads(cleaner, passes.append))
    await until(lambda: len(passes) == 1)  # then nothing is cleanable: the loop sleeps 60 s
    new = CleanerConfig.from_props({"log.cleaner.threads": 2, "log.cleaner.backoff.ms": 60_000})
    cleaner.reconfigure(new)
    await until(lambda: cleaner.config == new)  # woken, not after the 60 s back-off
    assert not cleaner.reconfiguring and len(cleaner.cleaners) == 2
    await stop(task)


def test_reconfigure_refuses_no_workers_or_no_offset_map_and_is_final_after_stop(env: Env) -> None:
    cleaner = env.cleaner(asyncio.new_event_loop())
    assert not cleaner.reconfigure(CleanerConfig.from_props({"log.cleaner.threads": 0}))
    tiny = {"log.cleaner.threads": 4, "log.cleaner.dedupe.buffer.size": 40}  # no room for a key
    assert not cleaner.reconfigure(CleanerConfig.from_props(tiny)) and not cleaner.reconfiguring
    cleaner.stop()
    assert not cleaner.reconfigure(CleanerConfig.from_props({"log.cleaner.threads": 2}))
    assert cleaner.apply_pending() is None and cleaner.config.threads == 1
