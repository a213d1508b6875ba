"""The two tiers of a tiered topic's partitions (KIP-405), as operators see them in ``zurau topics
describe`` and the console.

For each partition with a leader, asked of that leader:

* ``local_log_start_offset``: ListOffsets ``EARLIEST_LOCAL_TIMESTAMP`` (-4, v8+), the first offset
  still on the leader's disk. Records in ``[log_start_offset, local_log_start_offset)`` are in
  remote storage only (the log start offset, ListOffsets -2, is the start of both tiers);
* ``highest_offset_in_remote``: ListOffsets ``LATEST_TIERED_TIMESTAMP`` (-5, v9+), the last offset
  copied to remote storage, -1 when nothing is tiered yet;
* ``local_size``: the bytes of the leader's replica (DescribeLogDirs), i.e. of the local tier.

A value the cluster cannot give (a broker too old for the ListOffsets version, an error for that
partition, no answer) is -1; one partition's failure never hides the others.

The size of the remote tier has no Kafka API (Kafka exposes it as the broker metric
``RemoteLogSizeBytes`` only); it is on each leader's ``/metrics`` as
``kafka_server_brokertopicmetrics_remotelogsizebytes{topic,partition}`` (:data:`REMOTE_SIZE_METRIC`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from zurau.client.admin import EARLIEST_LOCAL, LATEST_TIERED, AdminClient, OffsetInfo, TopicDescription
from zurau.client.errors import ClientError
from zurau.client.types import TopicPartition
from zurau.protocol.errors import KafkaError

#: The topic config that makes a topic tiered.
REMOTE_STORAGE_ENABLE = "remote.storage.enable"
#: Where the remote tier's size is (see the module docstring).
REMOTE_SIZE_METRIC = "kafka_server_brokertopicmetrics_remotelogsizebytes"


@dataclass(frozen=True, slots=True)
class TieredPartition:
    """One partition's tiers (-1: unknown; ``highest_offset_in_remote`` -1 also: nothing tiered)."""

    local_log_start_offset: int = -1
    highest_offset_in_remote: int = -1
    local_size: int = -1


UNKNOWN = TieredPartition()


def remote_storage_enabled(configs: Mapping[str, str | None]) -> bool:
    """The topic's ``remote.storage.enable`` (its described configs by name) is true."""
    return (configs.get(REMOTE_STORAGE_ENABLE) or "").strip().lower() == "true"


async def _offsets(admin: AdminClient, tps: list[TopicPartition], spec: int) -> dict[TopicPartition, int]:
    try:
        found = await admin.list_offsets(dict.fromkeys(tps, spec))
    except (KafkaError, ClientError):  # e.g. a broker whose ListOffsets predates KIP-405
        return {}
    return {tp: r.offset for tp, r in found.items() if isinstance(r, OffsetInfo)}


async def _leader_sizes(
    admin: AdminClient, leaders: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    try:
        dirs = await admin.describe_log_dirs(sorted(set(leaders.values())))
    except (KafkaError, ClientError):
        return {}
    out: dict[TopicPartition, int] = {}
    for tp, leader in leaders.items():
        found = dirs.get(leader)
        if not isinstance(found, list):
            continue
        for d in found:
            size = d.replica_sizes.get(tp)
            if size is not None:  # in one log dir (a replica moving between dirs: the first)
                out[tp] = size
                break
    return out


async def describe_tiered_partitions(
    admin: AdminClient, topics: Iterable[TopicDescription]
) -> dict[TopicPartition, TieredPartition]:
    """The tiers of every partition of ``topics`` (tiered topics; see the module docstring).
    A partition without a leader is :data:`UNKNOWN`."""
    leaders = {TopicPartition(t.name, p.partition): p.leader for t in topics for p in t.partitions}
    led = {tp: leader for tp, leader in leaders.items() if leader >= 0}
    if not led:
        return dict.fromkeys(leaders, UNKNOWN)
    tps = list(led)
    local, remote, sizes = await asyncio.gather(
        _offsets(admin, tps, EARLIEST_LOCAL), _offsets(admin, tps, LATEST_TIERED), _leader_sizes(admin, led)
    )
    return {
        tp: TieredPartition(local.get(tp, -1), remote.get(tp, -1), sizes.get(tp, -1))
        if tp in led
        else UNKNOWN
        for tp in leaders
    }


__all__ = [
    "REMOTE_SIZE_METRIC",
    "REMOTE_STORAGE_ENABLE",
    "UNKNOWN",
    "TieredPartition",
    "describe_tiered_partitions",
    "remote_storage_enabled",
]
