"""Metadata records: the changes the controller makes, in Kafka's ``__cluster_metadata`` format.

Every change to the cluster's metadata is one of these records; the metadata image is what
replaying them in order gives. The names, record type ids (Kafka calls them api keys) and field
layouts are Kafka's, so the log this produces has Kafka's byte format and the KRaft quorum can
carry it unchanged:

* record value = ``frame version (uvarint, 1) | record type (uvarint) | record version (uvarint) |
  body``; the body uses the flexible encoding (compact strings/arrays, a tagged-field section),
  as every metadata record is flexible from version 0. Record keys are null.
* ``TopicRecord`` (2), ``PartitionRecord`` (3), ``ConfigRecord`` (4), ``RemoveTopicRecord`` (9),
  ``FeatureLevelRecord`` (12), ``ProducerIdsRecord`` (15) are the ones a single node writes today;
  broker registration and partition changes arrive with the KRaft and replication work.

Records are immutable dataclasses; :func:`encode_record` / :func:`decode_record` convert them.
An unknown record type is a :class:`~zurau.protocol.primitives.DecodeError` naming it (a newer
writer's log must not be half-understood silently).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from zurau.protocol.codec import compile_struct
from zurau.protocol.primitives import DecodeError, read_uvarint, write_uvarint
from zurau.protocol.schema import INT8, INT16, INT32, INT64, STRING, UUID, Array, Field

FRAME_VERSION = 1

# ConfigResource types (Kafka's ConfigResource.Type ids).
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


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
class ProducerIdsRecord:
    """A block of producer ids was handed to a broker: ids below ``next_producer_id`` are taken."""

    TYPE: ClassVar[int] = 15
    broker_id: int
    broker_epoch: int
    next_producer_id: int


MetadataRecord = TopicRecord | PartitionRecord | ConfigRecord | RemoveTopicRecord | FeatureLevelRecord | ProducerIdsRecord


@dataclass(frozen=True)
class _Layout:
    """How one record type maps to Kafka's schema: wire fields and the dataclass it builds."""

    cls: type
    version: int
    fields: tuple[Field, ...]
    to_wire: Callable[[Any], dict[str, Any]]
    from_wire: Callable[[dict[str, Any]], Any]
    codec: tuple[Any, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "codec", compile_struct(self.fields, self.version, True))


_I32S = Array(INT32)

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
        _Layout(
            PartitionRecord,
            0,
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
            ),
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
    )
}

def encode_record(record: MetadataRecord) -> bytes:
    """The record's value bytes: frame version, type, version, flexible body."""
    layout = _LAYOUTS[record.TYPE]
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, record.TYPE)
    write_uvarint(out, layout.version)
    layout.codec[1](out, layout.to_wire(record), [])
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
        body, _pos = layout.codec[0](mv, pos)
    except (IndexError, ValueError) as e:
        raise DecodeError(f"malformed metadata record type {rtype}: {e}") from None
    rec: MetadataRecord = layout.from_wire(body)
    return rec
