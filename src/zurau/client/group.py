"""Classic consumer-group membership: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
and committed offsets (OffsetCommit, OffsetFetch).

The member uses protocol type ``consumer`` with the ``range`` assignor, whose subscription and
assignment bytes follow Kafka's ``ConsumerProtocol`` (written at version 0; any later version is
read, its extra fields ignored)::

    Subscription = version int16 | topics [string] | user_data bytes | ...
    Assignment   = version int16 | [topic string | partitions [int32]] | user_data bytes | ...

Range assignment (Kafka's ``RangeAssignor``): per topic, the members subscribed to it sorted by
member id; with ``n`` partitions and ``c`` members, member ``i`` gets ``n // c`` consecutive
partitions plus one more if ``i < n % c``.

Invariants: :meth:`GroupMember.join` returns only after a successful SyncGroup, with the
heartbeat task running for that generation; ``needs_rejoin`` becomes true when a heartbeat learns
of a rebalance or that the generation is gone; :meth:`leave` stops the heartbeat and leaves, and
no task of the member is left running afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from zurau.client import typed_api
from zurau.client.cluster import Cluster
from zurau.client.coordinator_lookup import GROUP, find_coordinator
from zurau.client.errors import ClientError
from zurau.client.offset_requests import (
    OFFSET_COMMIT_MAX_VERSION,
    OFFSET_FETCH_MAX_VERSION,
    offset_commit_body,
    offset_fetch_answer,
    offset_fetch_body,
)
from zurau.client.typed_api import Call
from zurau.client.types import TopicPartition, partitions_by_topic
from zurau.protocol import consumer_protocol
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, for_code
from zurau.protocol.messages import (
    ConsumerProtocolAssignmentAssignedPartitions,
    JoinGroupRequestProtocols,
    JoinGroupResponseMembers,
    SyncGroupRequestAssignments,
)

log = logging.getLogger("zurau.client.group")

R = TypeVar("R")

GROUP_APIS = {ApiKey.FIND_COORDINATOR: "FindCoordinator", ApiKey.JOIN_GROUP: "JoinGroup",
              ApiKey.SYNC_GROUP: "SyncGroup", ApiKey.HEARTBEAT: "Heartbeat", ApiKey.LEAVE_GROUP: "LeaveGroup",
              ApiKey.OFFSET_COMMIT: "OffsetCommit", ApiKey.OFFSET_FETCH: "OffsetFetch"}  # fmt: skip

# Error codes
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
MEMBER_ID_REQUIRED = 79
_COORDINATOR_MOVED = {COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}


# ---------------------------------------------------------------------------- ConsumerProtocol
# The bytes are zurau.protocol.consumer_protocol's; these wrappers speak TopicPartition.
def encode_subscription(topics: Iterable[str], user_data: bytes | None = None) -> bytes:
    """A version 0 subscription of the distinct topics, sorted."""
    return consumer_protocol.encode_subscription({"topics": sorted(set(topics)), "user_data": user_data})


def decode_subscription(data: bytes) -> list[str]:
    """The topics of a subscription of any version (DecodeError, a ValueError, if malformed)."""
    return consumer_protocol.subscription_topics(data)


def encode_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    """A version 0 assignment: topics sorted, each topic's partitions sorted, no user data."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    assigned: list[ConsumerProtocolAssignmentAssignedPartitions] = [
        {"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())
    ]
    return consumer_protocol.encode_assignment({"assigned_partitions": assigned, "user_data": None})


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """The partitions of an assignment of any version, in their order; ``[]`` for no bytes."""
    if not data:
        return []
    assignment = consumer_protocol.decode_assignment(data)
    return [TopicPartition(t["topic"], p) for t in assignment["assigned_partitions"] for p in t["partitions"]]


def range_assign(
    subscriptions: Mapping[str, Sequence[str]], partition_counts: Mapping[str, int]
) -> dict[str, list[TopicPartition]]:
    """Kafka's RangeAssignor over ``{member_id: topics}`` and ``{topic: partition count}``."""
    result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    by_topic: dict[str, list[str]] = {}
    for member, topics in subscriptions.items():
        for t in set(topics):
            by_topic.setdefault(t, []).append(member)
    for topic, members in by_topic.items():
        n = partition_counts.get(topic, 0)
        if n <= 0:
            continue
        members.sort()
        per, extra = divmod(n, len(members))
        for i, m in enumerate(members):
            start = per * i + min(i, extra)
            count = per + (1 if i < extra else 0)
            result[m].extend(TopicPartition(topic, p) for p in range(start, start + count))
    return result


# ---------------------------------------------------------------------------- membership
def group_error(code: int, what: str) -> KafkaError:
    return for_code(code)(f"{what} failed: {for_code(code).__name__} (error {code})")


