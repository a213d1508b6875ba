"""The remote log metadata in the internal topic ``__remote_log_metadata`` (Kafka's
``TopicBasedRemoteLogMetadataManager``), over Zurau's own client.

Every broker runs one manager. It implements
:class:`~zurau.storage.remote.remote_log_metadata_manager.RemoteLogMetadataManager`:

* **The topic.** Created on first use with the admin client, as Kafka does: ``num_partitions``
  partitions (``remote.log.metadata.topic.num.partitions``, default 50),
  ``replication_factor`` replicas (``remote.log.metadata.topic.replication.factor``, default 3,
  capped at the live brokers with a warning so that a dev cluster of one or two brokers works),
  ``retention.ms`` = ``retention_ms`` (``remote.log.metadata.topic.retention.ms``, default -1),
  ``cleanup.policy=delete`` and ``remote.storage.enable=false``. An existing topic with another
  partition count is refused (the events of a partition would move). Creation is retried every
  ``initialization_retry_interval_ms`` for up to ``initialization_retry_max_timeout_ms``
  (``remote.log.metadata.initialization.retry.*``, 100 ms and 2 min).
* **Placement.** All events of one topic-partition go to one metadata partition,
  :func:`metadata_partition` (Kafka's ``RemoteLogMetadataTopicPartitioner``: murmur2 of the 4
  big-endian bytes of Java's ``Objects.hash(topicId.lsb, topicId.msb, partition)``, sign bit
  cleared, modulo the partition count), so they stay in order and a Kafka broker reading the same
  topic finds them where it looks. Records have a null key and the event as value
  (:mod:`~zurau.storage.remote.remote_log_metadata_records`).
* **Writes** (:meth:`add_segment`, :meth:`update_segment`, :meth:`put_partition_delete`) go through
  an idempotent ``acks=all`` producer. For a partition this broker hosts, a write waits until the
  partition's cache is ready, checks the event against it (ValueError: nothing is written), and
  returns once the record is acknowledged *and* the reader applied it to the cache
  (read-your-writes; at most ``consume_wait_ms``, ``remote.log.metadata.consume.wait.ms``, 2 min).
  Writes of one partition are serialized on this broker; a write that a concurrent writer on
  another broker made invalid in between is dropped by every reader, and raises
  :class:`RemoteStorageError` here. A write for a partition this broker does not host is only
  published (no cache to check or apply it to).
* **Reads.** One consumer reads the metadata partitions of the hosted partitions
  (:meth:`on_partitions_hosted` / :meth:`on_partitions_stopped` change the assignment), from the
  beginning of the log; a metadata partition is read again from its beginning when a partition
  mapped to it starts being hosted (the partitions already hosted skip what they applied).
  :meth:`ready` is true once the consumer reached the metadata partition's end offset as it was
  after the partition was hosted. Events are applied with
  :meth:`~zurau.storage.remote.remote_log_metadata_cache.RemoteLogMetadataCache.replay`: a bad
  record or an invalid event is skipped with a warning, never stopping the reader.
  Kafka's consumer-offset checkpoint file (to resume reading after a restart instead of reading
  from offset 0) is left out: a restarted broker reads its metadata partitions from the start.
* **Queries** come from the local caches, synchronously; a partition that is not hosted has no
  segments.

The manager connects to this broker's inter-broker listener with the broker's own login (as the
share groups' dead-letter producer does): ``endpoint`` and ``security`` are called when it
starts. It starts on first use (or :meth:`start`); :meth:`close` stops the reader and closes the
clients, failing writes still waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from zurau.client.admin import LATEST, AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.consumer import Consumer
from zurau.client.partitioner import murmur2, to_positive
from zurau.client.producer import Producer
from zurau.client.security import ClientSecurity
from zurau.client.topic_admin import TopicMismatchError, ensure_topic
from zurau.client.types import ConsumerRecord, TopicPartition
from zurau.protocol.primitives import DecodeError
from zurau.storage.remote.remote_log_metadata_cache import RemoteLogMetadataCache
from zurau.storage.remote.remote_log_metadata_records import (
    REMOTE_LOG_METADATA_TOPIC,
    RemoteLogMetadataEvent,
    RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata,
    decode,
    encode,
    event_topic_id_partition,
)
from zurau.storage.remote.remote_log_segment import RemoteLogSegmentMetadata, RemotePartitionDeleteState
from zurau.storage.remote.remote_storage_manager import RemoteStorageError
from zurau.types import TopicIdPartition

log = logging.getLogger("zurau.replication.tiered.topic_based_metadata_manager")

# Broker configs (Kafka's names; in Kafka they are given under the prefix
# ``remote.log.metadata.manager.impl.prefix``, default ``rlmm.config.``).
TOPIC_NUM_PARTITIONS = "remote.log.metadata.topic.num.partitions"
TOPIC_REPLICATION_FACTOR = "remote.log.metadata.topic.replication.factor"
TOPIC_RETENTION_MS = "remote.log.metadata.topic.retention.ms"
CONSUME_WAIT_MS = "remote.log.metadata.consume.wait.ms"
INITIALIZATION_RETRY_INTERVAL_MS = "remote.log.metadata.initialization.retry.interval.ms"
INITIALIZATION_RETRY_MAX_TIMEOUT_MS = "remote.log.metadata.initialization.retry.max.timeout.ms"

DEFAULT_NUM_PARTITIONS = 50
DEFAULT_REPLICATION_FACTOR = 3
DEFAULT_RETENTION_MS = -1
DEFAULT_CONSUME_WAIT_MS = 120_000
DEFAULT_INITIALIZATION_RETRY_INTERVAL_MS = 100
DEFAULT_INITIALIZATION_RETRY_MAX_TIMEOUT_MS = 120_000

_I32 = struct.Struct(">i")
_MASK64 = (1 << 64) - 1


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _java_long_hash(v: int) -> int:
    """Java's ``Long.hashCode``: the two halves of the 64 bits xor-ed, as an int32."""
    u = v & _MASK64
    return _int32(u ^ (u >> 32))


