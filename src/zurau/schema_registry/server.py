"""One registry process: the store, the state, the REST API and an HTTP server (uvicorn).

:func:`RegistryServer.start` binds the listener first (port 0 picks a free port), then loads the
store (reading ``_schemas`` to its end), then serves; :meth:`RegistryServer.stop` stops serving
and closes the Kafka clients. Single instance: several registries on one cluster with an elected
primary is not implemented yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

from zurau.schema_registry.kafka_store import KafkaStore
from zurau.schema_registry.registry import SchemaRegistry
from zurau.schema_registry.registry_config import RegistryConfig
from zurau.schema_registry.registry_state import RegistryState
from zurau.schema_registry.rest_api import RestApi

log = logging.getLogger("zurau.schema_registry")


class RegistryServer:
    def __init__(self, config: RegistryConfig) -> None:
        self.config = config
        self.state = RegistryState()
        self.store = KafkaStore(config, self.state)
        self.registry = SchemaRegistry(self.state, self.store, config.compatibility_level)
        self._sock: socket.socket | None = None
        self._server: object | None = None
        self._serve_task: asyncio.Task[None] | None = None
        self.port = config.port

    @property
    def url(self) -> str:
        host = self.config.host if self.config.host not in ("0.0.0.0", "") else "127.0.0.1"
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        import uvicorn

        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, self.config.port))
        sock.listen(128)
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        try:
            await self.store.start()
            cluster_id = self.store._cluster.metadata.cluster_id if self.store._cluster else None
            app = RestApi(self.registry, self.config.max_request_bytes, cluster_id).app()
            server = uvicorn.Server(
                uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, loop="none")
            )
            self._server = server
            self._serve_task = asyncio.create_task(server.serve(sockets=[sock]), name="zurau-registry-http")
            while not server.started:
                if self._serve_task.done():
                    await self._serve_task
                    raise RuntimeError("the registry's HTTP server stopped while starting")
                await asyncio.sleep(0.01)
        except BaseException:
            await self.stop()
            raise
        log.info("schema registry listening on %s (store %s)", self.url, self.config.topic)

    async def stop(self) -> None:
        server, task = self._server, self._serve_task
        if server is not None and task is not None:
            server.should_exit = True  # type: ignore[attr-defined]
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)
        self._server = self._serve_task = None
        await self.store.close()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def serve_forever(self) -> None:
        """Run until cancelled (the CLI cancels on SIGINT/SIGTERM)."""
        await self.start()
        try:
            assert self._serve_task is not None
            await self._serve_task
        finally:
            await self.stop()
