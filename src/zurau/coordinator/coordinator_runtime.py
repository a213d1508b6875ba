"""The coordinators' shell: one runtime for groups and transactions (docs/architecture.md).

A :class:`CoordinatorRuntime` drives a sans-I/O state machine (:class:`CoordinatorStateMachine`:
:class:`~zurau.coordinator.group.group_coordinator_shard.GroupCoordinatorShard` or
:class:`~zurau.coordinator.txn.transaction_coordinator.TransactionCoordinator`) over the partitions
of its internal topic. It is the only part that touches partitions (through a
:class:`~zurau.coordinator.partition_writer.PartitionWriter`) and time (through a
:class:`~zurau.clock.Clock`). Subclasses add what is specific to one coordinator: the record
format, the topic's settings, transaction markers.

Shards. Each partition of the internal topic this broker serves is a *shard*: it is loaded
(:meth:`CoordinatorRuntime.load`: its committed records, log start to high watermark, are
replayed into the state machine, a chunk at a time; a new leader whose high watermark is still
below the log end it had when the load began keeps loading until its followers have fetched
that far, so no record of the previous leader's is left out) and unloaded
(:meth:`CoordinatorRuntime.unload`: its state is dropped, its waiting requests answered
NOT_COORDINATOR, its timer cancelled) on its own. A request is routed by its key (group id,
transactional id) to the shard of ``partition_for(key)``; a shard that is not loaded answers
NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.

Failed loads (Kafka's FAILED coordinator state). When a partition's records cannot be replayed
(a record the parser refuses: :class:`~zurau.coordinator.internal_topic.CoordinatorLoadError`;
or the state machine failing on a record), the load fails loudly and the partition is *not*
served from what was read before the failure: an ERROR names the partition and the cause, the
state machine forgets the partition, and every request for its keys is answered NOT_COORDINATOR
(as Kafka's CoordinatorRuntime answers for a context in FAILED state). FindCoordinator still
names this broker, the partition's leader, as Kafka's does; clients (the Java client,
librdkafka) take NOT_COORDINATOR as "look the coordinator up again" and keep retrying with
backoff, so they wait rather than act on partial state. COORDINATOR_LOAD_IN_PROGRESS is not used
for this: it would tell clients a load is under way when none will finish by itself. A failed
partition is loaded again when this broker becomes its leader again (Kafka's retry) and, unlike
Kafka, also by itself after a backoff (:data:`LOAD_RETRY_BACKOFF_MS`, doubling up to
:data:`LOAD_RETRY_BACKOFF_MAX_MS`; each failed attempt logs its ERROR), so a cause that goes away
(a transient read error, the bad record deleted or compacted away) heals without a restart.

Invariants:

* Committed means below the high watermark. A write's records are appended as one batch; the
  state machine learns its outcome (``complete_write``, which replays the records and runs the
  continuation) only once the partition's high watermark is above the batch's last offset, or at
  once if the append failed. Replies that came with writes are released only after those writes
  completed. On one node the high watermark passes inside the append, so all of this happens
  before :meth:`CoordinatorRuntime.request` returns; with replicas it waits for the ISR.
* One input at a time per shard, in arrival order: a request, a timer poll or any other input of
  a shard runs only when every write of the shard's previous inputs has completed. So replies go
  out in order per key, and the state machine always computes from committed state.
* Writes of a shard complete in log order (the high watermark only grows while a partition is
  loaded). The shell never re-enters itself: work that arrives while it runs (a high-watermark
  listener called inside an append, a callback of another runtime) is queued and done by the
  loop already running.
* Timers carry their callback: each loaded shard has at most one clock timer, armed for the
  state machine's next deadline of that partition; when it fires, a poll of that partition is
  queued like any other input.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from zurau.clock import Clock, TimerHandle
from zurau.coordinator.internal_topic import ChunkParser, CoordinatorLoadError, PartitionLoader
from zurau.coordinator.partition_writer import PartitionWriter
from zurau.coordinator.topics import TopicsView
from zurau.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaError,
    LeaderNotAvailableError,
    NotCoordinatorError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    UnknownServerError,
)
from zurau.replication.purgatory import request_wait

log = logging.getLogger("zurau.coordinator")

W_contra = TypeVar("W_contra", contravariant=True)
W_co = TypeVar("W_co", covariant=True)
FX_co = TypeVar("FX_co", covariant=True)
R_contra = TypeVar("R_contra", contravariant=True)

# A failed load is retried after this long, doubling per failed attempt up to the maximum.
LOAD_RETRY_BACKOFF_MS = 5_000
LOAD_RETRY_BACKOFF_MAX_MS = 300_000


class CoordinatorWrite(Protocol):
    """Records for one partition of the internal topic (the state machine's own type)."""

    @property
    def partition(self) -> int: ...


class CoordinatorEffects(Protocol[W_co]):
    """What a state machine returns: ``(token, result)`` replies and writes to make."""

    @property
    def replies(self) -> list[tuple[Any, Any]]: ...

    @property
    def writes(self) -> Sequence[W_co]: ...


class CoordinatorStateMachine(Protocol[W_contra, FX_co, R_contra]):
    """What the runtime needs of a coordinator state machine (no I/O, time passed in)."""

    def partition_for(self, key: str) -> int: ...

    def load(self, records: Iterable[R_contra]) -> None:
        """Replay committed records of one partition (called chunk by chunk, in log order)."""
        ...

    def start_partition(self, partition: int, now_ms: int) -> FX_co:
        """The partition is loaded: arm its timers, resume its unfinished work."""
        ...

    def unload_partition(self, partition: int) -> None:
        """Forget everything that belongs to the partition."""
        ...

    def complete_write(self, write: W_contra, error: KafkaError | None, now_ms: int) -> FX_co:
        """A write is committed (``error`` None) or failed: apply it, run its continuation."""
        ...

    def next_deadline(self, partition: int) -> int | None: ...

    def poll(self, now_ms: int, partition: int) -> FX_co: ...


class TopicCreator(Protocol):
    def __call__(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str | None]
    ) -> Any: ...


