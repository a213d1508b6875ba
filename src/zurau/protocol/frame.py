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
* :class:`FrameReceiver` cuts a byte stream into frames, receiving into its own buffers: the
  one framer both the client connection's and the broker connection's
  ``asyncio.BufferedProtocol`` drive (the broker's with writable frames and receive buffers from a
  shared :class:`ReceiveBufferPool`). Its size guard runs before any allocation, so an oversized
  or negative size is rejected immediately.

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


Frame = bytes | bytearray | memoryview
"""A received frame without its size prefix: ``bytes`` or a read-only ``memoryview``, or a private
``bytearray`` from a writable receiver (see :class:`FrameReceiver`)."""


class ReceiveBufferPool:
    """Free receive buffers of one size, shared by many :class:`FrameReceiver` s (the broker's
    connections), so a receiver holds a buffer only while bytes of an unfinished frame are in it:
    1,000 idle connections then pin no receive memory.

    At most ``kept`` free buffers are kept; more are left to the garbage collector. ``take`` and
    ``give`` are ``list.pop``/``list.append``, atomic under the GIL, so receivers in several
    threads (brokers of one process) may share a pool.
    """

    __slots__ = ("_free", "buffer_bytes", "kept")

    def __init__(self, buffer_bytes: int, kept: int) -> None:
        self.buffer_bytes = buffer_bytes
        self.kept = kept
        self._free: list[tuple[bytearray, memoryview]] = []

    def take(self) -> tuple[bytearray, memoryview]:
        """A free buffer and its view (a new one when none is free)."""
        try:
            return self._free.pop()
        except IndexError:
            buf = bytearray(self.buffer_bytes)
            return buf, memoryview(buf)

    def give(self, buf: bytearray, view: memoryview) -> None:
        """Take back a buffer nothing refers into any more."""
        if len(self._free) < self.kept:
            self._free.append((buf, view))


