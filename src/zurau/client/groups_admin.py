"""Consumer-group administration over the Kafka protocol: what ``kafka-consumer-groups.sh`` needs.

Every call speaks only standard Kafka APIs at the highest version both sides know (negotiated
through ApiVersions), so it works against Zurau and any Kafka-compatible cluster:

=================  ==========================================================================
method             APIs
=================  ==========================================================================
find_coordinators  FindCoordinator (every key in one request from v4, one request per key before)
list_groups        ListGroups to every broker (state filter from v4, type filter from v5)
describe_groups    DescribeGroups, then ConsumerGroupDescribe for groups that are not classic
committed_offsets  OffsetFetch (every committed partition, or some partitions)
commit_offsets     OffsetCommit as an admin: generation -1, empty member id
delete_groups      DeleteGroups
=================  ==========================================================================

Group calls go to each group's coordinator; an answer saying the coordinator moved or is loading
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) sends the call again
after a new FindCoordinator, until ``request.timeout.ms`` has passed.

Where a broker is too old for a filter (ListGroups before v4 has no states, before v5 no types),
the missing state or type is learnt by describing the groups, and the filter is applied here.

Classic assignments are decoded as Kafka's ``ConsumerProtocolAssignment`` (version int16, then
``[topic string, partitions [int32]]``, then user data) when the group's protocol type is
``consumer`` (or empty); any other protocol type (Kafka Connect, say) keeps its bytes opaque.

Batch calls return one result per group: the value, or the group's
:class:`~zurau.protocol.errors.KafkaError` with a one-line message in Kafka's wording.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from zurau.client import typed_api
from zurau.client.admin import AdminClient
from zurau.client.cluster import BrokerNode, Cluster
from zurau.client.coordinator_lookup import COORDINATOR_RETRY, GROUP, find_coordinators
from zurau.client.group import decode_assignment, decode_subscription
from zurau.client.offset_requests import (
    OFFSET_COMMIT_MAX_VERSION,
    OFFSET_FETCH_MAX_VERSION,
    offset_commit_body,
    offset_fetch_answer,
    offset_fetch_body,
)
from zurau.client.types import TopicPartition, partitions_by_topic
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    GroupIdNotFoundError,
    KafkaError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    for_code,
)
from zurau.protocol.messages import (
    ConsumerGroupDescribeResponseGroupsMembers,
    ConsumerGroupDescribeResponseGroupsMembersAssignment,
    DescribeGroupsResponseGroupsMembers,
)

T = TypeVar("T")

CLASSIC, CONSUMER = "classic", "consumer"
EMPTY, DEAD, STABLE = "Empty", "Dead", "Stable"

#: Group states by lower-case name (classic: the first five; KIP-848 consumer groups add two).
GROUP_STATES = {
    s.lower(): s
    for s in (
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
        "Empty",
        "Assigning",
        "Reconciling",
    )
}
GROUP_TYPES = (CLASSIC, CONSUMER)

# Kafka's default messages (org.apache.kafka.common.protocol.Errors) for the codes group calls meet.
KAFKA_MESSAGES = {
    14: "The coordinator is loading and hence can't process requests.",
    15: "The coordinator is not available.",
    16: "This is not the correct coordinator.",
    22: "Specified group generation id is not valid.",
    24: "The configured groupId is invalid.",
    25: "The coordinator is not aware of this member.",
    27: "The group is rebalancing, so a rejoin is needed.",
    30: "Group authorization failed.",
    35: "The version of API is not supported.",
    68: "The group is not empty.",
    69: "The group id does not exist.",
    86: "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.",
}


def group_error(code: int, message: str | None = None) -> KafkaError:
    """The error for ``code``, with ``message`` or Kafka's default message for it."""
    cls = for_code(code)
    return cls(message or KAFKA_MESSAGES.get(code) or f"{cls.__name__} (error {code})")


def _no_answer(group_id: str, who: str) -> KafkaError:
    return UnknownServerError(f"{who} sent no answer for group '{group_id}'")


def not_found(group_id: str) -> KafkaError:
    """GROUP_ID_NOT_FOUND in kafka-consumer-groups.sh's words."""
    return GroupIdNotFoundError(f"Consumer group '{group_id}' does not exist.")


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class GroupListing:
    """One ListGroups entry. ``state``/``group_type`` are None only if nobody could tell."""

    group_id: str
    protocol_type: str
    state: str | None
    group_type: str | None