S = TypeVar("S", bound=CoordinatorStateMachine[Any, Any, Any])
W = TypeVar("W", bound=CoordinatorWrite)
FX = TypeVar("FX", bound=CoordinatorEffects[Any])

# A request's outcome: (result, None), or (None, error) when the state machine never answered.
ReplyCallback = Callable[[Any, KafkaError | None], None]


# ---------------------------------------------------------------------------------- shard state


def _ignore(error: KafkaError) -> None:
    """The ``fail`` of an input nobody waits for."""


@dataclass(eq=False, slots=True)
class _Event:
    """One input of a shard: ``run(now_ms)`` feeds it to the state machine; ``fail`` answers it
    with an error instead (the shard was unloaded first, or ``run`` raised)."""

    run: Callable[[int], Any]
    fail: Callable[[KafkaError], None]


@dataclass(eq=False, slots=True)
class _Replies:
    """Replies held until ``remaining`` writes of the same effects completed."""

    remaining: int
    replies: list[tuple[Any, Any]]


@dataclass(eq=False, slots=True)
class _InFlight:
    """An appended write waiting for the high watermark (or a failed one, ``error`` set)."""

    last_offset: int
    error: KafkaError | None
    complete: Callable[[KafkaError | None, int], Any]  # -> effects or None
    abort: Callable[[KafkaError], None] | None  # told if the shard is unloaded first
    held: _Replies | None


@dataclass(eq=False)
class _Shard:
    partition: int
    loading: bool = True
    loader: PartitionLoader[Any] | None = None
    awaiting_high_watermark: bool = False  # loaded up to the high watermark, not yet to the target
    load_started: float = 0.0
    high_watermark: int = 0
    queue: deque[_Event] = field(default_factory=deque)
    inflight: deque[_InFlight] = field(default_factory=deque)
    timer: TimerHandle | None = None
    armed: int | None = None  # the deadline ``timer`` is armed for
    poll_queued: bool = False
    failed_loads: int = 0  # failed load attempts before this one (since this broker led it)


@dataclass(eq=False, slots=True)
class _FailedLoad:
    """A partition led here whose load failed: not served, its load retried by ``timer``."""

    partition: int
    cause: str
    attempts: int
    timer: TimerHandle | None = None


@dataclass(eq=False, slots=True)
class _Waiter:
    partition: int
    done: ReplyCallback


# ---------------------------------------------------------------------------------- runtime


