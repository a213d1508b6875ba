"""The periodic background jobs of a mirror connector (MM2's ``Scheduler``): one daemon thread runs
every job when it is due, one at a time.

A job runs first at ``start + delay`` (0 runs it at once, as MM2's ``scheduleRepeating``; the
interval as MM2's ``scheduleRepeatingDelayed``) and then every ``interval`` seconds after it
ended. A job's exception is logged and the job runs again next time (a cluster that is away for
a while is no reason to stop). :meth:`Scheduler.stop` wakes the thread and waits for the running
job to end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("zurau.connect.mirror")


@dataclass
class _Job:
    what: str
    fn: Callable[[], None]
    interval: float
    due: float


class Scheduler:
    def __init__(self, name: str) -> None:
        self.name = name
        self.jobs: list[_Job] = []
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def every(self, interval: float, what: str, fn: Callable[[], None], *, delayed: bool = False) -> None:
        """Run ``fn`` every ``interval`` seconds (first at once, or after one interval if ``delayed``)."""
        self.jobs.append(_Job(what, fn, interval, time.monotonic() + (interval if delayed else 0.0)))

    def start(self) -> None:
        if self.jobs:
            self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
            self._thread.start()

    def _main(self) -> None:
        while not self.stopping.is_set():
            job = min(self.jobs, key=lambda j: j.due)
            wait = job.due - time.monotonic()
            if wait > 0:
                self.stopping.wait(wait)
                continue
            try:
                job.fn()
            except Exception as e:
                log.warning("%s: %s failed: %s", self.name, job.what, e)
            job.due = time.monotonic() + job.interval

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(15)
