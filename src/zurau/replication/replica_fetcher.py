"""A follower's replica fetcher (Kafka's ``ReplicaFetcherThread``): one asyncio task that copies
the partitions this broker follows from one leader broker.

Each round sends one Fetch for every partition that is ready, as a replica: the replica id and
broker epoch (``ReplicaState``, v15+; the ``replica_id`` field before), and per partition the
current leader epoch (so a leader of another epoch fences the request), the fetch offset (the
local log end offset) and the epoch of the last local batch (v12+, so the leader can say where the
logs diverge). The leader holds the request up to ``replica.fetch.wait.max.ms`` until it has
``replica.fetch.min.bytes``; each partition gets up to ``replica.fetch.max.bytes`` and the whole
answer up to ``replica.fetch.response.max.bytes``.

Per partition, the answer is acted on as Kafka's follower does:

* data: appended with the leader's offsets and epochs (``append_as_follower``); then the local
  high watermark follows the leader's (capped at the local log end) and the log start offset
  follows the leader's (capped at the local high watermark);
* a diverging epoch (KIP-320): the local log is truncated where it stops agreeing with the leader
  (:func:`truncation_offset`), and the next fetch checks again from there;
* OFFSET_OUT_OF_RANGE: if the leader's log now starts after the local log end (retention,
  DeleteRecords), the local log restarts empty at the leader's log start offset; otherwise the
  local log is ahead of the leader's and the partition goes through an OffsetForLeaderEpoch round
  to find where to truncate;
* OFFSET_MOVED_TO_TIERED_STORAGE (a tiered leader: the fetch offset is below its *local* log
  start, e.g. a new replica after a reassignment fetching from 0; Kafka's
  ``ReplicaFetcherTierStateMachine``): the fetcher asks the leader, as a replica, for its
  EARLIEST_LOCAL_TIMESTAMP (-4) offset and that offset's epoch (ListOffsets v8+), then awaits the
  injected ``tier_bootstrap`` (:class:`TierBootstrap`; it may ask the leader OffsetForLeaderEpoch
  through ``earlier_epoch_end``), which builds the state of the remote segment holding
  ``local_start - 1`` (``zurau.replication.tiered.remote_log_aux_state``); the log is then
  restarted at its ``next_offset`` with the leader's log start offset below it, its leader epochs
  and its producer snapshot (``install_follower_aux_state``, :class:`TieredFollowerLogs`), and
  fetching resumes at ``next_offset``. Until then the partition is not fetched; a failure
  (ListOffsets error, a RemoteStorageError, remote metadata not loaded yet, no answer within
  ``replica.socket.timeout.ms``) changes nothing locally, backs the partition off and tries
  again. As Kafka's fetcher thread, this fetcher waits for the bootstraps of a round (they run
  concurrently) before its next Fetch. Without ``tier_bootstrap`` (no remote
  storage on this broker) it is handled as OFFSET_OUT_OF_RANGE: a restart at the leader's log
  start if that is above the local log end, else a back-off;
* FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (this broker's or the leader's metadata is behind),
  NOT_LEADER_OR_FOLLOWER and other errors: the partition waits ``replica.fetch.backoff.ms``; the
  metadata publisher re-adds it with the new leader and epoch when the image changes.

A partition whose local log has batches but no leader-epoch information (or a leader too old for
Fetch v12) first goes through the OffsetForLeaderEpoch round (the pre-KIP-320 way). A failed
connection backs every partition off and is opened again on the next round.

Fetches run in a fetch session (KIP-227, Fetch v7+): after the first, each names only the
partitions whose fetch offset, epochs or limits changed, and the leader answers only those with
news; a failed request or connection starts over with a full fetch.

Replication throttle (:mod:`zurau.replication.replication_quota`, Kafka's
``shouldFollowerThrottle``): a partition in this broker's ``follower.replication.throttled.replicas``
is left out of the fetch while it lags the leader (its log end is below the high watermark the
leader last gave, or no answer came yet) and the follower quota is exceeded; when every ready
partition is held so, the fetcher sleeps until the quota allows more (at most
``replica.fetch.backoff.ms``). The bytes appended to throttled partitions are recorded in the
quota, lagging or not. A caught-up partition is never held, so the throttle cannot take it out of
the ISR.

Invariants: only this task writes to the logs of its partitions (one loop, so no other write
interleaves with the handling of an answer); a partition removed or re-added (new epoch) while a
request was in flight ignores that request's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import ssl
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar, runtime_checkable

from zurau.client.errors import AuthenticationError
from zurau.client.fetch_session_handler import FetchSessionHandler
from zurau.client.typed_api import FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, Call
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, OffsetMovedToTieredStorageError, OffsetOutOfRangeError, for_code
from zurau.protocol.messages import (
    FetchRequest,
    FetchRequestTopicsPartitions,
    FetchResponseResponsesPartitions,
    OffsetForLeaderEpochRequestTopicsPartitions,
)
from zurau.replication.replication_quota import ReplicationQuota
from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.types import TopicIdPartition

log = logging.getLogger("zurau.replication")
R = TypeVar("R")
#: Longest wait between fetch attempts while the leader refuses this broker's login.
AUTH_BACKOFF_MAX_MS = 5_000
#: ListOffsets' special timestamp for a tiered log's local log start (KIP-405), and the first
#: ListOffsets version that knows it.
EARLIEST_LOCAL_TIMESTAMP = -4
LIST_OFFSETS_EARLIEST_LOCAL_VERSION = 8

TopicPartitionKey = tuple[str, int]


class LeaderConnection(Protocol):
    """What the fetcher needs of a connection to the leader (``zurau.client.connection``)."""

    def version(self, api_key: int, max_version: int | None = None, min_version: int = 0) -> int: ...

    async def call(
        self,
        call: Call[R],
        *,
        version: int | None = None,
        max_version: int | None = None,
        timeout: float | None = None,
    ) -> R: ...

    async def close(self) -> None: ...


class FollowerLogs(Protocol):
    """The replica manager's follower side, as the fetcher uses it."""

    def follower_log_state(self, topic: str, partition: int) -> tuple[int, int, int]: ...

    def follower_end_offset_for_epoch(self, topic: str, partition: int, epoch: int) -> tuple[int, int]: ...

    def truncate_follower(self, topic: str, partition: int, offset: int) -> int: ...

    def restart_follower_at(self, topic: str, partition: int, offset: int) -> None: ...

    def append_as_follower(self, topic: str, partition: int, records: bytes | bytearray | memoryview) -> Any: ...

    def update_follower_high_watermark(self, topic: str, partition: int, leader_high_watermark: int) -> int: ...

    def update_follower_log_start(self, topic: str, partition: int, leader_log_start_offset: int) -> None: ...


