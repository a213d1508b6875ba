"""Kafka wire primitives: fixed-width ints, unsigned varints, (compact) strings, bytes and arrays.

All multi-byte integers are big-endian. Non-flexible versions use int16-length strings and
int32-length bytes/arrays (-1 means null); flexible versions (KIP-482) use "compact" forms whose
length is an unsigned varint holding ``length + 1`` (0 means null), and end each struct with a
tagged-field section: ``uvarint count`` then ``(uvarint tag, uvarint size, size bytes)`` each.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; they raise :class:`DecodeError` on
truncated or malformed input. Writers append to a ``bytearray``.
"""

from __future__ import annotations

import struct


class DecodeError(ValueError):
    """Malformed or truncated protocol bytes."""


I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
F64 = struct.Struct(">d")


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint (at most 5 bytes for 32-bit values, 10 for 64-bit)."""
    result = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint is too long")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed varint."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, (value << 1) ^ (value >> 63))


def skip_tagged_fields(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """Skip a whole tagged-field section (all tags unknown to the caller)."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise DecodeError("truncated tagged field")
    return pos


def read_nullable_string16(buf: bytes | bytearray | memoryview, pos: int) -> tuple[str | None, int]:
    """int16-length string as used in the request header's client_id (-1 = null)."""
    if pos + 2 > len(buf):
        raise DecodeError("truncated string length")
    (n,) = I16.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(buf):
        raise DecodeError("truncated string")
    try:
        return bytes(buf[pos:end]).decode("utf-8"), end
    except UnicodeDecodeError as e:
        raise DecodeError(f"string is not valid UTF-8: {e}") from None


def write_nullable_string16(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = value.encode("utf-8")
    out += I16.pack(len(data))
    out += data
