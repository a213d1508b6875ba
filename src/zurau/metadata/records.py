"""Metadata records: the changes the controller makes, in Kafka's ``__cluster_metadata`` format.

Every change to the cluster's metadata is one of these records; the metadata image is what
replaying them in order gives. The names, record type ids (Kafka calls them api keys) and field
layouts are Kafka's, so the log this produces has Kafka's byte format and the KRaft quorum can
carry it unchanged:

* record value = ``frame version (uvarint, 1) | record type (uvarint) | record version (uvarint) |
  body``; the body uses the flexible encoding (compact strings/arrays, a tagged-field section),
  as every metadata record is flexible from version 0. Record keys are null.
* ``TopicRecord`` (2), ``PartitionRecord`` (3), ``ConfigRecord`` (4), ``RemoveTopicRecord`` (9),
  ``FeatureLevelRecord`` (12), ``ProducerIdsRecord`` (15) are the ones a single node writes today.
* Broker registrations (KRaft): ``RegisterBrokerRecord`` (0, written at version 3),
  ``UnregisterBrokerRecord`` (1), ``FenceBrokerRecord`` (7), ``UnfenceBrokerRecord`` (8) and
  ``BrokerRegistrationChangeRecord`` (17, written at version 2). A broker's registration is
  identified by its id and its *broker epoch*; fence/unfence/change/unregister records name both.
* ``PartitionChangeRecord`` (5): a change to one partition (new ISR, new leader, new replicas);
  every such record bumps the partition epoch, and one that names a leader bumps the leader epoch.
  ``PartitionRecord`` and ``PartitionChangeRecord`` carry, from record version 2 (KIP-966, tagged
  fields), the partition's eligible leader replicas and last known ELR; they are written at
  version 2 only when they carry one of those, else at version 0 as before.
* ``ClearElrRecord`` (28): every partition of a topic (or of every topic, for an empty name) loses
  its eligible leader replicas and last known ELR (written after a ``min.insync.replicas`` change).
* ``UserScramCredentialRecord`` (11) and ``RemoveUserScramCredentialRecord`` (22): a user's SCRAM
  credential per mechanism (salt, stored key, server key, iterations; never the password).
* ``AccessControlEntryRecord`` (18) and ``RemoveAccessControlEntryRecord`` (19): an ACL binding
  (with the id the controller gave it) was added or, by that id, removed.
* ``DelegationTokenRecord`` (10) and ``RemoveDelegationTokenRecord`` (26): a delegation token
  (KIP-48) was created or renewed/expired (the whole token again, with its new expiration), or
  removed. Principals are ``Type:name`` strings (``User:alice``); the HMAC is never stored (every
  node derives it from ``delegation.token.secret.key`` and the token id).
* ``ClientQuotaRecord`` (14, Kafka's ``QuotaRecord``): one quota value of a client quota entity
  (``user`` / ``client-id`` / ``ip``, a null name being the default entity) was set, or removed.

Each record type is written at the newest version the codec knows and read at any version up
to it by :mod:`zurau.metadata.record_codec` (fields a version lacks take their defaults); a record
newer than that is refused.

Records are immutable dataclasses; :mod:`zurau.metadata.record_codec` converts them to and from
those bytes (:func:`~zurau.metadata.record_codec.encode_record` /
:func:`~zurau.metadata.record_codec.decode_record`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

# ConfigResource types (Kafka's ConfigResource.Type ids).
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
GROUP_RESOURCE = 32
CLIENT_METRICS_RESOURCE = 16


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """A topic was created: its name and id."""

    TYPE: ClassVar[int] = 2
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition of a topic exists, with its replicas, ISR, leader and epochs."""

    TYPE: ClassVar[int] = 3
    partition_id: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    # KIP-966 (record version 2, tagged): the eligible leader replicas and the last known ELR.
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


# PartitionChangeRecord.leader: no leader now / the leader did not change.
NO_LEADER, NO_LEADER_CHANGE = -1, -2


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change to one partition. ``isr`` / ``replicas`` None: unchanged; ``leader``
    :data:`NO_LEADER_CHANGE` (-2): unchanged, :data:`NO_LEADER` (-1): no leader, else the new
    leader (whose epoch is then the old one + 1, even if the id is the same).
    ``leader_recovery_state`` -1: unchanged. Replaying it always bumps the partition epoch."""

    TYPE: ClassVar[int] = 5
    partition_id: int
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: int = -1
    # KIP-966 (record version 2): None unchanged, else the new eligible leader replicas / last
    # known ELR (see :mod:`zurau.metadata.controller.partition_change`).
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A config of a resource was set (``value``) or removed (``value`` None)."""

    TYPE: ClassVar[int] = 4
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    """A topic and all of its partitions were deleted."""

    TYPE: ClassVar[int] = 9
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class FeatureLevelRecord:
    """A feature's finalized level (``metadata.version`` and friends)."""

    TYPE: ClassVar[int] = 12
    name: str
    feature_level: int


