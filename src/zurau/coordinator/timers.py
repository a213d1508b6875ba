"""A deadline queue for the coordinators' virtual time (no clocks, no asyncio).

Timers are named by a hashable key; scheduling a key again replaces its deadline, cancelling
removes it. ``expired(now_ms)`` pops every key whose deadline is <= ``now_ms`` in deadline order
(ties in scheduling order). The shell sleeps until ``next_deadline()``; tests just advance a number.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable


class TimerQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int]] = {}
        self._seq = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            if self._live.get(key) == (deadline, seq):
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def expired(self, now_ms: int) -> list[Hashable]:
        out = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return out
            _deadline, _seq, key = heapq.heappop(self._heap)
            del self._live[key]
            out.append(key)
