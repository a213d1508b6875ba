"""The group coordinator's service face: one async method per Kafka group API.

Handlers see the group coordinator only through :class:`GroupCoordinatorService` (Kafka's
``GroupCoordinator`` interface, implemented by its ``GroupCoordinatorService`` over the
``CoordinatorRuntime``). :class:`RuntimeGroupCoordinatorService` implements it over a
:class:`~zurau.coordinator.group.group_runtime.GroupCoordinatorRuntime`: each write API is one
operation submitted to the shard of the group's ``__consumer_offsets`` partition (answered once
its records are committed); the read APIs read the state machine's committed state directly.

Invariants:

* Handlers keep authorisation and response shaping; the service takes the request's values and
  returns result objects or error codes, never raises a Kafka error for a coordinator problem:
  NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS etc. come back as the result's error code (the
  same fallback the handlers built before this face existed).
* The routing questions (``partition_for``, ``coordinator_error``, ``lookup_error``,
  ``topic_error``) are the runtime's, unchanged: FindCoordinator and the handlers' pre-checks ask
  them before calling an API method.
* Share-partition state initialization (KIP-932, Kafka 4.1+'s ``GroupCoordinatorService``): a
  ShareGroupHeartbeat whose result lists partitions in ``to_initialize`` is answered at once; in
  the background, the share coordinator initializes their state through the
  :class:`ShareStateInitializer` wired in by the app (InitializeShareGroupState, start offset -1,
  state epoch ``initialize_epoch``). The partitions it initialized are reported with
  :meth:`RuntimeGroupCoordinatorService.share_group_initialized` (a later heartbeat assigns
  them), the others with :meth:`~RuntimeGroupCoordinatorService.share_group_uninitialized` (a
  later heartbeat asks again). A request that never answers leaves them initializing: the
  heartbeat asks again once ``group.share.initialize.retry.interval.ms`` has passed. The group
  coordinator never imports the share coordinator: it sees it only through that Protocol.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from zurau.coordinator.group.group_runtime import GroupCoordinatorRuntime
from zurau.coordinator.group.results import (
    ConsumerGroupHeartbeatResult,
    DescribedGroup,
    Effects,
    JoinGroupResult,
    LeaveGroupResult,
    ListedGroup,
    OffsetCommitEntry,
    OffsetFetchResult,
    SyncGroupResult,
)
from zurau.coordinator.group.share_group import ShareGroupHeartbeatResult
from zurau.coordinator.group.share_group_offsets import (
    AlterShareGroupOffsetsResult,
    DeleteShareGroupOffsetsResult,
)
from zurau.protocol.errors import CoordinatorNotAvailableError, KafkaError
from zurau.protocol.messages import (
    ConsumerGroupDescribeResponseGroups,
    ConsumerGroupHeartbeatRequestTopicPartitions,
)
from zurau.types import ZERO_UUID, TopicPartitionKey

log = logging.getLogger("zurau.coordinator")


class ShareStatePersister(Protocol):
    """The share coordinator as the group coordinator needs it (Kafka's ``Persister``: state
    initialization for heartbeats and AlterShareGroupOffsets, summaries for
    DescribeShareGroupOffsets, deletion for DeleteShareGroupOffsets and DeleteGroups). Never
    raises for an unreachable or failing share coordinator: those partitions carry its error."""

    async def initialize_state(
        self, group_id: str, state_epoch: int, topics: Mapping[uuid.UUID, Iterable[int]]
    ) -> dict[uuid.UUID, dict[int, int]]:
        """InitializeShareGroupState for these share-partitions (start offset -1): an error code
        per requested partition (0: its state is initialized)."""
        ...

    async def initialize_offsets(
        self, group_id: str, state_epoch: int, offsets: Mapping[uuid.UUID, Mapping[int, int]]
    ) -> dict[uuid.UUID, dict[int, int]]:
        """InitializeShareGroupState with a start offset per partition: an error code each."""
        ...

    async def read_state_summary(
        self, group_id: str, items: Mapping[tuple[uuid.UUID, int], dict[str, Any]]
    ) -> dict[tuple[uuid.UUID, int], dict[str, Any]]:
        """ReadShareGroupStateSummary: the response partition per (topic id, partition)."""
        ...

    async def delete_state(
        self, group_id: str, items: Mapping[tuple[uuid.UUID, int], dict[str, Any]]
    ) -> dict[tuple[uuid.UUID, int], dict[str, Any]]:
        """DeleteShareGroupState: the response partition (``error_code``) per key."""
        ...


ShareStateInitializer = ShareStatePersister  # the name of its first use (heartbeat initialization)


class PartitionMetadataClient(Protocol):
    """The partitions' latest offsets (high watermarks), for a share partition's lag (Kafka's
    ``PartitionMetadataClient``)."""

    async def latest_offsets(
        self, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], int | KafkaError]: ...


class GroupCoordinatorService(Protocol):
    """What the broker's handlers may ask of the group coordinator."""

    # ------------------------------------------------------------------ routing
    @property
    def topic(self) -> str: ...

    def partition_for(self, group_id: str) -> int: ...

    def coordinator_error(self, group_id: str) -> KafkaError | None:
        """None if this broker coordinates ``group_id`` now (creating ``__consumer_offsets`` on first use)."""
        ...

    def lookup_error(self, group_id: str) -> KafkaError | None:
        """:meth:`coordinator_error` as FindCoordinator needs it."""
        ...

    def topic_error(self) -> KafkaError | None:
        """None once ``__consumer_offsets`` exists (created on first use)."""
        ...

    def ensure_offsets_topic(self) -> Any:
        """Create ``__consumer_offsets`` with the coordinator's settings; its metadata."""
        ...

    # ------------------------------------------------------------------ classic groups
    async def join_group(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        api_version: int,
    ) -> JoinGroupResult: ...

    async def sync_group(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncGroupResult: ...

    async def heartbeat(
        self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """The heartbeat's error code."""
        ...

    async def leave_group(
        self, *, group_id: str, members: list[tuple[str, str | None]]
    ) -> LeaveGroupResult: ...

    # ------------------------------------------------------------------ offsets
    async def offset_commit(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: list[OffsetCommitEntry],
        retention_ms: int,
        api_version: int,
    ) -> dict[TopicPartitionKey, int]:
        """An error code per committed partition."""
        ...

    async def offset_fetch(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
        require_stable: bool = False,
    ) -> OffsetFetchResult: ...

    async def offset_delete(
        self, *, group_id: str, partitions: list[TopicPartitionKey]
    ) -> tuple[int, dict[TopicPartitionKey, int]]:
        """(group error code, error code per partition)."""
        ...

    async def txn_offset_commit(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: list[OffsetCommitEntry],
    ) -> dict[TopicPartitionKey, int]:
        """An error code per partition of the transactional commit."""
        ...

    # ------------------------------------------------------------------ admin
    async def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> tuple[int, list[ListedGroup]]:
        """(error code, groups of the partitions served here)."""
        ...

    async def describe_groups(self, group_ids: Sequence[str]) -> list[DescribedGroup]: ...

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """An error code per group id."""
        ...

    # ------------------------------------------------------------------ KIP-848 consumer groups
    async def consumer_group_heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: list[str] | None,
        subscribed_topic_regex: str | None,
        server_assignor: str | None,
        owned: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None,
        client_id: str,
        client_host: str,
        api_version: int,
    ) -> ConsumerGroupHeartbeatResult: ...

    async def consumer_group_describe(
        self, group_ids: Sequence[str]
    ) -> list[ConsumerGroupDescribeResponseGroups]: ...

    # ------------------------------------------------------------------ KIP-932 share groups
    async def share_group_heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: list[str] | None,
        client_id: str,
        client_host: str,
    ) -> ShareGroupHeartbeatResult:
        """``to_initialize`` of the result: share partitions whose state the share coordinator
        must initialize (done in the background; they stay unassigned until it reports them
        initialized)."""
        ...

    async def share_group_describe(self, group_ids: Sequence[str]) -> list[dict[str, Any]]:
        """ShareGroupDescribe's group entries (``authorized_operations`` is the handler's)."""
        ...

    async def describe_share_group_offsets(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> dict[str, Any]:
        """A DescribeShareGroupOffsets response group (topics None: every initialized one)."""
        ...

    async def alter_share_group_offsets(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> dict[str, Any]:
        """AlterShareGroupOffsets' ``error_code``, ``error_message`` and ``responses``."""
        ...

    async def delete_share_group_offsets(self, group_id: str, topic_names: Sequence[str]) -> dict[str, Any]:
        """DeleteShareGroupOffsets' ``error_code``, ``error_message`` and ``responses``."""
        ...


class RuntimeGroupCoordinatorService:
    """:class:`GroupCoordinatorService` over the group coordinator runtime (Kafka's
    ``GroupCoordinatorService`` over its ``CoordinatorRuntime``)."""

    def __init__(
        self,
        runtime: GroupCoordinatorRuntime,
        share_state: ShareStatePersister | None = None,
        partition_metadata: PartitionMetadataClient | None = None,
    ) -> None:
        """``share_state``: where share-partition state is kept (None: nowhere, so share members
        stay unassigned and share-group offsets cannot be read or altered);
        ``partition_metadata``: where latest offsets come from (None: lag unknown, -1)."""
        self.runtime = runtime
        self.share_state = share_state
        self.partition_metadata = partition_metadata
        self._initializing: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ routing
    @property
    def topic(self) -> str:
        return self.runtime.topic

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    def coordinator_error(self, group_id: str) -> KafkaError | None:
        return self.runtime.coordinator_error(group_id)

    def lookup_error(self, group_id: str) -> KafkaError | None:
        return self.runtime.lookup_error(group_id)

    def topic_error(self) -> KafkaError | None:
        return self.runtime.topic_error()

    def ensure_offsets_topic(self) -> Any:
        return self.runtime.ensure_offsets_topic()

    # ------------------------------------------------------------------ classic groups
    async def join_group(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        api_version: int,
    ) -> JoinGroupResult:
        rt = self.runtime
        result: JoinGroupResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.join_group(
                token,
                group_id=group_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocols=protocols,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                client_id=client_id,
                client_host=client_host,
                require_known_member_id=require_known_member_id,
                api_version=api_version,
                now_ms=now,
            ),
            lambda e: JoinGroupResult(e.code, member_id=member_id),
        )
        return result

    async def sync_group(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncGroupResult:
        rt = self.runtime
        result: SyncGroupResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.sync_group(
                token,
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
                now_ms=now,
            ),
            lambda e: SyncGroupResult(e.code),
        )
        return result

    async def heartbeat(
        self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        rt = self.runtime
        code: int = await rt.submit(
            group_id,
            lambda token, now: rt.core.heartbeat(
                token,
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                now_ms=now,
            ),
            lambda e: e.code,
        )
        return code

    async def leave_group(self, *, group_id: str, members: list[tuple[str, str | None]]) -> LeaveGroupResult:
        rt = self.runtime
        result: LeaveGroupResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.leave_group(token, group_id=group_id, members=members, now_ms=now),
            lambda e: LeaveGroupResult(e.code),
        )
        return result

    # ------------------------------------------------------------------ offsets
    async def offset_commit(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: list[OffsetCommitEntry],
        retention_ms: int,
        api_version: int,
    ) -> dict[TopicPartitionKey, int]:
        rt = self.runtime
        codes: dict[TopicPartitionKey, int] = await rt.submit(
            group_id,
            lambda token, now: rt.core.commit_offsets(
                token,
                group_id=group_id,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                offsets=offsets,
                retention_ms=retention_ms,
                api_version=api_version,
                now_ms=now,
            ),
            lambda e: {(x.topic, x.partition): e.code for x in offsets},
        )
        return codes

    async def offset_fetch(
        self,
        group_id: str,
        topics: list[tuple[str, list[int]]] | None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
        require_stable: bool = False,
    ) -> OffsetFetchResult:
        return self.runtime.core.fetch_offsets(
            group_id, topics, member_id=member_id, member_epoch=member_epoch, require_stable=require_stable
        )

    async def offset_delete(
        self, *, group_id: str, partitions: list[TopicPartitionKey]
    ) -> tuple[int, dict[TopicPartitionKey, int]]:
        rt = self.runtime
        result: tuple[int, dict[TopicPartitionKey, int]] = await rt.submit(
            group_id,
            lambda token, now: rt.core.delete_offsets(
                token, group_id=group_id, partitions=partitions, now_ms=now
            ),
            lambda e: (e.code, {}),
        )
        return result

    async def txn_offset_commit(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: list[OffsetCommitEntry],
    ) -> dict[TopicPartitionKey, int]:
        rt = self.runtime
        codes: dict[TopicPartitionKey, int] = await rt.submit(
            group_id,
            lambda token, now: rt.core.commit_txn_offsets(
                token,
                group_id=group_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                offsets=offsets,
                now_ms=now,
            ),
            lambda e: {(x.topic, x.partition): e.code for x in offsets},
        )
        return codes

    # ------------------------------------------------------------------ admin
    async def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> tuple[int, list[ListedGroup]]:
        err = self.runtime.listing_error()
        if err is not None:
            return err.code, []
        return 0, self.runtime.core.list_groups(states_filter, types_filter)

    async def describe_groups(self, group_ids: Sequence[str]) -> list[DescribedGroup]:
        return self.runtime.core.describe_groups(group_ids)

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """One pass per ``__consumer_offsets`` partition, each step in that partition's turn.

        Kafka's chain: the share groups among the ids first have their share-partition state
        deleted (DeleteShareGroupState; a non-empty share group is NON_EMPTY_GROUP), and only
        those whose state is gone, with every other id, go on to the ordinary deletion."""
        rt = self.runtime
        by_partition: dict[int, list[str]] = {}
        for gid in group_ids:
            by_partition.setdefault(rt.partition_for(gid), []).append(gid)

        async def delete(gids: list[str]) -> dict[str, int]:
            shares: dict[str, tuple[int, dict[uuid.UUID, frozenset[int]]]] = await rt.submit(
                gids[0],
                lambda token, now: rt.core.prepare_share_group_deletion(token, gids, now),
                lambda e: {g: (e.code, {}) for g in gids},
            )
            out = {gid: code for gid, (code, _) in shares.items() if code}
            pending = [(gid, parts) for gid, (code, parts) in shares.items() if not code and parts]
            codes = await asyncio.gather(*(self._delete_share_state(gid, parts) for gid, parts in pending))
            for (gid, _), code in zip(pending, codes, strict=True):
                if code:
                    out[gid] = code
            rest = [g for g in gids if g not in out]
            if rest:
                done: dict[str, int] = await rt.submit(
                    rest[0],
                    lambda token, now: rt.core.delete_groups(token, rest, now),
                    lambda e: dict.fromkeys(rest, e.code),
                )
                out.update(done)
            return out

        out: dict[str, int] = {}
        for done in await asyncio.gather(*(delete(gids) for gids in by_partition.values())):
            out.update(done)
        return out

    async def _delete_share_state(self, group_id: str, parts: Mapping[uuid.UUID, Iterable[int]]) -> int:
        """DeleteShareGroupState for these partitions: 0, or the first partition's error code."""
        if self.share_state is None:
            return 0  # no share coordinator: there is no state to delete
        items = {(tid, p): {"partition": p} for tid, ps in parts.items() for p in ps}
        results = await self.share_state.delete_state(group_id, items)
        for key in sorted(items, key=lambda k: (str(k[0]), k[1])):
            code = int(results.get(key, {}).get("error_code", CoordinatorNotAvailableError.code))
            if code:
                log.info("share group %r: deleting the state of %s failed (error %d)", group_id, key, code)
                return code
        return 0

    # ------------------------------------------------------------------ KIP-932 share-group offsets
    async def describe_share_group_offsets(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> dict[str, Any]:
        """DescribeShareGroupOffsets for one group (a response group entry): the start offset,
        leader epoch and lag of each requested share partition, or of every initialized one when
        ``topics`` is None. A topic the metadata does not know, or a partition the share
        coordinator could not answer for, has start offset -1 (absence of data, as Kafka's
        OffsetFetch); lag is high watermark - start offset - delivery-complete count, -1 when
        any of them is unknown (a failed high-watermark lookup is that partition's error)."""
        core = self.runtime.core
        unknown: list[dict[str, Any]] = []
        wanted: dict[uuid.UUID, tuple[str, list[int]]] = {}
        if topics is None:
            for tid, initialized in sorted(
                core.initialized_share_partitions(group_id).items(), key=lambda kv: str(kv[0])
            ):
                t = core.topics.by_id(tid)
                if t is not None:
                    wanted[tid] = (t.name, sorted(initialized))
        else:
            for name, ps in topics:
                t = core.topics.get(name)
                if t is None:
                    unknown.append(
                        {
                            "topic_name": name,
                            "topic_id": ZERO_UUID,
                            "partitions": [_offset_entry(p, -1, 0, -1) for p in ps],
                        }
                    )
                else:
                    wanted.setdefault(t.topic_id, (t.name, []))[1].extend(ps)
        items = {(tid, p): {"partition": p, "leader_epoch": 0} for tid, (_, ps) in wanted.items() for p in ps}
        summary: dict[tuple[uuid.UUID, int], dict[str, Any]] = {}
        if items and self.share_state is not None:
            summary = await self.share_state.read_state_summary(group_id, items)

        def known(r: dict[str, Any] | None) -> bool:
            return (
                r is not None
                and r.get("error_code", 0) == 0
                and r.get("start_offset", -1) >= 0
                and r.get("delivery_complete_count", -1) >= 0
            )

        lag_of = {(wanted[tid][0], p) for (tid, p), r in summary.items() if known(r)}
        latest: dict[tuple[str, int], int | KafkaError] = {}
        if lag_of and self.partition_metadata is not None:
            latest = await self.partition_metadata.latest_offsets(sorted(lag_of))
        out: list[dict[str, Any]] = []
        for tid, (name, indexes) in wanted.items():
            parts = []
            for p in indexes:
                r = summary.get((tid, p))
                if r is None or r.get("error_code", 0):
                    parts.append(_offset_entry(p, -1, 0, -1))
                    continue
                start, epoch = r.get("start_offset", -1), r.get("leader_epoch", 0)
                end = latest.get((name, p))
                if not known(r) or end is None:
                    parts.append(_offset_entry(p, start, epoch, -1))
                elif isinstance(end, KafkaError):
                    parts.append(
                        {**_offset_entry(p, -1, 0, -1), "error_code": end.code, "error_message": end.message}
                    )
                else:
                    parts.append(
                        _offset_entry(p, start, epoch, max(0, end - start - r["delivery_complete_count"]))
                    )
            out.append({"topic_name": name, "topic_id": tid, "partitions": parts})
        return {"group_id": group_id, "topics": out + unknown, "error_code": 0, "error_message": None}

    async def alter_share_group_offsets(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> dict[str, Any]:
        """AlterShareGroupOffsets (``error_code``, ``error_message``, ``responses``): the group's
        first step, then InitializeShareGroupState with the requested start offsets and the
        bumped epoch; the partitions initialized are recorded in the group (in the background,
        as after a heartbeat), the others answer the share coordinator's error."""
        rt = self.runtime
        first: AlterShareGroupOffsetsResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.alter_share_group_offsets(token, group_id, topics, now),
            lambda e: AlterShareGroupOffsetsResult(e.code, e.message),
        )
        if first.error_code:
            return {"error_code": first.error_code, "error_message": first.error_message, "responses": []}
        codes: dict[uuid.UUID, dict[int, int]] = {}
        if first.to_initialize:
            if self.share_state is None:
                codes = {
                    t: dict.fromkeys(ps, CoordinatorNotAvailableError.code)
                    for t, ps in first.to_initialize.items()
                }
            else:
                codes = await self.share_state.initialize_offsets(
                    group_id, first.state_epoch, first.to_initialize
                )
            done = {t: [p for p, c in sorted(ps.items()) if c == 0] for t, ps in codes.items()}
            done = {t: ps for t, ps in done.items() if ps}
            if done:
                self.share_group_initialized(group_id, done)
        for topic in first.responses:
            for part in topic["partitions"]:
                code = codes.get(topic["topic_id"], {}).get(part["partition_index"], 0)
                if part["error_code"] == 0 and code:
                    part["error_code"], part["error_message"] = code, None
        return {"error_code": 0, "error_message": None, "responses": first.responses}

    async def delete_share_group_offsets(self, group_id: str, topic_names: Sequence[str]) -> dict[str, Any]:
        """DeleteShareGroupOffsets (``error_code``, ``error_message``, ``responses``): the group's
        first step, DeleteShareGroupState for the initialized partitions of the named topics, then
        the topics whose state is gone leave the group's deleting set; a topic with a partition
        the share coordinator failed on answers that error (and stays deleting, for a retry)."""
        rt = self.runtime
        first: DeleteShareGroupOffsetsResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.delete_share_group_offsets(token, group_id, topic_names, now),
            lambda e: DeleteShareGroupOffsetsResult(e.code, e.message),
        )
        if first.error_code:
            return {"error_code": first.error_code, "error_message": first.error_message, "responses": []}
        responses = list(first.errors)
        ok: list[uuid.UUID] = []
        for tid, ps in first.to_delete.items():
            code = await self._delete_share_state(group_id, {tid: ps})
            name = first.names[tid]
            if code:
                responses.append(
                    {"topic_name": name, "topic_id": tid, "error_code": code, "error_message": None}
                )
            else:
                ok.append(tid)
        if ok:
            code = await rt.submit(
                group_id,
                lambda token, now: rt.core.share_group_offsets_deleted(token, group_id, ok, now),
                lambda e: e.code,
            )
            for tid in ok:
                responses.append(
                    {
                        "topic_name": first.names[tid],
                        "topic_id": tid,
                        "error_code": code,
                        "error_message": None,
                    }
                )
        return {"error_code": 0, "error_message": None, "responses": responses}

    # ------------------------------------------------------------------ KIP-848 consumer groups
    async def consumer_group_heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        subscribed_topic_names: list[str] | None,
        subscribed_topic_regex: str | None,
        server_assignor: str | None,
        owned: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None,
        client_id: str,
        client_host: str,
        api_version: int,
    ) -> ConsumerGroupHeartbeatResult:
        rt = self.runtime
        result: ConsumerGroupHeartbeatResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.consumer_group_heartbeat(
                token,
                group_id=group_id,
                member_id=member_id,
                member_epoch=member_epoch,
                instance_id=instance_id,
                rack_id=rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms,
                subscribed_topic_names=subscribed_topic_names,
                subscribed_topic_regex=subscribed_topic_regex,
                server_assignor=server_assignor,
                owned=owned,
                client_id=client_id,
                client_host=client_host,
                api_version=api_version,
                now_ms=now,
            ),
            lambda e: ConsumerGroupHeartbeatResult(e.code, e.message, member_id or None, -1),
        )
        return result

    async def consumer_group_describe(
        self, group_ids: Sequence[str]
    ) -> list[ConsumerGroupDescribeResponseGroups]:
        return self.runtime.core.consumer_group_describe(group_ids)

    # ------------------------------------------------------------------ KIP-932 share groups
    async def share_group_heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: list[str] | None,
        client_id: str,
        client_host: str,
    ) -> ShareGroupHeartbeatResult:
        rt = self.runtime
        result: ShareGroupHeartbeatResult = await rt.submit(
            group_id,
            lambda token, now: rt.core.share_group_heartbeat(
                token,
                group_id=group_id,
                member_id=member_id,
                member_epoch=member_epoch,
                rack_id=rack_id,
                subscribed_topic_names=subscribed_topic_names,
                client_id=client_id,
                client_host=client_host,
                now_ms=now,
            ),
            lambda e: ShareGroupHeartbeatResult(e.code, e.message, member_id or None, -1),
        )
        if result.to_initialize and self.share_state is not None:
            task = asyncio.create_task(
                self._initialize_share_state(group_id, result.initialize_epoch, result.to_initialize)
            )
            self._initializing.add(task)
            task.add_done_callback(self._initializing.discard)
        return result

    async def _initialize_share_state(
        self, group_id: str, state_epoch: int, topics: Mapping[uuid.UUID, frozenset[int]]
    ) -> None:
        """Kafka's ``persisterInitialize``: initialize, then record the outcome in the group."""
        assert self.share_state is not None
        try:
            codes = await self.share_state.initialize_state(group_id, state_epoch, topics)
        except Exception:  # a bug, not a share-coordinator error: the partitions are asked for again
            log.exception("initializing the share state of group %r failed", group_id)
            codes = {}
        done: dict[uuid.UUID, list[int]] = {}
        failed: dict[uuid.UUID, list[int]] = {}
        for tid, ps in topics.items():
            for p in sorted(ps):
                ok = codes.get(tid, {}).get(p, -1) == 0
                (done if ok else failed).setdefault(tid, []).append(p)
        if failed:
            log.info("share group %r: state of %s not initialized yet (%s)", group_id, failed, codes)
            self.share_group_uninitialized(group_id, failed)
        if done:
            self.share_group_initialized(group_id, done)

    def share_group_initialized(self, group_id: str, topics: Mapping[uuid.UUID, Iterable[int]]) -> None:
        """The share coordinator initialized these partitions' state: record them in the group
        (a write in the group's turn; nobody waits for it)."""
        rt = self.runtime
        rt.request(
            group_id,
            lambda token, now: _acked(token, rt.core.share_group_initialized(group_id, topics)),
            _ignore,
        )

    def share_group_uninitialized(self, group_id: str, topics: Mapping[uuid.UUID, Iterable[int]]) -> None:
        """Initializing them failed: forget them, so that a later heartbeat asks again."""
        rt = self.runtime
        rt.request(
            group_id,
            lambda token, now: _acked(token, rt.core.share_group_uninitialized(group_id, topics)),
            _ignore,
        )

    async def close(self) -> None:
        """Stop the share-state initializations in flight (their partitions stay initializing)."""
        tasks = list(self._initializing)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def share_group_describe(self, group_ids: Sequence[str]) -> list[dict[str, Any]]:
        return self.runtime.core.share_group_describe(group_ids)


def _acked(token: Any, fx: Effects) -> Effects:
    """``fx`` with a reply to ``token`` (released once its write commits), so that the runtime
    forgets the request (a state-machine input that never replies would be waited for)."""
    fx.reply(token, None)
    return fx


def _ignore(result: Any, error: KafkaError | None) -> None:
    """The write's outcome: a lost one leaves the partitions initializing (asked again later)."""


def _offset_entry(partition: int, start_offset: int, leader_epoch: int, lag: int) -> dict[str, Any]:
    """A DescribeShareGroupOffsets response partition without an error."""
    return {
        "partition_index": partition,
        "start_offset": start_offset,
        "leader_epoch": leader_epoch,
        "lag": lag,
        "error_code": 0,
        "error_message": None,
    }
