"""The log manager's scheduled tasks (Kafka's ``LogManager.startup`` schedules): flushes, retention,
recovery-point checkpoints and producer-id expiration, each on its Kafka interval.

:class:`LogMaintenance` is one coroutine (:meth:`LogMaintenance.run`) that the broker starts as a
task once its logs are loaded and cancels on shutdown. It wakes every
``min(log.flush.scheduler.interval.ms, 1 s, producer.id.expiration.check.interval.ms)`` and:

* flushes every dirty log (``flush.ms``/``flush.messages``, rolled segments; Kafka's
  ``kafka-log-flusher``) and the other :class:`Flushable` logs it was given (the single node's
  metadata log);
* every ``log.retention.check.interval.ms`` applies retention (``kafka-log-retention``);
* every ``producer.id.expiration.check.interval.ms``, and at the first tick (Kafka drops expired
  producers when it loads a snapshot), forgets the producers idle for ``producer.id.expiration.ms``
  (read at each check: it is dynamic) that have no ongoing transaction (``removeExpiredProducers``);
* every ``log.flush.offset.checkpoint.interval.ms`` writes the recovery-point, log-start and
  cleaner checkpoints (``kafka-recovery-point-checkpoint``).

Invariants, safe by construction against the appends the event loop keeps doing:

* logs are read and updated only in :meth:`LogMaintenance.run`, on the event loop that owns them;
  the flush thread (``run_off_loop``) gets flush plans (private descriptors to fsync,
  log_flush.py) and checkpoint snapshots (values to write), never a log;
* a plan's recovery point is applied (``complete_flush``) only after its fsyncs returned; plans
  a failure or a cancellation left unrun are discarded (their descriptors closed);
* a failing tick is logged and the next tick runs as usual; cancellation ends the loop.

Intervals are measured on ``time.monotonic``; the timestamps given to the logs come from
``now_ms`` (the broker's clock).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from zurau.storage.log_flush import FlushPlan, sync_all
from zurau.storage.log_manager import LogManager

log = logging.getLogger("zurau.broker")

#: Runs a blocking function on the flush thread and waits for it (the broker's ``_flush_off_loop``).
RunOffLoop = Callable[[Callable[[], object]], Awaitable[None]]


class Flushable(Protocol):
    """A log flushed with the partition logs at every tick (the single node's metadata log)."""

    def prepare_flush(self) -> FlushPlan: ...

    def complete_flush(self, plan: FlushPlan) -> None: ...


@dataclass(frozen=True, slots=True)
class MaintenanceIntervals:
    """How often each task runs, in seconds (read once, when the broker starts the loop)."""

    retention_s: float
    checkpoint_s: float
    flush_s: float
    expiration_s: float

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> MaintenanceIntervals:
        return cls(
            retention_s=get("log.retention.check.interval.ms") / 1000,
            checkpoint_s=get("log.flush.offset.checkpoint.interval.ms") / 1000,
            flush_s=min(get("log.flush.scheduler.interval.ms") / 1000, 1.0),
            expiration_s=get("producer.id.expiration.check.interval.ms") / 1000,
        )

    @property
    def tick_s(self) -> float:
        return min(self.flush_s, self.expiration_s)


class LogMaintenance:
    """The log manager's scheduled tasks; see the module docstring."""

    def __init__(
        self,
        log_manager: LogManager,
        get_config: Callable[[str], Any],
        now_ms: Callable[[], int],
        run_off_loop: RunOffLoop,
        *,
        also_flush: Sequence[Flushable] = (),
        on_flush_synced: Callable[[float], None] | None = None,
    ) -> None:
        """``get_config``: the broker config's ``get`` (intervals are read once, here;
        ``producer.id.expiration.ms`` at each check). ``on_flush_synced``: called with the fsync
        time in seconds of each plan that held descriptors and synced (the flush histogram)."""
        self.log_manager = log_manager
        self._get = get_config
        self._now_ms = now_ms
        self._run_off_loop = run_off_loop
        self._also_flush = tuple(also_flush)
        self._on_flush_synced = on_flush_synced
        self.intervals = MaintenanceIntervals.from_broker_config(get_config)

    async def run(self) -> None:
        """Tick until cancelled."""
        every = self.intervals
        last_retention = last_checkpoint = time.monotonic()
        last_expiration = -every.expiration_s
        while True:
            await asyncio.sleep(every.tick_s)
            now = time.monotonic()
            try:
                await self.flush_dirty()
                if now - last_retention >= every.retention_s:
                    last_retention = now
                    self.log_manager.run_retention(self._now_ms())
                if now - last_expiration >= every.expiration_s:
                    last_expiration = now
                    expiration_ms = self._get("producer.id.expiration.ms")  # dynamic: read at each check
                    self.log_manager.remove_expired_producers(self._now_ms(), expiration_ms)
                if now - last_checkpoint >= every.checkpoint_s:
                    last_checkpoint = now
                    await self.write_checkpoints()
            except Exception:
                log.exception("log maintenance failed")

    async def flush_dirty(self) -> None:
        """Flush every dirty partition log and the extra logs; apply the plans that synced."""
        manager = self.log_manager
        prepared = manager.prepare_flush_dirty(self._now_ms())
        plans = [plan for _log, plan in prepared]
        extra = [(flushable, flushable.prepare_flush()) for flushable in self._also_flush]
        plans.extend(plan for _f, plan in extra)
        try:
            await self.sync_off_loop(plans)
        finally:
            manager.complete_flushes(prepared)
            for flushable, plan in extra:
                flushable.complete_flush(plan)

    async def write_checkpoints(self) -> None:
        """Snapshot the checkpoints here (on the owner) and write them on the flush thread."""
        snapshot = self.log_manager.checkpoint_snapshot()
        await self._run_off_loop(functools.partial(self.log_manager.write_checkpoint, snapshot))

    async def sync_off_loop(self, plans: list[FlushPlan]) -> None:
        """Run flush plans' fsyncs in the flush thread (inline when they hold no descriptor).
        Plans a failure or a cancellation left unrun are discarded (descriptors closed)."""
        observe = self._on_flush_synced
        timed = [plan for plan in plans if plan.descriptor_count] if observe is not None else []
        try:
            if any(plan.descriptor_count for plan in plans):
                await self._run_off_loop(functools.partial(sync_all, plans))
            else:
                sync_all(plans)
        finally:
            for plan in plans:
                plan.discard()
            if observe is not None:
                for plan in timed:
                    if plan.synced:
                        observe(plan.elapsed_s)
