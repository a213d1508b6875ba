"""``EmbeddedRegistry``: a schema registry in this process, for tests.

Runs :class:`~zurau.schema_registry.server.RegistryServer` on its own thread and event loop,
listening on an ephemeral 127.0.0.1 port, against any Kafka-compatible bootstrap server::

    with EmbeddedBroker() as broker, EmbeddedRegistry(broker.bootstrap_servers) as registry:
        SchemaRegistryClient({"url": registry.url})

Extra keyword arguments are registry properties with dots or underscores
(``schema_compatibility_level="FULL"``, ``**{"kafkastore.topic": "_schemas2"}``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from zurau.schema_registry.registry_config import RegistryConfig
from zurau.schema_registry.server import RegistryServer


class EmbeddedRegistry:
    def __init__(self, bootstrap_servers: str, **props: Any) -> None:
        values = {"listeners": "http://127.0.0.1:0", "kafkastore.bootstrap.servers": bootstrap_servers}
        values.update({k.replace("_", "."): str(v) for k, v in props.items()})
        self.config = RegistryConfig.from_props(values)
        self.server: RegistryServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        if self.server is None:
            raise RuntimeError("the registry is not running")
        return self.server.url

    def start(self) -> EmbeddedRegistry:
        if self._thread is not None:
            raise RuntimeError("this EmbeddedRegistry is already running")
        started = threading.Event()
        error: list[BaseException] = []
        loop = asyncio.new_event_loop()
        stop = asyncio.Event()
        server = RegistryServer(self.config)

        async def main() -> None:
            try:
                await server.start()
            except BaseException as e:
                error.append(e)
                started.set()
                return
            started.set()
            try:
                await stop.wait()
            finally:
                await server.stop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(main())
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="zurau-embedded-registry", daemon=True)
        thread.start()
        started.wait()
        if error:
            thread.join()
            raise error[0]
        self.server, self._loop, self._thread, self._stop = server, loop, thread, stop
        return self

    def stop(self) -> None:
        loop, thread, stop = self._loop, self._thread, self._stop
        if loop is None or thread is None or stop is None:
            return
        if not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass
        thread.join()
        self.server = self._loop = self._thread = self._stop = None

    def __enter__(self) -> EmbeddedRegistry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
