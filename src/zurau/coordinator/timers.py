"""A deadline queue for the coordinators' virtual time (no clocks, no asyncio).

A timer is a key, a deadline and the callback to run when it expires (Kafka's
``CoordinatorTimer``: ``schedule(key, delay, operation)``). Scheduling a key again replaces its
deadline and its callback, cancelling removes it. ``expired(now_ms)`` pops every timer whose
deadline is <= ``now_ms`` and returns their callbacks in deadline order (ties in scheduling
order); the state machine then runs them one by one, so a callback that cancels a timer popped in
the same call does not stop it (the queue no longer holds it). The shell sleeps until
``next_deadline()``; tests just advance a number. :class:`PartitionedTimers` keeps one such
queue per coordinator partition.

Keys name what a timer is about: ``(kind, group_or_transactional_id)``,
``(kind, group_id, member_id)`` or ``(kind, partition)``; the second item routes the timer to its
partition.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Generic, TypeVar

TimerKey = tuple[str, str | int] | tuple[str, str, str]
C = TypeVar("C")


class TimerQueue(Generic[C]):
    """Timers of one partition; ``C`` is the type of their callbacks."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._live: dict[TimerKey, tuple[int, int, C]] = {}
        self._seq = itertools.count()

    def schedule(self, key: TimerKey, deadline_ms: int, callback: C) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq, callback)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: TimerKey) -> None:
        self._live.pop(key, None)

    def deadline(self, key: TimerKey) -> int | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def __contains__(self, key: TimerKey) -> bool:
        return key in self._live

    def _is_live(self, deadline: int, seq: int, key: TimerKey) -> bool:
        entry = self._live.get(key)
        return entry is not None and entry[0] == deadline and entry[1] == seq

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            if self._is_live(deadline, seq, key):
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def expired(self, now_ms: int) -> list[C]:
        """Pop the timers due at ``now_ms``; their callbacks, in deadline (then scheduling) order."""
        out: list[C] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return out
            _deadline, _seq, key = heapq.heappop(self._heap)
            out.append(self._live.pop(key)[2])


class PartitionedTimers(Generic[C]):
    """Timer queues per coordinator partition, behind the :class:`TimerQueue` interface.

    ``route(key)`` names the partition a timer belongs to (the partition of the group or
    transactional id in the key), so that one partition's timers can be polled on their own and
    dropped when the partition is unloaded, while the state machine schedules and cancels by key.
    ``next_deadline``/``expired`` take the partition to look at.
    """

    def __init__(self, route: Callable[[TimerKey], int]) -> None:
        self._route = route
        self._queues: dict[int, TimerQueue[C]] = {}

    def _queue(self, key: TimerKey) -> TimerQueue[C] | None:
        return self._queues.get(self._route(key))

    def schedule(self, key: TimerKey, deadline_ms: int, callback: C) -> None:
        p = self._route(key)
        q = self._queues.get(p)
        if q is None:
            q = self._queues[p] = TimerQueue()
        q.schedule(key, deadline_ms, callback)

    def cancel(self, key: TimerKey) -> None:
        q = self._queue(key)
        if q is not None:
            q.cancel(key)

    def deadline(self, key: TimerKey) -> int | None:
        q = self._queue(key)
        return q.deadline(key) if q is not None else None

    def __contains__(self, key: TimerKey) -> bool:
        q = self._queue(key)
        return q is not None and key in q

    def next_deadline(self, partition: int) -> int | None:
        q = self._queues.get(partition)
        return q.next_deadline() if q is not None else None

    def expired(self, now_ms: int, partition: int) -> list[C]:
        q = self._queues.get(partition)
        return q.expired(now_ms) if q is not None else []

    def drop(self, partition: int) -> None:
        """Forget every timer of ``partition`` (it was unloaded)."""
        self._queues.pop(partition, None)
