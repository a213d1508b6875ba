"""The broker's network shell: listeners and the connections they accept.

``BrokerServer`` owns every socket and nothing else: each accepted connection is a
:class:`~zurau.broker.connection.KafkaConnection` that decodes requests, runs the handler for the
api key with a :class:`~zurau.broker.request_context.RequestContext` over the broker's
services, and writes responses in request order. What the services are, and how the node is
put together, is the composition root's business (:mod:`zurau.app`).

Kafka's connection settings, as this server applies them:

* ``socket.listen.backlog.size`` is each listening socket's backlog.
* ``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``, by IP address or host
  name) and ``max.connections``: a connection beyond a limit is closed as soon as it is accepted,
  with a logged reason (for ``max.connections`` Kafka leaves it waiting in the backlog instead).
  As in Kafka, the inter-broker listener is exempt from ``max.connections`` when there are other
  listeners; controller listeners (a separate socket server in Kafka) are not limited or counted.
* ``connection_creation_rate`` client quotas (``ip`` entities, :mod:`zurau.broker.quotas`): a
  connection over its IP's rate is closed as soon as it is accepted.
* ``connections.max.idle.ms``: a connection with no request in progress, nothing left to send
  and no bytes received for that long is closed (checked a few times per period; <= 0 never).
* When a broker joins the live brokers (:meth:`BrokerServer.on_image`, e.g. unfenced after a
  restart), the client connections of that moment are closed once idle, so that clients which
  forgot the broker while it was down read Metadata again (:mod:`zurau.broker.broker_rejoin`).

Security (:mod:`zurau.broker.auth`): each listener's protocol decides whether it speaks TLS (SSL,
SASL_SSL; its context is checked every ``TLS_RELOAD_CHECK_S`` for changed PEM files) and SASL
(SASL_PLAINTEXT, SASL_SSL); every connection gets a :class:`SecuritySession` with its principal.
A TLS handshake that does not finish within ``TLS_HANDSHAKE_TIMEOUT_S`` is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from zurau.broker.auth.delegation_token_cache import DelegationTokenCache
from zurau.broker.auth.listener_security import ListenerSecurity, listener_security
from zurau.broker.auth.session import SecuritySession
from zurau.broker.auth.ssl_context import ListenerSslContext
from zurau.broker.broker_rejoin import BrokerRejoinRefresh
from zurau.broker.connection import KafkaConnection
from zurau.broker.dispatcher import Handler
from zurau.broker.request_context import BrokerServices
from zurau.config import parse_connection_overrides
from zurau.metadata.image import MetadataImage
from zurau.protocol.sasl import ScramCredential, ScramMechanism

log = logging.getLogger("zurau.connection")

TLS_RELOAD_CHECK_S = 1.0
TLS_HANDSHAKE_TIMEOUT_S = 10.0


class BrokerServer:
    """Listeners and live connections. A connection sees it as its ``ConnectionHost``."""

    def __init__(self, services: BrokerServices, handlers: dict[int, Handler]) -> None:
        self.services = services
        self.handlers = handlers
        self.connections: set[KafkaConnection] = set()
        self.listen_addresses: list[tuple[str, int]] = []
        self.bound: dict[str, tuple[str, int]] = {}  # listener name -> bound (host, port)
        self._names: list[str] = []
        self._servers: list[asyncio.base_events.Server] = []
        cfg = services.config
        self._backlog = int(cfg.get("socket.listen.backlog.size"))
        self._max_connections = int(cfg.get("max.connections"))
        self._max_per_ip = int(cfg.get("max.connections.per.ip"))
        self._per_ip_overrides: dict[str, int] = {}  # IP address -> limit (host names resolved in listen)
        self._idle_ms = int(cfg.get("connections.max.idle.ms"))
        self._controller_listeners = set(cfg.controller_listener_names)
        client_listeners = {lst.name for lst in cfg.listeners} - self._controller_listeners
        # Kafka's "protected listener": exempt from max.connections when it is not the only one.
        self._protected = {cfg.inter_broker_listener_name} if len(client_listeners) > 1 else set()
        self._per_ip: Counter[str] = Counter()
        self._ip_of: dict[KafkaConnection, str] = {}  # counted (non-controller) connections
        # Connections admitted and closed so far, per listener name (metrics).
        self.connections_created: Counter[str] = Counter()
        self.connections_closed: Counter[str] = Counter()
        self._reaper: asyncio.Task[None] | None = None
        self.security: dict[str, ListenerSecurity] = {}
        self.tls: dict[str, ListenerSslContext] = {}
        self._tls_reloader: asyncio.Task[None] | None = None
        self.rejoin = BrokerRejoinRefresh(lambda: self.connections, self._controller_listeners)
        effective = getattr(services, "effective_config", None)
        self.delegation_tokens = DelegationTokenCache(
            lambda: services.metadata.image,
            effective if effective is not None else (lambda: services.config),
            services.clock.now_ms,
        )

    def on_image(self, old: MetadataImage, new: MetadataImage) -> None:
        """A metadata image listener: see :mod:`zurau.broker.broker_rejoin`."""
        self.rejoin.on_image(old, new)

    # ------------------------------------------------------------------ security
    def new_session(self, conn: KafkaConnection) -> SecuritySession:
        """The authentication state of a connection accepted on ``conn.listener``."""
        metadata, services = self.services.metadata, self.services
        on_controller = conn.listener in self._controller_listeners

        def scram_credential(user: str, mechanism: ScramMechanism) -> ScramCredential | None:
            # Credentials are image state: on a controller listener (open before catch-up) none
            # is known until the node has caught up, so a deleted or changed credential cannot
            # log in from an image that has not replayed the change yet.
            if on_controller and not services.metadata_caught_up():
                return None
            return metadata.image.scram_credentials.get((user, mechanism))

        return SecuritySession(
            self.security.get(conn.listener),
            scram_credential,
            conn.close,
            self.delegation_tokens.lookup,
        )

    async def _reload_tls(self) -> None:
        while True:
            await asyncio.sleep(TLS_RELOAD_CHECK_S)
            for ctx in self.tls.values():
                ctx.reload_if_changed()

    # ------------------------------------------------------------------ connection limits
    def admit(self, conn: KafkaConnection, ip: str) -> str | None:
        """Count a newly accepted connection; the reason it must be closed when it is over a limit."""
        if conn.listener not in self._controller_listeners:
            limit = self._per_ip_overrides.get(ip, self._max_per_ip)
            if self._per_ip[ip] >= limit:
                return f"too many connections from {ip} (max.connections.per.ip: {limit})"
            if conn.listener not in self._protected and len(self._ip_of) >= self._max_connections:
                return f"too many connections (max.connections: {self._max_connections})"
            quotas = getattr(self.services, "quotas", None)
            if quotas is not None and quotas.enabled and (throttle_ms := quotas.connection_throttle_ms(ip)):
                return f"connection creation rate of {ip} is over its quota (connection_creation_rate), throttled {throttle_ms} ms"
            self._ip_of[conn] = ip
            self._per_ip[ip] += 1
        self.connections.add(conn)
        self.connections_created[conn.listener] += 1
        return None

    def release(self, conn: KafkaConnection) -> None:
        """Forget a closed connection (one :meth:`admit` refused is not counted)."""
        if conn in self.connections:
            self.connections_closed[conn.listener] += 1
        self.connections.discard(conn)
        ip = self._ip_of.pop(conn, None)
        if ip is not None:
            self._per_ip[ip] -= 1
            if self._per_ip[ip] <= 0:
                del self._per_ip[ip]

    async def _resolve_overrides(self) -> None:
        loop = asyncio.get_running_loop()
        overrides = parse_connection_overrides(self.services.config.get("max.connections.per.ip.overrides"))
        for host, limit in overrides.items():
            try:
                self._per_ip_overrides[str(ipaddress.ip_address(host))] = limit
                continue
            except ValueError:
                pass
            try:
                infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except OSError as e:
                log.warning("max.connections.per.ip.overrides: cannot resolve %s (%s); ignoring it", host, e)
                continue
            for *_rest, sockaddr in infos:
                self._per_ip_overrides[str(sockaddr[0])] = limit

    async def _close_idle(self) -> None:
        """Close connections idle for ``connections.max.idle.ms``."""
        idle_s = self._idle_ms / 1000
        while True:
            await asyncio.sleep(max(0.05, min(idle_s / 4, 30.0)))
            now = time.monotonic()
            for conn in list(self.connections):
                if conn.idle_for(now) >= idle_s:
                    conn.close(f"idle for more than {self._idle_ms} ms (connections.max.idle.ms)")

    async def listen(self, listeners: Sequence[Any], *, serving: Iterable[str] | None = None) -> None:
        """Bind every ``(name, host, port)`` listener (port 0 picks an ephemeral port). Only the
        listeners named in ``serving`` (all when None) accept connections at once; the others are
        bound (so their ports are known) and start with :meth:`start_serving`."""
        loop = asyncio.get_running_loop()
        serve_now = None if serving is None else set(serving)
        if not self._servers:
            await self._resolve_overrides()
            if self._idle_ms > 0:
                self._reaper = loop.create_task(self._close_idle(), name="zurau-idle-connections")
        for name, _host, _port in listeners:
            security = self.security[name] = listener_security(self.services.config, name)
            if security.ssl is not None:
                self.tls[name] = ListenerSslContext(security.ssl)
        if self.tls and self._tls_reloader is None:
            self._tls_reloader = loop.create_task(self._reload_tls(), name="zurau-tls-reload")
        for name, host, port in listeners:
            tls = self.tls.get(name)
            server = await loop.create_server(
                lambda name=name: KafkaConnection(self, name),
                host or None,
                port,
                reuse_address=True,
                backlog=self._backlog,
                start_serving=serve_now is None or name in serve_now,
                ssl=tls.context if tls is not None else None,
                ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if tls is not None else None,
            )
            self._servers.append(server)
            self._names.append(name)
            address = server.sockets[0].getsockname()[:2]
            self.listen_addresses.append(address)
            self.bound[name] = address

    async def start_serving(self) -> None:
        """Accept connections on every bound listener."""
        for server in self._servers:
            if not server.is_serving():
                await server.start_serving()

    async def close(self) -> None:
        """Stop accepting, close every connection and cancel its in-flight handlers."""
        for task in (self._reaper, self._tls_reloader):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._reaper = self._tls_reloader = None
        await self.rejoin.close()
        for s in self._servers:
            s.close()
        handler_tasks: list[asyncio.Task[Any]] = []
        for c in list(self.connections):
            handler_tasks.extend(c._tasks)
            if c.transport is not None:
                c.transport.close()
        for t in handler_tasks:
            t.cancel()
        if handler_tasks:
            await asyncio.gather(*handler_tasks, return_exceptions=True)
        for s in self._servers:
            with contextlib.suppress(Exception):
                await s.wait_closed()
        self._servers.clear()
