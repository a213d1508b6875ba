"""Event-loop stall watchdog: how long the broker's one event loop was kept from running.

A node runs Raft, its controller, its broker and its coordinators on one event loop, so any step
that holds the loop (publishing a big metadata delta, recovering logs, building a big response)
also delays Raft's fetches and votes; past ``controller.quorum.fetch.timeout.ms`` the quorum
elects a new leader. The watchdog makes such stalls visible:

* on the loop, a callback stamps ``time.monotonic()`` every :data:`TICK_S`;
* a daemon thread wakes every :data:`TICK_S` and measures how old the stamp is. A stamp older than
  ``warn_after_s`` is a stall in progress: the thread logs, once per stall, a WARNING with the
  stack of the loop's thread at that moment (``sys._current_frames``; this is what names the
  culprit), and when the loop runs again the stall's full length.

Invariants: the thread reads two floats and never touches loop state; :attr:`max_stall_s` only
grows (the longest stall since start, to one :data:`TICK_S` of precision) and :attr:`stalls`
counts stalls longer than ``warn_after_s``. Cost: one loop callback and one thread wake-up every
:data:`TICK_S`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback

log = logging.getLogger("zurau.loop")

#: Stamp and check period, seconds.
TICK_S = 0.05


class LoopWatchdog:
    """See the module docstring. ``start()`` on the loop's thread; ``stop()`` from anywhere."""

    def __init__(self, name: str, warn_after_s: float = 1.0) -> None:
        self.name = name
        self.warn_after_s = warn_after_s
        self.max_stall_s = 0.0
        self.stalls = 0
        self._stamp = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread_id = 0
        self._handle: asyncio.TimerHandle | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread_id = threading.get_ident()
        self._stamp = time.monotonic()
        self._tick()
        self._thread = threading.Thread(target=self._watch, name=f"zurau-loop-watchdog-{self.name}", daemon=True)
        self._thread.start()

    def _tick(self) -> None:
        now = time.monotonic()
        lag = now - self._stamp - TICK_S
        if lag > self.max_stall_s:
            self.max_stall_s = lag
        self._stamp = now
        assert self._loop is not None
        self._handle = self._loop.call_later(TICK_S, self._tick)

    def _watch(self) -> None:
        reported: float | None = None  # the stamp of the stall already reported
        while not self._stop.wait(TICK_S):
            stamp = self._stamp
            now = time.monotonic()
            age = now - stamp
            if age > self.warn_after_s and reported != stamp:
                reported = stamp
                self.stalls += 1
                frame = sys._current_frames().get(self._loop_thread_id)
                where = "".join(traceback.format_stack(frame, limit=25)) if frame is not None else "(no frame)"
                log.warning("%s: event loop stalled for %.2f s so far, in:\n%s", self.name, age, where)
            elif reported is not None and reported != stamp:
                # The loop stamped ``stamp`` when it ran again: the stall lasted until then.
                log.warning(
                    "%s: event loop stall ended after about %.2f s (longest since start %.2f s)",
                    self.name, stamp - reported, self.max_stall_s,
                )
                reported = None

    def stop(self) -> None:
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1)
            self._thread = None
