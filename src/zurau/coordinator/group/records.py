"""Records of ``__consumer_offsets``: Kafka's key/value formats, and batches of them.

Every record's key and value start with an int16 *version*, followed by a struct in Kafka's
message-schema encoding (:mod:`zurau.protocol.schema`). The key version names the record type;
the value version the value's schema version. A null value is a tombstone: compaction (and our
loader, which keeps the latest record per key) deletes the key.

==========  ======================================  ==========================  =============
key version record type                             key fields                  value versions
==========  ======================================  ==========================  =============
0, 1        offset commit                           group, topic, partition     0-4 (write 3;
                                                                                1 with expiry)
2           classic group metadata                  group                       0-4 (write 3)
3           consumer group metadata (epoch)         group_id                    0
4           consumer group partition metadata       group_id                    0 (read only)
5           consumer group member metadata          group_id, member_id         0
6           consumer group target assignment epoch  group_id                    0
7           consumer group target assignment        group_id, member_id         0
8           consumer group current member assignmt  group_id, member_id         0
10-15       share group records (KIP-932)           group_id[, member_id]       0
==========  ======================================  ==========================  =============

Key structs are never flexible. Offset-commit and group-metadata values are flexible from v4;
KIP-848 values (3-8) are flexible in every version. The schema definitions live in
:mod:`zurau.coordinator.group.offset_commit_record`, :mod:`zurau.coordinator.group.group_metadata_record`
, :mod:`zurau.coordinator.group.consumer_group_records` and
:mod:`zurau.coordinator.group.share_group_records` (its ``KEYS``/``VALUES``); this module dispatches on the versions.
Tools that read ``__consumer_offsets`` with Kafka's formatters understand what Zurau writes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from zurau.coordinator.group import consumer_group_records as cg
from zurau.coordinator.group import group_metadata_record as gm
from zurau.coordinator.group import offset_commit_record as oc
from zurau.coordinator.group import share_group_records as sg
from zurau.protocol.codec import compile_struct
from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import parse_control_record
from zurau.protocol.records.record import decode_batch_records
from zurau.protocol.schema import Field

_I16 = struct.Struct(">h")

# key version -> (key fields, {value version: (value fields, flexible)}, version written)
_KEYS: dict[int, tuple[tuple[Field, ...], int]] = {
    0: (oc.KEY, 0),
    1: (oc.KEY, 0),
    2: (gm.KEY, 0),
    3: (cg.GROUP_KEY, 3),
    4: (cg.GROUP_KEY, 4),
    5: (cg.MEMBER_KEY, 5),
    6: (cg.GROUP_KEY, 6),
    7: (cg.MEMBER_KEY, 7),
    8: (cg.MEMBER_KEY, 8),
    **sg.KEYS,
}
_VALUES: dict[int, tuple[tuple[Field, ...], str, str]] = {
    # key version -> (value fields, valid value versions, flexible value versions)
    0: (oc.VALUE, "0-4", "4+"),
    1: (oc.VALUE, "0-4", "4+"),
    2: (gm.VALUE, "0-4", "4+"),
    3: (cg.GROUP_METADATA_VALUE, "0", "0+"),
    4: (cg.PARTITION_METADATA_VALUE, "0", "0+"),
    5: (cg.MEMBER_METADATA_VALUE, "0", "0+"),
    6: (cg.TARGET_ASSIGNMENT_METADATA_VALUE, "0", "0+"),
    7: (cg.TARGET_ASSIGNMENT_MEMBER_VALUE, "0", "0+"),
    8: (cg.CURRENT_MEMBER_ASSIGNMENT_VALUE, "0", "0+"),
    **sg.VALUES,
}

OFFSET_COMMIT = 1
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
SHARE_GROUP_RECORDS = frozenset(sg.KEYS)  # key versions 10-15


def _in(version: int, spec: str) -> bool:
    from zurau.protocol.schema import in_range, parse_versions

    return in_range(version, parse_versions(spec))


@cache
def _key_codec(key_version: int) -> Any:
    fields, struct_version = _KEYS[key_version]
    return compile_struct(fields, struct_version, False)


@cache
def _value_codec(key_version: int, value_version: int) -> Any:
    fields, valid, flexible = _VALUES[key_version]
    if not _in(value_version, valid):
        raise DecodeError(f"record type {key_version} has no value version {value_version}")
    return compile_struct(fields, value_version, _in(value_version, flexible))


@dataclass(frozen=True)
class CoordinatorRecord:
    """One record of ``__consumer_offsets``, decoded. ``value is None`` is a tombstone."""

    key_version: int
    key: dict[str, Any]
    value_version: int = 0
    value: dict[str, Any] | None = None

    @property
    def group_id(self) -> str:
        k = self.key
        return k["group"] if self.key_version <= GROUP_METADATA else k["group_id"]

    def key_bytes(self) -> bytes:
        _dec, enc = _key_codec(self.key_version)
        out = bytearray(_I16.pack(self.key_version))
        enc(out, self.key, [])
        return bytes(out)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        _dec, enc = _value_codec(self.key_version, self.value_version)
        out = bytearray(_I16.pack(self.value_version))
        enc(out, self.value, [])
        return bytes(out)


def decode_record(key: bytes | memoryview, value: bytes | memoryview | None) -> CoordinatorRecord | None:
    """Decode one stored record; None for a record type this broker does not know (skipped).

    Raises DecodeError for a malformed key or value of a known type.
    """
    mv = memoryview(key)
    if len(mv) < 2:
        raise DecodeError("coordinator record key is shorter than its version")
    key_version = _I16.unpack_from(mv, 0)[0]
    if key_version not in _KEYS:
        return None
    try:
        key_dict, _pos = _key_codec(key_version)[0](mv, 2)
        if value is None:
            return CoordinatorRecord(key_version, key_dict)
        vmv = memoryview(value)
        value_version = _I16.unpack_from(vmv, 0)[0]
        value_dict, _pos = _value_codec(key_version, value_version)[0](vmv, 2)
    except DecodeError:
        raise
    except (IndexError, ValueError, OverflowError, struct.error) as e:
        raise DecodeError(f"malformed coordinator record of type {key_version}: {e}") from None
    return CoordinatorRecord(key_version, key_dict, value_version, value_dict)


def build_records_batch(
    records: list[CoordinatorRecord],
    timestamp_ms: int,
    compression: int = 0,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> bytes:
    """One v2 batch (CreateTime ``timestamp_ms``) holding ``records`` in order.

    With a ``producer_id`` the batch is transactional (TxnOffsetCommit): its offsets become
    committed only when the producer's COMMIT marker follows in the same partition.
    """
    return build_batch(
        [NewRecord(r.key_bytes(), r.value_bytes(), (), timestamp_ms) for r in records],
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch if producer_id >= 0 else -1,
        is_transactional=producer_id >= 0,
    )


@dataclass(frozen=True)
class TransactionalRecord:
    """A record of a transactional batch (a TxnOffsetCommit): pending until its producer's marker."""

    producer_id: int
    record: CoordinatorRecord