@dataclass(frozen=True, slots=True)
class ClearElrRecord:
    """Clear the ELR and last known ELR of every partition of ``topic_name`` ("" = every topic);
    each partition that had one gets a new partition epoch (as a ``PartitionChangeRecord`` would)."""

    TYPE: ClassVar[int] = 28
    topic_name: str = ""


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """A block of producer ids was handed to a broker: ids below ``next_producer_id`` are taken."""

    TYPE: ClassVar[int] = 15
    broker_id: int
    broker_epoch: int
    next_producer_id: int


class BrokerEndpoint(NamedTuple):
    """One listener of a broker: its name (``PLAINTEXT``...), advertised host and port, and the
    security protocol id (Kafka's SecurityProtocol: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL)."""

    name: str
    host: str
    port: int
    security_protocol: int = 0


class BrokerFeature(NamedTuple):
    """A feature and the range of its levels a broker supports (inclusive)."""

    name: str
    min_supported_version: int
    max_supported_version: int


# BrokerRegistrationChangeRecord.fenced values.
FENCING_UNFENCE, FENCING_NONE, FENCING_FENCE = -1, 0, 1
# BrokerRegistrationChangeRecord.in_controlled_shutdown values.
CONTROLLED_SHUTDOWN_NONE, CONTROLLED_SHUTDOWN_ENTER = 0, 1


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker (a new incarnation, or the same one again) registered with the controller.

    It replaces any earlier registration of ``broker_id``. ``broker_epoch`` is the offset the
    controller wrote this record at; later changes to the registration must name it. A broker
    starts fenced and is unfenced once it has caught up with the metadata log.
    """

    TYPE: ClassVar[int] = 0
    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    endpoints: tuple[BrokerEndpoint, ...] = ()
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    """The registration of ``broker_id`` with ``broker_epoch`` was removed."""

    TYPE: ClassVar[int] = 1
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    """The broker registration ``(broker_id, epoch)`` is fenced (the older form of
    :class:`BrokerRegistrationChangeRecord` with ``fenced=1``)."""

    TYPE: ClassVar[int] = 7
    broker_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    """The broker registration ``(broker_id, epoch)`` is unfenced (the older form of
    :class:`BrokerRegistrationChangeRecord` with ``fenced=-1``)."""

    TYPE: ClassVar[int] = 8
    broker_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    """A change to the registration ``(broker_id, broker_epoch)``.

    ``fenced``: -1 unfenced, 0 no change, 1 fenced (``FENCING_*``). ``in_controlled_shutdown``:
    0 no change, 1 the broker entered controlled shutdown. ``log_dirs``: the broker's online log
    directories, empty for no change.
    """

    TYPE: ClassVar[int] = 17
    broker_id: int
    broker_epoch: int
    fenced: int = FENCING_NONE
    in_controlled_shutdown: int = CONTROLLED_SHUTDOWN_NONE
    log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512) was set:
    the salt, the stored and server keys derived from the salted password, and the iterations."""

    TYPE: ClassVar[int] = 11
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism was deleted."""

    TYPE: ClassVar[int] = 22
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """An ACL binding was added, under a unique id (ids as in :mod:`zurau.protocol.acl`)."""

    TYPE: ClassVar[int] = 18
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    """The ACL binding with this id was removed."""

    TYPE: ClassVar[int] = 19
    id: uuid.UUID


@dataclass(frozen=True, slots=True)
class DelegationTokenRecord:
    """A delegation token, created or with a new expiration timestamp (epoch ms throughout)."""

    TYPE: ClassVar[int] = 10
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(frozen=True, slots=True)
class RemoveDelegationTokenRecord:
    """The delegation token with this id was removed (expired, or expired by request)."""

    TYPE: ClassVar[int] = 26
    token_id: str


# A client quota entity: its (entity type, entity name) pairs sorted by type; a None name is the
# type's default entity (``<default>``), e.g. (("client-id", None), ("user", "alice")).
ClientQuotaEntity = tuple[tuple[str, str | None], ...]


def quota_entity(pairs: Iterable[tuple[str, str | None]]) -> ClientQuotaEntity:
    """The canonical form of an entity's (type, name) pairs: sorted by type."""
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    """Quota ``key`` of client quota ``entity`` was set to ``value`` (``remove``: was removed)."""

    TYPE: ClassVar[int] = 14
    entity: ClientQuotaEntity
    key: str
    value: float = 0.0
    remove: bool = False


MetadataRecord = (
    TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | ConfigRecord
    | RemoveTopicRecord
    | ClearElrRecord
    | FeatureLevelRecord
    | ProducerIdsRecord
    | RegisterBrokerRecord
    | UnregisterBrokerRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | BrokerRegistrationChangeRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | ClientQuotaRecord
    | DelegationTokenRecord
    | RemoveDelegationTokenRecord
)
