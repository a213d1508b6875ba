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

Receiving (an ``asyncio.BufferedProtocol``, so the loop ``recv_into``s our buffers) is
:class:`zurau.protocol.frame.FrameReceiver`'s job, the one framer of the code base: small frames
are sliced out of one reusable receive buffer (one copy each, several frames per read); a frame
of ``DIRECT_FRAME_BYTES`` or more gets a ``bytearray`` of its exact size that the socket reads
into directly, so a produce payload of 1 MiB reaches its handler with no copy after the kernel's.
Every frame handed on is a private, writable ``bytearray`` (the produce path patches offsets in it).
A connection holds a receive buffer only while bytes of an unfinished frame are in it: the buffer
is taken from a process-wide :class:`~zurau.protocol.frame.ReceiveBufferPool` when the socket
becomes readable and given back once every received byte was framed, so an idle connection costs
no buffer (1,000 idle clients would otherwise pin 256 MB). While the connection is muted (a
quota), whole frames wait in the receive buffer and reading is paused.

Sending: a response is one ``writelines`` of its buffers (TLS: see below). Fetched record bytes arrive as
:class:`~zurau.storage.file_region.FileRegion` pieces (a range of a segment file) and go out with ``os.sendfile`` straight
from the page cache when the socket is plain TCP and nothing is queued before them; otherwise (TLS,
a full socket buffer) the rest of the region is read and queued like any other buffer.

Under TLS every buffer handed to the transport becomes at least one TLS record of its own (the
transport encrypts each buffer separately), and each record costs both ends a fixed amount of
OpenSSL work (~2 us here) besides its bytes. So on a TLS connection the buffers of a response
between file regions are joined into writes of up to ``TLS_WRITE_BYTES`` (a Produce answer is
one record, not three), and a file region is read and written in pieces of ``TLS_WRITE_BYTES``:
each is encrypted into, and read back out of, a buffer that stays in the CPU cache (measured:
256 KiB or whole-region writes cost the broker twice the CPU per MB of 64 KiB ones).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import time
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from zurau.broker.handlers._authz import controller_listener_allowed
from zurau.broker.quotas.throttling import exempt, produce_throttle_ms, request_throttle_ms
from zurau.broker.request_context import CloseConnection, RequestContext
from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.frame import (
    Frame,
    FrameReceiver,
    FrameTooLarge,
    ReceiveBufferPool,
    parse_request_header,
    peek_api,
    response_header,
    size_prefix,
)
from zurau.protocol.primitives import DecodeError
from zurau.replication.purgatory import WaitTime, request_wait
from zurau.storage.file_region import FileRegion

if TYPE_CHECKING:
    from zurau.broker.auth.session import SecuritySession
    from zurau.broker.dispatcher import Handler
    from zurau.broker.request_context import BrokerServices

#: APIs anyone may send on a controller listener (to learn versions and authenticate).
_OPEN_ON_CONTROLLER_LISTENERS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.API_VERSIONS, ApiKey.SASL_AUTHENTICATE})

#: APIs a node answers from its own metadata image (not through the active controller). On a
#: controller listener, which serves from the moment the node listens (Raft needs it), they are
#: refused (the connection closed with the reason logged, so the client retries elsewhere or
#: later) until the node's image has caught up with the quorum: a node restarted without a
#: snapshot starts from an empty image, and one whose quorum has no leader would otherwise answer
#: from it indefinitely.
LOCAL_IMAGE_APIS = frozenset(
    {
        ApiKey.METADATA,
        ApiKey.DESCRIBE_ACLS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
        ApiKey.LIST_CONFIG_RESOURCES,
    }
)


class ConnectionHost(Protocol):
    """What a connection needs of the server that accepted it (:class:`zurau.broker.server.BrokerServer`)."""

    @property
    def services(self) -> BrokerServices: ...

    @property
    def handlers(self) -> Mapping[int, Handler]: ...

    def new_session(self, conn: KafkaConnection) -> SecuritySession:
        """The authentication state of a connection accepted on ``conn.listener``."""
        ...

    def admit(self, conn: KafkaConnection, ip: str) -> str | None:
        """Count a newly accepted connection; the reason to close it when it is over a limit."""
        ...

    def release(self, conn: KafkaConnection) -> None:
        """Forget a closed connection."""
        ...

log = logging.getLogger("zurau.connection")

