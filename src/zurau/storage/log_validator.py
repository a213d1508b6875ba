"""Validation and offset assignment of appended batches (Kafka's ``LogValidator``).

Two kinds of append reach a log:

* **leader appends** (:func:`validate_and_assign_offsets`): batches from a producer or a
  coordinator. Checked in Kafka's order: offset range consistent with the record count
  (InvalidRecordError), whole payload <= ``segment.bytes`` (RecordListTooLargeError), each batch
  <= ``max.message.bytes`` (MessageTooLargeError), and with ``message.timestamp.type=CreateTime``
  the batch's base and max timestamps within ``message.timestamp.before/after.max.ms`` of now
  (InvalidTimestampError; per batch, never per record); on a compacted topic
  (``cleanup.policy`` with ``compact``) every record must have a key (RecordValidationError,
  INVALID_RECORD, naming the records). Then offsets are assigned from the log
  end offset and patched into the buffer in place together with the leader epoch; with
  ``LogAppendTime`` the timestamp-type bit and ``max_timestamp = now`` are patched too and the
  batch's CRC is recomputed (those fields lie inside the CRC).
* **follower appends** (:func:`validate_replicated`): batches copied from the leader, offsets and
  leader epochs already assigned. Checked for integrity (magic, lengths, CRC-32C), offsets
  strictly increasing and starting at or after the log end offset (gaps are allowed: compacted
  logs), whole payload <= ``segment.bytes``. Nothing is patched: the follower stores the leader's
  bytes unchanged. Sizes and timestamps are not re-checked (the leader accepted them).

Nothing here decodes records, except :func:`convert_compression` for a topic whose
``compression.type`` forces a codec other than the producer's and :func:`check_keys_for_compaction`
for a compacted topic. CRC-32C of client batches is
checked earlier by ``protocol.records.batch.validate_batches``; producer epochs and sequences are
checked by ``producer_state`` (they need the partition's state).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from zurau.protocol.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    RecordListTooLargeError,
)
from zurau.protocol.records.batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    validate_batches,
)
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.log_config import LogConfig

if TYPE_CHECKING:
    # Error classes are built at runtime (protocol.errors._define); mypy sees them as KafkaError.
    from zurau.protocol.errors import KafkaError as _InvalidRecordBase
else:
    _InvalidRecordBase = InvalidRecordError

CODEC_BY_NAME = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

# Patch positions inside a batch (see protocol.records.batch for the layout).
_BASE_OFFSET = struct.Struct(">q")  # at 0
_LEADER_EPOCH = struct.Struct(">i")  # at 12
_ATTRIBUTES = struct.Struct(">h")  # at 21
_MAX_TIMESTAMP = struct.Struct(">q")  # at 35
_CRC = struct.Struct(">I")  # at 17
_LEADER_EPOCH_POS = 12
_CRC_POS = 17
_ATTRIBUTES_POS = 21
_MAX_TIMESTAMP_POS = 35
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

Batches = list[tuple[int, BatchHeader]]


class ValidatedAppend(NamedTuple):
    """What an append will write: batch headers as stored and the offsets they cover."""

    batches: Batches  # (position in the buffer, header as stored: final offsets, epoch, timestamps)
    first_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    log_append_time_ms: int  # -1 unless message.timestamp.type=LogAppendTime


# ---------------------------------------------------------------------------------- leader appends


def validate_and_assign_offsets(
    buf: bytearray | memoryview,
    batches: Batches,
    *,
    config: LogConfig,
    first_offset: int,
    leader_epoch: int,
    now_ms: int,
    where: str,
) -> ValidatedAppend:
    """The leader's path: check the batches, then give them consecutive offsets from
    ``first_offset`` and stamp ``leader_epoch``.

    Checks in Kafka's order (see the module docstring); ``where`` names the partition in error
    messages. Patches ``buf`` in place (base offset and partition leader epoch lie outside the
    CRC; for LogAppendTime also attributes, max timestamp and the CRC) and returns the headers
    as stored. One pass per check over the batch headers, never over records.
    """
    for _pos, h in batches:
        if h.records_count != h.last_offset_delta + 1:
            raise InvalidRecordError(
                f"batch offset range of {h.last_offset_delta + 1} does not match its {h.records_count} records"
            )
    total_size = len(buf)
    if total_size > config.segment_bytes:
        raise RecordListTooLargeError(
            f"record set of {total_size} bytes exceeds segment.bytes {config.segment_bytes} of {where}"
        )
    max_message_bytes = config.max_message_bytes
    for _pos, h in batches:
        if h.size > max_message_bytes:
            raise MessageTooLargeError(f"batch of {h.size} bytes exceeds max.message.bytes {max_message_bytes}")
    log_append_time = config.log_append_time
    if not log_append_time:
        lower = now_ms - config.message_timestamp_before_max_ms
        upper = now_ms + config.message_timestamp_after_max_ms
        for _pos, h in batches:
            if (h.base_timestamp >= 0 and h.base_timestamp < lower) or h.max_timestamp > upper:
                bad = h.base_timestamp if h.base_timestamp < lower else h.max_timestamp
                raise InvalidTimestampError(f"timestamp {bad} is out of range [{lower}, {upper}] for {where}")

    if config.compact_enabled:
        check_keys_for_compaction(buf, batches, where)

    # Offset assignment. Headers are rebuilt with tuple.__new__ (NamedTuple._replace costs ~1 us).
    next_offset = first_offset
    final: Batches = []
    record_count = 0
    max_ts = -1
    for pos, h in batches:
        if log_append_time:
            # (base_offset, batch_length, epoch, magic, crc, attributes, last_offset_delta,
            #  base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, count)
            attributes = h.attributes | TIMESTAMP_TYPE_MASK
            _ATTRIBUTES.pack_into(buf, pos + _ATTRIBUTES_POS, attributes)
            _MAX_TIMESTAMP.pack_into(buf, pos + _MAX_TIMESTAMP_POS, now_ms)
            crc = crc32c(memoryview(buf)[pos + CRC_START : pos + h.size])
            _CRC.pack_into(buf, pos + _CRC_POS, crc)
            h = tuple.__new__(
                BatchHeader, (next_offset, h[1], leader_epoch, h[3], crc, attributes, h[6], h[7], now_ms) + h[9:]
            )
        else:
            h = tuple.__new__(BatchHeader, (next_offset, h[1], leader_epoch) + h[3:])
        _BASE_OFFSET.pack_into(buf, pos, next_offset)
        _LEADER_EPOCH.pack_into(buf, pos + _LEADER_EPOCH_POS, leader_epoch)
        final.append((pos, h))
        next_offset += h[6] + 1  # last_offset_delta
        record_count += h[12]  # records_count
        if h[8] > max_ts:  # max_timestamp
            max_ts = h[8]
    return tuple.__new__(
        ValidatedAppend,
        (final, first_offset, next_offset - 1, record_count, max_ts, now_ms if log_append_time else -1),
    )


class RecordValidationError(_InvalidRecordBase):
    """INVALID_RECORD naming the offending records (Kafka's ``RecordValidationException``):
    ``record_errors`` are ``(index of the record in its batch, message)``, which Produce v8+
    returns as ``record_errors``."""

    def __init__(self, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.record_errors = record_errors


def check_keys_for_compaction(buf: bytes | bytearray | memoryview, batches: Batches, where: str) -> None:
    """A compacted topic accepts only records with a key (Kafka's ``LogValidator.validateKey``):
    the cleaner keeps the latest record *per key*, a keyless one would be dropped at its first
    pass. Decodes (decompressing if need be) every non-control batch; raises
    RecordValidationError (INVALID_RECORD) naming each keyless record."""
    mv = memoryview(buf)
    errors: list[tuple[int, str]] = []
    message = f"Compacted topic cannot accept message without key in topic partition {where}."
    for pos, h in batches:
        if h.is_control:
            continue
        for i, r in enumerate(decode_batch_records(mv[pos : pos + h.size], check_crc=False)):
            if r.key is None:
                errors.append((i, message))
    if errors:
        raise RecordValidationError(message, errors)


# -------------------------------------------------------------------------------- follower appends


def validate_replicated(
    buf: bytes | bytearray | memoryview,
    *,
    config: LogConfig,
    log_end_offset: int,
    where: str,
    batches: Batches | None = None,
) -> ValidatedAppend:
    """The follower's path: check batches copied from the leader and keep their offsets.

    Raises CorruptRecordError for a torn or corrupt batch, InvalidRecordError for offsets that
    go backwards or start below ``log_end_offset``, RecordListTooLargeError for a payload larger
    than ``segment.bytes``. ``batches`` may be given when the caller already parsed them (the CRC
    is then not checked again).
    """
    if batches is None:
        batches = parse_replicated(buf)
    if not batches:
        raise InvalidRecordError("empty record set")
    if len(buf) > config.segment_bytes:
        raise RecordListTooLargeError(
            f"record set of {len(buf)} bytes exceeds segment.bytes {config.segment_bytes} of {where}"
        )
    expected = log_end_offset
    record_count = 0
    max_ts = -1
    for _pos, h in batches:
        if h.base_offset < expected:
            raise InvalidRecordError(
                f"replicated batch at offset {h.base_offset} is below the next offset {expected} of {where}"
            )
        expected = h.base_offset + h.last_offset_delta + 1
        record_count += h.records_count
        if h.max_timestamp > max_ts:
            max_ts = h.max_timestamp
    return ValidatedAppend(batches, batches[0][1].base_offset, expected - 1, record_count, max_ts, -1)


def parse_replicated(buf: bytes | bytearray | memoryview) -> Batches:
    """``(position, header)`` of every batch of a replicated payload, checking magic, lengths
    and CRC-32C (not the record count: compacted batches have gaps between offsets)."""
    mv = memoryview(buf)
    n = len(mv)
    out: Batches = []
    pos = 0
    while pos < n:
        if n - pos < HEADER_SIZE:
            raise CorruptRecordError(f"record batch header at byte {pos} is truncated")
        h = BatchHeader._make(HEADER.unpack_from(mv, pos))
        if h.magic != 2:
            raise CorruptRecordError(f"unsupported record batch magic {h.magic} (only v2 is accepted)")
        size = h.batch_length + LOG_OVERHEAD
        if h.batch_length < _MIN_BATCH_LENGTH or pos + size > n:
            raise CorruptRecordError(f"record batch at byte {pos} has invalid length {h.batch_length}")
        if crc32c(mv[pos + CRC_START : pos + size]) != h.crc:
            raise CorruptRecordError(f"record batch at byte {pos} failed its CRC-32C check")
        if h.last_offset_delta < 0 or h.records_count < 0:
            raise InvalidRecordError("record batch has a negative record count or offset delta")
        out.append((pos, h))
        pos += size
    return out


# ------------------------------------------------------------------------ compression conversion


def target_codec(compression_type: str) -> int | None:
    """The codec a topic's ``compression.type`` forces, or None for ``producer``."""
    return CODEC_BY_NAME.get(compression_type)


def needs_conversion(batches: Batches, codec: int | None) -> bool:
    return codec is not None and any(h.compression != codec and not h.is_control for _p, h in batches)


def convert_compression(
    buf: bytes | bytearray | memoryview, batches: Batches, codec: int, level: int | None = None
) -> tuple[bytearray, Batches]:
    """Rebuild every non-control batch whose codec differs from ``codec`` (compressed at
    ``level``, the topic's ``compression.<codec>.level``); revalidate the result.

    Everything that identifies a batch is kept: producer id, epoch, base sequence, transactional
    bit, timestamp type, record timestamps, keys, values and headers; offset deltas stay
    contiguous from 0 as producers write them. Control batches are never rewritten; batches
    already in ``codec`` are copied unchanged (no decode).
    """
    mv = memoryview(buf)
    out = bytearray()
    for pos, h in batches:
        whole = mv[pos : pos + h.size]
        if h.is_control or h.compression == codec:
            out += whole
            continue
        records = decode_batch_records(whole)
        out += build_batch(
            [NewRecord(r.key, r.value, r.headers, r.timestamp) for r in records],
            compression=codec,
            compression_level=level,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            is_transactional=h.is_transactional,
            timestamp_type=h.timestamp_type,
        )
    return out, validate_batches(out)
