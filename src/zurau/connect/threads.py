"""Threads for connector and task code: daemon threads, so that user code stuck in a call (a
``poll()`` that never returns) cannot keep the worker process from exiting.

:class:`CallThread` runs the calls submitted to it one at a time, in order, on one thread (all of
a task's methods see the same thread, as in Kafka); :func:`call_in_daemon` runs one call on a
fresh thread (used to interrupt a task that is blocked in ``poll()``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Item = tuple["concurrent.futures.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _run_one(fut: concurrent.futures.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    if not fut.set_running_or_notify_cancel():
        return
    try:
        fut.set_result(fn(*args))
    except BaseException as e:  # handed to the awaiting coroutine
        fut.set_exception(e)


class CallThread:
    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            _run_one(*item)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((fut, fn, args))
        return await asyncio.wrap_future(fut)

    def shutdown(self) -> None:
        """Let the thread end after the calls already submitted."""
        self._queue.put(None)


async def call_in_daemon(fn: Callable[..., T], *args: Any, name: str = "zurau-connect-call") -> T:
    fut: concurrent.futures.Future[T] = concurrent.futures.Future()
    threading.Thread(target=_run_one, args=(fut, fn, args), name=name, daemon=True).start()
    return await asyncio.wrap_future(fut)