class FrameReceiver:
    """Cuts a byte stream into frames, receiving into buffers of its own: the receive side of an
    ``asyncio.BufferedProtocol`` (:meth:`buffer` is its ``get_buffer``, :meth:`received` or
    :meth:`filled` its ``buffer_updated``), so the transport ``recv_into``s (or, under TLS,
    decrypts into) them. Both ends of a connection use it: the client's response reader and the
    broker's :class:`~zurau.broker.connection.KafkaConnection`.

    * Small frames (under ``direct_bytes``) are sliced out of one reusable receive buffer of
      ``buffer_bytes``: several per socket read, one copy each (into the frame handed out).
    * A frame of ``direct_bytes`` or more gets a buffer of its own, into which the socket reads
      the rest of it directly, so a multi-megabyte Fetch answer or Produce request is never
      copied after the kernel's copy (its records decode to views of it, see
      :mod:`zurau.protocol.codec`).
    * Read-only frames (the default): a small frame is ``bytes``, a large one a read-only
      ``memoryview`` of exactly its bytes. The last large buffer (up to ``spare_bytes``) is kept
      and used again for a later frame once nothing references it any more (CPython's reference
      count: every view of a buffer holds a reference to it), so a follower fetching 10 MB answers
      does not pay for allocating and zeroing 10 MB each time.
    * ``writable=True`` (the broker: the produce path patches offsets in place): every frame is a
      private ``bytearray`` of exactly its bytes, and no large buffer is reused.
    * With a ``pool``, the receive buffer is taken from it when bytes arrive and given back as
      soon as every received byte was framed (an idle receiver holds none).

    Frames are handed out by :meth:`received` (all that are whole) or, one at a time, by
    :meth:`next_frame` after :meth:`filled`: a caller that must stop between frames (a throttled
    broker connection) leaves the rest in the buffer and pauses reading meanwhile.

    Invariants:

    * ``_buf[_start:_end]`` holds received bytes not yet framed; once every whole frame was taken,
      at most a partial size prefix or a partial small frame, which always fits in the buffer
      (``direct_bytes + 4 <= buffer_bytes``), so :meth:`buffer` is never empty then.
    * While ``_frame`` is set, one frame is being received straight into it (``_frame[:_filled]``
      received so far) and the receive buffer is empty; the view :meth:`buffer` returns then ends
      exactly at the frame's end, so no byte of the next frame lands in it.
    * A size is checked (negative, over ``max_size``: :class:`FrameTooLarge`) before anything is
      allocated for its frame.
    * Every frame handed out is private: its memory is not written again while the frame or any
      view of it is alive, so the caller (and views into it) may keep it as long as it likes.
    """

    __slots__ = (
        "_buf", "_end", "_filled", "_frame", "_frame_view", "_pool", "_ready", "_spare", "_start",
        "_view", "direct_bytes", "max_size", "spare_bytes", "writable",
    )

    def __init__(
        self,
        max_size: int,
        *,
        buffer_bytes: int = 64 * 1024,
        direct_bytes: int = 16 * 1024,
        spare_bytes: int = 16 * 1024 * 1024,
        pool: ReceiveBufferPool | None = None,
        writable: bool = False,
    ) -> None:
        if pool is not None:
            buffer_bytes = pool.buffer_bytes
        if direct_bytes + 4 > buffer_bytes:
            raise ValueError("direct_bytes + 4 must fit in buffer_bytes")
        self.max_size = max_size
        self.direct_bytes = direct_bytes
        self.writable = writable
        self.spare_bytes = 0 if writable else spare_bytes
        self._spare: bytearray | None = None  # the last direct frame's buffer, for reuse
        self._pool = pool
        self._buf: bytearray | None = None
        self._view: memoryview | None = None
        if pool is None:
            self._buf = bytearray(buffer_bytes)
            self._view = memoryview(self._buf)
        self._start = self._end = 0
        self._frame: bytearray | None = None
        self._frame_view: memoryview | None = None
        self._filled = 0
        self._ready: Frame | None = None  # a directly received frame, whole, not yet taken

    def buffer(self) -> memoryview:
        """Where the next received bytes go (never empty once every whole frame was taken)."""
        if self._frame_view is not None:
            return self._frame_view[self._filled :]
        view = self._view
        if view is None:
            assert self._pool is not None
            self._buf, view = self._pool.take()
            self._view = view
        elif self._end == len(view) and self._start:  # frames left untaken filled it: compact
            self._compact(view)
        return view[self._end :]

    def received(self, nbytes: int) -> list[Frame]:
        """``nbytes`` were written at the start of the last :meth:`buffer`: the frames now whole.

        Raises FrameTooLarge for a size out of bounds (the stream cannot be resynchronised: drop it).
        """
        self.filled(nbytes)
        frames: list[Frame] = []
        while (frame := self.next_frame()) is not None:
            frames.append(frame)
        return frames

    def filled(self, nbytes: int) -> None:
        """``nbytes`` were written at the start of the last :meth:`buffer` (take the frames now
        whole with :meth:`next_frame`)."""
        frame_view = self._frame_view
        if frame_view is None:
            self._end += nbytes
            return
        self._filled += nbytes
        if self._filled >= len(frame_view):
            self._ready = self._frame if self.writable else frame_view.toreadonly()
            self._frame = self._frame_view = None

    def next_frame(self) -> Frame | None:
        """The next whole frame, or None until more bytes arrive.

        Raises FrameTooLarge for a size out of bounds (the stream cannot be resynchronised: drop it).
        """
        ready = self._ready
        if ready is not None:
            self._ready = None
            return ready
        pos, end = self._start, self._end
        if end - pos < 4:
            if end - pos and self._view is not None and pos + 4 > len(self._view):
                self._compact(self._view)  # a partial size prefix at the very end: move it to the front
            return None
        buf, view = self._buf, self._view
        assert buf is not None and view is not None
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < 0 or size > self.max_size:
            self.reset()
            raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {self.max_size} bytes")
        start = pos + 4
        stop = start + size
        if stop <= end:
            frame: Frame = buf[start:stop] if self.writable else bytes(view[start:stop])
            if stop == end:
                self._drained()
            else:
                self._start = stop
            return frame
        if size >= self.direct_bytes:  # receive the rest straight into the frame's own buffer
            into = self._frame_buffer(size)
            frame_view = memoryview(into)[:size]
            frame_view[: end - start] = view[start:end]
            self._frame, self._frame_view, self._filled = into, frame_view, end - start
            self._drained()
        elif stop > len(buf):  # the unfinished frame would not fit behind: move it to the front
            self._compact(view)
        return None

    def _compact(self, view: memoryview) -> None:
        pos, end = self._start, self._end
        view[: end - pos] = view[pos:end]  # memmove: may overlap
        self._start, self._end = 0, end - pos

    def _drained(self) -> None:
        """Every received byte was framed: start over (and give a pooled buffer back)."""
        self._start = self._end = 0
        pool = self._pool
        if pool is not None and self._buf is not None and self._view is not None:
            pool.give(self._buf, self._view)
            self._buf = self._view = None

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
        self._drained()
        self._filled = 0
        self._frame = self._frame_view = self._spare = self._ready = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out as frames."""
        if self._frame_view is not None:
            return self._filled
        ready = self._ready
        return (len(ready) if ready is not None else 0) + self._end - self._start

    @property
    def holds_buffer(self) -> bool:
        """Whether a receive buffer is held (with a pool: only while a frame is unfinished)."""
        return self._view is not None


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
