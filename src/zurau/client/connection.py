"""One asyncio connection to one broker: ApiVersions negotiation and pipelined requests.

Framing is :mod:`zurau.protocol.frame`'s: :func:`~zurau.protocol.frame.encode_request` writes
each request (header v1, v2 for flexible versions), a :class:`~zurau.protocol.frame.FrameDecoder`
cuts the byte stream into responses, and :func:`~zurau.protocol.frame.decode_response` reads each
(header v0, v1 for flexible versions, ApiVersions always v0 and read in v0 form when it reports
UNSUPPORTED_VERSION).

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
import contextlib
import functools
import importlib.metadata
import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

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
from zurau.protocol.frame import FrameDecoder, decode_response, encode_request, response_correlation_id
from zurau.protocol.primitives import DecodeError
from zurau.protocol.sasl import SaslError

if TYPE_CHECKING:
    from zurau.client.security import ClientSecurity

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
_READ_BYTES = 256 * 1024  # the most one socket read hands to the frame decoder


K = TypeVar("K", bound=Hashable)

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
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task[None] | None = None
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
        return self._writer is not None and not self._closed

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # ------------------------------------------------------------------ lifecycle
    async def connect(self, timeout: float = 10.0) -> BrokerConnection:
        """Open the socket and negotiate API versions. BrokerUnreachableError if it cannot."""
        security = self.security
        tls = security.ssl_context() if security is not None else None
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=tls, server_hostname=self.host if tls else None),
                timeout,
            )
        except (OSError, TimeoutError) as e:
            reason = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
            raise BrokerUnreachableError(f"cannot connect to {self.address}: {reason}") from None
        self._read_task = asyncio.get_running_loop().create_task(
            self._read_loop(), name=f"zurau-client-read-{self.address}"
        )
        try:
            await self._negotiate(timeout)
            if security is not None and security.uses_sasl:
                await self._authenticate(security, timeout)
        except BaseException:
            await self.close()
            raise
        return self

    async def _negotiate(self, timeout: float) -> None:
        body = {"client_software_name": "zurau", "client_software_version": _software_version()}
        version = _FIRST_API_VERSIONS_VERSION
        for _ in range(2):
            resp = await self._send(API_VERSIONS, version, body, timeout)
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
            return
        raise UnsupportedApiError(f"{self.address} speaks no ApiVersions version this client knows")

    async def _authenticate(self, security: ClientSecurity, timeout: float) -> None:
        """SaslHandshake v1 then SaslAuthenticate rounds until the mechanism completes."""
        mechanism = security.sasl_mechanism.upper()
        resp = await self._send(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism}, timeout)
        if resp["error_code"]:
            offered = ", ".join(resp["mechanisms"]) or "none"
            raise AuthenticationError(
                f"{self.address} refused SASL mechanism {mechanism} (error {resp['error_code']}; it offers {offered})"
            )
        client = security.sasl_client()
        assert client is not None
        version = self.version(ApiKey.SASL_AUTHENTICATE, 2)
        token: bytes | None = client.first()
        try:
            while token is not None:
                resp = await self._send(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token}, timeout)
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
        """Close the socket, fail waiting requests, and wait for the reader task to end."""
        self._fail_all("connection closed")
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        task, self._read_task = self._read_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

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
        """Send one request and return the decoded answer (``{}`` when none is expected)."""
        if self._reauthenticating is not None or (
            self._reauth_at is not None and asyncio.get_running_loop().time() >= self._reauth_at
        ):
            await self._reauthenticate()
        if version is None:
            version = self.version(api_key, max_version)
        return await self._send(api_key, version, body, timeout, expect_response)

    async def _send(
        self,
        api_key: int,
        version: int,
        body: dict[str, Any],
        timeout: float | None,
        expect_response: bool = True,
    ) -> dict[str, Any]:
        if self._closed or self._writer is None:
            raise ConnectionLostError(f"connection to {self.address} is closed ({self._close_reason})")
        schema = codec.schema_for(api_key)
        cid = self._next_correlation_id
        self._next_correlation_id = (cid + 1) & 0x7FFFFFFF
        frame = encode_request(api_key, version, cid, self.client_id, body)
        fut: asyncio.Future[dict[str, Any]] | None = None
        if expect_response:
            fut = asyncio.get_running_loop().create_future()
            self._pending[cid] = (fut, api_key, version)
        self._writer.write(frame)
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as e:
            self._fail_all(f"write failed: {e}")
            if fut is not None:
                # _fail_all has set the exception; retrieve it so it is not reported as unretrieved.
                fut.exception()
            raise ConnectionLostError(f"connection to {self.address} lost: {e}") from None
        if fut is None:
            return {}
        wait = self.request_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(fut, wait)
        except TimeoutError:
            self._pending.pop(cid, None)
            self._fail_all(f"{schema.name} timed out")
            raise RequestTimeoutError(
                f"{schema.name} to {self.address} got no answer within {wait * 1000:.0f} ms"
            ) from None

    async def _read_loop(self) -> None:
        reader = self._reader
        assert reader is not None
        reason = "closed by the broker"
        frames = FrameDecoder(MAX_RESPONSE_SIZE)
        try:
            while True:
                data = await reader.read(_READ_BYTES)
                if not data:
                    break
                for frame in frames.feed(data):
                    cid = response_correlation_id(frame)
                    entry = self._pending.pop(cid, None)
                    if entry is None:
                        continue  # the answer to a request that timed out
                    fut, api_key, version = entry
                    if fut.done():
                        continue
                    try:
                        fut.set_result(decode_response(api_key, version, frame)[1])
                    except DecodeError as e:
                        fut.set_exception(ConnectionLostError(f"undecodable answer from {self.address}: {e}"))
        except asyncio.CancelledError:
            raise
        except DecodeError as e:  # a size prefix out of bounds, or a response too short for its id
            reason = f"invalid response: {e}"
        except (ConnectionError, OSError) as e:
            reason = str(e)
        self._fail_all(reason)

    def _fail_all(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            self._close_reason = reason
            if self._writer is not None:
                self._writer.close()
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
