"""Records of ``__remote_log_metadata``: Kafka's ``RemoteLogMetadataSerde`` format (KIP-405).

Every event of the topic-based remote log metadata is the *value* of one record (the key is null;
Kafka's ``ProducerManager`` writes ``ProducerRecord(topic, partition, null, value)``). The value
is byte-compatible with Kafka's, so Kafka's tools (``kafka-console-consumer.sh`` with
``RemoteLogMetadataSerde$RemoteLogMetadataFormatter``) read what Zurau writes, and a Zurau broker
reads a topic Kafka brokers wrote.

Frame (Kafka's ``AbstractApiMessageSerde``)::

    frame_version  unsigned varint   always 1 (0 and anything else: refused)
    api_key        unsigned varint   the record type below
    version        unsigned varint   always 0 (every record type has only version 0)
    body           the record's struct, flexible (compact strings/bytes/arrays, and a tagged-field
                   section after every struct, nested ones and array elements included)

=======  ======================================  ===============================================
api key  record                                  body (version 0, flexible)
=======  ======================================  ===============================================
0        RemoteLogSegmentMetadataRecord          remote_log_segment_id {topic_id_partition {name
                                                 string, id uuid, partition int32}, id uuid},
                                                 start_offset int64, end_offset int64,
                                                 broker_id int32, max_timestamp_ms int64,
                                                 event_timestamp_ms int64, segment_leader_epochs
                                                 [leader_epoch int32, offset int64],
                                                 segment_size_in_bytes int32, custom_metadata
                                                 nullable bytes, remote_log_segment_state int8,
                                                 txn_index_empty bool (tagged, tag 0, default
                                                 false: KIP-1058, Kafka 4.0)
1        RemoteLogSegmentMetadataUpdateRecord    remote_log_segment_id (as above), broker_id
                                                 int32, event_timestamp_ms int64,
                                                 custom_metadata nullable bytes,
                                                 remote_log_segment_state int8
2        RemotePartitionDeleteMetadataRecord     topic_id_partition (as above), broker_id int32,
                                                 event_timestamp_ms int64,
                                                 remote_partition_delete_state int8
3        RemoteLogSegmentMetadataSnapshotRecord  segment_id uuid, start_offset int64, end_offset
                                                 int64, broker_id int32, max_timestamp_ms int64,
                                                 event_timestamp_ms int64, segment_leader_epochs
                                                 (as above), segment_size_in_bytes int32,
                                                 custom_metadata nullable bytes,
                                                 remote_log_segment_state int8, txn_index_empty
                                                 bool (tagged, tag 0)
=======  ======================================  ===============================================

Type 3 is not written to the topic: Kafka keeps it in its per-partition snapshot files. It is here
so the codec covers Kafka's serde whole.

Invariants: :func:`decode` of :func:`encode` gives back an equal event; encoding is deterministic
(the same event always gives the same bytes: the topic-based manager matches its own writes by
their bytes); an unknown tagged field is skipped on decode; an unknown api key, another frame or
body version, trailing bytes or a truncated body raise :class:`DecodeError`.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from zurau.protocol.codec import compile_struct
from zurau.protocol.primitives import DecodeError, read_uvarint, write_uvarint
from zurau.protocol.schema import BOOL, BYTES, INT8, INT32, INT64, NULL, STRING, UUID, Array, F, Field, Struct
from zurau.storage.remote.remote_log_segment import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from zurau.types import TopicIdPartition

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"

FRAME_VERSION = 1
RECORD_VERSION = 0

SEGMENT_METADATA = 0
SEGMENT_METADATA_UPDATE = 1
PARTITION_DELETE_METADATA = 2
SEGMENT_METADATA_SNAPSHOT = 3

_TOPIC_ID_PARTITION = Struct(
    F("name", STRING),
    F("id", UUID),
    F("partition", INT32),
)
_SEGMENT_ID = Struct(
    F("topic_id_partition", _TOPIC_ID_PARTITION),
    F("id", UUID),
)
_LEADER_EPOCH = Struct(
    F("leader_epoch", INT32),
    F("offset", INT64),
)
_TXN_INDEX_EMPTY = F("txn_index_empty", BOOL, tag=0, tagged="0+", default=False)

SEGMENT_METADATA_FIELDS: tuple[Field, ...] = (
    F("remote_log_segment_id", _SEGMENT_ID),
    F("start_offset", INT64),
    F("end_offset", INT64),
    F("broker_id", INT32),
    F("max_timestamp_ms", INT64),
    F("event_timestamp_ms", INT64),
    F("segment_leader_epochs", Array(_LEADER_EPOCH)),
    F("segment_size_in_bytes", INT32),
    F("custom_metadata", BYTES, nullable="0+", default=NULL),
    F("remote_log_segment_state", INT8),
    _TXN_INDEX_EMPTY,
)
SEGMENT_METADATA_UPDATE_FIELDS: tuple[Field, ...] = (
    F("remote_log_segment_id", _SEGMENT_ID),
    F("broker_id", INT32),
    F("event_timestamp_ms", INT64),
    F("custom_metadata", BYTES, nullable="0+", default=NULL),
    F("remote_log_segment_state", INT8),
)
PARTITION_DELETE_FIELDS: tuple[Field, ...] = (
    F("topic_id_partition", _TOPIC_ID_PARTITION),
    F("broker_id", INT32),
    F("event_timestamp_ms", INT64),
    F("remote_partition_delete_state", INT8),
)
SEGMENT_METADATA_SNAPSHOT_FIELDS: tuple[Field, ...] = (
    F("segment_id", UUID),
    F("start_offset", INT64),
    F("end_offset", INT64),
    F("broker_id", INT32),
    F("max_timestamp_ms", INT64),
    F("event_timestamp_ms", INT64),
    F("segment_leader_epochs", Array(_LEADER_EPOCH)),
    F("segment_size_in_bytes", INT32),
    F("custom_metadata", BYTES, nullable="0+", default=NULL),
    F("remote_log_segment_state", INT8),
    _TXN_INDEX_EMPTY,
)

_SCHEMAS: dict[int, tuple[str, tuple[Field, ...]]] = {
    SEGMENT_METADATA: ("RemoteLogSegmentMetadataRecord", SEGMENT_METADATA_FIELDS),
    SEGMENT_METADATA_UPDATE: ("RemoteLogSegmentMetadataUpdateRecord", SEGMENT_METADATA_UPDATE_FIELDS),
    PARTITION_DELETE_METADATA: ("RemotePartitionDeleteMetadataRecord", PARTITION_DELETE_FIELDS),
    SEGMENT_METADATA_SNAPSHOT: ("RemoteLogSegmentMetadataSnapshotRecord", SEGMENT_METADATA_SNAPSHOT_FIELDS),
}


# ---------------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataUpdate:
    """A state change of a known upload (Kafka's ``RemoteLogSegmentMetadataUpdate``); the offsets,
    sizes and epochs stay those of the segment's :class:`RemoteLogSegmentMetadata` event.
    ``custom_metadata`` None leaves the segment's custom metadata as it was."""

    segment_id: RemoteLogSegmentId
    event_timestamp_ms: int
    custom_metadata: bytes | None
    state: RemoteLogSegmentState
    broker_id: int

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.segment_id.topic_id_partition

    @classmethod
    def of(cls, metadata: RemoteLogSegmentMetadata) -> RemoteLogSegmentMetadataUpdate:
        """The update event that moves a segment to ``metadata``'s state."""
        return cls(
            metadata.segment_id,
            metadata.event_timestamp_ms,
            metadata.custom_metadata,
            metadata.state,
            metadata.broker_id,
        )


@dataclass(frozen=True, slots=True)
class RemotePartitionDeleteMetadata:
    """A deleted partition's remote-data deletion progress (Kafka's ``RemotePartitionDeleteMetadata``)."""

    topic_id_partition: TopicIdPartition
    state: RemotePartitionDeleteState
    event_timestamp_ms: int
    broker_id: int


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataSnapshot:
    """One segment as Kafka's snapshot files keep it (its partition is the file's)."""

    segment_id: uuid.UUID
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    state: RemoteLogSegmentState
    custom_metadata: bytes | None = None
    txn_index_empty: bool = False


RemoteLogMetadataEvent = (
    RemoteLogSegmentMetadata
    | RemoteLogSegmentMetadataUpdate
    | RemotePartitionDeleteMetadata
    | RemoteLogSegmentMetadataSnapshot
)


def event_topic_id_partition(event: RemoteLogMetadataEvent) -> TopicIdPartition | None:
    """The partition an event is about (None for a snapshot, which does not say)."""
    if isinstance(event, RemoteLogSegmentMetadataSnapshot):
        return None
    return event.topic_id_partition


# ---------------------------------------------------------------------------------- structs


def _tip_to_struct(tip: TopicIdPartition) -> dict[str, Any]:
    return {"name": tip.topic, "id": tip.topic_id, "partition": tip.partition}


def _tip_from_struct(s: dict[str, Any]) -> TopicIdPartition:
    return TopicIdPartition(s["id"], s["name"], s["partition"])


def _segment_id_to_struct(sid: RemoteLogSegmentId) -> dict[str, Any]:
    return {"topic_id_partition": _tip_to_struct(sid.topic_id_partition), "id": sid.id}


def _segment_id_from_struct(s: dict[str, Any]) -> RemoteLogSegmentId:
    return RemoteLogSegmentId(_tip_from_struct(s["topic_id_partition"]), s["id"])


def _epochs_to_struct(epochs: tuple[tuple[int, int], ...]) -> list[dict[str, int]]:
    return [{"leader_epoch": e, "offset": o} for e, o in epochs]


def _epochs_from_struct(items: list[dict[str, Any]]) -> tuple[tuple[int, int], ...]:
    return tuple((int(i["leader_epoch"]), int(i["offset"])) for i in items)


def _to_struct(event: RemoteLogMetadataEvent) -> tuple[int, dict[str, Any]]:
    if isinstance(event, RemoteLogSegmentMetadata):
        return SEGMENT_METADATA, {
            "remote_log_segment_id": _segment_id_to_struct(event.segment_id),
            "start_offset": event.start_offset,
            "end_offset": event.end_offset,
            "broker_id": event.broker_id,
            "max_timestamp_ms": event.max_timestamp_ms,
            "event_timestamp_ms": event.event_timestamp_ms,
            "segment_leader_epochs": _epochs_to_struct(event.segment_leader_epochs),
            "segment_size_in_bytes": event.segment_size_in_bytes,
            "custom_metadata": event.custom_metadata,
            "remote_log_segment_state": int(event.state),
            "txn_index_empty": event.txn_index_empty,
        }
    if isinstance(event, RemoteLogSegmentMetadataUpdate):
        return SEGMENT_METADATA_UPDATE, {
            "remote_log_segment_id": _segment_id_to_struct(event.segment_id),
            "broker_id": event.broker_id,
            "event_timestamp_ms": event.event_timestamp_ms,
            "custom_metadata": event.custom_metadata,
            "remote_log_segment_state": int(event.state),
        }
    if isinstance(event, RemotePartitionDeleteMetadata):
        return PARTITION_DELETE_METADATA, {
            "topic_id_partition": _tip_to_struct(event.topic_id_partition),
            "broker_id": event.broker_id,
            "event_timestamp_ms": event.event_timestamp_ms,
            "remote_partition_delete_state": int(event.state),
        }
    return SEGMENT_METADATA_SNAPSHOT, {
        "segment_id": event.segment_id,
        "start_offset": event.start_offset,
        "end_offset": event.end_offset,
        "broker_id": event.broker_id,
        "max_timestamp_ms": event.max_timestamp_ms,
        "event_timestamp_ms": event.event_timestamp_ms,
        "segment_leader_epochs": _epochs_to_struct(event.segment_leader_epochs),
        "segment_size_in_bytes": event.segment_size_in_bytes,
        "custom_metadata": event.custom_metadata,
        "remote_log_segment_state": int(event.state),
        "txn_index_empty": event.txn_index_empty,
    }


def _from_struct(api_key: int, v: dict[str, Any]) -> RemoteLogMetadataEvent:
    if api_key == SEGMENT_METADATA:
        return RemoteLogSegmentMetadata(
            segment_id=_segment_id_from_struct(v["remote_log_segment_id"]),
            start_offset=v["start_offset"],
            end_offset=v["end_offset"],
            max_timestamp_ms=v["max_timestamp_ms"],
            broker_id=v["broker_id"],
            event_timestamp_ms=v["event_timestamp_ms"],
            segment_size_in_bytes=v["segment_size_in_bytes"],
            segment_leader_epochs=_epochs_from_struct(v["segment_leader_epochs"]),
            state=RemoteLogSegmentState(v["remote_log_segment_state"]),
            custom_metadata=_opt_bytes(v["custom_metadata"]),
            txn_index_empty=bool(v["txn_index_empty"]),
        )
    if api_key == SEGMENT_METADATA_UPDATE:
        return RemoteLogSegmentMetadataUpdate(
            segment_id=_segment_id_from_struct(v["remote_log_segment_id"]),
            event_timestamp_ms=v["event_timestamp_ms"],
            custom_metadata=_opt_bytes(v["custom_metadata"]),
            state=RemoteLogSegmentState(v["remote_log_segment_state"]),
            broker_id=v["broker_id"],
        )
    if api_key == PARTITION_DELETE_METADATA:
        return RemotePartitionDeleteMetadata(
            topic_id_partition=_tip_from_struct(v["topic_id_partition"]),
            state=RemotePartitionDeleteState(v["remote_partition_delete_state"]),
            event_timestamp_ms=v["event_timestamp_ms"],
            broker_id=v["broker_id"],
        )
    return RemoteLogSegmentMetadataSnapshot(
        segment_id=v["segment_id"],
        start_offset=v["start_offset"],
        end_offset=v["end_offset"],
        max_timestamp_ms=v["max_timestamp_ms"],
        broker_id=v["broker_id"],
        event_timestamp_ms=v["event_timestamp_ms"],
        segment_size_in_bytes=v["segment_size_in_bytes"],
        segment_leader_epochs=_epochs_from_struct(v["segment_leader_epochs"]),
        state=RemoteLogSegmentState(v["remote_log_segment_state"]),
        custom_metadata=_opt_bytes(v["custom_metadata"]),
        txn_index_empty=bool(v["txn_index_empty"]),
    )


def _opt_bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


@cache
def _codec(api_key: int) -> Any:
    name, fields = _SCHEMAS[api_key]
    return compile_struct(fields, RECORD_VERSION, True, name)


# ---------------------------------------------------------------------------------- codec


def api_key_of(event: RemoteLogMetadataEvent) -> int:
    """The record type (api key) ``event`` is written as."""
    return _to_struct(event)[0]


def encode(event: RemoteLogMetadataEvent) -> bytes:
    """The record value of ``event``: the frame, then the body (see the module docstring)."""
    api_key, body = _to_struct(event)
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, api_key)
    write_uvarint(out, RECORD_VERSION)
    _codec(api_key)[1](out, body, [])
    return bytes(out)


