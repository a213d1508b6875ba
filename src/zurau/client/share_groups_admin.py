"""Share-group administration over the Kafka protocol: what ``kafka-share-groups.sh`` needs
(KIP-932), on the same coordinator plumbing as :class:`~zurau.client.groups_admin.GroupAdmin`.

=========================  ======================================================================
method                     APIs
=========================  ======================================================================
list_share_groups          ListGroups with the type filter ``share`` (v5+), to every broker
describe_share_groups      ShareGroupDescribe
list_offsets               DescribeShareGroupOffsets (start offset, leader epoch, lag from v1)
alter_offsets              AlterShareGroupOffsets (the group must be empty; created if missing)
delete_offsets             DeleteShareGroupOffsets (whole topics)
delete_share_groups        DeleteGroups
=========================  ======================================================================

Group calls go to each group's coordinator and are sent again after a new FindCoordinator when
the answer says the coordinator moved or is loading, until ``request.timeout.ms`` has passed.
Errors come back as :class:`~zurau.protocol.errors.KafkaError` values with Kafka's wording.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zurau.client import typed_api
from zurau.client.admin import AdminClient
from zurau.client.cluster import BrokerNode, Cluster
from zurau.client.coordinator_lookup import COORDINATOR_RETRY
from zurau.client.groups_admin import GroupAdmin, GroupListing, MemberDescription, group_error
from zurau.client.types import TopicPartition, partitions_by_topic
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import GroupIdNotFoundError, KafkaError, UnsupportedVersionError
from zurau.protocol.messages import (
    AlterShareGroupOffsetsRequestTopics,
    AlterShareGroupOffsetsRequestTopicsPartitions,
    DescribeShareGroupOffsetsRequestGroupsTopics,
)

SHARE = "share"
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")


@dataclass(frozen=True)
class ShareGroupDescription:
    """A described share group (ShareGroupDescribe)."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: BrokerNode
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True)
class SharePartitionOffset:
    """A share partition's start offset (None: the group has no state for it), the leader epoch
    that wrote it and its lag (None: unknown, or a broker before DescribeShareGroupOffsets v1)."""

    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def _member(m: Mapping[str, Any]) -> MemberDescription:
    tps = tuple(
        sorted(
            TopicPartition(t["topic_name"], p)
            for t in (m.get("assignment") or {}).get("topic_partitions", [])
            for p in t["partitions"]
        )
    )
    return MemberDescription(
        member_id=m["member_id"],
        instance_id=None,
        client_id=m["client_id"],
        host=m["client_host"],
        assignment=tps,
        subscribed_topics=tuple(m.get("subscribed_topic_names") or ()),
        member_epoch=m.get("member_epoch"),
    )


