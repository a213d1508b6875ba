"""Topics, partitions and ISRs (Kafka's ``ReplicationControlManager``): CreateTopics,
DeleteTopics, CreatePartitions and AlterPartition.

Validation happens here once, in the order Kafka's controller checks, so any broker that
forwards a request gets the same answer. New partitions are placed by
:class:`~zurau.metadata.controller.placement.ReplicaPlacer`; ISR changes follow
:mod:`~zurau.metadata.controller.partition_change`.

AlterPartition (Kafka's): a partition leader asks for ISR changes naming the leader and partition
epochs it knows; the controller checks them and writes a ``PartitionChangeRecord``. Reassignment
(KIP-455) completes in the AlterPartition that brings the last added replica into the ISR.

Size bounds (Kafka's, KAFKA-14996 / KAFKA-17870), checked from the request's numbers before any
record or replica list is built, so a request for millions of partitions costs nothing:

* CreateTopics: the partitions the request asks for (per topic its ``assignments``, else
  ``num_partitions``, -1 counting ``num.partitions``, invalid counts nothing) may total
  :data:`MAX_PARTITIONS_PER_BATCH`; above, the whole request is refused, every topic answered
  POLICY_VIOLATION "Excessively large number of partitions per request.". The records of the
  topics it would create (a TopicRecord, its ConfigRecords and PartitionRecords each) may total
  :data:`~zurau.metadata.controller.result.MAX_RECORDS_PER_USER_OP`; above, again the whole
  request: POLICY_VIOLATION "Unable to perform excessively large batch operation.". So one topic
  of 10,000 partitions (10,001 records) is refused, as by Kafka; 9,999 is the most one request
  creates.
* CreatePartitions: per topic, the partitions it adds (with those the earlier topics of the same
  request add) may total ``MAX_RECORDS_PER_USER_OP``; a topic that would go above is answered
  POLICY_VIOLATION and adds nothing, the other topics of the request are unaffected.

Invariants: a request item that fails writes no record; items of one request see the records of
earlier items (:class:`~zurau.metadata.controller.result.PendingRecords`); ``validate_only``
checks everything and writes nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from zurau.config import BrokerConfig, describe_topic_config
from zurau.metadata.controller.config_control import check_topic_configs
from zurau.metadata.controller.partition_change import PartitionChanges
from zurau.metadata.controller.placement import ReplicaPlacer, partition_records
from zurau.metadata.controller.result import (
    EXCESSIVE_BATCH_MESSAGE,
    MAX_RECORDS_PER_USER_OP,
    ControllerResult,
    PendingRecords,
    duplicated,
    error_of,
)
from zurau.metadata.image import INTERNAL_TOPICS, MetadataImage, PartitionRegistration
from zurau.metadata.records import (
    TOPIC_RESOURCE,
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from zurau.metadata.topic_names import validate_topic_name
from zurau.protocol.errors import (
    FencedLeaderEpochError,
    IneligibleReplicaError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    KafkaError,
    NotControllerError,
    PolicyViolationError,
    StaleBrokerEpochError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from zurau.protocol.messages import (
    AlterPartitionRequest,
    AlterPartitionRequestTopicsPartitions,
    AlterPartitionResponse,
    AlterPartitionResponseTopics,
    AlterPartitionResponseTopicsPartitions,
    CreatePartitionsRequestTopics,
    CreatePartitionsRequestTopicsAssignments,
    CreatePartitionsResponseResults,
    CreateTopicsRequestTopics,
    CreateTopicsResponse,
    CreateTopicsResponseTopics,
    DeleteTopicsResponseResponses,
)
from zurau.types import ZERO_UUID

log = logging.getLogger("zurau.controller")

CLUSTER_METADATA_TOPIC = "__cluster_metadata"

MAX_PARTITIONS_PER_BATCH = 10_000
"""Partitions one CreateTopics request may ask for (Kafka's
``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``)."""
EXCESSIVE_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."


class ReplicationControlManager:
    def __init__(
        self,
        config: BrokerConfig,
        placer: ReplicaPlacer,
        changes: PartitionChanges,
        new_topic_id: Callable[[], uuid.UUID],
    ) -> None:
        self.config = config
        self.placer = placer
        self.changes = changes
        self.new_topic_id = new_topic_id

    # ------------------------------------------------------------------ CreateTopics
    def create_topics(
        self, image: MetadataImage, topics: list[CreateTopicsRequestTopics], validate_only: bool
    ) -> ControllerResult[CreateTopicsResponse]:
        """CreateTopics, per topic in the order Kafka checks:

        a name given twice: INVALID_REQUEST "Duplicate topic name." (none of them created);
        ``__cluster_metadata``: TOPIC_AUTHORIZATION_FAILED; an illegal name:
        INVALID_TOPIC_EXCEPTION; an existing one: TOPIC_ALREADY_EXISTS; configs: INVALID_CONFIG;
        a manual assignment needs ``num_partitions`` and ``replication_factor`` of -1 and
        partition ids 0..n-1 with one replication factor and registered brokers
        (INVALID_REPLICA_ASSIGNMENT); otherwise -1 takes ``num.partitions`` /
        ``default.replication.factor``; 0 or below -1 is INVALID_PARTITIONS /
        INVALID_REPLICATION_FACTOR; more replicas than brokers INVALID_REPLICATION_FACTOR.
        ``validate_only`` checks everything and writes nothing (topic id all zeros).

        Before all that, the size bounds of the module docstring: a request over them is refused
        whole, every topic answered POLICY_VIOLATION.
        """
        dups = duplicated([t["name"] for t in topics])
        requested = self.requested_partitions([t for t in topics if t["name"] not in dups])
        if requested > MAX_PARTITIONS_PER_BATCH:
            log.warning(
                "refusing a CreateTopics request for %d partitions in all (at most %d per request)",
                requested,
                MAX_PARTITIONS_PER_BATCH,
            )
            return _refuse_create_topics(topics, EXCESSIVE_PARTITIONS_MESSAGE)
        pending = PendingRecords(image)
        results: list[CreateTopicsResponseTopics] = []
        generated = 0  # records of the topics created so far (also counted when validate_only)
        for t in topics:
            name = t["name"]
            if name in dups:
                continue
            try:
                result, records = self._create_topic(pending, t, validate_only)
            except Exception as e:
                results.append(create_topic_error(name, *error_of(e)))
                continue
            results.append(result)
            generated += records
            if generated > MAX_RECORDS_PER_USER_OP:
                log.warning(
                    "refusing a CreateTopics request of more than %d metadata records", MAX_RECORDS_PER_USER_OP
                )
                return _refuse_create_topics(topics, EXCESSIVE_BATCH_MESSAGE)
        for name in sorted(dups):
            results.append(create_topic_error(name, InvalidRequestError.code, "Duplicate topic name."))
        return ControllerResult(pending.records, {"throttle_time_ms": 0, "topics": results})

    def requested_partitions(self, topics: list[CreateTopicsRequestTopics]) -> int:
        """The partitions ``topics`` ask for, counted as Kafka's controller does before it
        validates anything: a topic's ``assignments`` if given, else ``num_partitions`` (-1 is
        ``num.partitions``; 0 or below -1 counts nothing)."""
        default = int(self.config.get("num.partitions"))
        total = 0
        for t in topics:
            assignments = t.get("assignments") or ()
            n = int(t.get("num_partitions", -1))
            if assignments:
                total += len(assignments)
            elif n == -1:
                total += default
            elif n > 0:
                total += n
        return total

    def _create_topic(
        self, pending: PendingRecords, topic: CreateTopicsRequestTopics, validate_only: bool
    ) -> tuple[CreateTopicsResponseTopics, int]:
        """The topic's result, and the number of records creating it takes (written unless
        ``validate_only``)."""
        name = topic["name"]
        if name == CLUSTER_METADATA_TOPIC:
            raise TopicAuthorizationFailedError("Authorization failed.")
        validate_topic_name(name)
        if pending.image.get(name) is not None:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        configs: dict[str, str | None] = {c["name"]: c["value"] for c in topic.get("configs") or ()}
        check_topic_configs(self.config, configs)
        partitions, replication_factor, placement = self._placement(pending.image, topic)
        stored = {k: v for k, v in configs.items() if v is not None}
        topic_id = ZERO_UUID
        if not validate_only:
            topic_id = self.new_topic_id()
            records: list[MetadataRecord] = [TopicRecord(name, topic_id)]
            records += [ConfigRecord(TOPIC_RESOURCE, name, k, v) for k, v in sorted(stored.items())]
            records += partition_records(pending.image, topic_id, placement, 0)
            pending.add(records)
            log.info("creating topic %s with %d partitions", name, partitions)
        result: CreateTopicsResponseTopics = {
            "name": name,
            "topic_id": topic_id,
            "error_code": 0,
            "error_message": None,
            "topic_config_error_code": 0,
            "num_partitions": partitions,
            "replication_factor": replication_factor,
            "configs": [
                {
                    "name": e.name,
                    "value": None if e.sensitive else e.value_str,
                    "read_only": e.read_only,
                    "config_source": e.source,
                    "is_sensitive": e.sensitive,
                }
                for e in describe_topic_config(self.config, stored)
            ],
        }
        return result, 1 + len(stored) + partitions

    def _placement(
        self, image: MetadataImage, topic: CreateTopicsRequestTopics
    ) -> tuple[int, int, list[tuple[int, ...]]]:
        """A new topic's partition count, replication factor and replica lists."""
        partitions: int = topic.get("num_partitions", -1)
        replication_factor: int = topic.get("replication_factor", -1)
        assignments = topic.get("assignments") or []
        if assignments:
            if replication_factor != -1:
                raise InvalidRequestError(
                    "A manual partition assignment was specified, but replication factor was not set to -1."
                )
            if partitions != -1:
                raise InvalidRequestError(
                    "A manual partition assignment was specified, but numPartitions was not set to -1."
                )
            placement = self.placer.manual_assignment(image, assignments)
            return len(placement), len(placement[0]), placement
        if replication_factor < -1 or replication_factor == 0:
            raise InvalidReplicationFactorError("Replication factor was set to an invalid non-positive value.")
        if partitions < -1 or partitions == 0:
            raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
        if partitions == -1:
            partitions = int(self.config.get("num.partitions"))
        if replication_factor == -1:
            replication_factor = int(self.config.get("default.replication.factor"))
        return partitions, replication_factor, self.placer.place(image, partitions, replication_factor)

    # ------------------------------------------------------------------ DeleteTopics
    def delete_topics(
        self, image: MetadataImage, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> ControllerResult[list[DeleteTopicsResponseResponses]]:
        """DeleteTopics by name (all versions) or id (v6+), with Kafka's checks and messages:
        deletion disabled (TOPIC_DELETION_DISABLED from v3, else INVALID_REQUEST), neither or both
        of name and id, duplicates, a topic named both by name and by id, unknown names and ids,
        internal topics (INVALID_TOPIC_EXCEPTION)."""
        if not self.config.get("delete.topic.enable"):
            err: KafkaError = (
                TopicDeletionDisabledError("Topic deletion is disabled.")
                if version >= 3
                else InvalidRequestError("Topic deletion is disabled.")
            )
            return ControllerResult([], [_delete_result(n, tid, err.code, str(err)) for n, tid in requested])
        dup_names = duplicated([n for n, tid in requested if n is not None and tid == ZERO_UUID])
        dup_ids = duplicated([tid for n, tid in requested if n is None and tid != ZERO_UUID])
        ids_given = {tid for n, tid in requested if n is None and tid != ZERO_UUID}
        named_ids = set()
        for n, tid in requested:
            if n is not None and tid == ZERO_UUID and n not in dup_names:
                named = image.get(n)
                if named is not None and named.topic_id in ids_given:
                    named_ids.add(named.topic_id)
        pending = PendingRecords(image)
        results: list[DeleteTopicsResponseResponses] = []
        reported: set[Any] = set()
        for name, topic_id in requested:
            if name is None and topic_id == ZERO_UUID:
                results.append(
                    _delete_result(None, ZERO_UUID, InvalidRequestError.code, "Neither topic name nor id were specified.")
                )
                continue
            if name is not None and topic_id != ZERO_UUID:
                results.append(
                    _delete_result(
                        name, topic_id, InvalidRequestError.code, "You may not specify both topic name and topic id."
                    )
                )
                continue
            if name in dup_names or topic_id in dup_ids:
                key = name if name is not None else topic_id
                if key not in reported:
                    reported.add(key)
                    msg = "Duplicate topic name." if name is not None else "Duplicate topic id."
                    results.append(_delete_result(name, topic_id, InvalidRequestError.code, msg))
                continue
            results.append(self._delete_topic(pending, name, topic_id, named_ids))
        return ControllerResult(pending.records, results)

    @staticmethod
    def _delete_topic(
        pending: PendingRecords, name: str | None, topic_id: uuid.UUID, named_ids: set[uuid.UUID]
    ) -> DeleteTopicsResponseResponses:
        """One DeleteTopics entry named by either its name or its id (not both)."""
        try:
            if name is None:
                t = pending.image.by_id(topic_id)
                if t is None:
                    raise UnknownTopicIdError(f"Topic id {topic_id} does not exist.")
                if topic_id in named_ids:
                    raise InvalidRequestError("The topic id was also supplied by name.")
            else:
                t = pending.image.get(name)
                if t is None:
                    raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
                if t.topic_id in named_ids:
                    topic_id = t.topic_id
                    raise InvalidRequestError("The provided topic name maps to an ID that was already supplied.")
            if t.name in INTERNAL_TOPICS:
                raise InvalidTopicError(f"Topic {t.name} is a Kafka internal topic and cannot be deleted.")
            pending.add([RemoveTopicRecord(t.topic_id)])
            log.info("deleting topic %s", t.name)
            return _delete_result(t.name, t.topic_id)
        except Exception as e:
            return _delete_result(name, topic_id, *error_of(e))

    # ------------------------------------------------------------------ CreatePartitions
    def create_partitions(
        self, image: MetadataImage, topics: list[CreatePartitionsRequestTopics], validate_only: bool
    ) -> ControllerResult[list[CreatePartitionsResponseResults]]:
        """CreatePartitions: a name twice is INVALID_REQUEST ("Duplicate topic name."); an unknown
        topic UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one INVALID_PARTITIONS;
        manual ``assignments`` need one replica list per new partition, each of registered
        brokers, once, with the topic's replication factor (INVALID_REPLICA_ASSIGNMENT); a topic
        whose new partitions would take the request above ``MAX_RECORDS_PER_USER_OP``
        POLICY_VIOLATION (checked before any placement, so a huge count costs nothing)."""
        dups = duplicated([t["name"] for t in topics])
        pending = PendingRecords(image)
        results: list[CreatePartitionsResponseResults] = []
        for name in sorted(dups):
            results.append({"name": name, "error_code": InvalidRequestError.code, "error_message": "Duplicate topic name."})
        added = 0  # partitions the earlier topics of this request add (also when validate_only)
        for t in topics:
            name = t["name"]
            if name in dups:
                continue
            try:
                added += self._grow(pending, name, t["count"], t.get("assignments"), validate_only, added)
                results.append({"name": name, "error_code": 0, "error_message": None})
            except Exception as e:
                code, msg = error_of(e)
                results.append({"name": name, "error_code": code, "error_message": msg})
        return ControllerResult(pending.records, results)

    def _grow(
        self,
        pending: PendingRecords,
        name: str,
        count: int,
        assignments: list[CreatePartitionsRequestTopicsAssignments] | None,
        validate_only: bool,
        added_before: int,
    ) -> int:
        """Grow ``name`` to ``count`` partitions; returns the number added (``added_before``: by
        the earlier topics of the request)."""
        t = pending.image.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        current = t.num_partitions
        if count == current:
            raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
        if count < current:
            raise InvalidPartitionsError(
                f"The topic {name} currently has {current} partition(s); {count} would not be an increase."
            )
        additional = count - current
        replication_factor = t.replication_factor or 1
        if assignments is not None:
            if len(assignments) != additional:
                raise InvalidReplicaAssignmentError(
                    f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                    "assignment(s) were specified."
                )
        if added_before + additional > MAX_RECORDS_PER_USER_OP:
            log.warning(
                "refusing to add %d partition(s) to %s: a request may add at most %d", additional, name,
                MAX_RECORDS_PER_USER_OP,
            )
            raise PolicyViolationError(
                f"{EXCESSIVE_PARTITIONS_MESSAGE[:-1]}: adding {additional} partition(s) to {name} would make "
                f"{added_before + additional} new partitions in this request, above the limit of "
                f"{MAX_RECORDS_PER_USER_OP}."
            )
        if assignments is not None:
            for i, a in enumerate(assignments):
                self.placer.check_replica_list(pending.image, a["broker_ids"], replication_factor)
                self.placer.check_some_live(pending.image, a["broker_ids"], current + i)
            placement = [tuple(a["broker_ids"]) for a in assignments]
        else:
            placement = self.placer.place(pending.image, additional, replication_factor, first=current)
        if not validate_only:
            pending.add(partition_records(pending.image, t.topic_id, placement, current))
        return additional

    # ------------------------------------------------------------------ AlterPartition
    def alter_partition(
        self, image: MetadataImage, request: AlterPartitionRequest
    ) -> ControllerResult[AlterPartitionResponse]:
        """AlterPartition from a partition leader, checked in the order Kafka's controller does.

        The request's (``broker_id``, ``broker_epoch``) must be the current registration
        (STALE_BROKER_EPOCH for the whole request). Per partition: unknown topic id
        UNKNOWN_TOPIC_ID, unknown partition UNKNOWN_TOPIC_OR_PARTITION; a leader or partition
        epoch newer than the image's NOT_CONTROLLER (this controller is behind, the leader should
        look for the new one); an older leader epoch FENCED_LEADER_EPOCH; a requester that is not
        the leader INVALID_REQUEST; an older partition epoch INVALID_UPDATE_VERSION; an ISR that is
        not a subset of the replicas or lacks the leader INVALID_REQUEST; a member that is not
        registered, fenced, in controlled shutdown or (v3) of another broker epoch
        INELIGIBLE_REPLICA. A valid new ISR different from the current one is one
        PartitionChangeRecord; the answer carries the partition as it will be once committed.
        """
        broker_id: int = request["broker_id"]
        broker_epoch: int = request.get("broker_epoch", -1)
        reg = image.brokers.get(broker_id)
        if reg is None or (broker_epoch != -1 and reg.epoch != broker_epoch):
            return ControllerResult(
                [], {"throttle_time_ms": 0, "error_code": StaleBrokerEpochError.code, "topics": []}
            )
        records: list[MetadataRecord] = []
        topics_out: list[AlterPartitionResponseTopics] = []
        for t in request.get("topics") or ():
            topic = image.by_id(t["topic_id"])
            parts_out: list[AlterPartitionResponseTopicsPartitions] = []
            for pd in t.get("partitions") or ():
                index = pd["partition_index"]
                try:
                    if topic is None:
                        raise UnknownTopicIdError(f"unknown topic id {t['topic_id']}")
                    current = topic.partitions.get(index)
                    if current is None:
                        raise UnknownTopicOrPartitionError(f"{topic.name} has no partition {index}")
                    new_isr = _check_alter_partition(image, broker_id, current, pd)
                    after = current
                    if new_isr != current.isr:
                        change = self.changes.completed_reassignment(image, topic, index, current, new_isr)
                        if change is None:
                            change = self.changes.isr_change(image, topic, index, current, new_isr)
                        if change is None:
                            change = PartitionChangeRecord(index, topic.topic_id, isr=new_isr)
                        records.append(change)
                        after = current.merge(change)
                        log.info(
                            "%s-%d: ISR %s -> %s at the request of leader %d",
                            topic.name, index, list(current.isr), list(new_isr), broker_id,
                        )
                    parts_out.append(_alter_partition_answer(index, 0, after))
                except KafkaError as e:
                    parts_out.append(_alter_partition_answer(index, e.code, None))
            topics_out.append({"topic_id": t["topic_id"], "partitions": parts_out})
        return ControllerResult(records, {"throttle_time_ms": 0, "error_code": 0, "topics": topics_out})


def _check_alter_partition(
    image: MetadataImage, broker_id: int, current: PartitionRegistration, pd: AlterPartitionRequestTopicsPartitions
) -> tuple[int, ...]:
    """The requested ISR if the request may change ``current``; else raises its error."""
    leader_epoch: int = pd["leader_epoch"]
    partition_epoch: int = pd["partition_epoch"]
    if leader_epoch > current.leader_epoch or partition_epoch > current.partition_epoch:
        raise NotControllerError("the leader knows a newer partition state than this controller")
    if leader_epoch < current.leader_epoch:
        raise FencedLeaderEpochError(f"leader epoch {leader_epoch} is older than {current.leader_epoch}")
    if broker_id != current.leader:
        raise InvalidRequestError(f"broker {broker_id} is not the leader {current.leader}")
    if partition_epoch < current.partition_epoch:
        raise InvalidUpdateVersionError(f"partition epoch {partition_epoch} is older than {current.partition_epoch}")
    with_epochs = pd.get("new_isr_with_epochs")
    if with_epochs is not None:
        members = [(m["broker_id"], m.get("broker_epoch", -1)) for m in with_epochs]
    else:
        members = [(b, -1) for b in pd.get("new_isr") or ()]
    new_isr = tuple(b for b, _e in members)
    if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(current.replicas):
        raise InvalidRequestError(f"ISR {list(new_isr)} is not a subset of the replicas {list(current.replicas)}")
    if current.leader not in new_isr:
        raise InvalidRequestError(f"ISR {list(new_isr)} does not include the leader {current.leader}")
    for b, epoch in members:
        reg = image.brokers.get(b)
        if reg is None or not reg.live or (epoch != -1 and epoch != reg.epoch):
            raise IneligibleReplicaError(f"broker {b} is not eligible to join the ISR")
    return new_isr


# ---------------------------------------------------------------------- response helpers
def _alter_partition_answer(
    index: int, code: int, p: PartitionRegistration | None
) -> AlterPartitionResponseTopicsPartitions:
    return {
        "partition_index": index,
        "error_code": code,
        "leader_id": p.leader if p is not None else -1,
        "leader_epoch": p.leader_epoch if p is not None else -1,
        "isr": list(p.isr) if p is not None else [],
        "leader_recovery_state": 0,
        "partition_epoch": p.partition_epoch if p is not None else -1,
    }


def create_topic_error(name: str, code: int, message: str | None) -> CreateTopicsResponseTopics:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "topic_config_error_code": 0,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


def _refuse_create_topics(
    topics: list[CreateTopicsRequestTopics], message: str
) -> ControllerResult[CreateTopicsResponse]:
    """A CreateTopics request refused whole (Kafka's ``getErrorResponse``): every topic named,
    once, with POLICY_VIOLATION and ``message``; nothing written."""
    names = list(dict.fromkeys(t["name"] for t in topics))
    return ControllerResult(
        [],
        {"throttle_time_ms": 0, "topics": [create_topic_error(n, PolicyViolationError.code, message) for n in names]},
    )


def _delete_result(
    name: str | None, topic_id: uuid.UUID, code: int = 0, message: str | None = None
) -> DeleteTopicsResponseResponses:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