def decode(value: bytes | memoryview) -> RemoteLogMetadataEvent:
    """The event of one record value; DecodeError when it is not one (see the module docstring)."""
    mv = memoryview(value)
    try:
        frame, pos = read_uvarint(mv, 0)
        if frame != FRAME_VERSION:
            raise DecodeError(
                f"remote log metadata record has frame version {frame}, only {FRAME_VERSION} is known"
            )
        api_key, pos = read_uvarint(mv, pos)
        version, pos = read_uvarint(mv, pos)
        if api_key not in _SCHEMAS:
            raise DecodeError(f"unknown remote log metadata record type {api_key}")
        if version != RECORD_VERSION:
            raise DecodeError(f"remote log metadata record type {api_key} has no version {version}")
        body, pos = _codec(api_key)[0](mv, pos)
        if pos != len(mv):
            raise DecodeError(
                f"remote log metadata record of type {api_key} has {len(mv) - pos} trailing bytes"
            )
        return _from_struct(api_key, body)
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, KeyError, TypeError, struct.error) as e:
        # a truncated body, an unknown state id, offsets the data model refuses
        raise DecodeError(f"malformed remote log metadata record: {e}") from None


__all__ = [
    "FRAME_VERSION",
    "PARTITION_DELETE_METADATA",
    "RECORD_VERSION",
    "REMOTE_LOG_METADATA_TOPIC",
    "SEGMENT_METADATA",
    "SEGMENT_METADATA_SNAPSHOT",
    "SEGMENT_METADATA_UPDATE",
    "RemoteLogMetadataEvent",
    "RemoteLogSegmentMetadataSnapshot",
    "RemoteLogSegmentMetadataUpdate",
    "RemotePartitionDeleteMetadata",
    "api_key_of",
    "decode",
    "encode",
    "event_topic_id_partition",
]