@runtime_checkable
class TieredFollowerLogs(FollowerLogs, Protocol):
    """The follower side of a broker with remote storage: also restarts a followed log from the
    remote tier's state (the replica manager's ``install_follower_aux_state``, over
    ``PartitionLog.install_remote_aux_state``)."""

    def install_follower_aux_state(
        self,
        topic: str,
        partition: int,
        next_offset: int,
        log_start_offset: int,
        epochs: Sequence[EpochEntry],
        producer_snapshot: bytes,
    ) -> None: ...


class RemoteAuxState(Protocol):
    """What :class:`TierBootstrap` gives (``zurau.replication.tiered.RemoteLogAuxState``)."""

    @property
    def next_offset(self) -> int: ...

    @property
    def leader_epochs(self) -> Sequence[EpochEntry]: ...

    @property
    def producer_snapshot(self) -> bytes: ...


#: The leader's OffsetForLeaderEpoch answer ``(epoch, end offset)`` for an epoch of a partition.
EarlierEpochEnd = Callable[[int], Awaitable[tuple[int, int]]]


class TierBootstrap(Protocol):
    """Builds a follower's state from remote storage (Kafka's ``buildRemoteLogAuxState``):
    ``(partition, the leader's local log start offset, the leader epoch of that offset, the
    leader's log start offset, earlier_epoch_end=...)``. Raises (any exception: a
    RemoteStorageError, the remote log metadata not loaded yet) when it cannot; the fetcher then
    backs the partition off and tries again."""

    def __call__(
        self,
        tip: TopicIdPartition,
        leader_local_log_start_offset: int,
        leader_epoch_of_local_start: int,
        leader_log_start_offset: int,
        /,
        *,
        earlier_epoch_end: EarlierEpochEnd,
    ) -> Awaitable[RemoteAuxState]: ...


