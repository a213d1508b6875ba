"""Delayed operations: fetches waiting for data (``min_bytes`` / ``max_wait_ms``).

A waiting fetch registers one future on every partition it reads; an append that moves a
partition's high watermark completes all futures registered on it. The fetch then re-reads, so a
wake-up is a hint, never a promise of data (spurious wake-ups are harmless).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable


class FetchPurgatory:
    def __init__(self) -> None:
        self._waiters: dict[tuple[str, int], set[asyncio.Future[None]]] = defaultdict(set)

    def notify(self, topic: str, partition: int) -> None:
        waiters = self._waiters.pop((topic, partition), None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def notify_all(self) -> None:
        for key in list(self._waiters):
            self.notify(*key)

    async def wait(self, partitions: Iterable[tuple[str, int]], timeout_s: float) -> None:
        """Wait until any of ``partitions`` gets new data or ``timeout_s`` passes."""
        if timeout_s <= 0:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        keys = list(partitions)
        for key in keys:
            self._waiters[key].add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            pass
        finally:
            for key in keys:
                s = self._waiters.get(key)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiters[key]