class GroupMember:
    """One member of a classic consumer group, subscribed to ``topics``.

    Subclasses speaking another embedded protocol (Kafka Connect's ``connect``) override
    ``PROTOCOL_TYPE``, :meth:`_protocols`, :meth:`_assign` and :meth:`_decode_assignment`.
    """

    PROTOCOL_TYPE = "consumer"

    def __init__(
        self,
        cluster: Cluster,
        group_id: str,
        *,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.topics: list[str] = []
        self.assignment: list[TopicPartition] = []
        self.needs_rejoin = True
        self._coordinator: int | None = None
        self._heartbeat: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ coordinator
    async def check_apis(self) -> None:
        """Raise UnsupportedApiError-like ClientError if the broker lacks a group API."""
        conn = await self.cluster.any_connection()
        missing = [name for key, name in GROUP_APIS.items() if not conn.supports(key)]
        if missing:
            raise ClientError(
                f"the broker does not serve {', '.join(missing)}: consumer groups are unavailable"
            )

    async def coordinator(self) -> int:
        """The group coordinator's node id (FindCoordinator, once until it moves)."""
        if self._coordinator is None:
            self._coordinator = await find_coordinator(
                self.cluster,
                self.group_id,
                GROUP,
                error=lambda key, code, _message: group_error(code, f"FindCoordinator for group '{key}'"),
                retry_backoff=self.retry_backoff,
            )
        return self._coordinator

    async def _call(self, call: Call[R], **kw: Any) -> R:
        """``call`` at the coordinator; a connection failure forgets the coordinator."""
        node = await self.coordinator()
        try:
            return await self.cluster.call(node, call, **kw)
        except ClientError:
            self._coordinator = None
            raise

    # ------------------------------------------------------------------ join
    async def join(self, topics: Sequence[str]) -> list[TopicPartition]:
        """(Re)join the group for ``topics``; returns this member's assignment."""
        await self.stop_heartbeat()
        self.topics = sorted(set(topics))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.rebalance_timeout_ms / 1000 + self.cluster.config.request_timeout
        while True:
            if loop.time() > deadline:
                raise ClientError(f"could not join group '{self.group_id}' in time")
            try:
                assignment = await self._join_once()
            except _Retry:
                await asyncio.sleep(self.retry_backoff)
                continue
            self.assignment = assignment
            self.needs_rejoin = False
            self._heartbeat = loop.create_task(
                self._heartbeat_loop(), name=f"zurau-heartbeat-{self.group_id}"
            )
            return assignment

    async def _join_once(self) -> list[TopicPartition]:
        conn_version = (await self.cluster.connection(await self.coordinator())).version
        version = conn_version(ApiKey.JOIN_GROUP)
        join = typed_api.JOIN_GROUP(
            {
                "group_id": self.group_id,
                "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": self.PROTOCOL_TYPE,
                "protocols": self._protocols(),
                "reason": None,
            }
        )
        timeout = self.rebalance_timeout_ms / 1000 + 5
        resp = await self._call(join, version=version, timeout=timeout)
        code = resp["error_code"]
        if code == MEMBER_ID_REQUIRED:
            self.member_id = resp["member_id"]
            raise _Retry
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self.member_id = ""
            raise _Retry
        if code in _COORDINATOR_MOVED:
            self._coordinator = None
            raise _Retry
        if code in (COORDINATOR_LOAD_IN_PROGRESS, REBALANCE_IN_PROGRESS):
            raise _Retry
        if code:
            raise group_error(code, f"JoinGroup of group '{self.group_id}'")
        self.generation_id = resp["generation_id"]
        self.member_id = resp["member_id"]
        self.protocol_name = resp.get("protocol_name") or "range"
        assignments: list[SyncGroupRequestAssignments] = []
        if resp["leader"] == self.member_id and not resp.get("skip_assignment"):
            assignments = await self._assign(resp["members"])
        sync_call = typed_api.SYNC_GROUP(
            {
                "group_id": self.group_id,
                "generation_id": self.generation_id,
                "member_id": self.member_id,
                "group_instance_id": None,
                "protocol_type": self.PROTOCOL_TYPE,
                "protocol_name": self.protocol_name,
                "assignments": assignments,
            }
        )
        sync = await self._call(sync_call, version=conn_version(ApiKey.SYNC_GROUP), timeout=timeout)
        code = sync["error_code"]
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self.member_id = "" if code == UNKNOWN_MEMBER_ID else self.member_id
            raise _Retry
        if code in _COORDINATOR_MOVED:
            self._coordinator = None
            raise _Retry
        if code == REBALANCE_IN_PROGRESS:
            raise _Retry
        if code:
            raise group_error(code, f"SyncGroup of group '{self.group_id}'")
        return self._decode_assignment(bytes(sync["assignment"] or b""))

    def _protocols(self) -> list[JoinGroupRequestProtocols]:
        """The JoinGroup protocols offered: ``range`` with this member's subscription."""
        return [{"name": "range", "metadata": encode_subscription(self.topics)}]

    def _decode_assignment(self, data: bytes) -> list[TopicPartition]:
        return decode_assignment(data)

    async def _assign(self, members: list[JoinGroupResponseMembers]) -> list[SyncGroupRequestAssignments]:
        subs: dict[str, list[str]] = {}
        for m in members:
            try:
                subs[m["member_id"]] = decode_subscription(bytes(m["metadata"]))
            except (ValueError, struct.error):
                log.warning("member %s sent an unreadable subscription", m["member_id"])
                subs[m["member_id"]] = []
        topics = sorted({t for ts in subs.values() for t in ts})
        md = await self.cluster.refresh_metadata(topics)
        counts = {
            t: len(md.topics[t].partitions) for t in topics if t in md.topics and not md.topics[t].error_code
        }
        plan = range_assign(subs, counts)
        return [{"member_id": m, "assignment": encode_assignment(tps)} for m, tps in plan.items()]

    # ------------------------------------------------------------------ heartbeat
    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            call = typed_api.HEARTBEAT(
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation_id,
                    "member_id": self.member_id,
                    "group_instance_id": None,
                }
            )
            try:
                resp = await self._call(call)
            except (ClientError, KafkaError) as e:
                log.debug("heartbeat failed: %s", e)
                continue
            code = resp["error_code"]
            if code == REBALANCE_IN_PROGRESS:
                self.needs_rejoin = True
            elif code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                if code == UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.needs_rejoin = True
                return
            elif code in _COORDINATOR_MOVED:
                self._coordinator = None
            elif code:
                log.warning("heartbeat of group %s: error %d", self.group_id, code)

    async def stop_heartbeat(self) -> None:
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def leave(self) -> None:
        """Stop heartbeating and leave the group (errors are logged, not raised)."""
        await self.stop_heartbeat()
        if not self.member_id or self._coordinator is None:
            return
        try:
            conn = await self.cluster.connection(self._coordinator)
            version = conn.version(ApiKey.LEAVE_GROUP)
            call = typed_api.LEAVE_GROUP(
                {
                    "group_id": self.group_id,
                    "member_id": self.member_id,
                    "members": [
                        {
                            "member_id": self.member_id,
                            "group_instance_id": None,
                            "reason": "the consumer is closing",
                        }
                    ],
                }
            )
            await conn.call(call, version=version, timeout=5)
        except (ClientError, KafkaError) as e:
            log.debug("LeaveGroup failed: %s", e)
        self.member_id = ""
        self.generation_id = -1

    # ------------------------------------------------------------------ offsets
    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``{tp: next offset to read}``; raises the first partition error."""
        if not offsets:
            return
        body = offset_commit_body(self.group_id, self.generation_id, self.member_id, offsets.items())
        resp = await self._call(typed_api.OFFSET_COMMIT(body), max_version=OFFSET_COMMIT_MAX_VERSION)
        for t in resp["topics"]:
            for p in t["partitions"]:
                code = p["error_code"]
                if code:
                    if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
                        self.needs_rejoin = True
                    if code in _COORDINATOR_MOVED:
                        self._coordinator = None
                    raise group_error(code, f"OffsetCommit of {t['name']}-{p['partition_index']}")

    async def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets of ``tps`` (partitions with none are left out)."""
        by_topic = partitions_by_topic(tps)
        if not by_topic:
            return {}
        node = await self.coordinator()
        conn = await self.cluster.connection(node)
        version = conn.version(ApiKey.OFFSET_FETCH, OFFSET_FETCH_MAX_VERSION)
        body = offset_fetch_body(version, self.group_id, by_topic)
        resp = await self._call(typed_api.OFFSET_FETCH(body), version=version)
        code, results = offset_fetch_answer(version, resp)
        if code:
            if code in _COORDINATOR_MOVED:
                self._coordinator = None
            raise group_error(code, f"OffsetFetch of group '{self.group_id}'")
        out: dict[TopicPartition, int] = {}
        for t in results:
            for p in t["partitions"]:
                if p["error_code"]:
                    raise group_error(p["error_code"], f"OffsetFetch of {t['name']}-{p['partition_index']}")
                if p["committed_offset"] >= 0:
                    out[TopicPartition(t["name"], p["partition_index"])] = p["committed_offset"]
        return out


class _Retry(Exception):
    """Internal: the join round must be started again."""