def check_tier_bootstrap(logs: FollowerLogs, tier_bootstrap: TierBootstrap | None) -> None:
    """TypeError if ``tier_bootstrap`` is given for follower logs that cannot install its state."""
    if tier_bootstrap is not None and not isinstance(logs, TieredFollowerLogs):
        raise TypeError(f"{type(logs).__name__} has no install_follower_aux_state: cannot use tier_bootstrap")


Connect = Callable[[int], Awaitable[LeaderConnection]]


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """Kafka's ``replica.fetch.*`` settings."""

    max_bytes: int = 1_048_576  # replica.fetch.max.bytes (per partition)
    response_max_bytes: int = 10_485_760  # replica.fetch.response.max.bytes
    wait_max_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30_000  # replica.socket.timeout.ms


@dataclass(slots=True)
class PartitionFetchState:
    """One followed partition in a fetcher: the leader epoch it follows, whether it needs an
    OffsetForLeaderEpoch round before fetching, and until when it backs off (loop time)."""

    topic: str
    partition: int
    topic_id: uuid.UUID
    leader_epoch: int
    truncating: bool = False
    delayed_until: float = 0.0
    generation: int = field(default=0)  # bumped whenever the partition is (re-)added
    #: The local log end had reached the leader's high watermark at the last answer (Kafka's
    #: ``isReplicaInSync``: lag 0); unknown (False) until an answer comes.
    in_sync: bool = False
    #: The leader answered OFFSET_MOVED_TO_TIERED_STORAGE: the partition is bootstrapped from the
    #: remote tier before it is fetched again. The leader's log start offset of that answer (-1:
    #: not given); None: no bootstrap pending.
    tier_leader_log_start: int | None = None

    @property
    def key(self) -> TopicPartitionKey:
        return self.topic, self.partition


def truncation_offset(
    logs: FollowerLogs, topic: str, partition: int, leader_epoch: int, leader_end_offset: int
) -> tuple[int, bool]:
    """Where a follower truncates, given the leader's ``(epoch, end offset)`` for the follower's
    last epoch (a diverging epoch or an OffsetForLeaderEpoch answer), and whether that settles it
    (Kafka's ``getOffsetTruncationState``):

    * the leader knows no such epoch (end offset -1): the local high watermark;
    * no epoch (-1) but an end offset: the smaller of it and the local log end;
    * the follower knows no epoch <= the leader's: the smaller of the leader's end and the local end;
    * the follower's largest epoch <= the leader's is an older one: the end of that epoch locally,
      and not settled (the next round asks about the follower's new last epoch);
    * the same epoch on both sides: the smallest of both ends and the local log end.
    """
    leo, _epoch, hw = logs.follower_log_state(topic, partition)
    if leader_end_offset < 0:
        return min(hw, leo), True
    if leader_epoch < 0:
        return min(leader_end_offset, leo), True
    local_epoch, local_end = logs.follower_end_offset_for_epoch(topic, partition, leader_epoch)
    if local_end < 0:
        return min(leader_end_offset, leo), True
    if local_epoch != leader_epoch:
        return min(local_end, leo), False
    return min(leader_end_offset, local_end, leo), True


