"""The controller: admin requests in, metadata records and responses out (Kafka's ``QuorumController``).

``QuorumController`` is a thin dispatcher over the control managers, each owning one area as in
Kafka: it hands a request and the current :class:`~zurau.metadata.image.MetadataImage` to the
manager of its area, and returns that manager's
:class:`~zurau.metadata.controller.result.ControllerResult` (the records to append and the
response body to send once they are committed). It holds no logic of its own.

=================================  =========================================================
manager                            requests
=================================  =========================================================
``ReplicationControlManager``      CreateTopics, DeleteTopics, CreatePartitions, AlterPartition
``ElectionControlManager``         ElectLeaders, the automatic leader rebalance
``ReassignmentControlManager``     Alter/ListPartitionReassignments
``ConfigurationControlManager``    AlterConfigs, IncrementalAlterConfigs
``ClusterControlManager``          BrokerRegistration, BrokerHeartbeat, UnregisterBroker, fencing
``FeatureControlManager``          the finalized feature levels a registration must support
``ProducerIdControlManager``       AllocateProducerIds
``acl_control``                    CreateAcls, DeleteAcls
``quota_control``                  AlterClientQuotas
``scram_control``                  AlterUserScramCredentials
``DelegationTokenControlManager``  Create/Renew/ExpireDelegationToken, the expired-token sweep
=================================  =========================================================

Invariants: the controller never changes an image: the caller appends the records to the
metadata log and replays them (on one node a local log, in a cluster the Raft quorum's). Every
operation is a function of the image, the request and the controller's random source and topic-id
source (seeded in tests), plus the cluster manager's soft state (the metadata offsets brokers
report in heartbeats). Nothing here does I/O or knows the event loop.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Sequence

from zurau.config import BrokerConfig
from zurau.metadata.controller import acl_control, quota_control, scram_control
from zurau.metadata.controller.cluster_control import ClusterControlManager
from zurau.metadata.controller.config_control import (
    ConfigResult,
    ConfigurationControlManager,
    elr_transition_records,
)
from zurau.metadata.controller.delegation_token_control import DelegationTokenControlManager
from zurau.metadata.controller.election_control import ElectionControlManager
from zurau.metadata.controller.feature_control import (
    FeatureControlManager,
    FeatureUpdate,
    FeatureUpdateOutcome,
)
from zurau.metadata.controller.partition_change import PartitionChanges
from zurau.metadata.controller.placement import ReplicaPlacer
from zurau.metadata.controller.producer_id_control import ProducerIdControlManager
from zurau.metadata.controller.reassignment_control import (
    ReassignmentControlManager,
    list_partition_reassignments,
)
from zurau.metadata.controller.replication_control import ReplicationControlManager
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.protocol.messages import (
    AlterClientQuotasRequestEntries,
    AlterClientQuotasResponseEntries,
    AlterConfigsRequestResources,
    AlterPartitionReassignmentsRequestTopics,
    AlterPartitionReassignmentsResponseResponses,
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
    DeleteAclsRequestFilters,
    DeleteAclsResponseFilterResults,
    DeleteTopicsResponseResponses,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponseReplicaElectionResults,
    IncrementalAlterConfigsRequestResources,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponseTopics,
    UnregisterBrokerResponse,
)


class QuorumController:
    def __init__(
        self,
        config: BrokerConfig,
        brokers: Callable[[], Sequence[int]],
        *,
        rng: random.Random | None = None,
        new_topic_id: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        """``brokers()``: the broker ids placement may use when the image has no registrations
        (a single node); ``rng`` places replicas; ``new_topic_id`` names new topics."""
        self.config = config
        self.brokers = brokers
        changes = PartitionChanges(config, brokers)
        placer = ReplicaPlacer(brokers, rng or random.Random())
        self.replication = ReplicationControlManager(config, placer, changes, new_topic_id)
        self.elections = ElectionControlManager(config, changes)
        self.reassignments = ReassignmentControlManager(placer, changes)
        self.configs = ConfigurationControlManager(config, brokers)
        self.features = FeatureControlManager(config.node_id, 1 if config.dynamic_quorum else 0)
        self.cluster = ClusterControlManager(changes, self.features)
        self.producer_ids = ProducerIdControlManager()
        self.delegation_tokens = DelegationTokenControlManager(config)

    # ------------------------------------------------------------------ topics and partitions
    def create_topics(
        self, image: MetadataImage, topics: list[CreateTopicsRequestTopics], validate_only: bool
    ) -> ControllerResult[CreateTopicsResponse]:
        return self.replication.create_topics(image, topics, validate_only)

    def delete_topics(
        self, image: MetadataImage, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> ControllerResult[list[DeleteTopicsResponseResponses]]:
        return self.replication.delete_topics(image, requested, version)

    def create_partitions(
        self, image: MetadataImage, topics: list[CreatePartitionsRequestTopics], validate_only: bool
    ) -> ControllerResult[list[CreatePartitionsResponseResults]]:
        return self.replication.create_partitions(image, topics, validate_only)

    def alter_partition(
        self, image: MetadataImage, request: AlterPartitionRequest
    ) -> ControllerResult[AlterPartitionResponse]:
        return self.replication.alter_partition(image, request)

    # ------------------------------------------------------------------ leadership
    def elect_leaders(
        self,
        image: MetadataImage,
        election_type: int,
        topic_partitions: list[ElectLeadersRequestTopicPartitions] | None,
    ) -> ControllerResult[list[ElectLeadersResponseReplicaElectionResults]]:
        return self.elections.elect_leaders(image, election_type, topic_partitions)

    def balance_leaders(self, image: MetadataImage) -> ControllerResult[None]:
        return self.elections.balance_leaders(image)

    def alter_partition_reassignments(
        self,
        image: MetadataImage,
        topics: list[AlterPartitionReassignmentsRequestTopics],
        allow_replication_factor_change: bool = True,
    ) -> ControllerResult[list[AlterPartitionReassignmentsResponseResponses]]:
        return self.reassignments.alter_partition_reassignments(image, topics, allow_replication_factor_change)

    @staticmethod
    def list_partition_reassignments(
        image: MetadataImage, topics: list[ListPartitionReassignmentsRequestTopics] | None
    ) -> list[ListPartitionReassignmentsResponseTopics]:
        return list_partition_reassignments(image, topics)

    # ------------------------------------------------------------------ configs
    def alter_configs(
        self, image: MetadataImage, resources: list[AlterConfigsRequestResources], validate_only: bool
    ) -> ControllerResult[list[ConfigResult]]:
        return self.configs.alter_configs(image, resources, validate_only)

    def incremental_alter_configs(
        self, image: MetadataImage, resources: list[IncrementalAlterConfigsRequestResources], validate_only: bool
    ) -> ControllerResult[list[ConfigResult]]:
        return self.configs.incremental_alter_configs(image, resources, validate_only)

    # ------------------------------------------------------------------ brokers
    def register_broker(
        self,
        image: MetadataImage,
        request: BrokerRegistrationRequest,
        next_offset: int,
        cluster_id_ok: bool = True,
        is_alive: Callable[[int], bool] = lambda _: False,
    ) -> ControllerResult[BrokerRegistrationResponse]:
        return self.cluster.register_broker(image, request, next_offset, cluster_id_ok, is_alive)

    def broker_heartbeat(
        self, image: MetadataImage, request: BrokerHeartbeatRequest, next_offset: int
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        return self.cluster.broker_heartbeat(image, request, next_offset)

    def fence_brokers(self, image: MetadataImage, broker_ids: Iterable[int]) -> ControllerResult[None]:
        return self.cluster.fence_brokers(image, broker_ids)

    def unregister_broker(self, image: MetadataImage, broker_id: int) -> ControllerResult[UnregisterBrokerResponse]:
        return self.cluster.unregister_broker(image, broker_id)

    def allocate_producer_ids(
        self, image: MetadataImage, broker_id: int, broker_epoch: int
    ) -> ControllerResult[tuple[int, int]]:
        return self.producer_ids.allocate_producer_ids(image, broker_id, broker_epoch)

    # ------------------------------------------------------------------ features
    def update_features(
        self, image: MetadataImage, updates: Sequence[FeatureUpdate], validate_only: bool
    ) -> ControllerResult[FeatureUpdateOutcome]:
        """UpdateFeatures, plus what turning eligible leader replicas on or off writes with the
        level (:func:`~zurau.metadata.controller.config_control.elr_transition_records`)."""
        result = self.features.update_features(image, updates, validate_only)
        if result.response.error_code or not result.records:
            return result
        static_min_isr = int(self.config.get("min.insync.replicas"))
        extra = elr_transition_records(image, result.records, static_min_isr)
        return ControllerResult(result.records + extra, result.response) if extra else result

    # ------------------------------------------------------------------ security
    @staticmethod
    def create_acls(
        image: MetadataImage, creations: list[CreateAclsRequestCreations]
    ) -> ControllerResult[list[CreateAclsResponseResults]]:
        return acl_control.create_acls(image, creations)

    @staticmethod
    def delete_acls(
        image: MetadataImage, filters: list[DeleteAclsRequestFilters]
    ) -> ControllerResult[list[DeleteAclsResponseFilterResults]]:
        return acl_control.delete_acls(image, filters)

    @staticmethod
    def alter_client_quotas(
        image: MetadataImage, entries: list[AlterClientQuotasRequestEntries], validate_only: bool
    ) -> ControllerResult[list[AlterClientQuotasResponseEntries]]:
        return quota_control.alter_client_quotas(image, entries, validate_only)

    # ------------------------------------------------------------------ delegation tokens
    def create_delegation_token(
        self,
        image: MetadataImage,
        owner: str,
        requester: str,
        renewers: Sequence[str],
        max_lifetime_ms: int,
        now_ms: int,
    ) -> ControllerResult[CreateDelegationTokenResponse]:
        return self.delegation_tokens.create(image, owner, requester, renewers, max_lifetime_ms, now_ms)

    def renew_delegation_token(
        self, image: MetadataImage, hmac: bytes, renew_period_ms: int, caller: str | None, now_ms: int
    ) -> ControllerResult[tuple[int, int]]:
        return self.delegation_tokens.renew(image, hmac, renew_period_ms, caller, now_ms)

    def expire_delegation_token(
        self, image: MetadataImage, hmac: bytes, expiry_period_ms: int, caller: str | None, now_ms: int
    ) -> ControllerResult[tuple[int, int]]:
        return self.delegation_tokens.expire(image, hmac, expiry_period_ms, caller, now_ms)

    def sweep_expired_delegation_tokens(self, image: MetadataImage, now_ms: int) -> ControllerResult[None]:
        return ControllerResult(self.delegation_tokens.sweep(image, now_ms), None)

    @staticmethod
    def alter_user_scram_credentials(
        image: MetadataImage,
        deletions: list[AlterUserScramCredentialsRequestDeletions],
        upsertions: list[AlterUserScramCredentialsRequestUpsertions],
    ) -> ControllerResult[list[AlterUserScramCredentialsResponseResults]]:
        return scram_control.alter_user_scram_credentials(image, deletions, upsertions)
