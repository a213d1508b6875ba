"""Confluent's v2 consumer instances: one Zurau :class:`~zurau.client.consumer.Consumer` per
instance, each one member of its consumer group, kept between HTTP requests.

An instance is named by ``(group, name)``. It either subscribes (to topics, or to the topics a
regular expression fully matches, re-checked every ``metadata.max.age.ms``) or is assigned
partitions; mixing both is refused (409/40903) as Kafka's consumer refuses it. A subscription
returns at once: the group is joined by a background task, and reads wait for it up to their
timeout (until then the assignment is empty, as Kafka's consumer's before its first poll).

Positions: records fetched from the cluster but not yet handed to the HTTP client wait in the
instance (a read stops before the record that would exceed its byte budget, which stays first in
line). *Consumed* offsets (the next offset after the last record handed out, or a seeked
position) are what ``POST .../offsets`` without a body and the auto-commit commit; records the
client never received are never committed. After a rebalance the consumed offsets of the old
generation are dropped (uncommitted records are delivered again: at-least-once).

Auto-commit (``auto.commit.enable``, default true as Kafka's ``enable.auto.commit``): the
consumed offsets are committed at the start of a read once ``auto.commit.interval.ms`` (5000)
passed since the last commit, and when the instance closes.

Expiry: an instance not used for ``consumer.instance.timeout.ms`` is closed by a background task
(:class:`ConsumerInstances`), which leaves its group. An instance in the middle of a request is
never expired; a request that reaches an instance closed meanwhile answers 404/40403.

Invariants: every operation on one instance runs under its lock, one at a time; after
:meth:`ConsumerInstance.close` the consumer has left its group and no task of the instance
(join, heartbeat) is running; after :meth:`ConsumerInstances.close` no instance is open and the
expiry task is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zurau.client.admin import LATEST
from zurau.client.config import ClientConfig
from zurau.client.consumer import Consumer
from zurau.client.errors import ClientError
from zurau.client.types import ConsumerRecord, TopicPartition
from zurau.protocol.errors import KafkaError
from zurau.rest_proxy.errors import (
    CONSUMER_ALREADY_EXISTS,
    CONSUMER_INSTANCE_NOT_FOUND,
    ILLEGAL_STATE,
    RestProxyError,
    not_found,
)
from zurau.rest_proxy.proxy_config import RestProxyConfig
from zurau.rest_proxy.record_deserialization import RecordDeserializer

log = logging.getLogger("zurau.rest_proxy.consumers")

SERVICE = "v2_consumer_instances"
"""Key of the proxy's :class:`ConsumerInstances` in ``ProxyApi.services``."""


@dataclass(frozen=True)
class InstanceSettings:
    """What ``POST /consumers/{group}`` asked for (None: the proxy's or Kafka's default)."""

    format: str = "binary"
    auto_offset_reset: str = "latest"
    auto_commit: bool = True
    fetch_min_bytes: int | None = None  # -1 or None: wait the whole request timeout
    request_timeout_ms: int | None = None


def instance_gone() -> RestProxyError:
    return not_found("Consumer instance not found.", CONSUMER_INSTANCE_NOT_FOUND)


def illegal_state(message: str) -> RestProxyError:
    return RestProxyError(409, ILLEGAL_STATE, f"Illegal state: {message}")