@dataclass(frozen=True)
class TxnMarker:
    """A COMMIT or ABORT marker of ``producer_id`` in ``__consumer_offsets`` partition ``partition``
    (-1 until the reader, who knows the partition, sets it)."""

    producer_id: int
    commit: bool
    partition: int = -1


LogEntry = CoordinatorRecord | TransactionalRecord | TxnMarker


def iter_log_batches(
    data: bytes | memoryview,
) -> Iterator[tuple[int, list[tuple[int, LogEntry | None]]]]:
    """``(next_offset, [(offset, entry), ...])`` for every whole batch in ``data``.

    Records of plain batches are :class:`CoordinatorRecord` s, those of transactional batches are
    wrapped in :class:`TransactionalRecord` (committed only by a later COMMIT marker of the same
    producer), and a control batch holding a COMMIT/ABORT marker yields one :class:`TxnMarker`
    (other control records yield nothing). ``entry`` is None for a record type this broker does
    not know. ``next_offset`` is the offset after the batch, so a reader resumes there.
    """
    mv = memoryview(data)
    for pos, h in iter_batches(mv):
        out: list[tuple[int, LogEntry | None]] = []
        recs = decode_batch_records(mv[pos : pos + h.size])
        if h.is_control:
            for rec in recs[:1]:
                try:
                    commit, _coordinator_epoch = parse_control_record(rec.key, rec.value)
                except CorruptRecordError:
                    continue  # not a transaction marker (e.g. a KRaft control record)
                out.append((rec.offset, TxnMarker(h.producer_id, commit)))
            yield h.next_offset, out
            continue
        for rec in recs:
            if rec.key is not None:
                r = decode_record(rec.key, rec.value)
                if h.is_transactional and r is not None:
                    out.append((rec.offset, TransactionalRecord(h.producer_id, r)))
                else:
                    out.append((rec.offset, r))
        yield h.next_offset, out
