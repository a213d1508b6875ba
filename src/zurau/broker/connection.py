"""One client connection: frames in, handlers run, responses out in request order.

Requests are decoded as they arrive and their handlers start at once, so a long-polling Fetch does
not hold up a Produce pipelined behind it on the same socket; responses are still written strictly
in request order, as Kafka clients require (they match responses by order and correlation id).

Bad input closes only this connection, with a logged reason: an oversized or negative frame size,
an unknown api key, an undecodable header or body, an unsupported version of an API other than
ApiVersions (which is answered in v0 form with UNSUPPORTED_VERSION, as clients expect).

Flow control: reading pauses while more than ``MAX_IN_FLIGHT`` requests wait for their response or
while the transport's write buffer is above its high-water mark.

Client quotas (:mod:`zurau.broker.quotas`): while any quota is configured, each answered request
is recorded against its client's quotas; a response over a quota carries the throttle time in
``throttle_time_ms`` and, once it is written, the connection reads nothing more from the client
for that long (the channel is muted, as Kafka 2.0+ does, KIP-219).

Receiving (an ``asyncio.BufferedProtocol``, so the loop ``recv_into``s our buffers): small frames
are sliced out of one reusable receive buffer (one copy each, several frames per read); a frame
of ``DIRECT_FRAME_BYTES`` or more gets a ``bytearray`` of its exact size that the socket reads
into directly, so a produce payload of 1 MiB reaches its handler with no copy after the kernel's.
Every frame handed on is a private, writable ``bytearray`` (the produce path patches offsets in it).
A connection holds a receive buffer only while bytes of an unfinished frame are in it: the buffer
is taken from a process-wide free list when the socket becomes readable and given back once every
received byte was framed, so an idle connection costs no buffer (1,000 idle clients would
otherwise pin 256 MB).

Sending: a response is one ``writelines`` of its buffers. Fetched record bytes arrive as
:class:`FileRegion` pieces (a range of a segment file) and go out with ``os.sendfile`` straight
from the page cache when the socket is plain TCP and nothing is queued before them; otherwise (TLS,
a full socket buffer) the rest of the region is read and queued like any other buffer.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import struct
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from zurau.broker.handlers._authz import controller_listener_allowed
from zurau.broker.quotas.throttling import exempt, produce_throttle_ms, request_throttle_ms
from zurau.broker.request_context import CloseConnection, RequestContext
from zurau.protocol import codec
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.frame import (
    parse_request_header,
    peek_api,
    response_header,
    size_prefix,
)
from zurau.protocol.primitives import DecodeError
from zurau.replication.purgatory import WaitTime, request_wait

if TYPE_CHECKING:
    from zurau.broker.server import BrokerServer as ConnectionHost

#: APIs anyone may send on a controller listener: ApiVersions, SaslHandshake, SaslAuthenticate.
_OPEN_ON_CONTROLLER_LISTENERS = frozenset({17, 18, 36})

log = logging.getLogger("zurau.connection")

MAX_IN_FLIGHT = 64
RECEIVE_BUFFER_BYTES = 256 * 1024  # reused for headers and small frames
DIRECT_FRAME_BYTES = 64 * 1024  # frames this large are received straight into their own buffer
TLS_WRITE_BYTES = 64 * 1024  # fetched file bytes go to a TLS transport in pieces of this size
RECEIVE_BUFFERS_KEPT = 64  # free receive buffers kept for reuse (the rest are freed)
_NO_RESPONSE = object()
_SIZE = struct.Struct(">i")
# Free receive buffers, each with its memoryview. Shared by every connection of the process
# (brokers in several threads too: list.append and list.pop are atomic under the GIL).
_free_buffers: list[tuple[bytearray, memoryview]] = []


def _take_buffer() -> tuple[bytearray, memoryview]:
    try:
        return _free_buffers.pop()
    except IndexError:
        buf = bytearray(RECEIVE_BUFFER_BYTES)
        return buf, memoryview(buf)


def _give_buffer(buf: bytearray, view: memoryview) -> None:
    if len(_free_buffers) < RECEIVE_BUFFERS_KEPT:
        _free_buffers.append((buf, view))


class FileRegion:
    """Bytes ``[position, position + size)`` of an open file, to be sent without copying.

    Holds its own duplicate of the descriptor, so the bytes stay readable however long the
    response waits for earlier ones on its connection, even if retention deletes the segment and
    closes the log's descriptor meanwhile. ``len()`` is the size (the codec writes it as the
    records length); ``bytes()`` reads the region (for transports that cannot sendfile).
    """

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd = -1
        self.fd = os.dup(fd)
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def read(self, skip: int = 0) -> bytes:
        """The region's bytes from ``skip`` on; raises EOFError if the file was truncated under it."""
        want = self.size - skip
        chunks = []
        pos = self.position + skip
        while want > 0:
            chunk = os.pread(self.fd, want, pos)
            if not chunk:
                raise EOFError(f"file region truncated: {want} of {self.size} bytes missing")
            chunks.append(chunk)
            pos += len(chunk)
            want -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def __bytes__(self) -> bytes:
        return self.read()

    def chunks(self, skip: int, size: int) -> Iterator[bytes]:
        """The region's bytes from ``skip`` on, ``size`` bytes at a time (EOFError if truncated)."""
        pos, end = self.position + skip, self.position + self.size
        while pos < end:
            chunk = os.pread(self.fd, min(size, end - pos), pos)
            if not chunk:
                raise EOFError(f"file region truncated: {end - pos} of {self.size} bytes missing")
            pos += len(chunk)
            yield chunk

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class _Slot:
    __slots__ = (
        "correlation_id", "api_key", "version", "header_version", "response", "done",
        "received", "dispatched", "handled", "wait", "quota", "started", "throttle_ms",
    )

    def __init__(self, correlation_id: int, api_key: int, version: int, header_version: int) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.header_version = header_version
        self.response: Any = None
        self.done = False
        # perf_counter() times for request metrics (0.0: not measured) and the purgatory wait.
        self.received = self.dispatched = self.handled = 0.0
        self.wait: WaitTime | None = None
        # Client quotas: the client id when the request counts against them, perf_counter()
        # when its handler started, and the throttle decided on arrival (Produce's byte rate).
        self.quota: str | None = None
        self.started = 0.0
        self.throttle_ms = 0


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(self, host: ConnectionHost, listener: str = "") -> None:
        self.host = host
        self.listener = listener  # the name of the listener that accepted this connection
        self.max_frame_bytes = host.services.config.socket_request_max_bytes
        # Receive buffer (None while empty, see _take_buffer): bytes [_rstart, _rend) are
        # received and not yet framed.
        self._rbuf: bytearray | None = None
        self._rview: memoryview | None = None
        self._rstart = 0
        self._rend = 0
        # A large frame being received directly: its buffer and how much of it is filled.
        self._frame: bytearray | None = None
        self._frame_view: memoryview | None = None
        self._frame_filled = 0
        self.pending: deque[_Slot] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._reading_paused = False
        self._writing_paused = False
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sendfile_fd = -1  # the socket's descriptor when os.sendfile may write to it
        self.last_active = time.monotonic()  # last bytes received or response written
        self._metrics = host.services.metrics  # None: metrics are off
        self.session = host.new_session(self)  # authentication state and principal (broker.auth)
        self._quotas = getattr(host.services, "quotas", None)  # None: quotas are never enforced
        self._muted = False  # throttled by a quota: nothing is read until _muted_until
        self._muted_until = 0.0

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        if sock is not None and transport.get_extra_info("sslcontext") is None:
            try:
                self._sendfile_fd = sock.fileno()
            except (AttributeError, OSError):
                self._sendfile_fd = -1
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        ssl_object = transport.get_extra_info("ssl_object")
        refused = self.session.on_tls(ssl_object.getpeercert()) if ssl_object is not None else None
        refused = refused or self.host.admit(self, str(peer[0]) if peer else "")
        if refused is not None:
            self.close(refused)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.host.release(self)
        for t in self._tasks:
            t.cancel()
        self.pending.clear()

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame_view is not None:
            return self._frame_view[self._frame_filled :]
        if self._rview is None:
            self._rbuf, self._rview = _take_buffer()
        return self._rview[self._rend :]

    def idle_for(self, now: float) -> float:
        """Seconds since the last activity, or 0 while a request is in progress or bytes wait
        to be sent (``connections.max.idle.ms``)."""
        transport = self.transport
        if self.pending or (transport is not None and transport.get_write_buffer_size()):
            return 0.0
        return now - self.last_active

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled == len(self._frame):
                frame = self._frame
                self._frame = self._frame_view = None
                if not self._closed:
                    self._on_frame(frame)
        else:
            self._rend += nbytes
            self._split_frames()
        self._update_reading()

    def _split_frames(self) -> None:
        """Hand on every whole frame in the receive buffer; set up a direct read for a large one."""
        buf, view = self._rbuf, self._rview
        if buf is None or view is None:
            return  # nothing received since the buffer was given back
        pos, end = self._rstart, self._rend
        while end - pos >= 4 and not self._closed and not self._muted:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame_bytes:
                self.close(
                    f"frame of {size} bytes exceeds the limit of {self.max_frame_bytes} bytes "
                    "(socket.request.max.bytes)"
                )
                return
            start = pos + 4
            if end - start >= size:
                pos = start + size
                self._on_frame(buf[start:pos])
                continue
            if size >= DIRECT_FRAME_BYTES or start + size > len(buf):
                if size >= DIRECT_FRAME_BYTES:
                    # Receive the rest straight into the frame's own buffer.
                    frame = bytearray(size)
                    frame[: end - start] = view[start:end]
                    self._frame, self._frame_view = frame, memoryview(frame)
                    self._frame_filled = end - start
                    pos = end
                else:  # a small frame that does not fit behind: move it to the front
                    view[: end - pos] = view[pos:end]  # memmove: may overlap
                    end -= pos
                    pos = 0
            break
        if pos == end:
            pos = end = 0
            if not self._closed:  # every byte framed: the buffer goes back to the free list
                self._rbuf = self._rview = None
                _give_buffer(buf, view)
        elif end == len(buf):
            view[: end - pos] = view[pos:end]  # memmove: may overlap
            end -= pos
            pos = 0
        self._rstart, self._rend = pos, end

    # ------------------------------------------------------------------ requests
    def close(self, reason: str) -> None:
        if not self._closed:
            log.warning("closing connection from %s: %s", self.peer, reason)
            self._closed = True
            if self.transport is not None:
                self.transport.close()

    def _on_frame(self, frame: bytearray) -> None:
        received = time.perf_counter()
        session = self.session
        if session.raw_tokens:  # legacy SASL (SaslHandshake v0): a raw token, not a request
            reply = session.raw_token(bytes(frame))
            if reply is not None and self.transport is not None:
                self.transport.writelines([size_prefix(len(reply)), reply])
            return
        try:
            api_key, version, correlation_id = peek_api(frame)
        except DecodeError as e:
            self.close(str(e))
            return
        if session.checks_requests:
            refused = session.refuse(api_key)
            if refused is not None:
                self.close(refused)
                return
        handler = self.host.handlers.get(api_key)
        if handler is None:
            self.close(f"unknown api key {api_key}")
            return
        if not handler.supports(version):
            if api_key == 18:
                # Answer in v0 form so any client can read the supported ranges and retry.
                slot = _Slot(correlation_id, 18, 0, 0)
                slot.response = {
                    "error_code": UnsupportedVersionError.code,
                    "api_keys": self.host.services.api_versions,
                }
                slot.done = True
                self.pending.append(slot)
                self._flush()
                return
            self.close(f"unsupported version {version} of {handler.schema.name} (api key {api_key})")
            return
        schema = handler.schema
        try:
            header, body_pos = parse_request_header(frame, schema.is_flexible(version))
            request = codec.decode(api_key, version, "request", memoryview(frame)[body_pos:])
        except DecodeError as e:
            self.close(f"malformed {schema.name} v{version} request: {e}")
            return
        slot = _Slot(correlation_id, api_key, version, schema.response_header_version(version))
        self.pending.append(slot)
        if self._metrics is not None:
            # Each request sets its own timer; tasks its handler starts inherit it (purgatory.py).
            slot.received = received
            slot.wait = WaitTime()
            request_wait.set(slot.wait)
            slot.dispatched = time.perf_counter()
        quotas = self._quotas
        if (quotas is not None and quotas.enabled and not exempt(api_key, request)
                and self.listener not in self.host.services.controller_listeners):
            slot.quota = header.client_id or ""
            if api_key == 0:  # Produce: its bytes count as it arrives, holding back what follows
                slot.throttle_ms = produce_throttle_ms(quotas, session.principal, slot.quota, len(frame))
                if slot.throttle_ms:
                    self._mute(slot.throttle_ms)
            if slot.wait is None:
                slot.wait = WaitTime()
                request_wait.set(slot.wait)
            slot.started = time.perf_counter()
        ctx = RequestContext(header, self.host.services, self.peer, self.listener, session)
        if (api_key not in _OPEN_ON_CONTROLLER_LISTENERS and self.host.services.authorizer is not None
                and self.listener in self.host.services.controller_listeners
                and not controller_listener_allowed(ctx)):
            # Only nodes talk on a controller listener; the handlers trust whoever passes here
            # (admin requests arrive forwarded, authorized by the broker that took them).
            self.close(
                f"{session.principal} sent {schema.name} on controller listener {self.listener} without "
                "CLUSTER_ACTION on the cluster (only the cluster's own nodes may use it)"
            )
            return
        try:
            result = handler.handle(ctx, request)
        except CloseConnection as e:
            self.close(str(e))
            return
        except Exception:
            log.exception("%s v%d handler failed for %s", schema.name, version, self.peer)
            self.close(f"internal error handling {schema.name}")
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(functools.partial(self._done_callback, slot))
        else:
            slot.response = result if result is not None else _NO_RESPONSE
            slot.done = True
            slot.handled = time.perf_counter()
            self._flush()

    def _done_callback(self, slot: _Slot, task: asyncio.Task[Any]) -> None:
        self._task_done(task, slot)

    def _task_done(self, task: asyncio.Task[Any], slot: _Slot) -> None:
        self._tasks.discard(task)
        if task.cancelled() or self._closed:
            return
        exc = task.exception()
        if isinstance(exc, CloseConnection):
            self.close(str(exc))
            return
        if exc is not None:
            log.error("handler for api key %d failed for %s", slot.api_key, self.peer, exc_info=exc)
            self.close("internal error")
            return
        result = task.result()
        slot.response = result if result is not None else _NO_RESPONSE
        slot.done = True
        slot.handled = time.perf_counter()
        self._flush()

    def _flush(self) -> None:
        transport = self.transport
        pending = self.pending
        metrics = self._metrics
        while pending and pending[0].done:
            slot = pending.popleft()
            sending = time.perf_counter() if metrics is not None else 0.0
            throttle_ms = self._throttle(slot) if slot.quota is not None else 0
            if slot.response is _NO_RESPONSE or transport is None or self._closed:
                if metrics is not None and slot.received:
                    self._record(metrics, slot, sending)
                if throttle_ms:
                    self._mute(throttle_ms)
                continue
            try:
                pieces = codec.encode_pieces(slot.api_key, slot.version, "response", slot.response)
            except Exception:
                log.exception("cannot encode api key %d v%d response", slot.api_key, slot.version)
                self.close("internal error encoding a response")
                return
            head = response_header(slot.correlation_id, slot.header_version)
            total = len(head) + sum(len(p) for p in pieces)
            if len(pieces) == 1 or not any(type(p) is FileRegion for p in pieces):
                transport.writelines([size_prefix(total), head, *pieces])
            elif not self._write_with_regions([size_prefix(total), head, *pieces]):
                return
            if metrics is not None and slot.received:
                self._record(metrics, slot, sending)
            if throttle_ms:
                self._mute(throttle_ms)
        self.last_active = time.monotonic()
        self._update_reading()

    def _throttle(self, slot: _Slot) -> int:
        """Record an answered request against its client's quotas; the throttle time in ms."""
        assert slot.quota is not None and self._quotas is not None
        waited = slot.wait.seconds if slot.wait is not None else 0.0
        busy = (slot.handled or time.perf_counter()) - slot.started - waited
        response = None if slot.response is _NO_RESPONSE else slot.response
        return request_throttle_ms(self._quotas, self.session.principal, slot.quota, busy, response, slot.throttle_ms)

    def _mute(self, throttle_ms: int) -> None:
        """Read nothing from the client for ``throttle_ms`` (a later, longer throttle extends it)."""
        until = time.monotonic() + throttle_ms / 1000
        if until <= self._muted_until:
            return
        self._muted_until = until
        if not self._muted:
            self._muted = True
            self._update_reading()
        asyncio.get_running_loop().call_later(throttle_ms / 1000, self._unmute)

    def _unmute(self) -> None:
        if self._closed or time.monotonic() + 0.001 < self._muted_until:
            return  # muted again meanwhile: that mute's timer ends it
        self._muted = False
        self._split_frames()  # requests received while muted
        self._update_reading()

    @staticmethod
    def _record(metrics: Any, slot: _Slot, sending: float) -> None:
        response = slot.response if slot.response is not _NO_RESPONSE else None
        wait = slot.wait
        metrics.request_done(
            slot.api_key, slot.version, slot.received, slot.dispatched, slot.handled or sending,
            sending, time.perf_counter(), wait.seconds if wait is not None else 0.0, response,
            wait.variant if wait is not None else None,
        )

    def _write_with_regions(self, bufs: list[Any]) -> bool:
        """Write one response holding file regions, in order; False if the connection closed."""
        transport = self.transport
        assert transport is not None
        run: list[Any] = []
        try:
            for b in bufs:
                if type(b) is not FileRegion:
                    run.append(b)
                    continue
                if run:
                    transport.writelines(run)
                    run = []
                sent = 0
                if self._sendfile_fd >= 0 and transport.get_write_buffer_size() == 0:
                    sent = self._sendfile(b)
                if self._sendfile_fd < 0 and b.size - sent > TLS_WRITE_BYTES:
                    # TLS: hand the transport small pieces, so each is encrypted into (and read
                    # back out of) a buffer that stays warm in cache instead of one fresh
                    # allocation the size of the whole region.
                    for chunk in b.chunks(sent, TLS_WRITE_BYTES):
                        transport.write(chunk)
                elif sent < b.size:
                    transport.write(b.read(sent))
                b.close()
            if run:
                transport.writelines(run)
        except EOFError as e:
            self.close(f"cannot send fetched data: {e}")
            return False
        finally:
            for b in bufs:
                if type(b) is FileRegion:
                    b.close()
        return True

    def _sendfile(self, region: FileRegion) -> int:
        """Send as much of ``region`` as the socket takes now; return the bytes sent."""
        sent = 0
        while sent < region.size:
            try:
                n = os.sendfile(self._sendfile_fd, region.fd, region.position + sent, region.size - sent)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._sendfile_fd = -1  # let the transport write (and report) from now on
                break
            if n == 0:
                raise EOFError(f"file region truncated: {region.size - sent} of {region.size} bytes missing")
            sent += n
        return sent

    def _update_reading(self) -> None:
        if self.transport is None or self._closed:
            return
        should_pause = self._writing_paused or len(self.pending) >= MAX_IN_FLIGHT or self._muted
        if should_pause and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
        elif not should_pause and self._reading_paused:
            self.transport.resume_reading()
            self._reading_paused = False
