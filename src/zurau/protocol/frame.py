"""Kafka framing: int32 size prefix, request header v1/v2, response header v0/v1.

Wire layout::

    request  = int32 size | header | body
    header v1 = api_key int16 | api_version int16 | correlation_id int32 | client_id nullable string16
    header v2 = header v1 | tagged fields          (flexible request versions)
    response = int32 size | correlation_id int32 [| tagged fields (header v1)] | body

The client_id stays an int16-length string even in header v2 (for old-broker compatibility).
:class:`FrameDecoder` slices frames out of a byte stream; the size guard runs before any
allocation so an oversized or negative size is rejected immediately.
"""

from __future__ import annotations

from dataclasses import dataclass

from zurau.protocol.primitives import (
    I16,
    I32,
    DecodeError,
    read_nullable_string16,
    skip_tagged_fields,
)

_SIZE = I32


class FrameTooLarge(DecodeError):
    """A frame's declared size exceeds the limit (socket.request.max.bytes) or is negative."""


class FrameDecoder:
    """Accumulates stream bytes and returns whole frames (without the size prefix).

    Invariant: ``_buf[_pos:]`` holds the unconsumed bytes; consumed bytes are dropped lazily so a
    burst of small frames costs one slice each, not one buffer copy each.
    """

    __slots__ = ("_buf", "_pos", "max_size")

    def __init__(self, max_size: int) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.max_size = max_size

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        buf = self._buf
        if self._pos and self._pos >= len(buf) // 2:
            del buf[: self._pos]
            self._pos = 0
        buf += data
        frames: list[bytes] = []
        pos = self._pos
        n = len(buf)
        limit = self.max_size
        while n - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > limit:
                raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {limit} bytes")
            end = pos + 4 + size
            if end > n:
                break
            frames.append(bytes(buf[pos + 4 : end]))
            pos = end
        self._pos = pos
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_api(frame: bytes | memoryview) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id: the fixed 8 bytes every request header starts with."""
    if len(frame) < 8:
        raise DecodeError("request header is truncated")
    return I16.unpack_from(frame, 0)[0], I16.unpack_from(frame, 2)[0], I32.unpack_from(frame, 4)[0]


def parse_request_header(frame: bytes | memoryview, flexible: bool) -> tuple[RequestHeader, int]:
    """Parse header v1 (or v2 when ``flexible``); returns the header and the body's offset."""
    api_key, api_version, correlation_id = peek_api(frame)
    client_id, pos = read_nullable_string16(frame, 8)
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def response_header(correlation_id: int, header_version: int) -> bytes:
    """Encoded response header (v0: correlation id; v1: plus an empty tagged-field section)."""
    if header_version == 0:
        return I32.pack(correlation_id)
    return I32.pack(correlation_id) + b"\x00"


def size_prefix(n: int) -> bytes:
    return _SIZE.pack(n)