class ReplicaFetcher:
    """See the module docstring. Started with :meth:`start`, stopped with :meth:`close`."""

    def __init__(
        self,
        *,
        node_id: int,
        source_id: int,
        fetcher_id: int,
        logs: FollowerLogs,
        connect: Connect,
        broker_epoch: Callable[[], int],
        config: FetcherConfig,
        quota: ReplicationQuota | None = None,
        tier_bootstrap: TierBootstrap | None = None,
    ) -> None:
        check_tier_bootstrap(logs, tier_bootstrap)
        self.node_id = node_id
        self.quota = quota  # the follower-side replication throttle (None: never throttled)
        # Remote storage on this broker: how a partition starts past the leader's local start.
        self._tier_bootstrap = tier_bootstrap
        self.source_id = source_id
        self.fetcher_id = fetcher_id
        self.logs = logs
        self._connect = connect
        self._broker_epoch = broker_epoch
        self.config = config
        self.partitions: dict[TopicPartitionKey, PartitionFetchState] = {}
        self._waiter: asyncio.Future[None] | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._conn: LeaderConnection | None = None
        self._generation = 0
        self.rounds = 0  # fetch requests answered (for tests and logs)
        self._session = FetchSessionHandler()  # the fetch session with the leader (KIP-227)
        self._auth_failures = 0  # consecutive TLS/SASL refusals by the leader (backoff grows)
        self._topic_ids: dict[str, uuid.UUID] = {}  # of topics fetched, for forgotten partitions

    def __repr__(self) -> str:
        return f"ReplicaFetcher(node {self.node_id} <- {self.source_id}, #{self.fetcher_id}, {len(self.partitions)} partitions)"

    # ------------------------------------------------------------------ membership
    def add_partition(self, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int) -> None:
        """Follow ``topic-partition`` at ``leader_epoch`` (replacing an earlier state of it)."""
        leo, epoch, _hw = self.logs.follower_log_state(topic, partition)
        self._generation += 1
        self.partitions[(topic, partition)] = PartitionFetchState(
            topic,
            partition,
            topic_id,
            leader_epoch,
            truncating=leo > 0 and epoch < 0,
            generation=self._generation,
        )
        self._wake()

    def adopt(self, state: PartitionFetchState) -> None:
        """Take over a partition another fetcher of this broker followed (a resize of the
        fetcher pool), with its fetch state: leader epoch, a pending truncation, its back-off.
        The fetch offset is the local log end, so nothing is fetched twice or skipped; the old
        fetcher no longer has the partition and ignores an answer it still gets for it."""
        self._generation += 1
        self.partitions[state.key] = dataclasses.replace(state, generation=self._generation)
        self._wake()

    def remove_partition(self, topic: str, partition: int) -> bool:
        """Stop following ``topic-partition``; True if this fetcher had it."""
        return self.release(topic, partition) is not None

    def release(self, topic: str, partition: int) -> PartitionFetchState | None:
        """Stop following ``topic-partition`` and hand its fetch state over (None: not here)."""
        return self.partitions.pop((topic, partition), None)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"zurau-replica-fetcher-{self.node_id}-{self.source_id}-{self.fetcher_id}"
        )

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _sleep(self, timeout: float | None) -> None:
        """Until :meth:`_wake` or ``timeout`` seconds. (Not ``asyncio.wait_for``: before Python
        3.12 it can swallow a cancellation that coincides with the wake-up, and the task would
        then never stop.)"""
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout, self._wake) if timeout is not None else None
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self._waiter = None

    async def close(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._drop_connection()

    async def _drop_connection(self) -> None:
        self._session.reset()
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    def _backoff(self, states: list[PartitionFetchState], delay_ms: float | None = None) -> None:
        until = asyncio.get_running_loop().time() + (self.config.backoff_ms if delay_ms is None else delay_ms) / 1000
        for s in states:
            s.delayed_until = until

    def _auth_backoff_ms(self) -> float:
        """After the leader refused this broker's TLS or SASL login: ``replica.fetch.backoff.ms``
        doubled per consecutive refusal, at most :data:`AUTH_BACKOFF_MAX_MS` (a wrong password
        or certificate is not fixed by retrying at the fetch rate)."""
        return float(min(self.config.backoff_ms * 2 ** min(self._auth_failures, 16), AUTH_BACKOFF_MAX_MS))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            now = loop.time()
            ready = [s for s in self.partitions.values() if s.delayed_until <= now]
            if not ready:
                delays = [s.delayed_until for s in self.partitions.values()]
                await self._sleep(max(min(delays) - now, 0.001) if delays else None)
                continue
            if self.quota is not None:
                held = self._throttled(ready)
                if held:
                    held_keys = {s.key for s in held}
                    ready = [s for s in ready if s.key not in held_keys]
                    if not ready:
                        delay_ms = min(max(self.quota.delay_ms(), 10), max(self.config.backoff_ms, 10))
                        await self._sleep(delay_ms / 1000)
                        continue
            try:
                await self.run_once(ready)
                self._auth_failures = 0
            except asyncio.CancelledError:
                raise
            except (AuthenticationError, ssl.SSLError) as e:
                self._auth_failures += 1
                delay = self._auth_backoff_ms()
                log.log(
                    logging.ERROR if self._auth_failures == 1 else logging.INFO,
                    "broker %d: broker %d refused this broker's login on its inter-broker listener (%s); "
                    "check the inter-broker TLS/SASL settings; retrying in %d ms",
                    self.node_id, self.source_id, e, delay,
                )
                await self._drop_connection()
                self._backoff(ready, delay)
            except Exception as e:
                log.info(
                    "broker %d: fetching from broker %d failed (%s); retrying in %d ms",
                    self.node_id,
                    self.source_id,
                    e,
                    self.config.backoff_ms,
                )
                await self._drop_connection()
                self._backoff(ready)

    def _throttled(self, ready: list[PartitionFetchState]) -> list[PartitionFetchState]:
        """The partitions of ``ready`` the follower quota holds back now (see the module
        docstring)."""
        quota = self.quota
        if quota is None:
            return []
        lagging = [
            s
            for s in ready
            if not s.in_sync
            and not s.truncating
            and s.tier_leader_log_start is None
            and quota.is_throttled(s.topic, s.partition)
        ]
        if not lagging or not quota.is_quota_exceeded():
            return []
        return lagging

    async def run_once(self, ready: list[PartitionFetchState]) -> None:
        """One round for ``ready``: the remote-tier bootstrap of those the leader answered
        OFFSET_MOVED_TO_TIERED_STORAGE, an OffsetForLeaderEpoch round for those that need one,
        then one Fetch for the rest. Connection and protocol failures raise."""
        if self._conn is None:
            self._conn = await self._connect(self.source_id)
        conn = self._conn
        if conn.version(ApiKey.FETCH) < 12:
            for s in ready:
                leo, _epoch, _hw = self.logs.follower_log_state(s.topic, s.partition)
                s.truncating = s.truncating or leo > 0  # no diverging epochs: ask explicitly
        tiering = [s for s in ready if s.tier_leader_log_start is not None]
        if tiering:
            await self._bootstrap_from_tier(conn, tiering)
        truncating = [s for s in ready if s.truncating and s.tier_leader_log_start is None]
        if truncating:
            await self._truncate_by_epochs(conn, truncating)
        fetching = [
            s
            for s in ready
            if not s.truncating and s.tier_leader_log_start is None and self.partitions.get(s.key) is s
        ]
        if fetching:
            await self._fetch(conn, fetching)

    # ------------------------------------------------------------------ OffsetForLeaderEpoch
    async def _truncate_by_epochs(self, conn: LeaderConnection, states: list[PartitionFetchState]) -> None:
        asking: dict[TopicPartitionKey, PartitionFetchState] = {}
        by_topic: dict[str, list[OffsetForLeaderEpochRequestTopicsPartitions]] = {}
        for s in states:
            _leo, epoch, hw = self.logs.follower_log_state(s.topic, s.partition)
            if epoch < 0:  # no epoch information: keep only what is known committed
                self.logs.truncate_follower(s.topic, s.partition, hw)
                s.truncating = False
                continue
            asking[s.key] = s
            by_topic.setdefault(s.topic, []).append(
                {"partition": s.partition, "current_leader_epoch": s.leader_epoch, "leader_epoch": epoch}
            )
        if not by_topic:
            return
        resp = await conn.call(OFFSET_FOR_LEADER_EPOCH({
            "replica_id": self.node_id,
            "topics": [{"topic": t, "partitions": parts} for t, parts in by_topic.items()],
        }))
        for t in resp["topics"]:
            for pd in t["partitions"]:
                asked = asking.get((t["topic"], pd["partition"]))
                if asked is None or self.partitions.get(asked.key) is not asked:
                    continue
                if pd["error_code"]:
                    log.info(
                        "%s-%d: OffsetForLeaderEpoch from broker %d failed with error %d",
                        asked.topic, asked.partition, self.source_id, pd["error_code"],
                    )
                    self._backoff([asked])
                    continue
                offset, done = truncation_offset(
                    self.logs, asked.topic, asked.partition, pd["leader_epoch"], pd["end_offset"]
                )
                self.logs.truncate_follower(asked.topic, asked.partition, offset)
                asked.truncating = not done

    # ------------------------------------------------------------------ remote tier bootstrap
    async def _bootstrap_from_tier(self, conn: LeaderConnection, states: list[PartitionFetchState]) -> None:
        """The OFFSET_MOVED_TO_TIERED_STORAGE path for ``states`` (see the module docstring):
        one ListOffsets for the leader's local log starts, then each partition's bootstrap
        (concurrently: they wait on remote storage)."""
        bootstrap = self._tier_bootstrap
        if bootstrap is None:  # not reached: such a partition is never marked
            for s in states:
                s.tier_leader_log_start = None
            return
        version = conn.version(ApiKey.LIST_OFFSETS)
        if version < LIST_OFFSETS_EARLIEST_LOCAL_VERSION:
            log.warning(
                "broker %d: broker %d answers ListOffsets up to v%d, not the earliest local offset (v%d+); "
                "cannot follow its tiered partitions",
                self.node_id,
                self.source_id,
                version,
                LIST_OFFSETS_EARLIEST_LOCAL_VERSION,
            )
            self._backoff(states)
            return
        asking: dict[TopicPartitionKey, PartitionFetchState] = {s.key: s for s in states}
        by_topic: dict[str, list[Any]] = {}
        for s in states:
            by_topic.setdefault(s.topic, []).append(
                {
                    "partition_index": s.partition,
                    "current_leader_epoch": s.leader_epoch,
                    "timestamp": EARLIEST_LOCAL_TIMESTAMP,
                }
            )
        resp = await conn.call(
            LIST_OFFSETS(
                {
                    "replica_id": self.node_id,
                    "isolation_level": 0,
                    "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
                    "timeout_ms": self.config.socket_timeout_ms,
                }
            ),
            version=version,
        )
        jobs: list[Awaitable[None]] = []
        for t in resp["topics"]:
            for pd in t["partitions"]:
                asked = asking.pop((t["name"], pd["partition_index"]), None)
                if asked is None or self.partitions.get(asked.key) is not asked:
                    continue
                if pd["error_code"] or pd["offset"] < 0:
                    log.info(
                        "%s-%d: ListOffsets (earliest local) from broker %d failed with error %d",
                        asked.topic,
                        asked.partition,
                        self.source_id,
                        pd["error_code"],
                    )
                    self._backoff([asked])
                    continue
                jobs.append(self._bootstrap_one(conn, bootstrap, asked, pd["offset"], pd.get("leader_epoch", -1)))
        self._backoff([a for a in asking.values() if a is not None])  # not answered
        if jobs:
            await asyncio.gather(*jobs)

    async def _bootstrap_one(
        self,
        conn: LeaderConnection,
        bootstrap: TierBootstrap,
        s: PartitionFetchState,
        local_start: int,
        epoch: int,
    ) -> None:
        """Build ``s``'s state from the remote tier and install it; on any failure nothing
        changes locally and ``s`` backs off (the bootstrap stays pending)."""
        leader_start = s.tier_leader_log_start
        if leader_start is None or leader_start < 0 or leader_start > local_start:
            leader_start = local_start
        tip = TopicIdPartition(s.topic_id, s.topic, s.partition)
        try:
            # Bounded like a request to the leader: the fetcher waits for it (as Kafka's does).
            async with asyncio.timeout(self.config.socket_timeout_ms / 1000):
                aux = await bootstrap(
                    tip,
                    local_start,
                    epoch,
                    leader_start,
                    earlier_epoch_end=partial(self._leader_epoch_end, conn, s),
                )
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.info(
                "%s-%d: cannot start from remote storage below broker %d's local log start %d yet (%s); "
                "retrying in %d ms",
                s.topic,
                s.partition,
                self.source_id,
                local_start,
                e,
                self.config.backoff_ms,
            )
            self._backoff([s])
            return
        if self.partitions.get(s.key) is not s:
            return  # removed, or re-added at another epoch, while remote storage answered
        if aux.next_offset < local_start:
            log.warning(
                "%s-%d: the remote state ends at %d, below broker %d's local log start %d; retrying in %d ms",
                s.topic,
                s.partition,
                aux.next_offset,
                self.source_id,
                local_start,
                self.config.backoff_ms,
            )
            self._backoff([s])
            return
        logs = self.logs
        assert isinstance(logs, TieredFollowerLogs)  # check_tier_bootstrap
        try:
            logs.install_follower_aux_state(
                s.topic, s.partition, aux.next_offset, leader_start, aux.leader_epochs, aux.producer_snapshot
            )
        except (KafkaError, ValueError, OSError) as e:
            log.warning(
                "%s-%d: cannot install the remote tier's state at %d (%s); retrying in %d ms",
                s.topic,
                s.partition,
                aux.next_offset,
                e,
                self.config.backoff_ms,
            )
            self._backoff([s])
            return
        log.info(
            "%s-%d: started at %d from remote storage (broker %d's log start %d, local log start %d)",
            s.topic,
            s.partition,
            aux.next_offset,
            self.source_id,
            leader_start,
            local_start,
        )
        s.tier_leader_log_start = None
        s.truncating = False
        s.in_sync = False

    async def _leader_epoch_end(
        self, conn: LeaderConnection, s: PartitionFetchState, epoch: int
    ) -> tuple[int, int]:
        """The leader's OffsetForLeaderEpoch answer ``(epoch, end offset)`` for ``epoch`` of
        ``s`` (``earlier_epoch_end`` of :class:`TierBootstrap`); its error raised."""
        resp = await conn.call(
            OFFSET_FOR_LEADER_EPOCH(
                {
                    "replica_id": self.node_id,
                    "topics": [
                        {
                            "topic": s.topic,
                            "partitions": [
                                {
                                    "partition": s.partition,
                                    "current_leader_epoch": s.leader_epoch,
                                    "leader_epoch": epoch,
                                }
                            ],
                        }
                    ],
                }
            )
        )
        for t in resp["topics"]:
            for pd in t["partitions"]:
                if t["topic"] == s.topic and pd["partition"] == s.partition:
                    if pd["error_code"]:
                        raise for_code(pd["error_code"])(f"OffsetForLeaderEpoch of {s.topic}-{s.partition}")
                    return pd["leader_epoch"], pd["end_offset"]
        raise KafkaError(
            f"broker {self.source_id} did not answer OffsetForLeaderEpoch for {s.topic}-{s.partition}"
        )

    # ------------------------------------------------------------------ Fetch
    def fetch_request(self, states: list[PartitionFetchState], version: int) -> FetchRequest:
        """The Fetch body for ``states`` at ``version`` (topics by id from v13); from v7 within
        the fetch session (only the partitions whose fetch parameters changed, and the ones no
        longer fetched as forgotten)."""
        cfg = self.config
        wanted: dict[TopicPartitionKey, FetchRequestTopicsPartitions] = {}
        topic_ids: dict[str, uuid.UUID] = {}
        for s in states:
            leo, epoch, _hw = self.logs.follower_log_state(s.topic, s.partition)
            topic_ids[s.topic] = s.topic_id
            wanted[s.key] = {
                "partition": s.partition,
                "current_leader_epoch": s.leader_epoch,
                "fetch_offset": leo,
                "last_fetched_epoch": epoch,
                "log_start_offset": -1,
                "partition_max_bytes": cfg.max_bytes,
            }
        if version >= 7:
            session_id, session_epoch, named, forgotten = self._session.build(wanted)
        else:
            session_id, session_epoch, named, forgotten = 0, -1, list(wanted), []
        by_topic: dict[str, list[FetchRequestTopicsPartitions]] = {}
        for key in named:
            by_topic.setdefault(key[0], []).append(wanted[key])
        gone: dict[str, list[int]] = {}
        for topic, index in forgotten:
            gone.setdefault(topic, []).append(index)
            if topic not in topic_ids:
                topic_ids[topic] = self._topic_ids.get(topic, uuid.UUID(int=0))
        self._topic_ids.update(topic_ids)
        return {
            "replica_id": self.node_id,
            "replica_state": {"replica_id": self.node_id, "replica_epoch": self._broker_epoch()},
            "max_wait_ms": cfg.wait_max_ms,
            "min_bytes": cfg.min_bytes,
            "max_bytes": cfg.response_max_bytes,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": session_epoch,
            "topics": [
                {"topic": t, "topic_id": topic_ids[t], "partitions": parts} for t, parts in by_topic.items()
            ],
            "forgotten_topics_data": [
                {"topic": t, "topic_id": topic_ids[t], "partitions": parts} for t, parts in gone.items()
            ],
            "rack_id": "",
        }

    async def _fetch(self, conn: LeaderConnection, states: list[PartitionFetchState]) -> None:
        version = conn.version(ApiKey.FETCH)
        body = self.fetch_request(states, version)
        sent = {s.key: s for s in states}
        by_id = {s.topic_id: s.topic for s in states}
        timeout = (self.config.socket_timeout_ms + self.config.wait_max_ms) / 1000
        try:
            resp = await conn.call(FETCH(body), version=version, timeout=timeout)
        except BaseException:
            self._session.reset()  # the broker may or may not have moved the session on
            raise
        self.rounds += 1
        if version >= 7:
            self._session.handle_response(resp.get("error_code", 0), resp.get("session_id", 0))
        if resp.get("error_code"):
            log.info("broker %d: Fetch from broker %d failed with error %d", self.node_id, self.source_id, resp["error_code"])
            self._backoff(states)
            return
        for t in resp["responses"]:
            topic_id = t.get("topic_id")
            topic = t.get("topic") or (by_id.get(topic_id) if topic_id is not None else None)
            if topic is None:
                continue
            for pd in t["partitions"]:
                s = sent.get((topic, pd["partition_index"]))
                if s is None or self.partitions.get(s.key) is not s:
                    continue  # removed, or re-added at another epoch, while the fetch was out
                try:
                    self._handle_partition(s, pd)
                except KafkaError as e:
                    log.warning("%s-%d: cannot apply data fetched from broker %d: %s", s.topic, s.partition, self.source_id, e)
                    self._backoff([s])

    def _handle_partition(self, s: PartitionFetchState, pd: FetchResponseResponsesPartitions) -> None:
        logs = self.logs
        code = pd["error_code"]
        if code == 0:
            div = pd.get("diverging_epoch")
            if div and (div.get("epoch", -1) >= 0 or div.get("end_offset", -1) >= 0):
                offset, _done = truncation_offset(logs, s.topic, s.partition, div["epoch"], div["end_offset"])
                logs.truncate_follower(s.topic, s.partition, offset)
                return
            records = pd.get("records")
            if records is not None and len(records):
                logs.append_as_follower(s.topic, s.partition, records)
                if self.quota is not None and self.quota.is_throttled(s.topic, s.partition):
                    self.quota.record(len(records))
            logs.update_follower_high_watermark(s.topic, s.partition, pd["high_watermark"])
            leo, _epoch, _hw = logs.follower_log_state(s.topic, s.partition)
            s.in_sync = leo >= pd["high_watermark"]
            if pd.get("log_start_offset", -1) >= 0:
                logs.update_follower_log_start(s.topic, s.partition, pd["log_start_offset"])
            return
        if code == OffsetOutOfRangeError.code:
            leo, _epoch, _hw = logs.follower_log_state(s.topic, s.partition)
            leader_start = pd.get("log_start_offset", -1)
            if 0 <= leo < leader_start:
                logs.restart_follower_at(s.topic, s.partition, leader_start)
            else:
                s.truncating = True  # ahead of the leader: find the divergence explicitly
            return
        if code == OffsetMovedToTieredStorageError.code:
            leader_start = pd.get("log_start_offset", -1)
            if self._tier_bootstrap is not None:
                s.tier_leader_log_start = leader_start  # bootstrapped before the next fetch
                return
            leo, _epoch, _hw = logs.follower_log_state(s.topic, s.partition)
            if 0 <= leo < leader_start:
                logs.restart_follower_at(s.topic, s.partition, leader_start)
                return
            log.warning(
                "%s-%d: broker %d keeps offset %d in remote storage only and this broker has none; retrying in %d ms",
                s.topic,
                s.partition,
                self.source_id,
                leo,
                self.config.backoff_ms,
            )
            self._backoff([s])
            return
        log.debug("%s-%d: Fetch from broker %d: error %d", s.topic, s.partition, self.source_id, code)
        self._backoff([s])