class ShareGroupAdmin:
    """Share-group operations on one cluster, sharing an :class:`AdminClient`'s connections."""

    def __init__(self, admin: AdminClient | Cluster, *, retry_backoff_ms: int = 100) -> None:
        self.groups = GroupAdmin(admin, retry_backoff_ms=retry_backoff_ms)
        self.admin = self.groups.admin
        self.cluster = self.groups.cluster

    # ------------------------------------------------------------------ list
    async def list_share_groups(self, states: Sequence[str] = ()) -> list[GroupListing]:
        """The cluster's share groups (optionally only those in ``states``), sorted by id."""
        return await self.groups.list_groups(states, [SHARE])

    # ------------------------------------------------------------------ describe
    async def describe_share_groups(
        self, group_ids: Iterable[str]
    ) -> dict[str, ShareGroupDescription | KafkaError]:
        """ShareGroupDescribe at each group's coordinator; an unknown id (or one of another group
        type) is GROUP_ID_NOT_FOUND, a broker without share groups UNSUPPORTED_VERSION."""

        async def call(node: int, ids: list[str]) -> dict[str, ShareGroupDescription | KafkaError]:
            conn = await self.cluster.connection(node)
            if not conn.supports(ApiKey.SHARE_GROUP_DESCRIBE):
                return dict.fromkeys(ids, _unsupported("ShareGroupDescribe"))
            resp = await conn.call(
                typed_api.SHARE_GROUP_DESCRIBE({"group_ids": ids, "include_authorized_operations": False})
            )
            out: dict[str, ShareGroupDescription | KafkaError] = {}
            for g in resp["groups"]:
                gid, code = g["group_id"], g["error_code"]
                if code == GroupIdNotFoundError.code:
                    out[gid] = GroupIdNotFoundError(f"Share group '{gid}' does not exist.")
                elif code:
                    out[gid] = group_error(code, g.get("error_message"))
                else:
                    out[gid] = ShareGroupDescription(
                        group_id=gid,
                        state=g["group_state"],
                        group_epoch=g["group_epoch"],
                        assignment_epoch=g["assignment_epoch"],
                        assignor=g["assignor_name"],
                        coordinator=self.groups._node(node),
                        members=tuple(_member(m) for m in g["members"]),
                    )
            return out

        return await self.groups._at_coordinators(group_ids, call)

    # ------------------------------------------------------------------ offsets
    async def list_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, SharePartitionOffset | KafkaError]:
        """DescribeShareGroupOffsets: every share partition the group has state for (None), or
        the given ones. Raises the group's error."""
        by_topic = None if partitions is None else partitions_by_topic(partitions)
        topics: list[DescribeShareGroupOffsetsRequestGroupsTopics] | None = None
        if by_topic is not None:
            topics = [{"topic_name": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]

        async def call(
            node: int, ids: list[str]
        ) -> dict[str, dict[TopicPartition, SharePartitionOffset | KafkaError] | KafkaError]:
            conn = await self.cluster.connection(node)
            if not conn.supports(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS):
                return {group_id: _unsupported("DescribeShareGroupOffsets")}
            version = conn.version(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
            resp = await conn.call(
                typed_api.DESCRIBE_SHARE_GROUP_OFFSETS(
                    {"groups": [{"group_id": group_id, "topics": topics}]}
                ),
                version=version,
            )
            (g,) = resp["groups"]
            if g["error_code"]:
                return {group_id: group_error(g["error_code"], g.get("error_message"))}
            out: dict[TopicPartition, SharePartitionOffset | KafkaError] = {}
            for t in g["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["topic_name"], p["partition_index"])
                    if p["error_code"] in COORDINATOR_RETRY:
                        return {group_id: group_error(p["error_code"])}
                    if p["error_code"]:
                        out[tp] = group_error(p["error_code"], p.get("error_message"))
                        continue
                    start = p["start_offset"]
                    lag = p.get("lag", -1) if version >= 1 else -1
                    out[tp] = SharePartitionOffset(
                        start if start >= 0 else None,
                        p["leader_epoch"] if start >= 0 else None,
                        lag if lag >= 0 else None,
                    )
            return {group_id: out}

        result = (await self.groups._at_coordinators([group_id], call))[group_id]
        if isinstance(result, KafkaError):
            raise result
        return result

    async def alter_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, KafkaError | None]:
        """AlterShareGroupOffsets: the new start offset per partition (the group must have no
        members; it is created if it does not exist). One result per partition."""
        if not offsets:
            return {}
        by_topic: dict[str, list[AlterShareGroupOffsetsRequestTopicsPartitions]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "start_offset": offset}
            )
        body = typed_api.ALTER_SHARE_GROUP_OFFSETS(
            {
                "group_id": group_id,
                "topics": [
                    AlterShareGroupOffsetsRequestTopics(topic_name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
            }
        )

        async def call(
            node: int, ids: list[str]
        ) -> dict[str, dict[TopicPartition, KafkaError | None] | KafkaError]:
            conn = await self.cluster.connection(node)
            if not conn.supports(ApiKey.ALTER_SHARE_GROUP_OFFSETS):
                return {group_id: _unsupported("AlterShareGroupOffsets")}
            resp = await conn.call(body)
            if resp["error_code"]:
                return {group_id: group_error(resp["error_code"], resp.get("error_message"))}
            out: dict[TopicPartition, KafkaError | None] = {}
            for t in resp["responses"]:
                for p in t["partitions"]:
                    code = p["error_code"]
                    out[TopicPartition(t["topic_name"], p["partition_index"])] = (
                        group_error(code, p.get("error_message")) if code else None
                    )
            return {group_id: out}

        result = (await self.groups._at_coordinators([group_id], call))[group_id]
        if isinstance(result, KafkaError):
            return dict.fromkeys(offsets, result)
        return {tp: result.get(tp) for tp in offsets}

    async def delete_offsets(self, group_id: str, topics: Iterable[str]) -> dict[str, KafkaError | None]:
        """DeleteShareGroupOffsets: the group's state for whole topics (the group must exist and
        have no members). One result per topic; raises a group-level error (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP, GROUP_AUTHORIZATION_FAILED ...)."""
        names = list(dict.fromkeys(topics))
        body = typed_api.DELETE_SHARE_GROUP_OFFSETS(
            {"group_id": group_id, "topics": [{"topic_name": n} for n in names]}
        )

        async def call(node: int, ids: list[str]) -> dict[str, dict[str, KafkaError | None] | KafkaError]:
            conn = await self.cluster.connection(node)
            if not conn.supports(ApiKey.DELETE_SHARE_GROUP_OFFSETS):
                return {group_id: _unsupported("DeleteShareGroupOffsets")}
            resp = await conn.call(body)
            if resp["error_code"]:
                return {group_id: group_error(resp["error_code"], resp.get("error_message"))}
            return {
                group_id: {
                    t["topic_name"]: group_error(t["error_code"], t.get("error_message"))
                    if t["error_code"]
                    else None
                    for t in resp["responses"]
                }
            }

        result = (await self.groups._at_coordinators([group_id], call))[group_id]
        if isinstance(result, KafkaError):
            raise result
        return {n: result.get(n) for n in names}

    # ------------------------------------------------------------------ delete
    async def delete_share_groups(self, group_ids: Iterable[str]) -> dict[str, KafkaError | None]:
        """DeleteGroups: the broker deletes an empty share group with its share-partition state."""
        return await self.groups.delete_groups(group_ids)


def _unsupported(api: str) -> KafkaError:
    return UnsupportedVersionError(
        f"The broker does not serve {api} (share groups need group.share.enable=true, Kafka 4.1+)."
    )


__all__ = ["SHARE", "SHARE_GROUP_STATES", "ShareGroupAdmin", "ShareGroupDescription", "SharePartitionOffset"]
