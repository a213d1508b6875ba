"""One client connection: frames in, handlers run, responses out in request order.

Requests are decoded as they arrive and their handlers start at once, so a long-polling Fetch does
not hold up a Produce pipelined behind it on the same socket; responses are still written strictly
in request order, as Kafka clients require (they match responses by order and correlation id).

Bad input closes only this connection, with a logged reason: an oversized or negative frame size,
an unknown api key, an undecodable header or body, an unsupported version of an API other than
ApiVersions (which is answered in v0 form with UNSUPPORTED_VERSION, as clients expect).

Flow control: reading pauses while more than ``MAX_IN_FLIGHT`` requests wait for their response or
while the transport's write buffer is above its high-water mark.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from zurau.broker.request_context import CloseConnection, RequestContext
from zurau.protocol import codec
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.frame import (
    FrameDecoder,
    FrameTooLarge,
    parse_request_header,
    peek_api,
    response_header,
    size_prefix,
)
from zurau.protocol.primitives import DecodeError

if TYPE_CHECKING:
    from zurau.broker.server import Broker

log = logging.getLogger("zurau.connection")

MAX_IN_FLIGHT = 64
_NO_RESPONSE = object()


class _Slot:
    __slots__ = ("correlation_id", "api_key", "version", "header_version", "response", "done")

    def __init__(self, correlation_id: int, api_key: int, version: int, header_version: int) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.header_version = header_version
        self.response: Any = None
        self.done = False


class KafkaConnection(asyncio.Protocol):
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.decoder = FrameDecoder(broker.config.socket_request_max_bytes)
        self.pending: deque[_Slot] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._reading_paused = False
        self._writing_paused = False
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.broker.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.broker.connections.discard(self)
        for t in self._tasks:
            t.cancel()
        self.pending.clear()

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except FrameTooLarge as e:
            self.close(f"{e} (socket.request.max.bytes)")
            return
        for frame in frames:
            if self._closed:
                return
            self._on_frame(frame)
        self._update_reading()

    # ------------------------------------------------------------------ requests
    def close(self, reason: str) -> None:
        if not self._closed:
            log.warning("closing connection from %s: %s", self.peer, reason)
            self._closed = True
            if self.transport is not None:
                self.transport.close()

    def _on_frame(self, frame: bytes) -> None:
        try:
            api_key, version, correlation_id = peek_api(frame)
        except DecodeError as e:
            self.close(str(e))
            return
        handler = self.broker.handlers.get(api_key)
        if handler is None:
            self.close(f"unknown api key {api_key}")
            return
        if not handler.supports(version):
            if api_key == 18:
                # Answer in v0 form so any client can read the supported ranges and retry.
                slot = _Slot(correlation_id, 18, 0, 0)
                slot.response = {
                    "error_code": UnsupportedVersionError.code,
                    "api_keys": self.broker.api_versions,
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
        ctx = RequestContext(header, self.broker, self.peer)
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
            task.add_done_callback(lambda t, s=slot: self._task_done(t, s))
        else:
            slot.response = result if result is not None else _NO_RESPONSE
            slot.done = True
            self._flush()

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
        self._flush()

    def _flush(self) -> None:
        transport = self.transport
        pending = self.pending
        while pending and pending[0].done:
            slot = pending.popleft()
            if slot.response is _NO_RESPONSE or transport is None or self._closed:
                continue
            try:
                pieces = codec.encode_pieces(slot.api_key, slot.version, "response", slot.response)
            except Exception:
                log.exception("cannot encode api key %d v%d response", slot.api_key, slot.version)
                self.close("internal error encoding a response")
                return
            head = response_header(slot.correlation_id, slot.header_version)
            total = len(head) + sum(len(p) for p in pieces)
            transport.writelines([size_prefix(total), head, *pieces])
        self._update_reading()

    def _update_reading(self) -> None:
        if self.transport is None or self._closed:
            return
        should_pause = self._writing_paused or len(self.pending) >= MAX_IN_FLIGHT
        if should_pause and not self._reading_paused:
            self.transport.pause_reading()
            self._reading_paused = True
        elif not should_pause and self._reading_paused:
            self.transport.resume_reading()
            self._reading_paused = False
