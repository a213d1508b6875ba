"""One asyncio connection to one broker: ApiVersions negotiation and pipelined requests.

Framing is :mod:`zurau.protocol.frame`'s: :func:`~zurau.protocol.frame.encode_request` writes
each request (header v1, v2 for flexible versions), a :class:`~zurau.protocol.frame.FrameReceiver`
cuts the byte stream into responses, and :func:`~zurau.protocol.frame.decode_response` reads each
(header v0, v1 for flexible versions, ApiVersions always v0 and read in v0 form when it reports
UNSUPPORTED_VERSION).

Receiving: the socket is read by an ``asyncio.BufferedProtocol`` (:class:`_ResponseProtocol`), so
the transport ``recv_into``s the receiver's buffers (under TLS, decrypts into them). A response of
16 KiB or more is received straight into a buffer of exactly its size and decoded in place: the
records of a Fetch answer reach their reader (a follower's log append, the consumer) as read-only
views of the bytes the kernel copied in, with no copy in between. Smaller answers are sliced out
of one reusable 64 KiB buffer. Responses are decoded in the protocol's callback, as they arrive;
no task reads the socket.

Invariants:

* Requests are written in the order :meth:`BrokerConnection.request` is called and the broker
  answers in that order; every answer is matched to its waiting future by correlation id, so any
  number of requests may be in flight (pipelining).
* :meth:`connect` negotiates versions before anything else: it sends ApiVersions v3 and, if the
  broker answers UNSUPPORTED_VERSION (in v0 form, listing what it serves), retries with the
  highest version both sides know. :meth:`version` then picks, per API, the highest version in
  the intersection of the broker's range, this codebase's schema range and the caller's cap.
* With a :class:`~zurau.client.security.ClientSecurity`, the socket speaks TLS (SSL, SASL_SSL)
  and, after ApiVersions, authenticates with SaslHandshake v1 and SaslAuthenticate (SASL_*)
  before any other request; a refusal raises :class:`AuthenticationError` with the broker's
  message and closes the connection. When the broker gives the session a lifetime
  (``connections.max.reauth.ms``, KIP-368), the client re-authenticates on the same connection
  once 85% of it has passed: the next request waits while the requests in flight finish and the
  SaslHandshake/SaslAuthenticate exchange runs, then goes out.
* A request that gets no answer within its timeout fails with RequestTimeoutError and closes the
  connection (as Kafka's Java client does), failing every other waiting request with
  ConnectionLostError; so does the peer closing the socket. After :meth:`close` returns no task
  of this connection is left running.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from zurau.client import typed_api
from zurau.client.errors import (
    AuthenticationError,
    BrokerUnreachableError,
    ConnectionLostError,
    RequestTimeoutError,
    UnsupportedApiError,
)
from zurau.protocol import codec
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import UnsupportedVersionError
from zurau.protocol.frame import (
    Frame,
    FrameReceiver,
    decode_response,
    encode_request,
    response_correlation_id,
)
from zurau.protocol.primitives import DecodeError
from zurau.protocol.sasl import SaslError

if TYPE_CHECKING:
    from zurau.client.security import ClientSecurity
    from zurau.client.typed_api import Call
    from zurau.protocol.messages import SaslAuthenticateResponse

log = logging.getLogger("zurau.client")


@functools.cache
def _software_version() -> str:
    """Zurau's version for ApiVersions (read from the installed metadata, not from the
    ``zurau`` package, whose lazy exports reach the broker stack)."""
    try:
        return importlib.metadata.version("zurau")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "0"


API_VERSIONS = ApiKey.API_VERSIONS
_FIRST_API_VERSIONS_VERSION = 3
MAX_RESPONSE_SIZE = 1 << 30  # sanity bound on an answer's size prefix
_CLOSE_WAIT_S = 5.0  # how long close() waits for queued bytes to drain before it aborts


K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


class _ResponseProtocol(asyncio.BufferedProtocol):
    """The socket side of one :class:`BrokerConnection`: receives into a
    :class:`~zurau.protocol.frame.FrameReceiver`'s buffers and hands each whole response to the
    connection; write flow control (:meth:`drain`) and the end of the connection (:attr:`closed`).

    Invariant: the connection hears of this socket only after ``connection_made`` (a TLS handshake
    that fails is reported by ``create_connection`` alone); once a response could not be framed or
    decoded, every later byte is dropped and the connection is failed.
    """

    def __init__(self, conn: BrokerConnection, loop: asyncio.AbstractEventLoop) -> None:
        self._conn = conn
        self._loop = loop
        self.frames = FrameReceiver(MAX_RESPONSE_SIZE)
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = loop.create_future()
        self._failed = False
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's is not a subclass

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._failed:
            self.frames.reset()
            return
        try:
            for frame in self.frames.received(nbytes):
                self._conn._on_frame(frame)
        except Exception as e:  # a size out of bounds, a response too short for its id, a decoder bug
            self._failed = True
            self.frames.reset()
            self._conn._fail_all(f"invalid response: {e}")

    def eof_received(self) -> bool:
        return False  # close: a broker never half-closes a connection it still answers on

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self._conn._fail_all("closed by the broker" if exc is None else str(exc))
        waiters, self._drain_waiters = self._drain_waiters, []
        for w in waiters:
            if not w.done():
                w.set_exception(ConnectionResetError("connection lost"))
                w.exception()  # retrieved: the writer waiting on it re-raises it
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        waiters, self._drain_waiters = self._drain_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is over its high-water mark (``StreamWriter.drain``).
        ConnectionResetError if the connection is lost meanwhile."""
        if self.closed.done():
            raise ConnectionResetError("connection lost")
        if not self._write_paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter


