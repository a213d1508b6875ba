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
from zurau.protocol.errors import KafkaError
from zurau.protocol.messages import (
    ConsumerGroupDescribeResponseGroups,
    ConsumerGroupHeartbeatRequestTopicPartitions,
)
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.coordinator")


class ShareStateInitializer(Protocol):
    """The share coordinator as the group coordinator needs it (Kafka's ``Persister``, for
    ``initializeState`` only)."""

    async def initialize_state(
        self, group_id: str, state_epoch: int, topics: Mapping[uuid.UUID, Iterable[int]]
    ) -> dict[uuid.UUID, dict[int, int]]:
        """InitializeShareGroupState for these share-partitions (start offset -1): an error code
        per requested partition (0: its state is initialized). Never raises for an unreachable
        or failing share coordinator: those partitions carry its error code."""
        ...


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

    async def consumer_group_describe(self, group_ids: Sequence[str]) -> list[ConsumerGroupDescribeResponseGroups]: ...

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


class RuntimeGroupCoordinatorService:
    """:class:`GroupCoordinatorService` over the group coordinator runtime (Kafka's
    ``GroupCoordinatorService`` over its ``CoordinatorRuntime``)."""

    def __init__(self, runtime: GroupCoordinatorRuntime, share_state: ShareStateInitializer | None = None) -> None:
        """``share_state``: where share-partition state is initialized (None: nowhere, so share
        members stay unassigned)."""
        self.runtime = runtime
        self.share_state = share_state
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
            lambda token, now: rt.core.delete_offsets(token, group_id=group_id, partitions=partitions, now_ms=now),
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
        """One operation per ``__consumer_offsets`` partition, each in that partition's turn."""
        rt = self.runtime
        by_partition: dict[int, list[str]] = {}
        for gid in group_ids:
            by_partition.setdefault(rt.partition_for(gid), []).append(gid)

        def delete(gids: list[str]) -> asyncio.Future[dict[str, int]]:
            return rt.submit(
                gids[0],
                lambda token, now: rt.core.delete_groups(token, gids, now),
                lambda e: dict.fromkeys(gids, e.code),
            )

        out: dict[str, int] = {}
        for done in await asyncio.gather(*(delete(gids) for gids in by_partition.values())):
            out.update(done)
        return out

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

    async def consumer_group_describe(self, group_ids: Sequence[str]) -> list[ConsumerGroupDescribeResponseGroups]:
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
        rt.request(group_id, lambda token, now: _acked(token, rt.core.share_group_initialized(group_id, topics)), _ignore)

    def share_group_uninitialized(self, group_id: str, topics: Mapping[uuid.UUID, Iterable[int]]) -> None:
        """Initializing them failed: forget them, so that a later heartbeat asks again."""
        rt = self.runtime
        rt.request(
            group_id, lambda token, now: _acked(token, rt.core.share_group_uninitialized(group_id, topics)), _ignore
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
