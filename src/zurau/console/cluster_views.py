"""The cluster as the console shows it: overview, topics, one topic's partitions and configs,
and the topic actions (create, delete, edit configs, produce a record).

Every function takes the console's shared :class:`~zurau.client.admin.AdminClient` and returns a
JSON-ready dict; Kafka errors are raised as they come (the web layer turns them into HTTP
answers). Counting rules, as ``kafka-topics.sh --describe`` uses them:

* a partition is *offline* when it has no leader (leader id < 0);
* it is *under-replicated* when its ISR is smaller than its replica list;
* disk use is the sum of the replica sizes DescribeLogDirs reports, per broker and log dir
  (a broker that does not answer is listed with its error, and the rest are still shown).

A tiered topic (``remote.storage.enable=true``, KIP-405) has ``remote_storage: true`` and, per
partition, ``local_log_start_offset`` (ListOffsets -4), ``highest_offset_in_remote`` (-5; -1:
nothing tiered yet) and ``local_size`` (the leader's replica bytes, DescribeLogDirs), -1 where the
cluster cannot say (:mod:`~zurau.client.tiered_partitions`); another topic has
``remote_storage: false`` and these three null. The remote tier's size and the copy lag have no
Kafka API: they are the leaders' metrics, which :mod:`~zurau.console.tier_metrics_view` reads from
``--metrics-url``.

A cluster that does not serve DescribeLogDirs (or DescribeConfigs) gets an overview with
``disk: []``, ``disk_bytes: null`` and ``disk_unsupported`` (a topic with ``configs: null`` and
``configs_unsupported``) saying so (see :mod:`~zurau.console.broker_features`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any

from zurau.client.admin import (
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigResource,
    ConfigSource,
    NewTopic,
    PartitionDescription,
    ResourceType,
    TopicDescription,
)
from zurau.client.producer import Producer
from zurau.client.tiered_partitions import describe_tiered_partitions, remote_storage_enabled
from zurau.client.types import TopicPartition
from zurau.console.broker_features import missing
from zurau.protocol.errors import InvalidConfigError, InvalidTopicError, KafkaError

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def _partition_json(p: PartitionDescription) -> dict[str, Any]:
    return {
        "partition": p.partition,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "offline_replicas": list(p.offline_replicas),
        "log_start_offset": p.log_start_offset,
        "log_end_offset": p.log_end_offset,
        "messages": max(0, p.log_end_offset - p.log_start_offset) if p.log_start_offset >= 0 else None,
        "under_replicated": len(p.isr) < len(p.replicas),
        "offline": p.leader < 0,
        "error": str(p.error) if p.error is not None else None,
    }


async def overview(admin: AdminClient) -> dict[str, Any]:
    md = await admin.cluster.refresh_metadata(None)
    brokers = sorted(md.brokers.values(), key=lambda b: b.node_id)
    partitions = under = offline = 0
    internal = 0
    for t in md.topics.values():
        if t.error_code:
            continue
        internal += t.is_internal
        for p in t.partitions:
            partitions += 1
            under += len(p.isr) < len(p.replicas)
            offline += p.leader < 0
    disk_unsupported = await missing(admin, "disk_use")
    dirs = {} if disk_unsupported else await admin.describe_log_dirs([b.node_id for b in brokers])
    disk: list[dict[str, Any]] = []
    for b in brokers if not disk_unsupported else []:
        found = dirs.get(b.node_id)
        if found is None or isinstance(found, BaseException):
            disk.append({"broker": b.node_id, "error": str(found) if found is not None else "no answer"})
            continue
        for d in found:
            disk.append(
                {
                    "broker": b.node_id,
                    "path": d.path,
                    "replicas": len(d.replica_sizes),
                    "size_bytes": sum(d.replica_sizes.values()),
                    "total_bytes": d.total_bytes,
                    "usable_bytes": d.usable_bytes,
                    "error": str(d.error) if d.error is not None else None,
                }
            )
    return {
        "cluster_id": md.cluster_id,
        "controller": md.controller_id,
        "brokers": [
            {
                "id": b.node_id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "controller": b.node_id == md.controller_id,
            }
            for b in brokers
        ],
        "topics": sum(1 for t in md.topics.values() if not t.error_code),
        "internal_topics": internal,
        "partitions": partitions,
        "under_replicated": under,
        "offline": offline,
        "disk": disk,
        "disk_bytes": None if disk_unsupported else sum(d.get("size_bytes", 0) for d in disk),
        "disk_unsupported": disk_unsupported,
    }


async def topics(admin: AdminClient, search: str = "", include_internal: bool = True) -> dict[str, Any]:
    """Every topic whose name contains ``search`` (case-insensitive), with partition counts,
    replication factor, under-replicated and offline partitions, and message count."""
    described = await admin.describe_topics(None, include_internal=include_internal)
    needle = search.strip().lower()
    rows: list[dict[str, Any]] = []
    for name, d in sorted(described.items()):
        if needle and needle not in name.lower():
            continue
        if isinstance(d, KafkaError):
            rows.append({"name": name, "error": str(d)})
            continue
        parts = [_partition_json(p) for p in d.partitions]
        rows.append(
            {
                "name": name,
                "internal": d.is_internal,
                "partitions": len(parts),
                "replication_factor": d.replication_factor,
                "under_replicated": sum(p["under_replicated"] for p in parts),
                "offline": sum(p["offline"] for p in parts),
                "messages": sum(p["messages"] or 0 for p in parts),
            }
        )
    return {"topics": rows, "search": search}


async def topic(admin: AdminClient, name: str) -> dict[str, Any]:
    found = (await admin.describe_topics([name]))[name]
    if isinstance(found, KafkaError):
        raise found
    assert isinstance(found, TopicDescription)
    configs_unsupported = await missing(admin, "topic_configs")
    configs = None if configs_unsupported else await topic_configs(admin, name)
    tiered = configs is not None and remote_storage_enabled({c["name"]: c["value"] for c in configs})
    tiers = await describe_tiered_partitions(admin, [found]) if tiered else {}
    parts = []
    for p in found.partitions:
        part = _partition_json(p)
        tier = tiers.get(TopicPartition(name, p.partition))
        part["local_log_start_offset"] = tier.local_log_start_offset if tier is not None else None
        part["highest_offset_in_remote"] = tier.highest_offset_in_remote if tier is not None else None
        part["local_size"] = tier.local_size if tier is not None else None
        parts.append(part)
    return {
        "name": name,
        "internal": found.is_internal,
        "topic_id": str(found.topic_id) if found.topic_id is not None else None,
        "replication_factor": found.replication_factor,
        "remote_storage": tiered,
        "partitions": parts,
        "messages": sum(p["messages"] or 0 for p in parts),
        "configs": configs,
        "configs_unsupported": configs_unsupported,
    }


async def topic_configs(admin: AdminClient, name: str) -> list[dict[str, Any]]:
    res = ConfigResource(ResourceType.TOPIC, name)
    found = (await admin.describe_configs([res]))[res]
    if isinstance(found, KafkaError):
        raise found
    return [
        {
            "name": e.name,
            "value": None if e.is_sensitive else e.value,
            "source": e.source.name,
            "overridden": e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG,
            "read_only": e.read_only,
            "sensitive": e.is_sensitive,
        }
        for e in sorted(found, key=lambda e: e.name)
    ]


async def alter_topic_configs(
    admin: AdminClient, name: str, set_: Mapping[str, str], delete: Sequence[str], validate_only: bool = False
) -> list[dict[str, Any]]:
    """IncrementalAlterConfigs: SET each of ``set_``, DELETE (back to the default) each of
    ``delete``; returns the topic's configs as described afterwards."""
    if not set_ and not delete:
        raise InvalidConfigError("no config to change")
    ops = [AlterConfigOp(k, AlterOp.SET, str(v)) for k, v in set_.items()]
    ops += [AlterConfigOp(k, AlterOp.DELETE) for k in delete]
    res = ConfigResource(ResourceType.TOPIC, name)
    err = (await admin.incremental_alter_configs({res: ops}, validate_only=validate_only))[res]
    if err is not None:
        raise err
    return await topic_configs(admin, name)