def metadata_partition(tip: TopicIdPartition, num_partitions: int) -> int:
    """The ``__remote_log_metadata`` partition of ``tip``'s events (Kafka's
    ``RemoteLogMetadataTopicPartitioner.metadataPartition``; see the module docstring)."""
    msb, lsb = tip.topic_id.int >> 64, tip.topic_id.int & _MASK64
    h = 1  # java.util.Objects.hash(Long lsb, Long msb, Integer partition)
    for element in (_java_long_hash(lsb), _java_long_hash(msb), tip.partition):
        h = _int32(31 * h + element)
    return to_positive(murmur2(_I32.pack(h))) % num_partitions


@dataclass(eq=False)
class _Hosted:
    """A hosted partition: its cache and how far its events were read."""

    tip: TopicIdPartition
    metadata_partition: int
    cache: RemoteLogMetadataCache
    applied_upto: int = 0  # the offset after the last record of this partition applied
    seeked: bool = False  # its metadata partition was read again from the start since it was hosted
    target: int | None = None  # the metadata partition's end offset once seeked
    ready: bool = False
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class TopicBasedRemoteLogMetadataManager:
    """A :class:`RemoteLogMetadataManager` over ``__remote_log_metadata`` (see the module docstring)."""

    def __init__(
        self,
        node_id: int,
        endpoint: Callable[[], tuple[str, int] | None],
        security: Callable[[], ClientSecurity | None] = lambda: None,
        *,
        num_partitions: int = DEFAULT_NUM_PARTITIONS,
        replication_factor: int = DEFAULT_REPLICATION_FACTOR,
        retention_ms: int = DEFAULT_RETENTION_MS,
        consume_wait_ms: int = DEFAULT_CONSUME_WAIT_MS,
        initialization_retry_interval_ms: int = DEFAULT_INITIALIZATION_RETRY_INTERVAL_MS,
        initialization_retry_max_timeout_ms: int = DEFAULT_INITIALIZATION_RETRY_MAX_TIMEOUT_MS,
        topic: str = REMOTE_LOG_METADATA_TOPIC,
        poll_timeout_ms: int = 100,
    ) -> None:
        if num_partitions < 1 or replication_factor < 1:
            raise ValueError(f"{TOPIC_NUM_PARTITIONS} and {TOPIC_REPLICATION_FACTOR} must be at least 1")
        self.node_id = node_id
        self.endpoint = endpoint
        self.security = security
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.retention_ms = retention_ms
        self.consume_wait_ms = consume_wait_ms
        self.initialization_retry_interval_ms = initialization_retry_interval_ms
        self.initialization_retry_max_timeout_ms = initialization_retry_max_timeout_ms
        self.topic = topic
        self.poll_timeout_ms = poll_timeout_ms
        self._hosted: dict[TopicIdPartition, _Hosted] = {}
        self._positions: dict[int, int] = {}  # metadata partition -> offset after the last record read
        self._reseek: set[int] = set()  # metadata partitions to read again from the start
        self._assignment_changed = False
        self._waiters: dict[bytes, list[tuple[TopicIdPartition, asyncio.Future[bool]]]] = {}
        self._progress: asyncio.Condition | None = None
        self._cluster: Cluster | None = None
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._start_task: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def metadata_partition(self, tip: TopicIdPartition) -> int:
        return metadata_partition(tip, self.num_partitions)

    @property
    def started(self) -> bool:
        return self._reader is not None

    async def start(self) -> None:
        """Ensure the topic, start the clients and the reader (retried for up to
        ``initialization_retry_max_timeout_ms``; RemoteStorageError after that)."""
        if self._closed:
            raise RemoteStorageError("the remote log metadata manager is closed")
        if self._reader is not None:
            return
        if self._start_task is None or self._start_task.done():
            self._start_task = asyncio.create_task(self._start(), name=f"zurau-rlmm-start-{self.node_id}")
        await asyncio.shield(self._start_task)

    def _kick(self) -> None:
        """Start in the background when called on a running loop (sync callers)."""
        if (
            self._closed
            or self._reader is not None
            or (self._start_task is not None and not self._start_task.done())
        ):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # started by the first async call
        self._start_task = asyncio.create_task(self._start(), name=f"zurau-rlmm-start-{self.node_id}")
        self._start_task.add_done_callback(_log_start_failure)

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._progress = self._progress or asyncio.Condition()
        deadline = loop.time() + self.initialization_retry_max_timeout_ms / 1000
        while True:
            try:
                await self._connect()
                break
            except TopicMismatchError as e:
                raise RemoteStorageError(f"{self.topic} cannot be used: {e}") from e
            except Exception as e:  # the listener or the controller is not up yet
                if loop.time() >= deadline:
                    raise RemoteStorageError(f"could not set up {self.topic}: {e}") from e
                log.info("setting up %s failed (%s); retrying", self.topic, e)
                await asyncio.sleep(self.initialization_retry_interval_ms / 1000)
        if self._closed:
            await self._close_clients()
            raise RemoteStorageError("the remote log metadata manager is closed")
        self._assignment_changed = True
        self._reader = asyncio.create_task(self._read_forever(), name=f"zurau-rlmm-reader-{self.node_id}")

    async def _connect(self) -> None:
        ep = self.endpoint()
        if ep is None:
            raise ConnectionError("this broker's inter-broker listener is not known yet")
        security = self.security() or ClientSecurity()
        config = ClientConfig(
            bootstrap_servers=(ep,),
            client_id=f"zurau-rlmm-{self.node_id}",
            security_protocol=security.protocol,
            security=security,
        )
        cluster = Cluster(config)
        producer: Producer | None = None
        try:
            await cluster.bootstrap()
            configs = {
                "cleanup.policy": "delete",
                "retention.ms": str(self.retention_ms),
                "remote.storage.enable": "false",
            }
            await ensure_topic(
                AdminClient(cluster),
                NewTopic(self.topic, self.num_partitions, self.replication_factor, configs),
                fit_to_brokers=True,
                leader_timeout=self.initialization_retry_max_timeout_ms / 1000,
                required_partitions=self.num_partitions,
            )
            producer = Producer(
                cluster, acks="all", enable_idempotence=True, linger_ms=0, allow_auto_topic_creation=False
            )
            await producer.start()
            consumer = Consumer(cluster, auto_offset_reset="earliest", fetch_max_wait_ms=self.poll_timeout_ms)
            await consumer.start()
        except BaseException:
            if producer is not None:
                with contextlib.suppress(Exception):
                    await producer.close()
            with contextlib.suppress(Exception):
                await cluster.close()
            raise
        self._cluster, self._producer, self._consumer = cluster, producer, consumer

    async def close(self) -> None:
        """Stop the reader, close the clients; waiting writes fail with RemoteStorageError."""
        if self._closed:
            return
        self._closed = True
        for task in (self._start_task, self._reader):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._reader = None
        for tip_futures in self._waiters.values():
            for _, fut in tip_futures:
                if not fut.done():
                    fut.set_exception(RemoteStorageError("the remote log metadata manager is closed"))
        self._waiters.clear()
        self._hosted.clear()
        await self._close_clients()
        await self._notify()

    async def _close_clients(self) -> None:
        for client in (self._producer, self._consumer, self._cluster):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()
        self._producer = self._consumer = None
        self._cluster = None

    # ------------------------------------------------------------------ hosted partitions
    def on_partitions_hosted(self, tips: Iterable[TopicIdPartition]) -> None:
        """Start reading the events of ``tips`` (from the start of their metadata partitions)."""
        if self._closed:
            return
        for tip in tips:
            if tip not in self._hosted:
                mp = self.metadata_partition(tip)
                self._hosted[tip] = _Hosted(tip, mp, RemoteLogMetadataCache(tip))
                self._reseek.add(mp)
                self._assignment_changed = True
        self._kick()

    def on_partitions_stopped(self, tips: Iterable[TopicIdPartition]) -> None:
        """Forget ``tips``: their caches are dropped, their waiting writes fail."""
        for tip in tips:
            if self._hosted.pop(tip, None) is not None:
                self._assignment_changed = True
                self._fail_waiters(tip, RemoteStorageError(f"{tip} is no longer hosted by this broker"))

    def ready(self, tip: TopicIdPartition) -> bool:
        h = self._hosted.get(tip)
        return h is not None and h.ready

    def hosted(self) -> list[TopicIdPartition]:
        return list(self._hosted)

    def cache(self, tip: TopicIdPartition) -> RemoteLogMetadataCache | None:
        """The cache of a hosted partition (None when not hosted)."""
        h = self._hosted.get(tip)
        return h.cache if h is not None else None

    async def wait_ready(self, tips: Iterable[TopicIdPartition], timeout: float | None = None) -> None:
        """Until every one of ``tips`` (hosted) is :meth:`ready`; TimeoutError after ``timeout``
        seconds (default ``consume_wait_ms``); RemoteStorageError if one stops being hosted."""
        await self.start()
        wanted = list(tips)
        assert self._progress is not None

        def done() -> bool:
            for tip in wanted:
                if tip not in self._hosted:
                    return True
            return all(self._hosted[t].ready for t in wanted)

        async def wait() -> None:
            assert self._progress is not None
            async with self._progress:
                await self._progress.wait_for(lambda: self._closed or done())

        await asyncio.wait_for(wait(), self.consume_wait_ms / 1000 if timeout is None else timeout)
        missing = [t for t in wanted if t not in self._hosted]
        if missing or self._closed:
            raise RemoteStorageError(f"{missing or wanted} not hosted by this broker (or the manager closed)")

    # ------------------------------------------------------------------ queries
    def segment_for(self, tip: TopicIdPartition, epoch: int, offset: int) -> RemoteLogSegmentMetadata | None:
        h = self._hosted.get(tip)
        return h.cache.segment_for(epoch, offset) if h is not None else None

    def highest_offset_for_epoch(self, tip: TopicIdPartition, epoch: int) -> int | None:
        h = self._hosted.get(tip)
        return h.cache.highest_offset_for_epoch(epoch) if h is not None else None

    def list_segments(self, tip: TopicIdPartition) -> Sequence[RemoteLogSegmentMetadata]:
        h = self._hosted.get(tip)
        return h.cache.list_segments() if h is not None else ()

    def remote_size(self, tip: TopicIdPartition) -> int:
        h = self._hosted.get(tip)
        return h.cache.remote_size() if h is not None else 0

    def partition_delete_state(self, tip: TopicIdPartition) -> RemotePartitionDeleteState | None:
        h = self._hosted.get(tip)
        return h.cache.partition_delete_state if h is not None else None

    # ------------------------------------------------------------------ writes
    async def add_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        await self._publish(metadata.topic_id_partition, metadata, lambda c: c.check_add(metadata))

    async def update_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        update = RemoteLogSegmentMetadataUpdate.of(metadata)
        await self._publish(metadata.topic_id_partition, update, lambda c: c.check_update(update))

    async def put_partition_delete(
        self,
        tip: TopicIdPartition,
        state: RemotePartitionDeleteState,
        *,
        broker_id: int,
        event_timestamp_ms: int,
    ) -> None:
        event = RemotePartitionDeleteMetadata(tip, state, event_timestamp_ms, broker_id)
        await self._publish(tip, event, lambda c: c.check_partition_delete(event))

    async def _publish(
        self,
        tip: TopicIdPartition,
        event: RemoteLogMetadataEvent,
        check: Callable[[RemoteLogMetadataCache], None],
    ) -> None:
        await self.start()
        h = self._hosted.get(tip)
        if h is None:  # nothing to check or apply it to here
            await self._send(self.metadata_partition(tip), encode(event))
            return
        async with h.write_lock:
            try:
                await self.wait_ready([tip])
            except TimeoutError:
                raise RemoteStorageError(f"the remote log metadata of {tip} is not read yet") from None
            check(h.cache)  # ValueError: not written
            value = encode(event)
            fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            entry = (tip, fut)
            self._waiters.setdefault(value, []).append(entry)
            try:
                await self._send(h.metadata_partition, value)
                try:
                    accepted = await asyncio.wait_for(asyncio.shield(fut), self.consume_wait_ms / 1000)
                except TimeoutError:
                    raise RemoteStorageError(
                        f"{event} was written but not read back within {self.consume_wait_ms} ms"
                    ) from None
            finally:
                waiting = self._waiters.get(value)
                if waiting is not None:
                    with contextlib.suppress(ValueError):
                        waiting.remove(entry)
                    if not waiting:
                        del self._waiters[value]
            if not accepted:
                raise RemoteStorageError(
                    f"{event} was written but not applied: a concurrent writer changed {tip} first"
                )

    async def _send(self, partition: int, value: bytes) -> None:
        producer = self._producer
        if producer is None or self._closed:
            raise RemoteStorageError("the remote log metadata manager is closed")
        try:
            await asyncio.wait_for(
                producer.send_and_wait(self.topic, value, None, partition=partition),
                self.consume_wait_ms / 1000,
            )
        except RemoteStorageError:
            raise
        except Exception as e:  # delivery failed or timed out: retriable for the caller
            raise RemoteStorageError(f"writing to {self.topic}-{partition} failed: {e}") from e

    def _fail_waiters(self, tip: TopicIdPartition, error: BaseException) -> None:
        for entries in self._waiters.values():
            for t, fut in entries:
                if t == tip and not fut.done():
                    fut.set_exception(error)

    # ------------------------------------------------------------------ the reader
    async def _notify(self) -> None:
        if self._progress is not None:
            async with self._progress:
                self._progress.notify_all()

    async def _read_forever(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while not self._closed:
            try:
                if self._assignment_changed:
                    await self._reassign(consumer)
                await self._fetch_targets(consumer)
                batches = await consumer.getmany(timeout_ms=self.poll_timeout_ms)
                for tp, records in batches.items():
                    for record in records:
                        self._apply(tp.partition, record)
                self._mark_ready()
                await self._notify()
            except asyncio.CancelledError:
                raise
            except Exception:  # a broker or network error: keep reading
                log.warning("reading %s failed; retrying", self.topic, exc_info=True)
                await asyncio.sleep(self.initialization_retry_interval_ms / 1000)

    async def _reassign(self, consumer: Consumer) -> None:
        """Assign the metadata partitions of the hosted partitions; read again from the start those
        that a newly hosted partition maps to."""
        self._assignment_changed = False
        reseek, self._reseek = self._reseek, set()
        snapshot = list(self._hosted.values())
        wanted = sorted({h.metadata_partition for h in snapshot})
        consumer.assign([TopicPartition(self.topic, mp) for mp in wanted])
        for mp in list(self._positions):
            if mp not in wanted:
                del self._positions[mp]
        again = [TopicPartition(self.topic, mp) for mp in wanted if mp in reseek or mp not in self._positions]
        try:
            if again:
                await consumer.seek_to_beginning(*again)
                for tp in again:
                    self._positions[tp.partition] = await consumer.position(tp)
        except BaseException:
            self._reseek |= reseek
            self._assignment_changed = True
            raise
        for h in snapshot:
            h.seeked = True

    async def _fetch_targets(self, consumer: Consumer) -> None:
        """The end offsets that the partitions just hosted must be read up to."""
        waiting = [h for h in self._hosted.values() if h.seeked and h.target is None]
        if not waiting:
            return
        tps = {TopicPartition(self.topic, h.metadata_partition) for h in waiting}
        ends = await consumer.admin.list_offsets(dict.fromkeys(tps, LATEST))
        for h in waiting:
            found = ends.get(TopicPartition(self.topic, h.metadata_partition))
            if found is not None and not isinstance(found, BaseException):
                h.target = found.offset

    def _apply(self, mp: int, record: ConsumerRecord) -> None:
        self._positions[mp] = record.offset + 1
        if record.value is None:
            log.warning("%s-%d@%d has no value; skipped", self.topic, mp, record.offset)
            return
        try:
            event = decode(record.value)
        except DecodeError as e:
            log.warning(
                "%s-%d@%d is not a remote log metadata event (%s); skipped", self.topic, mp, record.offset, e
            )
            return
        tip = event_topic_id_partition(event)
        h = self._hosted.get(tip) if tip is not None else None
        if h is None or h.metadata_partition != mp or record.offset < h.applied_upto:
            return  # not hosted here, or applied before this metadata partition was read again
        accepted = h.cache.replay(event)
        h.applied_upto = record.offset + 1
        for t, fut in self._waiters.get(bytes(record.value), ()):
            if t == tip and not fut.done():
                fut.set_result(accepted)

    def _mark_ready(self) -> None:
        for h in self._hosted.values():
            if (
                not h.ready
                and h.target is not None
                and self._positions.get(h.metadata_partition, -1) >= h.target
            ):
                h.ready = True
                h.cache.initialized = True


def _log_start_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the remote log metadata manager did not start: %s", task.exception())


__all__ = [
    "CONSUME_WAIT_MS",
    "DEFAULT_CONSUME_WAIT_MS",
    "DEFAULT_INITIALIZATION_RETRY_INTERVAL_MS",
    "DEFAULT_INITIALIZATION_RETRY_MAX_TIMEOUT_MS",
    "DEFAULT_NUM_PARTITIONS",
    "DEFAULT_REPLICATION_FACTOR",
    "DEFAULT_RETENTION_MS",
    "INITIALIZATION_RETRY_INTERVAL_MS",
    "INITIALIZATION_RETRY_MAX_TIMEOUT_MS",
    "TOPIC_NUM_PARTITIONS",
    "TOPIC_REPLICATION_FACTOR",
    "TOPIC_RETENTION_MS",
    "TopicBasedRemoteLogMetadataManager",
    "metadata_partition",
]
