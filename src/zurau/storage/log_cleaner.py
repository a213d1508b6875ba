"""The log cleaner: background compaction of ``cleanup.policy=compact`` logs (Kafka's
``LogCleaner``).

The broker schedules it (:func:`~zurau.storage.log_cleaner_threads.run_cleaner_threads`): on its
event loop, every ``log.cleaner.backoff.ms`` and whenever a pass ends, it :meth:`~LogCleaner.grab` s
the log most in need of cleaning (:class:`~zurau.storage.log_cleaner_manager.LogCleanerManager`) while one of its
``log.cleaner.threads`` workers is idle, and runs :meth:`~LogCleaner.clean` on an executor thread
of that many workers (``log.cleaner.enable=false`` or 0 threads: no cleaning). A pass
(:class:`~zurau.storage.cleaner.Cleaner`) ends by recording its progress in
``cleaner-offset-checkpoint`` and logging a line at INFO. Each worker has an offset map of
``log.cleaner.dedupe.buffer.size / log.cleaner.threads`` bytes.

Threads and the owner of the logs: PartitionLog is not thread-safe; the broker's event loop owns
every log. ``grab`` runs on that owner; a pass on a worker thread touches the log only through
``run_on_owner(fn)``, which runs ``fn`` on the owner and returns its result (the broker passes a
function that schedules ``fn`` on the event loop with ``call_soon_threadsafe`` and waits): each
segment swap, which first checks that the segments it replaces are still the live ones. The pass
itself reads closed segment files through descriptors of its own and writes ``.cleaned`` files
only (see cleaner.py), so produce and fetch never wait for it; it releases the GIL every half
millisecond of work. Tests call :meth:`LogCleaner.clean_once`, which grabs and cleans in place
(``run_on_owner`` then defaults to calling ``fn`` directly).

Reconfiguration (Kafka's ``LogCleaner.reconfigure``; the dynamic broker configs of
:data:`RECONFIGURABLE_CONFIGS`): :meth:`LogCleaner.reconfigure` on the owner asks for a new
:class:`CleanerConfig`; the passes in flight abort at their next check (their completed swaps
stay, their checkpoint is not advanced, so the next pass starts again from the same clean
offset: nothing is lost, only redone), no log is grabbed meanwhile, and once no pass is in flight
the scheduler calls :meth:`LogCleaner.apply_pending`, which builds the workers' offset maps and
throttles anew and resumes with the new number of workers. The cleaner manager (checkpoints,
uncleanable partitions) is kept.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from zurau.protocol.errors import KafkaError
from zurau.storage.checkpoint import fsync_dir
from zurau.storage.cleaner import (
    CleanedSegment,
    Cleaner,
    CleanerStats,
    CleaningAbortedError,
    LogToClean,
    OffsetMapTooSmallError,
)
from zurau.storage.log_cleaner_manager import LogCleanerManager
from zurau.storage.log_manager import LogManager
from zurau.storage.offset_map import OffsetMap

log = logging.getLogger("zurau.storage.cleaner")

T = TypeVar("T")
OwnerCall = Callable[[Callable[[], Any]], Any]

#: The broker configs a running cleaner takes (Kafka's ``LogCleaner.ReconfigurableConfigs``; the
#: topic defaults among the ``log.cleaner.*`` configs are read per log anyway).
RECONFIGURABLE_CONFIGS = frozenset(
    {
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms",
    }
)


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The ``log.cleaner.*`` broker configs (Kafka's ``CleanerConfig``)."""

    num_threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_io_bytes_per_second: float = float("inf")
    backoff_ms: int = 15_000
    enable_cleaner: bool = True

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> CleanerConfig:
        return cls(
            num_threads=int(get("log.cleaner.threads")),
            dedupe_buffer_size=int(get("log.cleaner.dedupe.buffer.size")),
            dedupe_buffer_load_factor=float(get("log.cleaner.io.buffer.load.factor")),
            io_buffer_size=int(get("log.cleaner.io.buffer.size")),
            max_io_bytes_per_second=float(get("log.cleaner.io.max.bytes.per.second")),
            backoff_ms=int(get("log.cleaner.backoff.ms")),
            enable_cleaner=bool(get("log.cleaner.enable")),
        )

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> CleanerConfig:
        """From a ``{"log.cleaner.threads": ..., ...}`` mapping (missing names: defaults)."""
        d = cls()
        names = {
            "log.cleaner.threads": d.num_threads,
            "log.cleaner.dedupe.buffer.size": d.dedupe_buffer_size,
            "log.cleaner.io.buffer.load.factor": d.dedupe_buffer_load_factor,
            "log.cleaner.io.buffer.size": d.io_buffer_size,
            "log.cleaner.io.max.bytes.per.second": d.max_io_bytes_per_second,
            "log.cleaner.backoff.ms": d.backoff_ms,
            "log.cleaner.enable": d.enable_cleaner,
        }
        return cls.from_broker_config(lambda name: props.get(name, names[name]))

    @property
    def threads(self) -> int:
        return self.num_threads if self.enable_cleaner else 0

    def check(self) -> None:
        """ValueError unless each worker's offset map can be built (a load factor in (0, 1], room
        for at least one key in ``dedupe_buffer_size / threads``)."""
        OffsetMap(max(self.dedupe_buffer_size // max(self.threads, 1), 1), self.dedupe_buffer_load_factor)


def _call_here(fn: Callable[[], T]) -> T:
    return fn()


class LogCleaner:
    """Compaction of a LogManager's compacted logs: choosing logs and running passes."""

    def __init__(
        self,
        config: CleanerConfig,
        log_manager: LogManager,
        now_ms: Callable[[], int],
        *,
        run_on_owner: OwnerCall = _call_here,
    ) -> None:
        self.config = config
        self.manager = LogCleanerManager(log_manager)
        self.now_ms = now_ms
        self.run_on_owner = run_on_owner
        # Set: passes abort at their next check and nothing is grabbed (shutting down, or a
        # reconfiguration waits for the passes in flight).
        self._abort = threading.Event()
        self._closed = False
        self._pending: CleanerConfig | None = None
        #: Called (on the owner) when a reconfiguration is asked for: the scheduler's wake-up.
        self.on_reconfigure: Callable[[], None] | None = None
        self.cleaners = self._build_cleaners(config)
        self.passes = 0

    def _build_cleaners(self, config: CleanerConfig) -> list[Cleaner]:
        """One :class:`Cleaner` per worker, each with its share of the dedupe buffer."""
        workers = max(config.threads, 1)
        memory = max(config.dedupe_buffer_size // workers, 1)
        return [
            Cleaner(
                OffsetMap(memory, config.dedupe_buffer_load_factor),
                io_buffer_size=config.io_buffer_size,
                max_io_bytes_per_second=config.max_io_bytes_per_second,
                check_done=self._check_done,
            )
            for _ in range(workers)
        ]

    def _check_done(self) -> None:
        if self._abort.is_set():
            reason = "shutting down" if self._closed else "being reconfigured"
            raise CleaningAbortedError(f"the log cleaner is {reason}")

    def stop(self) -> None:
        """Passes in progress stop at their next check (within about a millisecond of work);
        their completed swaps stay, the rest of their work is discarded. Final: a later
        reconfiguration is ignored."""
        self._closed = True
        self._abort.set()

    @property
    def stopping(self) -> bool:
        return self._closed

    # -- reconfiguration -------------------------------------------------------------------------

    def reconfigure(self, config: CleanerConfig) -> bool:
        """On the owner: run with ``config`` from now on (see the module docstring). A config
        equal to the one in effect (or already asked for) changes nothing; one with no worker, or
        whose offset maps cannot be built, is refused with a warning (Kafka: at least one thread).
        True if a change was asked for."""
        if self._closed or config == (self._pending or self.config):
            return False
        if config.threads < 1:
            log.warning("log cleaner: %d threads asked for; keeping %d", config.threads, self.config.threads)
            return False
        try:  # an offset map too small for one key, a load factor out of range: keep running as is
            config.check()
        except ValueError as e:
            log.warning("log cleaner: new config refused (%s); keeping the one in effect", e)
            return False
        self._pending = config
        self._abort.set()
        if self.on_reconfigure is not None:
            self.on_reconfigure()
        return True

    @property
    def reconfiguring(self) -> bool:
        """A new config waits for the passes in flight to end."""
        return self._pending is not None and not self._closed

    def apply_pending(self) -> CleanerConfig | None:
        """The scheduler, when no pass is in flight: take the config asked for (new offset maps
        and throttles) and resume grabbing; returns it (None: nothing pending, or stopped)."""
        config, self._pending = self._pending, None
        if config is None or self._closed:
            return None
        old, self.config = self.config, config
        self.cleaners = self._build_cleaners(config)
        self._abort.clear()
        log.info(
            "log cleaner reconfigured: %d -> %d thread(s), dedupe buffer %d bytes, io buffer %d bytes, "
            "io limit %s bytes/s, backoff %d ms",
            old.threads,
            config.threads,
            config.dedupe_buffer_size,
            config.io_buffer_size,
            config.max_io_bytes_per_second,
            config.backoff_ms,
        )
        return config

    def grab(self) -> LogToClean | None:
        """On the owner thread: the log to clean next, marked in progress (None: none is
        cleanable, or the cleaner is stopping)."""
        if self._abort.is_set():
            return None
        return self.manager.grab_filthiest_log(self.now_ms())

    # -- one pass --------------------------------------------------------------------------------

    def clean_once(self, worker: int = 0) -> CleanerStats | None:
        """Grab the log most in need of cleaning (through ``run_on_owner``) and clean it here;
        None if no log was cleanable or the pass did not complete."""
        ltc: LogToClean | None = self.run_on_owner(self.grab)
        if ltc is None:
            return None
        return self.clean(ltc, worker)

    def clean(self, ltc: LogToClean, worker: int = 0) -> CleanerStats | None:
        """One pass over a grabbed log, on any thread, with the offset map of ``worker`` (one
        pass at a time per worker). Swaps go through ``run_on_owner``; the log leaves the in-progress
        set at the end, its checkpoint advanced if the pass completed. Returns the pass's stats,
        None if it did not complete (logged; an unexpected error marks the log uncleanable)."""
        now = self.now_ms()
        cleaner = self.cleaners[worker]
        try:
            stats = cleaner.clean(ltc, now, lambda cleaned: self._swap(ltc, cleaned))
        except CleaningAbortedError as e:
            log.info("cleaning of %s stopped: %s", ltc.name, e)
            self.manager.release(ltc)
            return None
        except (OffsetMapTooSmallError, KafkaError, OSError, ValueError, AssertionError) as e:
            current = self._safe_owner(lambda: LogCleanerManager.still_current(ltc))
            if current:
                log.error("cleaning of %s failed; it is no longer cleaned: %s", ltc.name, e, exc_info=True)
            else:
                log.info("cleaning of %s stopped, its log changed: %s", ltc.name, e)
            self.manager.release(ltc, uncleanable=bool(current))
            return None
        except BaseException:
            self.manager.release(ltc)
            raise
        self.manager.done_cleaning(ltc, stats.end_offset)
        self.passes += 1
        self._log_pass(ltc, stats)
        return stats

    def _safe_owner(self, fn: Callable[[], bool]) -> bool:
        try:
            return bool(self.run_on_owner(fn))
        except RuntimeError:
            return False

    def _swap(self, ltc: LogToClean, cleaned: CleanedSegment) -> bool:
        plog = ltc.log
        old = [s.segment for s in cleaned.replaces]

        def swap() -> bool:
            return plog.replace_segments(
                old, cleaned.successor, cleaned.base_offset, cleaned.aborted, now_ms=self.now_ms()
            )

        done = bool(self.run_on_owner(swap))
        if done:
            try:
                fsync_dir(ltc.directory)  # the renames survive a power loss too
            except OSError:
                pass  # the partition was deleted meanwhile
        return done

    @staticmethod
    def _log_pass(ltc: LogToClean, s: CleanerStats) -> None:
        before, after = s.bytes_read, s.bytes_written
        log.info(
            "cleaned %s: %d segment(s) of %.1f KiB -> %d of %.1f KiB (%.1f%% smaller), %d of %d records "
            "removed, clean below offset %d (dirty from %d, map %.0f%% full), %.3f s (map %.3f s)",
            ltc.name,
            s.segments_before,
            before / 1024,
            s.segments_after,
            after / 1024,
            100.0 * (before - after) / before if before else 0.0,
            s.records_removed,
            s.records_read,
            s.end_offset,
            ltc.first_dirty_offset,
            100.0 * s.map_utilization,
            s.elapsed_s,
            s.map_s,
        )
