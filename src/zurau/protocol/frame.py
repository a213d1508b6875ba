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
* :class:`FrameReceiver` cuts a byte stream into frames, receiving into its own buffers (the
  client connection's ``asyncio.BufferedProtocol`` uses it; the broker's connection receives into
  buffers of its own, see ``zurau.broker.connection``). Its size guard runs before any
  allocation, so an oversized or negative size is rejected immediately.

An ApiVersions answer with error UNSUPPORTED_VERSION is always in v0 form, whatever version was
asked for (so a client can learn the broker's range); :func:`decode_response` reads it that way.
"""

from __future__ import annotations

import struct
import sys
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


Frame = bytes | memoryview
"""A received frame without its size prefix: read-only bytes-like (see :class:`FrameReceiver`)."""


class FrameReceiver:
    """Cuts a byte stream into frames, receiving into buffers of its own: the receive side of an
    ``asyncio.BufferedProtocol`` (:meth:`buffer` is its ``get_buffer``, :meth:`received` its
    ``buffer_updated``), so the transport ``recv_into``s (or, under TLS, decrypts into) them.

    * Small frames (under ``direct_bytes``) are sliced out of one reusable receive buffer of
      ``buffer_bytes``: several per socket read, one copy each (into the ``bytes`` handed out).
    * A frame of ``direct_bytes`` or more gets a buffer of its own, into which the socket reads
      the rest of it directly; it is handed out as a read-only ``memoryview`` of exactly its
      bytes, so a multi-megabyte Fetch answer is never copied after the kernel's copy (its
      records decode to views of it, see :mod:`zurau.protocol.codec`). The last such buffer (up
      to ``spare_bytes``) is kept and used again for a later frame once nothing references it any
      more (CPython's reference count: every view of a buffer holds a reference to it), so a
      follower fetching 10 MB answers does not pay for allocating and zeroing 10 MB each time.

    Invariants:

    * ``_buf[_start:_end]`` holds received bytes not yet framed: at most a partial size prefix or
      a partial small frame, which always fits in the buffer (``direct_bytes + 4 <= buffer_bytes``);
      after :meth:`received` returns, ``_end < len(_buf)``, so :meth:`buffer` is never empty.
    * While ``_frame`` is set, one frame is being received straight into it (``_frame[:_filled]``
      received so far) and the receive buffer is empty; the view :meth:`buffer` returns then ends
      exactly at the frame's end, so no byte of the next frame lands in it.
    * A size is checked (negative, over ``max_size``: :class:`FrameTooLarge`) before anything is
      allocated for its frame.
    * Every frame handed out is read-only, and its memory is not written again while the frame or
      any view of it is alive, so the caller (and views into it) may keep it as long as it likes.
    """

    __slots__ = (
        "_buf", "_end", "_filled", "_frame", "_frame_view", "_spare", "_start", "_view",
        "direct_bytes", "max_size", "spare_bytes",
    )

    def __init__(
        self,
        max_size: int,
        *,
        buffer_bytes: int = 64 * 1024,
        direct_bytes: int = 16 * 1024,
        spare_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        if direct_bytes + 4 > buffer_bytes:
            raise ValueError("direct_bytes + 4 must fit in buffer_bytes")
        self.max_size = max_size
        self.direct_bytes = direct_bytes
        self.spare_bytes = spare_bytes
        self._spare: bytearray | None = None  # the last direct frame's buffer, for reuse
        self._buf = bytearray(buffer_bytes)
        self._view = memoryview(self._buf)
        self._start = self._end = 0
        self._frame: bytearray | None = None
        self._frame_view: memoryview | None = None
        self._filled = 0

    def buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        if self._frame_view is not None:
            return self._frame_view[self._filled :]
        return self._view[self._end :]

    def received(self, nbytes: int) -> list[Frame]:
        """``nbytes`` were written at the start of the last :meth:`buffer`: the frames now whole.

        Raises FrameTooLarge for a size out of bounds (the stream cannot be resynchronised: drop it).
        """
        if self._frame_view is not None:
            self._filled += nbytes
            if self._filled < len(self._frame_view):
                return []
            frame = self._frame_view.toreadonly()
            self._frame = self._frame_view = None
            return [frame]
        self._end += nbytes
        return self._split()

    def _split(self) -> list[Frame]:
        buf, view = self._buf, self._view
        pos, end = self._start, self._end
        frames: list[Frame] = []
        need = 4  # how many bytes from pos the unfinished frame takes in all
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_size:
                self._start = self._end = 0
                raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {self.max_size} bytes")
            start = pos + 4
            if end - start >= size:
                frames.append(bytes(view[start : start + size]))
                pos = start + size
                continue
            if size >= self.direct_bytes:  # receive the rest straight into the frame's own buffer
                frame = self._frame_buffer(size)
                frame_view = memoryview(frame)[:size]
                frame_view[: end - start] = view[start:end]
                self._frame, self._frame_view, self._filled = frame, frame_view, end - start
                pos = end
            else:
                need = 4 + size
            break
        if pos == end:
            pos = end = 0
        elif pos + need > len(buf):  # the unfinished frame would not fit behind: move it to the front
            view[: end - pos] = view[pos:end]  # memmove: may overlap
            end -= pos
            pos = 0
        self._start, self._end = pos, end
        return frames

    def _frame_buffer(self, size: int) -> bytearray:
        """A buffer of at least ``size`` bytes for a directly received frame: the spare one when it
        is large enough and unreferenced (no frame handed out earlier, nor any view of one, is
        alive), else a new one, which becomes the spare (up to ``spare_bytes``)."""
        spare = self._spare
        free = spare is not None and sys.getrefcount(spare) == 3  # ``spare``, ``_spare``, the argument
        if free and spare is not None and len(spare) >= size:
            return spare
        frame = bytearray(size)
        if size <= self.spare_bytes and (spare is None or not free or len(spare) < size):
            self._spare = frame
        return frame

    def reset(self) -> None:
        """Drop whatever was received and not handed out (after a failure, the stream is dead)."""
        self._start = self._end = self._filled = 0
        self._frame = self._frame_view = self._spare = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as frames."""
        return self._filled if self._frame_view is not None else self._end - self._start


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