MAX_IN_FLIGHT = 64
RECEIVE_BUFFER_BYTES = 256 * 1024  # reused for headers and small frames
DIRECT_FRAME_BYTES = 64 * 1024  # frames this large are received straight into their own buffer
TLS_WRITE_BYTES = 64 * 1024  # fetched file bytes go to a TLS transport in pieces of this size (measured best)
RECEIVE_BUFFERS_KEPT = 64  # free receive buffers kept for reuse (the rest are freed)
_NO_RESPONSE = object()
# Free receive buffers, shared by every connection of the process (brokers in several threads too).
_RECEIVE_BUFFERS = ReceiveBufferPool(RECEIVE_BUFFER_BYTES, RECEIVE_BUFFERS_KEPT)


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
        self.frames = FrameReceiver(
            self.max_frame_bytes, direct_bytes=DIRECT_FRAME_BYTES, pool=_RECEIVE_BUFFERS, writable=True
        )
        self.pending: deque[_Slot] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._reading_paused = False
        self._writing_paused = False
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sendfile_fd = -1  # the socket's descriptor when os.sendfile may write to it
        self._tls = False  # whether the transport encrypts (TLS): each write is a record of its own
        self.last_active = time.monotonic()  # last bytes received or response written
        self._metrics = host.services.metrics  # None: metrics are off
        self.session = host.new_session(self)  # authentication state and principal (broker.auth)
        self._quotas = getattr(host.services, "quotas", None)  # None: quotas are never enforced
        self._muted = False  # throttled by a quota: nothing is read until _muted_until
        self._muted_until = 0.0
        self.metadata_requests = 0  # Metadata requests received (zurau.broker.broker_rejoin)
        # (client_software_name, client_software_version) from ApiVersions v3+ (KIP-511).
        self.client_software: tuple[str, str] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        sock = transport.get_extra_info("socket")
        self._tls = transport.get_extra_info("sslcontext") is not None
        if sock is not None and not self._tls:
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
        return self.frames.buffer()

    def idle_for(self, now: float) -> float:
        """Seconds since the last activity, or 0 while a request is in progress or bytes wait
        to be sent (``connections.max.idle.ms``)."""
        transport = self.transport
        if self.pending or (transport is not None and transport.get_write_buffer_size()):
            return 0.0
        return now - self.last_active

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        self.frames.filled(nbytes)
        self._take_frames()
        self._update_reading()

    def _take_frames(self) -> None:
        """Handle every whole frame received, unless closed or muted (they wait for the unmute)."""
        frames = self.frames
        while not self._closed and not self._muted:
            try:
                frame = frames.next_frame()
            except FrameTooLarge as e:
                self.close(f"{e} (socket.request.max.bytes)")
                return
            if frame is None:
                return
            self._on_frame(frame)

    # ------------------------------------------------------------------ requests
    def close(self, reason: str, level: int = logging.WARNING) -> None:
        if not self._closed:
            log.log(level, "closing connection from %s: %s", self.peer, reason)
            self._closed = True
            if self.transport is not None:
                self.transport.close()

    def _on_frame(self, frame: Frame) -> None:
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
        if api_key == ApiKey.METADATA:
            self.metadata_requests += 1
        handler = self.host.handlers.get(api_key)
        if handler is None:
            self.close(f"unknown api key {api_key}")
            return
        if handler.schema.broker_only and self.listener in self.host.services.controller_listeners:
            # Kafka's controllers do not serve it (ApiVersions leaves it out here too).
            self.close(f"{handler.schema.name} (api key {api_key}) is not served on controller listener {self.listener}")
            return
        if not handler.supports(version):
            if api_key == ApiKey.API_VERSIONS:
                # Answer in v0 form so any client can read the supported ranges and retry.
                slot = _Slot(correlation_id, ApiKey.API_VERSIONS, 0, 0)
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
            if api_key == ApiKey.PRODUCE:  # its bytes count as it arrives, holding back what follows
                slot.throttle_ms = produce_throttle_ms(quotas, session.principal, slot.quota, len(frame))
                if slot.throttle_ms:
                    self._mute(slot.throttle_ms)
            if slot.wait is None:
                slot.wait = WaitTime()
                request_wait.set(slot.wait)
            slot.started = time.perf_counter()
        if api_key == ApiKey.API_VERSIONS and version >= 3:
            self.client_software = (request.get("client_software_name", ""), request.get("client_software_version", ""))
        ctx = RequestContext(header, self.host.services, self.peer, self.listener, session, self.client_software)
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
        if (api_key in LOCAL_IMAGE_APIS and self.listener in self.host.services.controller_listeners
                and not self.host.services.metadata_caught_up()):
            self.close(
                f"{schema.name} on controller listener {self.listener} before this node's metadata has "
                "caught up with the quorum (it would be answered from an incomplete image)"
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
            if not any(type(p) is FileRegion for p in pieces):
                if self._tls:  # one TLS record (or run of full ones), not one per piece
                    self._write_run(transport, [size_prefix(total), head, *pieces])
                else:
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
        self._take_frames()  # requests received while muted
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
                    self._write_run(transport, run)
                    run = []
                sent = 0
                if self._sendfile_fd >= 0 and transport.get_write_buffer_size() == 0:
                    sent = self._sendfile(b)
                if self._sendfile_fd < 0 and b.size - sent > TLS_WRITE_BYTES:
                    # TLS: hand the transport pieces of TLS_WRITE_BYTES, so each is encrypted
                    # into (and read back out of) a buffer that stays warm in cache instead of
                    # one fresh allocation the size of the whole region (module docstring).
                    for chunk in b.chunks(sent, TLS_WRITE_BYTES):
                        transport.write(chunk)
                elif sent < b.size:
                    transport.write(b.read(sent))
                b.close()
            if run:
                self._write_run(transport, run)
        except EOFError as e:
            self.close(f"cannot send fetched data: {e}")
            return False
        finally:
            for b in bufs:
                if type(b) is FileRegion:
                    b.close()
        return True

    def _write_run(self, transport: asyncio.Transport, run: list[Any]) -> None:
        """Write buffers that go out back to back. Under TLS, consecutive buffers are joined into
        writes of up to ``TLS_WRITE_BYTES`` (a larger buffer goes alone), so small pieces share
        records and no write is larger than needed; else they go as they are, in one writelines."""
        if not self._tls:
            transport.writelines(run)
            return
        group: list[Any] = []
        size = 0
        for b in run:
            n = len(b)
            if group and size + n > TLS_WRITE_BYTES:
                transport.write(group[0] if len(group) == 1 else b"".join(group))
                group, size = [], 0
            group.append(b)
            size += n
        if group:
            transport.write(group[0] if len(group) == 1 else b"".join(group))

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
