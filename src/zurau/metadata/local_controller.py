"""The controller channel of a single node: the controller runs in-process over the local log.

Every metadata change on this node goes through here: a request is turned into records by the
pure :class:`~zurau.metadata.controller.quorum_controller.QuorumController` against the current image; the records
are appended to the metadata log as one batch, replayed into a new image, and the image's
listeners (the broker's metadata publisher) are told ``(old, new)`` before the response is
returned. The async operations (those answering admin requests) also wait for the metadata log to
be fsynced, off the event loop, so an acknowledged change survives a power loss; the synchronous
``*_now`` forms, used for topics the broker creates itself (auto-created topics, coordinator
topics), leave the fsync to the next flush.

A write the metadata log refuses (a KafkaError such as RECORD_LIST_TOO_LARGE, raised before
anything is written) fails that request only: the log, the image and the listeners are untouched
and the next request is served as usual. (Requests are bounded before they get here, see
:data:`~zurau.metadata.controller.result.MAX_RECORDS_PER_USER_OP`.)

This is the seam the KRaft work replaces: a broker in a cluster gets a channel of the same shape
that forwards each request to the active controller and waits for its records to reach the
broker's image through the replicated log.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from zurau.metadata.controller.config_control import ConfigResult
from zurau.metadata.controller.feature_control import FeatureUpdate, FeatureUpdateOutcome
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.metadata_log import MetadataLog
from zurau.protocol.errors import KafkaError, KafkaStorageError
from zurau.protocol.messages import (
    AlterClientQuotasRequestEntries,
    AlterClientQuotasResponseEntries,
    AlterConfigsRequestResources,
    AlterPartitionReassignmentsRequestTopics,
    AlterPartitionReassignmentsResponse,
    AlterUserScramCredentialsRequestDeletions,
    AlterUserScramCredentialsRequestUpsertions,
    AlterUserScramCredentialsResponseResults,
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
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequestResources,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponse,
    UnregisterBrokerResponse,
)

log = logging.getLogger("zurau.controller")

T = TypeVar("T")
ImageListener = Callable[[MetadataImage, MetadataImage], None]


class LocalControllerChannel:
    def __init__(
        self,
        controller: QuorumController,
        metadata_log: MetadataLog,
        image: MetadataImage,
        now_ms: Callable[[], int],
        flush: Callable[[Callable[[], None]], Awaitable[None]] | None = None,
    ) -> None:
        """``flush(fn)`` runs ``fn`` (a flush plan's fsyncs, see storage/log_flush.py) off the
        event loop and waits for it."""
        self.controller = controller
        self.log = metadata_log
        self._image = image
        self.now_ms = now_ms
        self._flush = flush
        self._listeners: list[ImageListener] = []

    @property
    def image(self) -> MetadataImage:
        return self._image

    def add_listener(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    def without_forwarding(self) -> LocalControllerChannel:
        """This node is the whole quorum: nothing is ever forwarded."""
        return self

    def controller_id(self) -> int:
        return -1

    # ------------------------------------------------------------------ commit
    def _commit(self, result: ControllerResult[T]) -> T:
        if result.records:
            try:
                last = self.log.append(result.records, self.now_ms())
            except OSError as e:
                log.error("cannot write the metadata log: %s", e)
                raise KafkaStorageError(f"the metadata log cannot be written: {e}") from None
            except KafkaError as e:
                # Refused before anything was written (e.g. a batch over segment.bytes): the log
                # and the image are unchanged, only this request fails.
                log.error("the metadata log refused a batch of %d records: %s", len(result.records), e)
                raise
            old = self._image
            self._image = old.apply(result.records, last)
            for listener in self._listeners:
                try:
                    listener(old, self._image)
                except Exception:
                    log.exception("metadata listener failed at offset %d", last)
        return result.response

    async def _durable(self, result: ControllerResult[T]) -> T:
        response = self._commit(result)
        if result.records and self._flush is not None:
            # Only the plan's fsyncs run off the loop; the log is read and updated here.
            plan = self.log.prepare_flush()
            try:
                await self._flush(plan.run)
            finally:
                plan.discard()  # a plan that never ran (cancelled) closes its descriptors
            self.log.complete_flush(plan)
        return response

    # ------------------------------------------------------------------ admin requests
    async def create_topics(self, topics: list[CreateTopicsRequestTopics], validate_only: bool) -> CreateTopicsResponse:
        return await self._durable(self.controller.create_topics(self._image, topics, validate_only))

    async def delete_topics(
        self, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> list[DeleteTopicsResponseResponses]:
        return await self._durable(self.controller.delete_topics(self._image, requested, version))

    async def create_partitions(
        self, topics: list[CreatePartitionsRequestTopics], validate_only: bool
    ) -> list[CreatePartitionsResponseResults]:
        return await self._durable(self.controller.create_partitions(self._image, topics, validate_only))

    async def alter_user_scram_credentials(
        self,
        deletions: list[AlterUserScramCredentialsRequestDeletions],
        upsertions: list[AlterUserScramCredentialsRequestUpsertions],
    ) -> list[AlterUserScramCredentialsResponseResults]:
        return await self._durable(self.controller.alter_user_scram_credentials(self._image, deletions, upsertions))

    async def alter_client_quotas(
        self, entries: list[AlterClientQuotasRequestEntries], validate_only: bool
    ) -> list[AlterClientQuotasResponseEntries]:
        return await self._durable(self.controller.alter_client_quotas(self._image, entries, validate_only))

    async def create_acls(self, creations: list[CreateAclsRequestCreations]) -> list[CreateAclsResponseResults]:
        return await self._durable(self.controller.create_acls(self._image, creations))

    async def create_delegation_token(
        self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int
    ) -> CreateDelegationTokenResponse:
        return await self._durable(
            self.controller.create_delegation_token(
                self._image, owner, requester, renewers, max_lifetime_ms, self.now_ms()
            )
        )

    async def renew_delegation_token(self, hmac: bytes, renew_period_ms: int, caller: str | None) -> tuple[int, int]:
        return await self._durable(
            self.controller.renew_delegation_token(self._image, hmac, renew_period_ms, caller, self.now_ms())
        )

    async def expire_delegation_token(
        self, hmac: bytes, expiry_period_ms: int, caller: str | None
    ) -> tuple[int, int]:
        return await self._durable(
            self.controller.expire_delegation_token(self._image, hmac, expiry_period_ms, caller, self.now_ms())
        )

    async def sweep_expired_delegation_tokens(self) -> None:
        """Remove the delegation tokens that have expired (``delegation.token.expiry.check.interval.ms``)."""
        await self._durable(self.controller.sweep_expired_delegation_tokens(self._image, self.now_ms()))

    async def delete_acls(self, filters: list[DeleteAclsRequestFilters]) -> list[DeleteAclsResponseFilterResults]:
        return await self._durable(self.controller.delete_acls(self._image, filters))

    async def alter_configs(
        self, resources: list[AlterConfigsRequestResources], validate_only: bool
    ) -> list[ConfigResult]:
        return await self._durable(self.controller.alter_configs(self._image, resources, validate_only))

    async def incremental_alter_configs(
        self, resources: list[IncrementalAlterConfigsRequestResources], validate_only: bool
    ) -> list[ConfigResult]:
        return await self._durable(self.controller.incremental_alter_configs(self._image, resources, validate_only))

    async def elect_leaders(
        self, election_type: int, topic_partitions: list[ElectLeadersRequestTopicPartitions] | None
    ) -> ElectLeadersResponse:
        results = await self._durable(self.controller.elect_leaders(self._image, election_type, topic_partitions))
        return {"error_code": 0, "replica_election_results": results}

    async def alter_partition_reassignments(
        self, topics: list[AlterPartitionReassignmentsRequestTopics], allow_replication_factor_change: bool
    ) -> AlterPartitionReassignmentsResponse:
        result = self.controller.alter_partition_reassignments(self._image, topics, allow_replication_factor_change)
        return {"error_code": 0, "error_message": None, "responses": await self._durable(result)}

    async def unregister_broker(self, broker_id: int) -> UnregisterBrokerResponse:
        return await self._durable(self.controller.unregister_broker(self._image, broker_id))

    async def update_features(self, updates: list[FeatureUpdate], validate_only: bool) -> FeatureUpdateOutcome:
        return await self._durable(self.controller.update_features(self._image, updates, validate_only))

    async def list_partition_reassignments(
        self, topics: list[ListPartitionReassignmentsRequestTopics] | None
    ) -> ListPartitionReassignmentsResponse:
        found = self.controller.list_partition_reassignments(self._image, topics)
        return {"error_code": 0, "error_message": None, "topics": found}

    # ------------------------------------------------------------------ the broker's own changes
    def create_topics_now(self, topics: list[CreateTopicsRequestTopics]) -> CreateTopicsResponse:
        """Create topics at once (fsync left to the next flush): auto-creation, internal topics."""
        return self._commit(self.controller.create_topics(self._image, topics, False))

    def create_topic_now(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> CreateTopicsResponseTopics:
        """One topic; returns its CreateTopics result entry (``error_code`` 0 when created)."""
        response = self.create_topics_now(
            [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ]
        )
        return response["topics"][0]

    def delete_topics_now(self, requested: list[tuple[str | None, uuid.UUID]]) -> list[DeleteTopicsResponseResponses]:
        """Delete topics at once (fsync left to the next flush)."""
        return self._commit(self.controller.delete_topics(self._image, requested, 6))

    def allocate_producer_ids_now(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """A new block of producer ids for this broker: (first id, count)."""
        return self._commit(self.controller.allocate_producer_ids(self._image, broker_id, broker_epoch))

