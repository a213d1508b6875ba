"""The v2 RecordBatch header: parse, validate and patch without decoding records.

On-disk and on-wire layout of one batch (big-endian)::

    offset  size  field
    0       8     base_offset            (patched by the leader on append)
    8       4     batch_length           (bytes after this field: total size = batch_length + 12)
    12      4     partition_leader_epoch (patched by the leader on append)
    16      1     magic                  (always 2)
    17      4     crc                    (CRC-32C of bytes [21, end))
    21      2     attributes             (bits 0-2 compression, 3 timestamp type,
                                          4 transactional, 5 control, 6 delete-horizon)
    23      4     last_offset_delta
    27      8     base_timestamp
    35      8     max_timestamp
    43      8     producer_id
    51      2     producer_epoch
    53      4     base_sequence
    57      4     records_count
    61            records...

Invariant: the CRC covers neither base_offset nor partition_leader_epoch, so the leader can patch
both in place and a stored batch still verifies.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from crc32c import crc32c

from zurau.protocol.errors import CorruptRecordError, InvalidRecordError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length: bytes not counted by batch_length
CRC_START = 21
MAGIC_OFFSET = 16
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_LEN_AT_8 = struct.Struct(">qi")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class BatchHeader(NamedTuple):
    """The 61-byte header of one v2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch including base_offset and batch_length."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos``. Raises CorruptRecordError if short or not magic 2."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError("record batch header is truncated")
    h = BatchHeader._make(HEADER.unpack_from(buf, pos))
    if h.magic != 2:
        raise CorruptRecordError(f"unsupported record batch magic {h.magic} (only v2 is accepted)")
    return h


def peek_size(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Total size of the batch at ``pos`` from its first 12 bytes, or None if fewer are there."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return _LEN_AT_8.unpack_from(buf, pos)[1] + LOG_OVERHEAD


def verify_crc(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bool:
    end = pos + header.size
    return crc32c(memoryview(buf)[pos + CRC_START : end]) == header.crc


def validate_batches(buf: bytes | bytearray | memoryview) -> list[tuple[int, BatchHeader]]:
    """Validate a produced records payload and return ``(position, header)`` of every batch.

    Checks, per batch: whole header present, magic 2, ``batch_length`` within the payload and at
    least the header, CRC-32C, a non-negative record count consistent with ``last_offset_delta``.
    Raises CorruptRecordError (bad size, magic, CRC) or InvalidRecordError (inconsistent fields).
    An empty payload is invalid.
    """
    mv = memoryview(buf)
    n = len(mv)
    if n == 0:
        raise InvalidRecordError("empty record set")
    out: list[tuple[int, BatchHeader]] = []
    pos = 0
    while pos < n:
        h = read_header(mv, pos)
        size = h.size
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + size > n:
            raise CorruptRecordError(f"record batch at byte {pos} has invalid length {h.batch_length}")
        if crc32c(mv[pos + CRC_START : pos + size]) != h.crc:
            raise CorruptRecordError(f"record batch at byte {pos} failed its CRC-32C check")
        if h.records_count < 0 or h.last_offset_delta < 0:
            raise InvalidRecordError("record batch has a negative record count or offset delta")
        if not h.is_control and h.records_count == 0:
            raise InvalidRecordError("record batch holds no records")
        if h.records_count and h.last_offset_delta != h.records_count - 1 and h.compression == 0:
            # Uncompressed producer batches always have contiguous offset deltas.
            raise InvalidRecordError("record batch last_offset_delta does not match its record count")
        out.append((pos, h))
        pos += size
    return out


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` of each whole batch from ``pos``; stop at a partial tail."""
    n = len(buf)
    while n - pos >= HEADER_SIZE:
        h = BatchHeader._make(HEADER.unpack_from(buf, pos))
        if h.magic != 2 or h.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + h.size > n:
            return
        yield pos, h
        pos += h.size


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Patch base_offset in place (outside the CRC)."""
    _I64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Patch partition_leader_epoch in place (outside the CRC)."""
    _I32.pack_into(buf, pos + 12, epoch)