class ConsumerInstance:
    """One v2 consumer instance (see the module docstring)."""

    def __init__(
        self,
        group: str,
        name: str,
        settings: InstanceSettings,
        client_config: ClientConfig,
        proxy: RestProxyConfig,
        formats: RecordDeserializer,
    ) -> None:
        self.group = group
        self.name = name
        self.settings = settings
        self.format = settings.format
        self._client_config = client_config
        self._proxy = proxy
        self._formats = formats
        props = proxy.consumer_props
        self._auto_commit_interval = _int(props.get("auto.commit.interval.ms"), 5000) / 1000
        self._max_partition_fetch_bytes = _int(props.get("max.partition.fetch.bytes"), 1_048_576)
        self._fetch_max_bytes = _int(props.get("fetch.max.bytes"), 52_428_800)
        self._session_timeout_ms = _int(props.get("session.timeout.ms"), 45_000)
        self._heartbeat_interval_ms = _int(props.get("heartbeat.interval.ms"), 3_000)
        self.consumer = self._new_consumer()
        self._lock = asyncio.Lock()
        self._users = 0
        self.last_used = time.monotonic()
        self.closed = False
        self._mode: str | None = None  # None, "subscribe" or "assign"
        self._topics: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        self._next_pattern_check = 0.0
        self._join: asyncio.Task[list[TopicPartition]] | None = None
        self._generation = -1
        self._pending: deque[ConsumerRecord] = deque()
        self._consumed: dict[TopicPartition, int] = {}
        self._last_commit = time.monotonic()
        self.owner: str | None = None  # the authenticated HTTP user who created it

    def _new_consumer(self) -> Consumer:
        return Consumer(
            self._client_config,
            group_id=self.group,
            auto_offset_reset=self.settings.auto_offset_reset,
            max_partition_fetch_bytes=self._max_partition_fetch_bytes,
            fetch_max_bytes=self._fetch_max_bytes,
            session_timeout_ms=self._session_timeout_ms,
            heartbeat_interval_ms=self._heartbeat_interval_ms,
        )

    # ------------------------------------------------------------------ use and expiry
    def touch(self) -> None:
        self.last_used = time.monotonic()

    @property
    def in_use(self) -> bool:
        return self._users > 0

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[ConsumerInstance]:
        """Hold the instance for one operation (404/40403 if it was closed meanwhile)."""
        self._users += 1
        self.touch()
        try:
            async with self._lock:
                if self.closed:
                    raise instance_gone()
                yield self
        finally:
            self._users -= 1
            self.touch()

    async def start(self) -> None:
        await self.consumer.start()

    async def close(self) -> None:
        """Commit what was consumed (with auto-commit), leave the group, close the connections."""
        async with self._lock:
            if self.closed:
                return
            self.closed = True
            await self._stop_join()
            if self.settings.auto_commit and self._mode is not None:
                with contextlib.suppress(ClientError, KafkaError, OSError):
                    await self._commit_consumed()
            await self._close_consumer()

    async def _close_consumer(self) -> None:
        try:
            await self.consumer.close()
        except (ClientError, KafkaError, OSError) as e:
            log.debug("closing consumer %s/%s: %s", self.group, self.name, e)

    # ------------------------------------------------------------------ subscription
    async def subscribe(self, topics: list[str] | None, pattern: re.Pattern[str] | None) -> None:
        if self._mode == "assign":
            raise illegal_state("Subscription to topics, partitions and pattern are mutually exclusive")
        if topics is not None and not topics and pattern is None:
            await self.unsubscribe()
            return
        self._mode = "subscribe"
        self._pattern = pattern
        self._topics = sorted(set(topics or []))
        if pattern is not None:
            self._topics = await self._matching_topics()
        await self._start_join()

    async def _matching_topics(self) -> list[str]:
        assert self._pattern is not None
        md = await self.consumer.cluster.refresh_metadata(None)
        self._next_pattern_check = time.monotonic() + self.consumer.cluster.config.metadata_max_age_ms / 1000
        return sorted(n for n, t in md.topics.items() if not t.is_internal and self._pattern.fullmatch(n))

    async def _start_join(self) -> None:
        await self._stop_join()
        self._pending.clear()
        self._consumed.clear()
        self._join = asyncio.create_task(
            self.consumer.subscribe(self._topics), name=f"zurau-rest-join-{self.group}-{self.name}"
        )

    async def _stop_join(self) -> None:
        task, self._join = self._join, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _joined(self, deadline: float) -> bool:
        """Whether the group join (if any) finished by ``deadline``; its error is raised once."""
        task = self._join
        if task is None:
            return True
        if not task.done():
            remaining = deadline - time.monotonic()
            if remaining > 0:
                await asyncio.wait([task], timeout=remaining)
            if not task.done():
                return False
        self._join = None
        task.result()  # a failed join raises here; the next subscribe or read tries again
        return True

    def subscription(self) -> list[str]:
        return list(self._topics) if self._mode == "subscribe" else []

    async def unsubscribe(self) -> None:
        """Leave the group and forget the subscription or assignment (a fresh consumer)."""
        await self._stop_join()
        if self.settings.auto_commit and self._mode is not None:
            with contextlib.suppress(ClientError, KafkaError, OSError):
                await self._commit_consumed()
        await self._close_consumer()
        self.consumer = self._new_consumer()
        await self.consumer.start()
        self._mode = None
        self._topics = []
        self._pattern = None
        self._pending.clear()
        self._consumed.clear()

    # ------------------------------------------------------------------ assignment and positions
    def assign(self, partitions: list[TopicPartition]) -> None:
        if self._mode == "subscribe":
            raise illegal_state("Subscription to topics, partitions and pattern are mutually exclusive")
        self.consumer.assign(partitions)
        keep = set(self.consumer.assignment())
        self._mode = "assign" if keep else None
        self._pending = deque(r for r in self._pending if TopicPartition(r.topic, r.partition) in keep)
        self._consumed = {tp: o for tp, o in self._consumed.items() if tp in keep}

    def assignment(self) -> list[TopicPartition]:
        return self.consumer.assignment()

    def _check_assigned(self, tps: Iterable[TopicPartition]) -> list[TopicPartition]:
        assigned = set(self.consumer.assignment())
        out = []
        for tp in tps:
            if tp not in assigned:
                raise illegal_state(f"No current assignment for partition {tp.topic}-{tp.partition}")
            out.append(tp)
        return out

    def _forget_pending(self, tps: set[TopicPartition]) -> None:
        self._pending = deque(r for r in self._pending if TopicPartition(r.topic, r.partition) not in tps)

    async def seek(self, offsets: Mapping[TopicPartition, int], timestamps: Mapping[TopicPartition, int]) -> None:
        """Seek to offsets, and to the first offset at or after a timestamp (ms) (the end when
        no record is that recent)."""
        self._check_assigned([*offsets, *timestamps])
        found = await self.consumer.offsets_for_times(dict(timestamps)) if timestamps else {}
        ends = [tp for tp, info in found.items() if info is None]
        if ends:
            await self.consumer.seek_to_end(*ends)
        targets = dict(offsets)
        targets.update({tp: info.offset for tp, info in found.items() if info is not None})
        for tp, off in targets.items():
            self.consumer.seek(tp, off)
        for tp in ends:
            targets[tp] = await self.consumer.position(tp)
        self._forget_pending(set(targets))
        self._consumed.update(targets)

    async def seek_to(self, tps: list[TopicPartition], where: int) -> None:
        """Seek ``tps`` (all assigned when empty) to their beginning or end (EARLIEST/LATEST)."""
        chosen = self._check_assigned(tps) if tps else self.consumer.assignment()
        if not chosen:
            return
        if where == LATEST:
            await self.consumer.seek_to_end(*chosen)
        else:
            await self.consumer.seek_to_beginning(*chosen)
        self._forget_pending(set(chosen))
        for tp in chosen:
            self._consumed[tp] = await self.consumer.position(tp)

    # ------------------------------------------------------------------ reading
    async def read(self, timeout_ms: int | None, max_bytes: int | None) -> list[dict[str, Any]]:
        """Records for ``GET .../records`` (Confluent's rules): wait up to the request timeout
        (the smaller of ``timeout_ms`` and the instance's/proxy's ``consumer.request.timeout.ms``)
        unless more than ``fetch.min.bytes`` were gathered; stop before ``max_bytes`` (and
        ``consumer.request.max.bytes``) would be reached."""
        wait = self.settings.request_timeout_ms
        if wait is None:
            wait = self._proxy.consumer_request_timeout_ms
        if timeout_ms is not None and timeout_ms > 0:
            wait = min(wait, timeout_ms)
        limit = self._proxy.consumer_request_max_bytes
        if max_bytes is not None and max_bytes > 0:
            limit = min(limit, max_bytes)
        min_bytes = self.settings.fetch_min_bytes
        if min_bytes is not None and min_bytes < 0:
            min_bytes = None
        deadline = time.monotonic() + wait / 1000
        if self._mode is None:
            raise illegal_state("Consumer is not subscribed to any topics or assigned any partitions")
        if not await self._joined(deadline):
            return []
        await self._maybe_auto_commit()
        out: list[dict[str, Any]] = []
        size = 0
        while True:
            while self._pending:
                rec = self._pending[0]
                try:
                    item, n = await self._to_json(rec)
                except RestProxyError:
                    if out:
                        return out  # the bad record stays first: the next read reports it
                    raise
                if size + n >= limit:
                    return out
                self._pending.popleft()
                out.append(item)
                size += n
                self._consumed[TopicPartition(rec.topic, rec.partition)] = rec.offset + 1
                if min_bytes is not None and size > min_bytes:
                    return out
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not await self._poll(deadline):
                return out

    async def _to_json(self, rec: ConsumerRecord) -> tuple[dict[str, Any], int]:
        where = f"{rec.topic}-{rec.partition}@{rec.offset}"
        key, key_size = await self._formats.to_json(rec.key, self.format, f"the key of {where}")
        value, value_size = await self._formats.to_json(rec.value, self.format, f"the value of {where}")
        item = {"topic": rec.topic, "key": key, "value": value, "partition": rec.partition, "offset": rec.offset}
        return item, key_size + value_size

    async def _poll(self, deadline: float) -> bool:
        """Fetch into the pending records until ``deadline``; False when the time is up."""
        if self._pattern is not None and time.monotonic() >= self._next_pattern_check:
            topics = await self._matching_topics()
            if topics != self._topics:
                self._topics = topics
                await self._start_join()
        if not await self._joined(deadline):
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        batch = await self.consumer.getmany(timeout_ms=remaining * 1000)
        group = self.consumer.group
        generation = group.generation_id if group is not None and self._mode == "subscribe" else -1
        if generation != self._generation:
            self._generation = generation
            self._consumed.clear()  # the old generation's positions are not ours to commit
        for records in batch.values():
            self._pending.extend(records)
        return True

    # ------------------------------------------------------------------ offsets
    async def _maybe_auto_commit(self) -> None:
        if self.settings.auto_commit and time.monotonic() - self._last_commit >= self._auto_commit_interval:
            try:
                await self._commit_consumed()
            except (ClientError, KafkaError) as e:
                log.info("auto-commit of %s/%s failed: %s", self.group, self.name, e)

    async def _commit_consumed(self) -> None:
        self._last_commit = time.monotonic()
        offsets = dict(self._consumed)
        for rec in self._pending:  # defensive: never commit past a record not handed out
            tp = TopicPartition(rec.topic, rec.partition)
            offsets[tp] = min(offsets.get(tp, rec.offset), rec.offset)
        if offsets:
            await self.consumer.commit(offsets)

    async def commit(self, offsets: Mapping[TopicPartition, int] | None) -> None:
        """Commit ``offsets`` (next offsets to read), or everything consumed when None."""
        if self._join is not None:
            await self._joined(time.monotonic() + self.consumer.cluster.config.request_timeout)
        if offsets is None:
            await self._commit_consumed()
        elif offsets:
            self._last_commit = time.monotonic()
            await self.consumer.commit(offsets)

    async def committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return await self.consumer.committed(tps) if tps else {}


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


