"""Typed requests: each Kafka API the client sends, as an :class:`Api` pairing its key with its
generated request and response messages (:mod:`zurau.protocol.messages`).

``CREATE_ACLS({"creations": [...]})`` makes a :class:`Call`: mypy checks the body against
``CreateAclsRequest`` (a misspelt or unknown key is an error), and ``await conn.call(call)``
(:meth:`zurau.client.connection.BrokerConnection.call`, :meth:`zurau.client.cluster.Cluster.call`)
returns a ``CreateAclsResponse`` (``conn.send_only(call)`` sends one the broker does not answer:
Produce with acks=0). Nothing changes at run time: the body is the same dict that
``request(api_key, body)`` sends, and the answer the same decoded dict. The one claim made
without a check, in :meth:`Call.answer`, is the decoder's own guarantee: a decoded response
holds every field of its schema (those absent from its version at their defaults).

To send a new API, add its line below (``NAME: Api[NameRequest, NameResponse] = Api(ApiKey.NAME)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    EndTxnRequest,
    EndTxnResponse,
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

Q = TypeVar("Q", bound=Mapping[str, Any])
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Call(Generic[R]):
    """One request of an API: its key and body, and (as ``R``) the type of its answer."""

    api_key: ApiKey
    body: dict[str, Any]

    def answer(self, decoded: dict[str, Any]) -> R:
        """The answer to this call, as its response message (the same dict): decoded from the
        wire, or given by the local service that answers the API (the KRaft quorum's Raft
        client answers the Raft messages by api key, :mod:`zurau.broker.handlers._quorum`)."""
        return cast(R, decoded)


class Api(Generic[Q, R]):
    """A Kafka API as the client sends it: calling it with a request body makes a :class:`Call`."""

    __slots__ = ("key",)

    def __init__(self, key: ApiKey) -> None:
        self.key = key

    def __call__(self, body: Q) -> Call[R]:
        # A generated message is a dict at run time; the encoder takes it as one.
        return Call(self.key, cast("dict[str, Any]", body))

    def __repr__(self) -> str:
        return f"Api({self.key.name})"


PRODUCE: Api[ProduceRequest, ProduceResponse] = Api(ApiKey.PRODUCE)
FETCH: Api[FetchRequest, FetchResponse] = Api(ApiKey.FETCH)
LIST_OFFSETS: Api[ListOffsetsRequest, ListOffsetsResponse] = Api(ApiKey.LIST_OFFSETS)
METADATA: Api[MetadataRequest, MetadataResponse] = Api(ApiKey.METADATA)
OFFSET_COMMIT: Api[OffsetCommitRequest, OffsetCommitResponse] = Api(ApiKey.OFFSET_COMMIT)
OFFSET_FETCH: Api[OffsetFetchRequest, OffsetFetchResponse] = Api(ApiKey.OFFSET_FETCH)
FIND_COORDINATOR: Api[FindCoordinatorRequest, FindCoordinatorResponse] = Api(ApiKey.FIND_COORDINATOR)
JOIN_GROUP: Api[JoinGroupRequest, JoinGroupResponse] = Api(ApiKey.JOIN_GROUP)
HEARTBEAT: Api[HeartbeatRequest, HeartbeatResponse] = Api(ApiKey.HEARTBEAT)
LEAVE_GROUP: Api[LeaveGroupRequest, LeaveGroupResponse] = Api(ApiKey.LEAVE_GROUP)
SYNC_GROUP: Api[SyncGroupRequest, SyncGroupResponse] = Api(ApiKey.SYNC_GROUP)
DESCRIBE_GROUPS: Api[DescribeGroupsRequest, DescribeGroupsResponse] = Api(ApiKey.DESCRIBE_GROUPS)
LIST_GROUPS: Api[ListGroupsRequest, ListGroupsResponse] = Api(ApiKey.LIST_GROUPS)
SASL_HANDSHAKE: Api[SaslHandshakeRequest, SaslHandshakeResponse] = Api(ApiKey.SASL_HANDSHAKE)
API_VERSIONS: Api[ApiVersionsRequest, ApiVersionsResponse] = Api(ApiKey.API_VERSIONS)
CREATE_TOPICS: Api[CreateTopicsRequest, CreateTopicsResponse] = Api(ApiKey.CREATE_TOPICS)
DELETE_TOPICS: Api[DeleteTopicsRequest, DeleteTopicsResponse] = Api(ApiKey.DELETE_TOPICS)
DELETE_RECORDS: Api[DeleteRecordsRequest, DeleteRecordsResponse] = Api(ApiKey.DELETE_RECORDS)
INIT_PRODUCER_ID: Api[InitProducerIdRequest, InitProducerIdResponse] = Api(ApiKey.INIT_PRODUCER_ID)
ADD_PARTITIONS_TO_TXN: Api[AddPartitionsToTxnRequest, AddPartitionsToTxnResponse] = Api(
    ApiKey.ADD_PARTITIONS_TO_TXN
)
ADD_OFFSETS_TO_TXN: Api[AddOffsetsToTxnRequest, AddOffsetsToTxnResponse] = Api(ApiKey.ADD_OFFSETS_TO_TXN)
END_TXN: Api[EndTxnRequest, EndTxnResponse] = Api(ApiKey.END_TXN)
WRITE_TXN_MARKERS: Api[WriteTxnMarkersRequest, WriteTxnMarkersResponse] = Api(ApiKey.WRITE_TXN_MARKERS)
INITIALIZE_SHARE_GROUP_STATE: Api[InitializeShareGroupStateRequest, InitializeShareGroupStateResponse] = Api(
    ApiKey.INITIALIZE_SHARE_GROUP_STATE
)
READ_SHARE_GROUP_STATE: Api[ReadShareGroupStateRequest, ReadShareGroupStateResponse] = Api(
    ApiKey.READ_SHARE_GROUP_STATE
)
WRITE_SHARE_GROUP_STATE: Api[WriteShareGroupStateRequest, WriteShareGroupStateResponse] = Api(
    ApiKey.WRITE_SHARE_GROUP_STATE
)
DELETE_SHARE_GROUP_STATE: Api[DeleteShareGroupStateRequest, DeleteShareGroupStateResponse] = Api(
    ApiKey.DELETE_SHARE_GROUP_STATE
)
READ_SHARE_GROUP_STATE_SUMMARY: Api[ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse] = Api(
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY
)
TXN_OFFSET_COMMIT: Api[TxnOffsetCommitRequest, TxnOffsetCommitResponse] = Api(ApiKey.TXN_OFFSET_COMMIT)
DESCRIBE_ACLS: Api[DescribeAclsRequest, DescribeAclsResponse] = Api(ApiKey.DESCRIBE_ACLS)
CREATE_ACLS: Api[CreateAclsRequest, CreateAclsResponse] = Api(ApiKey.CREATE_ACLS)
DELETE_ACLS: Api[DeleteAclsRequest, DeleteAclsResponse] = Api(ApiKey.DELETE_ACLS)
DESCRIBE_CONFIGS: Api[DescribeConfigsRequest, DescribeConfigsResponse] = Api(ApiKey.DESCRIBE_CONFIGS)
ALTER_CONFIGS: Api[AlterConfigsRequest, AlterConfigsResponse] = Api(ApiKey.ALTER_CONFIGS)
LIST_CONFIG_RESOURCES: Api[ListConfigResourcesRequest, ListConfigResourcesResponse] = Api(
    ApiKey.LIST_CONFIG_RESOURCES
)
GET_TELEMETRY_SUBSCRIPTIONS: Api[GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse] = Api(
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
)
PUSH_TELEMETRY: Api[PushTelemetryRequest, PushTelemetryResponse] = Api(ApiKey.PUSH_TELEMETRY)
DESCRIBE_LOG_DIRS: Api[DescribeLogDirsRequest, DescribeLogDirsResponse] = Api(ApiKey.DESCRIBE_LOG_DIRS)
SASL_AUTHENTICATE: Api[SaslAuthenticateRequest, SaslAuthenticateResponse] = Api(ApiKey.SASL_AUTHENTICATE)
CREATE_PARTITIONS: Api[CreatePartitionsRequest, CreatePartitionsResponse] = Api(ApiKey.CREATE_PARTITIONS)
DELETE_GROUPS: Api[DeleteGroupsRequest, DeleteGroupsResponse] = Api(ApiKey.DELETE_GROUPS)
ELECT_LEADERS: Api[ElectLeadersRequest, ElectLeadersResponse] = Api(ApiKey.ELECT_LEADERS)
INCREMENTAL_ALTER_CONFIGS: Api[IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse] = Api(
    ApiKey.INCREMENTAL_ALTER_CONFIGS
)
ALTER_PARTITION_REASSIGNMENTS: Api[
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse
] = Api(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
LIST_PARTITION_REASSIGNMENTS: Api[ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse] = (
    Api(ApiKey.LIST_PARTITION_REASSIGNMENTS)
)
OFFSET_DELETE: Api[OffsetDeleteRequest, OffsetDeleteResponse] = Api(ApiKey.OFFSET_DELETE)
DESCRIBE_TOPIC_PARTITIONS: Api[DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse] = Api(
    ApiKey.DESCRIBE_TOPIC_PARTITIONS
)
DESCRIBE_CLIENT_QUOTAS: Api[DescribeClientQuotasRequest, DescribeClientQuotasResponse] = Api(
    ApiKey.DESCRIBE_CLIENT_QUOTAS
)
ALTER_CLIENT_QUOTAS: Api[AlterClientQuotasRequest, AlterClientQuotasResponse] = Api(
    ApiKey.ALTER_CLIENT_QUOTAS
)
DESCRIBE_USER_SCRAM_CREDENTIALS: Api[
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse
] = Api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
ALTER_USER_SCRAM_CREDENTIALS: Api[AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse] = Api(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS
)
CREATE_DELEGATION_TOKEN: Api[CreateDelegationTokenRequest, CreateDelegationTokenResponse] = Api(
    ApiKey.CREATE_DELEGATION_TOKEN
)
RENEW_DELEGATION_TOKEN: Api[RenewDelegationTokenRequest, RenewDelegationTokenResponse] = Api(
    ApiKey.RENEW_DELEGATION_TOKEN
)
EXPIRE_DELEGATION_TOKEN: Api[ExpireDelegationTokenRequest, ExpireDelegationTokenResponse] = Api(
    ApiKey.EXPIRE_DELEGATION_TOKEN
)
DESCRIBE_DELEGATION_TOKEN: Api[DescribeDelegationTokenRequest, DescribeDelegationTokenResponse] = Api(
    ApiKey.DESCRIBE_DELEGATION_TOKEN
)
DESCRIBE_QUORUM: Api[DescribeQuorumRequest, DescribeQuorumResponse] = Api(ApiKey.DESCRIBE_QUORUM)
DESCRIBE_CLUSTER: Api[DescribeClusterRequest, DescribeClusterResponse] = Api(ApiKey.DESCRIBE_CLUSTER)
DESCRIBE_PRODUCERS: Api[DescribeProducersRequest, DescribeProducersResponse] = Api(ApiKey.DESCRIBE_PRODUCERS)
DESCRIBE_TRANSACTIONS: Api[DescribeTransactionsRequest, DescribeTransactionsResponse] = Api(
    ApiKey.DESCRIBE_TRANSACTIONS
)
LIST_TRANSACTIONS: Api[ListTransactionsRequest, ListTransactionsResponse] = Api(ApiKey.LIST_TRANSACTIONS)
CONSUMER_GROUP_HEARTBEAT: Api[ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse] = Api(
    ApiKey.CONSUMER_GROUP_HEARTBEAT
)
CONSUMER_GROUP_DESCRIBE: Api[ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse] = Api(
    ApiKey.CONSUMER_GROUP_DESCRIBE
)
SHARE_GROUP_HEARTBEAT: Api[ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse] = Api(
    ApiKey.SHARE_GROUP_HEARTBEAT
)
SHARE_GROUP_DESCRIBE: Api[ShareGroupDescribeRequest, ShareGroupDescribeResponse] = Api(ApiKey.SHARE_GROUP_DESCRIBE)
DESCRIBE_SHARE_GROUP_OFFSETS: Api[DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse] = Api(
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
)
ALTER_SHARE_GROUP_OFFSETS: Api[AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse] = Api(
    ApiKey.ALTER_SHARE_GROUP_OFFSETS
)
DELETE_SHARE_GROUP_OFFSETS: Api[DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse] = Api(
    ApiKey.DELETE_SHARE_GROUP_OFFSETS
)

# Inter-broker and controller APIs, sent over a BrokerConnection by the broker's own channels
# (zurau.metadata, zurau.replication).
OFFSET_FOR_LEADER_EPOCH: Api[OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse] = Api(
    ApiKey.OFFSET_FOR_LEADER_EPOCH
)
ALTER_PARTITION: Api[AlterPartitionRequest, AlterPartitionResponse] = Api(ApiKey.ALTER_PARTITION)
BROKER_REGISTRATION: Api[BrokerRegistrationRequest, BrokerRegistrationResponse] = Api(ApiKey.BROKER_REGISTRATION)
BROKER_HEARTBEAT: Api[BrokerHeartbeatRequest, BrokerHeartbeatResponse] = Api(ApiKey.BROKER_HEARTBEAT)
ALLOCATE_PRODUCER_IDS: Api[AllocateProducerIdsRequest, AllocateProducerIdsResponse] = Api(
    ApiKey.ALLOCATE_PRODUCER_IDS
)
ADD_RAFT_VOTER: Api[AddRaftVoterRequest, AddRaftVoterResponse] = Api(ApiKey.ADD_RAFT_VOTER)
REMOVE_RAFT_VOTER: Api[RemoveRaftVoterRequest, RemoveRaftVoterResponse] = Api(ApiKey.REMOVE_RAFT_VOTER)
UPDATE_RAFT_VOTER: Api[UpdateRaftVoterRequest, UpdateRaftVoterResponse] = Api(ApiKey.UPDATE_RAFT_VOTER)
UNREGISTER_BROKER: Api[UnregisterBrokerRequest, UnregisterBrokerResponse] = Api(ApiKey.UNREGISTER_BROKER)
UPDATE_FEATURES: Api[UpdateFeaturesRequest, UpdateFeaturesResponse] = Api(ApiKey.UPDATE_FEATURES)
# The Raft messages of the KRaft quorum (the Raft client sends them by api key, through
# zurau.raft.wire; these name their types for the handlers that answer them).
VOTE: Api[VoteRequest, VoteResponse] = Api(ApiKey.VOTE)
BEGIN_QUORUM_EPOCH: Api[BeginQuorumEpochRequest, BeginQuorumEpochResponse] = Api(ApiKey.BEGIN_QUORUM_EPOCH)
END_QUORUM_EPOCH: Api[EndQuorumEpochRequest, EndQuorumEpochResponse] = Api(ApiKey.END_QUORUM_EPOCH)
FETCH_SNAPSHOT: Api[FetchSnapshotRequest, FetchSnapshotResponse] = Api(ApiKey.FETCH_SNAPSHOT)

__all__ = [
    "ADD_OFFSETS_TO_TXN",
    "ADD_PARTITIONS_TO_TXN",
    "ADD_RAFT_VOTER",
    "ALLOCATE_PRODUCER_IDS",
    "ALTER_CLIENT_QUOTAS",
    "ALTER_CONFIGS",
    "ALTER_PARTITION",
    "ALTER_PARTITION_REASSIGNMENTS",
    "ALTER_USER_SCRAM_CREDENTIALS",
    "API_VERSIONS",
    "BEGIN_QUORUM_EPOCH",
    "Api",
    "BROKER_HEARTBEAT",
    "BROKER_REGISTRATION",
    "CONSUMER_GROUP_DESCRIBE",
    "CONSUMER_GROUP_HEARTBEAT",
    "CREATE_ACLS",
    "CREATE_DELEGATION_TOKEN",
    "CREATE_PARTITIONS",
    "CREATE_TOPICS",
    "Call",
    "DELETE_ACLS",
    "DELETE_GROUPS",
    "DELETE_RECORDS",
    "DELETE_TOPICS",
    "DESCRIBE_ACLS",
    "DESCRIBE_CLIENT_QUOTAS",
    "DESCRIBE_CLUSTER",
    "DESCRIBE_CONFIGS",
    "DESCRIBE_DELEGATION_TOKEN",
    "GET_TELEMETRY_SUBSCRIPTIONS",
    "LIST_CONFIG_RESOURCES",
    "PUSH_TELEMETRY",
    "DESCRIBE_GROUPS",
    "DESCRIBE_LOG_DIRS",
    "DESCRIBE_PRODUCERS",
    "DESCRIBE_QUORUM",
    "DESCRIBE_TRANSACTIONS",
    "DESCRIBE_USER_SCRAM_CREDENTIALS",
    "ELECT_LEADERS",
    "END_QUORUM_EPOCH",
    "END_TXN",
    "EXPIRE_DELEGATION_TOKEN",
    "FETCH",
    "FETCH_SNAPSHOT",
    "FIND_COORDINATOR",
    "HEARTBEAT",
    "INCREMENTAL_ALTER_CONFIGS",
    "INIT_PRODUCER_ID",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "LIST_GROUPS",
    "LIST_OFFSETS",
    "LIST_PARTITION_REASSIGNMENTS",
    "LIST_TRANSACTIONS",
    "METADATA",
    "OFFSET_COMMIT",
    "OFFSET_DELETE",
    "OFFSET_FETCH",
    "OFFSET_FOR_LEADER_EPOCH",
    "PRODUCE",
    "REMOVE_RAFT_VOTER",
    "RENEW_DELEGATION_TOKEN",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "SHARE_GROUP_DESCRIBE",
    "SHARE_GROUP_HEARTBEAT",
    "SYNC_GROUP",
    "TXN_OFFSET_COMMIT",
    "UNREGISTER_BROKER",
    "UPDATE_FEATURES",
    "UPDATE_RAFT_VOTER",
    "VOTE",
    "WRITE_TXN_MARKERS",
    "INITIALIZE_SHARE_GROUP_STATE",
    "READ_SHARE_GROUP_STATE",
    "WRITE_SHARE_GROUP_STATE",
    "DELETE_SHARE_GROUP_STATE",
    "READ_SHARE_GROUP_STATE_SUMMARY",
]
