"""The log cleaner's threads and their scheduler (Kafka's ``LogCleaner.CleanerThread`` s).

:func:`run_cleaner_threads` is one coroutine the broker starts as a task on the event loop that
owns the logs, once they are loaded, and cancels on shutdown. It keeps ``log.cleaner.threads``
workers (a thread pool of that size): every ``log.cleaner.backoff.ms``, and whenever a pass ends,
it :meth:`~zurau.storage.log_cleaner.LogCleaner.grab` s the dirtiest log (on the loop) while a
worker is idle and runs :meth:`~zurau.storage.log_cleaner.LogCleaner.clean` on it in that worker.

Invariants:

* at most one pass per worker, and a worker's number is the one its pass is given (its offset
  map);
* a failed pass is logged at ERROR and its worker is idle again; a pass that returned stats is
  reported to ``on_pass`` (the broker's metrics);
* a reconfiguration (:meth:`~zurau.storage.log_cleaner.LogCleaner.reconfigure`, which wakes this
  loop) waits for the passes in flight (they abort at their next check), shuts the workers down
  and starts the new number of workers with the new config
  (:meth:`~zurau.storage.log_cleaner.LogCleaner.apply_pending`); a pass is never given a worker
  of the old pool after that;
* cancelled, the loop stops the cleaner (passes abort at their next check), waits for the passes
  in flight (their segment swaps need this loop, :func:`owner_loop_caller`) and shuts the
  workers down, so nothing is cleaning when the logs close; a cancellation is never lost, even
  one that arrives as a pass ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any

from zurau.storage.cleaner import CleanerStats
from zurau.storage.log_cleaner import LogCleaner, OwnerCall

log = logging.getLogger("zurau.broker")


def owner_loop_caller(loop: asyncio.AbstractEventLoop) -> OwnerCall:
    """A ``run_on_owner`` for :class:`~zurau.storage.log_cleaner.LogCleaner`: runs ``fn`` on
    ``loop`` from a worker thread and returns its result (RuntimeError if the loop is closed)."""

    def run_on_owner(fn: Callable[[], Any]) -> Any:
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def call() -> None:
            try:
                done.set_result(fn())
            except BaseException as e:
                done.set_exception(e)

        loop.call_soon_threadsafe(call)
        return done.result()

    return run_on_owner


async def run_cleaner_threads(
    cleaner: LogCleaner, on_pass: Callable[[CleanerStats], None] | None = None
) -> None:
    """Give the dirtiest logs to idle workers every ``log.cleaner.backoff.ms`` and whenever a
    pass ends. Cancelled: stop the passes and wait for them (their swaps need this loop)."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    cleaner.on_reconfigure = wake.set
    workers, idle = _workers(cleaner.config.threads)
    log.info("log cleaner: %d thread(s)", cleaner.config.threads)
    passes: set[asyncio.Future[CleanerStats | None]] = set()

    def finished(free: list[int], worker: int, fut: asyncio.Future[CleanerStats | None]) -> None:
        passes.discard(fut)
        free.append(worker)  # the idle list of the pool the pass ran in
        wake.set()
        if not fut.cancelled() and fut.exception() is not None:
            log.error("log cleaner pass failed", exc_info=fut.exception())
        elif not fut.cancelled() and (stats := fut.result()) is not None and on_pass is not None:
            on_pass(stats)

    try:
        while True:
            wake.clear()
            if cleaner.reconfiguring:
                if passes:  # they abort at their next check
                    await asyncio.wait(set(passes))
                workers.shutdown(wait=True)  # its threads are idle: this returns at once
                config = cleaner.apply_pending()
                workers, idle = _workers(cleaner.config.threads if config is None else config.threads)
            while idle and (ltc := cleaner.grab()) is not None:
                worker = idle.pop()
                fut = loop.run_in_executor(workers, cleaner.clean, ltc, worker)
                passes.add(fut)
                fut.add_done_callback(functools.partial(finished, idle, worker))
            # Not wait_for: on Python 3.11 it loses a cancellation that arrives as ``wake`` is set,
            # and the broker's shutdown would then wait for this loop in vain.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(cleaner.config.backoff_ms / 1000):
                    await wake.wait()
    finally:
        cleaner.stop()
        cleaner.on_reconfigure = None
        if passes:
            await asyncio.wait(set(passes))
        workers.shutdown(wait=True)


def _workers(threads: int) -> tuple[concurrent.futures.ThreadPoolExecutor, list[int]]:
    """A pool of ``threads`` workers and its idle list (worker numbers 0 .. threads-1)."""
    threads = max(threads, 1)
    pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="zurau-log-cleaner")
    return pool, list(range(threads))
