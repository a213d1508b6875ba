"""Typed views of every message Zurau has a schema for. GENERATED: do not edit.

Regenerate with ``python -m zurau.protocol.gen_types`` after changing a schema in
:mod:`zurau.protocol.schemas`; a unit test fails while this file is stale. See
:mod:`zurau.protocol.gen_types` for the naming and typing rules. In short: one ``TypedDict`` per
request, response, data struct and nested struct; each covers all versions of its message; every
key may be left out when encoding (it takes its default) and is present after decoding.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

Records = Any
"""A records field: a ``memoryview`` when decoded; bytes-like or a sendfile region when encoded."""


class ProduceRequestTopicDataPartitionData(TypedDict, total=False):
    """An element of ``ProduceRequestTopicData.partition_data``."""

    index: int
    records: Records | None  # nullable v0+


class ProduceRequestTopicData(TypedDict, total=False):
    """An element of ``ProduceRequest.topic_data``."""

    name: str  # v0-12
    topic_id: uuid.UUID  # v13+
    partition_data: list[ProduceRequestTopicDataPartitionData]


class ProduceRequest(TypedDict, total=False):
    """Produce request (api key 0), v3-13; flexible v9+."""

    transactional_id: str | None  # nullable v3+
    acks: int
    timeout_ms: int
    topic_data: list[ProduceRequestTopicData]


class ProduceResponseResponsesPartitionResponsesRecordErrors(TypedDict, total=False):
    """An element of ``ProduceResponseResponsesPartitionResponses.record_errors``."""

    batch_index: int  # v8+
    batch_index_error_message: str | None  # v8+, nullable v8+


class ProduceResponseResponsesPartitionResponsesCurrentLeader(TypedDict, total=False):
    """The value of ``ProduceResponseResponsesPartitionResponses.current_leader``."""

    leader_id: int  # v10+
    leader_epoch: int  # v10+


class ProduceResponseResponsesPartitionResponses(TypedDict, total=False):
    """An element of ``ProduceResponseResponses.partition_responses``."""

    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int  # v5+
    record_errors: list[ProduceResponseResponsesPartitionResponsesRecordErrors]  # v8+
    error_message: str | None  # v8+, nullable v8+
    current_leader: ProduceResponseResponsesPartitionResponsesCurrentLeader  # v10+, tagged v10+ (tag 0)


class ProduceResponseResponses(TypedDict, total=False):
    """An element of ``ProduceResponse.responses``."""

    name: str  # v0-12
    topic_id: uuid.UUID  # v13+
    partition_responses: list[ProduceResponseResponsesPartitionResponses]


class ProduceResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``ProduceResponse.node_endpoints``."""

    node_id: int  # v10+
    host: str  # v10+
    port: int  # v10+
    rack: str | None  # v10+, nullable v10+


class ProduceResponse(TypedDict, total=False):
    """Produce response (api key 0), v3-13; flexible v9+."""

    responses: list[ProduceResponseResponses]
    throttle_time_ms: int
    node_endpoints: list[ProduceResponseNodeEndpoints]  # v10+, tagged v10+ (tag 0)


class FetchRequestReplicaState(TypedDict, total=False):
    """The value of ``FetchRequest.replica_state``."""

    replica_id: int  # v15+
    replica_epoch: int  # v15+


class FetchRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``FetchRequestTopics.partitions``."""

    partition: int
    current_leader_epoch: int  # v9+
    fetch_offset: int
    last_fetched_epoch: int  # v12+
    log_start_offset: int  # v5+
    partition_max_bytes: int
    replica_directory_id: uuid.UUID  # v17+, tagged v17+ (tag 0)
    high_watermark: int  # v18+, tagged v18+ (tag 1)


class FetchRequestTopics(TypedDict, total=False):
    """An element of ``FetchRequest.topics``."""

    topic: str  # v0-12
    topic_id: uuid.UUID  # v13+
    partitions: list[FetchRequestTopicsPartitions]


class FetchRequestForgottenTopicsData(TypedDict, total=False):
    """An element of ``FetchRequest.forgotten_topics_data``."""

    topic: str  # v7-12
    topic_id: uuid.UUID  # v13+
    partitions: list[int]  # v7+


class FetchRequest(TypedDict, total=False):
    """Fetch request (api key 1), v4-18; flexible v12+."""

    cluster_id: str | None  # v12+, nullable v12+, tagged v12+ (tag 0)
    replica_id: int  # v0-14
    replica_state: FetchRequestReplicaState  # v15+, tagged v15+ (tag 1)
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int  # v7+
    session_epoch: int  # v7+
    topics: list[FetchRequestTopics]
    forgotten_topics_data: list[FetchRequestForgottenTopicsData]  # v7+
    rack_id: str  # v11+


class FetchResponseResponsesPartitionsDivergingEpoch(TypedDict, total=False):
    """The value of ``FetchResponseResponsesPartitions.diverging_epoch``."""

    epoch: int  # v12+
    end_offset: int  # v12+


class FetchResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    """The value of ``FetchResponseResponsesPartitions.current_leader``."""

    leader_id: int  # v12+
    leader_epoch: int  # v12+


class FetchResponseResponsesPartitionsSnapshotId(TypedDict, total=False):
    """The value of ``FetchResponseResponsesPartitions.snapshot_id``."""

    end_offset: int
    epoch: int


class FetchResponseResponsesPartitionsAbortedTransactions(TypedDict, total=False):
    """An element of ``FetchResponseResponsesPartitions.aborted_transactions``."""

    producer_id: int
    first_offset: int


class FetchResponseResponsesPartitions(TypedDict, total=False):
    """An element of ``FetchResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int  # v5+
    diverging_epoch: FetchResponseResponsesPartitionsDivergingEpoch  # v12+, tagged v12+ (tag 0)
    current_leader: FetchResponseResponsesPartitionsCurrentLeader  # v12+, tagged v12+ (tag 1)
    snapshot_id: FetchResponseResponsesPartitionsSnapshotId  # v12+, tagged v12+ (tag 2)
    aborted_transactions: list[FetchResponseResponsesPartitionsAbortedTransactions] | None  # nullable v4+
    preferred_read_replica: int  # v11+
    records: Records | None  # nullable v0+


class FetchResponseResponses(TypedDict, total=False):
    """An element of ``FetchResponse.responses``."""

    topic: str  # v0-12
    topic_id: uuid.UUID  # v13+
    partitions: list[FetchResponseResponsesPartitions]


class FetchResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``FetchResponse.node_endpoints``."""

    node_id: int  # v16+
    host: str  # v16+
    port: int  # v16+
    rack: str | None  # v16+, nullable v16+


class FetchResponse(TypedDict, total=False):
    """Fetch response (api key 1), v4-18; flexible v12+."""

    throttle_time_ms: int
    error_code: int  # v7+
    session_id: int  # v7+
    responses: list[FetchResponseResponses]
    node_endpoints: list[FetchResponseNodeEndpoints]  # v16+, tagged v16+ (tag 0)


class ListOffsetsRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``ListOffsetsRequestTopics.partitions``."""

    partition_index: int
    current_leader_epoch: int  # v4+
    timestamp: int


class ListOffsetsRequestTopics(TypedDict, total=False):
    """An element of ``ListOffsetsRequest.topics``."""

    name: str
    partitions: list[ListOffsetsRequestTopicsPartitions]


class ListOffsetsRequest(TypedDict, total=False):
    """ListOffsets request (api key 2), v1-11; flexible v6+."""

    replica_id: int
    isolation_level: int  # v2+
    topics: list[ListOffsetsRequestTopics]
    timeout_ms: int  # v10+


class ListOffsetsResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``ListOffsetsResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    timestamp: int
    offset: int
    leader_epoch: int  # v4+


class ListOffsetsResponseTopics(TypedDict, total=False):
    """An element of ``ListOffsetsResponse.topics``."""

    name: str
    partitions: list[ListOffsetsResponseTopicsPartitions]


class ListOffsetsResponse(TypedDict, total=False):
    """ListOffsets response (api key 2), v1-11; flexible v6+."""

    throttle_time_ms: int  # v2+
    topics: list[ListOffsetsResponseTopics]


class MetadataRequestTopics(TypedDict, total=False):
    """An element of ``MetadataRequest.topics``."""

    topic_id: uuid.UUID  # v10+
    name: str | None  # nullable v10+


class MetadataRequest(TypedDict, total=False):
    """Metadata request (api key 3), v0-13; flexible v9+."""

    topics: list[MetadataRequestTopics] | None  # nullable v1+
    allow_auto_topic_creation: bool  # v4+
    include_cluster_authorized_operations: bool  # v8-10
    include_topic_authorized_operations: bool  # v8+


class MetadataResponseBrokers(TypedDict, total=False):
    """An element of ``MetadataResponse.brokers``."""

    node_id: int
    host: str
    port: int
    rack: str | None  # v1+, nullable v1+


class MetadataResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``MetadataResponseTopics.partitions``."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int  # v7+
    replica_nodes: list[int]
    isr_nodes: list[int]
    offline_replicas: list[int]  # v5+


class MetadataResponseTopics(TypedDict, total=False):
    """An element of ``MetadataResponse.topics``."""

    error_code: int
    name: str | None  # nullable v12+
    topic_id: uuid.UUID  # v10+
    is_internal: bool  # v1+
    partitions: list[MetadataResponseTopicsPartitions]
    topic_authorized_operations: int  # v8+


class MetadataResponse(TypedDict, total=False):
    """Metadata response (api key 3), v0-13; flexible v9+."""

    throttle_time_ms: int  # v3+
    brokers: list[MetadataResponseBrokers]
    cluster_id: str | None  # v2+, nullable v2+
    controller_id: int  # v1+
    topics: list[MetadataResponseTopics]
    cluster_authorized_operations: int  # v8-10
    error_code: int  # v13+


class OffsetCommitRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetCommitRequestTopics.partitions``."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int  # v6+
    commit_timestamp: int  # v1
    committed_metadata: str | None  # nullable v0+


class OffsetCommitRequestTopics(TypedDict, total=False):
    """An element of ``OffsetCommitRequest.topics``."""

    name: str  # v0-9
    topic_id: uuid.UUID  # v10+
    partitions: list[OffsetCommitRequestTopicsPartitions]


class OffsetCommitRequest(TypedDict, total=False):
    """OffsetCommit request (api key 8), v2-10; flexible v8+."""

    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None  # v7+, nullable v7+
    retention_time_ms: int  # v2-4
    topics: list[OffsetCommitRequestTopics]


class OffsetCommitResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetCommitResponseTopics.partitions``."""

    partition_index: int
    error_code: int


class OffsetCommitResponseTopics(TypedDict, total=False):
    """An element of ``OffsetCommitResponse.topics``."""

    name: str  # v0-9
    topic_id: uuid.UUID  # v10+
    partitions: list[OffsetCommitResponseTopicsPartitions]


class OffsetCommitResponse(TypedDict, total=False):
    """OffsetCommit response (api key 8), v2-10; flexible v8+."""

    throttle_time_ms: int  # v3+
    topics: list[OffsetCommitResponseTopics]


class OffsetFetchRequestTopics(TypedDict, total=False):
    """An element of ``OffsetFetchRequest.topics``."""

    name: str  # v0-7
    partition_indexes: list[int]  # v0-7


class OffsetFetchRequestGroupsTopics(TypedDict, total=False):
    """An element of ``OffsetFetchRequestGroups.topics``."""

    name: str  # v8-9
    topic_id: uuid.UUID  # v10+
    partition_indexes: list[int]  # v8+


class OffsetFetchRequestGroups(TypedDict, total=False):
    """An element of ``OffsetFetchRequest.groups``."""

    group_id: str  # v8+
    member_id: str | None  # v9+, nullable v9+
    member_epoch: int  # v9+
    topics: list[OffsetFetchRequestGroupsTopics] | None  # v8+, nullable v8+


class OffsetFetchRequest(TypedDict, total=False):
    """OffsetFetch request (api key 9), v1-10; flexible v6+."""

    group_id: str  # v0-7
    topics: list[OffsetFetchRequestTopics] | None  # v0-7, nullable v2-7
    groups: list[OffsetFetchRequestGroups]  # v8+
    require_stable: bool  # v7+


class OffsetFetchResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetFetchResponseTopics.partitions``."""

    partition_index: int  # v0-7
    committed_offset: int  # v0-7
    committed_leader_epoch: int  # v5-7
    metadata: str | None  # v0-7, nullable v0-7
    error_code: int  # v0-7


class OffsetFetchResponseTopics(TypedDict, total=False):
    """An element of ``OffsetFetchResponse.topics``."""

    name: str  # v0-7
    partitions: list[OffsetFetchResponseTopicsPartitions]  # v0-7


class OffsetFetchResponseGroupsTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetFetchResponseGroupsTopics.partitions``."""

    partition_index: int  # v8+
    committed_offset: int  # v8+
    committed_leader_epoch: int  # v8+
    metadata: str | None  # v8+, nullable v8+
    error_code: int  # v8+


class OffsetFetchResponseGroupsTopics(TypedDict, total=False):
    """An element of ``OffsetFetchResponseGroups.topics``."""

    name: str  # v8-9
    topic_id: uuid.UUID  # v10+
    partitions: list[OffsetFetchResponseGroupsTopicsPartitions]  # v8+


class OffsetFetchResponseGroups(TypedDict, total=False):
    """An element of ``OffsetFetchResponse.groups``."""

    group_id: str  # v8+
    topics: list[OffsetFetchResponseGroupsTopics]  # v8+
    error_code: int  # v8+


class OffsetFetchResponse(TypedDict, total=False):
    """OffsetFetch response (api key 9), v1-10; flexible v6+."""

    throttle_time_ms: int  # v3+
    topics: list[OffsetFetchResponseTopics]  # v0-7
    error_code: int  # v2-7
    groups: list[OffsetFetchResponseGroups]  # v8+


class FindCoordinatorRequest(TypedDict, total=False):
    """FindCoordinator request (api key 10), v0-6; flexible v3+."""

    key: str  # v0-3
    key_type: int  # v1+
    coordinator_keys: list[str]  # v4+


class FindCoordinatorResponseCoordinators(TypedDict, total=False):
    """An element of ``FindCoordinatorResponse.coordinators``."""

    key: str  # v4+
    node_id: int  # v4+
    host: str  # v4+
    port: int  # v4+
    error_code: int  # v4+
    error_message: str | None  # v4+, nullable v4+


class FindCoordinatorResponse(TypedDict, total=False):
    """FindCoordinator response (api key 10), v0-6; flexible v3+."""

    throttle_time_ms: int  # v1+
    error_code: int  # v0-3
    error_message: str | None  # v1-3, nullable v1-3
    node_id: int  # v0-3
    host: str  # v0-3
    port: int  # v0-3
    coordinators: list[FindCoordinatorResponseCoordinators]  # v4+


class JoinGroupRequestProtocols(TypedDict, total=False):
    """An element of ``JoinGroupRequest.protocols``."""

    name: str
    metadata: bytes


class JoinGroupRequest(TypedDict, total=False):
    """JoinGroup request (api key 11), v0-9; flexible v6+."""

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int  # v1+
    member_id: str
    group_instance_id: str | None  # v5+, nullable v5+
    protocol_type: str
    protocols: list[JoinGroupRequestProtocols]
    reason: str | None  # v8+, nullable v8+


class JoinGroupResponseMembers(TypedDict, total=False):
    """An element of ``JoinGroupResponse.members``."""

    member_id: str
    group_instance_id: str | None  # v5+, nullable v5+
    metadata: bytes


class JoinGroupResponse(TypedDict, total=False):
    """JoinGroup response (api key 11), v0-9; flexible v6+."""

    throttle_time_ms: int  # v2+
    error_code: int
    generation_id: int
    protocol_type: str | None  # v7+, nullable v7+
    protocol_name: str | None  # nullable v7+
    leader: str
    skip_assignment: bool  # v9+
    member_id: str
    members: list[JoinGroupResponseMembers]


class HeartbeatRequest(TypedDict, total=False):
    """Heartbeat request (api key 12), v0-4; flexible v4+."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None  # v3+, nullable v3+


class HeartbeatResponse(TypedDict, total=False):
    """Heartbeat response (api key 12), v0-4; flexible v4+."""

    throttle_time_ms: int  # v1+
    error_code: int


class LeaveGroupRequestMembers(TypedDict, total=False):
    """An element of ``LeaveGroupRequest.members``."""

    member_id: str  # v3+
    group_instance_id: str | None  # v3+, nullable v3+
    reason: str | None  # v5+, nullable v5+


class LeaveGroupRequest(TypedDict, total=False):
    """LeaveGroup request (api key 13), v0-5; flexible v4+."""

    group_id: str
    member_id: str  # v0-2
    members: list[LeaveGroupRequestMembers]  # v3+


class LeaveGroupResponseMembers(TypedDict, total=False):
    """An element of ``LeaveGroupResponse.members``."""

    member_id: str  # v3+
    group_instance_id: str | None  # v3+, nullable v3+
    error_code: int  # v3+


class LeaveGroupResponse(TypedDict, total=False):
    """LeaveGroup response (api key 13), v0-5; flexible v4+."""

    throttle_time_ms: int  # v1+
    error_code: int
    members: list[LeaveGroupResponseMembers]  # v3+


class SyncGroupRequestAssignments(TypedDict, total=False):
    """An element of ``SyncGroupRequest.assignments``."""

    member_id: str
    assignment: bytes


class SyncGroupRequest(TypedDict, total=False):
    """SyncGroup request (api key 14), v0-5; flexible v4+."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None  # v3+, nullable v3+
    protocol_type: str | None  # v5+, nullable v5+
    protocol_name: str | None  # v5+, nullable v5+
    assignments: list[SyncGroupRequestAssignments]


class SyncGroupResponse(TypedDict, total=False):
    """SyncGroup response (api key 14), v0-5; flexible v4+."""

    throttle_time_ms: int  # v1+
    error_code: int
    protocol_type: str | None  # v5+, nullable v5+
    protocol_name: str | None  # v5+, nullable v5+
    assignment: bytes


class DescribeGroupsRequest(TypedDict, total=False):
    """DescribeGroups request (api key 15), v0-6; flexible v5+."""

    groups: list[str]
    include_authorized_operations: bool  # v3+


class DescribeGroupsResponseGroupsMembers(TypedDict, total=False):
    """An element of ``DescribeGroupsResponseGroups.members``."""

    member_id: str
    group_instance_id: str | None  # v4+, nullable v4+
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class DescribeGroupsResponseGroups(TypedDict, total=False):
    """An element of ``DescribeGroupsResponse.groups``."""

    error_code: int
    error_message: str | None  # v6+, nullable v6+
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribeGroupsResponseGroupsMembers]
    authorized_operations: int  # v3+


class DescribeGroupsResponse(TypedDict, total=False):
    """DescribeGroups response (api key 15), v0-6; flexible v5+."""

    throttle_time_ms: int  # v1+
    groups: list[DescribeGroupsResponseGroups]


class ListGroupsRequest(TypedDict, total=False):
    """ListGroups request (api key 16), v0-5; flexible v3+."""

    states_filter: list[str]  # v4+
    types_filter: list[str]  # v5+


class ListGroupsResponseGroups(TypedDict, total=False):
    """An element of ``ListGroupsResponse.groups``."""

    group_id: str
    protocol_type: str
    group_state: str  # v4+
    group_type: str  # v5+


class ListGroupsResponse(TypedDict, total=False):
    """ListGroups response (api key 16), v0-5; flexible v3+."""

    throttle_time_ms: int  # v1+
    error_code: int
    groups: list[ListGroupsResponseGroups]


class SaslHandshakeRequest(TypedDict, total=False):
    """SaslHandshake request (api key 17), v0-1."""

    mechanism: str


class SaslHandshakeResponse(TypedDict, total=False):
    """SaslHandshake response (api key 17), v0-1."""

    error_code: int
    mechanisms: list[str]


class ApiVersionsRequest(TypedDict, total=False):
    """ApiVersions request (api key 18), v0-4; flexible v3+."""

    client_software_name: str  # v3+
    client_software_version: str  # v3+


class ApiVersionsResponseApiKeys(TypedDict, total=False):
    """An element of ``ApiVersionsResponse.api_keys``."""

    api_key: int
    min_version: int
    max_version: int


class ApiVersionsResponseSupportedFeatures(TypedDict, total=False):
    """An element of ``ApiVersionsResponse.supported_features``."""

    name: str
    min_version: int
    max_version: int


class ApiVersionsResponseFinalizedFeatures(TypedDict, total=False):
    """An element of ``ApiVersionsResponse.finalized_features``."""

    name: str
    max_version_level: int
    min_version_level: int


class ApiVersionsResponse(TypedDict, total=False):
    """ApiVersions response (api key 18), v0-4; flexible v3+."""

    error_code: int
    api_keys: list[ApiVersionsResponseApiKeys]
    throttle_time_ms: int  # v1+
    supported_features: list[ApiVersionsResponseSupportedFeatures]  # v3+, tagged v3+ (tag 0)
    finalized_features_epoch: int  # v3+, tagged v3+ (tag 1)
    finalized_features: list[ApiVersionsResponseFinalizedFeatures]  # v3+, tagged v3+ (tag 2)
    zk_migration_ready: bool  # v3+, tagged v3+ (tag 3)


class CreateTopicsRequestTopicsAssignments(TypedDict, total=False):
    """An element of ``CreateTopicsRequestTopics.assignments``."""

    partition_index: int
    broker_ids: list[int]


class CreateTopicsRequestTopicsConfigs(TypedDict, total=False):
    """An element of ``CreateTopicsRequestTopics.configs``."""

    name: str
    value: str | None  # nullable v0+


class CreateTopicsRequestTopics(TypedDict, total=False):
    """An element of ``CreateTopicsRequest.topics``."""

    name: str
    num_partitions: int
    replication_factor: int
    assignments: list[CreateTopicsRequestTopicsAssignments]
    configs: list[CreateTopicsRequestTopicsConfigs]


class CreateTopicsRequest(TypedDict, total=False):
    """CreateTopics request (api key 19), v2-7; flexible v5+."""

    topics: list[CreateTopicsRequestTopics]
    timeout_ms: int
    validate_only: bool


class CreateTopicsResponseTopicsConfigs(TypedDict, total=False):
    """An element of ``CreateTopicsResponseTopics.configs``."""

    name: str  # v5+
    value: str | None  # v5+, nullable v5+
    read_only: bool  # v5+
    config_source: int  # v5+
    is_sensitive: bool  # v5+


class CreateTopicsResponseTopics(TypedDict, total=False):
    """An element of ``CreateTopicsResponse.topics``."""

    name: str
    topic_id: uuid.UUID  # v7+
    error_code: int
    error_message: str | None  # nullable v0+
    topic_config_error_code: int  # v5+, tagged v5+ (tag 0)
    num_partitions: int  # v5+
    replication_factor: int  # v5+
    configs: list[CreateTopicsResponseTopicsConfigs] | None  # v5+, nullable v5+


class CreateTopicsResponse(TypedDict, total=False):
    """CreateTopics response (api key 19), v2-7; flexible v5+."""

    throttle_time_ms: int
    topics: list[CreateTopicsResponseTopics]


class DeleteTopicsRequestTopics(TypedDict, total=False):
    """An element of ``DeleteTopicsRequest.topics``."""

    name: str | None  # v6+, nullable v6+
    topic_id: uuid.UUID  # v6+


class DeleteTopicsRequest(TypedDict, total=False):
    """DeleteTopics request (api key 20), v1-6; flexible v4+."""

    topics: list[DeleteTopicsRequestTopics]  # v6+
    topic_names: list[str]  # v0-5
    timeout_ms: int


class DeleteTopicsResponseResponses(TypedDict, total=False):
    """An element of ``DeleteTopicsResponse.responses``."""

    name: str | None  # nullable v6+
    topic_id: uuid.UUID  # v6+
    error_code: int
    error_message: str | None  # v5+, nullable v5+


class DeleteTopicsResponse(TypedDict, total=False):
    """DeleteTopics response (api key 20), v1-6; flexible v4+."""

    throttle_time_ms: int
    responses: list[DeleteTopicsResponseResponses]


class DeleteRecordsRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``DeleteRecordsRequestTopics.partitions``."""

    partition_index: int
    offset: int


class DeleteRecordsRequestTopics(TypedDict, total=False):
    """An element of ``DeleteRecordsRequest.topics``."""

    name: str
    partitions: list[DeleteRecordsRequestTopicsPartitions]


class DeleteRecordsRequest(TypedDict, total=False):
    """DeleteRecords request (api key 21), v0-2; flexible v2+."""

    topics: list[DeleteRecordsRequestTopics]
    timeout_ms: int


class DeleteRecordsResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``DeleteRecordsResponseTopics.partitions``."""

    partition_index: int
    low_watermark: int
    error_code: int


class DeleteRecordsResponseTopics(TypedDict, total=False):
    """An element of ``DeleteRecordsResponse.topics``."""

    name: str
    partitions: list[DeleteRecordsResponseTopicsPartitions]


class DeleteRecordsResponse(TypedDict, total=False):
    """DeleteRecords response (api key 21), v0-2; flexible v2+."""

    throttle_time_ms: int
    topics: list[DeleteRecordsResponseTopics]


class InitProducerIdRequest(TypedDict, total=False):
    """InitProducerId request (api key 22), v0-6; flexible v2+."""

    transactional_id: str | None  # nullable v0+
    transaction_timeout_ms: int
    producer_id: int  # v3+
    producer_epoch: int  # v3+
    enable2_pc: bool  # v6+
    keep_prepared_txn: bool  # v6+


class InitProducerIdResponse(TypedDict, total=False):
    """InitProducerId response (api key 22), v0-6; flexible v2+."""

    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    ongoing_txn_producer_id: int  # v6+
    ongoing_txn_producer_epoch: int  # v6+


class OffsetForLeaderEpochRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetForLeaderEpochRequestTopics.partitions``."""

    partition: int
    current_leader_epoch: int
    leader_epoch: int


class OffsetForLeaderEpochRequestTopics(TypedDict, total=False):
    """An element of ``OffsetForLeaderEpochRequest.topics``."""

    topic: str
    partitions: list[OffsetForLeaderEpochRequestTopicsPartitions]


class OffsetForLeaderEpochRequest(TypedDict, total=False):
    """OffsetForLeaderEpoch request (api key 23), v2-4; flexible v4+."""

    replica_id: int  # v3+
    topics: list[OffsetForLeaderEpochRequestTopics]


class OffsetForLeaderEpochResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetForLeaderEpochResponseTopics.partitions``."""

    error_code: int
    partition: int
    leader_epoch: int
    end_offset: int


class OffsetForLeaderEpochResponseTopics(TypedDict, total=False):
    """An element of ``OffsetForLeaderEpochResponse.topics``."""

    topic: str
    partitions: list[OffsetForLeaderEpochResponseTopicsPartitions]


class OffsetForLeaderEpochResponse(TypedDict, total=False):
    """OffsetForLeaderEpoch response (api key 23), v2-4; flexible v4+."""

    throttle_time_ms: int
    topics: list[OffsetForLeaderEpochResponseTopics]


class AddPartitionsToTxnRequestTransactionsTopics(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnRequestTransactions.topics``.
    Also an element of ``AddPartitionsToTxnRequest.v3_and_below_topics``.
    """

    name: str
    partitions: list[int]


