"""KIP-932 share-group records of ``__consumer_offsets`` (Kafka 4.2's ShareGroup* records).

Keys (never flexible, struct version 0), by key version (Kafka's coordinator record type)::

    10  ShareGroupMemberMetadataKey           group_id, member_id
    11  ShareGroupMetadataKey                 group_id
    12  ShareGroupTargetAssignmentMetadataKey group_id
    13  ShareGroupTargetAssignmentMemberKey   group_id, member_id
    14  ShareGroupCurrentMemberAssignmentKey  group_id, member_id
    15  ShareGroupStatePartitionMetadataKey   group_id

Type 9 (ShareGroupPartitionMetadata, Kafka 4.0's early access) is gone since Kafka 4.1, whose
group metadata value carries a hash of the subscribed topics instead; Zurau neither writes nor
reads it. Values (value version 0, flexible):

* 10 ``rack_id``?, ``client_id``, ``client_host``, ``subscribed_topic_names`` [string].
* 11 ``epoch`` int32 (the group epoch), ``metadata_hash`` int64 (hash of the subscribed topics'
  names, ids and partition counts; a regular field here, unlike the consumer group's tagged one).
* 12 ``assignment_epoch`` int32: the group epoch the target assignment was computed for.
* 13 ``topic_partitions`` [{topic_id uuid, partitions [int32]}]: the member's target assignment.
* 14 ``member_epoch`` int32, ``previous_member_epoch`` int32, ``state`` int8 (always 0, STABLE:
  share members take their target at once), ``assigned_partitions`` [{topic_id, partitions}].
* 15 ``initializing_topics`` and ``initialized_topics`` [{topic_id, topic_name, partitions}],
  ``deleting_topics`` [{topic_id, topic_name}]: which share partitions have (or are getting)
  their state in the share coordinator; only initialized partitions are assigned.

Tombstones: fencing a member writes tombstones for 14, 13 and 10 (in that order) and a new group
epoch (11); deleting a group writes, per member, 14 then 13, then 12, per member 10, then 15
and 11 (Kafka's ``ShareGroup.createGroupTombstoneRecords``).

:data:`KEYS` and :data:`VALUES` have the shape of :mod:`.records`' dispatch tables
(``key version -> (key fields, struct version)`` and ``key version -> (value fields, valid value
versions, flexible value versions)``) and are registered there, so ``__consumer_offsets``'
reader and writer handle these records like the others; :func:`encode` and :func:`decode`
apply them on their own.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import TYPE_CHECKING, Any

from zurau.protocol.codec import compile_struct
from zurau.protocol.primitives import DecodeError
from zurau.protocol.schema import INT8, INT32, INT64, STRING, UUID, Array, F, Field, Struct

if TYPE_CHECKING:  # records.py registers KEYS/VALUES, so it imports this module
    from zurau.coordinator.group.records import CoordinatorRecord

SHARE_GROUP_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
SHARE_GROUP_STATE_PARTITION_METADATA = 15

GROUP_KEY = (F("group_id", STRING),)
MEMBER_KEY = (F("group_id", STRING), F("member_id", STRING))

TOPIC_PARTITIONS = Struct(F("topic_id", UUID), F("partitions", Array(INT32)))
TOPIC_PARTITIONS_INFO = Struct(F("topic_id", UUID), F("topic_name", STRING), F("partitions", Array(INT32)))
TOPIC_INFO = Struct(F("topic_id", UUID), F("topic_name", STRING))

MEMBER_METADATA_VALUE = (
    F("rack_id", STRING, nullable="0+"),
    F("client_id", STRING),
    F("client_host", STRING),
    F("subscribed_topic_names", Array(STRING)),
)
GROUP_METADATA_VALUE = (F("epoch", INT32), F("metadata_hash", INT64))
TARGET_ASSIGNMENT_METADATA_VALUE = (F("assignment_epoch", INT32),)
TARGET_ASSIGNMENT_MEMBER_VALUE = (F("topic_partitions", Array(TOPIC_PARTITIONS)),)
CURRENT_MEMBER_ASSIGNMENT_VALUE = (
    F("member_epoch", INT32),
    F("previous_member_epoch", INT32),
    F("state", INT8),
    F("assigned_partitions", Array(TOPIC_PARTITIONS)),
)
STATE_PARTITION_METADATA_VALUE = (
    F("initializing_topics", Array(TOPIC_PARTITIONS_INFO)),
    F("initialized_topics", Array(TOPIC_PARTITIONS_INFO)),
    F("deleting_topics", Array(TOPIC_INFO)),
)

KEYS: dict[int, tuple[tuple[Field, ...], int]] = {
    SHARE_GROUP_MEMBER_METADATA: (MEMBER_KEY, 0),
    SHARE_GROUP_METADATA: (GROUP_KEY, 0),
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: (GROUP_KEY, 0),
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: (MEMBER_KEY, 0),
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: (MEMBER_KEY, 0),
    SHARE_GROUP_STATE_PARTITION_METADATA: (GROUP_KEY, 0),
}
VALUES: dict[int, tuple[tuple[Field, ...], str, str]] = {
    SHARE_GROUP_MEMBER_METADATA: (MEMBER_METADATA_VALUE, "0", "0+"),
    SHARE_GROUP_METADATA: (GROUP_METADATA_VALUE, "0", "0+"),
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: (TARGET_ASSIGNMENT_METADATA_VALUE, "0", "0+"),
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: (TARGET_ASSIGNMENT_MEMBER_VALUE, "0", "0+"),
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: (CURRENT_MEMBER_ASSIGNMENT_VALUE, "0", "0+"),
    SHARE_GROUP_STATE_PARTITION_METADATA: (STATE_PARTITION_METADATA_VALUE, "0", "0+"),
}

_I16 = struct.Struct(">h")


@cache
def _key_codec(key_version: int) -> Any:
    fields, struct_version = KEYS[key_version]
    return compile_struct(fields, struct_version, False)


@cache
def _value_codec(key_version: int, value_version: int) -> Any:
    fields, _valid, _flexible = VALUES[key_version]
    if value_version != 0:
        raise DecodeError(f"record type {key_version} has no value version {value_version}")
    return compile_struct(fields, 0, True)


def encode(rec: CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The stored key and value (None: tombstone) of a share-group record."""
    out = bytearray(_I16.pack(rec.key_version))
    _key_codec(rec.key_version)[1](out, rec.key, [])
    if rec.value is None:
        return bytes(out), None
    val = bytearray(_I16.pack(rec.value_version))
    _value_codec(rec.key_version, rec.value_version)[1](val, rec.value, [])
    return bytes(out), bytes(val)


def decode(key: bytes | memoryview, value: bytes | memoryview | None) -> CoordinatorRecord | None:
    """A stored share-group record; None if the key is of another type. DecodeError if malformed."""
    from zurau.coordinator.group.records import CoordinatorRecord
    mv = memoryview(key)
    if len(mv) < 2:
        raise DecodeError("coordinator record key is shorter than its version")
    key_version = _I16.unpack_from(mv, 0)[0]
    if key_version not in KEYS:
        return None
    try:
        key_dict, _ = _key_codec(key_version)[0](mv, 2)
        if value is None:
            return CoordinatorRecord(key_version, key_dict)
        vmv = memoryview(value)
        value_version = _I16.unpack_from(vmv, 0)[0]
        value_dict, _ = _value_codec(key_version, value_version)[0](vmv, 2)
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, struct.error) as e:
        raise DecodeError(f"malformed coordinator record of type {key_version}: {e}") from None
    return CoordinatorRecord(key_version, key_dict, value_version, value_dict)
