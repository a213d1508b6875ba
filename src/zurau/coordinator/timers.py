"""A deadline queue for the coordinators' virtual time (no clocks, no asyncio).

Timers are named by a hashable key; scheduling a key again replaces its deadline, cancelling
removes it. ``expired(now_ms)`` pops every key whose deadline is <= ``now_ms`` in deadline order
(ties in scheduling order). The shell sleeps until ``next_deadline()``; tests just advance a number.
:class:`PartitionedTimers` keeps one such queue per coordinator partition.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable


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
        out: list[Hashable] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return out
            _deadline, _seq, key = heapq.heappop(self._heap)
            del self._live[key]
            out.append(key)


class PartitionedTimers:
    """Timer queues per coordinator partition, behind the :class:`TimerQueue` interface.

    ``route(key)`` names the partition a timer belongs to (the partition of the group or
    transactional id in the key), so that one partition's timers can be polled on their own and
    dropped when the partition is unloaded, while the state machine schedules and cancels by key
    as before. ``next_deadline``/``expired`` take the partition to look at.
    """

    def __init__(self, route: Callable[[Hashable], int]) -> None:
        self._route = route
        self._queues: dict[int, TimerQueue] = {}

    def _queue(self, key: Hashable) -> TimerQueue | None:
        return self._queues.get(self._route(key))

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        p = self._route(key)
        q = self._queues.get(p)
        if q is None:
            q = self._queues[p] = TimerQueue()
        q.schedule(key, deadline_ms)

    def cancel(self, key: Hashable) -> None:
        q = self._queue(key)
        if q is not None:
            q.cancel(key)

    def deadline(self, key: Hashable) -> int | None:
        q = self._queue(key)
        return q.deadline(key) if q is not None else None

    def __contains__(self, key: Hashable) -> bool:
        q = self._queue(key)
        return q is not None and key in q

    def next_deadline(self, partition: int) -> int | None:
        q = self._queues.get(partition)
        return q.next_deadline() if q is not None else None

    def expired(self, now_ms: int, partition: int) -> list[Hashable]:
        q = self._queues.get(partition)
        return q.expired(now_ms) if q is not None else []

    def drop(self, partition: int) -> None:
        """Forget every timer of ``partition`` (it was unloaded)."""
        self._queues.pop(partition, None)
