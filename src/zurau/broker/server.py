"""The broker's network shell: listeners and the connections they accept.

``BrokerServer`` owns every socket and nothing else: each accepted connection is a
:class:`~zurau.broker.connection.KafkaConnection` that decodes requests, runs the handler for the
api key with a :class:`~zurau.broker.request_context.RequestContext` over the broker's
services, and writes responses in request order. What the services are, and how the node is
put together, is the composition root's business (:mod:`zurau.app`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

from zurau.broker.connection import KafkaConnection
from zurau.broker.dispatcher import Handler
from zurau.broker.request_context import BrokerServices


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

    async def listen(self, listeners: Sequence[Any], *, serving: Iterable[str] | None = None) -> None:
        """Bind every ``(name, host, port)`` listener (port 0 picks an ephemeral port). Only the
        listeners named in ``serving`` (all when None) accept connections at once; the others are
        bound (so their ports are known) and start with :meth:`start_serving`."""
        loop = asyncio.get_running_loop()
        serve_now = None if serving is None else set(serving)
        for name, host, port in listeners:
            server = await loop.create_server(
                lambda name=name: KafkaConnection(self, name),
                host or None,
                port,
                reuse_address=True,
                backlog=1024,
                start_serving=serve_now is None or name in serve_now,
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
