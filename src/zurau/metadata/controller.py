"""The controller: admin requests in, metadata records and responses out.

``QuorumController`` is a pure state machine in the sense of docs/architecture.md: each operation takes the
current :class:`~zurau.metadata.image.MetadataImage` and a request body (the wire dict Kafka's
clients send) and returns a :class:`ControllerResult` holding the records to append and the
response body to send once they are committed. It never changes the image itself: the caller
appends the records to the metadata log and replays them (on one node a local log, in a cluster
the Raft quorum's). Validation happens here once, in the order Kafka's controller checks
(``ReplicationControlManager``, ``ConfigurationControlManager``), so any broker that forwards a
request gets the same answer.

Operations: CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs and
IncrementalAlterConfigs (TOPIC and BROKER resources; BROKER_LOGGER is the receiving broker's own
business), producer-id block allocation (AllocateProducerIds), and the KRaft broker lifecycle:
BrokerRegistration, BrokerHeartbeat, UnregisterBroker and fencing brokers whose session expired
(sessions themselves are soft state: :mod:`zurau.metadata.broker_heartbeat_manager`); and the
partitions' ISR and leadership (AlterPartition, leader election, ElectLeaders, the automatic
leader rebalance, AlterPartitionReassignments and ListPartitionReassignments).

Controlled shutdown (Kafka's): a broker that asks to shut down first enters controlled shutdown
(its leaderships move, it leaves every ISR) and is fenced and told to stop only once every other
live broker has reported applying those records. The offsets brokers report in heartbeats and
the offset each shutdown waits for are the controller's only soft state besides sessions.

Reassignment (KIP-455): ``PartitionRegistration.adding_replicas`` / ``removing_replicas`` hold an
ongoing reassignment, with ``replicas`` the target followed by the replicas being removed; it
completes in the AlterPartition that brings the last added replica into the ISR.

ISR and leadership (Kafka's ``ReplicationControlManager`` / ``PartitionChangeBuilder``). A
partition leader asks for ISR changes with AlterPartition, naming the leader and partition epochs
it knows; the controller checks them and writes a ``PartitionChangeRecord``. When a broker stops
being live (fenced, controlled shutdown, re-registered, unregistered) it leaves every ISR and each
partition it led gets the first live ISR member, in replica order, as its new leader (leader epoch
+ 1). When no ISR member is live the partition has no leader (-1) and keeps its last ISR member,
so that the replica with every committed record is elected when it comes back (unfenced); only
with ``unclean.leader.election.enable`` may a live replica outside the ISR lead instead (it
becomes the whole ISR, and committed records it lacks are lost). Invariants: the leader, when
there is one, is in the ISR; the ISR is never empty and is a subset of the replicas.

Replica placement. When the image has broker registrations, replicas go to *live* brokers only
(unfenced, not in controlled shutdown), striped over racks as Kafka's ``StripedReplicaPlacer``
does: the replicas of one partition come from as many different racks as possible, leaders
rotate over racks and over the brokers of each rack, and the starting points are random. A
partition's ISR is its live replicas and its leader the first of them. When the image has no
registrations (a single node that does not register), the brokers come from ``brokers()`` (this
node) and placement is round-robin from a random offset.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from zurau.config import (
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigType,
    describe_topic_config,
    format_value,
    resolve_topic_config,
)
from zurau.metadata.image import (
    INTERNAL_TOPICS,
    BrokerRegistration,
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from zurau.metadata.records import (
    BROKER_RESOURCE,
    CONTROLLED_SHUTDOWN_ENTER,
    CONTROLLED_SHUTDOWN_NONE,
    FENCING_FENCE,
    FENCING_NONE,
    FENCING_UNFENCE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)
from zurau.metadata.topic_names import validate_topic_name
from zurau.protocol.errors import (
    BrokerIdNotRegisteredError,
    DuplicateBrokerRegistrationError,
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    FencedLeaderEpochError,
    InconsistentClusterIdError,
    IneligibleReplicaError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    InvalidUpdateVersionError,
    KafkaError,
    NoReassignmentInProgressError,
    NotControllerError,
    PreferredLeaderNotAvailableError,
    StaleBrokerEpochError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
    UnknownServerError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from zurau.storage.log_config import LogConfig
from zurau.types import ZERO_UUID

log = logging.getLogger("zurau.controller")

T = TypeVar("T")

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
PRODUCER_ID_BLOCK_SIZE = 1000

# Kafka's ConfigResource.Type ids.
RESOURCE_TOPIC = TOPIC_RESOURCE
RESOURCE_BROKER = BROKER_RESOURCE
RESOURCE_BROKER_LOGGER = 8
KNOWN_RESOURCE_TYPES = frozenset({RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, 16, 32})

# IncrementalAlterConfigs operations.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

_LOG_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(LogConfig))


@dataclass(frozen=True)
class ControllerResult(Generic[T]):
    """Records to commit and the response to give once they are committed."""

    records: list[MetadataRecord]
    response: T


@dataclass
class _Pending:
    """Records produced so far by one request, and the image they lead to (for later items).
    The image is a view over one working copy (:class:`MetadataDelta`), not a new image per
    item: a request's cost grows with its own size, not with the number of topics."""

    image: MetadataImage
    records: list[MetadataRecord] = field(default_factory=list)
    _delta: MetadataDelta | None = None

    def add(self, records: list[MetadataRecord]) -> None:
        if not records:
            return
        self.records.extend(records)
        if self._delta is None:
            self._delta = MetadataDelta(self.image)
        self._delta.replay(records)
        self.image = self._delta.image()


def error_of(exc: BaseException) -> tuple[int, str]:
    """Kafka error code and message for an exception; unexpected ones are logged."""
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    log.exception("unexpected controller error", exc_info=exc)
    return UnknownServerError.code, f"{type(exc).__name__}: {exc}"


def duplicated(items: Sequence[Any]) -> set[Any]:
    """The items that occur more than once (Kafka answers each such one with INVALID_REQUEST)."""
    seen: set[Any] = set()
    dups: set[Any] = set()
    for item in items:
        if item in seen:
            dups.add(item)
        seen.add(item)
    return dups


def check_topic_configs(broker_config: BrokerConfig, configs: dict[str, Any]) -> None:
    """Validate a topic's full set of overrides as the live log would apply them.

    Raises InvalidConfigError (INVALID_CONFIG) with Kafka's message: unknown names, null or
    malformed values, cross-field rules against the broker's topic defaults, and the local log's
    own limits (``LogConfig``), so a config that is accepted can always be applied.
    """
    try:
        typed = resolve_topic_config(broker_config, configs)
    except ConfigError as e:
        raise InvalidConfigError(str(e)) from None
    LogConfig(**{k: typed[k] for k in _LOG_CONFIG_FIELDS if k in typed})


