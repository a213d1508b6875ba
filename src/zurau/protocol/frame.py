"""Kafka framing, both directions: int32 size prefix, request header v1/v2, response header v0/v1.

Wire layout::

    request  = int32 size | header | body
    header v1 = api_key int16 | api_version int16 | correlation_id int32 | client_id nullable string16
    header v2 = header v1 | tagged fields          (flexible request versions)
    response = int32 size | correlation_id int32 [| tagged fields (header v1)] | body

The client_id stays an int16-length string even in header v2 (for old-broker compatibility).
Which header version goes with a message is the schema's business
(:meth:`~zurau.protocol.schema.ApiSchema.request_header_version`, ``response_header_version``):
v2/v1 for flexible versions, and ApiVersions always answers with response header v0.

Both sides' halves:

* client: :func:`encode_request` (a whole frame), :func:`response_correlation_id` and
  :func:`decode_response` (a frame without its size prefix);
* broker: :func:`peek_api`, :func:`parse_request_header` / :func:`decode_request`,
  :func:`response_header` (= :func:`encode_response_header`) and :func:`encode_response`;
* :class:`FrameDecoder` slices frames out of a byte stream (the client's read loop uses it; the
  broker's connection receives into its own buffers). Its size guard runs before any allocation,
  so an oversized or negative size is rejected immediately.

An ApiVersions answer with error UNSUPPORTED_VERSION is always in v0 form, whatever version was
asked for (so a client can learn the broker's range); :func:`decode_response` reads it that way.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.primitives import (
    I16,
    I32,
    DecodeError,
    read_nullable_string16,
    skip_tagged_fields,
    write_nullable_string16,
)

_HEAD = struct.Struct(">hhi")  # api_key, api_version, correlation_id
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
        with memoryview(buf) as view:  # one copy per frame (a bytearray slice would make two)
            while n - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if size < 0 or size > limit:
                    raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {limit} bytes")
                end = pos + 4 + size
                if end > n:
                    break
                frames.append(bytes(view[pos + 4 : end]))
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


def peek_api(frame: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id: the fixed 8 bytes every request header starts with."""
    if len(frame) < 8:
        raise DecodeError("request header is truncated")
    return I16.unpack_from(frame, 0)[0], I16.unpack_from(frame, 2)[0], I32.unpack_from(frame, 4)[0]


def parse_request_header(frame: bytes | bytearray | memoryview, flexible: bool) -> tuple[RequestHeader, int]:
    """Parse header v1 (or v2 when ``flexible``); returns the header and the body's offset."""
    api_key, api_version, correlation_id = peek_api(frame)
    client_id, pos = read_nullable_string16(frame, 8)
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, dict[str, Any]]:
    """Header and body of a request frame (without its size prefix).

    Raises DecodeError for malformed bytes and KeyError for an api key or version without a schema.
    """
    api_key, api_version, _cid = peek_api(frame)
    schema = codec.schema_for(api_key)
    header, pos = parse_request_header(frame, schema.is_flexible(api_version))
    mv = frame if isinstance(frame, memoryview) else memoryview(frame)
    return header, codec.decode(api_key, api_version, "request", mv[pos:])


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, header_version: int
) -> bytearray:
    """Request header v0 (no client id), v1, or v2 (v1 plus an empty tagged-field section)."""
    out = bytearray(_HEAD.pack(api_key, api_version, correlation_id))
    if header_version >= 1:
        write_nullable_string16(out, client_id)
    if header_version >= 2:
        out.append(0)
    return out


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: dict[str, Any]
) -> bytes:
    """A whole request frame, size prefix included, with the header version the schema calls for."""
    schema = codec.schema_for(api_key)
    head = encode_request_header(
        api_key, api_version, correlation_id, client_id, schema.request_header_version(api_version)
    )
    payload = codec.encode(api_key, api_version, "request", body)
    return b"".join((_SIZE.pack(len(head) + len(payload)), head, payload))


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    """Encoded response header (v0: correlation id; v1: plus an empty tagged-field section)."""
    if header_version == 0:
        return I32.pack(correlation_id)
    return I32.pack(correlation_id) + b"\x00"


response_header = encode_response_header


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict[str, Any]) -> bytes:
    """A whole response frame, size prefix included (bytes; the broker writes pieces itself)."""
    schema = codec.schema_for(api_key)
    head = encode_response_header(correlation_id, schema.response_header_version(api_version))
    payload = codec.encode(api_key, api_version, "response", body)
    return b"".join((_SIZE.pack(len(head) + len(payload)), head, payload))


def response_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id a response frame (without its size prefix) starts with."""
    if len(frame) < 4:
        raise DecodeError(f"response of {len(frame)} bytes has no correlation id")
    return int(I32.unpack_from(frame, 0)[0])


def parse_response_header(frame: bytes | bytearray | memoryview, header_version: int) -> tuple[int, int]:
    """Correlation id and the body's offset, for response header v0 or v1."""
    correlation_id = response_correlation_id(frame)
    pos = 4
    if header_version >= 1:
        pos = skip_tagged_fields(frame, pos)
    return correlation_id, pos


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray | memoryview
) -> tuple[int, dict[str, Any]]:
    """Correlation id and decoded body of the response to a request of ``api_key`` v``api_version``.

    ``frame`` is the response without its size prefix. Raises DecodeError for malformed bytes.
    """
    schema = codec.schema_for(api_key)
    correlation_id, pos = parse_response_header(frame, schema.response_header_version(api_version))
    if api_key == ApiKey.API_VERSIONS and api_version > 0:
        if len(frame) < pos + 2:
            raise DecodeError("ApiVersions response is truncated")
        if I16.unpack_from(frame, pos)[0] == UnsupportedVersionError.code:
            api_version = 0  # answered in v0 form, whatever version was asked for
    mv = frame if isinstance(frame, memoryview) else memoryview(frame)
    return correlation_id, codec.decode(api_key, api_version, "response", mv[pos:])


def size_prefix(n: int) -> bytes:
    return _SIZE.pack(n)
