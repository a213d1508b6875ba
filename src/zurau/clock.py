"""Time as an injectable dependency: the broker runs on :class:`SystemClock`, tests and the
deterministic simulation on :class:`ManualClock` (virtual time that moves only when told).

A clock gives wall-clock milliseconds (``now_ms``, for timestamps and deadlines that Kafka
expresses in epoch ms) and one-shot timers (``call_later``) whose handle can be cancelled.
Timers carry their callback; firing order for equal deadlines is the order they were set.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        ...

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once, ``delay_ms`` from now (at the earliest)."""
        ...


class SystemClock:
    """Real time; timers on the running asyncio loop."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0.0) / 1000, callback)


class _ManualTimer:
    __slots__ = ("cancelled", "callback", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """Virtual time: ``advance(ms)`` moves the clock and fires every timer that came due, in
    deadline order (ties in the order they were set). Callbacks may set new timers; those due
    within the advanced span fire in the same call."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = float(start_ms)
        self._heap: list[tuple[float, int, _ManualTimer]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return int(self._now)

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> TimerHandle:
        t = _ManualTimer(self._now + max(delay_ms, 0.0), callback)
        heapq.heappush(self._heap, (t.deadline, next(self._seq), t))
        return t

    def next_deadline(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def advance(self, ms: float) -> int:
        """Move time forward by ``ms``; returns how many timers fired."""
        target = self._now + ms
        fired = 0
        while True:
            due = self.next_deadline()
            if due is None or due > target:
                break
            _, _, t = heapq.heappop(self._heap)
            self._now = max(self._now, t.deadline)
            fired += 1
            t.callback()
        self._now = target
        return fired

    def set(self, now_ms: int) -> int:
        """Move time to ``now_ms`` (never backwards)."""
        return self.advance(max(0.0, now_ms - self._now))