@dataclass(frozen=True)
class MemberDescription:
    """A group member. ``assignment`` is what it owns now; KIP-848 members also have a target."""

    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...] = ()
    target_assignment: tuple[TopicPartition, ...] | None = None
    subscribed_topics: tuple[str, ...] = ()
    member_epoch: int | None = None
    assignment_error: str | None = None  # set when a classic assignment could not be decoded


@dataclass(frozen=True)
class GroupDescription:
    """A described group: ``group_type`` is ``classic`` or ``consumer`` (KIP-848)."""

    group_id: str
    group_type: str
    state: str
    protocol_type: str
    assignor: str  # classic: the chosen protocol (e.g. "range"); consumer: the server assignor
    coordinator: BrokerNode
    members: tuple[MemberDescription, ...] = ()
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def is_inactive(self) -> bool:
        """No member: offsets may be reset (Kafka accepts Empty and Dead)."""
        return self.state in (EMPTY, DEAD)


def _decode_classic_member(m: DescribeGroupsResponseGroupsMembers, protocol_type: str) -> MemberDescription:
    assignment: tuple[TopicPartition, ...] = ()
    topics: tuple[str, ...] = ()
    problem = None
    if protocol_type in (CONSUMER, ""):
        raw = bytes(m.get("member_assignment") or b"")
        try:
            assignment = tuple(sorted(decode_assignment(raw)))
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            problem = f"undecodable assignment ({len(raw)} bytes): {e}"
        meta = bytes(m.get("member_metadata") or b"")
        if meta:
            try:
                topics = tuple(decode_subscription(meta))
            except (ValueError, struct.error, UnicodeDecodeError):
                topics = ()
    return MemberDescription(
        member_id=m["member_id"],
        instance_id=m.get("group_instance_id"),
        client_id=m["client_id"],
        host=m["client_host"],
        assignment=assignment,
        subscribed_topics=topics,
        assignment_error=problem,
    )


def _partitions(
    assignment: ConsumerGroupDescribeResponseGroupsMembersAssignment | None,
) -> tuple[TopicPartition, ...]:
    """A ConsumerGroupDescribe member's (target) assignment as sorted topic-partitions."""
    if not assignment:
        return ()
    return tuple(
        sorted(
            TopicPartition(t["topic_name"], p)
            for t in assignment["topic_partitions"]
            for p in t["partitions"]
        )
    )


def _consumer_member(m: ConsumerGroupDescribeResponseGroupsMembers) -> MemberDescription:
    return MemberDescription(
        member_id=m["member_id"],
        instance_id=m.get("instance_id"),
        client_id=m["client_id"],
        host=m["client_host"],
        assignment=_partitions(m.get("assignment")),
        target_assignment=_partitions(m.get("target_assignment")),
        subscribed_topics=tuple(m.get("subscribed_topic_names") or ()),
        member_epoch=m.get("member_epoch"),
    )


