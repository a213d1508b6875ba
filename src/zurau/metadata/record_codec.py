"""Metadata records as bytes: Kafka's ``__cluster_metadata`` record values.

* record value = ``frame version (uvarint, 1) | record type (uvarint) | record version (uvarint) |
  body``; the body uses the flexible encoding (compact strings/arrays, a tagged-field section),
  as every metadata record is flexible from version 0. Record keys are null.
* each record type (:mod:`zurau.metadata.records`) has one layout here: its Kafka schema fields
  and the conversions to and from its dataclass.

Invariants: each record type is written at the newest version this module knows (except
``PartitionRecord`` and ``PartitionChangeRecord``: at version 2, Kafka's KIP-966 version, only
when they carry an ELR or last known ELR, else at version 0) and read at any version up to it (fields a version lacks take their defaults); a record newer than that, or of an
unknown type, is a :class:`~zurau.protocol.primitives.DecodeError` naming it (a newer writer's log
must not be half-understood silently). ``decode_record(encode_record(r)) == r``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zurau.metadata.records import (
    CONTROLLED_SHUTDOWN_NONE,
    FENCING_NONE,
    NO_LEADER_CHANGE,
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
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
    quota_entity,
)
from zurau.protocol.codec import compile_struct
from zurau.protocol.primitives import DecodeError, read_uvarint, write_uvarint
from zurau.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    NULL,
    STRING,
    UINT16,
    UUID,
    Array,
    Field,
    Struct,
)

FRAME_VERSION = 1


@dataclass(frozen=True)
class _Layout:
    """How one record type maps to Kafka's schema: wire fields and the dataclass it builds.

    ``version`` is the newest version known, the one records are written at unless
    ``write_version`` picks an older one; ``codec`` is its (decoder, encoder); :meth:`codec_for`
    gives those of any version up to it.
    """

    cls: type
    version: int
    fields: tuple[Field, ...]
    to_wire: Callable[[Any], dict[str, Any]]
    from_wire: Callable[[dict[str, Any]], Any]
    # The version one record is written at, when not always ``version`` (the lowest version
    # that carries its fields, so records without the newer fields keep their older bytes).
    write_version: Callable[[Any], int] | None = None
    codec: tuple[Any, Any] = field(init=False, repr=False, compare=False)
    _older: dict[int, tuple[Any, Any]] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "codec", compile_struct(self.fields, self.version, True))

    def codec_for(self, version: int) -> tuple[Any, Any]:
        if version == self.version:
            return self.codec
        codec = self._older.get(version)
        if codec is None:
            codec = self._older[version] = compile_struct(self.fields, version, True)
        return codec


_I32S = Array(INT32)


def _opt_list(values: tuple[int, ...] | None) -> list[int] | None:
    return None if values is None else list(values)


def _opt_tuple(values: list[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


_UUIDS = Array(UUID)
_ENDPOINT = Struct(
    Field("name", STRING),
    Field("host", STRING),
    Field("port", UINT16),
    Field("security_protocol", INT16),
)
_FEATURE = Struct(
    Field("name", STRING),
    Field("min_supported_version", INT16),
    Field("max_supported_version", INT16),
)

_LAYOUTS: dict[int, _Layout] = {
    layout.cls.TYPE: layout  # type: ignore[attr-defined]
    for layout in (
        _Layout(
            TopicRecord,
            0,
            (Field("name", STRING), Field("topic_id", UUID)),
            lambda r: {"name": r.name, "topic_id": r.topic_id},
            lambda d: TopicRecord(d["name"], d["topic_id"]),
        ),
        # v1 added the log directories (KIP-858; written empty, not kept), v2 the tagged ELR and
        # last known ELR (KIP-966).
        _Layout(
            PartitionRecord,
            2,
            (
                Field("partition_id", INT32, default=-1),
                Field("topic_id", UUID),
                Field("replicas", _I32S),
                Field("isr", _I32S),
                Field("removing_replicas", _I32S),
                Field("adding_replicas", _I32S),
                Field("leader", INT32, default=-1),
                Field("leader_recovery_state", INT8, tag=0, tagged="0+", default=0),
                Field("leader_epoch", INT32, default=-1),
                Field("partition_epoch", INT32, default=-1),
                Field("directories", _UUIDS, versions="1+"),
                Field("eligible_leader_replicas", _I32S, versions="2+", nullable="2+", tag=1, tagged="2+", default=NULL),
                Field("last_known_elr", _I32S, versions="2+", nullable="2+", tag=2, tagged="2+", default=NULL),
            ),
            lambda r: {
                "partition_id": r.partition_id,
                "topic_id": r.topic_id,
                "replicas": list(r.replicas),
                "isr": list(r.isr),
                "removing_replicas": list(r.removing_replicas),
                "adding_replicas": list(r.adding_replicas),
                "leader": r.leader,
                "leader_recovery_state": r.leader_recovery_state,
                "leader_epoch": r.leader_epoch,
                "partition_epoch": r.partition_epoch,
                "directories": [],
                "eligible_leader_replicas": list(r.eligible_leader_replicas) or None,
                "last_known_elr": list(r.last_known_elr) or None,
            },
            lambda d: PartitionRecord(
                d["partition_id"],
                d["topic_id"],
                tuple(d["replicas"]),
                tuple(d["isr"]),
                d["leader"],
                d["leader_epoch"],
                d["partition_epoch"],
                tuple(d["removing_replicas"]),
                tuple(d["adding_replicas"]),
                d["leader_recovery_state"],
                tuple(d.get("eligible_leader_replicas") or ()),
                tuple(d.get("last_known_elr") or ()),
            ),
            lambda r: 2 if r.eligible_leader_replicas or r.last_known_elr else 0,
        ),
        # v1 added the tagged directories (KIP-858; not kept), v2 the tagged ELR and last known
        # ELR (KIP-966).
        _Layout(
            PartitionChangeRecord,
            2,
            (
                Field("partition_id", INT32, default=-1),
                Field("topic_id", UUID),
                Field("isr", _I32S, nullable="0+", tag=0, tagged="0+", default=None),
                Field("leader", INT32, tag=1, tagged="0+", default=NO_LEADER_CHANGE),
                Field("replicas", _I32S, nullable="0+", tag=2, tagged="0+", default=None),
                Field("removing_replicas", _I32S, nullable="0+", tag=3, tagged="0+", default=None),
                Field("adding_replicas", _I32S, nullable="0+", tag=4, tagged="0+", default=None),
                Field("leader_recovery_state", INT8, tag=5, tagged="0+", default=-1),
                Field("eligible_leader_replicas", _I32S, versions="2+", nullable="2+", tag=6, tagged="2+", default=NULL),
                Field("last_known_elr", _I32S, versions="2+", nullable="2+", tag=7, tagged="2+", default=NULL),
                Field("directories", _UUIDS, versions="1+", nullable="1+", tag=8, tagged="1+", default=NULL),
            ),
            lambda r: {
                "partition_id": r.partition_id,
                "topic_id": r.topic_id,
                "isr": _opt_list(r.isr),
                "leader": r.leader,
                "replicas": _opt_list(r.replicas),
                "removing_replicas": _opt_list(r.removing_replicas),
                "adding_replicas": _opt_list(r.adding_replicas),
                "leader_recovery_state": r.leader_recovery_state,
                "eligible_leader_replicas": _opt_list(r.eligible_leader_replicas),
                "last_known_elr": _opt_list(r.last_known_elr),
                "directories": None,
            },
            lambda d: PartitionChangeRecord(
                d["partition_id"],
                d["topic_id"],
                _opt_tuple(d["isr"]),
                d["leader"],
                _opt_tuple(d["replicas"]),
                _opt_tuple(d["removing_replicas"]),
                _opt_tuple(d["adding_replicas"]),
                d["leader_recovery_state"],
                _opt_tuple(d.get("eligible_leader_replicas")),
                _opt_tuple(d.get("last_known_elr")),
            ),
            lambda r: 2 if r.eligible_leader_replicas is not None or r.last_known_elr is not None else 0,
        ),
        _Layout(
            ClearElrRecord,
            0,
            (Field("topic_name", STRING),),
            lambda r: {"topic_name": r.topic_name},
            lambda d: ClearElrRecord(d["topic_name"]),
        ),
        _Layout(
            ConfigRecord,
            0,
            (
                Field("resource_type", INT8),
                Field("resource_name", STRING),
                Field("name", STRING),
                Field("value", STRING, nullable="0+"),
            ),
            lambda r: {"resource_type": r.resource_type, "resource_name": r.resource_name, "name": r.name, "value": r.value},
            lambda d: ConfigRecord(d["resource_type"], d["resource_name"], d["name"], d["value"]),
        ),
        _Layout(
            RemoveTopicRecord,
            0,
            (Field("topic_id", UUID),),
            lambda r: {"topic_id": r.topic_id},
            lambda d: RemoveTopicRecord(d["topic_id"]),
        ),
        _Layout(
            FeatureLevelRecord,
            0,
            (Field("name", STRING), Field("feature_level", INT16)),
            lambda r: {"name": r.name, "feature_level": r.feature_level},
            lambda d: FeatureLevelRecord(d["name"], d["feature_level"]),
        ),
        _Layout(
            ProducerIdsRecord,
            0,
            (Field("broker_id", INT32), Field("broker_epoch", INT64), Field("next_producer_id", INT64)),
            lambda r: {"broker_id": r.broker_id, "broker_epoch": r.broker_epoch, "next_producer_id": r.next_producer_id},
            lambda d: ProducerIdsRecord(d["broker_id"], d["broker_epoch"], d["next_producer_id"]),
        ),
        # v1 added in_controlled_shutdown, v2 is_migrating_zk_broker, v3 the tagged log_dirs.
        _Layout(
            RegisterBrokerRecord,
            3,
            (
                Field("broker_id", INT32),
                Field("is_migrating_zk_broker", BOOL, versions="2+", default=False),
                Field("incarnation_id", UUID),
                Field("broker_epoch", INT64),
                Field("end_points", Array(_ENDPOINT)),
                Field("features", Array(_FEATURE)),
                Field("rack", STRING, nullable="0+"),
                Field("fenced", BOOL, default=True),
                Field("in_controlled_shutdown", BOOL, versions="1+", default=False),
                Field("log_dirs", _UUIDS, versions="3+", tag=0, tagged="3+"),
            ),
            lambda r: {
                "broker_id": r.broker_id,
                "is_migrating_zk_broker": r.is_migrating_zk_broker,
                "incarnation_id": r.incarnation_id,
                "broker_epoch": r.broker_epoch,
                "end_points": [e._asdict() for e in r.endpoints],
                "features": [f._asdict() for f in r.features],
                "rack": r.rack,
                "fenced": r.fenced,
                "in_controlled_shutdown": r.in_controlled_shutdown,
                "log_dirs": list(r.log_dirs),
            },
            lambda d: RegisterBrokerRecord(
                d["broker_id"],
                d["incarnation_id"],
                d["broker_epoch"],
                tuple(
                    BrokerEndpoint(e["name"], e["host"], e["port"], e["security_protocol"]) for e in d["end_points"]
                ),
                tuple(
                    BrokerFeature(f["name"], f["min_supported_version"], f["max_supported_version"])
                    for f in d["features"]
                ),
                d["rack"],
                d["fenced"],
                d["in_controlled_shutdown"],
                d["is_migrating_zk_broker"],
                tuple(d["log_dirs"]),
            ),
        ),
        _Layout(
            UnregisterBrokerRecord,
            0,
            (Field("broker_id", INT32), Field("broker_epoch", INT64)),
            lambda r: {"broker_id": r.broker_id, "broker_epoch": r.broker_epoch},
            lambda d: UnregisterBrokerRecord(d["broker_id"], d["broker_epoch"]),
        ),
        _Layout(
            FenceBrokerRecord,
            0,
            (Field("id", INT32), Field("epoch", INT64)),
            lambda r: {"id": r.broker_id, "epoch": r.epoch},
            lambda d: FenceBrokerRecord(d["id"], d["epoch"]),
        ),
        _Layout(
            UnfenceBrokerRecord,
            0,
            (Field("id", INT32), Field("epoch", INT64)),
            lambda r: {"id": r.broker_id, "epoch": r.epoch},
            lambda d: UnfenceBrokerRecord(d["id"], d["epoch"]),
        ),
        # v1 added the tagged in_controlled_shutdown, v2 the tagged log_dirs.
        _Layout(
            BrokerRegistrationChangeRecord,
            2,
            (
                Field("broker_id", INT32),
                Field("broker_epoch", INT64),
                Field("fenced", INT8, tag=0, tagged="0+", default=FENCING_NONE),
                Field(
                    "in_controlled_shutdown",
                    INT8,
                    versions="1+",
                    tag=1,
                    tagged="1+",
                    default=CONTROLLED_SHUTDOWN_NONE,
                ),
                Field("log_dirs", _UUIDS, versions="2+", tag=2, tagged="2+"),
            ),
            lambda r: {
                "broker_id": r.broker_id,
                "broker_epoch": r.broker_epoch,
                "fenced": r.fenced,
                "in_controlled_shutdown": r.in_controlled_shutdown,
                "log_dirs": list(r.log_dirs),
            },
            lambda d: BrokerRegistrationChangeRecord(
                d["broker_id"], d["broker_epoch"], d["fenced"], d["in_controlled_shutdown"], tuple(d["log_dirs"])
            ),
        ),
        _Layout(
            UserScramCredentialRecord,
            0,
            (
                Field("name", STRING),
                Field("mechanism", INT8),
                Field("salt", BYTES),
                Field("stored_key", BYTES),
                Field("server_key", BYTES),
                Field("iterations", INT32),
            ),
            lambda r: {
                "name": r.name,
                "mechanism": r.mechanism,
                "salt": r.salt,
                "stored_key": r.stored_key,
                "server_key": r.server_key,
                "iterations": r.iterations,
            },
            lambda d: UserScramCredentialRecord(
                d["name"], d["mechanism"], bytes(d["salt"]), bytes(d["stored_key"]), bytes(d["server_key"]), d["iterations"]
            ),
        ),
        _Layout(
            RemoveUserScramCredentialRecord,
            0,
            (Field("name", STRING), Field("mechanism", INT8)),
            lambda r: {"name": r.name, "mechanism": r.mechanism},
            lambda d: RemoveUserScramCredentialRecord(d["name"], d["mechanism"]),
        ),
        _Layout(
            AccessControlEntryRecord,
            0,
            (
                Field("id", UUID),
                Field("resource_type", INT8),
                Field("resource_name", STRING),
                Field("pattern_type", INT8),
                Field("principal", STRING),
                Field("host", STRING),
                Field("operation", INT8),
                Field("permission_type", INT8),
            ),
            lambda r: {
                "id": r.id,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "pattern_type": r.pattern_type,
                "principal": r.principal,
                "host": r.host,
                "operation": r.operation,
                "permission_type": r.permission_type,
            },
            lambda d: AccessControlEntryRecord(
                d["id"], d["resource_type"], d["resource_name"], d["pattern_type"], d["principal"], d["host"],
                d["operation"], d["permission_type"],
            ),
        ),
        _Layout(
            RemoveAccessControlEntryRecord,
            0,
            (Field("id", UUID),),
            lambda r: {"id": r.id},
            lambda d: RemoveAccessControlEntryRecord(d["id"]),
        ),
        _Layout(
            ClientQuotaRecord,
            0,
            (
                Field("entity", Array(Struct(Field("entity_type", STRING), Field("entity_name", STRING, nullable="0+")))),
                Field("key", STRING),
                Field("value", FLOAT64),
                Field("remove", BOOL),
            ),
            lambda r: {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in r.entity],
                "key": r.key,
                "value": r.value,
                "remove": r.remove,
            },
            lambda d: ClientQuotaRecord(
                quota_entity((e["entity_type"], e["entity_name"]) for e in d["entity"]), d["key"], d["value"], d["remove"]
            ),
        ),
        # Kafka's field order: Owner, Requester, Renewers, IssueTimestamp, MaxTimestamp,
        # ExpirationTimestamp, TokenId.
        _Layout(
            DelegationTokenRecord,
            0,
            (
                Field("owner", STRING),
                Field("requester", STRING),
                Field("renewers", Array(STRING)),
                Field("issue_timestamp", INT64),
                Field("max_timestamp", INT64),
                Field("expiration_timestamp", INT64),
                Field("token_id", STRING),
            ),
            lambda r: {
                "owner": r.owner,
                "requester": r.requester,
                "renewers": list(r.renewers),
                "issue_timestamp": r.issue_timestamp,
                "max_timestamp": r.max_timestamp,
                "expiration_timestamp": r.expiration_timestamp,
                "token_id": r.token_id,
            },
            lambda d: DelegationTokenRecord(
                d["token_id"], d["owner"], d["requester"], tuple(d["renewers"]), d["issue_timestamp"],
                d["max_timestamp"], d["expiration_timestamp"],
            ),
        ),
        _Layout(
            RemoveDelegationTokenRecord,
            0,
            (Field("token_id", STRING),),
            lambda r: {"token_id": r.token_id},
            lambda d: RemoveDelegationTokenRecord(d["token_id"]),
        ),
    )
}


def encode_record(record: MetadataRecord) -> bytes:
    """The record's value bytes: frame version, type, version, flexible body."""
    layout = _LAYOUTS[record.TYPE]
    version = layout.version if layout.write_version is None else layout.write_version(record)
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, record.TYPE)
    write_uvarint(out, version)
    layout.codec_for(version)[1](out, layout.to_wire(record), [])
    return bytes(out)


def decode_record(data: bytes | bytearray | memoryview) -> MetadataRecord:
    """Parse one record value; raises DecodeError for a malformed or unknown record."""
    mv = memoryview(data)
    frame, pos = read_uvarint(mv, 0)
    if frame != FRAME_VERSION:
        raise DecodeError(f"metadata record frame version {frame} is not {FRAME_VERSION}")
    rtype, pos = read_uvarint(mv, pos)
    version, pos = read_uvarint(mv, pos)
    layout = _LAYOUTS.get(rtype)
    if layout is None:
        raise DecodeError(f"unknown metadata record type {rtype} (version {version})")
    if version > layout.version:
        # Flexible records only grow by fields the reader may skip if tagged, but new
        # untagged fields change the layout: refuse rather than misread.
        raise DecodeError(f"metadata record type {rtype} version {version} is newer than {layout.version}")
    try:
        body, _pos = layout.codec_for(version)[0](mv, pos)
    except (IndexError, ValueError) as e:
        raise DecodeError(f"malformed metadata record type {rtype}: {e}") from None
    rec: MetadataRecord = layout.from_wire(body)
    return rec
