"""Flushing a log off the event loop, safe by construction (Kafka's log flush, split in three).

A log is not thread-safe (partition_log.py), yet fsync must not block the event loop (docs/architecture.md
principle 5). So a flush is split so that the worker thread never touches a log object:

1. ``PartitionLog.prepare_flush`` runs on the event loop. It hands the index entries still in
   memory to the OS, then captures a :class:`FlushPlan`: the target offset (the log end offset,
   or less), *private* descriptors (``os.dup`` of each segment's ``.log``, ``.index`` and
   ``.timeindex`` descriptor, or a fresh read-only open) of every segment holding offsets in
   ``[recovery_point, target)``, and, when a segment file was created since the last directory
   fsync, the new active segment's descriptors and a descriptor of the partition directory.
2. :meth:`FlushPlan.run` runs in a worker thread (or inline): ``fsync`` on each of those
   descriptors, then ``close`` them. It reads no Python state but the plan's own. fsync on a
   descriptor is safe while the event loop appends to the same file through another one: every
   byte written before the fsync call began is durable when it returns.
3. ``PartitionLog.complete_flush`` runs on the event loop. If the plan ran to the end it
   advances the recovery point to the plan's target (never to the log end offset of the moment,
   which may hold bytes no fsync covered), and marks directory changes up to the plan's as
   synced (a segment rolled meanwhile keeps its directory fsync pending). A plan whose log was
   truncated or restarted since it was prepared advances nothing.

Invariants:
* the descriptors of a plan are owned by the plan: whoever *claims* them first (``run`` or
  ``discard``) fsyncs and/or closes each exactly once; the log may meanwhile close, delete or
  reuse its own descriptors (retention, truncation, roll) without effect on the plan;
* ``recovery_point`` only ever names an offset below which every byte was fsynced by a plan that
  started after those bytes were written;
* a failed fsync (``OSError``) leaves the plan unsynced, and completing it changes nothing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable


class FlushPlan:
    """What one flush of one log makes durable; see the module docstring.

    ``target``: the recovery point once the plan has run; ``dir_changes``: the log's count of
    segment files created, as of the plan (a directory fsync in the plan covers them);
    ``generation``: the log's truncation count, as of the plan; ``messages``: unflushed messages
    the plan covers; ``now_ms``: the flush time to record (None: do not record one);
    ``elapsed_s``: how long :meth:`run` took to fsync (0.0 until it has run).
    """

    __slots__ = ("target", "dir_changes", "generation", "messages", "now_ms", "synced", "elapsed_s", "_fds", "_lock")

    def __init__(
        self,
        fds: list[int],
        target: int,
        *,
        dir_changes: int,
        generation: int,
        messages: int,
        now_ms: int | None,
    ) -> None:
        self.target = target
        self.dir_changes = dir_changes
        self.generation = generation
        self.messages = messages
        self.now_ms = now_ms
        self.synced = False
        self.elapsed_s = 0.0
        self._fds: list[int] | None = fds
        self._lock = threading.Lock()

    @property
    def descriptor_count(self) -> int:
        """How many descriptors the plan still holds (0 once run or discarded)."""
        fds = self._fds
        return len(fds) if fds is not None else 0

    def _claim(self) -> list[int] | None:
        with self._lock:
            fds, self._fds = self._fds, None
        return fds

    def run(self) -> None:
        """fsync every descriptor in order, then close them all; ``synced`` tells success.

        Safe on any thread. Raises the first OSError (after closing every descriptor). A plan
        already run or discarded does nothing.
        """
        fds = self._claim()
        if fds is None:
            return
        started = time.perf_counter()
        try:
            for fd in fds:
                os.fsync(fd)
            self.synced = True
        finally:
            self.elapsed_s = time.perf_counter() - started
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def discard(self) -> None:
        """Close the descriptors without fsyncing them (the plan never ran). Idempotent."""
        fds = self._claim()
        for fd in fds or ():
            try:
                os.close(fd)
            except OSError:
                pass

    def __repr__(self) -> str:
        return (
            f"FlushPlan(target={self.target}, descriptors={self.descriptor_count}, "
            f"dir_changes={self.dir_changes}, synced={self.synced})"
        )


def sync_all(plans: Iterable[FlushPlan]) -> None:
    """Run every plan (on the calling thread); raise the first failure once all were tried.

    One log's failed fsync does not keep the others from being flushed: each plan that ran to
    the end is ``synced`` and may be completed.
    """
    first: OSError | None = None
    for plan in plans:
        try:
            plan.run()
        except OSError as e:
            if first is None:
                first = e
    if first is not None:
        raise first


def open_directory(path: os.PathLike[str] | str) -> int:
    """A read-only descriptor of a directory, for fsyncing its entries."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


__all__ = ["FlushPlan", "close_all", "open_directory", "sync_all"]
