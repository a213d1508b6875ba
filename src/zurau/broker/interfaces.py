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
from typing import Any, Protocol, runtime_checkable

from zurau.metadata.controller.feature_control import FeatureUpdate, FeatureUpdateOutcome
from zurau.metadata.image import MetadataImage
from zurau.protocol.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AlterClientQuotasRequestEntries,
    AlterClientQuotasResponseEntries,
    AlterConfigsRequestResources,
    AlterConfigsResponseResponses,
    AlterPartitionReassignmentsRequestTopics,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterUserScramCredentialsRequestDeletions,
    AlterUserScramCredentialsRequestUpsertions,
    AlterUserScramCredentialsResponseResults,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateAclsRequestCreations,
    CreateAclsResponseResults,
    CreateDelegationTokenResponse,
    CreatePartitionsRequestTopics,
    CreatePartitionsResponseResults,
    CreateTopicsRequestTopics,
    CreateTopicsResponse,
    CreateTopicsResponseTopics,
    DeleteAclsRequestFilters,
    DeleteAclsResponseFilterResults,
    DeleteTopicsResponseResponses,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequestResources,
    IncrementalAlterConfigsResponseResponses,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UnregisterBrokerResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
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
    """Every metadata change goes through here; responses come once the change is committed.

    Requests and answers are the generated messages (:mod:`zurau.protocol.messages`), or the
    parts of them the controller decides: a handler passes its request's items straight through
    and answers with what comes back (plus the fields it owns, such as ``throttle_time_ms``)."""

    async def create_topics(self, topics: list[CreateTopicsRequestTopics], validate_only: bool) -> CreateTopicsResponse: ...

    async def delete_topics(
        self, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> list[DeleteTopicsResponseResponses]: ...

    async def create_partitions(
        self, topics: list[CreatePartitionsRequestTopics], validate_only: bool
    ) -> list[CreatePartitionsResponseResults]: ...

    async def alter_configs(
        self, resources: list[AlterConfigsRequestResources], validate_only: bool
    ) -> list[AlterConfigsResponseResponses]: ...

    async def incremental_alter_configs(
        self, resources: list[IncrementalAlterConfigsRequestResources], validate_only: bool
    ) -> list[IncrementalAlterConfigsResponseResponses]: ...

    async def alter_user_scram_credentials(
        self,
        deletions: list[AlterUserScramCredentialsRequestDeletions],
        upsertions: list[AlterUserScramCredentialsRequestUpsertions],
    ) -> list[AlterUserScramCredentialsResponseResults]: ...

    async def create_acls(self, creations: list[CreateAclsRequestCreations]) -> list[CreateAclsResponseResults]: ...

    async def create_delegation_token(
        self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int
    ) -> CreateDelegationTokenResponse:
        """CreateDelegationToken for ``owner`` (``Type:name``), asked by ``requester``; the caller
        has checked that the connection may ask for tokens and for this owner."""
        ...

    async def renew_delegation_token(self, hmac: bytes, renew_period_ms: int, caller: str | None) -> tuple[int, int]:
        """RenewDelegationToken: (error code, expiry timestamp). ``caller`` must own or renew the
        token (None: already checked by the node that forwarded the request)."""
        ...

    async def expire_delegation_token(
        self, hmac: bytes, expiry_period_ms: int, caller: str | None
    ) -> tuple[int, int]:
        """ExpireDelegationToken: (error code, expiry timestamp); ``caller`` as for renewals."""
        ...

    async def alter_client_quotas(
        self, entries: list[AlterClientQuotasRequestEntries], validate_only: bool
    ) -> list[AlterClientQuotasResponseEntries]: ...

    async def delete_acls(self, filters: list[DeleteAclsRequestFilters]) -> list[DeleteAclsResponseFilterResults]: ...

    async def elect_leaders(
        self, election_type: int, topic_partitions: list[ElectLeadersRequestTopicPartitions] | None
    ) -> ElectLeadersResponse:
        """``error_code`` and ``replica_election_results`` of the response."""
        ...

    async def alter_partition_reassignments(
        self, topics: list[AlterPartitionReassignmentsRequestTopics], allow_replication_factor_change: bool
    ) -> AlterPartitionReassignmentsResponse:
        """``error_code``, ``error_message`` and ``responses`` of the response."""
        ...

    async def list_partition_reassignments(
        self, topics: list[ListPartitionReassignmentsRequestTopics] | None
    ) -> ListPartitionReassignmentsResponse:
        """``error_code``, ``error_message`` and ``topics`` of the response."""
        ...

    async def unregister_broker(self, broker_id: int) -> UnregisterBrokerResponse:
        """UnregisterBroker: ``error_code`` and ``error_message`` of the response."""
        ...

    async def update_features(self, updates: list[FeatureUpdate], validate_only: bool) -> FeatureUpdateOutcome:
        """UpdateFeatures, decided by the active controller: the request's one error (atomic)."""
        ...

    def create_topic_now(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> CreateTopicsResponseTopics:
        """Create a topic the broker needs itself (auto-creation); the CreateTopics result entry."""
        ...

    def without_forwarding(self) -> ControllerChannel:
        """The channel for a request that came in on a controller listener: it is decided here
        or refused with NOT_CONTROLLER, never forwarded again."""
        ...


@runtime_checkable
class AlterPartitionChannel(Protocol):
    """A controller channel that decides AlterPartition (a cluster's; a single node's ISR is
    itself, so its channel has none: the handler checks with ``isinstance``)."""

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse: ...


class QuorumService(Protocol):
    """The node's part in the KRaft quorum, as the quorum APIs' handlers use it.

    The Raft messages (Vote, BeginQuorumEpoch, EndQuorumEpoch, a metadata Fetch, FetchSnapshot)
    go through one door keyed by api key, as plain dicts: the Raft core's wire adapter
    (:mod:`zurau.raft.wire`) reads and builds them by api key. Every other API has its typed method."""

    @property
    def kraft_version(self) -> int:
        """The quorum's ``kraft.version``: 1 for a dynamic quorum (KIP-853), else 0."""
        ...

    async def handle_raft_request(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Vote, BeginQuorumEpoch, EndQuorumEpoch, a Fetch of ``__cluster_metadata`` or
        FetchSnapshot: the response body of ``api_key``."""
        ...

    async def describe_quorum(self, version: int, body: DescribeQuorumRequest) -> DescribeQuorumResponse:
        """DescribeQuorum: answered by the quorum's leader (another node forwards it there)."""
        ...

    async def add_raft_voter(self, version: int, body: AddRaftVoterRequest) -> AddRaftVoterResponse:
        """AddRaftVoter (KIP-853), answered by the leader once the new voter set is committed."""
        ...

    async def remove_raft_voter(self, version: int, body: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
        """RemoveRaftVoter (KIP-853), answered by the leader."""
        ...

    async def update_raft_voter(self, version: int, body: UpdateRaftVoterRequest) -> UpdateRaftVoterResponse:
        """UpdateRaftVoter (KIP-853), answered by the leader."""
        ...

    async def register_broker(self, body: BrokerRegistrationRequest, forward: bool) -> BrokerRegistrationResponse: ...

    async def broker_heartbeat(self, body: BrokerHeartbeatRequest, forward: bool) -> BrokerHeartbeatResponse: ...

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
        self, topic: str, partition: int, records: bytes | bytearray | memoryview, *, add_partition: bool = False
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
        mark: int | None = None,
    ) -> FetchResult | Coroutine[Any, Any, FetchResult]:
        """A Fetch: its result when the first read settles it, else a coroutine that waits for
        data and gives it (reads, idle fast path, long poll: :mod:`zurau.replication.delayed_fetch`).
        ``mark``: :meth:`fetch_mark` taken before the caller planned ``topics``."""
        ...

    def fetch_mark(self) -> int:
        """Where the fetch purgatory's notifications stand now: taken before a fetch is planned,
        so that an append made meanwhile (planning a session may record a follower's fetch, move
        a high watermark and make a coordinator write) answers the fetch instead of being missed."""
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
        client_request: bool = False,
    ) -> OffsetForTimestamp: ...

    def tiered_timestamp_log(self, topic: str, partition: int, timestamp: int) -> Any:
        """The log to search in the remote tier too for ``timestamp``, or None."""
        ...

    async def remote_offset_for_timestamp(
        self, topic: str, partition: int, plog: Any, timestamp: int, *, isolation_level: int
    ) -> OffsetForTimestamp | None: ...

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