class AddPartitionsToTxnRequestTransactions(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnRequest.transactions``."""

    transactional_id: str  # v4+
    producer_id: int  # v4+
    producer_epoch: int  # v4+
    verify_only: bool  # v4+
    topics: list[AddPartitionsToTxnRequestTransactionsTopics]  # v4+


class AddPartitionsToTxnRequest(TypedDict, total=False):
    """AddPartitionsToTxn request (api key 24), v0-5; flexible v3+."""

    transactions: list[AddPartitionsToTxnRequestTransactions]  # v4+
    v3_and_below_transactional_id: str  # v0-3
    v3_and_below_producer_id: int  # v0-3
    v3_and_below_producer_epoch: int  # v0-3
    v3_and_below_topics: list[AddPartitionsToTxnRequestTransactionsTopics]  # v0-3


class AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnResponseResultsByTransactionTopicResults.results_by_partition``."""

    partition_index: int
    partition_error_code: int


class AddPartitionsToTxnResponseResultsByTransactionTopicResults(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnResponseResultsByTransaction.topic_results``.
    Also an element of ``AddPartitionsToTxnResponse.results_by_topic_v3_and_below``.
    """

    name: str
    results_by_partition: list[AddPartitionsToTxnResponseResultsByTransactionTopicResultsResultsByPartition]


class AddPartitionsToTxnResponseResultsByTransaction(TypedDict, total=False):
    """An element of ``AddPartitionsToTxnResponse.results_by_transaction``."""

    transactional_id: str  # v4+
    topic_results: list[AddPartitionsToTxnResponseResultsByTransactionTopicResults]  # v4+


class AddPartitionsToTxnResponse(TypedDict, total=False):
    """AddPartitionsToTxn response (api key 24), v0-5; flexible v3+."""

    throttle_time_ms: int
    error_code: int  # v4+
    results_by_transaction: list[AddPartitionsToTxnResponseResultsByTransaction]  # v4+
    results_by_topic_v3_and_below: list[AddPartitionsToTxnResponseResultsByTransactionTopicResults]  # v0-3


class AddOffsetsToTxnRequest(TypedDict, total=False):
    """AddOffsetsToTxn request (api key 25), v0-4; flexible v3+."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


class AddOffsetsToTxnResponse(TypedDict, total=False):
    """AddOffsetsToTxn response (api key 25), v0-4; flexible v3+."""

    throttle_time_ms: int
    error_code: int


class EndTxnRequest(TypedDict, total=False):
    """EndTxn request (api key 26), v0-5; flexible v3+."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


class EndTxnResponse(TypedDict, total=False):
    """EndTxn response (api key 26), v0-5; flexible v3+."""

    throttle_time_ms: int
    error_code: int
    producer_id: int  # v5+
    producer_epoch: int  # v5+


class WriteTxnMarkersRequestMarkersTopics(TypedDict, total=False):
    """An element of ``WriteTxnMarkersRequestMarkers.topics``."""

    name: str
    partition_indexes: list[int]


class WriteTxnMarkersRequestMarkers(TypedDict, total=False):
    """An element of ``WriteTxnMarkersRequest.markers``."""

    producer_id: int
    producer_epoch: int
    transaction_result: bool
    topics: list[WriteTxnMarkersRequestMarkersTopics]
    coordinator_epoch: int
    transaction_version: int  # v2+


class WriteTxnMarkersRequest(TypedDict, total=False):
    """WriteTxnMarkers request (api key 27), v1-2; flexible v1+."""

    markers: list[WriteTxnMarkersRequestMarkers]


class WriteTxnMarkersResponseMarkersTopicsPartitions(TypedDict, total=False):
    """An element of ``WriteTxnMarkersResponseMarkersTopics.partitions``."""

    partition_index: int
    error_code: int


class WriteTxnMarkersResponseMarkersTopics(TypedDict, total=False):
    """An element of ``WriteTxnMarkersResponseMarkers.topics``."""

    name: str
    partitions: list[WriteTxnMarkersResponseMarkersTopicsPartitions]


class WriteTxnMarkersResponseMarkers(TypedDict, total=False):
    """An element of ``WriteTxnMarkersResponse.markers``."""

    producer_id: int
    topics: list[WriteTxnMarkersResponseMarkersTopics]


class WriteTxnMarkersResponse(TypedDict, total=False):
    """WriteTxnMarkers response (api key 27), v1-2; flexible v1+."""

    markers: list[WriteTxnMarkersResponseMarkers]


class TxnOffsetCommitRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``TxnOffsetCommitRequestTopics.partitions``."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int  # v2+
    committed_metadata: str | None  # nullable v0+


class TxnOffsetCommitRequestTopics(TypedDict, total=False):
    """An element of ``TxnOffsetCommitRequest.topics``."""

    name: str
    partitions: list[TxnOffsetCommitRequestTopicsPartitions]


class TxnOffsetCommitRequest(TypedDict, total=False):
    """TxnOffsetCommit request (api key 28), v0-5; flexible v3+."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int  # v3+
    member_id: str  # v3+
    group_instance_id: str | None  # v3+, nullable v3+
    topics: list[TxnOffsetCommitRequestTopics]


class TxnOffsetCommitResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``TxnOffsetCommitResponseTopics.partitions``."""

    partition_index: int
    error_code: int


class TxnOffsetCommitResponseTopics(TypedDict, total=False):
    """An element of ``TxnOffsetCommitResponse.topics``."""

    name: str
    partitions: list[TxnOffsetCommitResponseTopicsPartitions]


class TxnOffsetCommitResponse(TypedDict, total=False):
    """TxnOffsetCommit response (api key 28), v0-5; flexible v3+."""

    throttle_time_ms: int
    topics: list[TxnOffsetCommitResponseTopics]


class DescribeAclsRequest(TypedDict, total=False):
    """DescribeAcls request (api key 29), v1-3; flexible v2+."""

    resource_type_filter: int
    resource_name_filter: str | None  # nullable v0+
    pattern_type_filter: int
    principal_filter: str | None  # nullable v0+
    host_filter: str | None  # nullable v0+
    operation: int
    permission_type: int


class DescribeAclsResponseResourcesAcls(TypedDict, total=False):
    """An element of ``DescribeAclsResponseResources.acls``."""

    principal: str
    host: str
    operation: int
    permission_type: int


class DescribeAclsResponseResources(TypedDict, total=False):
    """An element of ``DescribeAclsResponse.resources``."""

    resource_type: int
    resource_name: str
    pattern_type: int
    acls: list[DescribeAclsResponseResourcesAcls]


class DescribeAclsResponse(TypedDict, total=False):
    """DescribeAcls response (api key 29), v1-3; flexible v2+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    resources: list[DescribeAclsResponseResources]


class CreateAclsRequestCreations(TypedDict, total=False):
    """An element of ``CreateAclsRequest.creations``."""

    resource_type: int
    resource_name: str
    resource_pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class CreateAclsRequest(TypedDict, total=False):
    """CreateAcls request (api key 30), v1-3; flexible v2+."""

    creations: list[CreateAclsRequestCreations]


class CreateAclsResponseResults(TypedDict, total=False):
    """An element of ``CreateAclsResponse.results``."""

    error_code: int
    error_message: str | None  # nullable v0+


class CreateAclsResponse(TypedDict, total=False):
    """CreateAcls response (api key 30), v1-3; flexible v2+."""

    throttle_time_ms: int
    results: list[CreateAclsResponseResults]


class DeleteAclsRequestFilters(TypedDict, total=False):
    """An element of ``DeleteAclsRequest.filters``."""

    resource_type_filter: int
    resource_name_filter: str | None  # nullable v0+
    pattern_type_filter: int
    principal_filter: str | None  # nullable v0+
    host_filter: str | None  # nullable v0+
    operation: int
    permission_type: int


class DeleteAclsRequest(TypedDict, total=False):
    """DeleteAcls request (api key 31), v1-3; flexible v2+."""

    filters: list[DeleteAclsRequestFilters]


class DeleteAclsResponseFilterResultsMatchingAcls(TypedDict, total=False):
    """An element of ``DeleteAclsResponseFilterResults.matching_acls``."""

    error_code: int
    error_message: str | None  # nullable v0+
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class DeleteAclsResponseFilterResults(TypedDict, total=False):
    """An element of ``DeleteAclsResponse.filter_results``."""

    error_code: int
    error_message: str | None  # nullable v0+
    matching_acls: list[DeleteAclsResponseFilterResultsMatchingAcls]


class DeleteAclsResponse(TypedDict, total=False):
    """DeleteAcls response (api key 31), v1-3; flexible v2+."""

    throttle_time_ms: int
    filter_results: list[DeleteAclsResponseFilterResults]


class DescribeConfigsRequestResources(TypedDict, total=False):
    """An element of ``DescribeConfigsRequest.resources``."""

    resource_type: int
    resource_name: str
    configuration_keys: list[str] | None  # nullable v0+


class DescribeConfigsRequest(TypedDict, total=False):
    """DescribeConfigs request (api key 32), v1-4; flexible v4+."""

    resources: list[DescribeConfigsRequestResources]
    include_synonyms: bool
    include_documentation: bool  # v3+


class DescribeConfigsResponseResultsConfigsSynonyms(TypedDict, total=False):
    """An element of ``DescribeConfigsResponseResultsConfigs.synonyms``."""

    name: str
    value: str | None  # nullable v0+
    source: int


class DescribeConfigsResponseResultsConfigs(TypedDict, total=False):
    """An element of ``DescribeConfigsResponseResults.configs``."""

    name: str
    value: str | None  # nullable v0+
    read_only: bool
    config_source: int
    is_default: bool  # v0
    is_sensitive: bool
    synonyms: list[DescribeConfigsResponseResultsConfigsSynonyms]
    config_type: int  # v3+
    documentation: str | None  # v3+, nullable v0+


class DescribeConfigsResponseResults(TypedDict, total=False):
    """An element of ``DescribeConfigsResponse.results``."""

    error_code: int
    error_message: str | None  # nullable v0+
    resource_type: int
    resource_name: str
    configs: list[DescribeConfigsResponseResultsConfigs]


class DescribeConfigsResponse(TypedDict, total=False):
    """DescribeConfigs response (api key 32), v1-4; flexible v4+."""

    throttle_time_ms: int
    results: list[DescribeConfigsResponseResults]


class AlterConfigsRequestResourcesConfigs(TypedDict, total=False):
    """An element of ``AlterConfigsRequestResources.configs``."""

    name: str
    value: str | None  # nullable v0+


class AlterConfigsRequestResources(TypedDict, total=False):
    """An element of ``AlterConfigsRequest.resources``."""

    resource_type: int
    resource_name: str
    configs: list[AlterConfigsRequestResourcesConfigs]


class AlterConfigsRequest(TypedDict, total=False):
    """AlterConfigs request (api key 33), v0-2; flexible v2+."""

    resources: list[AlterConfigsRequestResources]
    validate_only: bool


class AlterConfigsResponseResponses(TypedDict, total=False):
    """An element of ``AlterConfigsResponse.responses``."""

    error_code: int
    error_message: str | None  # nullable v0+
    resource_type: int
    resource_name: str


class AlterConfigsResponse(TypedDict, total=False):
    """AlterConfigs response (api key 33), v0-2; flexible v2+."""

    throttle_time_ms: int
    responses: list[AlterConfigsResponseResponses]


class DescribeLogDirsRequestTopics(TypedDict, total=False):
    """An element of ``DescribeLogDirsRequest.topics``."""

    topic: str
    partitions: list[int]


class DescribeLogDirsRequest(TypedDict, total=False):
    """DescribeLogDirs request (api key 35), v1-5; flexible v2+."""

    topics: list[DescribeLogDirsRequestTopics] | None  # nullable v0+


class DescribeLogDirsResponseResultsTopicsPartitions(TypedDict, total=False):
    """An element of ``DescribeLogDirsResponseResultsTopics.partitions``."""

    partition_index: int
    partition_size: int
    offset_lag: int
    is_future_key: bool


class DescribeLogDirsResponseResultsTopics(TypedDict, total=False):
    """An element of ``DescribeLogDirsResponseResults.topics``."""

    name: str
    partitions: list[DescribeLogDirsResponseResultsTopicsPartitions]


class DescribeLogDirsResponseResults(TypedDict, total=False):
    """An element of ``DescribeLogDirsResponse.results``."""

    error_code: int
    log_dir: str
    topics: list[DescribeLogDirsResponseResultsTopics]
    total_bytes: int  # v4+
    usable_bytes: int  # v4+
    is_cordoned: bool  # v5+


class DescribeLogDirsResponse(TypedDict, total=False):
    """DescribeLogDirs response (api key 35), v1-5; flexible v2+."""

    throttle_time_ms: int
    error_code: int  # v3+
    results: list[DescribeLogDirsResponseResults]


class SaslAuthenticateRequest(TypedDict, total=False):
    """SaslAuthenticate request (api key 36), v0-2; flexible v2+."""

    auth_bytes: bytes


class SaslAuthenticateResponse(TypedDict, total=False):
    """SaslAuthenticate response (api key 36), v0-2; flexible v2+."""

    error_code: int
    error_message: str | None  # nullable v0+
    auth_bytes: bytes
    session_lifetime_ms: int  # v1+


class CreatePartitionsRequestTopicsAssignments(TypedDict, total=False):
    """An element of ``CreatePartitionsRequestTopics.assignments``."""

    broker_ids: list[int]


class CreatePartitionsRequestTopics(TypedDict, total=False):
    """An element of ``CreatePartitionsRequest.topics``."""

    name: str
    count: int
    assignments: list[CreatePartitionsRequestTopicsAssignments] | None  # nullable v0+


class CreatePartitionsRequest(TypedDict, total=False):
    """CreatePartitions request (api key 37), v0-3; flexible v2+."""

    topics: list[CreatePartitionsRequestTopics]
    timeout_ms: int
    validate_only: bool


class CreatePartitionsResponseResults(TypedDict, total=False):
    """An element of ``CreatePartitionsResponse.results``."""

    name: str
    error_code: int
    error_message: str | None  # nullable v0+


class CreatePartitionsResponse(TypedDict, total=False):
    """CreatePartitions response (api key 37), v0-3; flexible v2+."""

    throttle_time_ms: int
    results: list[CreatePartitionsResponseResults]


class CreateDelegationTokenRequestRenewers(TypedDict, total=False):
    """An element of ``CreateDelegationTokenRequest.renewers``."""

    principal_type: str
    principal_name: str


class CreateDelegationTokenRequest(TypedDict, total=False):
    """CreateDelegationToken request (api key 38), v1-3; flexible v2+."""

    owner_principal_type: str | None  # v3+, nullable v3+
    owner_principal_name: str | None  # v3+, nullable v3+
    renewers: list[CreateDelegationTokenRequestRenewers]
    max_lifetime_ms: int


class CreateDelegationTokenResponse(TypedDict, total=False):
    """CreateDelegationToken response (api key 38), v1-3; flexible v2+."""

    error_code: int
    principal_type: str
    principal_name: str
    token_requester_principal_type: str  # v3+
    token_requester_principal_name: str  # v3+
    issue_timestamp_ms: int
    expiry_timestamp_ms: int
    max_timestamp_ms: int
    token_id: str
    hmac: bytes
    throttle_time_ms: int


class RenewDelegationTokenRequest(TypedDict, total=False):
    """RenewDelegationToken request (api key 39), v1-2; flexible v2+."""

    hmac: bytes
    renew_period_ms: int


class RenewDelegationTokenResponse(TypedDict, total=False):
    """RenewDelegationToken response (api key 39), v1-2; flexible v2+."""

    error_code: int
    expiry_timestamp_ms: int
    throttle_time_ms: int


class ExpireDelegationTokenRequest(TypedDict, total=False):
    """ExpireDelegationToken request (api key 40), v1-2; flexible v2+."""

    hmac: bytes
    expiry_time_period_ms: int


class ExpireDelegationTokenResponse(TypedDict, total=False):
    """ExpireDelegationToken response (api key 40), v1-2; flexible v2+."""

    error_code: int
    expiry_timestamp_ms: int
    throttle_time_ms: int


class DescribeDelegationTokenRequestOwners(TypedDict, total=False):
    """An element of ``DescribeDelegationTokenRequest.owners``."""

    principal_type: str
    principal_name: str


class DescribeDelegationTokenRequest(TypedDict, total=False):
    """DescribeDelegationToken request (api key 41), v1-3; flexible v2+."""

    owners: list[DescribeDelegationTokenRequestOwners] | None  # nullable v0+


class DescribeDelegationTokenResponseTokensRenewers(TypedDict, total=False):
    """An element of ``DescribeDelegationTokenResponseTokens.renewers``."""

    principal_type: str
    principal_name: str


class DescribeDelegationTokenResponseTokens(TypedDict, total=False):
    """An element of ``DescribeDelegationTokenResponse.tokens``."""

    principal_type: str
    principal_name: str
    token_requester_principal_type: str  # v3+
    token_requester_principal_name: str  # v3+
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int
    token_id: str
    hmac: bytes
    renewers: list[DescribeDelegationTokenResponseTokensRenewers]


class DescribeDelegationTokenResponse(TypedDict, total=False):
    """DescribeDelegationToken response (api key 41), v1-3; flexible v2+."""

    error_code: int
    tokens: list[DescribeDelegationTokenResponseTokens]
    throttle_time_ms: int


class DeleteGroupsRequest(TypedDict, total=False):
    """DeleteGroups request (api key 42), v0-2; flexible v2+."""

    groups_names: list[str]


class DeleteGroupsResponseResults(TypedDict, total=False):
    """An element of ``DeleteGroupsResponse.results``."""

    group_id: str
    error_code: int


class DeleteGroupsResponse(TypedDict, total=False):
    """DeleteGroups response (api key 42), v0-2; flexible v2+."""

    throttle_time_ms: int
    results: list[DeleteGroupsResponseResults]


class ElectLeadersRequestTopicPartitions(TypedDict, total=False):
    """An element of ``ElectLeadersRequest.topic_partitions``."""

    topic: str
    partitions: list[int]


class ElectLeadersRequest(TypedDict, total=False):
    """ElectLeaders request (api key 43), v0-2; flexible v2+."""

    election_type: int  # v1+
    topic_partitions: list[ElectLeadersRequestTopicPartitions] | None  # nullable v0+
    timeout_ms: int


class ElectLeadersResponseReplicaElectionResultsPartitionResult(TypedDict, total=False):
    """An element of ``ElectLeadersResponseReplicaElectionResults.partition_result``."""

    partition_id: int
    error_code: int
    error_message: str | None  # nullable v0+


class ElectLeadersResponseReplicaElectionResults(TypedDict, total=False):
    """An element of ``ElectLeadersResponse.replica_election_results``."""

    topic: str
    partition_result: list[ElectLeadersResponseReplicaElectionResultsPartitionResult]


class ElectLeadersResponse(TypedDict, total=False):
    """ElectLeaders response (api key 43), v0-2; flexible v2+."""

    throttle_time_ms: int
    error_code: int  # v1+
    replica_election_results: list[ElectLeadersResponseReplicaElectionResults]


class IncrementalAlterConfigsRequestResourcesConfigs(TypedDict, total=False):
    """An element of ``IncrementalAlterConfigsRequestResources.configs``."""

    name: str
    config_operation: int
    value: str | None  # nullable v0+


class IncrementalAlterConfigsRequestResources(TypedDict, total=False):
    """An element of ``IncrementalAlterConfigsRequest.resources``."""

    resource_type: int
    resource_name: str
    configs: list[IncrementalAlterConfigsRequestResourcesConfigs]


class IncrementalAlterConfigsRequest(TypedDict, total=False):
    """IncrementalAlterConfigs request (api key 44), v0-1; flexible v1+."""

    resources: list[IncrementalAlterConfigsRequestResources]
    validate_only: bool


class IncrementalAlterConfigsResponseResponses(TypedDict, total=False):
    """An element of ``IncrementalAlterConfigsResponse.responses``."""

    error_code: int
    error_message: str | None  # nullable v0+
    resource_type: int
    resource_name: str


class IncrementalAlterConfigsResponse(TypedDict, total=False):
    """IncrementalAlterConfigs response (api key 44), v0-1; flexible v1+."""

    throttle_time_ms: int
    responses: list[IncrementalAlterConfigsResponseResponses]


class AlterPartitionReassignmentsRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``AlterPartitionReassignmentsRequestTopics.partitions``."""

    partition_index: int
    replicas: list[int] | None  # nullable v0+


class AlterPartitionReassignmentsRequestTopics(TypedDict, total=False):
    """An element of ``AlterPartitionReassignmentsRequest.topics``."""

    name: str
    partitions: list[AlterPartitionReassignmentsRequestTopicsPartitions]


class AlterPartitionReassignmentsRequest(TypedDict, total=False):
    """AlterPartitionReassignments request (api key 45), v0-1; flexible v0+."""

    timeout_ms: int
    allow_replication_factor_change: bool  # v1+
    topics: list[AlterPartitionReassignmentsRequestTopics]


class AlterPartitionReassignmentsResponseResponsesPartitions(TypedDict, total=False):
    """An element of ``AlterPartitionReassignmentsResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None  # nullable v0+


class AlterPartitionReassignmentsResponseResponses(TypedDict, total=False):
    """An element of ``AlterPartitionReassignmentsResponse.responses``."""

    name: str
    partitions: list[AlterPartitionReassignmentsResponseResponsesPartitions]


class AlterPartitionReassignmentsResponse(TypedDict, total=False):
    """AlterPartitionReassignments response (api key 45), v0-1; flexible v0+."""

    throttle_time_ms: int
    allow_replication_factor_change: bool  # v1+
    error_code: int
    error_message: str | None  # nullable v0+
    responses: list[AlterPartitionReassignmentsResponseResponses]


class ListPartitionReassignmentsRequestTopics(TypedDict, total=False):
    """An element of ``ListPartitionReassignmentsRequest.topics``."""

    name: str
    partition_indexes: list[int]


class ListPartitionReassignmentsRequest(TypedDict, total=False):
    """ListPartitionReassignments request (api key 46), v0-0; flexible v0+."""

    timeout_ms: int
    topics: list[ListPartitionReassignmentsRequestTopics] | None  # nullable v0+


class ListPartitionReassignmentsResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``ListPartitionReassignmentsResponseTopics.partitions``."""

    partition_index: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


class ListPartitionReassignmentsResponseTopics(TypedDict, total=False):
    """An element of ``ListPartitionReassignmentsResponse.topics``."""

    name: str
    partitions: list[ListPartitionReassignmentsResponseTopicsPartitions]


class ListPartitionReassignmentsResponse(TypedDict, total=False):
    """ListPartitionReassignments response (api key 46), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    topics: list[ListPartitionReassignmentsResponseTopics]


class OffsetDeleteRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetDeleteRequestTopics.partitions``."""

    partition_index: int


class OffsetDeleteRequestTopics(TypedDict, total=False):
    """An element of ``OffsetDeleteRequest.topics``."""

    name: str
    partitions: list[OffsetDeleteRequestTopicsPartitions]


class OffsetDeleteRequest(TypedDict, total=False):
    """OffsetDelete request (api key 47), v0-0."""

    group_id: str
    topics: list[OffsetDeleteRequestTopics]


class OffsetDeleteResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``OffsetDeleteResponseTopics.partitions``."""

    partition_index: int
    error_code: int


class OffsetDeleteResponseTopics(TypedDict, total=False):
    """An element of ``OffsetDeleteResponse.topics``."""

    name: str
    partitions: list[OffsetDeleteResponseTopicsPartitions]


class OffsetDeleteResponse(TypedDict, total=False):
    """OffsetDelete response (api key 47), v0-0."""

    error_code: int
    throttle_time_ms: int
    topics: list[OffsetDeleteResponseTopics]


class DescribeClientQuotasRequestComponents(TypedDict, total=False):
    """An element of ``DescribeClientQuotasRequest.components``."""

    entity_type: str
    match_type: int
    match: str | None  # nullable v0+


class DescribeClientQuotasRequest(TypedDict, total=False):
    """DescribeClientQuotas request (api key 48), v0-1; flexible v1+."""

    components: list[DescribeClientQuotasRequestComponents]
    strict: bool


class DescribeClientQuotasResponseEntriesEntity(TypedDict, total=False):
    """An element of ``DescribeClientQuotasResponseEntries.entity``."""

    entity_type: str
    entity_name: str | None  # nullable v0+


class DescribeClientQuotasResponseEntriesValues(TypedDict, total=False):
    """An element of ``DescribeClientQuotasResponseEntries.values``."""

    key: str
    value: float


class DescribeClientQuotasResponseEntries(TypedDict, total=False):
    """An element of ``DescribeClientQuotasResponse.entries``."""

    entity: list[DescribeClientQuotasResponseEntriesEntity]
    values: list[DescribeClientQuotasResponseEntriesValues]


class DescribeClientQuotasResponse(TypedDict, total=False):
    """DescribeClientQuotas response (api key 48), v0-1; flexible v1+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    entries: list[DescribeClientQuotasResponseEntries] | None  # nullable v0+


class AlterClientQuotasRequestEntriesEntity(TypedDict, total=False):
    """An element of ``AlterClientQuotasRequestEntries.entity``."""

    entity_type: str
    entity_name: str | None  # nullable v0+


class AlterClientQuotasRequestEntriesOps(TypedDict, total=False):
    """An element of ``AlterClientQuotasRequestEntries.ops``."""

    key: str
    value: float
    remove: bool


class AlterClientQuotasRequestEntries(TypedDict, total=False):
    """An element of ``AlterClientQuotasRequest.entries``."""

    entity: list[AlterClientQuotasRequestEntriesEntity]
    ops: list[AlterClientQuotasRequestEntriesOps]


class AlterClientQuotasRequest(TypedDict, total=False):
    """AlterClientQuotas request (api key 49), v0-1; flexible v1+."""

    entries: list[AlterClientQuotasRequestEntries]
    validate_only: bool


class AlterClientQuotasResponseEntriesEntity(TypedDict, total=False):
    """An element of ``AlterClientQuotasResponseEntries.entity``."""

    entity_type: str
    entity_name: str | None  # nullable v0+


class AlterClientQuotasResponseEntries(TypedDict, total=False):
    """An element of ``AlterClientQuotasResponse.entries``."""

    error_code: int
    error_message: str | None  # nullable v0+
    entity: list[AlterClientQuotasResponseEntriesEntity]


class AlterClientQuotasResponse(TypedDict, total=False):
    """AlterClientQuotas response (api key 49), v0-1; flexible v1+."""

    throttle_time_ms: int
    entries: list[AlterClientQuotasResponseEntries]


class DescribeUserScramCredentialsRequestUsers(TypedDict, total=False):
    """An element of ``DescribeUserScramCredentialsRequest.users``."""

    name: str


class DescribeUserScramCredentialsRequest(TypedDict, total=False):
    """DescribeUserScramCredentials request (api key 50), v0-0; flexible v0+."""

    users: list[DescribeUserScramCredentialsRequestUsers] | None  # nullable v0+


class DescribeUserScramCredentialsResponseResultsCredentialInfos(TypedDict, total=False):
    """An element of ``DescribeUserScramCredentialsResponseResults.credential_infos``."""

    mechanism: int
    iterations: int


class DescribeUserScramCredentialsResponseResults(TypedDict, total=False):
    """An element of ``DescribeUserScramCredentialsResponse.results``."""

    user: str
    error_code: int
    error_message: str | None  # nullable v0+
    credential_infos: list[DescribeUserScramCredentialsResponseResultsCredentialInfos]


class DescribeUserScramCredentialsResponse(TypedDict, total=False):
    """DescribeUserScramCredentials response (api key 50), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    results: list[DescribeUserScramCredentialsResponseResults]


class AlterUserScramCredentialsRequestDeletions(TypedDict, total=False):
    """An element of ``AlterUserScramCredentialsRequest.deletions``."""

    name: str
    mechanism: int


class AlterUserScramCredentialsRequestUpsertions(TypedDict, total=False):
    """An element of ``AlterUserScramCredentialsRequest.upsertions``."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class AlterUserScramCredentialsRequest(TypedDict, total=False):
    """AlterUserScramCredentials request (api key 51), v0-0; flexible v0+."""

    deletions: list[AlterUserScramCredentialsRequestDeletions]
    upsertions: list[AlterUserScramCredentialsRequestUpsertions]


class AlterUserScramCredentialsResponseResults(TypedDict, total=False):
    """An element of ``AlterUserScramCredentialsResponse.results``."""

    user: str
    error_code: int
    error_message: str | None  # nullable v0+


class AlterUserScramCredentialsResponse(TypedDict, total=False):
    """AlterUserScramCredentials response (api key 51), v0-0; flexible v0+."""

    throttle_time_ms: int
    results: list[AlterUserScramCredentialsResponseResults]


class VoteRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``VoteRequestTopics.partitions``."""

    partition_index: int
    replica_epoch: int
    replica_id: int
    replica_directory_id: uuid.UUID  # v1+
    voter_directory_id: uuid.UUID  # v1+
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool  # v2+


class VoteRequestTopics(TypedDict, total=False):
    """An element of ``VoteRequest.topics``."""

    topic_name: str
    partitions: list[VoteRequestTopicsPartitions]


class VoteRequest(TypedDict, total=False):
    """Vote request (api key 52), v0-2; flexible v0+."""

    cluster_id: str | None  # nullable v0+
    voter_id: int  # v1+
    topics: list[VoteRequestTopics]


class VoteResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``VoteResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool


class VoteResponseTopics(TypedDict, total=False):
    """An element of ``VoteResponse.topics``."""

    topic_name: str
    partitions: list[VoteResponseTopicsPartitions]


class VoteResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``VoteResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class VoteResponse(TypedDict, total=False):
    """Vote response (api key 52), v0-2; flexible v0+."""

    error_code: int
    topics: list[VoteResponseTopics]
    node_endpoints: list[VoteResponseNodeEndpoints]  # v1+, tagged v1+ (tag 0)


class BeginQuorumEpochRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``BeginQuorumEpochRequestTopics.partitions``."""

    partition_index: int
    voter_directory_id: uuid.UUID  # v1+
    leader_id: int
    leader_epoch: int


class BeginQuorumEpochRequestTopics(TypedDict, total=False):
    """An element of ``BeginQuorumEpochRequest.topics``."""

    topic_name: str
    partitions: list[BeginQuorumEpochRequestTopicsPartitions]


class BeginQuorumEpochRequestLeaderEndpoints(TypedDict, total=False):
    """An element of ``BeginQuorumEpochRequest.leader_endpoints``."""

    name: str
    host: str
    port: int


class BeginQuorumEpochRequest(TypedDict, total=False):
    """BeginQuorumEpoch request (api key 53), v0-1; flexible v1+."""

    cluster_id: str | None  # nullable v0+
    voter_id: int  # v1+
    topics: list[BeginQuorumEpochRequestTopics]
    leader_endpoints: list[BeginQuorumEpochRequestLeaderEndpoints]  # v1+


class BeginQuorumEpochResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``BeginQuorumEpochResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int


class BeginQuorumEpochResponseTopics(TypedDict, total=False):
    """An element of ``BeginQuorumEpochResponse.topics``."""

    topic_name: str
    partitions: list[BeginQuorumEpochResponseTopicsPartitions]


class BeginQuorumEpochResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``BeginQuorumEpochResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class BeginQuorumEpochResponse(TypedDict, total=False):
    """BeginQuorumEpoch response (api key 53), v0-1; flexible v1+."""

    error_code: int
    topics: list[BeginQuorumEpochResponseTopics]
    node_endpoints: list[BeginQuorumEpochResponseNodeEndpoints]  # v1+, tagged v1+ (tag 0)


class EndQuorumEpochRequestTopicsPartitionsPreferredCandidates(TypedDict, total=False):
    """An element of ``EndQuorumEpochRequestTopicsPartitions.preferred_candidates``."""

    candidate_id: int
    candidate_directory_id: uuid.UUID


class EndQuorumEpochRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``EndQuorumEpochRequestTopics.partitions``."""

    partition_index: int
    leader_id: int
    leader_epoch: int
    preferred_successors: list[int]  # v0
    preferred_candidates: list[EndQuorumEpochRequestTopicsPartitionsPreferredCandidates]  # v1+


class EndQuorumEpochRequestTopics(TypedDict, total=False):
    """An element of ``EndQuorumEpochRequest.topics``."""

    topic_name: str
    partitions: list[EndQuorumEpochRequestTopicsPartitions]


class EndQuorumEpochRequestLeaderEndpoints(TypedDict, total=False):
    """An element of ``EndQuorumEpochRequest.leader_endpoints``."""

    name: str
    host: str
    port: int


class EndQuorumEpochRequest(TypedDict, total=False):
    """EndQuorumEpoch request (api key 54), v0-1; flexible v1+."""

    cluster_id: str | None  # nullable v0+
    topics: list[EndQuorumEpochRequestTopics]
    leader_endpoints: list[EndQuorumEpochRequestLeaderEndpoints]  # v1+


class EndQuorumEpochResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``EndQuorumEpochResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int


class EndQuorumEpochResponseTopics(TypedDict, total=False):
    """An element of ``EndQuorumEpochResponse.topics``."""

    topic_name: str
    partitions: list[EndQuorumEpochResponseTopicsPartitions]


class EndQuorumEpochResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``EndQuorumEpochResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class EndQuorumEpochResponse(TypedDict, total=False):
    """EndQuorumEpoch response (api key 54), v0-1; flexible v1+."""

    error_code: int
    topics: list[EndQuorumEpochResponseTopics]
    node_endpoints: list[EndQuorumEpochResponseNodeEndpoints]  # v1+, tagged v1+ (tag 0)


class DescribeQuorumRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``DescribeQuorumRequestTopics.partitions``."""

    partition_index: int


class DescribeQuorumRequestTopics(TypedDict, total=False):
    """An element of ``DescribeQuorumRequest.topics``."""

    topic_name: str
    partitions: list[DescribeQuorumRequestTopicsPartitions]


class DescribeQuorumRequest(TypedDict, total=False):
    """DescribeQuorum request (api key 55), v0-2; flexible v0+."""

    topics: list[DescribeQuorumRequestTopics]


class DescribeQuorumResponseTopicsPartitionsCurrentVoters(TypedDict, total=False):
    """An element of ``DescribeQuorumResponseTopicsPartitions.current_voters``.
    Also an element of ``DescribeQuorumResponseTopicsPartitions.observers``.
    """

    replica_id: int
    replica_directory_id: uuid.UUID  # v2+
    log_end_offset: int
    last_fetch_timestamp: int  # v1+
    last_caught_up_timestamp: int  # v1+


class DescribeQuorumResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``DescribeQuorumResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None  # v2+, nullable v2+
    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: list[DescribeQuorumResponseTopicsPartitionsCurrentVoters]
    observers: list[DescribeQuorumResponseTopicsPartitionsCurrentVoters]


class DescribeQuorumResponseTopics(TypedDict, total=False):
    """An element of ``DescribeQuorumResponse.topics``."""

    topic_name: str
    partitions: list[DescribeQuorumResponseTopicsPartitions]


class DescribeQuorumResponseNodesListeners(TypedDict, total=False):
    """An element of ``DescribeQuorumResponseNodes.listeners``."""

    name: str
    host: str
    port: int


class DescribeQuorumResponseNodes(TypedDict, total=False):
    """An element of ``DescribeQuorumResponse.nodes``."""

    node_id: int
    listeners: list[DescribeQuorumResponseNodesListeners]


class DescribeQuorumResponse(TypedDict, total=False):
    """DescribeQuorum response (api key 55), v0-2; flexible v0+."""

    error_code: int
    error_message: str | None  # v2+, nullable v2+
    topics: list[DescribeQuorumResponseTopics]
    nodes: list[DescribeQuorumResponseNodes]  # v2+


class AlterPartitionRequestTopicsPartitionsNewIsrWithEpochs(TypedDict, total=False):
    """An element of ``AlterPartitionRequestTopicsPartitions.new_isr_with_epochs``."""

    broker_id: int
    broker_epoch: int


class AlterPartitionRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``AlterPartitionRequestTopics.partitions``."""

    partition_index: int
    leader_epoch: int
    new_isr: list[int]  # v0-2
    new_isr_with_epochs: list[AlterPartitionRequestTopicsPartitionsNewIsrWithEpochs]  # v3+
    leader_recovery_state: int
    partition_epoch: int


class AlterPartitionRequestTopics(TypedDict, total=False):
    """An element of ``AlterPartitionRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[AlterPartitionRequestTopicsPartitions]


class AlterPartitionRequest(TypedDict, total=False):
    """AlterPartition request (api key 56), v2-3; flexible v0+."""

    broker_id: int
    broker_epoch: int
    topics: list[AlterPartitionRequestTopics]


class AlterPartitionResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``AlterPartitionResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int
    isr: list[int]
    leader_recovery_state: int
    partition_epoch: int


class AlterPartitionResponseTopics(TypedDict, total=False):
    """An element of ``AlterPartitionResponse.topics``."""

    topic_id: uuid.UUID
    partitions: list[AlterPartitionResponseTopicsPartitions]


class AlterPartitionResponse(TypedDict, total=False):
    """AlterPartition response (api key 56), v2-3; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    topics: list[AlterPartitionResponseTopics]


class UpdateFeaturesRequestFeatureUpdates(TypedDict, total=False):
    """An element of ``UpdateFeaturesRequest.feature_updates``."""

    feature: str
    max_version_level: int
    allow_downgrade: bool  # v0
    upgrade_type: int  # v1+


class UpdateFeaturesRequest(TypedDict, total=False):
    """UpdateFeatures request (api key 57), v0-2; flexible v0+."""

    timeout_ms: int
    feature_updates: list[UpdateFeaturesRequestFeatureUpdates]
    validate_only: bool  # v1+


class UpdateFeaturesResponseResults(TypedDict, total=False):
    """An element of ``UpdateFeaturesResponse.results``."""

    feature: str
    error_code: int
    error_message: str | None  # nullable v0+


class UpdateFeaturesResponse(TypedDict, total=False):
    """UpdateFeatures response (api key 57), v0-2; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    results: list[UpdateFeaturesResponseResults]  # v0-1


class FetchSnapshotRequestTopicsPartitionsSnapshotId(TypedDict, total=False):
    """The value of ``FetchSnapshotRequestTopicsPartitions.snapshot_id``."""

    end_offset: int
    epoch: int


class FetchSnapshotRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``FetchSnapshotRequestTopics.partitions``."""

    partition: int
    current_leader_epoch: int
    snapshot_id: FetchSnapshotRequestTopicsPartitionsSnapshotId
    position: int
    replica_directory_id: uuid.UUID  # v1+, tagged v1+ (tag 0)


class FetchSnapshotRequestTopics(TypedDict, total=False):
    """An element of ``FetchSnapshotRequest.topics``."""

    name: str
    partitions: list[FetchSnapshotRequestTopicsPartitions]


class FetchSnapshotRequest(TypedDict, total=False):
    """FetchSnapshot request (api key 59), v0-1; flexible v0+."""

    cluster_id: str | None  # nullable v0+, tagged v0+ (tag 0)
    replica_id: int
    max_bytes: int
    topics: list[FetchSnapshotRequestTopics]


class FetchSnapshotResponseTopicsPartitionsSnapshotId(TypedDict, total=False):
    """The value of ``FetchSnapshotResponseTopicsPartitions.snapshot_id``."""

    end_offset: int
    epoch: int


class FetchSnapshotResponseTopicsPartitionsCurrentLeader(TypedDict, total=False):
    """The value of ``FetchSnapshotResponseTopicsPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class FetchSnapshotResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``FetchSnapshotResponseTopics.partitions``."""

    index: int
    error_code: int
    snapshot_id: FetchSnapshotResponseTopicsPartitionsSnapshotId
    current_leader: FetchSnapshotResponseTopicsPartitionsCurrentLeader  # tagged v0+ (tag 0)
    size: int
    position: int
    unaligned_records: Records


class FetchSnapshotResponseTopics(TypedDict, total=False):
    """An element of ``FetchSnapshotResponse.topics``."""

    name: str
    partitions: list[FetchSnapshotResponseTopicsPartitions]


class FetchSnapshotResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``FetchSnapshotResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int


class FetchSnapshotResponse(TypedDict, total=False):
    """FetchSnapshot response (api key 59), v0-1; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    topics: list[FetchSnapshotResponseTopics]
    node_endpoints: list[FetchSnapshotResponseNodeEndpoints]  # v1+, tagged v1+ (tag 0)


class DescribeClusterRequest(TypedDict, total=False):
    """DescribeCluster request (api key 60), v0-2; flexible v0+."""

    include_cluster_authorized_operations: bool
    endpoint_type: int  # v1+
    include_fenced_brokers: bool  # v2+


class DescribeClusterResponseBrokers(TypedDict, total=False):
    """An element of ``DescribeClusterResponse.brokers``."""

    broker_id: int
    host: str
    port: int
    rack: str | None  # nullable v0+
    is_fenced: bool  # v2+


class DescribeClusterResponse(TypedDict, total=False):
    """DescribeCluster response (api key 60), v0-2; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    endpoint_type: int  # v1+
    cluster_id: str
    controller_id: int
    brokers: list[DescribeClusterResponseBrokers]
    cluster_authorized_operations: int


class DescribeProducersRequestTopics(TypedDict, total=False):
    """An element of ``DescribeProducersRequest.topics``."""

    name: str
    partition_indexes: list[int]


class DescribeProducersRequest(TypedDict, total=False):
    """DescribeProducers request (api key 61), v0-0; flexible v0+."""

    topics: list[DescribeProducersRequestTopics]


class DescribeProducersResponseTopicsPartitionsActiveProducers(TypedDict, total=False):
    """An element of ``DescribeProducersResponseTopicsPartitions.active_producers``."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class DescribeProducersResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``DescribeProducersResponseTopics.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None  # nullable v0+
    active_producers: list[DescribeProducersResponseTopicsPartitionsActiveProducers]


class DescribeProducersResponseTopics(TypedDict, total=False):
    """An element of ``DescribeProducersResponse.topics``."""

    name: str
    partitions: list[DescribeProducersResponseTopicsPartitions]


class DescribeProducersResponse(TypedDict, total=False):
    """DescribeProducers response (api key 61), v0-0; flexible v0+."""

    throttle_time_ms: int
    topics: list[DescribeProducersResponseTopics]


class BrokerRegistrationRequestListeners(TypedDict, total=False):
    """An element of ``BrokerRegistrationRequest.listeners``."""

    name: str
    host: str
    port: int
    security_protocol: int


class BrokerRegistrationRequestFeatures(TypedDict, total=False):
    """An element of ``BrokerRegistrationRequest.features``."""

    name: str
    min_supported_version: int
    max_supported_version: int


class BrokerRegistrationRequest(TypedDict, total=False):
    """BrokerRegistration request (api key 62), v0-4; flexible v0+."""

    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    listeners: list[BrokerRegistrationRequestListeners]
    features: list[BrokerRegistrationRequestFeatures]
    rack: str | None  # nullable v0+
    is_migrating_zk_broker: bool  # v1+
    log_dirs: list[uuid.UUID]  # v2+
    previous_broker_epoch: int  # v3+


class BrokerRegistrationResponse(TypedDict, total=False):
    """BrokerRegistration response (api key 62), v0-4; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    broker_epoch: int


class BrokerHeartbeatRequest(TypedDict, total=False):
    """BrokerHeartbeat request (api key 63), v0-2; flexible v0+."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    offline_log_dirs: list[uuid.UUID]  # v1+, tagged v1+ (tag 0)
    cordoned_log_dirs: list[uuid.UUID] | None  # v2+, nullable v2+, tagged v2+ (tag 1)


class BrokerHeartbeatResponse(TypedDict, total=False):
    """BrokerHeartbeat response (api key 63), v0-2; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool


class UnregisterBrokerRequest(TypedDict, total=False):
    """UnregisterBroker request (api key 64), v0-0; flexible v0+."""

    broker_id: int


class UnregisterBrokerResponse(TypedDict, total=False):
    """UnregisterBroker response (api key 64), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+


class DescribeTransactionsRequest(TypedDict, total=False):
    """DescribeTransactions request (api key 65), v0-0; flexible v0+."""

    transactional_ids: list[str]


class DescribeTransactionsResponseTransactionStatesTopics(TypedDict, total=False):
    """An element of ``DescribeTransactionsResponseTransactionStates.topics``."""

    topic: str
    partitions: list[int]


class DescribeTransactionsResponseTransactionStates(TypedDict, total=False):
    """An element of ``DescribeTransactionsResponse.transaction_states``."""

    error_code: int
    transactional_id: str
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: list[DescribeTransactionsResponseTransactionStatesTopics]


class DescribeTransactionsResponse(TypedDict, total=False):
    """DescribeTransactions response (api key 65), v0-0; flexible v0+."""

    throttle_time_ms: int
    transaction_states: list[DescribeTransactionsResponseTransactionStates]


class ListTransactionsRequest(TypedDict, total=False):
    """ListTransactions request (api key 66), v0-2; flexible v0+."""

    state_filters: list[str]
    producer_id_filters: list[int]
    duration_filter: int  # v1+
    transactional_id_pattern: str | None  # v2+, nullable v2+


class ListTransactionsResponseTransactionStates(TypedDict, total=False):
    """An element of ``ListTransactionsResponse.transaction_states``."""

    transactional_id: str
    producer_id: int
    transaction_state: str


class ListTransactionsResponse(TypedDict, total=False):
    """ListTransactions response (api key 66), v0-2; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    unknown_state_filters: list[str]
    transaction_states: list[ListTransactionsResponseTransactionStates]


class AllocateProducerIdsRequest(TypedDict, total=False):
    """AllocateProducerIds request (api key 67), v0-0; flexible v0+."""

    broker_id: int
    broker_epoch: int


class AllocateProducerIdsResponse(TypedDict, total=False):
    """AllocateProducerIds response (api key 67), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    producer_id_start: int
    producer_id_len: int


class ConsumerGroupHeartbeatRequestTopicPartitions(TypedDict, total=False):
    """An element of ``ConsumerGroupHeartbeatRequest.topic_partitions``."""

    topic_id: uuid.UUID
    partitions: list[int]


class ConsumerGroupHeartbeatRequest(TypedDict, total=False):
    """ConsumerGroupHeartbeat request (api key 68), v0-1; flexible v0+."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None  # nullable v0+
    rack_id: str | None  # nullable v0+
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None  # nullable v0+
    subscribed_topic_regex: str | None  # v1+, nullable v1+
    server_assignor: str | None  # nullable v0+
    topic_partitions: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None  # nullable v0+


class ConsumerGroupHeartbeatResponseAssignmentTopicPartitions(TypedDict, total=False):
    """An element of ``ConsumerGroupHeartbeatResponseAssignment.topic_partitions``."""

    topic_id: uuid.UUID
    partitions: list[int]


class ConsumerGroupHeartbeatResponseAssignment(TypedDict, total=False):
    """The value of ``ConsumerGroupHeartbeatResponse.assignment``."""

    topic_partitions: list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions]


class ConsumerGroupHeartbeatResponse(TypedDict, total=False):
    """ConsumerGroupHeartbeat response (api key 68), v0-1; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    member_id: str | None  # nullable v0+
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ConsumerGroupHeartbeatResponseAssignment | None  # nullable v0+


class ConsumerGroupDescribeRequest(TypedDict, total=False):
    """ConsumerGroupDescribe request (api key 69), v0-1; flexible v0+."""

    group_ids: list[str]
    include_authorized_operations: bool


class ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions(TypedDict, total=False):
    """An element of ``ConsumerGroupDescribeResponseGroupsMembersAssignment.topic_partitions``."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: list[int]


class ConsumerGroupDescribeResponseGroupsMembersAssignment(TypedDict, total=False):
    """The value of ``ConsumerGroupDescribeResponseGroupsMembers.assignment``.
    Also the value of ``ConsumerGroupDescribeResponseGroupsMembers.target_assignment``.
    """

    topic_partitions: list[ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]


class ConsumerGroupDescribeResponseGroupsMembers(TypedDict, total=False):
    """An element of ``ConsumerGroupDescribeResponseGroups.members``."""

    member_id: str
    instance_id: str | None  # nullable v0+
    rack_id: str | None  # nullable v0+
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None  # nullable v0+
    assignment: ConsumerGroupDescribeResponseGroupsMembersAssignment
    target_assignment: ConsumerGroupDescribeResponseGroupsMembersAssignment
    member_type: int  # v1+


class ConsumerGroupDescribeResponseGroups(TypedDict, total=False):
    """An element of ``ConsumerGroupDescribeResponse.groups``."""

    error_code: int
    error_message: str | None  # nullable v0+
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ConsumerGroupDescribeResponseGroupsMembers]
    authorized_operations: int