class CoordinatorRuntime(ABC, Generic[S, W, FX]):
    """Runs a coordinator state machine over the loaded partitions of its internal topic.

    Subclasses set :attr:`topic` and implement the hooks: :meth:`_new_core`,
    :meth:`_num_partitions`, :meth:`_encode`, :meth:`_parser`, :meth:`_topic_spec` and
    :meth:`_load_buffer_bytes` (and may extend :meth:`_on_effects`). Each takes its own typed
    settings (a view of :mod:`zurau.config.coordinator_views`), never the whole broker config.
    """

    topic: str
    what = "key"  # what a key is, for messages ("group", "transactional id")
    # How many brokers are live now (the internal topic's replication factor is capped at it);
    # None: no cap (wired by the composition root).
    live_brokers: Callable[[], int] | None = None
    # Replies held for a write are answered REQUEST_TIMED_OUT if the write is not committed (the
    # high watermark has not passed it) within this long (Kafka's offsets.commit.timeout.ms for
    # the group coordinator); the write itself stays and applies if it commits later. None: wait.
    write_timeout_ms: int | None = None

    def __init__(
        self,
        writer: PartitionWriter,
        topics: TopicsView,
        create_topic: TopicCreator,
        clock: Clock,
    ) -> None:
        """Subclasses set their settings before calling this: it builds the state machine
        (:meth:`_new_core`)."""
        self.writer = writer
        self.clock = clock
        self.topics = topics
        self._create_topic = create_topic
        existing = topics.get(self.topic)
        self.core: S = self._new_core(existing.partitions if existing is not None else None)
        self.started = True  # False once stopped
        self._shards: dict[int, _Shard] = {}
        self._failed: dict[int, _FailedLoad] = {}  # partitions led here that could not be loaded
        self._waiting: dict[int, _Waiter] = {}
        self._tokens = itertools.count(1)
        self._ready: dict[int, None] = {}  # shards that may have work, in order (a set)
        self._pumping = False
        self.writer.add_high_watermark_listener(self._on_high_watermark)

    # ------------------------------------------------------------------ subclass hooks
    @abstractmethod
    def _new_core(self, num_partitions: int | None) -> S:
        """A fresh state machine for a topic of ``num_partitions`` (None: the configured count)."""

    @abstractmethod
    def _num_partitions(self) -> int:
        """The partition count the state machine maps keys with."""

    @abstractmethod
    def _encode(self, write: W, now_ms: int) -> bytearray:
        """The batch holding ``write``'s records."""

    @abstractmethod
    def _parser(self, partition: int) -> ChunkParser[Any]:
        """How to turn a chunk of ``partition``'s log into records for ``core.load``."""

    @abstractmethod
    def _topic_spec(self) -> tuple[int, int, dict[str, str | None]]:
        """(partitions, replication factor, configs) to create the internal topic with."""

    @abstractmethod
    def _load_buffer_bytes(self) -> int:
        """How many bytes of the log to read and replay at a time when loading."""

    def _on_effects(self, partition: int, fx: FX) -> None:
        """Effects other than writes and replies (transaction markers)."""

    # ------------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        """Stop serving: cancel timers, answer every waiting request COORDINATOR_NOT_AVAILABLE.
        The state machine is left as it is."""
        self.started = False
        err = CoordinatorNotAvailableError(f"the {self.topic} coordinator is shutting down")
        for shard in list(self._shards.values()):
            self._drop_shard(shard, err)
        self._shards.clear()
        for failed in self._failed.values():
            if failed.timer is not None:
                failed.timer.cancel()
        self._failed.clear()
        self._ready.clear()
        for token in list(self._waiting):
            self._fail_token(token, err)

    def load(self, partition: int, *, blocking: bool = False) -> None:
        """Load ``partition`` of the internal topic and serve it once its records are replayed.

        The first chunk (``*.load.buffer.size`` bytes) is replayed at once; further chunks on
        later turns of the clock unless ``blocking``. Requests meanwhile get
        COORDINATOR_LOAD_IN_PROGRESS. Loading a loaded (or loading) partition does nothing; a
        partition whose load failed is loaded again (see the module docstring).
        """
        failed = self._failed.pop(partition, None)
        if failed is not None and failed.timer is not None:
            failed.timer.cancel()
        self._load(partition, blocking, 0)

    def _load(self, partition: int, blocking: bool, failed_loads: int) -> None:
        if not self.started or partition in self._shards:
            return
        self._match_partition_count()
        shard = _Shard(partition, load_started=time.monotonic(), failed_loads=failed_loads)
        try:
            shard.loader = PartitionLoader(
                self.writer, self.topic, partition, self._load_buffer_bytes(), self._parser(partition)
            )
        except KafkaError as e:
            log.warning("cannot load %s-%d: %s", self.topic, partition, e)
            return
        self._shards[partition] = shard
        self._load_chunks(shard, blocking)

    def unload(self, partition: int) -> None:
        """Stop serving ``partition``: drop its state, answer its queued, parked and in-flight
        requests NOT_COORDINATOR, cancel its timer (or its load retry, if its load failed).
        Unloading an unloaded partition does nothing."""
        failed = self._failed.pop(partition, None)
        if failed is not None:
            if failed.timer is not None:
                failed.timer.cancel()
            log.info("unloaded %s-%d (its load had failed)", self.topic, partition)
        shard = self._shards.pop(partition, None)
        if shard is None:
            return
        err = NotCoordinatorError(f"{self.topic}-{partition} is no longer served by this broker")
        self._drop_shard(shard, err)
        self.core.unload_partition(partition)
        for token, waiter in list(self._waiting.items()):
            if waiter.partition == partition:
                self._fail_token(token, err)
        log.info("unloaded %s-%d", self.topic, partition)

    def loaded(self, partition: int) -> bool:
        shard = self._shards.get(partition)
        return shard is not None and not shard.loading

    def loaded_partitions(self) -> list[int]:
        return sorted(p for p, s in self._shards.items() if not s.loading)

    def _drop_shard(self, shard: _Shard, err: KafkaError) -> None:
        self._ready.pop(shard.partition, None)
        if shard.timer is not None:
            shard.timer.cancel()
            shard.timer = None
        shard.loader = None
        events, shard.queue = shard.queue, deque()
        for ev in events:
            self._guard(ev.fail, err)
        inflight, shard.inflight = shard.inflight, deque()
        for w in inflight:
            if w.abort is not None:
                self._guard(w.abort, err)

    def _match_partition_count(self) -> None:
        """An internal topic created (or found) with another partition count than the state
        machine assumes: rebuild the state machine while nothing is loaded."""
        t = self.topics.get(self.topic)
        if t is None or t.partitions == self._num_partitions():
            return
        if self._shards:
            log.error(
                "%s has %d partitions but %d are being served; keeping %d",
                self.topic,
                t.partitions,
                self._num_partitions(),
                self._num_partitions(),
            )
            return
        self.core = self._new_core(t.partitions)

    def _load_chunks(self, shard: _Shard, blocking: bool) -> None:
        if self._shards.get(shard.partition) is not shard or shard.loader is None:
            return
        shard.timer = None
        shard.awaiting_high_watermark = False
        loader = shard.loader
        while True:
            try:
                records, done = loader.next_chunk()
            except KafkaError as e:
                log.warning("cannot load %s-%d: %s", self.topic, shard.partition, e)
                self.unload(shard.partition)
                return
            except CoordinatorLoadError as e:
                self._load_failed(shard, str(e), None)
                return
            try:
                self.core.load(records)
            except Exception as e:
                self._load_failed(shard, f"replaying its records failed: {type(e).__name__}: {e}", e)
                return
            if done:
                if not loader.caught_up:
                    # A new leader whose high watermark is still below its log end: wait for
                    # the followers to fetch (``_on_high_watermark`` resumes the load).
                    shard.awaiting_high_watermark = True
                    return
                break
            if not blocking:
                shard.timer = self.clock.call_later(0, lambda: self._load_chunks(shard, False))
                return
        shard.loading = False
        shard.loader = None
        if shard.failed_loads:
            log.info(
                "loaded %s-%d after %d failed attempt(s); it is served again",
                self.topic,
                shard.partition,
                shard.failed_loads,
            )
        log.debug(
            "loaded %s-%d: %d records in %.0f ms",
            self.topic,
            shard.partition,
            loader.count,
            (time.monotonic() - shard.load_started) * 1000,
        )
        self._refresh_high_watermark(shard)
        partition = shard.partition
        shard.queue.appendleft(_Event(lambda now: self.core.start_partition(partition, now), _ignore))
        self._ready[partition] = None
        self._pump()

    def _load_failed(self, shard: _Shard, cause: str, error: BaseException | None) -> None:
        """The shard's load failed: drop everything of the partition, answer NOT_COORDINATOR for
        it from now on, log an ERROR and retry the load later (see the module docstring)."""
        partition = shard.partition
        attempts = shard.failed_loads + 1
        delay = min(LOAD_RETRY_BACKOFF_MS * 2 ** (attempts - 1), LOAD_RETRY_BACKOFF_MAX_MS)
        log.error(
            "failed to load %s-%d (attempt %d): %s; the partition is not served (requests for it "
            "get NOT_COORDINATOR); loading it again in %d ms",
            self.topic,
            partition,
            attempts,
            cause,
            delay,
            exc_info=error,
        )
        self._shards.pop(partition, None)
        err = NotCoordinatorError(f"{self.topic}-{partition} could not be loaded: {cause}")
        self._drop_shard(shard, err)
        self._guard(self.core.unload_partition, partition)
        for token, waiter in list(self._waiting.items()):
            if waiter.partition == partition:
                self._fail_token(token, err)
        failed = _FailedLoad(partition, cause, attempts)
        self._failed[partition] = failed

        def retry() -> None:
            if self._failed.get(partition) is failed:
                del self._failed[partition]
                self._load(partition, False, attempts)

        failed.timer = self.clock.call_later(delay, retry)

    # ------------------------------------------------------------------ the internal topic
    def ensure_topic(self) -> Any:
        """Create the internal topic if it does not exist yet; return its metadata (None if it is
        not visible yet). Raises KafkaError if it cannot be created."""
        t = self.topics.get(self.topic)
        if t is not None:
            return t
        partitions, replication_factor, configs = self._topic_spec()
        replication_factor, configs = self._cap_replication(replication_factor, configs)
        try:
            self._create_topic(self.topic, partitions, replication_factor, configs)
        except TopicAlreadyExistsError:
            pass
        return self.topics.get(self.topic)

    def _cap_replication(
        self, replication_factor: int, configs: dict[str, str | None]
    ) -> tuple[int, dict[str, str | None]]:
        """Fewer live brokers than the configured replication factor: create the topic with one
        replica per live broker (and ``min.insync.replicas`` at most that), with a warning."""
        live = self.live_brokers() if self.live_brokers is not None else replication_factor
        if live <= 0 or replication_factor <= live:
            return replication_factor, configs
        log.warning(
            "creating %s with replication factor %d: only %d live broker(s), fewer than the configured %d",
            self.topic,
            live,
            live,
            replication_factor,
        )
        min_isr = configs.get("min.insync.replicas")
        if min_isr is not None and int(min_isr) > live:
            configs = {**configs, "min.insync.replicas": str(live)}
        return live, configs

    def partition_for(self, key: str) -> int:
        return self.core.partition_for(key)

    def coordinator_error(self, key: str) -> KafkaError | None:
        """None if this broker serves ``key`` now (creating the internal topic on first use)."""
        err, created = self._ensure_topic()
        if err is not None:
            return err
        return self._shard_error(key, self.core.partition_for(key), created)

    def lookup_error(self, key: str) -> KafkaError | None:
        """:meth:`coordinator_error` for FindCoordinator: a partition whose load failed is still
        led here, so FindCoordinator names this broker (as Kafka's does) and the requests
        themselves get NOT_COORDINATOR."""
        err, created = self._ensure_topic()
        if err is not None:
            return err
        partition = self.core.partition_for(key)
        if partition in self._failed:
            return None
        return self._shard_error(key, partition, created)

    def topic_error(self) -> KafkaError | None:
        """None once the internal topic exists, whichever brokers lead its partitions (created on
        first use). AddOffsetsToTxn needs only this: the transaction coordinator adds the group's
        partition to the transaction wherever the group's coordinator is."""
        return self._ensure_topic()[0]

    def _ensure_topic(self) -> tuple[KafkaError | None, bool]:
        """(error, whether this call created the topic)."""
        if not self.started:
            return CoordinatorNotAvailableError(f"the {self.topic} coordinator is not running"), False
        if self.topics.get(self.topic) is not None:
            return None, False
        try:
            self.ensure_topic()
        except LeaderNotAvailableError as e:  # a cluster creates it asynchronously
            log.info("creating %s: %s", self.topic, e)
            return CoordinatorNotAvailableError(f"{self.topic} is being created"), False
        except KafkaError as e:
            log.error("cannot create %s: %s", self.topic, e)
            return CoordinatorNotAvailableError(f"{self.topic} cannot be created: {e}"), False
        return None, True

    def listing_error(self) -> KafkaError | None:
        """None if the served partitions can be listed (ListGroups, ListTransactions) now."""
        if not self.started:
            return CoordinatorNotAvailableError(f"the {self.topic} coordinator is not running")
        if any(s.loading for s in self._shards.values()):
            return CoordinatorLoadInProgressError(f"partitions of {self.topic} are loading")
        return None

    def _shard_error(self, key: str, partition: int, created: bool = False) -> KafkaError | None:
        failed = self._failed.get(partition)
        if failed is not None:
            return NotCoordinatorError(
                f"{self.topic}-{partition}, which holds {self.what} {key!r}, could not be loaded: {failed.cause}"
            )
        shard = self._shards.get(partition)
        if shard is None:
            if created or not self.started:
                return CoordinatorNotAvailableError(f"{self.topic}-{partition} is not available yet")
            return NotCoordinatorError(f"this broker does not coordinate {self.what} {key!r}")
        if shard.loading:
            return CoordinatorLoadInProgressError(f"{self.topic}-{partition} is loading")
        return None

    # ------------------------------------------------------------------ requests
    def request(self, key: str, op: Callable[[int, int], FX], done: ReplyCallback) -> None:
        """Run ``op(token, now_ms)`` on the state machine in ``key``'s shard, in turn; call
        ``done(result, None)`` with the token's reply once it is released, or
        ``done(None, error)`` if the shard cannot serve it (not loaded, unloaded meanwhile).

        An empty key is invalid for every coordinator and names no shard: the state machine
        answers it at once (with its INVALID_* error), whether or not a shard is loaded.
        """
        token = next(self._tokens)
        if not key:
            self._answer_invalid(token, op, done)
            return
        partition = self.core.partition_for(key)
        err = self._shard_error(key, partition)
        if err is not None:
            done(None, err)
            return
        self._waiting[token] = _Waiter(partition, done)

        def fail(e: KafkaError) -> None:
            self._fail_token(token, e)

        self._enqueue(partition, _Event(lambda now: op(token, now), fail))

    def _answer_invalid(self, token: int, op: Callable[[int, int], FX], done: ReplyCallback) -> None:
        try:
            fx = op(token, self.clock.now_ms())
        except Exception as e:
            log.exception("the %s coordinator failed", self.topic)
            done(None, UnknownServerError(f"{type(e).__name__}: {e}"))
            return
        replies = [result for t, result in fx.replies if t == token]
        if fx.writes or not replies:
            log.error("the %s coordinator did not refuse a request with an empty %s", self.topic, self.what)
            done(None, UnknownServerError(f"no answer for an empty {self.what}"))
            return
        done(replies[0], None)

    def submit(
        self,
        key: str,
        op: Callable[[int, int], FX],
        on_error: Callable[[KafkaError], Any] | None = None,
    ) -> asyncio.Future[Any]:
        """:meth:`request` as a future: its reply, or ``on_error(error)`` (without ``on_error``,
        the error is raised). A cancelled future (the client went away) is left alone. A reply
        that comes later than the call (a rebalance, a write waiting for the high watermark) is
        charged to the request's purgatory time (``request_wait``, when measured)."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        timer = request_wait.get()
        started = time.perf_counter() if timer is not None else 0.0
        pending = False  # True once request() has returned without an answer

        def done(result: Any, err: KafkaError | None) -> None:
            if fut.done():
                return
            if timer is not None and pending:
                timer.seconds += time.perf_counter() - started
            if err is None:
                fut.set_result(result)
            elif on_error is not None:
                fut.set_result(on_error(err))
            else:
                fut.set_exception(err)

        self.request(key, op, done)
        pending = True
        return fut

    def _enqueue(self, partition: int, event: _Event) -> None:
        shard = self._shards.get(partition)
        if shard is None:
            self._guard(event.fail, NotCoordinatorError(f"{self.topic}-{partition} is not served here"))
            return
        shard.queue.append(event)
        self._ready[partition] = None
        self._pump()

    def _schedule(self, partition: int, run: Callable[[int], FX | None]) -> None:
        """Run ``run(now_ms)`` (an input nobody waits for) in ``partition``'s turn, if it is served."""
        self._enqueue(partition, _Event(run, _ignore))

    def _broadcast(self, op: Callable[[int, int], FX]) -> None:
        """Run ``op(partition, now_ms)`` in every served partition, each in its turn."""

        def run_in(partition: int) -> Callable[[int], FX]:
            return lambda now: op(partition, now)

        for partition in list(self._shards):
            self._schedule(partition, run_in(partition))

    def _write_raw(
        self,
        partition: int,
        append: Callable[[], int],
        complete: Callable[[KafkaError | None, int], Any],
        abort: Callable[[KafkaError], None],
    ) -> None:
        """Queue an input of ``partition`` that appends through ``append`` (returning the last
        offset) and calls ``complete`` once that is committed or failed (``abort`` instead if the
        shard is unloaded first)."""

        def run(now: int) -> None:
            shard = self._shards[partition]
            self._start_write(shard, append, complete, abort, None)

        self._enqueue(partition, _Event(run, abort))

    def _fail_token(self, token: int, err: KafkaError) -> None:
        waiter = self._waiting.pop(token, None)
        if waiter is not None:
            self._guard(waiter.done, None, err)

    def _release(self, replies: list[tuple[Any, Any]]) -> None:
        for token, result in replies:
            waiter = self._waiting.pop(token, None)
            if waiter is not None:
                self._guard(waiter.done, result, None)

    # ------------------------------------------------------------------ the loop
    def _pump(self) -> None:
        """Do all the work there is, shard by shard, one step at a time (never re-entered)."""
        if self._pumping:
            return
        self._pumping = True
        try:
            ready = self._ready
            while ready:
                partition = next(iter(ready))
                del ready[partition]
                shard = self._shards.get(partition)
                if shard is not None and self._step(shard):
                    ready[partition] = None
        finally:
            self._pumping = False

    def _step(self, shard: _Shard) -> bool:
        """Complete the shard's committed writes, else run its next input. True if it did work."""
        if shard.loading:
            return False
        inflight = shard.inflight
        if inflight:
            head = inflight[0]
            if head.error is None and head.last_offset >= shard.high_watermark:
                return False  # waiting for the high watermark
            inflight.popleft()
            fx = self._guard(head.complete, head.error, self.clock.now_ms())
            if self._shards.get(shard.partition) is not shard:
                return False  # unloaded meanwhile
            if fx is not None:
                self._apply(shard, fx)
            if head.held is not None:
                head.held.remaining -= 1
                if head.held.remaining == 0:
                    self._release(head.held.replies)
            self._rearm(shard)
            return True
        if shard.queue:
            ev = shard.queue.popleft()
            try:
                fx = ev.run(self.clock.now_ms())
            except KafkaError as e:  # a refusal from a collaborator (e.g. no producer ids at hand)
                self._guard(ev.fail, e)
                fx = None
            except Exception as e:
                log.exception("%s-%d: the coordinator failed", self.topic, shard.partition)
                self._guard(ev.fail, UnknownServerError(f"{type(e).__name__}: {e}"))
                fx = None
            if self._shards.get(shard.partition) is not shard:
                return False
            if fx is not None:
                held = self._apply(shard, fx)
                if held.remaining > 0 and self.write_timeout_ms is not None:
                    self._expire_later(held, ev.fail, self.write_timeout_ms)
            self._rearm(shard)
            return True
        return False

    def _apply(self, shard: _Shard, fx: FX) -> _Replies:
        """Start the writes of ``fx``; hold its replies until they complete."""
        held = _Replies(len(fx.writes), list(fx.replies))
        for w in fx.writes:

            def append(w: W = w) -> int:
                if w.partition != shard.partition:
                    raise UnknownServerError(
                        f"a write for {self.topic}-{w.partition} came from partition {shard.partition}"
                    )
                return self.writer.append(self.topic, w.partition, self._encode(w, self.clock.now_ms()))

            def complete(err: KafkaError | None, now: int, w: W = w) -> Any:
                return self.core.complete_write(w, err, now)

            self._start_write(shard, append, complete, None, held)
        self._guard(self._on_effects, shard.partition, fx)
        if held.remaining == 0 and held.replies:
            self._release(held.replies)
        return held

    def _expire_later(self, held: _Replies, fail: Callable[[KafkaError], None], timeout_ms: int) -> None:
        """Answer the request that made ``held``'s writes (``fail``), and the replies held for
        them, REQUEST_TIMED_OUT unless the writes commit within ``timeout_ms`` (a follower that
        stopped fetching holds the high watermark until the ISR shrinks, up to
        replica.lag.time.max.ms; the client retries meanwhile). The writes stay: they apply if
        they commit later, and a reply that comes then finds nobody waiting."""
        tokens = [token for token, _ in held.replies]

        def expire() -> None:
            if held.remaining > 0:
                error = RequestTimedOutError(
                    f"the {self.topic} write was not replicated to the in-sync replicas within {timeout_ms} ms"
                )
                self._guard(fail, error)
                for token in tokens:
                    self._fail_token(token, error)

        self.clock.call_later(timeout_ms, expire)

    def _start_write(
        self,
        shard: _Shard,
        append: Callable[[], int],
        complete: Callable[[KafkaError | None, int], Any],
        abort: Callable[[KafkaError], None] | None,
        held: _Replies | None,
    ) -> None:
        error: KafkaError | None = None
        last_offset = -1
        try:
            last_offset = append()
        except KafkaError as e:
            log.warning("cannot write to %s-%d: %s", self.topic, shard.partition, e)
            error = e
        except Exception as e:
            log.exception("cannot write to %s-%d", self.topic, shard.partition)
            error = UnknownServerError(f"{type(e).__name__}: {e}")
        shard.inflight.append(_InFlight(last_offset, error, complete, abort, held))
        if error is None:
            self._refresh_high_watermark(shard)
        self._ready[shard.partition] = None

    def _refresh_high_watermark(self, shard: _Shard) -> None:
        try:
            hw = self.writer.high_watermark(self.topic, shard.partition)
        except KafkaError:
            return
        shard.high_watermark = max(shard.high_watermark, hw)

    def _on_high_watermark(self, topic: str, partition: int, high_watermark: int) -> None:
        """The writer's listener (called synchronously, possibly inside our own append)."""
        if topic != self.topic:
            return
        shard = self._shards.get(partition)
        if shard is None:
            return
        if shard.awaiting_high_watermark and shard.timer is None:
            shard.awaiting_high_watermark = False
            shard.timer = self.clock.call_later(0, lambda: self._load_chunks(shard, False))
            return
        if high_watermark <= shard.high_watermark:
            return
        shard.high_watermark = high_watermark
        if shard.inflight:
            self._ready[partition] = None
            self._pump()

    # ------------------------------------------------------------------ timers
    def _rearm(self, shard: _Shard) -> None:
        if shard.loading or shard.poll_queued:
            return
        deadline = self.core.next_deadline(shard.partition)
        if deadline == shard.armed and (shard.timer is not None or deadline is None):
            return
        if shard.timer is not None:
            shard.timer.cancel()
            shard.timer = None
        shard.armed = deadline
        if deadline is not None:
            delay = max(deadline - self.clock.now_ms(), 0)
            shard.timer = self.clock.call_later(delay, lambda: self._on_timer(shard))

    def _on_timer(self, shard: _Shard) -> None:
        if self._shards.get(shard.partition) is not shard:
            return
        shard.timer = None
        shard.armed = None
        shard.poll_queued = True
        partition = shard.partition

        def poll(now: int) -> Any:
            shard.poll_queued = False
            return self.core.poll(now, partition)

        self._schedule(partition, poll)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _guard(fn: Callable[..., Any], *args: Any) -> Any:
        """Call a continuation or callback; a failure is logged and the loop goes on."""
        try:
            return fn(*args)
        except Exception:
            log.exception("coordinator callback failed")
            return None


__all__ = [
    "CoordinatorEffects",
    "CoordinatorRuntime",
    "CoordinatorStateMachine",
    "CoordinatorWrite",
    "ReplyCallback",
    "TopicCreator",
]