class BrokerConnection:
    """A connection to ``host:port``; ``node_id`` is -1 until metadata names the broker."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "zurau",
        request_timeout: float = 30.0,
        node_id: int = -1,
        security: ClientSecurity | None = None,
    ) -> None:
        self.host = host
        self.security = security
        self.port = port
        self.node_id = node_id
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.api_versions: dict[int, tuple[int, int]] = {}
        #: The cluster's finalized feature levels (KIP-584) as ApiVersions v3+ reported them when
        #: this connection was made (e.g. ``transaction.version``); empty before v3.
        self.finalized_features: dict[str, int] = {}
        self._transport: asyncio.Transport | None = None
        self._protocol: _ResponseProtocol | None = None
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]], int, int]] = {}
        self._next_correlation_id = 0
        self._closed = False
        self._close_reason: str | None = None
        self._reauth_at: float | None = None  # loop time to re-authenticate at (KIP-368)
        self._reauthenticating: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port}, node {self.node_id})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._transport is not None and not self._closed

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # ------------------------------------------------------------------ lifecycle
    async def connect(self, timeout: float = 10.0) -> BrokerConnection:
        """Open the socket and negotiate API versions. BrokerUnreachableError if it cannot."""
        security = self.security
        tls = security.ssl_context() if security is not None else None
        loop = asyncio.get_running_loop()
        protocol = _ResponseProtocol(self, loop)
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(
                    lambda: protocol, self.host, self.port, ssl=tls, server_hostname=self.host if tls else None
                ),
                timeout,
            )
        except (OSError, TimeoutError) as e:
            reason = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
            raise BrokerUnreachableError(f"cannot connect to {self.address}: {reason}") from None
        self._transport, self._protocol = transport, protocol
        try:
            await self._negotiate(timeout)
            if security is not None and security.uses_sasl:
                await self._authenticate(security, timeout)
        except BaseException:
            await self.close()
            raise
        return self

    async def _negotiate(self, timeout: float) -> None:
        call = typed_api.API_VERSIONS(
            {"client_software_name": "zurau", "client_software_version": _software_version()}
        )
        version = _FIRST_API_VERSIONS_VERSION
        for _ in range(2):
            resp = await self._call(call, version, timeout)
            ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in resp["api_keys"]}
            if resp["error_code"] == UnsupportedVersionError.code and API_VERSIONS in ranges:
                lo, hi = ranges[API_VERSIONS]
                version = min(hi, codec.schema_for(API_VERSIONS).max_version)
                if version < lo:
                    break
                continue
            if resp["error_code"]:
                raise UnsupportedApiError(f"{self.address} refused ApiVersions (error {resp['error_code']})")
            self.api_versions = ranges
            self.finalized_features = {
                f["name"]: f["max_version_level"] for f in resp.get("finalized_features") or ()
            }
            return
        raise UnsupportedApiError(f"{self.address} speaks no ApiVersions version this client knows")

    async def _authenticate(self, security: ClientSecurity, timeout: float) -> None:
        """SaslHandshake v1 then SaslAuthenticate rounds until the mechanism completes."""
        mechanism = security.sasl_mechanism.upper()
        handshake = await self._call(typed_api.SASL_HANDSHAKE({"mechanism": mechanism}), 1, timeout)
        if handshake["error_code"]:
            offered = ", ".join(handshake["mechanisms"]) or "none"
            raise AuthenticationError(
                f"{self.address} refused SASL mechanism {mechanism}"
                f" (error {handshake['error_code']}; it offers {offered})"
            )
        client = security.sasl_client()
        assert client is not None
        version = self.version(ApiKey.SASL_AUTHENTICATE, 2)
        token: bytes | None = client.first()
        resp: SaslAuthenticateResponse = {}
        try:
            while token is not None:
                resp = await self._call(typed_api.SASL_AUTHENTICATE({"auth_bytes": token}), version, timeout)
                if resp["error_code"]:
                    raise AuthenticationError(
                        f"{self.address}: {resp['error_message'] or 'SASL authentication failed'}"
                        f" (error {resp['error_code']})"
                    )
                token = client.step(bytes(resp["auth_bytes"]))
        except SaslError as e:
            raise AuthenticationError(f"{self.address}: {e}") from None
        lifetime_ms = resp.get("session_lifetime_ms", 0)
        loop = asyncio.get_running_loop()
        self._reauth_at = loop.time() + 0.85 * lifetime_ms / 1000 if lifetime_ms > 0 else None

    async def _reauthenticate(self) -> None:
        """Re-authenticate once no request is in flight; concurrent callers wait for it."""
        if self._reauthenticating is not None:
            await asyncio.shield(self._reauthenticating)
            return
        loop = asyncio.get_running_loop()
        done = self._reauthenticating = loop.create_future()
        try:
            while self._pending and not self._closed:
                await asyncio.sleep(0.002)
            assert self.security is not None
            await self._authenticate(self.security, self.request_timeout)
            done.set_result(None)
        except BaseException as e:
            done.set_exception(e)
            done.exception()  # retrieved: the waiters re-raise it
            raise
        finally:
            self._reauthenticating = None

    async def close(self) -> None:
        """Close the socket, fail waiting requests, and wait until the socket is closed (queued
        bytes are given :data:`_CLOSE_WAIT_S` to go out, then the connection is aborted)."""
        self._fail_all("connection closed")
        transport, self._transport = self._transport, None
        protocol = self._protocol
        if transport is None or protocol is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(protocol.closed), _CLOSE_WAIT_S)
        except TimeoutError:
            transport.abort()

    # ------------------------------------------------------------------ versions
    def supports(self, api_key: int) -> bool:
        return api_key in self.api_versions

    def version(self, api_key: int, max_version: int | None = None, min_version: int = 0) -> int:
        """The highest version of ``api_key`` both sides speak, within [min_version, max_version]."""
        schema = codec.schema_for(api_key)
        theirs = self.api_versions.get(api_key)
        if theirs is None:
            raise UnsupportedApiError(
                f"broker {self.address} does not serve {schema.name} (api key {api_key})"
            )
        hi = min(theirs[1], schema.max_version, max_version if max_version is not None else 1 << 15)
        lo = max(theirs[0], schema.min_version, min_version)
        if hi < lo:
            raise UnsupportedApiError(
                f"broker {self.address} serves {schema.name} v{theirs[0]}-{theirs[1]}, "
                f"this client needs v{lo}-{min(schema.max_version, max_version or schema.max_version)}"
            )
        return hi

    # ------------------------------------------------------------------ requests
    async def request(
        self,
        api_key: int,
        body: dict[str, Any],
        *,
        version: int | None = None,
        max_version: int | None = None,
        timeout: float | None = None,
        expect_response: bool = True,
    ) -> dict[str, Any]:
        """Send one request and return the decoded answer (``{}`` when none is expected).

        The untyped form: the client's own modules send typed calls (:meth:`call`,
        :meth:`send_only`); the broker's inter-broker channels, the CLI and tests still use this."""
        if self._reauthenticating is not None or (
            self._reauth_at is not None and asyncio.get_running_loop().time() >= self._reauth_at
        ):
            await self._reauthenticate()
        if version is None:
            version = self.version(api_key, max_version)
        return await self._send(api_key, version, body, timeout, expect_response)

    async def call(
        self,
        call: Call[R],
        *,
        version: int | None = None,
        max_version: int | None = None,
        timeout: float | None = None,
    ) -> R:
        """As :meth:`request` for a typed call (:mod:`zurau.client.typed_api`): its answer, typed."""
        return call.answer(
            await self.request(call.api_key, call.body, version=version, max_version=max_version, timeout=timeout)
        )

    async def send_only(self, call: Call[Any], *, version: int | None = None, max_version: int | None = None) -> None:
        """Send a request the broker does not answer (Produce with acks=0): returns once it is
        written (and the socket drained)."""
        await self.request(call.api_key, call.body, version=version, max_version=max_version, expect_response=False)

    async def _call(self, call: Call[R], version: int, timeout: float | None) -> R:
        """:meth:`call` at ``version`` during connection setup (ApiVersions, SASL): no version
        negotiation, no re-authentication check."""
        return call.answer(await self._send(call.api_key, version, call.body, timeout))

    async def _send(
        self,
        api_key: int,
        version: int,
        body: dict[str, Any],
        timeout: float | None,
        expect_response: bool = True,
    ) -> dict[str, Any]:
        transport, protocol = self._transport, self._protocol
        if self._closed or transport is None or protocol is None:
            raise ConnectionLostError(f"connection to {self.address} is closed ({self._close_reason})")
        schema = codec.schema_for(api_key)
        cid = self._next_correlation_id
        self._next_correlation_id = (cid + 1) & 0x7FFFFFFF
        frame = encode_request(api_key, version, cid, self.client_id, body)
        fut: asyncio.Future[dict[str, Any]] | None = None
        if expect_response:
            fut = asyncio.get_running_loop().create_future()
            self._pending[cid] = (fut, api_key, version)
        transport.write(frame)
        try:
            await protocol.drain()
        except (ConnectionError, OSError) as e:
            self._fail_all(f"write failed: {e}")
            if fut is not None:
                # _fail_all has set the exception; retrieve it so it is not reported as unretrieved.
                fut.exception()
            raise ConnectionLostError(f"connection to {self.address} lost: {e}") from None
        if fut is None:
            return {}
        wait = self.request_timeout if timeout is None else timeout
        # A timer rather than asyncio.wait_for (which adds a future and two callbacks per request).
        timer = asyncio.get_running_loop().call_later(wait, self._time_out, cid, fut, schema.name, wait)
        try:
            return await fut
        finally:
            timer.cancel()

    def _time_out(self, cid: int, fut: asyncio.Future[dict[str, Any]], name: str, wait: float) -> None:
        """Request ``cid`` got no answer in time: it fails with RequestTimeoutError and the
        connection closes (failing every other waiting request)."""
        if fut.done():
            return
        self._pending.pop(cid, None)
        fut.set_exception(RequestTimeoutError(f"{name} to {self.address} got no answer within {wait * 1000:.0f} ms"))
        self._fail_all(f"{name} timed out")

    def _on_frame(self, frame: Frame) -> None:
        """One response (without its size prefix): decoded for the request waiting for it."""
        entry = self._pending.pop(response_correlation_id(frame), None)
        if entry is None:
            return  # the answer to a request that timed out
        fut, api_key, version = entry
        if fut.done():
            return
        try:
            fut.set_result(decode_response(api_key, version, frame)[1])
        except DecodeError as e:
            fut.set_exception(ConnectionLostError(f"undecodable answer from {self.address}: {e}"))

    def _fail_all(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            self._close_reason = reason
            if self._transport is not None:
                self._transport.close()
        pending, self._pending = self._pending, {}
        for fut, api_key, _v in pending.values():
            if not fut.done():
                name = codec.schema_for(api_key).name
                fut.set_exception(
                    ConnectionLostError(f"connection to {self.address} lost during {name}: {reason}")
                )


class ConnectionCache(Generic[K]):
    """Connections by key (a node id, or a node and a purpose), opened on demand.

    Invariants: at most one connection per key is open or being opened -- concurrent callers for
    one key share a single attempt; a connection is handed out only once it has connected and
    negotiated API versions; a connection found closed is replaced. ``close()`` closes them all.
    """

    def __init__(self, factory: Callable[[K], BrokerConnection], connect_timeout: float) -> None:
        self._factory = factory
        self._timeout = connect_timeout
        self._conns: dict[K, BrokerConnection] = {}
        self._opening: dict[K, asyncio.Future[BrokerConnection]] = {}

    async def get(self, key: K) -> BrokerConnection:
        conn = self._conns.get(key)
        if conn is not None and conn.connected:
            return conn
        pending = self._opening.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._open(key))
            self._opening[key] = pending
            pending.add_done_callback(lambda _f: self._opening.pop(key, None))
        return await asyncio.shield(pending)

    async def _open(self, key: K) -> BrokerConnection:
        stale = self._conns.pop(key, None)
        if stale is not None:
            await stale.close()
        conn = self._factory(key)
        await conn.connect(timeout=self._timeout)
        self._conns[key] = conn
        return conn

    async def drop(self, key: K) -> None:
        """Close and forget the connection of ``key`` (after a failure on it)."""
        conn = self._conns.pop(key, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for pending in list(self._opening.values()):
            pending.cancel()
        for conn in list(self._conns.values()):
            await conn.close()
        self._conns.clear()
