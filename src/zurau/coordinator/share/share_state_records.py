"""Records of ``__share_group_state``: Kafka's ShareSnapshot and ShareUpdate formats (KIP-932).

The share coordinator keeps one *share-partition state* per key ``(group_id, topic_id,
partition)`` (a share group's view of one partition of a topic) as records of the compacted
topic ``__share_group_state``. Formats are Kafka 4.2's, so Kafka's tools (the
``ShareGroupStateMessageFormatter`` of ``kafka-console-consumer.sh``, ``kafka-dump-log.sh``) read
what Zurau writes, and a data directory written by one reads back in the other.

Every key starts with an int16 *record type* (Kafka's ``CoordinatorRecordType``, the schema's
``apiKey``), followed by the key struct (version 0, never flexible). Every value starts with an
int16 value version (always 0), followed by the value struct (flexible in every version). A null
value is a tombstone (DeleteShareGroupState); Kafka writes tombstones with the ShareSnapshot key
type only, and this module does the same (a tombstone of either key type forgets the key).

==========  ============  ===========================================================
record type name          value (version 0, flexible)
==========  ============  ===========================================================
0           ShareSnapshot the complete state: snapshot_epoch int32, state_epoch int32,
                          leader_epoch int32, start_offset int64,
                          delivery_complete_count int32 (tag 0, default -1),
                          create_timestamp int64, write_timestamp int64,
                          state_batches [first_offset int64, last_offset int64,
                          delivery_state int8, delivery_count int16]
1           ShareUpdate   a delta on the last snapshot: snapshot_epoch int32 (that of the
                          snapshot it applies to), leader_epoch int32, start_offset int64
                          (-1: unchanged), delivery_complete_count int32 (tag 0,
                          default -1), state_batches (same struct)
==========  ============  ===========================================================

Key struct (both types)::

    group_id   string
    topic_id   uuid
    partition  int32

``delivery_complete_count`` (KIP-1226, Kafka 4.2) is a tagged field: absent on the wire when -1
(unknown), so records without it are byte-identical to Kafka 4.1's.

Invariants: decoding then encoding a record gives the same bytes (state batches are kept in the
order they were written); the partition of ``__share_group_state`` holding a key is
:func:`partition_for_key`, Kafka's ``Utils.abs("groupId:topicId:partition".hashCode()) %
share.coordinator.state.topic.num.partitions`` with the topic id in Kafka's text form.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from zurau.coordinator.partitioner import java_string_hash, java_utils_abs
from zurau.protocol.codec import compile_struct
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.protocol.schema import INT8, INT16, INT32, INT64, STRING, UUID, Array, F, Struct
from zurau.protocol.share_states import StateBatch
from zurau.types import kafka_uuid

SHARE_GROUP_STATE_TOPIC = "__share_group_state"

# Record types (the int16 prefix of every key): Kafka's CoordinatorRecordType ids.
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
KEY_SCHEMA_VERSION = 0
VALUE_VERSION = 0

# share.coordinator.state.topic.num.partitions
DEFAULT_NUM_PARTITIONS = 50

_I16 = struct.Struct(">h")

KEY = (
    F("group_id", STRING),
    F("topic_id", UUID),
    F("partition", INT32),
)

STATE_BATCH = Struct(
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("delivery_state", INT8),
    F("delivery_count", INT16),
)

SNAPSHOT_VALUE = (
    F("snapshot_epoch", INT32),
    F("state_epoch", INT32),
    F("leader_epoch", INT32),
    F("start_offset", INT64),
    F("delivery_complete_count", INT32, tag=0, tagged="0+", default=-1),
    F("create_timestamp", INT64),
    F("write_timestamp", INT64),
    F("state_batches", Array(STATE_BATCH)),
)

UPDATE_VALUE = (
    F("snapshot_epoch", INT32),
    F("leader_epoch", INT32),
    F("start_offset", INT64),
    F("delivery_complete_count", INT32, tag=0, tagged="0+", default=-1),
    F("state_batches", Array(STATE_BATCH)),
)


# ---------------------------------------------------------------------------------- keys


@dataclass(frozen=True, order=True)
class ShareStateKey:
    """A share-partition: ``partition`` of the topic ``topic_id``, as consumed by share group
    ``group_id`` (Kafka's ``SharePartitionKey``)."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    @property
    def coordinator_key(self) -> str:
        """Kafka's ``SharePartitionKey.asCoordinatorKey``: ``groupId:topicId:partition``."""
        return coordinator_key(self.group_id, self.topic_id, self.partition)

    def to_struct(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "topic_id": self.topic_id, "partition": self.partition}


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """The string a share-partition is routed by (topic id in Kafka's base64 text form)."""
    return f"{group_id}:{kafka_uuid(topic_id)}:{partition}"


def partition_for_coordinator_key(key: str, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of a :func:`coordinator_key` string."""
    return java_utils_abs(java_string_hash(key)) % num_partitions


def partition_for_key(group_id: str, topic_id: uuid.UUID, partition: int, num_partitions: int) -> int:
    """The ``__share_group_state`` partition holding the state of a share-partition, as Kafka's
    ``ShareCoordinatorService.partitionFor`` computes it."""
    return partition_for_coordinator_key(coordinator_key(group_id, topic_id, partition), num_partitions)


# ---------------------------------------------------------------------------------- values


def _batches_to_struct(batches: Iterable[StateBatch]) -> list[dict[str, int]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": b.delivery_state,
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


def _batches_from_struct(items: list[dict[str, Any]]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
        for b in items
    )


@dataclass(frozen=True)
class ShareSnapshotValue:
    """The complete state of a share-partition (one ShareSnapshotValue)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    create_timestamp: int = 0
    write_timestamp: int = 0
    delivery_complete_count: int = -1

    def to_struct(self) -> dict[str, Any]:
        return {
            "snapshot_epoch": self.snapshot_epoch,
            "state_epoch": self.state_epoch,
            "leader_epoch": self.leader_epoch,
            "start_offset": self.start_offset,
            "delivery_complete_count": self.delivery_complete_count,
            "create_timestamp": self.create_timestamp,
            "write_timestamp": self.write_timestamp,
            "state_batches": _batches_to_struct(self.state_batches),
        }

    @classmethod
    def from_struct(cls, v: dict[str, Any]) -> ShareSnapshotValue:
        return cls(
            snapshot_epoch=v["snapshot_epoch"],
            state_epoch=v["state_epoch"],
            leader_epoch=v["leader_epoch"],
            start_offset=v["start_offset"],
            state_batches=_batches_from_struct(v["state_batches"]),
            create_timestamp=v["create_timestamp"],
            write_timestamp=v["write_timestamp"],
            delivery_complete_count=v["delivery_complete_count"],
        )


@dataclass(frozen=True)
class ShareUpdateValue:
    """A delta on the last snapshot of a share-partition (one ShareUpdateValue).

    ``start_offset`` -1 leaves the start offset unchanged; ``state_batches`` override the state of
    the offsets they cover.
    """

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1

    def to_struct(self) -> dict[str, Any]:
        return {
            "snapshot_epoch": self.snapshot_epoch,
            "leader_epoch": self.leader_epoch,
            "start_offset": self.start_offset,
            "delivery_complete_count": self.delivery_complete_count,
            "state_batches": _batches_to_struct(self.state_batches),
        }

    @classmethod
    def from_struct(cls, v: dict[str, Any]) -> ShareUpdateValue:
        return cls(
            snapshot_epoch=v["snapshot_epoch"],
            leader_epoch=v["leader_epoch"],
            start_offset=v["start_offset"],
            state_batches=_batches_from_struct(v["state_batches"]),
            delivery_complete_count=v["delivery_complete_count"],
        )


# ---------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ShareStateRecord:
    """One record of ``__share_group_state``; ``value is None`` is a tombstone.

    ``record_type`` is :data:`SHARE_SNAPSHOT` (value a :class:`ShareSnapshotValue`) or
    :data:`SHARE_UPDATE` (value a :class:`ShareUpdateValue`).
    """

    record_type: int
    key: ShareStateKey
    value: ShareSnapshotValue | ShareUpdateValue | None

    @classmethod
    def snapshot(cls, key: ShareStateKey, value: ShareSnapshotValue) -> ShareStateRecord:
        return cls(SHARE_SNAPSHOT, key, value)

    @classmethod
    def update(cls, key: ShareStateKey, value: ShareUpdateValue) -> ShareStateRecord:
        return cls(SHARE_UPDATE, key, value)

    @classmethod
    def tombstone(cls, key: ShareStateKey) -> ShareStateRecord:
        """The deletion of a share-partition's state (Kafka writes it with the snapshot key type)."""
        return cls(SHARE_SNAPSHOT, key, None)

    def key_bytes(self) -> bytes:
        out = bytearray(_I16.pack(self.record_type))
        _key_codec()[1](out, self.key.to_struct(), [])
        return bytes(out)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        out = bytearray(_I16.pack(VALUE_VERSION))
        _value_codec(self.record_type)[1](out, self.value.to_struct(), [])
        return bytes(out)


@cache
def _key_codec() -> Any:
    return compile_struct(KEY, KEY_SCHEMA_VERSION, False, "ShareStateKey")


@cache
def _value_codec(record_type: int) -> Any:
    if record_type == SHARE_SNAPSHOT:
        return compile_struct(SNAPSHOT_VALUE, VALUE_VERSION, True, "ShareSnapshotValue")
    return compile_struct(UPDATE_VALUE, VALUE_VERSION, True, "ShareUpdateValue")


def decode_record(key: bytes | memoryview, value: bytes | memoryview | None) -> ShareStateRecord | None:
    """Decode one stored record; None for a record type this broker does not know (skipped, as
    Kafka's loader skips unknown record types).

    Raises DecodeError for a malformed key or value, or a value version other than 0.
    """
    kmv = memoryview(key)
    if len(kmv) < 2:
        raise DecodeError("share state key is shorter than its record type")
    record_type = _I16.unpack_from(kmv, 0)[0]
    if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        return None
    try:
        k, pos = _key_codec()[0](kmv, 2)
        if pos != len(kmv):
            raise DecodeError(f"share state key has {len(kmv) - pos} trailing bytes")
        skey = ShareStateKey(k["group_id"], k["topic_id"], k["partition"])
        if value is None:
            return ShareStateRecord(record_type, skey, None)
        vmv = memoryview(value)
        if len(vmv) < 2:
            raise DecodeError("share state value is shorter than its version")
        version = _I16.unpack_from(vmv, 0)[0]
        if version != VALUE_VERSION:
            raise DecodeError(f"share state record type {record_type} has no value version {version}")
        v, pos = _value_codec(record_type)[0](vmv, 2)
        if pos != len(vmv):
            raise DecodeError(f"share state value has {len(vmv) - pos} trailing bytes")
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, KeyError, struct.error) as e:
        raise DecodeError(f"malformed share state record of type {record_type}: {e}") from None
    if record_type == SHARE_SNAPSHOT:
        return ShareStateRecord(record_type, skey, ShareSnapshotValue.from_struct(v))
    return ShareStateRecord(record_type, skey, ShareUpdateValue.from_struct(v))


def build_records_batch(
    records: Iterable[ShareStateRecord], timestamp_ms: int, compression: int = 0
) -> bytes:
    """One v2 batch (CreateTime ``timestamp_ms``, ``share.coordinator.state.topic.compression.codec``)
    holding ``records`` in order."""
    return build_batch(
        [NewRecord(r.key_bytes(), r.value_bytes(), (), timestamp_ms) for r in records],
        compression=compression,
    )


def iter_log_records(data: bytes | memoryview) -> Iterator[tuple[int, list[tuple[int, ShareStateRecord]]]]:
    """``(next_offset, [(offset, record), ...])`` for every whole batch in ``data``.

    Control batches and records of unknown types or without a key yield nothing (the topic holds
    no transactions). ``next_offset`` is the offset after the batch, so a reader resumes there.
    """
    mv = memoryview(data)
    for pos, h in iter_batches(mv):
        out: list[tuple[int, ShareStateRecord]] = []
        if not h.is_control:
            for rec in decode_batch_records(mv[pos : pos + h.size]):
                if rec.key is None:
                    continue
                r = decode_record(rec.key, rec.value)
                if r is not None:
                    out.append((rec.offset, r))
        yield h.next_offset, out


__all__ = [
    "DEFAULT_NUM_PARTITIONS",
    "SHARE_GROUP_STATE_TOPIC",
    "SHARE_SNAPSHOT",
    "SHARE_UPDATE",
    "ShareSnapshotValue",
    "ShareStateKey",
    "ShareStateRecord",
    "ShareUpdateValue",
    "build_records_batch",
    "coordinator_key",
    "decode_record",
    "iter_log_records",
    "partition_for_coordinator_key",
    "partition_for_key",
]
