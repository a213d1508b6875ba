"""Build v2 record batches (for tests, tools and the broker's own coordinators).

The output is one complete batch: the 61-byte header laid out in
:mod:`zurau.protocol.records.batch` followed by the records section of
:mod:`zurau.protocol.records.record`, compressed as one block when ``compression`` is not 0.
Records get offset deltas 0, 1, 2, ...; ``base_timestamp`` is the first record's timestamp and
``max_timestamp`` the largest one (as Java's ``MemoryRecordsBuilder`` does). The CRC-32C covers
bytes 21 to the end, so ``base_offset`` and ``partition_leader_epoch`` can be patched afterwards.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from crc32c import crc32c

from zurau.protocol.records import batch as _batch
from zurau.protocol.records.compression import compress
from zurau.protocol.records.record import Buffer, encode_record

__all__ = ["NO_TIMESTAMP", "NewRecord", "build_batch"]

NO_TIMESTAMP = -1
_CRC = struct.Struct(">I")
_CRC_OFFSET = _batch.CRC_START - 4

HeaderInput = tuple[str | bytes, Buffer | None]


class NewRecord(NamedTuple):
    """A record to write. Plain ``(key, value, headers, timestamp_ms)`` tuples work the same way.

    ``timestamp_ms`` defaults to NO_TIMESTAMP (-1), which Kafka stores as-is.
    """

    key: Buffer | None
    value: Buffer | None
    headers: Sequence[HeaderInput] = ()
    timestamp_ms: int = NO_TIMESTAMP


RecordInput = NewRecord | tuple[Buffer | None, Buffer | None, Sequence[HeaderInput], int]


def build_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    timestamp_type: int = 0,
    compression_level: int | None = None,
) -> bytes:
    """Return one v2 batch holding ``records`` (at least one), with a valid CRC-32C.

    ``compression`` is the codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; anything else raises
    UnsupportedCompressionTypeError); ``timestamp_type`` 0 is CreateTime, 1 LogAppendTime (the
    caller then gives every record the append time). Attributes are ``compression |
    timestamp_type << 3 | 0x10 if is_transactional | 0x20 if is_control``. ValueError for an
    empty record list, a bad ``timestamp_type`` or a field out of range.
    """
    if timestamp_type not in (0, 1):
        raise ValueError(f"timestamp_type must be 0 or 1, not {timestamp_type}")
    section = bytearray()
    count = 0
    base_ts = max_ts = NO_TIMESTAMP
    for key, value, headers, ts in records:
        if count == 0:
            base_ts = max_ts = ts
        elif ts > max_ts:
            max_ts = ts
        section += encode_record(count, ts - base_ts, key, value, headers)
        count += 1
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    body: Buffer = compress(compression, section, level=compression_level) if compression else section
    attributes = compression | (timestamp_type << 3)
    if is_transactional:
        attributes |= _batch.TRANSACTIONAL_MASK
    if is_control:
        attributes |= _batch.CONTROL_MASK
    out = bytearray(_batch.HEADER_SIZE)
    try:
        _batch.HEADER.pack_into(
            out,
            0,
            base_offset,
            _batch.HEADER_SIZE - _batch.LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            2,  # magic
            0,  # crc, filled in below
            attributes,
            count - 1,  # last_offset_delta
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    except struct.error as e:  # a field does not fit its width
        raise ValueError(f"record batch field out of range: {e}") from None
    out += body
    _CRC.pack_into(out, _CRC_OFFSET, crc32c(memoryview(out)[_batch.CRC_START :]))
    return bytes(out)