class ConsumerGroupDescribeResponse(TypedDict, total=False):
    """ConsumerGroupDescribe response (api key 69), v0-1; flexible v0+."""

    throttle_time_ms: int
    groups: list[ConsumerGroupDescribeResponseGroups]


class GetTelemetrySubscriptionsRequest(TypedDict, total=False):
    """GetTelemetrySubscriptions request (api key 71), v0-0; flexible v0+."""

    client_instance_id: uuid.UUID


class GetTelemetrySubscriptionsResponse(TypedDict, total=False):
    """GetTelemetrySubscriptions response (api key 71), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    client_instance_id: uuid.UUID
    subscription_id: int
    accepted_compression_types: list[int]
    push_interval_ms: int
    telemetry_max_bytes: int
    delta_temporality: bool
    requested_metrics: list[str]


class PushTelemetryRequest(TypedDict, total=False):
    """PushTelemetry request (api key 72), v0-0; flexible v0+."""

    client_instance_id: uuid.UUID
    subscription_id: int
    terminating: bool
    compression_type: int
    metrics: bytes


class PushTelemetryResponse(TypedDict, total=False):
    """PushTelemetry response (api key 72), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int


class ListConfigResourcesRequest(TypedDict, total=False):
    """ListConfigResources request (api key 74), v0-1; flexible v0+."""

    resource_types: list[int]  # v1+