class ConsumerInstances:
    """Every v2 consumer instance of the proxy, and the task that expires idle ones."""

    def __init__(self, config: RestProxyConfig) -> None:
        self.config = config
        self.instances: dict[tuple[str, str], ConsumerInstance | None] = {}  # None: being created
        self._expiry: asyncio.Task[None] | None = None
        self._closing = False

    def new_name(self) -> str:
        prefix = f"rest-consumer-{self.config.instance_id}-" if self.config.instance_id else "rest-consumer-"
        return prefix + str(uuid.uuid4())

    async def create(
        self,
        group: str,
        name: str,
        settings: InstanceSettings,
        client_config: ClientConfig,
        formats: RecordDeserializer,
        owner: str | None = None,
    ) -> ConsumerInstance:
        """A new started instance; ``owner`` is the authenticated HTTP user who created it (None
        without authentication): only they reach it afterwards (:meth:`get`)."""
        key = (group, name)
        if self._closing:
            raise RestProxyError(503, 50301, "the REST proxy is stopping")
        if key in self.instances:
            raise RestProxyError(
                409,
                CONSUMER_ALREADY_EXISTS,
                "Consumer with specified consumer ID already exists in the specified consumer group.",
            )
        self.instances[key] = None
        try:
            instance = ConsumerInstance(group, name, settings, client_config, self.config, formats)
            instance.owner = owner
            try:
                await instance.start()
            except BaseException:
                await instance.close()
                raise
        except BaseException:
            self.instances.pop(key, None)
            raise
        self.instances[key] = instance
        self._ensure_expiry()
        return instance

    def get(self, group: str, name: str, user: str | None = None) -> ConsumerInstance:
        """The live instance ``name`` of ``group`` for HTTP user ``user``: an instance created by
        another authenticated user is answered as missing (40403), as its records and offsets are
        that user's."""
        instance = self.instances.get((group, name))
        if instance is None or instance.closed or instance.owner != user:
            raise instance_gone()
        instance.touch()
        return instance

    async def delete(self, group: str, name: str, user: str | None = None) -> None:
        instance = self.get(group, name, user)
        if self.instances.get((group, name)) is instance:
            del self.instances[(group, name)]
        await instance.close()

    def _ensure_expiry(self) -> None:
        if self._expiry is None or self._expiry.done():
            self._expiry = asyncio.create_task(self._expire_loop(), name="zurau-rest-consumer-expiry")

    async def _expire_loop(self) -> None:
        timeout = self.config.consumer_instance_timeout_ms / 1000
        period = min(max(timeout / 4, 0.05), 1.0)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for key, instance in list(self.instances.items()):
                if instance is None or instance.in_use or now - instance.last_used < timeout:
                    continue
                if self.instances.get(key) is instance:
                    del self.instances[key]
                log.info("consumer instance %s/%s expired after %.1f s idle", key[0], key[1], now - instance.last_used)
                try:
                    await instance.close()
                except Exception as e:  # noqa: BLE001 - expiry must go on
                    log.warning("closing expired consumer instance %s/%s: %s", key[0], key[1], e)

    async def close(self) -> None:
        """Stop the expiry task and close every instance (each leaves its group)."""
        self._closing = True
        task, self._expiry = self._expiry, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        instances = [i for i in self.instances.values() if i is not None]
        self.instances.clear()
        await asyncio.gather(*(i.close() for i in instances), return_exceptions=True)
