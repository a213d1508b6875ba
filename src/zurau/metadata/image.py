"""The metadata image: an immutable picture of the cluster's metadata at one log offset.

Invariants:

* An image is never mutated after it is built. :meth:`MetadataImage.apply` returns a new image
  (sharing the unchanged parts); replaying the same records from the same image always gives an
  equal image. Only applying records changes what brokers see.
* Every topic has a unique name and a unique id; its partitions are numbered ``0..n-1``.
* Topic configs hold only overrides, as strings exactly as the client sent them (typed on use by
  :mod:`zurau.config`); a :class:`ConfigRecord` with a null value removes an override.
* ``group_configs`` maps a group id to its group config overrides (Kafka's GROUP config
  resource, type 32), strings as the client sent them; a group with no override left has no entry.
  A persistent (HAMT) map, so a batch costs O(groups changed). Read one group's with
  :meth:`MetadataImage.group_config`; :mod:`zurau.config.group_configs` types and resolves them.
* ``client_metrics`` maps a client metrics subscription's name to its configs (Kafka's
  CLIENT_METRICS config resource, type 16: ``metrics``, ``interval.ms``, ``match``), strings as
  the client sent them; a subscription with no config left has no entry. The mapping object is
  replaced whenever a subscription changes and shared otherwise (the broker's client metrics
  manager re-evaluates its clients when it sees a new one).
  :mod:`zurau.config.client_metrics_configs` reads them.
* ``broker_configs`` maps a BROKER config resource name to its dynamic broker config overrides:
  a broker id as a decimal string for that broker's own, :data:`DEFAULT_BROKER_RESOURCE` (``""``,
  Kafka's ``<default>``) for the cluster-wide defaults; strings as the client sent them, typed on
  use (:mod:`zurau.config.dynamic_broker_configs`). Read with :meth:`MetadataImage.broker_config`.
  The mapping object is replaced whenever a broker config changes and shared otherwise.
* A partition's eligible leader replicas (KIP-966) never overlap its ISR; a ``ClearElrRecord``
  empties the ELR and last known ELR of every partition of its topic (every topic for "") and
  bumps the partition epoch of those that had one.
* ``next_producer_id`` is the first producer id not yet handed out in a block.
* ``offset`` is the metadata-log offset of the last record applied (-1 for the empty image).
* ``brokers`` holds one :class:`BrokerRegistration` per registered broker id (KRaft). A
  ``RegisterBrokerRecord`` replaces the registration of its id; fence, unfence, change and
  unregister records apply only to the registration whose epoch they name (a record naming
  another epoch targets a registration that no longer exists and changes nothing). A single node
  that has not registered has no brokers here.
* ``scram_credentials`` maps (user, SCRAM mechanism) to the stored credential; a
  ``UserScramCredentialRecord`` sets one, a ``RemoveUserScramCredentialRecord`` removes it.
* ``acls`` maps an ACL's id to its binding; an ``AccessControlEntryRecord`` adds one, a
  ``RemoveAccessControlEntryRecord`` removes it. The mapping object is replaced whenever an ACL
  changes and shared otherwise, so its identity tells the authorizer when to rebuild its index.
* ``client_quotas`` maps a client quota entity (see :data:`~zurau.metadata.records.ClientQuotaEntity`)
  to its quota values by key; a ``ClientQuotaRecord`` sets or removes one value, and an entity
  with no values left is dropped (so an empty mapping means "no quota anywhere"). Replaced
  whenever a quota changes, shared otherwise (the quota manager rebuilds on a new identity).
* ``delegation_tokens`` maps a delegation token's id to its latest ``DelegationTokenRecord``
  (owner, requester, renewers, issue / max / expiration timestamps); a
  ``RemoveDelegationTokenRecord`` removes it. Expired tokens stay until the controller's periodic
  check removes them, so readers compare the expiration with their clock. Replaced whenever a token
  changes, shared otherwise.

Readers (handlers, the replica manager, coordinators) take the current image once per operation
and read it without locks.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from immutables import Map, MapMutation

from zurau.metadata.records import (
    CLIENT_METRICS_RESOURCE,
    CONTROLLED_SHUTDOWN_ENTER,
    CONTROLLED_SHUTDOWN_NONE,
    FENCING_FENCE,
    FENCING_NONE,
    FENCING_UNFENCE,
    GROUP_RESOURCE,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ClientQuotaEntity,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)
from zurau.protocol.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from zurau.protocol.sasl import ScramCredential, ScramMechanism

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata"})

_EMPTY: Mapping[str, str] = MappingProxyType({})
#: The BROKER config resource name of the cluster-wide dynamic defaults (Kafka's ``<default>``).
DEFAULT_BROKER_RESOURCE = ""


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """One partition as the controller registered it (Kafka's PartitionRegistration)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int  # -1: no leader (every ISR member is fenced or shut down)
    leader_epoch: int = 0
    partition_epoch: int = 0
    # An ongoing reassignment (KIP-455): ``replicas`` is then the target replicas followed by
    # ``removing_replicas``; ``adding_replicas`` are the target replicas that were not replicas
    # before. Both are empty when no reassignment is in progress.
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    # KIP-966: the eligible leader replicas (former ISR members that left it while it was below
    # min.insync.replicas and hold every committed record; never overlapping the ISR) and the last
    # known ELR (the last leader, recorded when the ISR became empty). Empty without ELR.
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replicas the partition will have once its reassignment completes."""
        if not self.removing_replicas:
            return self.replicas
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """The replicas the partition had before its reassignment began (what a cancel restores)."""
        if not self.adding_replicas:
            return self.replicas
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """This partition after ``change`` (Kafka's PartitionRegistration.merge): the partition
        epoch always goes up by one; the leader epoch goes up by one whenever the record names a
        leader (a new one, none, or the same one again)."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, leader_epoch + 1
        return PartitionRegistration(
            self.replicas if change.replicas is None else change.replicas,
            self.isr if change.isr is None else change.isr,
            leader,
            leader_epoch,
            self.partition_epoch + 1,
            self.removing_replicas if change.removing_replicas is None else change.removing_replicas,
            self.adding_replicas if change.adding_replicas is None else change.adding_replicas,
            self.elr if change.eligible_leader_replicas is None else change.eligible_leader_replicas,
            self.last_known_elr if change.last_known_elr is None else change.last_known_elr,
        )

    def without_elr(self) -> PartitionRegistration:
        """This partition after a ``ClearElrRecord`` (itself if it has no ELR nor last known
        ELR; else both emptied and the partition epoch + 1)."""
        if not self.elr and not self.last_known_elr:
            return self
        return replace(self, elr=(), last_known_elr=(), partition_epoch=self.partition_epoch + 1)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """One registered broker as the controller recorded it (Kafka's BrokerRegistration).

    ``epoch`` is the broker epoch: the metadata offset of the ``RegisterBrokerRecord`` that created
    this registration, so a broker whose metadata offset has reached it has seen its own
    registration. ``endpoints`` are in the order the broker listed its listeners.
    A broker is *live* (may lead partitions and is shown to clients) when it is neither fenced nor
    in controlled shutdown.
    """

    id: int
    incarnation_id: uuid.UUID
    epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    features: tuple[BrokerFeature, ...] = ()
    log_dirs: tuple[uuid.UUID, ...] = ()
    is_migrating_zk_broker: bool = False

    @property
    def live(self) -> bool:
        return not self.fenced and not self.in_controlled_shutdown

    def endpoint(self, listener_name: str) -> tuple[str, int] | None:
        """(host, port) of the listener named ``listener_name``; None if the broker has none."""
        for e in self.endpoints:
            if e.name == listener_name:
                return e.host, e.port
        return None

    def address_for(self, listener_name: str) -> tuple[str, int] | None:
        """The address to give a client that connected through ``listener_name``: that listener's
        endpoint, else (no such listener, or ``listener_name`` empty) the first endpoint; None
        only for a broker without endpoints."""
        found = self.endpoint(listener_name) if listener_name else None
        if found is not None:
            return found
        if self.endpoints:
            first = self.endpoints[0]
            return first.host, first.port
        return None


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]
    configs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    @property
    def replication_factor(self) -> int:
        p0 = self.partitions.get(0)
        return len(p0.target_replicas) if p0 is not None else 0  # the target during a reassignment


@dataclass(frozen=True, slots=True, weakref_slot=True)
class MetadataImage:
    cluster_id: str
    # Persistent (HAMT) maps: an image built from another shares all untouched entries, so
    # applying a batch costs O(changes x log topics), not a copy of every topic.
    topics_by_name: Mapping[str, TopicImage] = field(default_factory=Map)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=Map)
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # group id -> group config overrides (a persistent map: groups may be many).
    group_configs: Mapping[str, Mapping[str, str]] = field(default_factory=Map)
    # client metrics subscription name -> its configs (KIP-714).
    client_metrics: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    features: Mapping[str, int] = field(default_factory=dict)
    next_producer_id: int = 0
    offset: int = -1
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    # (user name, ScramMechanism) -> the user's SCRAM credential for that mechanism.
    scram_credentials: Mapping[tuple[str, ScramMechanism], ScramCredential] = field(default_factory=dict)
    # ACL id -> binding (zurau.protocol.acl).
    acls: Mapping[uuid.UUID, AclBinding] = field(default_factory=dict)
    # client quota entity -> quota key -> value.
    client_quotas: Mapping[ClientQuotaEntity, Mapping[str, float]] = field(default_factory=dict)
    # delegation token id -> the token (KIP-48).
    delegation_tokens: Mapping[str, DelegationTokenRecord] = field(default_factory=dict)
    # What changed from the image this one was built from (not part of its value).
    _parent: weakref.ReferenceType[MetadataImage] | None = field(default=None, compare=False, repr=False)
    _touched: frozenset[uuid.UUID] = field(default=frozenset(), compare=False, repr=False)

    # ------------------------------------------------------------------ queries
    def topics_changed_since(self, old: MetadataImage) -> frozenset[uuid.UUID] | None:
        """Ids of the topics created, changed or removed since ``old`` when this image was built
        from ``old`` directly; None when it was not (compare the images then)."""
        parent = self._parent() if self._parent is not None else None
        return self._touched if parent is old else None

    def get(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def names(self) -> list[str]:
        return sorted(self.topics_by_name)

    def all(self) -> list[TopicImage]:
        return [self.topics_by_name[n] for n in sorted(self.topics_by_name)]

    def __contains__(self, name: object) -> bool:
        return name in self.topics_by_name

    def group_config(self, group_id: str) -> Mapping[str, str]:
        """The group config overrides stored for ``group_id`` (only those set; empty when none),
        as strings; :func:`zurau.config.group_configs.effective_group_config` resolves a value."""
        return self.group_configs.get(group_id, _EMPTY)

    def broker_config(self, broker: int | str) -> Mapping[str, str]:
        """The dynamic broker config overrides stored for ``broker`` (a broker id, or
        :data:`DEFAULT_BROKER_RESOURCE` for the cluster-wide defaults); empty when none. Only
        overrides: :class:`zurau.config.dynamic_broker_configs.DynamicBrokerConfigView` resolves
        them over a broker's static config."""
        return self.broker_configs.get(str(broker), _EMPTY)

    def live_brokers(self) -> list[BrokerRegistration]:
        """Registered brokers that are neither fenced nor in controlled shutdown, by id."""
        return [self.brokers[b] for b in sorted(self.brokers) if self.brokers[b].live]

    def endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        """(host, port) of ``broker_id``'s listener ``listener_name``; None if the broker is not
        registered or has no such listener."""
        reg = self.brokers.get(broker_id)
        return None if reg is None else reg.endpoint(listener_name)

    # ------------------------------------------------------------------ changes
    def apply(self, records: Iterable[MetadataRecord], last_offset: int | None = None) -> MetadataImage:
        """A new image with ``records`` applied in order (the input image is unchanged).

        Raises ValueError for a record that contradicts the image (a partition of an unknown
        topic, a duplicate topic name or id): a log that says so is corrupt, not a request error.
        """
        delta = _Delta(self)
        for r in records:
            delta.replay(r)
        return delta.build(self.offset if last_offset is None else last_offset)


class MetadataDelta:
    """A working copy for one controller request: records replay into it, copying each of the
    base image's maps at most once, so a request of ``k`` topics costs O(k) map updates instead
    of ``k`` copies of every map. :meth:`image` is a view that shares the working maps: it is
    valid for reading until the next :meth:`replay` and must never be published (the channel
    applies the request's records to its own images). Each :meth:`image` costs what changed since
    the previous one, so a request that reads the image after each of its ``k`` items stays O(k)
    (the view does not record what changed: ``topics_changed_since`` answers None for it)."""

    def __init__(self, base: MetadataImage) -> None:
        self._delta = _Delta(base)
        self._offset = base.offset

    def replay(self, records: Iterable[MetadataRecord]) -> None:
        for r in records:
            self._delta.replay(r)

    def image(self) -> MetadataImage:
        return self._delta.build(self._offset, track_changes=False)


def _mutation(m: Mapping[Any, Any]) -> MapMutation[Any, Any]:
    """A mutable successor of ``m`` (a persistent map; a plain mapping is converted once)."""
    return (m if isinstance(m, Map) else Map(m)).mutate()


class _Delta:
    """Copy-on-write changes to an image, built into a new image once (cheap for big batches)."""

    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.by_name: MapMutation[str, TopicImage] | None = None
        self.by_id: MapMutation[uuid.UUID, TopicImage] | None = None
        self.touched: set[uuid.UUID] = set()  # topics created or removed
        # topic id -> partitions / configs being changed (copied lazily per topic)
        self.partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
        self.configs: dict[uuid.UUID, dict[str, str]] = {}
        # Topics given a new working partition or config map since the last build: only their
        # entries must be rebuilt (the others already wrap their working maps).
        self.fresh: set[uuid.UUID] = set()
        self.broker_configs: dict[str, dict[str, str]] | None = None
        self.group_configs: MapMutation[str, Mapping[str, str]] | None = None
        self.client_metrics: dict[str, Mapping[str, str]] | None = None
        self.features: dict[str, int] | None = None
        self.brokers: dict[int, BrokerRegistration] | None = None
        self.scram: dict[tuple[str, ScramMechanism], ScramCredential] | None = None
        self.acls: dict[uuid.UUID, AclBinding] | None = None
        self.quotas: dict[ClientQuotaEntity, Mapping[str, float]] | None = None
        self.tokens: dict[str, DelegationTokenRecord] | None = None
        self.next_producer_id = base.next_producer_id

    def _group_configs(self) -> Mapping[str, Mapping[str, str]]:
        """The group configs map to build (frozen; a mutable successor is kept for more records)."""
        if self.group_configs is None:
            return self.base.group_configs
        frozen = self.group_configs.finish()
        self.group_configs = frozen.mutate()
        return frozen

    def _brokers(self) -> dict[int, BrokerRegistration]:
        if self.brokers is None:
            self.brokers = dict(self.base.brokers)
        return self.brokers

    def _change_broker(
        self,
        broker_id: int,
        epoch: int,
        fenced: int,
        in_controlled_shutdown: int,
        log_dirs: tuple[uuid.UUID, ...] = (),
    ) -> None:
        """Apply a fencing / controlled-shutdown change to the registration ``(broker_id, epoch)``;
        a change naming another registration (unknown id, older or newer epoch) is stale: ignored."""
        brokers = self._brokers()
        reg = brokers.get(broker_id)
        if reg is None or reg.epoch != epoch:
            return
        if fenced not in (FENCING_UNFENCE, FENCING_NONE, FENCING_FENCE):
            raise ValueError(f"broker registration change for broker {broker_id} has fenced={fenced}")
        if in_controlled_shutdown not in (CONTROLLED_SHUTDOWN_NONE, CONTROLLED_SHUTDOWN_ENTER):
            raise ValueError(
                f"broker registration change for broker {broker_id} has in_controlled_shutdown={in_controlled_shutdown}"
            )
        brokers[broker_id] = replace(
            reg,
            fenced=reg.fenced if fenced == FENCING_NONE else fenced == FENCING_FENCE,
            in_controlled_shutdown=reg.in_controlled_shutdown
            or in_controlled_shutdown == CONTROLLED_SHUTDOWN_ENTER,
            log_dirs=log_dirs or reg.log_dirs,
        )

    def _topics(self) -> tuple[MapMutation[str, TopicImage], MapMutation[uuid.UUID, TopicImage]]:
        if self.by_name is None or self.by_id is None:
            self.by_name = _mutation(self.base.topics_by_name)
            self.by_id = _mutation(self.base.topics_by_id)
        return self.by_name, self.by_id

    def _topic(self, topic_id: uuid.UUID, what: str) -> TopicImage:
        _by_name, by_id = self._topics()
        t = by_id.get(topic_id)
        if t is None:
            raise ValueError(f"{what} names unknown topic id {topic_id}")
        return t

    def _partitions_of(self, topic_id: uuid.UUID, what: str) -> dict[int, PartitionRegistration]:
        """The topic's working partition map, copied from the base once per delta (never once
        per record: a batch changing every partition of a 10,000-partition topic stays linear)."""
        parts = self.partitions.get(topic_id)
        if parts is None:
            parts = self.partitions[topic_id] = dict(self._topic(topic_id, what).partitions)
            self.fresh.add(topic_id)
        return parts

    def replay(self, r: MetadataRecord) -> None:
        if isinstance(r, TopicRecord):
            by_name, by_id = self._topics()
            if r.name in by_name or r.topic_id in by_id:
                raise ValueError(f"TopicRecord for {r.name!r} ({r.topic_id}) duplicates an existing topic")
            t = TopicImage(r.name, r.topic_id, {}, _EMPTY)
            by_name[r.name] = t
            by_id[r.topic_id] = t
            self.partitions[r.topic_id] = {}
            self.configs[r.topic_id] = {}
            self.fresh.add(r.topic_id)
            self.touched.add(r.topic_id)
        elif isinstance(r, PartitionRecord):
            parts = self._partitions_of(r.topic_id, "PartitionRecord")
            parts[r.partition_id] = PartitionRegistration(
                r.replicas,
                r.isr,
                r.leader,
                r.leader_epoch,
                r.partition_epoch,
                r.removing_replicas,
                r.adding_replicas,
                r.eligible_leader_replicas,
                r.last_known_elr,
            )
        elif isinstance(r, ClearElrRecord):
            if r.topic_name:
                by_name, _by_id = self._topics()
                named = by_name.get(r.topic_name)
                if named is None:
                    raise ValueError(f"ClearElrRecord names unknown topic {r.topic_name!r}")
                topic_ids = [named.topic_id]
            else:
                _by_name, by_id = self._topics()
                frozen = by_id.finish()  # a mutation cannot be iterated: freeze, keep a successor
                self.by_id = frozen.mutate()
                topic_ids = list(frozen.keys())
            for topic_id in topic_ids:
                t3 = self._topic(topic_id, "ClearElrRecord")
                if not any(p.elr or p.last_known_elr for p in t3.partitions.values()) and topic_id not in self.partitions:
                    continue
                parts = self._partitions_of(topic_id, "ClearElrRecord")
                for index, p in list(parts.items()):
                    parts[index] = p.without_elr()
        elif isinstance(r, PartitionChangeRecord):
            parts = self._partitions_of(r.topic_id, "PartitionChangeRecord")
            current = parts.get(r.partition_id)
            if current is None:
                t = self._topic(r.topic_id, "PartitionChangeRecord")
                raise ValueError(f"PartitionChangeRecord names unknown partition {t.name}-{r.partition_id}")
            parts[r.partition_id] = current.merge(r)
        elif isinstance(r, ConfigRecord):
            if r.resource_type == TOPIC_RESOURCE:
                by_name, _by_id = self._topics()
                t2 = by_name.get(r.resource_name)
                if t2 is None:
                    raise ValueError(f"ConfigRecord names unknown topic {r.resource_name!r}")
                cfg = self.configs.get(t2.topic_id)
                if cfg is None:
                    cfg = self.configs[t2.topic_id] = dict(t2.configs)
                    self.fresh.add(t2.topic_id)
            elif r.resource_type == CLIENT_METRICS_RESOURCE:
                if self.client_metrics is None:
                    self.client_metrics = dict(self.base.client_metrics)
                sub_cfg = dict(self.client_metrics.get(r.resource_name, _EMPTY))
                if r.value is None:
                    sub_cfg.pop(r.name, None)
                else:
                    sub_cfg[r.name] = r.value
                if sub_cfg:
                    self.client_metrics[r.resource_name] = MappingProxyType(sub_cfg)
                else:
                    self.client_metrics.pop(r.resource_name, None)
                return
            elif r.resource_type == GROUP_RESOURCE:
                if self.group_configs is None:
                    self.group_configs = _mutation(self.base.group_configs)
                group_cfg = dict(self.group_configs.get(r.resource_name, _EMPTY))
                if r.value is None:
                    group_cfg.pop(r.name, None)
                else:
                    group_cfg[r.name] = r.value
                if group_cfg:
                    self.group_configs[r.resource_name] = MappingProxyType(group_cfg)
                else:
                    self.group_configs.pop(r.resource_name, None)
                return
            else:
                if self.broker_configs is None:
                    self.broker_configs = {k: dict(v) for k, v in self.base.broker_configs.items()}
                cfg = self.broker_configs.setdefault(r.resource_name, {})
            if r.value is None:
                cfg.pop(r.name, None)
            else:
                cfg[r.name] = r.value
        elif isinstance(r, RemoveTopicRecord):
            by_name, by_id = self._topics()
            removed = by_id.pop(r.topic_id, None)
            if removed is None:
                raise ValueError(f"RemoveTopicRecord names unknown topic id {r.topic_id}")
            del by_name[removed.name]
            self.partitions.pop(r.topic_id, None)
            self.configs.pop(r.topic_id, None)
            self.touched.add(r.topic_id)
        elif isinstance(r, ProducerIdsRecord):
            if r.next_producer_id < self.next_producer_id:
                raise ValueError(
                    f"ProducerIdsRecord moves next producer id back from {self.next_producer_id} to {r.next_producer_id}"
                )
            self.next_producer_id = r.next_producer_id
        elif isinstance(r, FeatureLevelRecord):
            if self.features is None:
                self.features = dict(self.base.features)
            if r.feature_level == 0 and r.name != "metadata.version":
                self.features.pop(r.name, None)  # level 0: not finalized (Kafka's FeaturesDelta)
            else:
                self.features[r.name] = r.feature_level
        elif isinstance(r, RegisterBrokerRecord):
            self._brokers()[r.broker_id] = BrokerRegistration(
                r.broker_id,
                r.incarnation_id,
                r.broker_epoch,
                r.endpoints,
                r.rack,
                r.fenced,
                r.in_controlled_shutdown,
                r.features,
                r.log_dirs,
                r.is_migrating_zk_broker,
            )
        elif isinstance(r, UnregisterBrokerRecord):
            brokers = self._brokers()
            reg = brokers.get(r.broker_id)
            if reg is not None and reg.epoch == r.broker_epoch:
                del brokers[r.broker_id]
        elif isinstance(r, FenceBrokerRecord):
            self._change_broker(r.broker_id, r.epoch, FENCING_FENCE, CONTROLLED_SHUTDOWN_NONE)
        elif isinstance(r, UnfenceBrokerRecord):
            self._change_broker(r.broker_id, r.epoch, FENCING_UNFENCE, CONTROLLED_SHUTDOWN_NONE)
        elif isinstance(r, BrokerRegistrationChangeRecord):
            self._change_broker(r.broker_id, r.broker_epoch, r.fenced, r.in_controlled_shutdown, r.log_dirs)
        elif isinstance(r, UserScramCredentialRecord):
            if self.scram is None:
                self.scram = dict(self.base.scram_credentials)
            self.scram[(r.name, ScramMechanism(r.mechanism))] = ScramCredential(
                r.salt, r.stored_key, r.server_key, r.iterations
            )
        elif isinstance(r, RemoveUserScramCredentialRecord):
            if self.scram is None:
                self.scram = dict(self.base.scram_credentials)
            self.scram.pop((r.name, ScramMechanism(r.mechanism)), None)
        elif isinstance(r, AccessControlEntryRecord):
            if self.acls is None:
                self.acls = dict(self.base.acls)
            self.acls[r.id] = AclBinding(
                ResourceType(r.resource_type),
                r.resource_name,
                PatternType(r.pattern_type),
                r.principal,
                r.host,
                AclOperation(r.operation),
                AclPermissionType(r.permission_type),
            )
        elif isinstance(r, RemoveAccessControlEntryRecord):
            if self.acls is None:
                self.acls = dict(self.base.acls)
            self.acls.pop(r.id, None)
        elif isinstance(r, ClientQuotaRecord):
            if self.quotas is None:
                self.quotas = dict(self.base.client_quotas)
            values = dict(self.quotas.get(r.entity, {}))
            if r.remove:
                values.pop(r.key, None)
            else:
                values[r.key] = r.value
            if values:
                self.quotas[r.entity] = MappingProxyType(values)
            else:
                self.quotas.pop(r.entity, None)
        elif isinstance(r, DelegationTokenRecord):
            if self.tokens is None:
                self.tokens = dict(self.base.delegation_tokens)
            self.tokens[r.token_id] = r
        elif isinstance(r, RemoveDelegationTokenRecord):
            if self.tokens is None:
                self.tokens = dict(self.base.delegation_tokens)
            self.tokens.pop(r.token_id, None)
        else:  # pragma: no cover - decode_record only returns the types above
            raise ValueError(f"cannot apply {r!r}")

    def build(self, offset: int, track_changes: bool = True) -> MetadataImage:
        """The image; ``track_changes`` records what changed from the base (for
        ``topics_changed_since``), which costs a pass over everything changed."""
        by_name: Mapping[str, TopicImage] = self.base.topics_by_name
        by_id: Mapping[uuid.UUID, TopicImage] = self.base.topics_by_id
        if self.by_name is not None and self.by_id is not None:
            work_name, work_id = self.by_name, self.by_id
            changed, self.fresh = self.fresh, set()
            for tid in changed:
                t = work_id.get(tid)
                if t is None:
                    continue
                nt = replace(
                    t,
                    partitions=MappingProxyType(self.partitions[tid])
                    if tid in self.partitions
                    else t.partitions,
                    configs=MappingProxyType(self.configs[tid]) if tid in self.configs else t.configs,
                )
                work_id[tid] = nt
                work_name[nt.name] = nt
            # Freeze the working maps; keep mutable successors (a MetadataDelta builds again).
            frozen_name, frozen_id = work_name.finish(), work_id.finish()
            self.by_name, self.by_id = frozen_name.mutate(), frozen_id.mutate()
            by_name, by_id = frozen_name, frozen_id
        elif self.partitions or self.configs:  # pragma: no cover - _topic() always copies first
            raise AssertionError("partition or config change without a topic copy")
        return MetadataImage(
            cluster_id=self.base.cluster_id,
            topics_by_name=by_name,
            topics_by_id=by_id,
            broker_configs=self.broker_configs
            if self.broker_configs is not None
            else self.base.broker_configs,
            group_configs=self._group_configs(),
            client_metrics=MappingProxyType(dict(self.client_metrics))
            if self.client_metrics is not None
            else self.base.client_metrics,
            features=self.features if self.features is not None else self.base.features,
            next_producer_id=self.next_producer_id,
            offset=offset,
            brokers=MappingProxyType(self.brokers) if self.brokers is not None else self.base.brokers,
            scram_credentials=MappingProxyType(self.scram)
            if self.scram is not None
            else self.base.scram_credentials,
            acls=MappingProxyType(self.acls) if self.acls is not None else self.base.acls,
            client_quotas=MappingProxyType(self.quotas)
            if self.quotas is not None
            else self.base.client_quotas,
            delegation_tokens=MappingProxyType(self.tokens)
            if self.tokens is not None
            else self.base.delegation_tokens,
            _parent=weakref.ref(self.base) if track_changes else None,
            _touched=frozenset(self.touched | set(self.partitions) | set(self.configs))
            if track_changes
            else frozenset(),
        )
