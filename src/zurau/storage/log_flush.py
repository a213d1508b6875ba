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

Grouped creation sync: a topic of thousands of partitions creates thousands of directories and
empty files at once, and fsyncing each (the ``.log``, the epoch checkpoint, the partition dir and
the log dir per log) costs a journal commit or a device cache flush apiece, thousands of them,
which also stalls the event loop's own file creations (and other processes') behind the journal. So the plans of such logs in one round may share one
:class:`FileSystemSync` instead of descriptors of their own: one ``syncfs(2)`` of the log dir's
file system, run by the first of those plans to run, after every one of them was prepared. It
writes back and commits every change made to that file system before it began (all the new
directories, files, epoch checkpoints and their bytes), so a plan that shares it is ``synced``
exactly when that ``syncfs`` returned success, and its completion claims nothing a plan of its own
would not. It also writes back whatever else is dirty on that file system (other logs' unflushed
appends, other processes' files): it runs on the flush thread, once per round that found at least
``log_manager.GROUPED_SYNC_MIN_LOGS`` new logs, never for a single new partition. ``syncfs`` is
used only on Linux 5.8 or later (earlier kernels do not report writeback
errors through it); elsewhere every log gets a plan of its own descriptors as before.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path


class FlushPlan:
    """What one flush of one log makes durable; see the module docstring.

    ``target``: the recovery point once the plan has run; ``dir_changes``: the log's count of
    segment files created, as of the plan (a directory fsync in the plan covers them);
    ``generation``: the log's truncation count, as of the plan; ``messages``: unflushed messages
    the plan covers; ``now_ms``: the flush time to record (None: do not record one);
    ``elapsed_s``: how long :meth:`run` took to fsync (0.0 until it has run); ``group``: the
    :class:`FileSystemSync` the plan shares (None: its own descriptors cover everything).
    """

    __slots__ = (
        "target", "dir_changes", "generation", "messages", "now_ms", "synced", "elapsed_s", "group", "_fds", "_lock"
    )

    def __init__(
        self,
        fds: list[int],
        target: int,
        *,
        dir_changes: int,
        generation: int,
        messages: int,
        now_ms: int | None,
        group: FileSystemSync | None = None,
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
        self.group = group
        if group is not None:
            group.acquire()

    @property
    def descriptor_count(self) -> int:
        """How many descriptors the plan still holds, its group's shared one included (0 once
        run or discarded)."""
        fds = self._fds
        return len(fds) + (self.group is not None) if fds is not None else 0

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
            if self.group is not None:
                self.group.run()
            self.synced = True
        finally:
            self.elapsed_s = time.perf_counter() - started
            close_all(fds)
            if self.group is not None:
                self.group.release()

    def discard(self) -> None:
        """Close the descriptors without fsyncing them (the plan never ran). Idempotent."""
        fds = self._claim()
        if fds is None:
            return
        close_all(fds)
        if self.group is not None:
            self.group.release()

    def __repr__(self) -> str:
        return (
            f"FlushPlan(target={self.target}, descriptors={self.descriptor_count}, "
            f"dir_changes={self.dir_changes}, synced={self.synced})"
        )


def _load_syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` where it reports writeback errors (Linux 5.8+), else None."""
    if platform.system() != "Linux":
        return None
    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
        if (major, minor) < (5, 8):
            return None
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (ValueError, OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_SYNCFS = _load_syncfs()


def syncfs_available() -> bool:
    """Whether :class:`FileSystemSync` can be used here (see the module docstring)."""
    return _SYNCFS is not None


class FileSystemSync:
    """One ``syncfs(2)`` of the file system holding ``directory``, shared by the flush plans of
    one round (see the module docstring). Opened on the owning thread, where the plans that share
    it are prepared; :meth:`run` in any thread.

    Invariants: the ``syncfs`` call happens at most once, from the first :meth:`run`; every later
    :meth:`run` returns at once if it succeeded and raises its error if it failed; the directory
    descriptor is closed once the call returned or every plan sharing it was released, whichever
    comes first.
    """

    __slots__ = ("_fd", "_refs", "_done", "_error", "_lock")

    def __init__(self, directory: Path) -> None:
        if _SYNCFS is None:
            raise OSError("syncfs is not available here")
        self._fd: int | None = open_directory(directory)
        self._refs = 0
        self._done = False
        self._error: OSError | None = None
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            self._refs += 1

    def run(self) -> None:
        """``syncfs`` once (on its first call); raise its OSError, also on every later call."""
        with self._lock:
            if self._done:
                return
            if self._error is not None:
                raise self._error
            assert _SYNCFS is not None and self._fd is not None
            try:
                if _SYNCFS(self._fd) != 0:
                    errno = ctypes.get_errno()
                    self._error = OSError(errno, f"syncfs: {os.strerror(errno)}")
                    raise self._error
                self._done = True
            finally:
                self._close()

    def release(self) -> None:
        """A plan sharing this sync is done with it (ran or discarded)."""
        with self._lock:
            self._refs -= 1
            if self._refs <= 0:
                self._close()

    def release_if_unused(self) -> None:
        """Close the descriptor if no plan shares it (a round that made none)."""
        with self._lock:
            if self._refs <= 0:
                self._close()

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def synced(self) -> bool:
        return self._done


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


__all__ = ["FileSystemSync", "FlushPlan", "close_all", "open_directory", "sync_all", "syncfs_available"]
