"""Transaction control records: the COMMIT/ABORT markers that end a transaction in a partition.

A marker is a batch with the transactional (0x10) and control (0x20) attribute bits set, the
transaction's producer id and epoch, base_sequence -1, and exactly one record whose (big-endian)::

    key   = version int16 (0) + type int16 (0 ABORT, 1 COMMIT)
    value = version int16 (0) + coordinator_epoch int32

Other control types (2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, ... used by KRaft) share the key layout.
Like Java's ``ControlRecordType.parseTypeId`` and ``EndTransactionMarker.deserializeValue``, parsing
accepts a higher version than 0 and ignores trailing bytes, but rejects a negative version or a
short field.
"""

from __future__ import annotations

import struct

from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.records.builder import build_batch

__all__ = [
    "ABORT",
    "COMMIT",
    "build_control_batch",
    "control_key",
    "control_value",
    "parse_control_key",
    "parse_control_record",
]

ABORT = 0
COMMIT = 1
_CURRENT_VERSION = 0

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def control_key(control_type: int) -> bytes:
    """The 4-byte key of a control record of ``control_type`` (version 0)."""
    return _KEY.pack(_CURRENT_VERSION, control_type)


def control_value(coordinator_epoch: int) -> bytes:
    """The 6-byte value of a COMMIT/ABORT marker (version 0)."""
    return _VALUE.pack(_CURRENT_VERSION, coordinator_epoch)


def build_control_batch(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    *,
    timestamp_ms: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """One uncompressed, transactional control batch holding a single COMMIT or ABORT marker."""
    record = (control_key(COMMIT if commit else ABORT), control_value(coordinator_epoch), (), timestamp_ms)
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def parse_control_key(key: bytes | None) -> int:
    """The control type in a control record key (0 ABORT, 1 COMMIT, 2+ other control records)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError("control record key is missing or shorter than 4 bytes")
    version, control_type = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"control record key has negative version {version}")
    return control_type


def parse_control_record(key: bytes | None, value: bytes | None) -> tuple[bool, int]:
    """``(is_commit, coordinator_epoch)`` of a COMMIT/ABORT marker record.

    CorruptRecordError if the key is not an ABORT/COMMIT key or the value is malformed.
    """
    control_type = parse_control_key(key)
    if control_type not in (ABORT, COMMIT):
        raise CorruptRecordError(f"control record type {control_type} is not a transaction marker")
    if value is None or len(value) < _VALUE.size:
        raise CorruptRecordError("transaction marker value is missing or shorter than 6 bytes")
    version, coordinator_epoch = _VALUE.unpack_from(value)
    if version < 0:
        raise CorruptRecordError(f"transaction marker value has negative version {version}")
    return control_type == COMMIT, coordinator_epoch