class ListConfigResourcesResponseConfigResources(TypedDict, total=False):
    """An element of ``ListConfigResourcesResponse.config_resources``."""

    resource_name: str
    resource_type: int  # v1+


class ListConfigResourcesResponse(TypedDict, total=False):
    """ListConfigResources response (api key 74), v0-1; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    config_resources: list[ListConfigResourcesResponseConfigResources]


class DescribeTopicPartitionsRequestTopics(TypedDict, total=False):
    """An element of ``DescribeTopicPartitionsRequest.topics``."""

    name: str


class DescribeTopicPartitionsRequestCursor(TypedDict, total=False):
    """The value of ``DescribeTopicPartitionsRequest.cursor``."""

    topic_name: str
    partition_index: int


class DescribeTopicPartitionsRequest(TypedDict, total=False):
    """DescribeTopicPartitions request (api key 75), v0-0; flexible v0+."""

    topics: list[DescribeTopicPartitionsRequestTopics]
    response_partition_limit: int
    cursor: DescribeTopicPartitionsRequestCursor | None  # nullable v0+


class DescribeTopicPartitionsResponseTopicsPartitions(TypedDict, total=False):
    """An element of ``DescribeTopicPartitionsResponseTopics.partitions``."""

    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: list[int]
    isr_nodes: list[int]
    eligible_leader_replicas: list[int] | None  # nullable v0+
    last_known_elr: list[int] | None  # nullable v0+
    offline_replicas: list[int]


class DescribeTopicPartitionsResponseTopics(TypedDict, total=False):
    """An element of ``DescribeTopicPartitionsResponse.topics``."""

    error_code: int
    name: str | None  # nullable v0+
    topic_id: uuid.UUID
    is_internal: bool
    partitions: list[DescribeTopicPartitionsResponseTopicsPartitions]
    topic_authorized_operations: int


class DescribeTopicPartitionsResponseNextCursor(TypedDict, total=False):
    """The value of ``DescribeTopicPartitionsResponse.next_cursor``."""

    topic_name: str
    partition_index: int


class DescribeTopicPartitionsResponse(TypedDict, total=False):
    """DescribeTopicPartitions response (api key 75), v0-0; flexible v0+."""

    throttle_time_ms: int
    topics: list[DescribeTopicPartitionsResponseTopics]
    next_cursor: DescribeTopicPartitionsResponseNextCursor | None  # nullable v0+


class ShareGroupHeartbeatRequest(TypedDict, total=False):
    """ShareGroupHeartbeat request (api key 76), v1-1; flexible v0+."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None  # nullable v0+
    subscribed_topic_names: list[str] | None  # nullable v0+


