"""Delayed operations (Kafka's purgatories): fetches waiting for data, produces waiting for acks.

* :class:`FetchPurgatory`: a waiting fetch (``min_bytes`` / ``max_wait_ms``) registers one future
  on every partition it reads; an append to a partition completes all futures registered on it.
  The fetch then re-reads, so a wake-up is a hint, never a promise of data (spurious wake-ups are
  harmless). A notification says whether records were appended or only the high watermark
  moved: a follower's fetch reads up to the log end offset, so it waits on appends only (it
  learns the new high watermark from its next answer, as in Kafka); a consumer's wakes on both.
  A fetch may instead register per topic, with the set of that topic's partitions it
  reads (a mapping topic -> partitions): one registration per topic however many partitions, and
  an append checks the topic's few waiting fetches. A delayed fetch has one
  :class:`FetchDeadline` (one timer for its whole ``max_wait_ms``, however often it wakes up and
  waits again); once it has expired, waiting returns at once.
* :class:`ProducePurgatory`: an ``acks=all`` produce (a :class:`DelayedProduce`) waits until, for
  each partition it wrote, the high watermark reaches the offset after its last appended record
  (every in-sync replica has the data). It completes when every partition is acknowledged or
  failed, or at its timeout; partitions still waiting then answer REQUEST_TIMED_OUT (the data
  stays in the log: a timeout says "not known to be replicated", not "not written").

Both are driven by the replica manager on the event loop; neither is thread-safe. Their timers
run on the injected :class:`~zurau.clock.Clock` (the broker's real time, or a test's virtual time).

Remote time (Kafka's ``RemoteTimeMs``): a wait made while :data:`request_wait` holds a
:class:`WaitTime` (the broker's connection sets one per request when metrics are on) adds its
duration to it, so the request's time in purgatory can be told from its local processing time.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from contextvars import ContextVar

from zurau.clock import Clock, TimerHandle
from zurau.protocol.errors import RequestTimedOutError
from zurau.types import TopicPartitionKey


class WaitTime:
    """Seconds one request has spent waiting in purgatories so far; ``variant``: a finer name for
    its request metrics that its handler may give (Kafka's ``FetchConsumer``/``FetchFollower``)."""

    __slots__ = ("seconds", "variant")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.variant: str | None = None


#: The current request's :class:`WaitTime`, or None when nobody measures it.
request_wait: ContextVar[WaitTime | None] = ContextVar("zurau_request_wait", default=None)


def _release(fut: asyncio.Future[None]) -> None:
    """A waiting operation's timeout (a plain timer on its future: cheaper than ``wait_for``)."""
    if not fut.done():
        fut.set_result(None)


class FetchDeadline:
    """The end of one delayed fetch's ``max_wait_ms``: ``expired`` once it has passed, which also
    ends the wait in progress (:meth:`FetchPurgatory.wait`). :meth:`cancel` it when the fetch is
    answered."""

    __slots__ = ("_timer", "_waiting", "expired")

    def __init__(self) -> None:
        self.expired = False
        self._waiting: asyncio.Future[None] | None = None
        self._timer: TimerHandle | None = None

    def _expire(self) -> None:
        self.expired = True
        fut = self._waiting
        if fut is not None and not fut.done():
            fut.set_result(None)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


#: How many recent notifications :meth:`FetchPurgatory.notified_since` can tell apart; a fetch
#: that missed more than this re-reads (a spurious re-read is harmless).
RECENT_NOTIFICATIONS = 256


class FetchPurgatory:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        # Every notify counts (``mark``) and the last RECENT_NOTIFICATIONS keys are kept, so a
        # fetch can learn that a partition it read got data before it began to wait (Kafka's
        # tryCompleteElseWatch: check again once watching, so no wake-up is lost).
        self._seq = 0
        # (topic, partition, records appended) of the last notifications
        self._recent: deque[tuple[str, int, bool]] = deque(maxlen=RECENT_NOTIFICATIONS)
        self._waiters: dict[tuple[str, int], set[asyncio.Future[None]]] = defaultdict(set)
        # topic -> {waiting fetch: the partitions of the topic it waits on}
        self._topic_waiters: dict[str, dict[asyncio.Future[None], AbstractSet[int]]] = {}
        # The waiting fetches of followers: a high watermark move alone does not wake them.
        self._data_only: set[asyncio.Future[None]] = set()

    def watch_count(self) -> int:
        """Number of (waiting fetch, partition) watches (Kafka's ``PurgatorySize``)."""
        per_topic = sum(len(parts) for w in self._topic_waiters.values() for parts in w.values())
        return sum(len(s) for s in self._waiters.values()) + per_topic

    def operation_count(self) -> int:
        """Number of fetches waiting (Kafka's ``NumDelayedOperations``)."""
        futures: set[asyncio.Future[None]] = set().union(*self._waiters.values()) if self._waiters else set()
        for w in self._topic_waiters.values():
            futures.update(w)
        return len(futures)

    def mark(self) -> int:
        """The notification count now: take it before reading, give it to :meth:`notified_since`."""
        return self._seq

    def notified_since(
        self,
        mark: int,
        partitions: Iterable[tuple[str, int]] | Mapping[str, AbstractSet[int]],
        *,
        data_only: bool = False,
    ) -> bool:
        """Whether any of ``partitions`` was notified after :meth:`mark` gave ``mark`` (True when
        too many notifications came since to tell); ``data_only``: of an append (a follower's
        fetch, which a high watermark move alone does not concern)."""
        missed = self._seq - mark
        if missed <= 0:
            return False
        if missed > len(self._recent):
            return True
        recent = self._recent
        by_topic = partitions if isinstance(partitions, Mapping) else None
        keys = None if by_topic is not None else set(partitions)
        for i in range(len(recent) - missed, len(recent)):
            topic, partition, appended = recent[i]
            if data_only and not appended:
                continue
            if by_topic is not None:
                parts = by_topic.get(topic)
                if parts is not None and partition in parts:
                    return True
            elif keys is not None and (topic, partition) in keys:
                return True
        return False

    def notify(self, topic: str, partition: int, *, data: bool = True) -> None:
        """``topic-partition`` got records (``data``), or only its high watermark moved (then
        the waiting fetches of followers stay waiting)."""
        self._seq += 1
        self._recent.append((topic, partition, data))
        key = (topic, partition)
        waiters = self._waiters.get(key)
        if waiters:
            if data or not self._data_only:
                del self._waiters[key]
                for fut in waiters:
                    if not fut.done():
                        fut.set_result(None)
            else:
                data_only = self._data_only
                for fut in [f for f in waiters if f not in data_only]:
                    waiters.discard(fut)
                    if not fut.done():
                        fut.set_result(None)
                if not waiters:
                    del self._waiters[key]
        by_topic = self._topic_waiters.get(topic)
        if by_topic:
            data_only = self._data_only
            for fut, parts in by_topic.items():
                if partition in parts and not fut.done() and (data or fut not in data_only):
                    fut.set_result(None)

    def notify_all(self) -> None:
        for key in list(self._waiters):
            self.notify(*key)
        for by_topic in self._topic_waiters.values():
            for fut in by_topic:
                if not fut.done():
                    fut.set_result(None)

    def deadline(self, timeout_ms: float) -> FetchDeadline:
        """A delayed fetch's deadline, ``timeout_ms`` from now on the clock."""
        deadline = FetchDeadline()
        if timeout_ms <= 0:
            deadline.expired = True
        else:
            deadline._timer = self._clock.call_later(timeout_ms, deadline._expire)
        return deadline

    async def wait(
        self,
        partitions: Iterable[tuple[str, int]] | Mapping[str, AbstractSet[int]],
        deadline: FetchDeadline,
        *,
        data_only: bool = False,
    ) -> None:
        """Wait until any of ``partitions`` gets new data (or, unless ``data_only``, a higher
        high watermark) or ``deadline`` expires. ``partitions``: (topic, partition) keys, or a
        mapping topic -> set of partitions (one watch per topic)."""
        if deadline.expired:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        deadline._waiting = fut
        if data_only:
            self._data_only.add(fut)
        try:
            if isinstance(partitions, Mapping):
                return await self._wait_topics(fut, partitions)
            return await self._wait_keys(fut, list(partitions))
        finally:
            deadline._waiting = None
            if data_only:
                self._data_only.discard(fut)

    async def _wait_keys(self, fut: asyncio.Future[None], keys: list[tuple[str, int]]) -> None:
        for key in keys:
            self._waiters[key].add(fut)
        timer = request_wait.get()
        started = time.perf_counter() if timer is not None else 0.0
        try:
            await fut
        finally:
            if timer is not None:
                timer.seconds += time.perf_counter() - started
            for key in keys:
                s = self._waiters.get(key)
                if s is not None:
                    s.discard(fut)
                    if not s:
                        del self._waiters[key]

    async def _wait_topics(self, fut: asyncio.Future[None], partitions: Mapping[str, AbstractSet[int]]) -> None:
        topics = [t for t, parts in partitions.items() if parts]
        for topic in topics:
            self._topic_waiters.setdefault(topic, {})[fut] = partitions[topic]
        timer = request_wait.get()
        started = time.perf_counter() if timer is not None else 0.0
        try:
            await fut
        finally:
            if timer is not None:
                timer.seconds += time.perf_counter() - started
            for topic in topics:
                w = self._topic_waiters.get(topic)
                if w is not None:
                    w.pop(fut, None)
                    if not w:
                        del self._topic_waiters[topic]


class DelayedProduce:
    """One acks=all produce request waiting for its partitions to be replicated.

    ``required[tp]`` is the offset the high watermark of ``tp`` must reach (last appended offset
    + 1). ``errors[tp]`` is set once ``tp`` is decided: 0 when acknowledged, else a Kafka error
    code (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT). Invariant:
    ``errors`` keys are a subset of ``required`` keys; the operation is done when they are equal.
    """

    __slots__ = ("required", "errors", "_future")

    def __init__(self, required: Mapping[TopicPartitionKey, int]) -> None:
        self.required: dict[TopicPartitionKey, int] = dict(required)
        self.errors: dict[TopicPartitionKey, int] = {}
        self._future: asyncio.Future[None] | None = None

    @property
    def done(self) -> bool:
        return len(self.errors) == len(self.required)

    def pending(self) -> list[TopicPartitionKey]:
        return [k for k in self.required if k not in self.errors]

    def complete_partition(self, key: TopicPartitionKey, error_code: int = 0) -> None:
        """Decide partition ``key`` (no-op if it is not part of this produce or already decided)."""
        if key not in self.required or key in self.errors:
            return
        self.errors[key] = error_code
        if self.done and self._future is not None and not self._future.done():
            self._future.set_result(None)

    def expire(self) -> None:
        """The timeout passed: every partition still waiting gets REQUEST_TIMED_OUT."""
        for key in self.pending():
            self.errors[key] = RequestTimedOutError.code


class ProducePurgatory:
    """Delayed produces, watched per partition until its high watermark reaches their offset."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._watchers: dict[TopicPartitionKey, list[DelayedProduce]] = {}

    def __len__(self) -> int:
        """Number of (operation, partition) watches."""
        return sum(len(ops) for ops in self._watchers.values())

    def operation_count(self) -> int:
        """Number of produces waiting (Kafka's ``NumDelayedOperations``)."""
        return len({id(op) for ops in self._watchers.values() for op in ops})

    def __bool__(self) -> bool:
        """True if any operation is watched (cheap: the hot path asks this on every HW advance)."""
        return bool(self._watchers)

    def has_watchers(self, key: TopicPartitionKey) -> bool:
        return key in self._watchers

    def watch(self, op: DelayedProduce) -> None:
        """Watch every partition of ``op`` that is not decided yet."""
        for key in op.pending():
            self._watchers.setdefault(key, []).append(op)

    def check(self, key: TopicPartitionKey, high_watermark: int, error_code: int = 0) -> int:
        """Partition ``key``'s high watermark is now ``high_watermark``: decide the operations it
        satisfies (with ``error_code``). Returns how many were decided."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        keep = []
        decided = 0
        for op in ops:
            if key in op.errors:
                continue  # decided elsewhere (failed or expired)
            if op.required[key] <= high_watermark:
                op.complete_partition(key, error_code)
                decided += 1
            else:
                keep.append(op)
        if keep:
            self._watchers[key] = keep
        else:
            del self._watchers[key]
        return decided

    def fail(self, key: TopicPartitionKey, error_code: int) -> None:
        """Decide every operation waiting on ``key`` with ``error_code`` (leadership lost)."""
        for op in self._watchers.pop(key, ()):
            op.complete_partition(key, error_code)

    def _unwatch(self, op: DelayedProduce) -> None:
        for key in op.required:
            ops = self._watchers.get(key)
            if ops is None:
                continue
            ops = [o for o in ops if o is not op]
            if ops:
                self._watchers[key] = ops
            else:
                del self._watchers[key]

    async def wait(self, op: DelayedProduce, timeout_ms: float) -> dict[TopicPartitionKey, int]:
        """Wait until ``op`` is done or ``timeout_ms`` passes; return its per-partition error codes."""
        timer = request_wait.get()
        started = time.perf_counter() if timer is not None else 0.0
        try:
            if not op.done and timeout_ms > 0:
                fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                op._future = fut
                expiry = self._clock.call_later(timeout_ms, functools.partial(_release, fut))
                try:
                    await fut
                finally:
                    expiry.cancel()
        finally:
            if timer is not None:
                timer.seconds += time.perf_counter() - started
            # Also on cancellation (the client went away): never leave the operation watched.
            op._future = None
            if not op.done:
                op.expire()
                self._unwatch(op)
        return op.errors
