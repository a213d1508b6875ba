"""Applies each new metadata image to this broker (Kafka's BrokerMetadataPublisher).

Given the image before and after a change, the publisher makes the broker's local state match
the new one:

* a new topic, new partitions of one, or a changed partition (leader, leader epoch, ISR,
  replicas): for every partition whose replicas include this node the replica manager becomes its
  leader (the image names this node) or its follower (the replica fetchers copy it from the named
  leader), opening or creating its log; a partition whose replicas no longer include this node
  stops being hosted here and its log is deleted;
* a deleted topic: stop hosting its partitions and delete their logs; the group coordinator drops
  the committed offsets of the topic, the share coordinator the share-partition state of it;
* changed topic configs: the live logs take the new config;
* changed dynamic broker configs of this node (its own or the cluster default, Kafka's
  ``DynamicConfigPublisher``): every live log takes its config again (a topic without an
  override of its own follows the broker's dynamic topic defaults);
* a partition of a coordinator's internal topic (``__consumer_offsets``,
  ``__transaction_state``, ``__share_group_state``) that this node comes to lead: the coordinator loads it (groups before
  transactions, whose recovery may write markers to ``__consumer_offsets``); one it stops leading
  or that goes away: the coordinator unloads it.

It runs for the whole image once at start-up (from the empty image) and then after every
committed metadata change, before the change's requester gets its answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Protocol

from zurau.metadata.controller.partition_change import elr_enabled
from zurau.metadata.image import DEFAULT_BROKER_RESOURCE, MetadataImage, PartitionRegistration, TopicImage

log = logging.getLogger("zurau.metadata")

#: Partitions applied between two pauses of :meth:`MetadataPublisher.publish_steps` (about
#: 0.1-0.2 ms each: a chunk holds the event loop for tens of milliseconds, never seconds).
PUBLISH_CHUNK = 256
#: Most time (seconds) :class:`ChunkedPublishing` holds the event loop between two pauses. A
#: partition this node starts hosting costs far more than the 0.1-0.2 ms above (its log
#: directory, segment and checkpoint files, with fsyncs: 1-4 ms), so 256 of them held the loop
#: for 0.1-0.3 s -- on the active controller before the committed CreateTopics was answered, and on
#: the node that forwarded it before the answer was passed on.
PUBLISH_BUDGET_S = 0.01
#: Partitions applied between two looks at the clock when a time budget is set.
_BUDGET_SLICE = 8
#: With a time budget, a slice after a pause may run this many times as long as the pause took
#: (the other work the event loop ran meanwhile), up to ``chunk`` partitions: a loop kept busy by
#: other requests (clients polling thousands of partitions every few milliseconds) still gives
#: the publisher about 90% of its time, as the fixed chunks did, while an idle loop keeps the
#: short slices that let a response out within ``budget_s``.
PUBLISH_FAIR_SHARE = 9


class HostsPartitions(Protocol):
    def make_leader(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int,
        replicas: list[int],
        isr: list[int],
        partition_epoch: int | None = None,
    ) -> object: ...

    def make_follower(
        self,
        topic: str,
        index: int,
        *,
        leader_id: int,
        leader_epoch: int,
        replicas: list[int] | None = None,
        isr: list[int] | None = None,
        partition_epoch: int | None = None,
    ) -> object: ...

    def stop_hosting(self, topic: str, index: int, delete: bool) -> None: ...

    def update_config(self, topic: str) -> None: ...

    def update_all_configs(self) -> None: ...

    def set_elr_enabled(self, enabled: bool) -> None: ...


class Coordinator(Protocol):
    """A coordinator runtime that keeps its state in one internal topic."""

    topic: str

    def load(self, partition: int, *, blocking: bool = False) -> None: ...

    def unload(self, partition: int) -> None: ...


class GroupsCoordinator(Coordinator, Protocol):
    def on_topic_deleted(self, topic: str) -> None: ...


class SharesCoordinator(Coordinator, Protocol):
    def on_topics_deleted(self, topic_ids: Iterable[uuid.UUID]) -> None: ...


class MetadataPublisher:
    def __init__(
        self,
        node_id: int,
        replicas: HostsPartitions,
        groups: GroupsCoordinator,
        txns: Coordinator,
        shares: SharesCoordinator | None = None,
    ) -> None:
        self.node_id = node_id
        self.replicas = replicas
        self.groups = groups
        self.shares = shares
        # Load order matters: groups first (transaction recovery writes to __consumer_offsets).
        self._coordinators: dict[str, Coordinator] = {groups.topic: groups, txns.topic: txns}
        if shares is not None:
            self._coordinators[shares.topic] = shares

    def publish(self, old: MetadataImage, new: MetadataImage, *, blocking: bool = False) -> None:
        """Make this node match ``new`` (``blocking``: replay coordinator partitions fully now,
        as at start-up before the broker listens), all in this call."""
        for _ in self.publish_steps(old, new, blocking=blocking):
            pass

    def publish_steps(
        self,
        old: MetadataImage,
        new: MetadataImage,
        *,
        blocking: bool = False,
        chunk: int = PUBLISH_CHUNK,
        budget_s: float | None = None,
    ) -> Iterator[None]:
        """:meth:`publish` as a generator that pauses (yields) after about every ``chunk``
        partitions it applied -- and, given ``budget_s``, as soon as it has run that long since
        the last pause, or ``PUBLISH_FAIR_SHARE`` times as long as that pause took if more -- so
        that a caller on the event loop can let other work (Raft's fetches, responses) run
        between chunks. Partitions are applied in order; coordinator loads and
        unloads come after every partition, as in :meth:`publish`."""
        loads: dict[str, list[int]] = {}
        unloads: dict[str, list[int]] = {}
        if new.broker_configs is not old.broker_configs and self._broker_configs_changed(old, new):
            self.replicas.update_all_configs()
        if new.features is not old.features and elr_enabled(new) != elr_enabled(old):
            self.replicas.set_elr_enabled(elr_enabled(new))
        if new.topics_by_id is old.topics_by_id:
            return  # no topic changed (broker registrations, producer ids, broker configs)
        # Built from ``old`` directly: only the topics it touched (no walk over every topic).
        touched = new.topics_changed_since(old)
        ids = set(old.topics_by_id) | set(new.topics_by_id) if touched is None else touched
        done = 0
        since = time.monotonic()
        budget = budget_s

        def pause_due() -> bool:
            return done >= chunk or (budget is not None and time.monotonic() - since >= budget)

        step = chunk if budget_s is None else max(1, min(chunk, _BUDGET_SLICE))
        for tid in ids:
            t_old = old.topics_by_id.get(tid)
            if t_old is not None and tid not in new.topics_by_id:
                self._removed(t_old)
                done += len(t_old.partitions)
                if pause_due():
                    done = 0
                    paused = time.monotonic()
                    yield
                    since = time.monotonic()
                    if budget_s is not None:
                        budget = max(budget_s, (since - paused) * PUBLISH_FAIR_SHARE)
        for tid in ids:
            t = new.topics_by_id.get(tid)
            if t is None:
                continue
            before = old.topics_by_id.get(tid)
            if before is None:
                indexes = list(t.partitions)
            else:
                if t.configs is not before.configs and dict(t.configs) != dict(before.configs):
                    self.replicas.update_config(t.name)
                if t.partitions is before.partitions:
                    continue
                indexes = [i for i in t.partitions if before.partitions.get(i) != t.partitions[i]]
            indexes.sort()
            for start in range(0, len(indexes), step):
                part = indexes[start : start + step]
                self._partitions(t, before, part, loads, unloads)
                done += len(part)
                if pause_due():
                    done = 0
                    paused = time.monotonic()
                    yield
                    since = time.monotonic()
                    if budget_s is not None:
                        budget = max(budget_s, (since - paused) * PUBLISH_FAIR_SHARE)
        for topic, coordinator in self._coordinators.items():
            for i in unloads.get(topic, ()):
                coordinator.unload(i)
            for i in loads.get(topic, ()):
                coordinator.load(i, blocking=blocking)

    def _broker_configs_changed(self, old: MetadataImage, new: MetadataImage) -> bool:
        """Did the dynamic broker configs that apply to this node change?"""
        return any(
            dict(old.broker_config(r)) != dict(new.broker_config(r))
            for r in (self.node_id, DEFAULT_BROKER_RESOURCE)
        )

    def _partitions(
        self,
        t: TopicImage,
        before: TopicImage | None,
        indexes: list[int],
        loads: dict[str, list[int]],
        unloads: dict[str, list[int]],
    ) -> None:
        node = self.node_id
        coordinated = t.name in self._coordinators
        for i in indexes:
            p = t.partitions[i]
            prev: PartitionRegistration | None = before.partitions.get(i) if before is not None else None
            led_before = prev is not None and prev.leader == node
            if node in p.replicas:
                if p.leader == node:
                    self.replicas.make_leader(
                        t.name,
                        i,
                        leader_epoch=p.leader_epoch,
                        replicas=list(p.replicas),
                        isr=list(p.isr),
                        partition_epoch=p.partition_epoch,
                    )
                    if coordinated and not led_before:
                        loads.setdefault(t.name, []).append(i)
                    continue
                self.replicas.make_follower(
                    t.name,
                    i,
                    leader_id=p.leader,
                    leader_epoch=p.leader_epoch,
                    replicas=list(p.replicas),
                    isr=list(p.isr),
                    partition_epoch=p.partition_epoch,
                )
            elif prev is not None and node in prev.replicas:
                self.replicas.stop_hosting(t.name, i, delete=True)  # reassigned away from this node
            if coordinated and led_before:
                unloads.setdefault(t.name, []).append(i)

    def _removed(self, t: TopicImage) -> None:
        coordinator = self._coordinators.get(t.name)
        for i in t.partitions:
            if coordinator is not None:
                coordinator.unload(i)
            self.replicas.stop_hosting(t.name, i, delete=True)
        self.groups.on_topic_deleted(t.name)  # committed offsets of the topic go too
        if self.shares is not None:
            self.shares.on_topics_deleted([t.topic_id])  # and the share-partition state of it
        log.info("deleted topic %s", t.name)


class ChunkedPublishing:
    """Applies committed images to a node of a cluster in chunks, on the event loop.

    Installed as the metadata channel's listener (``channel.add_listener(chunked.publish)``),
    it queues each ``(old, new)`` the channel reports and a single task applies them in order
    through :meth:`MetadataPublisher.publish_steps`, yielding to the loop between chunks, so
    that a change of thousands of partitions (a topic of 10,000 partitions created, a broker
    with thousands of leaderships fenced or unfenced) never holds the loop past Raft's fetch
    and election deadlines: the node's Raft keeps answering while its broker catches up, as
    Kafka's broker publishes metadata on a thread of its own.

    Invariants: images are applied in commit order, each exactly once; a queued run of images
    is applied as one change from the first one's ``old`` to the last one's ``new`` (the
    publisher diffs any two images); :attr:`idle` is set exactly when nothing is queued or
    being applied. Readers of the replica manager may see a change half applied, as they would
    see it not yet applied: the leader epochs fence whatever a stale replica does meanwhile.
    """

    def __init__(
        self, publisher: MetadataPublisher, *, chunk: int = PUBLISH_CHUNK, budget_s: float | None = PUBLISH_BUDGET_S
    ) -> None:
        self.publisher = publisher
        self.chunk = chunk
        self.budget_s = budget_s
        self._queue: deque[tuple[MetadataImage, MetadataImage]] = deque()
        self._task: asyncio.Task[None] | None = None
        self.idle = asyncio.Event()
        self.idle.set()

    def publish(self, old: MetadataImage, new: MetadataImage) -> None:
        """The channel's listener: queue the change and make sure the task applies it."""
        self._queue.append((old, new))
        self.idle.clear()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="zurau-metadata-publisher")

    async def apply(self, old: MetadataImage, new: MetadataImage, *, blocking: bool = False) -> None:
        """Apply one change now, in chunks (the caller awaits it; used for the first image)."""
        for _ in self.publisher.publish_steps(old, new, blocking=blocking, chunk=self.chunk, budget_s=self.budget_s):
            await asyncio.sleep(0)

    async def _drain(self) -> None:
        while self._queue:
            old, new = self._queue.popleft()
            while self._queue:  # coalesce what is already queued behind it
                new = self._queue.popleft()[1]
            try:
                await self.apply(old, new)
            except Exception:
                log.exception("publishing metadata offset %d failed", new.offset)
        self.idle.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
