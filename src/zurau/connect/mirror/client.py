"""What MirrorMaker 2's internal topics on one cluster tell (MM2's ``MirrorClient`` and
``RemoteClusterUtils``): which clusters replicate into it, over how many hops, and a consumer
group's offsets translated for this cluster, for failing over.

* heartbeat topics: ``heartbeats`` and every remote copy of it (``A.heartbeats``,
  ``B.A.heartbeats`` ...: the policy's original topic is ``heartbeats``);
* :meth:`MirrorClient.upstream_clusters`: every alias in the names of the heartbeat topics
  (``B.A.heartbeats`` -> ``{B, A}``);
* :meth:`MirrorClient.replication_hops`: the fewest hops from a cluster, counted along the
  aliases of each heartbeat topic (``A.heartbeats``: 1 from ``A``; ``B.A.heartbeats``: 2 from
  ``A``), -1 when no heartbeat comes from it;
* checkpoint topics: names ending in ``.checkpoints.internal``;
* :meth:`MirrorClient.remote_consumer_offsets`: the checkpoints of ``<alias>.checkpoints.internal``
  read from the beginning to its end, the last one per partition of the group: the offsets the
  group should use here (partitions named as on this cluster, ``A.orders``).

The helpers that only look at names are plain functions, so they need no cluster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from zurau.client.admin import LATEST, AdminClient, OffsetInfo
from zurau.client.config import ClientConfig
from zurau.client.consumer import Consumer
from zurau.client.types import TopicPartition
from zurau.connect.mirror.config import HEARTBEATS_TOPIC, ReplicationPolicy
from zurau.connect.mirror.formats import Checkpoint, FormatError, Heartbeat

log = logging.getLogger("zurau.connect.mirror")

CHECKPOINTS_SUFFIX = ".checkpoints.internal"


def is_heartbeat_topic(policy: ReplicationPolicy, topic: str) -> bool:
    return policy.original_topic(topic) == HEARTBEATS_TOPIC


def is_checkpoint_topic(topic: str) -> bool:
    return topic.endswith(CHECKPOINTS_SUFFIX)


def is_remote_topic(policy: ReplicationPolicy, topic: str) -> bool:
    return not policy.is_internal_topic(topic) and policy.topic_source(topic) is not None


def all_sources(policy: ReplicationPolicy, topic: str) -> set[str]:
    """Every cluster alias a remote topic passed through (``B.A.t`` -> ``{B, A}``)."""
    out: set[str] = set()
    while (source := policy.topic_source(topic)) is not None:
        out.add(source)
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            break
        topic = upstream
    return out


def count_hops(policy: ReplicationPolicy, topic: str, upstream_alias: str) -> int:
    """Hops from ``upstream_alias`` along ``topic``'s name (-1 if it does not come from there)."""
    hops = 0
    while True:
        hops += 1
        source = policy.topic_source(topic)
        if source is None:
            return -1
        if source == upstream_alias:
            return hops
        upstream = policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return -1
        topic = upstream


def upstream_clusters(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    return {alias for t in topics if is_heartbeat_topic(policy, t) for alias in all_sources(policy, t)}


def replication_hops(policy: ReplicationPolicy, topics: Iterable[str], upstream_alias: str) -> int:
    hops = [count_hops(policy, t, upstream_alias) for t in topics if is_heartbeat_topic(policy, t)]
    found = [h for h in hops if h != -1]
    return min(found) if found else -1


class MirrorClient:
    """``async with MirrorClient(config) as mm``: MM2's view of one cluster."""

    def __init__(self, config: ClientConfig, policy: ReplicationPolicy | None = None) -> None:
        self.config = config
        self.policy = policy or ReplicationPolicy()
        self.admin = AdminClient(config)

    async def __aenter__(self) -> MirrorClient:
        await self.admin.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.admin.close()

    async def list_topics(self) -> list[str]:
        return await self.admin.list_topics()

    async def heartbeat_topics(self) -> set[str]:
        return {t for t in await self.list_topics() if is_heartbeat_topic(self.policy, t)}

    async def checkpoint_topics(self) -> set[str]:
        return {t for t in await self.list_topics() if is_checkpoint_topic(t)}

    async def remote_topics(self, source: str | None = None) -> set[str]:
        """Remote topics (replicated heartbeats too, not checkpoints); only those from ``source`` if given."""
        return {
            t
            for t in await self.list_topics()
            if is_remote_topic(self.policy, t) and (source is None or self.policy.topic_source(t) == source)
        }

    async def upstream_clusters(self) -> set[str]:
        return upstream_clusters(self.policy, await self.list_topics())

    async def replication_hops(self, upstream_alias: str) -> int:
        return replication_hops(self.policy, await self.list_topics(), upstream_alias)

    async def _read_all(self, topic: str, timeout: float) -> list[tuple[bytes | None, bytes | None, int]]:
        """``(key, value, timestamp)`` of every record of partition 0 of ``topic`` up to its end."""
        tp = TopicPartition(topic, 0)
        end = (await self.admin.list_offsets({tp: LATEST})).get(tp)
        if not isinstance(end, OffsetInfo) or end.offset <= 0:
            return []
        out: list[tuple[bytes | None, bytes | None, int]] = []
        deadline = time.monotonic() + timeout
        async with Consumer(self.config, auto_offset_reset="earliest", fetch_max_wait_ms=100) as consumer:
            consumer.assign([tp])
            while await consumer.position(tp) < end.offset:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic} not read to its end ({end.offset}) within {timeout} s")
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    out.extend((r.key, r.value, r.timestamp) for r in records)
        return out

    async def remote_consumer_offsets(
        self, group: str, remote_alias: str, timeout: float = 30.0
    ) -> dict[TopicPartition, int]:
        """The offsets group ``group`` of cluster ``remote_alias`` should use on this cluster."""
        out: dict[TopicPartition, int] = {}
        for key, value, _ in await self._read_all(f"{remote_alias}{CHECKPOINTS_SUFFIX}", timeout):
            try:
                checkpoint = Checkpoint.decode(key, value)
            except FormatError as e:
                log.info(
                    "skipping a record of %s.checkpoints.internal that is no checkpoint: %s", remote_alias, e
                )
                continue
            if checkpoint.group == group:
                out[TopicPartition(checkpoint.topic, checkpoint.partition)] = checkpoint.downstream_offset
        return out

    async def heartbeats(self, topic: str = HEARTBEATS_TOPIC, timeout: float = 30.0) -> list[Heartbeat]:
        """Every heartbeat in ``topic`` (``heartbeats``, ``A.heartbeats`` ...), oldest first."""
        out = []
        for key, value, _ in await self._read_all(topic, timeout):
            try:
                out.append(Heartbeat.decode(key, value))
            except FormatError:
                continue
        return out
