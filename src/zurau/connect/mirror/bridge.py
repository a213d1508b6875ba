"""Runs zurau.client's coroutines for the mirror tasks, whose methods are called on plain threads.

An :class:`AsyncBridge` owns one event loop on a daemon thread; :meth:`AsyncBridge.run` submits a
coroutine from any thread and waits for its result (or raises its exception). Every client object
of a task is created and used on that one loop. After :meth:`AsyncBridge.close` (which cancels
what still runs there and stops the loop), :meth:`AsyncBridge.run` raises
:class:`~zurau.connect.api.ConnectException` at once instead of waiting for a loop that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from zurau.connect.api import ConnectException

T = TypeVar("T")


class AsyncBridge:
    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self.closed = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        if self.closed:
            coro.close()
            raise ConnectException(f"{self.name} is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _cancel_rest(self) -> None:
        # Cancelled again while any is left: on Python 3.11 asyncio.wait_for can swallow one
        # cancellation (a client's sender loop would then go on).
        me = asyncio.current_task()
        for _ in range(20):
            rest = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
            if not rest:
                return
            for t in rest:
                t.cancel()
            await asyncio.wait(rest, timeout=0.1)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._cancel_rest(), self.loop).result(5)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


_LIFECYCLE = threading.Lock()


class BridgedTask:
    """start()/stop() of a task whose clients live on an :class:`AsyncBridge`.

    The worker may call ``stop()`` from another thread while ``start()`` still runs (a rebalance
    right after the task was started): the clients ``start()`` opens would then never be closed.
    ``start()`` calls :meth:`_started` after opening them and closes them itself when it returns
    True (a stop came meanwhile); ``stop()`` closes them only when :meth:`_stopping` returns
    True (they are open). A ``start()`` that fails closes its bridge before raising.
    """

    _stop_requested = False
    _opened = False

    def _started(self) -> bool:
        with _LIFECYCLE:
            self._opened = True
            return self._stop_requested

    def _stopping(self) -> bool:
        with _LIFECYCLE:
            self._stop_requested = True
            return self._opened