async def create_topic(
    admin: AdminClient, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
) -> dict[str, Any]:
    if not TOPIC_NAME.match(name) or name in (".", ".."):
        raise InvalidTopicError(
            f"'{name}' is not a valid topic name: use 1 to 249 letters, digits, '.', '_' or '-'"
        )
    err = (await admin.create_topics([NewTopic(name, partitions, replication_factor, dict(configs))]))[name]
    if err is not None:
        raise err
    # CreateTopics answers once the controller accepted it; wait (bounded) until metadata has it.
    for _ in range(50):
        meta = (await admin.topic_metadata([name]))[name]
        if not meta.error_code and meta.partitions and all(p.leader >= 0 for p in meta.partitions):
            break
        await asyncio.sleep(0.05)
    return {"created": name}


async def delete_topic(admin: AdminClient, name: str) -> dict[str, Any]:
    err = (await admin.delete_topics([name]))[name]
    if err is not None:
        raise err
    return {"deleted": name}


async def produce(
    producer: Producer,
    topic: str,
    value: bytes | None,
    key: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    partition: int | None,
) -> dict[str, Any]:
    md = await producer.send_and_wait(topic, value, key, headers=list(headers), partition=partition)
    return {"topic": md.topic, "partition": md.partition, "offset": md.offset, "timestamp": md.timestamp}


__all__ = [
    "alter_topic_configs",
    "create_topic",
    "delete_topic",
    "overview",
    "produce",
    "topic",
    "topic_configs",
    "topics",
]
