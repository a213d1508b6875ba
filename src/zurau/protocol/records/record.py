"""v2 records (the entries inside a RecordBatch) and Kafka's zigzag varints.

Varints
-------
``varint`` is a signed 32-bit and ``varlong`` a signed 64-bit integer, zigzag-mapped to an unsigned
value (``(n << 1) ^ (n >> 31|63)``: 0 -> 0, -1 -> 1, 1 -> 2, ...) and written little-endian base-128,
seven bits per byte, high bit set on every byte but the last. A varint takes 1-5 bytes, a varlong
1-10. Decoders reject encodings longer than that, as Java's ``ByteUtils.readVarint`` does.

Record layout
-------------
After the 61-byte batch header (see :mod:`zurau.protocol.records.batch`) come ``records_count``
records, possibly compressed as one block, each::

    length          varint    bytes of the record after this field
    attributes      int8      unused, 0
    timestamp_delta varlong   timestamp - batch base_timestamp
    offset_delta    varint    offset - batch base_offset
    key_length      varint    -1 for a null key
    key             bytes
    value_length    varint    -1 for a null value
    value           bytes
    header_count    varint
    headers         header_count times:
        key_length    varint  (>= 0)
        key           UTF-8 (decoded with ``surrogateescape``: invalid bytes, which Java would
                      replace with U+FFFD, are kept and re-encode to the same bytes)
        value_length  varint  -1 for a null value
        value         bytes
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

from crc32c import crc32c

from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.records import batch as _batch
from zurau.protocol.records.compression import DEFAULT_MAX_OUTPUT, decompress

__all__ = [
    "Header",
    "Record",
    "encode_varint",
    "encode_varlong",
    "decode_varint",
    "decode_varlong",
    "varint_size",
    "encode_record",
    "decode_records",
    "decode_batch_records",
]

Header = tuple[str, bytes | None]
Buffer = bytes | bytearray | memoryview

_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
# A record needs at least: length, attributes, timestamp delta, offset delta, key, value, headers.
_MIN_RECORD_SIZE = 7

_SINGLE_BYTE = [struct.pack("B", i) for i in range(128)]


class Record(NamedTuple):
    """One decoded record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


# --- varints ------------------------------------------------------------------------------------