class ShareGroupHeartbeatResponseAssignmentTopicPartitions(TypedDict, total=False):
    """An element of ``ShareGroupHeartbeatResponseAssignment.topic_partitions``."""

    topic_id: uuid.UUID
    partitions: list[int]


class ShareGroupHeartbeatResponseAssignment(TypedDict, total=False):
    """The value of ``ShareGroupHeartbeatResponse.assignment``."""

    topic_partitions: list[ShareGroupHeartbeatResponseAssignmentTopicPartitions]


class ShareGroupHeartbeatResponse(TypedDict, total=False):
    """ShareGroupHeartbeat response (api key 76), v1-1; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    member_id: str | None  # nullable v0+
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ShareGroupHeartbeatResponseAssignment | None  # nullable v0+


class ShareGroupDescribeRequest(TypedDict, total=False):
    """ShareGroupDescribe request (api key 77), v1-1; flexible v0+."""

    group_ids: list[str]
    include_authorized_operations: bool


class ShareGroupDescribeResponseGroupsMembersAssignmentTopicPartitions(TypedDict, total=False):
    """An element of ``ShareGroupDescribeResponseGroupsMembersAssignment.topic_partitions``."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: list[int]


class ShareGroupDescribeResponseGroupsMembersAssignment(TypedDict, total=False):
    """The value of ``ShareGroupDescribeResponseGroupsMembers.assignment``."""

    topic_partitions: list[ShareGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]


class ShareGroupDescribeResponseGroupsMembers(TypedDict, total=False):
    """An element of ``ShareGroupDescribeResponseGroups.members``."""

    member_id: str
    rack_id: str | None  # nullable v0+
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: ShareGroupDescribeResponseGroupsMembersAssignment


class ShareGroupDescribeResponseGroups(TypedDict, total=False):
    """An element of ``ShareGroupDescribeResponse.groups``."""

    error_code: int
    error_message: str | None  # nullable v0+
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ShareGroupDescribeResponseGroupsMembers]
    authorized_operations: int


class ShareGroupDescribeResponse(TypedDict, total=False):
    """ShareGroupDescribe response (api key 77), v1-1; flexible v0+."""

    throttle_time_ms: int
    groups: list[ShareGroupDescribeResponseGroups]


class ShareFetchRequestTopicsPartitionsAcknowledgementBatches(TypedDict, total=False):
    """An element of ``ShareFetchRequestTopicsPartitions.acknowledgement_batches``."""

    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


class ShareFetchRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``ShareFetchRequestTopics.partitions``."""

    partition_index: int
    acknowledgement_batches: list[ShareFetchRequestTopicsPartitionsAcknowledgementBatches]


class ShareFetchRequestTopics(TypedDict, total=False):
    """An element of ``ShareFetchRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[ShareFetchRequestTopicsPartitions]


class ShareFetchRequestForgottenTopicsData(TypedDict, total=False):
    """An element of ``ShareFetchRequest.forgotten_topics_data``."""

    topic_id: uuid.UUID
    partitions: list[int]


class ShareFetchRequest(TypedDict, total=False):
    """ShareFetch request (api key 78), v1-2; flexible v0+."""

    group_id: str | None  # nullable v0+
    member_id: str | None  # nullable v0+
    share_session_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    share_acquire_mode: int  # v2+
    is_renew_ack: bool  # v2+
    topics: list[ShareFetchRequestTopics]
    forgotten_topics_data: list[ShareFetchRequestForgottenTopicsData]


class ShareFetchResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    """The value of ``ShareFetchResponseResponsesPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class ShareFetchResponseResponsesPartitionsAcquiredRecords(TypedDict, total=False):
    """An element of ``ShareFetchResponseResponsesPartitions.acquired_records``."""

    first_offset: int
    last_offset: int
    delivery_count: int


class ShareFetchResponseResponsesPartitions(TypedDict, total=False):
    """An element of ``ShareFetchResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None  # nullable v0+
    acknowledge_error_code: int
    acknowledge_error_message: str | None  # nullable v0+
    current_leader: ShareFetchResponseResponsesPartitionsCurrentLeader
    records: Records | None  # nullable v0
    acquired_records: list[ShareFetchResponseResponsesPartitionsAcquiredRecords]


class ShareFetchResponseResponses(TypedDict, total=False):
    """An element of ``ShareFetchResponse.responses``."""

    topic_id: uuid.UUID
    partitions: list[ShareFetchResponseResponsesPartitions]


class ShareFetchResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``ShareFetchResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int
    rack: str | None  # nullable v0+


class ShareFetchResponse(TypedDict, total=False):
    """ShareFetch response (api key 78), v1-2; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    acquisition_lock_timeout_ms: int
    responses: list[ShareFetchResponseResponses]
    node_endpoints: list[ShareFetchResponseNodeEndpoints]


class ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches(TypedDict, total=False):
    """An element of ``ShareAcknowledgeRequestTopicsPartitions.acknowledgement_batches``."""

    first_offset: int
    last_offset: int
    acknowledge_types: list[int]


class ShareAcknowledgeRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``ShareAcknowledgeRequestTopics.partitions``."""

    partition_index: int
    acknowledgement_batches: list[ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches]


class ShareAcknowledgeRequestTopics(TypedDict, total=False):
    """An element of ``ShareAcknowledgeRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[ShareAcknowledgeRequestTopicsPartitions]


class ShareAcknowledgeRequest(TypedDict, total=False):
    """ShareAcknowledge request (api key 79), v1-2; flexible v0+."""

    group_id: str | None  # nullable v0+
    member_id: str | None  # nullable v0+
    share_session_epoch: int
    is_renew_ack: bool  # v2+
    topics: list[ShareAcknowledgeRequestTopics]


class ShareAcknowledgeResponseResponsesPartitionsCurrentLeader(TypedDict, total=False):
    """The value of ``ShareAcknowledgeResponseResponsesPartitions.current_leader``."""

    leader_id: int
    leader_epoch: int


class ShareAcknowledgeResponseResponsesPartitions(TypedDict, total=False):
    """An element of ``ShareAcknowledgeResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None  # nullable v0+
    current_leader: ShareAcknowledgeResponseResponsesPartitionsCurrentLeader


class ShareAcknowledgeResponseResponses(TypedDict, total=False):
    """An element of ``ShareAcknowledgeResponse.responses``."""

    topic_id: uuid.UUID
    partitions: list[ShareAcknowledgeResponseResponsesPartitions]


class ShareAcknowledgeResponseNodeEndpoints(TypedDict, total=False):
    """An element of ``ShareAcknowledgeResponse.node_endpoints``."""

    node_id: int
    host: str
    port: int
    rack: str | None  # nullable v0+


class ShareAcknowledgeResponse(TypedDict, total=False):
    """ShareAcknowledge response (api key 79), v1-2; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    acquisition_lock_timeout_ms: int  # v2+
    responses: list[ShareAcknowledgeResponseResponses]
    node_endpoints: list[ShareAcknowledgeResponseNodeEndpoints]


class AddRaftVoterRequestListeners(TypedDict, total=False):
    """An element of ``AddRaftVoterRequest.listeners``."""

    name: str
    host: str
    port: int


class AddRaftVoterRequest(TypedDict, total=False):
    """AddRaftVoter request (api key 80), v0-1; flexible v0+."""

    cluster_id: str | None  # nullable v0+
    timeout_ms: int
    voter_id: int
    voter_directory_id: uuid.UUID
    listeners: list[AddRaftVoterRequestListeners]
    ack_when_committed: bool  # v1+


class AddRaftVoterResponse(TypedDict, total=False):
    """AddRaftVoter response (api key 80), v0-1; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+


class RemoveRaftVoterRequest(TypedDict, total=False):
    """RemoveRaftVoter request (api key 81), v0-0; flexible v0+."""

    cluster_id: str | None  # nullable v0+
    voter_id: int
    voter_directory_id: uuid.UUID