# ---------------------------------------------------------------------------- the admin
class GroupAdmin:
    """Group operations on one cluster, sharing an :class:`AdminClient`'s connections."""

    def __init__(self, admin: AdminClient | Cluster, *, retry_backoff_ms: int = 100) -> None:
        self.admin = admin if isinstance(admin, AdminClient) else AdminClient(admin)
        self.cluster = self.admin.cluster
        self.retry_backoff = retry_backoff_ms / 1000

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.cluster.config.request_timeout

    # ------------------------------------------------------------------ coordinators
    async def find_coordinators(self, group_ids: Iterable[str]) -> dict[str, int | KafkaError]:
        """The coordinator's node id per group (retrying while coordinators are not available)."""
        return await find_coordinators(
            self.cluster,
            group_ids,
            GROUP,
            error=lambda _gid, code, message: group_error(code, message),
            retry_backoff=self.retry_backoff,
        )

    async def _at_coordinators(
        self,
        group_ids: Iterable[str],
        call: Callable[[int, list[str]], Awaitable[Mapping[str, T | KafkaError]]],
    ) -> dict[str, T | KafkaError]:
        """Run ``call(node, groups)`` once per coordinator; groups whose answer says the
        coordinator moved or is loading are sent again after a new FindCoordinator."""
        todo = list(dict.fromkeys(group_ids))
        out: dict[str, T | KafkaError] = {}
        deadline = self._deadline()
        loop = asyncio.get_running_loop()
        while todo:
            by_node: dict[int, list[str]] = {}
            for gid, found in (await self.find_coordinators(todo)).items():
                if isinstance(found, KafkaError):
                    out[gid] = found
                else:
                    by_node.setdefault(found, []).append(gid)
            nodes = list(by_node.items())
            answers = await asyncio.gather(*(call(node, ids) for node, ids in nodes))
            retry = []
            for (_, ids), answer in zip(nodes, answers, strict=True):
                for gid in ids:
                    result = answer[gid] if gid in answer else _no_answer(gid, "the coordinator")
                    if (
                        isinstance(result, KafkaError)
                        and result.code in COORDINATOR_RETRY
                        and loop.time() < deadline
                    ):
                        retry.append(gid)
                    else:
                        out[gid] = result
            todo = retry
            if todo:
                await asyncio.sleep(self.retry_backoff)
        return out

    def _node(self, node: int) -> BrokerNode:
        return self.cluster.metadata.brokers.get(node) or BrokerNode(node, "", -1)

    # ------------------------------------------------------------------ list
    async def list_groups(self, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[GroupListing]:
        """Every group of the cluster (ListGroups to each broker), sorted by id.

        ``states`` (e.g. ``Stable``) and ``types`` (``classic``, ``consumer``) filter the answer;
        an empty filter matches everything.
        """
        md = await self.cluster.refresh_metadata([])
        states = [GROUP_STATES.get(s.lower(), s) for s in states]
        types = [t.lower() for t in types]

        async def one(node: int) -> list[GroupListing]:
            deadline = self._deadline()
            while True:
                conn = await self.cluster.connection(node)
                version = conn.version(ApiKey.LIST_GROUPS)
                call = typed_api.LIST_GROUPS(
                    {
                        "states_filter": list(states) if version >= 4 else [],
                        "types_filter": list(types) if version >= 5 else [],
                    }
                )
                resp = await conn.call(call, version=version)
                code = resp["error_code"]
                if code in COORDINATOR_RETRY and asyncio.get_running_loop().time() < deadline:
                    await asyncio.sleep(self.retry_backoff)
                    continue
                if code:
                    raise group_error(code, f"ListGroups on broker {node}: {KAFKA_MESSAGES.get(code, code)}")
                return [
                    GroupListing(
                        group_id=g["group_id"],
                        protocol_type=g["protocol_type"],
                        state=g.get("group_state") if version >= 4 else None,
                        group_type=((g.get("group_type") or "").lower() or None) if version >= 5 else None,
                    )
                    for g in resp["groups"]
                ]

        found: dict[str, GroupListing] = {}
        for listing in await asyncio.gather(*(one(n) for n in sorted(md.brokers))):
            for g in listing:
                found.setdefault(g.group_id, g)
        unknown = [g.group_id for g in found.values() if g.state is None or g.group_type is None]
        if unknown:
            described = await self.describe_groups(unknown)
            for gid in unknown:
                d = described.get(gid)
                old = found[gid]
                if isinstance(d, GroupDescription):
                    found[gid] = GroupListing(gid, old.protocol_type, d.state, d.group_type)
                else:
                    del found[gid]  # gone since it was listed (or not describable)
        out = []
        for g in sorted(found.values(), key=lambda g: g.group_id):
            if states and (g.state or "").lower() not in {s.lower() for s in states}:
                continue
            if types and (g.group_type or "") not in types:
                continue
            out.append(g)
        return out

    # ------------------------------------------------------------------ describe
    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription | KafkaError]:
        """Describe groups: DescribeGroups first (every broker serves it), then
        ConsumerGroupDescribe (where served) for the groups that are not classic groups (Kafka
        answers GROUP_ID_NOT_FOUND, or the state Dead before v6, for those). Groups neither
        knows get GROUP_ID_NOT_FOUND."""

        async def call(node: int, ids: list[str]) -> dict[str, GroupDescription | KafkaError]:
            conn = await self.cluster.connection(node)
            out: dict[str, GroupDescription | KafkaError] = {}
            others: list[str] = []  # not classic groups: KIP-848 groups, or no group at all
            resp = await conn.call(
                typed_api.DESCRIBE_GROUPS({"groups": ids, "include_authorized_operations": False})
            )
            for g in resp["groups"]:
                gid, code = g["group_id"], g["error_code"]
                if code == GroupIdNotFoundError.code or (not code and g["group_state"] == DEAD):
                    others.append(gid)
                elif code:
                    out[gid] = group_error(code, g.get("error_message"))
                else:
                    ptype = g["protocol_type"]
                    out[gid] = GroupDescription(
                        group_id=gid,
                        group_type=CLASSIC,
                        state=g["group_state"],
                        protocol_type=ptype,
                        assignor=g["protocol_data"],
                        coordinator=self._node(node),
                        members=tuple(_decode_classic_member(m, ptype) for m in g["members"]),
                    )
            if others and conn.supports(ApiKey.CONSUMER_GROUP_DESCRIBE):
                described = await conn.call(
                    typed_api.CONSUMER_GROUP_DESCRIBE({"group_ids": others, "include_authorized_operations": False})
                )
                for cg in described["groups"]:
                    gid, code = cg["group_id"], cg["error_code"]
                    if code in (GroupIdNotFoundError.code, UnsupportedVersionError.code):
                        continue
                    if code:
                        out[gid] = group_error(code, cg.get("error_message"))
                        continue
                    out[gid] = GroupDescription(
                        group_id=gid,
                        group_type=CONSUMER,
                        state=cg["group_state"],
                        protocol_type=CONSUMER,
                        assignor=cg["assignor_name"],
                        coordinator=self._node(node),
                        members=tuple(_consumer_member(m) for m in cg["members"]),
                        group_epoch=cg["group_epoch"],
                        assignment_epoch=cg["assignment_epoch"],
                    )
            for gid in others:
                out.setdefault(gid, not_found(gid))
            return out

        return await self._at_coordinators(group_ids, call)

    # ------------------------------------------------------------------ offsets
    async def committed_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets (all of them when ``partitions`` is None); partitions
        without a committed offset are left out. Raises the group's error."""
        by_topic = None if partitions is None else partitions_by_topic(partitions)
        if by_topic is not None and not by_topic:
            return {}

        async def call(node: int, ids: list[str]) -> dict[str, dict[TopicPartition, int] | KafkaError]:
            conn = await self.cluster.connection(node)
            version = conn.version(ApiKey.OFFSET_FETCH, OFFSET_FETCH_MAX_VERSION, min_version=2)
            body = offset_fetch_body(version, group_id, by_topic)
            resp = await conn.call(typed_api.OFFSET_FETCH(body), version=version)
            code, results = offset_fetch_answer(version, resp)
            if code:
                return {group_id: not_found(group_id) if code == 69 else group_error(code)}
            out: dict[TopicPartition, int] = {}
            for t in results:
                for p in t["partitions"]:
                    pcode = p["error_code"]
                    if pcode in COORDINATOR_RETRY:
                        return {group_id: group_error(pcode)}
                    if pcode == UnknownTopicOrPartitionError.code:
                        continue
                    if pcode:
                        return {group_id: group_error(pcode)}
                    if p["committed_offset"] >= 0:
                        out[TopicPartition(t["name"], p["partition_index"])] = p["committed_offset"]
            return {group_id: out}

        result = (await self._at_coordinators([group_id], call))[group_id]
        if isinstance(result, KafkaError):
            raise result
        return result

    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, KafkaError | None]:
        """Commit ``offsets`` as an admin tool does (generation -1, no member id): the group
        must have no members. One result per partition."""
        if not offsets:
            return {}
        commit = typed_api.OFFSET_COMMIT(offset_commit_body(group_id, -1, "", sorted(offsets.items())))

        async def call(
            node: int, ids: list[str]
        ) -> dict[str, dict[TopicPartition, KafkaError | None] | KafkaError]:
            conn = await self.cluster.connection(node)
            version = conn.version(ApiKey.OFFSET_COMMIT, OFFSET_COMMIT_MAX_VERSION)
            resp = await conn.call(commit, version=version)
            out: dict[TopicPartition, KafkaError | None] = {}
            for t in resp["topics"]:
                for p in t["partitions"]:
                    code = p["error_code"]
                    if code in COORDINATOR_RETRY:
                        return {group_id: group_error(code)}
                    out[TopicPartition(t["name"], p["partition_index"])] = group_error(code) if code else None
            return {group_id: out}

        result = (await self._at_coordinators([group_id], call))[group_id]
        if isinstance(result, KafkaError):
            return dict.fromkeys(offsets, result)
        return result

    # ------------------------------------------------------------------ delete
    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, KafkaError | None]:
        """Delete empty groups and their offsets: None per deleted group, else its error
        (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND ...) with Kafka's message."""

        async def call(node: int, ids: list[str]) -> dict[str, KafkaError | None]:
            resp = await self.cluster.call(node, typed_api.DELETE_GROUPS({"groups_names": ids}))
            return {
                r["group_id"]: group_error(r["error_code"]) if r["error_code"] else None
                for r in resp["results"]
            }

        return await self._at_coordinators(group_ids, call)


__all__ = [
    "CLASSIC",
    "CONSUMER",
    "DEAD",
    "EMPTY",
    "GROUP_STATES",
    "GROUP_TYPES",
    "GroupAdmin",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "group_error",
    "not_found",
]
