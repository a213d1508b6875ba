"""The Protocols that handlers see their collaborators through (see :mod:`.request_context`).

Each names only what handlers call, so a test, the simulation or a cluster-mode implementation
can stand in for the single-node one: the controller channel of one node runs the controller
in-process (:class:`zurau.metadata.local_controller.LocalControllerChannel`); in a cluster it
forwards to the active controller.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, Protocol

from zurau.metadata.image import MetadataImage
from zurau.replication.delayed_fetch import FetchResult, WaitKeys
from zurau.replication.fetch_params import FetchParams, FetchTopic
from zurau.replication.purgatory import DelayedProduce, TopicPartitionKey
from zurau.replication.replica_manager import (
    AppendOrigin,
    OffsetForTimestamp,
    ReplicaInfo,
)
from zurau.storage.partition_log import AppendResult
from zurau.storage.producer_state import ProducerStateEntry
from zurau.types import LeaderEpoch, Offset


class MetadataView(Protocol):
    @property
    def image(self) -> MetadataImage:
        """The newest metadata image this broker has applied."""
        ...


class ControllerChannel(Protocol):
    """Every metadata change goes through here; responses come once the change is committed."""

    async def create_topics(self, topics: list[dict[str, Any]], validate_only: bool) -> dict[str, Any]: ...

    async def delete_topics(
        self, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> list[dict[str, Any]]: ...

    async def create_partitions(self, topics: list[dict[str, Any]], validate_only: bool) -> list[dict[str, Any]]: ...

    async def alter_configs(self, resources: list[dict[str, Any]], validate_only: bool) -> list[dict[str, Any]]: ...

    async def incremental_alter_configs(
        self, resources: list[dict[str, Any]], validate_only: bool
    ) -> list[dict[str, Any]]: ...

    async def alter_user_scram_credentials(
        self, deletions: list[dict[str, Any]], upsertions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]: ...

    async def create_acls(self, creations: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    async def alter_client_quotas(self, entries: list[dict[str, Any]], validate_only: bool) -> list[dict[str, Any]]: ...

    async def delete_acls(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    async def elect_leaders(
        self, election_type: int, topic_partitions: list[dict[str, Any]] | None
    ) -> dict[str, Any]: ...

    async def alter_partition_reassignments(
        self, topics: list[dict[str, Any]], allow_replication_factor_change: bool
    ) -> dict[str, Any]: ...

    async def list_partition_reassignments(self, topics: list[dict[str, Any]] | None) -> dict[str, Any]: ...

    def create_topic_now(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> dict[str, Any]:
        """Create a topic the broker needs itself (auto-creation); the CreateTopics result entry."""
        ...

    def without_forwarding(self) -> ControllerChannel:
        """The channel for a request that came in on a controller listener: it is decided here
        or refused with NOT_CONTROLLER, never forwarded again."""
        ...


class QuorumService(Protocol):
    """The node's part in the KRaft quorum, as the quorum APIs' handlers use it."""

    async def handle_raft_request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Vote, BeginQuorumEpoch, EndQuorumEpoch, or a Fetch of ``__cluster_metadata``."""
        ...

    async def describe_quorum(self, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """DescribeQuorum: answered by the quorum's leader (another node forwards it there)."""
        ...

    async def change_voters(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter (KIP-853), answered by the leader."""
        ...

    async def register_broker(self, body: dict[str, Any], forward: bool) -> dict[str, Any]: ...

    async def broker_heartbeat(self, body: dict[str, Any], forward: bool) -> dict[str, Any]: ...

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int, forward: bool) -> tuple[int, int]: ...


class ReplicaManagerService(Protocol):
    """The door to partition logs, as the data-plane handlers use it."""

    node_id: int

    def append_as_leader(
        self,
        topic: str,
        partition: int,
        records: bytes | bytearray | memoryview,
        *,
        required_acks: int,
        origin: AppendOrigin = ...,
        in_place: bool = False,
        txn_verified: bool = False,
    ) -> AppendResult: ...

    def txn_verification_needed(
        self, topic: str, partition: int, records: bytes | bytearray | memoryview
    ) -> tuple[int, int] | None: ...

    def delayed_produce(self, required: Mapping[TopicPartitionKey, int]) -> DelayedProduce: ...

    async def wait_for_replication(self, op: DelayedProduce, timeout_ms: int) -> dict[TopicPartitionKey, int]: ...

    def fetch(
        self,
        params: FetchParams,
        topics: list[FetchTopic],
        *,
        wait_keys: Callable[[], WaitKeys] | None = None,
        replan: Callable[[], list[FetchTopic]] | None = None,
        bytes_bound: Callable[[], int | None] | None = None,
        running: Callable[[], bool] = ...,
    ) -> FetchResult | Coroutine[Any, Any, FetchResult]:
        """A Fetch: its result when the first read settles it, else a coroutine that waits for
        data and gives it (reads, idle fast path, long poll: :mod:`zurau.replication.delayed_fetch`)."""
        ...

    def fetch_idle(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        current_leader_epoch: int,
        seen: tuple[int, int, int],
        *,
        replica_id: int = -1,
        read_committed: bool = False,
        replica_epoch: int = -1,
    ) -> bool: ...

    def fetch_offset_for_timestamp(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        *,
        isolation_level: int = 0,
        current_leader_epoch: LeaderEpoch = ...,
    ) -> OffsetForTimestamp: ...

    def end_offset_for_leader_epoch(
        self, topic: str, partition: int, leader_epoch: LeaderEpoch, *, current_leader_epoch: LeaderEpoch = ...
    ) -> tuple[int, int]: ...

    def high_watermark(self, topic: str, partition: int) -> int: ...

    def delete_records(self, topic: str, partition: int, offset: Offset) -> int: ...

    def active_producers(self, topic: str, partition: int) -> list[ProducerStateEntry]: ...

    def describe_log_dirs(self) -> dict[Path, list[ReplicaInfo]]: ...


class BrokerMetricsRecorder(Protocol):
    """What the connection and the produce and fetch handlers record while metrics are on
    (implemented by :mod:`zurau.metrics`). Called on the event loop, on the hot path: cheap."""

    def request_done(
        self,
        api_key: int,
        version: int,
        received: float,
        dispatched: float,
        handled: float,
        sending: float,
        sent: float,
        remote_s: float,
        response: Any,
        variant: str | None = None,
    ) -> None:
        """One request answered: ``time.perf_counter()`` when its frame was complete, its
        handler started, its response was ready, its response began to be written and was
        written; ``remote_s`` of that time was spent waiting in purgatories; ``response`` is the
        response body (None when there is none, as for acks=0); ``variant`` a finer name the
        request is counted and timed under as well (``FetchConsumer``, ``FetchFollower``)."""
        ...

    def produced(self, topic: str, nbytes: int, records: int) -> None:
        """A client's records appended as leader (not a retried duplicate)."""
        ...

    def produce_failed(self, topic: str) -> None: ...

    def fetched(self, topic: str, nbytes: int, follower: bool) -> None:
        """Record bytes sent in a Fetch response (a follower's or a consumer's)."""
        ...

    def fetch_failed(self, topic: str) -> None: ...