class RemoveRaftVoterResponse(TypedDict, total=False):
    """RemoveRaftVoter response (api key 81), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+


class UpdateRaftVoterRequestListeners(TypedDict, total=False):
    """An element of ``UpdateRaftVoterRequest.listeners``."""

    name: str
    host: str
    port: int


class UpdateRaftVoterRequestKRaftVersionFeature(TypedDict, total=False):
    """The value of ``UpdateRaftVoterRequest.k_raft_version_feature``."""

    min_supported_version: int
    max_supported_version: int


class UpdateRaftVoterRequest(TypedDict, total=False):
    """UpdateRaftVoter request (api key 82), v0-0; flexible v0+."""

    cluster_id: str | None  # nullable v0+
    current_leader_epoch: int
    voter_id: int
    voter_directory_id: uuid.UUID
    listeners: list[UpdateRaftVoterRequestListeners]
    k_raft_version_feature: UpdateRaftVoterRequestKRaftVersionFeature


class UpdateRaftVoterResponseCurrentLeader(TypedDict, total=False):
    """The value of ``UpdateRaftVoterResponse.current_leader``."""

    leader_id: int
    leader_epoch: int
    host: str
    port: int


class UpdateRaftVoterResponse(TypedDict, total=False):
    """UpdateRaftVoter response (api key 82), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    current_leader: UpdateRaftVoterResponseCurrentLeader  # tagged v0+ (tag 0)


class InitializeShareGroupStateRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``InitializeShareGroupStateRequestTopics.partitions``."""

    partition: int
    state_epoch: int
    start_offset: int


class InitializeShareGroupStateRequestTopics(TypedDict, total=False):
    """An element of ``InitializeShareGroupStateRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[InitializeShareGroupStateRequestTopicsPartitions]


class InitializeShareGroupStateRequest(TypedDict, total=False):
    """InitializeShareGroupState request (api key 83), v0-0; flexible v0+."""

    group_id: str
    topics: list[InitializeShareGroupStateRequestTopics]


class InitializeShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """An element of ``InitializeShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None  # nullable v0+


class InitializeShareGroupStateResponseResults(TypedDict, total=False):
    """An element of ``InitializeShareGroupStateResponse.results``."""

    topic_id: uuid.UUID
    partitions: list[InitializeShareGroupStateResponseResultsPartitions]


class InitializeShareGroupStateResponse(TypedDict, total=False):
    """InitializeShareGroupState response (api key 83), v0-0; flexible v0+."""

    results: list[InitializeShareGroupStateResponseResults]


class ReadShareGroupStateRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``ReadShareGroupStateRequestTopics.partitions``."""

    partition: int
    leader_epoch: int


class ReadShareGroupStateRequestTopics(TypedDict, total=False):
    """An element of ``ReadShareGroupStateRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[ReadShareGroupStateRequestTopicsPartitions]


class ReadShareGroupStateRequest(TypedDict, total=False):
    """ReadShareGroupState request (api key 84), v0-0; flexible v0+."""

    group_id: str
    topics: list[ReadShareGroupStateRequestTopics]


class ReadShareGroupStateResponseResultsPartitionsStateBatches(TypedDict, total=False):
    """An element of ``ReadShareGroupStateResponseResultsPartitions.state_batches``."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class ReadShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """An element of ``ReadShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None  # nullable v0+
    state_epoch: int
    start_offset: int
    state_batches: list[ReadShareGroupStateResponseResultsPartitionsStateBatches]


class ReadShareGroupStateResponseResults(TypedDict, total=False):
    """An element of ``ReadShareGroupStateResponse.results``."""

    topic_id: uuid.UUID
    partitions: list[ReadShareGroupStateResponseResultsPartitions]


class ReadShareGroupStateResponse(TypedDict, total=False):
    """ReadShareGroupState response (api key 84), v0-0; flexible v0+."""

    results: list[ReadShareGroupStateResponseResults]


class WriteShareGroupStateRequestTopicsPartitionsStateBatches(TypedDict, total=False):
    """An element of ``WriteShareGroupStateRequestTopicsPartitions.state_batches``."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


class WriteShareGroupStateRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``WriteShareGroupStateRequestTopics.partitions``."""

    partition: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int  # v1+
    state_batches: list[WriteShareGroupStateRequestTopicsPartitionsStateBatches]


class WriteShareGroupStateRequestTopics(TypedDict, total=False):
    """An element of ``WriteShareGroupStateRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[WriteShareGroupStateRequestTopicsPartitions]


class WriteShareGroupStateRequest(TypedDict, total=False):
    """WriteShareGroupState request (api key 85), v0-1; flexible v0+."""

    group_id: str
    topics: list[WriteShareGroupStateRequestTopics]


class WriteShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """An element of ``WriteShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None  # nullable v0+


class WriteShareGroupStateResponseResults(TypedDict, total=False):
    """An element of ``WriteShareGroupStateResponse.results``."""

    topic_id: uuid.UUID
    partitions: list[WriteShareGroupStateResponseResultsPartitions]


class WriteShareGroupStateResponse(TypedDict, total=False):
    """WriteShareGroupState response (api key 85), v0-1; flexible v0+."""

    results: list[WriteShareGroupStateResponseResults]


class DeleteShareGroupStateRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``DeleteShareGroupStateRequestTopics.partitions``."""

    partition: int


class DeleteShareGroupStateRequestTopics(TypedDict, total=False):
    """An element of ``DeleteShareGroupStateRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[DeleteShareGroupStateRequestTopicsPartitions]


class DeleteShareGroupStateRequest(TypedDict, total=False):
    """DeleteShareGroupState request (api key 86), v0-0; flexible v0+."""

    group_id: str
    topics: list[DeleteShareGroupStateRequestTopics]


class DeleteShareGroupStateResponseResultsPartitions(TypedDict, total=False):
    """An element of ``DeleteShareGroupStateResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None  # nullable v0+


class DeleteShareGroupStateResponseResults(TypedDict, total=False):
    """An element of ``DeleteShareGroupStateResponse.results``."""

    topic_id: uuid.UUID
    partitions: list[DeleteShareGroupStateResponseResultsPartitions]


class DeleteShareGroupStateResponse(TypedDict, total=False):
    """DeleteShareGroupState response (api key 86), v0-0; flexible v0+."""

    results: list[DeleteShareGroupStateResponseResults]


class ReadShareGroupStateSummaryRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``ReadShareGroupStateSummaryRequestTopics.partitions``."""

    partition: int
    leader_epoch: int


class ReadShareGroupStateSummaryRequestTopics(TypedDict, total=False):
    """An element of ``ReadShareGroupStateSummaryRequest.topics``."""

    topic_id: uuid.UUID
    partitions: list[ReadShareGroupStateSummaryRequestTopicsPartitions]


class ReadShareGroupStateSummaryRequest(TypedDict, total=False):
    """ReadShareGroupStateSummary request (api key 87), v0-1; flexible v0+."""

    group_id: str
    topics: list[ReadShareGroupStateSummaryRequestTopics]


class ReadShareGroupStateSummaryResponseResultsPartitions(TypedDict, total=False):
    """An element of ``ReadShareGroupStateSummaryResponseResults.partitions``."""

    partition: int
    error_code: int
    error_message: str | None  # nullable v0+
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int  # v1+


class ReadShareGroupStateSummaryResponseResults(TypedDict, total=False):
    """An element of ``ReadShareGroupStateSummaryResponse.results``."""

    topic_id: uuid.UUID
    partitions: list[ReadShareGroupStateSummaryResponseResultsPartitions]


class ReadShareGroupStateSummaryResponse(TypedDict, total=False):
    """ReadShareGroupStateSummary response (api key 87), v0-1; flexible v0+."""

    results: list[ReadShareGroupStateSummaryResponseResults]


class DescribeShareGroupOffsetsRequestGroupsTopics(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsRequestGroups.topics``."""

    topic_name: str
    partitions: list[int]


class DescribeShareGroupOffsetsRequestGroups(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsRequest.groups``."""

    group_id: str
    topics: list[DescribeShareGroupOffsetsRequestGroupsTopics] | None  # nullable v0+


class DescribeShareGroupOffsetsRequest(TypedDict, total=False):
    """DescribeShareGroupOffsets request (api key 90), v0-1; flexible v0+."""

    groups: list[DescribeShareGroupOffsetsRequestGroups]


class DescribeShareGroupOffsetsResponseGroupsTopicsPartitions(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsResponseGroupsTopics.partitions``."""

    partition_index: int
    start_offset: int
    leader_epoch: int
    lag: int  # v1+
    error_code: int
    error_message: str | None  # nullable v0+


class DescribeShareGroupOffsetsResponseGroupsTopics(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsResponseGroups.topics``."""

    topic_name: str
    topic_id: uuid.UUID
    partitions: list[DescribeShareGroupOffsetsResponseGroupsTopicsPartitions]


class DescribeShareGroupOffsetsResponseGroups(TypedDict, total=False):
    """An element of ``DescribeShareGroupOffsetsResponse.groups``."""

    group_id: str
    topics: list[DescribeShareGroupOffsetsResponseGroupsTopics]
    error_code: int
    error_message: str | None  # nullable v0+


class DescribeShareGroupOffsetsResponse(TypedDict, total=False):
    """DescribeShareGroupOffsets response (api key 90), v0-1; flexible v0+."""

    throttle_time_ms: int
    groups: list[DescribeShareGroupOffsetsResponseGroups]


class AlterShareGroupOffsetsRequestTopicsPartitions(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsRequestTopics.partitions``."""

    partition_index: int
    start_offset: int


class AlterShareGroupOffsetsRequestTopics(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsRequest.topics``."""

    topic_name: str
    partitions: list[AlterShareGroupOffsetsRequestTopicsPartitions]


class AlterShareGroupOffsetsRequest(TypedDict, total=False):
    """AlterShareGroupOffsets request (api key 91), v0-0; flexible v0+."""

    group_id: str
    topics: list[AlterShareGroupOffsetsRequestTopics]


class AlterShareGroupOffsetsResponseResponsesPartitions(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsResponseResponses.partitions``."""

    partition_index: int
    error_code: int
    error_message: str | None  # nullable v0+


class AlterShareGroupOffsetsResponseResponses(TypedDict, total=False):
    """An element of ``AlterShareGroupOffsetsResponse.responses``."""

    topic_name: str
    topic_id: uuid.UUID
    partitions: list[AlterShareGroupOffsetsResponseResponsesPartitions]


class AlterShareGroupOffsetsResponse(TypedDict, total=False):
    """AlterShareGroupOffsets response (api key 91), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    responses: list[AlterShareGroupOffsetsResponseResponses]


class DeleteShareGroupOffsetsRequestTopics(TypedDict, total=False):
    """An element of ``DeleteShareGroupOffsetsRequest.topics``."""

    topic_name: str


class DeleteShareGroupOffsetsRequest(TypedDict, total=False):
    """DeleteShareGroupOffsets request (api key 92), v0-0; flexible v0+."""

    group_id: str
    topics: list[DeleteShareGroupOffsetsRequestTopics]


class DeleteShareGroupOffsetsResponseResponses(TypedDict, total=False):
    """An element of ``DeleteShareGroupOffsetsResponse.responses``."""

    topic_name: str
    topic_id: uuid.UUID
    error_code: int
    error_message: str | None  # nullable v0+


class DeleteShareGroupOffsetsResponse(TypedDict, total=False):
    """DeleteShareGroupOffsets response (api key 92), v0-0; flexible v0+."""

    throttle_time_ms: int
    error_code: int
    error_message: str | None  # nullable v0+
    responses: list[DeleteShareGroupOffsetsResponseResponses]


class ConsumerProtocolAssignmentAssignedPartitions(TypedDict, total=False):
    """An element of ``ConsumerProtocolAssignment.assigned_partitions``."""

    topic: str
    partitions: list[int]


class ConsumerProtocolAssignment(TypedDict, total=False):
    """ConsumerProtocolAssignment, v0-3 (a data struct, not an API body)."""

    assigned_partitions: list[ConsumerProtocolAssignmentAssignedPartitions]
    user_data: bytes | None  # nullable v0+


class ConsumerProtocolSubscriptionOwnedPartitions(TypedDict, total=False):
    """An element of ``ConsumerProtocolSubscription.owned_partitions``."""

    topic: str  # v1+
    partitions: list[int]  # v1+


class ConsumerProtocolSubscription(TypedDict, total=False):
    """ConsumerProtocolSubscription, v0-3 (a data struct, not an API body)."""

    topics: list[str]
    user_data: bytes | None  # nullable v0+
    owned_partitions: list[ConsumerProtocolSubscriptionOwnedPartitions]  # v1+
    generation_id: int  # v2+
    rack_id: str | None  # v3+, nullable v3+
