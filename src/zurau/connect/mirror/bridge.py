"""Runs zurau.client's coroutines for the mirror tasks, whose methods are called on plain threads.

An :class:`AsyncBridge` owns one event loop on a daemon thread; :meth:`AsyncBridge.run` submits a
coroutine from any thread and waits for its result (or raises its exception). Every client object
of a task is created and used on that one loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class AsyncBridge:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