class QuorumController:
    def __init__(
        self,
        config: BrokerConfig,
        brokers: Callable[[], Sequence[int]],
        *,
        rng: random.Random | None = None,
        new_topic_id: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        self.config = config
        self.brokers = brokers
        self.rng = rng or random.Random()
        self.new_topic_id = new_topic_id
        # Soft state of the active controller, never written to the log (Kafka's
        # BrokerHeartbeatManager keeps the same): the metadata offset each broker last reported
        # in a heartbeat, and for a broker in controlled shutdown the offset of the records that
        # moved its leaderships away. A controller that becomes active rebuilds both from the
        # heartbeats it receives.
        self._reported_offsets: dict[int, int] = {}
        self._shutdown_offsets: dict[tuple[int, int], int] = {}

    # ------------------------------------------------------------------ placement
    def _place(
        self, image: MetadataImage, partitions: int, replication_factor: int, first: int = 0
    ) -> list[tuple[int, ...]]:
        """Replica lists for ``partitions`` new partitions (numbered from ``first``), the leader
        first; raises InvalidReplicationFactorError when the brokers cannot hold them."""
        if image.brokers:
            return self._stripe(image, partitions, replication_factor)
        brokers = sorted(self.brokers())
        if replication_factor > len(brokers):
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                f"factor of {replication_factor} cannot be reached because only {len(brokers)} broker(s) "
                "are registered."
            )
        start = self.rng.randrange(len(brokers))
        out = []
        for p in range(first, first + partitions):
            out.append(tuple(brokers[(start + p + r) % len(brokers)] for r in range(replication_factor)))
        return out

    def _stripe(self, image: MetadataImage, partitions: int, replication_factor: int) -> list[tuple[int, ...]]:
        """Rack-striped placement over the image's live brokers.

        Racks (brokers without a rack form one rack of their own) are put in a random order, and
        each rack's brokers are rotated by a random amount. Partition ``k`` takes its leader from
        rack ``(start + k) mod R`` and each further replica from the next rack that still has a
        broker unused by this partition, so a partition spans ``min(RF, R)`` racks. A rack moves
        its rotation on by one each time it supplies a leader, so leaders also rotate over the
        brokers within each rack.
        """
        usable = [b for b in image.brokers.values() if not b.in_controlled_shutdown]
        live = [b for b in usable if not b.fenced]
        prefix = f"Unable to replicate the partition {replication_factor} time(s): "
        if replication_factor > len(usable):
            raise InvalidReplicationFactorError(
                f"{prefix}The target replication factor of {replication_factor} cannot be reached because "
                f"only {len(usable)} broker(s) are registered."
            )
        if not live:
            raise InvalidReplicationFactorError(f"{prefix}All brokers are currently fenced.")
        if replication_factor > len(live):
            # Kafka would put followers on fenced brokers; without replication they could
            # never join the ISR, so refuse instead.
            raise InvalidReplicationFactorError(
                f"{prefix}The target replication factor of {replication_factor} cannot be reached because "
                f"only {len(live)} broker(s) are unfenced."
            )
        by_rack: dict[str | None, list[int]] = {}
        for b in sorted(live, key=lambda b: b.id):
            by_rack.setdefault(b.rack, []).append(b.id)
        racks = [by_rack[r] for r in sorted(by_rack, key=lambda r: (r is not None, r or ""))]
        self.rng.shuffle(racks)
        rotation = [self.rng.randrange(len(members)) for members in racks]
        start = self.rng.randrange(len(racks))
        out: list[tuple[int, ...]] = []
        for k in range(partitions):
            lead = (start + k) % len(racks)
            used = [0] * len(racks)
            replicas: list[int] = []
            i = lead
            while len(replicas) < replication_factor:  # ends: RF <= live brokers
                members = racks[i]
                if used[i] < len(members):
                    replicas.append(members[(rotation[i] + used[i]) % len(members)])
                    used[i] += 1
                i = (i + 1) % len(racks)
            rotation[lead] += 1
            out.append(tuple(replicas))
        return out

    def _check_replica_list(
        self, image: MetadataImage, broker_ids: Sequence[int], replication_factor: int | None
    ) -> None:
        if not broker_ids:
            raise InvalidReplicaAssignmentError("The manual partition assignment includes an empty replica list.")
        registered = set(image.brokers) if image.brokers else set(self.brokers())
        seen: set[int] = set()
        for b in broker_ids:
            if b in seen:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes the broker {b} more than once."
                )
            seen.add(b)
            if b not in registered:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes broker {b}, but no such broker is registered."
                )
        if replication_factor is not None and len(broker_ids) != replication_factor:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but "
                f"this is not consistent with previous partitions, which have {replication_factor} replica(s)."
            )

    @staticmethod
    def _check_some_live(image: MetadataImage, broker_ids: Sequence[int], partition: int) -> None:
        """A manual assignment needs a live broker among each partition's replicas (its leader)."""
        if image.brokers and not any(b in image.brokers and image.brokers[b].live for b in broker_ids):
            raise InvalidReplicaAssignmentError(
                f"All brokers specified in the manual partition assignment for partition {partition} are fenced "
                "or in controlled shutdown."
            )

    @staticmethod
    def _partition_records(
        image: MetadataImage, topic_id: uuid.UUID, placement: list[tuple[int, ...]], first: int
    ) -> list[MetadataRecord]:
        """One PartitionRecord per replica list: the ISR is the live replicas (all of them without
        registrations), the leader the first of the ISR."""
        records: list[MetadataRecord] = []
        for i, replicas in enumerate(placement):
            isr = replicas
            if image.brokers:
                isr = tuple(b for b in replicas if b in image.brokers and image.brokers[b].live)
            records.append(PartitionRecord(first + i, topic_id, replicas, isr, isr[0], 0, 0))
        return records

    # ------------------------------------------------------------------ CreateTopics
    def create_topics(
        self, image: MetadataImage, topics: list[dict[str, Any]], validate_only: bool
    ) -> ControllerResult[dict[str, Any]]:
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
        """
        pending = _Pending(image)
        dups = duplicated([t["name"] for t in topics])
        results: list[dict[str, Any]] = []
        for t in topics:
            name = t["name"]
            if name in dups:
                continue
            try:
                results.append(self._create_topic(pending, t, validate_only))
            except Exception as e:
                results.append(create_topic_error(name, *error_of(e)))
        for name in sorted(dups):
            results.append(create_topic_error(name, InvalidRequestError.code, "Duplicate topic name."))
        return ControllerResult(pending.records, {"throttle_time_ms": 0, "topics": results})

    def _create_topic(self, pending: _Pending, topic: dict[str, Any], validate_only: bool) -> dict[str, Any]:
        name = topic["name"]
        if name == CLUSTER_METADATA_TOPIC:
            raise TopicAuthorizationFailedError("Authorization failed.")
        validate_topic_name(name)
        if pending.image.get(name) is not None:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        configs: dict[str, str | None] = {c["name"]: c["value"] for c in topic.get("configs") or ()}
        check_topic_configs(self.config, configs)
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
            placement = self._manual_assignment(pending.image, assignments)
            partitions, replication_factor = len(placement), len(placement[0])
        else:
            if replication_factor < -1 or replication_factor == 0:
                raise InvalidReplicationFactorError("Replication factor was set to an invalid non-positive value.")
            if partitions < -1 or partitions == 0:
                raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
            if partitions == -1:
                partitions = int(self.config.get("num.partitions"))
            if replication_factor == -1:
                replication_factor = int(self.config.get("default.replication.factor"))
            placement = self._place(pending.image, partitions, replication_factor)
        stored = {k: v for k, v in configs.items() if v is not None}
        topic_id = ZERO_UUID
        if not validate_only:
            topic_id = self.new_topic_id()
            records: list[MetadataRecord] = [TopicRecord(name, topic_id)]
            records += [ConfigRecord(TOPIC_RESOURCE, name, k, v) for k, v in sorted(stored.items())]
            records += self._partition_records(pending.image, topic_id, placement, 0)
            pending.add(records)
            log.info("creating topic %s with %d partitions", name, partitions)
        return {
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

    def _manual_assignment(self, image: MetadataImage, assignments: list[dict[str, Any]]) -> list[tuple[int, ...]]:
        by_index: dict[int, tuple[int, ...]] = {}
        replication_factor: int | None = None
        for a in assignments:
            index = a["partition_index"]
            if index in by_index:
                raise InvalidReplicaAssignmentError(f"Found multiple manual partition assignments for partition {index}")
            self._check_replica_list(image, a["broker_ids"], replication_factor)
            self._check_some_live(image, a["broker_ids"], index)
            replication_factor = len(a["broker_ids"])
            by_index[index] = tuple(a["broker_ids"])
        if set(by_index) != set(range(len(by_index))):
            raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
        return [by_index[i] for i in range(len(by_index))]

    # ------------------------------------------------------------------ DeleteTopics
    def delete_topics(
        self, image: MetadataImage, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> ControllerResult[list[dict[str, Any]]]:
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
        pending = _Pending(image)
        results: list[dict[str, Any]] = []
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
                results.append(_delete_result(t.name, t.topic_id))
            except Exception as e:
                results.append(_delete_result(name, topic_id, *error_of(e)))
        return ControllerResult(pending.records, results)

    # ------------------------------------------------------------------ CreatePartitions
    def create_partitions(
        self, image: MetadataImage, topics: list[dict[str, Any]], validate_only: bool
    ) -> ControllerResult[list[dict[str, Any]]]:
        """CreatePartitions: a name twice is INVALID_REQUEST ("Duplicate topic name."); an unknown
        topic UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one INVALID_PARTITIONS;
        manual ``assignments`` need one replica list per new partition, each of registered
        brokers, once, with the topic's replication factor (INVALID_REPLICA_ASSIGNMENT)."""
        dups = duplicated([t["name"] for t in topics])
        pending = _Pending(image)
        results: list[dict[str, Any]] = []
        for name in sorted(dups):
            results.append({"name": name, "error_code": InvalidRequestError.code, "error_message": "Duplicate topic name."})
        for t in topics:
            name = t["name"]
            if name in dups:
                continue
            try:
                self._grow(pending, name, t["count"], t.get("assignments"), validate_only)
                results.append({"name": name, "error_code": 0, "error_message": None})
            except Exception as e:
                code, msg = error_of(e)
                results.append({"name": name, "error_code": code, "error_message": msg})
        return ControllerResult(pending.records, results)

    def _grow(
        self, pending: _Pending, name: str, count: int, assignments: list[dict[str, Any]] | None, validate_only: bool
    ) -> None:
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
            for i, a in enumerate(assignments):
                self._check_replica_list(pending.image, a["broker_ids"], replication_factor)
                self._check_some_live(pending.image, a["broker_ids"], current + i)
            placement = [tuple(a["broker_ids"]) for a in assignments]
        else:
            placement = self._place(pending.image, additional, replication_factor, first=current)
        if not validate_only:
            pending.add(self._partition_records(pending.image, t.topic_id, placement, current))

    # ------------------------------------------------------------------ configs
    @staticmethod
    def check_resource_type(rtype: int) -> None:
        if rtype not in KNOWN_RESOURCE_TYPES:
            raise UnsupportedVersionError(f"Unknown resource type {rtype}.")
        if rtype not in (RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
            raise InvalidRequestError(f"Unexpected resource type {rtype}.")

    def _topic_for_alter(self, image: MetadataImage, name: str) -> TopicImage:
        if not name:
            raise InvalidRequestError("Default topic resources are not allowed.")
        validate_topic_name(name)
        t = image.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        return t

    def _refuse_broker_resource(self, name: str) -> None:
        """Dynamic broker configs are not supported yet: always raises INVALID_REQUEST."""
        brokers = set(self.brokers())
        if name and not (name.lstrip("-").isdigit() and int(name) in brokers):
            expected = ", ".join(str(b) for b in sorted(brokers))
            raise InvalidRequestError(f"Unexpected broker id, expected {expected} or empty string, but received {name}")
        raise InvalidRequestError(
            "Dynamic broker configs are not supported by Zurau yet; set broker configs in server.properties "
            "and restart the broker."
        )

    def _set_topic_configs(self, pending: _Pending, t: TopicImage, new: dict[str, Any], validate_only: bool) -> None:
        check_topic_configs(self.config, new)
        if validate_only:
            return
        old = dict(t.configs)
        wanted = {k: str(v) for k, v in new.items() if v is not None}
        records: list[MetadataRecord] = [
            ConfigRecord(TOPIC_RESOURCE, t.name, k, None) for k in sorted(old) if k not in wanted
        ]
        records += [ConfigRecord(TOPIC_RESOURCE, t.name, k, v) for k, v in sorted(wanted.items()) if old.get(k) != v]
        pending.add(records)

    def alter_configs(
        self, image: MetadataImage, resources: list[dict[str, Any]], validate_only: bool
    ) -> ControllerResult[list[dict[str, Any]]]:
        """AlterConfigs (legacy, whole-set replacement) for TOPIC and BROKER resources."""

        def alter(pending: _Pending, r: dict[str, Any]) -> None:
            rtype, name = r["resource_type"], r["resource_name"]
            self.check_resource_type(rtype)
            if rtype == RESOURCE_BROKER_LOGGER:
                raise InvalidRequestError(
                    "AlterConfigs does not support the resource type BROKER_LOGGER; use IncrementalAlterConfigs."
                )
            if rtype == RESOURCE_BROKER:
                self._refuse_broker_resource(name)
            t = self._topic_for_alter(pending.image, name)
            self._set_topic_configs(pending, t, {c["name"]: c["value"] for c in r["configs"]}, validate_only)

        return self._per_resource(image, resources, alter)

    def incremental_alter_configs(
        self, image: MetadataImage, resources: list[dict[str, Any]], validate_only: bool
    ) -> ControllerResult[list[dict[str, Any]]]:
        """IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) for TOPIC and BROKER resources."""

        def alter(pending: _Pending, r: dict[str, Any]) -> None:
            rtype, name, configs = r["resource_type"], r["resource_name"], r["configs"]
            self.check_resource_type(rtype)
            preprocess_incremental(configs)
            if rtype == RESOURCE_BROKER_LOGGER:
                raise InvalidRequestError("BROKER_LOGGER resources are altered by the broker that owns them.")
            if rtype == RESOURCE_BROKER:
                self._refuse_broker_resource(name)
            t = self._topic_for_alter(pending.image, name)
            self._set_topic_configs(pending, t, self._incremental(dict(t.configs), configs), validate_only)

        return self._per_resource(image, resources, alter)

    def _incremental(self, current: dict[str, str], configs: list[dict[str, Any]]) -> dict[str, str]:
        new = dict(current)
        defaults = self.config.topic_defaults()
        for c in configs:
            name, op, value = c["name"], c["config_operation"], c["value"]
            if op == SET:
                new[name] = value
            elif op == DELETE:
                new.pop(name, None)
            else:
                d = TOPIC_CONFIGS.get(name)
                if d is None:
                    raise InvalidConfigError(f"Unknown topic config name: {name}")
                if d.type is not ConfigType.LIST:
                    raise InvalidConfigError(f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
                items = _list_items(new[name] if name in new else format_value(d, defaults.get(name, d.default)))
                if op == APPEND:
                    items += [v for v in _list_items(value) if v not in items]
                else:
                    drop = set(_list_items(value))
                    items = [v for v in items if v not in drop]
                new[name] = ",".join(items)
        return new

    @staticmethod
    def _per_resource(
        image: MetadataImage, resources: list[dict[str, Any]], alter: Callable[[_Pending, dict[str, Any]], None]
    ) -> ControllerResult[list[dict[str, Any]]]:
        pending = _Pending(image)

        def decide(r: dict[str, Any]) -> dict[str, Any]:
            try:
                alter(pending, r)
                return config_result(r)
            except Exception as e:
                return config_result(r, *error_of(e))

        results = per_unique_resource(resources, decide)
        return ControllerResult(pending.records, [r for r in results if r is not None])

    # ------------------------------------------------------------------ producer ids
    def allocate_producer_ids(
        self, image: MetadataImage, broker_id: int, broker_epoch: int
    ) -> ControllerResult[tuple[int, int]]:
        """Hand ``broker_id`` the next block: (first id, block size); ids never repeat."""
        first = image.next_producer_id
        nxt = first + PRODUCER_ID_BLOCK_SIZE
        if nxt > 2**63 - 1:
            raise UnknownServerError("producer ids are exhausted")
        return ControllerResult([ProducerIdsRecord(broker_id, broker_epoch, nxt)], (first, PRODUCER_ID_BLOCK_SIZE))


    # ------------------------------------------------------------------ ISR and leadership
    def alter_partition(self, image: MetadataImage, request: dict[str, Any]) -> ControllerResult[dict[str, Any]]:
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
        topics_out: list[dict[str, Any]] = []
        for t in request.get("topics") or ():
            topic = image.by_id(t["topic_id"])
            parts_out: list[dict[str, Any]] = []
            for pd in t.get("partitions") or ():
                index = pd["partition_index"]
                try:
                    if topic is None:
                        raise UnknownTopicIdError(f"unknown topic id {t['topic_id']}")
                    current = topic.partitions.get(index)
                    if current is None:
                        raise UnknownTopicOrPartitionError(f"{topic.name} has no partition {index}")
                    new_isr = self._check_alter_partition(image, broker_id, current, pd)
                    after = current
                    if new_isr != current.isr:
                        change = self._completed_reassignment(image, topic, index, current, new_isr)
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

    @staticmethod
    def _check_alter_partition(
        image: MetadataImage, broker_id: int, current: PartitionRegistration, pd: dict[str, Any]
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
            raise InvalidUpdateVersionError(
                f"partition epoch {partition_epoch} is older than {current.partition_epoch}"
            )
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

    def _unclean_allowed(self, t: TopicImage) -> bool:
        return bool(resolve_topic_config(self.config, t.configs)["unclean_leader_election_enable"])

    def _leave_partitions(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Records that take ``broker_id`` (no longer live) out of every ISR and move each
        leadership it held to the first live ISR member in replica order (leader epoch + 1); with
        no such member the partition has no leader and keeps its last ISR member, unless unclean
        election allows a live replica outside the ISR."""
        brokers = image.brokers

        def live(b: int) -> bool:
            reg = brokers.get(b)
            return b != broker_id and reg is not None and reg.live

        records: list[MetadataRecord] = []
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if broker_id not in p.isr and p.leader != broker_id:
                    continue
                isr = tuple(r for r in p.isr if r != broker_id)
                leader = NO_LEADER_CHANGE
                if p.leader == broker_id:
                    candidates = [r for r in p.replicas if r in isr and live(r)]
                    if candidates:
                        leader = candidates[0]
                    else:
                        outside = [r for r in p.replicas if live(r)]
                        if outside and self._unclean_allowed(t):
                            leader, isr = outside[0], (outside[0],)
                            log.warning("%s-%d: unclean election of broker %d", t.name, index, leader)
                        else:
                            leader = NO_LEADER
                if not isr:
                    isr = p.isr  # the last ISR member stays, to be elected when it comes back
                if leader == NO_LEADER_CHANGE and isr == p.isr:
                    continue
                records.append(
                    PartitionChangeRecord(index, t.topic_id, isr=None if isr == p.isr else isr, leader=leader)
                )
        return records

    def _elect_leaderless(self, image: MetadataImage, broker_id: int) -> list[MetadataRecord]:
        """Records electing ``broker_id`` (now live) leader of each partition without a leader
        whose ISR holds it, or, with unclean election, of which it is a replica."""
        records: list[MetadataRecord] = []
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if p.leader != NO_LEADER or broker_id not in p.replicas:
                    continue
                if broker_id in p.isr:
                    records.append(PartitionChangeRecord(index, t.topic_id, leader=broker_id))
                elif self._unclean_allowed(t):
                    records.append(PartitionChangeRecord(index, t.topic_id, isr=(broker_id,), leader=broker_id))
        return records

    def _live(self, image: MetadataImage, broker_id: int) -> bool:
        """May ``broker_id`` lead (registered, unfenced, not in controlled shutdown)? Without
        registrations (a single node) the brokers of ``brokers()`` are live."""
        if image.brokers:
            reg = image.brokers.get(broker_id)
            return reg is not None and reg.live
        return broker_id in self.brokers()

    def _may_shut_down(self, image: MetadataImage, broker_id: int, shutdown_offset: int) -> bool:
        """A broker in controlled shutdown may stop once it leads no partition and every other
        live broker has applied the metadata up to ``shutdown_offset`` (Kafka's lowest active
        offset rule: the new leaders know they lead before the old one goes)."""
        for t in image.all():
            for p in t.partitions.values():
                if p.leader == broker_id:
                    return False
        for b in image.live_brokers():
            if b.id != broker_id and self._reported_offsets.get(b.id, -1) < shutdown_offset:
                return False
        return True

    # ------------------------------------------------------------------ ElectLeaders
    def elect_leaders(
        self, image: MetadataImage, election_type: int, topic_partitions: list[dict[str, Any]] | None
    ) -> ControllerResult[list[dict[str, Any]]]:
        """ElectLeaders (Kafka's ``ReplicationControlManager.electLeaders``): per partition,

        * PREFERRED (0): the first replica (the preferred leader) becomes leader when it is live
          and in the ISR; ELECTION_NOT_NEEDED if it leads already, PREFERRED_LEADER_NOT_AVAILABLE
          if it cannot (a leaderless partition still gets the first live ISR member, as Kafka's
          election does);
        * UNCLEAN (1): only for a partition without a leader (else ELECTION_NOT_NEEDED): the first
          live ISR member, else the first live replica, which becomes the whole ISR (committed
          records it lacks are lost); ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live;
        * an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.

        ``topic_partitions`` None means every partition of every topic; the answer then leaves out
        the partitions whose election was not needed. Response: ``replica_election_results``.
        """
        pending = _Pending(image)
        results: list[dict[str, Any]] = []
        if topic_partitions is None:
            for t in image.all():
                parts = []
                for index in sorted(t.partitions):
                    code, message = self._elect_one(pending, t.name, index, election_type)
                    if code != ElectionNotNeededError.code:
                        parts.append(_election_result(index, code, message))
                results.append({"topic": t.name, "partition_result": parts})
        else:
            for tp in topic_partitions:
                parts = [
                    _election_result(index, *self._elect_one(pending, tp["topic"], index, election_type))
                    for index in tp["partitions"]
                ]
                results.append({"topic": tp["topic"], "partition_result": parts})
        return ControllerResult(pending.records, results)

    def _elect_one(self, pending: _Pending, name: str, index: int, election_type: int) -> tuple[int, str | None]:
        if election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
            return InvalidRequestError.code, f"Unknown election type {election_type}."
        t = pending.image.get(name)
        if t is None:
            return UnknownTopicOrPartitionError.code, f"No such topic as {name}"
        p = t.partitions.get(index)
        if p is None:
            return UnknownTopicOrPartitionError.code, f"No such partition as {name}-{index}"
        image = pending.image

        def valid(b: int) -> bool:
            return b in p.isr and self._live(image, b)

        if election_type == ELECTION_PREFERRED:
            if p.replicas and p.leader == p.replicas[0]:
                return ElectionNotNeededError.code, "Leader election not needed for topic partition."
            leader = _preferred_choice(p, valid)
            if leader is None or leader == p.leader:
                return PreferredLeaderNotAvailableError.code, "The preferred leader was not available."
            pending.add([PartitionChangeRecord(index, t.topic_id, leader=leader)])
            log.info("%s-%d: preferred leader election: %d -> %d", name, index, p.leader, leader)
            return 0, None
        if p.leader != NO_LEADER:
            return ElectionNotNeededError.code, "Leader election not needed for topic partition."
        clean = [r for r in p.replicas if valid(r)]
        if clean:
            pending.add([PartitionChangeRecord(index, t.topic_id, leader=clean[0])])
            return 0, None
        live = [r for r in p.replicas if self._live(image, r)]
        if not live:
            return EligibleLeadersNotAvailableError.code, "Eligible topic partition leaders are not available."
        pending.add([PartitionChangeRecord(index, t.topic_id, isr=(live[0],), leader=live[0])])
        log.warning("%s-%d: unclean election of broker %d (requested)", name, index, live[0])
        return 0, None

    def balance_leaders(self, image: MetadataImage) -> ControllerResult[None]:
        """``auto.leader.rebalance.enable``: move leadership back to preferred replicas.

        For each broker, the partitions whose preferred replica (first in the replica list) it
        is: when more than ``leader.imbalance.per.broker.percentage`` of them are led by another
        broker, each of those whose preferred replica is live and in the ISR (and that is not
        being reassigned) gets it as leader again (leader epoch + 1), as Kafka's controller does
        every ``leader.imbalance.check.interval.seconds``."""
        if not self.config.get("auto.leader.rebalance.enable"):
            return ControllerResult([], None)
        percentage = int(self.config.get("leader.imbalance.per.broker.percentage"))
        preferred: dict[int, list[tuple[TopicImage, int, PartitionRegistration]]] = {}
        for t in image.all():
            for index in sorted(t.partitions):
                p = t.partitions[index]
                if p.replicas:
                    preferred.setdefault(p.replicas[0], []).append((t, index, p))
        records: list[MetadataRecord] = []
        for broker in sorted(preferred):
            owned = preferred[broker]
            elsewhere = [(t, i, p) for t, i, p in owned if p.leader != broker]
            if not elsewhere or len(elsewhere) * 100 <= percentage * len(owned):
                continue
            if not self._live(image, broker):
                continue
            for t, i, p in elsewhere:
                if broker in p.isr and not p.reassigning:
                    records.append(PartitionChangeRecord(i, t.topic_id, leader=broker))
                    log.info("%s-%d: leader %d -> preferred replica %d (auto rebalance)", t.name, i, p.leader, broker)
        return ControllerResult(records, None)

    # ------------------------------------------------------------------ reassignments
    def alter_partition_reassignments(
        self, image: MetadataImage, topics: list[dict[str, Any]], allow_replication_factor_change: bool = True
    ) -> ControllerResult[list[dict[str, Any]]]:
        """AlterPartitionReassignments (KIP-455), per partition as Kafka's controller decides:

        * unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
        * null ``replicas`` cancels the ongoing reassignment (NO_REASSIGNMENT_IN_PROGRESS if there
          is none): the replicas being added go, the original replicas stay, and a leader that
          was one of the added replicas hands over to an original ISR member (leader epoch + 1);
          if no original replica is in the ISR the revert needs an unclean election
          (INVALID_REPLICA_ASSIGNMENT unless ``unclean.leader.election.enable``);
        * a target list that is empty, names a broker twice or an unregistered broker:
          INVALID_REPLICA_ASSIGNMENT; a different length when ``allow_replication_factor_change``
          is false (v1, KIP-860): INVALID_REPLICATION_FACTOR;
        * otherwise the partition's replicas become the target followed by the replicas to
          remove, ``adding_replicas`` the target replicas that were not replicas originally and
          ``removing_replicas`` the current ones outside the target. The added replicas become
          followers; when the last of them joins the ISR (AlterPartition from the leader; at once
          if none is added) the reassignment completes in the same record: replicas = target,
          the removed replicas leave the ISR, and the leader changes (to the first live target
          replica in the ISR) if it was removed, else its epoch goes up by one so that removed
          replicas are fenced. A new target replaces an ongoing reassignment.

        Response: one ``responses`` entry per topic.
        """
        pending = _Pending(image)
        out: list[dict[str, Any]] = []
        for t in topics:
            parts: list[dict[str, Any]] = []
            for pr in t["partitions"]:
                index = pr["partition_index"]
                try:
                    self._reassign(pending, t["name"], index, pr.get("replicas"), allow_replication_factor_change)
                    parts.append({"partition_index": index, "error_code": 0, "error_message": None})
                except Exception as e:
                    code, message = error_of(e)
                    parts.append({"partition_index": index, "error_code": code, "error_message": message})
            out.append({"name": t["name"], "partitions": parts})
        return ControllerResult(pending.records, out)

    def _reassign(
        self, pending: _Pending, name: str, index: int, target: list[int] | None, allow_rf_change: bool
    ) -> None:
        image = pending.image
        t = image.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"Unable to find topic {name}.")
        p = t.partitions.get(index)
        if p is None:
            raise UnknownTopicOrPartitionError(f"Unable to find partition {name}:{index}.")
        if target is None:
            pending.add([self._cancel_reassignment(image, t, index, p)])
            return
        self._check_replica_list(image, target, None)
        if not allow_rf_change and len(target) != len(p.original_replicas):
            raise InvalidReplicationFactorError(
                f"The replication factor is changed from {len(p.original_replicas)} to {len(target)}"
            )
        wanted = tuple(target)
        if wanted == p.replicas and not p.reassigning:
            return  # nothing to move
        removing = tuple(r for r in p.replicas if r not in wanted)
        adding = tuple(r for r in wanted if r not in p.original_replicas)
        ongoing = dataclasses.replace(p, replicas=wanted + removing, removing_replicas=removing, adding_replicas=adding)
        change = self._completed_reassignment(image, t, index, ongoing, p.isr)
        if change is None:
            change = PartitionChangeRecord(
                index, t.topic_id, replicas=ongoing.replicas, removing_replicas=removing, adding_replicas=adding
            )
            log.info("%s-%d: reassigning %s -> %s", name, index, list(p.replicas), list(wanted))
        else:
            # The partition as it is now, not the intermediate state: replicas and lists set.
            change = dataclasses.replace(change, replicas=wanted, removing_replicas=(), adding_replicas=())
            log.info("%s-%d: reassigned %s -> %s at once", name, index, list(p.replicas), list(wanted))
        pending.add([change])

    def _completed_reassignment(
        self, image: MetadataImage, t: TopicImage, index: int, p: PartitionRegistration, isr: tuple[int, ...]
    ) -> PartitionChangeRecord | None:
        """The record completing ``p``'s reassignment with ISR ``isr``, or None when it cannot
        complete yet (none in progress, an added replica outside ``isr``, or no ISR member left
        once the removed replicas go)."""
        if not p.reassigning or not all(r in isr for r in p.adding_replicas):
            return None
        new_isr = tuple(r for r in isr if r not in p.removing_replicas)
        if not new_isr:
            return None
        replicas = p.target_replicas
        leader = p.leader
        if leader not in new_isr or not self._live(image, leader):
            candidates = [r for r in replicas if r in new_isr and self._live(image, r)]
            leader = candidates[0] if candidates else NO_LEADER
        elif not p.removing_replicas:
            leader = NO_LEADER_CHANGE  # only added replicas: nobody to fence
        log.info("%s-%d: reassignment complete: replicas %s, ISR %s", t.name, index, list(replicas), list(new_isr))
        return PartitionChangeRecord(
            index, t.topic_id, isr=new_isr, leader=leader, replicas=replicas, removing_replicas=(), adding_replicas=()
        )

    def _cancel_reassignment(
        self, image: MetadataImage, t: TopicImage, index: int, p: PartitionRegistration
    ) -> PartitionChangeRecord:
        if not p.reassigning:
            raise NoReassignmentInProgressError("No partition reassignment is in progress.")
        replicas = p.original_replicas
        isr = tuple(r for r in p.isr if r not in p.adding_replicas)
        leader = p.leader
        if not isr:
            if not self._unclean_allowed(t):
                raise InvalidReplicaAssignmentError(
                    f"Unable to revert partition assignment for {t.name}:{index} because it would require an "
                    "unclean leader election."
                )
            live = [r for r in replicas if self._live(image, r)]
            if not live:
                raise InvalidReplicaAssignmentError(
                    f"Unable to revert partition assignment for {t.name}:{index}: no original replica is live."
                )
            isr, leader = (live[0],), live[0]
        elif leader not in isr or not self._live(image, leader):
            candidates = [r for r in replicas if r in isr and self._live(image, r)]
            leader = candidates[0] if candidates else NO_LEADER
        elif not p.adding_replicas:
            leader = NO_LEADER_CHANGE
        log.info("%s-%d: reassignment cancelled: replicas back to %s", t.name, index, list(replicas))
        return PartitionChangeRecord(
            index,
            t.topic_id,
            isr=None if isr == p.isr else isr,
            leader=leader,
            replicas=replicas,
            removing_replicas=(),
            adding_replicas=(),
        )

    @staticmethod
    def list_partition_reassignments(
        image: MetadataImage, topics: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        """ListPartitionReassignments: the partitions being reassigned, with their replicas (the
        target ones, then those being removed) and the adding and removing lists; of every topic
        when ``topics`` is None, else of the named partitions (others are left out silently)."""
        wanted: list[tuple[TopicImage, list[int]]] = []
        if topics is None:
            wanted = [(t, sorted(t.partitions)) for t in image.all()]
        else:
            for entry in topics:
                t = image.get(entry["name"])
                if t is not None:
                    wanted.append((t, list(entry["partition_indexes"])))
        out: list[dict[str, Any]] = []
        for t, indexes in wanted:
            parts = []
            for i in indexes:
                p = t.partitions.get(i)
                if p is not None and p.reassigning:
                    parts.append(
                        {
                            "partition_index": i,
                            "replicas": list(p.replicas),
                            "adding_replicas": list(p.adding_replicas),
                            "removing_replicas": list(p.removing_replicas),
                        }
                    )
            if parts:
                out.append({"name": t.name, "partitions": parts})
        return out

    # ------------------------------------------------------------------ brokers
    def register_broker(
        self,
        image: MetadataImage,
        request: dict[str, Any],
        next_offset: int,
        cluster_id_ok: bool = True,
        is_alive: Callable[[int], bool] = lambda _: False,
    ) -> ControllerResult[dict[str, Any]]:
        """BrokerRegistration, checked in the order Kafka's ``ClusterControlManager`` does.

        ``next_offset`` is the metadata offset the first record of this result will get: it
        becomes the broker epoch, so the epoch is the registration's own offset. ``cluster_id_ok``
        says whether the request's cluster id is this cluster's; ``is_alive(id)`` whether the
        broker id has a live session on the active controller.

        * wrong cluster id: INCONSISTENT_CLUSTER_ID;
        * an unfenced registration of the id from another incarnation whose session is alive:
          DUPLICATE_BROKER_REGISTRATION (a fenced one, or an expired session, is replaced);
        * the same incarnation again (a retried request): its current epoch, no records;
        * a ZooKeeper-migration broker: BROKER_ID_NOT_REGISTERED;
        * a listed feature whose finalized level is outside the broker's range: UNSUPPORTED_VERSION;
        * otherwise one RegisterBrokerRecord of a fenced broker with epoch ``next_offset``.

        Response: the BrokerRegistration response body (``broker_epoch`` -1 on error).
        """
        broker_id: int = request["broker_id"]
        incarnation: uuid.UUID = request["incarnation_id"]
        try:
            if not cluster_id_ok:
                raise InconsistentClusterIdError(
                    f"Expected cluster ID {image.cluster_id}, but got cluster ID {request.get('cluster_id')}"
                )
            existing = image.brokers.get(broker_id)
            if existing is not None:
                if existing.incarnation_id == incarnation:
                    return ControllerResult([], _registration_response(0, existing.epoch))
                if not existing.fenced and is_alive(broker_id):
                    raise DuplicateBrokerRegistrationError("Another broker is registered with that broker id.")
            if request.get("is_migrating_zk_broker"):
                raise BrokerIdNotRegisteredError("Controller does not support registering ZK brokers.")
            features = tuple(
                BrokerFeature(f["name"], f["min_supported_version"], f["max_supported_version"])
                for f in request.get("features") or ()
            )
            for f in features:
                level = image.features.get(f.name)
                if level is not None and not f.min_supported_version <= level <= f.max_supported_version:
                    raise UnsupportedVersionError(
                        f"Unable to register because the broker does not support version {level} of {f.name}. "
                        f"It wants a version between {f.min_supported_version} and {f.max_supported_version}, "
                        "inclusive."
                    )
        except KafkaError as e:
            log.info("refused the registration of broker %d: %s", broker_id, e)
            return ControllerResult([], _registration_response(e.code, -1))
        record = RegisterBrokerRecord(
            broker_id,
            incarnation,
            next_offset,
            tuple(
                BrokerEndpoint(lst["name"], lst["host"], lst["port"], lst["security_protocol"])
                for lst in request.get("listeners") or ()
            ),
            features,
            request.get("rack"),
            fenced=True,
            in_controlled_shutdown=False,
            log_dirs=tuple(request.get("log_dirs") or ()),
        )
        log.info("registering broker %d (incarnation %s) with broker epoch %d", broker_id, incarnation, next_offset)
        records: list[MetadataRecord] = [record]
        if existing is not None:
            # A new incarnation starts fenced: the old one's ISR places and leaderships go.
            records += self._leave_partitions(image.apply(records), broker_id)
        return ControllerResult(records, _registration_response(0, next_offset))

    def broker_heartbeat(
        self, image: MetadataImage, request: dict[str, Any], next_offset: int
    ) -> ControllerResult[dict[str, Any]]:
        """BrokerHeartbeat: moves the broker's registration along Kafka's broker states.

        The registration named by (``broker_id``, ``broker_epoch``) must be the current one, else
        STALE_BROKER_EPOCH (also for an id that never registered, as Kafka answers). The broker is
        *caught up* when its ``current_metadata_offset`` has reached its registration's offset
        (the epoch). Its state follows from the registration: fenced, unfenced, in controlled
        shutdown, or told to shut down (fenced and in controlled shutdown). Then:

        * fenced: ``want_shut_down`` -> shut down now; caught up and not ``want_fence`` ->
          unfenced; otherwise it stays fenced;
        * unfenced: ``want_fence`` -> fenced (shut down now if it also wants to shut down);
          ``want_shut_down`` -> controlled shutdown: the same batch of records moves every
          leadership it held to another ISR member and takes it out of every ISR;
        * in controlled shutdown: shut down now once it leads no partition and every other
          live broker has reported (in its heartbeats) a metadata offset at or past the records
          that moved its leaderships away, as Kafka's controller grants it; until then it stays
          in controlled shutdown (``should_shut_down`` false). With no other live broker the
          grant comes at once, in the batch that enters controlled shutdown. ``want_fence``
          shuts it down now;
        * shut down now: stays so.

        A state change is one BrokerRegistrationChangeRecord; "shut down now" marks the broker
        fenced and in controlled shutdown, and answers ``should_shut_down``. A broker that stops
        being live also leaves its partitions (see :meth:`_leave_partitions`); one that becomes
        unfenced is elected leader of the leaderless partitions whose ISR holds it. ``next_offset`` is the
        offset of this result's first record (kept for when a controlled shutdown has to wait for
        leadership to move).
        """
        broker_id: int = request["broker_id"]
        epoch: int = request["broker_epoch"]
        reg = image.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], _heartbeat_error(StaleBrokerEpochError.code))
        if reg.epoch != epoch:
            log.info("heartbeat of broker %d: expected broker epoch %d, got %d", broker_id, reg.epoch, epoch)
            return ControllerResult([], _heartbeat_error(StaleBrokerEpochError.code))
        reported = request.get("current_metadata_offset", -1)
        self._reported_offsets[broker_id] = reported
        caught_up = reported >= reg.epoch
        want_fence = bool(request.get("want_fence"))
        want_shut_down = bool(request.get("want_shut_down"))
        current = _broker_state(reg)
        if current == _FENCED:
            if want_shut_down:
                nxt = _SHUTDOWN_NOW
            elif not want_fence and caught_up:
                nxt = _UNFENCED
            else:
                nxt = _FENCED
        elif current == _UNFENCED:
            if want_fence:
                nxt = _SHUTDOWN_NOW if want_shut_down else _FENCED
            elif want_shut_down:
                nxt = _CONTROLLED_SHUTDOWN
            else:
                nxt = _UNFENCED
        elif current == _CONTROLLED_SHUTDOWN:
            key = (broker_id, epoch)
            if key not in self._shutdown_offsets:  # entered under another active controller
                self._shutdown_offsets[key] = next_offset - 1
            if want_fence or self._may_shut_down(image, broker_id, self._shutdown_offsets[key]):
                nxt = _SHUTDOWN_NOW
            else:
                nxt = _CONTROLLED_SHUTDOWN
        else:
            nxt = _SHUTDOWN_NOW
        records: list[MetadataRecord] = []
        if nxt == _CONTROLLED_SHUTDOWN and current == _UNFENCED:
            records.append(BrokerRegistrationChangeRecord(broker_id, epoch, FENCING_NONE, CONTROLLED_SHUTDOWN_ENTER))
            records += self._leave_partitions(image.apply(records), broker_id)
            shutdown_offset = next_offset + len(records) - 1
            if self._may_shut_down(image.apply(records), broker_id, shutdown_offset):
                # No other live broker has to learn of the moves first: shut down now.
                records[0] = BrokerRegistrationChangeRecord(broker_id, epoch, FENCING_FENCE, CONTROLLED_SHUTDOWN_ENTER)
                nxt = _SHUTDOWN_NOW
            else:
                self._shutdown_offsets[(broker_id, epoch)] = shutdown_offset
            log.info("broker %d: %s -> %s", broker_id, current, nxt)
        elif nxt != current:
            if nxt == _UNFENCED:
                change = BrokerRegistrationChangeRecord(broker_id, epoch, FENCING_UNFENCE)
            elif nxt == _FENCED:
                change = BrokerRegistrationChangeRecord(broker_id, epoch, FENCING_FENCE)
            else:
                change = BrokerRegistrationChangeRecord(
                    broker_id,
                    epoch,
                    FENCING_NONE if reg.fenced else FENCING_FENCE,
                    CONTROLLED_SHUTDOWN_NONE if reg.in_controlled_shutdown else CONTROLLED_SHUTDOWN_ENTER,
                )
            log.info("broker %d: %s -> %s", broker_id, current, nxt)
            records.append(change)
            after = image.apply(records)
            if nxt == _UNFENCED:
                records += self._elect_leaderless(after, broker_id)
            elif current in (_UNFENCED, _CONTROLLED_SHUTDOWN):
                records += self._leave_partitions(after, broker_id)
        return ControllerResult(
            records,
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "is_caught_up": caught_up,
                "is_fenced": nxt in (_FENCED, _SHUTDOWN_NOW),
                "should_shut_down": nxt == _SHUTDOWN_NOW,
            },
        )

    def fence_brokers(self, image: MetadataImage, broker_ids: Iterable[int]) -> ControllerResult[None]:
        """Fence brokers whose session expired: a FenceBrokerRecord for each of ``broker_ids``
        that is registered and not fenced yet (in id order), each followed by the records that
        take it out of its partitions' ISRs and leaderships; the others are left alone."""
        pending = _Pending(image)
        for b in sorted(set(broker_ids)):
            reg = pending.image.brokers.get(b)
            if reg is not None and not reg.fenced:
                pending.add([FenceBrokerRecord(b, reg.epoch)])
                pending.add(self._leave_partitions(pending.image, b))
        return ControllerResult(pending.records, None)

    def unregister_broker(self, image: MetadataImage, broker_id: int) -> ControllerResult[dict[str, Any]]:
        """UnregisterBroker: an UnregisterBrokerRecord for the current registration of the id;
        BROKER_ID_NOT_REGISTERED if there is none. Response: the UnregisterBroker response body."""
        reg = image.brokers.get(broker_id)
        if reg is None:
            return ControllerResult(
                [],
                {
                    "throttle_time_ms": 0,
                    "error_code": BrokerIdNotRegisteredError.code,
                    "error_message": f"Broker ID {broker_id} is not currently registered",
                },
            )
        records: list[MetadataRecord] = [UnregisterBrokerRecord(broker_id, reg.epoch)]
        records += self._leave_partitions(image.apply(records), broker_id)
        return ControllerResult(records, {"throttle_time_ms": 0, "error_code": 0, "error_message": None})


# ---------------------------------------------------------------------- broker states
# What a heartbeat moves a registration between (Kafka's BrokerControlState).
_FENCED, _UNFENCED, _CONTROLLED_SHUTDOWN, _SHUTDOWN_NOW = "fenced", "unfenced", "controlled shutdown", "shut down now"


def _broker_state(reg: BrokerRegistration) -> str:
    if reg.in_controlled_shutdown:
        return _SHUTDOWN_NOW if reg.fenced else _CONTROLLED_SHUTDOWN
    return _FENCED if reg.fenced else _UNFENCED


def _registration_response(code: int, broker_epoch: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "broker_epoch": broker_epoch}


def _heartbeat_error(code: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "is_caught_up": False, "is_fenced": True, "should_shut_down": False}


# ---------------------------------------------------------------------- elections
# Kafka's ElectionType ids.
ELECTION_PREFERRED, ELECTION_UNCLEAN = 0, 1


def _preferred_choice(p: PartitionRegistration, valid: Callable[[int], bool]) -> int | None:
    """Kafka's preferred election: the preferred replica if it may lead, else the current
    leader if it still may, else the first other replica that may; None if none may."""
    if not p.replicas:
        return None
    if valid(p.replicas[0]):
        return p.replicas[0]
    if p.leader != NO_LEADER and valid(p.leader):
        return p.leader
    return next((r for r in p.replicas[1:] if valid(r)), None)


def _election_result(index: int, code: int, message: str | None) -> dict[str, Any]:
    return {"partition_id": index, "error_code": code, "error_message": message}


# ---------------------------------------------------------------------- response helpers
def _alter_partition_answer(index: int, code: int, p: PartitionRegistration | None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "leader_id": p.leader if p is not None else -1,
        "leader_epoch": p.leader_epoch if p is not None else -1,
        "isr": list(p.isr) if p is not None else [],
        "leader_recovery_state": 0,
        "partition_epoch": p.partition_epoch if p is not None else -1,
    }


def create_topic_error(name: str, code: int, message: str | None) -> dict[str, Any]:
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


def _delete_result(name: str | None, topic_id: uuid.UUID, code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}


def config_result(resource: dict[str, Any], code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource["resource_type"],
        "resource_name": resource["resource_name"],
    }


def per_unique_resource(
    resources: list[dict[str, Any]], decide: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> list[dict[str, Any] | None]:
    """Results of a configs request in request order, as Kafka gives them: a resource named more
    than once gets one INVALID_REQUEST "Duplicate resource." result and nothing is done for it;
    every other resource gets ``decide(resource)`` (None: a slot the caller fills later)."""
    dups = duplicated([(r["resource_type"], r["resource_name"]) for r in resources])
    out: list[dict[str, Any] | None] = []
    reported: set[tuple[int, str]] = set()
    for r in resources:
        key = (r["resource_type"], r["resource_name"])
        if key in dups:
            if key not in reported:
                reported.add(key)
                out.append(config_result(r, InvalidRequestError.code, "Duplicate resource."))
            continue
        out.append(decide(r))
    return out


def preprocess_incremental(configs: list[dict[str, Any]]) -> None:
    """IncrementalAlterConfigs checks shared by every resource type (Kafka's preprocess)."""
    dups = duplicated([c["name"] for c in configs])
    if dups:
        raise InvalidRequestError(f"Error due to duplicate config keys : {','.join(sorted(dups))}")
    nulls = [c["name"] for c in configs if c["config_operation"] != DELETE and c["value"] is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    for c in configs:
        if c["config_operation"] not in OP_NAMES:
            raise InvalidRequestError(f"Unknown operation type {c['config_operation']} for config {c['name']}")


def _list_items(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]