def _uvarint(z: int) -> bytes:
    if z < 0x80:
        return _SINGLE_BYTE[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zigzag varint of a signed 32-bit value (1-5 bytes). ValueError outside int32."""
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"varint {value} is outside the int32 range")
    return _uvarint(((value << 1) ^ (value >> 31)) & _U32)


def encode_varlong(value: int) -> bytes:
    """Zigzag varint of a signed 64-bit value (1-10 bytes). ValueError outside int64."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"varlong {value} is outside the int64 range")
    return _uvarint(((value << 1) ^ (value >> 63)) & _U64)


def varint_size(value: int) -> int:
    """Encoded size in bytes of ``value`` as a zigzag varint/varlong."""
    z = (value << 1) ^ (value >> 63)
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def _read_uvarint(buf: Buffer, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    result = 0
    shift = 0
    end = pos + max_bytes
    try:
        while pos < end:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
    except IndexError:
        raise CorruptRecordError(f"{what} is truncated") from None
    raise CorruptRecordError(f"{what} is longer than {max_bytes} bytes")


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag varint at ``pos``; return ``(value, next_pos)``. CorruptRecordError if bad."""
    b = buf[pos] if pos < len(buf) else -1
    if 0 <= b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    z, pos = _read_uvarint(buf, pos, 5, "varint")
    z &= _U32
    return (z >> 1) ^ -(z & 1), pos


def decode_varlong(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag varlong at ``pos``; return ``(value, next_pos)``. CorruptRecordError if bad."""
    b = buf[pos] if pos < len(buf) else -1
    if 0 <= b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    z, pos = _read_uvarint(buf, pos, 10, "varlong")
    z &= _U64
    return (z >> 1) ^ -(z & 1), pos


# --- records ------------------------------------------------------------------------------------


def _encode_bytes(out: bytearray, data: Buffer | None) -> None:
    if data is None:
        out += b"\x01"  # zigzag(-1)
    else:
        out += encode_varint(len(data))
        out += data


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: Buffer | None,
    value: Buffer | None,
    headers: Sequence[tuple[str | bytes, Buffer | None]] = (),
) -> bytes:
    """Encode one record, length prefix included (layout in the module docstring).

    Header keys may be ``str`` (UTF-8 encoded; lone surrogates from a ``surrogateescape`` decode map
    back to their original bytes) or already-encoded ``bytes``.
    """
    body = bytearray(b"\x00")  # attributes
    body += encode_varlong(timestamp_delta)
    body += encode_varint(offset_delta)
    _encode_bytes(body, key)
    _encode_bytes(body, value)
    body += encode_varint(len(headers))
    for hkey, hvalue in headers:
        _encode_bytes(body, hkey.encode("utf-8", "surrogateescape") if isinstance(hkey, str) else hkey)
        _encode_bytes(body, hvalue)
    return encode_varint(len(body)) + body


def _read_bytes(buf: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    b = buf[pos] if pos < end else 0x80
    if b < 0x80:
        n = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        n, pos = decode_varint(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise CorruptRecordError(f"record {what} has invalid length {n}")
    stop = pos + n
    if stop > end:
        raise CorruptRecordError(f"record {what} of {n} bytes overruns its record")
    return buf[pos:stop], stop


def decode_records(
    buf: bytes,
    count: int,
    *,
    base_offset: int = 0,
    base_timestamp: int = 0,
    log_append_time: int | None = None,
) -> list[Record]:
    """Decode exactly ``count`` records filling ``buf`` (an uncompressed records section).

    Offsets are ``base_offset + offset_delta``; timestamps are ``base_timestamp + timestamp_delta``,
    or ``log_append_time`` for every record when it is not None. Raises CorruptRecordError if a
    record is malformed, overruns its length or ``buf``, or bytes are left after ``count`` records.
    """
    n = len(buf)
    if count < 0 or count * _MIN_RECORD_SIZE > n:
        raise CorruptRecordError(f"{n} bytes cannot hold {count} records")
    out: list[Record] = []
    append = out.append
    new = tuple.__new__
    dvi = decode_varint
    pos = 0
    # Hot loop: single-byte varints (values -64..63) are decoded inline; an IndexError can only
    # come from reading past the end of ``buf`` and is reported as truncation.
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = dvi(buf, pos)
            end = pos + length
            if length < _MIN_RECORD_SIZE - 1 or end > n:
                raise CorruptRecordError(f"record length {length} is invalid at byte {pos}")
            b = buf[pos + 1]  # skip attributes
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = decode_varlong(buf, pos + 1)
            b = buf[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = dvi(buf, pos)
            key, pos = _read_bytes(buf, pos, end, "key")
            value, pos = _read_bytes(buf, pos, end, "value")
            b = buf[pos]
            if b == 0:
                headers: list[Header] = []
                pos += 1
            else:
                hcount, pos = dvi(buf, pos)
                if hcount < 0 or hcount * 2 > end - pos:
                    raise CorruptRecordError(f"record has invalid header count {hcount}")
                headers = []
                for _h in range(hcount):
                    hkey, pos = _read_bytes(buf, pos, end, "header key")
                    if hkey is None:
                        raise CorruptRecordError("record header key is null")
                    hvalue, pos = _read_bytes(buf, pos, end, "header value")
                    headers.append((hkey.decode("utf-8", "surrogateescape"), hvalue))
            if pos != end:
                raise CorruptRecordError(f"record declared {length} bytes but its fields end elsewhere")
            append(
                new(
                    Record,
                    (
                        base_offset + offset_delta,
                        base_timestamp + ts_delta if log_append_time is None else log_append_time,
                        key,
                        value,
                        headers,
                    ),
                )
            )
    except IndexError:
        raise CorruptRecordError("records are truncated") from None
    if pos != n:
        raise CorruptRecordError(f"{n - pos} bytes are left after {count} records")
    return out


def decode_batch_records(
    batch: Buffer,
    *,
    check_crc: bool = True,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> list[Record]:
    """Decode every record of one whole v2 batch (header included, nothing after it).

    Decompresses the records section if the batch is compressed (at most ``max_output`` bytes),
    checks the CRC-32C unless ``check_crc`` is False, and returns records with absolute offsets
    (``base_offset + offset_delta``) and absolute timestamps (``base_timestamp + timestamp_delta``,
    or the batch ``max_timestamp`` for every record when the LogAppendTime attribute bit is set).
    Raises CorruptRecordError for a malformed batch, UnsupportedCompressionTypeError for an
    unknown codec.
    """
    mv = memoryview(batch).cast("B") if isinstance(batch, memoryview) else memoryview(batch)
    h = _batch.read_header(mv)
    if h.batch_length < _batch.HEADER_SIZE - _batch.LOG_OVERHEAD or h.size != len(mv):
        raise CorruptRecordError(f"record batch length {h.batch_length} does not match its {len(mv)} bytes")
    if check_crc and crc32c(mv[_batch.CRC_START :]) != h.crc:
        raise CorruptRecordError("record batch failed its CRC-32C check")
    section = mv[_batch.HEADER_SIZE :]
    data = decompress(h.compression, section, max_output=max_output) if h.compression else bytes(section)
    log_append_time = h.max_timestamp if h.attributes & _batch.TIMESTAMP_TYPE_MASK else None
    return decode_records(
        data,
        h.records_count,
        base_offset=h.base_offset,
        base_timestamp=h.base_timestamp,
        log_append_time=log_append_time,
    )
