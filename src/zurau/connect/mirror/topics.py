"""Cluster-side helpers of the mirror connectors: which source partitions to copy, and creating the
remote and internal topics (all through zurau.client)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.config import ClientConfig
from zurau.client.topic_admin import ensure_topic
from zurau.client.types import TopicPartition
from zurau.connect.api import ConnectException
from zurau.connect.mirror.config import MirrorSettings
from zurau.protocol.errors import KafkaError

log = logging.getLogger("zurau.connect.mirror")


async def source_partitions(settings: MirrorSettings) -> dict[str, int]:
    """Partition counts of the source topics the settings replicate."""
    async with AdminClient(settings.source) as admin:
        names = [t for t in await admin.list_topics() if settings.replicates(t)]
        if not names:
            return {}
        metadata = await admin.topic_metadata(names)
    return {name: len(md.partitions) for name, md in metadata.items() if md.error is None and md.partitions}


async def ensure_topics(config: ClientConfig, topics: dict[str, int], replication_factor: int,
                        configs: dict[str, str] | None = None,
                        topic_configs: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """Create each of ``topics`` with its partition count (and ``configs``, then its own
    ``topic_configs``), or grow it to that count. A topic the target refuses to create with its
    own configs (a config it does not know) is created without them, with a warning."""
    if not topics:
        return
    async with AdminClient(config) as admin:

        async def ensure(name: str, partitions: int) -> None:
            own = dict((topic_configs or {}).get(name, {}))
            try:
                try:
                    found = await ensure_topic(
                        admin, NewTopic(name, partitions, replication_factor, {**own, **(configs or {})}),
                        leader_timeout=None)
                except KafkaError as e:
                    if not own:
                        raise
                    log.warning("mirror: cannot create topic %s with configs %s (%s): creating it without them",
                                name, own, e)
                    found = await ensure_topic(admin, NewTopic(name, partitions, replication_factor, configs or {}),
                                               leader_timeout=None)
            except KafkaError as e:
                raise ConnectException(f"cannot create topic {name}: {e}") from e
            if not found.created and found.partitions < partitions:
                await admin.create_partitions({name: partitions})

        await asyncio.gather(*(ensure(name, n) for name, n in topics.items()))


def encode_partitions(tps: Iterable[TopicPartition]) -> str:
    """MM2's ``task.assigned.partitions``: ``topic-partition`` entries, comma-separated."""
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in tps)


def decode_partitions(text: str) -> list[TopicPartition]:
    out = []
    for item in text.split(","):
        item = item.strip()
        if item:
            topic, _, partition = item.rpartition("-")
            out.append(TopicPartition(topic, int(partition)))
    return out
