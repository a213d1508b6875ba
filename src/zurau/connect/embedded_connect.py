"""``EmbeddedConnect``: a Connect worker in this process, for tests.

Runs :class:`~zurau.connect.server.ConnectServer` on its own thread and event loop, its REST API
on an ephemeral 127.0.0.1 port, against any Kafka-compatible bootstrap server::

    with EmbeddedBroker() as broker, EmbeddedConnect(broker.bootstrap_servers) as connect:
        requests.post(f"{connect.url}/connectors", json={...})

Standalone unless a ``group.id`` is given (then distributed, with the Connect topics defaulting
to ``connect-configs``/``connect-offsets``/``connect-status``). Extra keyword arguments are worker
properties with dots or underscores (``offset_flush_interval_ms=1000``,
``**{"offset.storage.file.filename": path}``). :meth:`kill` stops the worker as a crash would:
no final offset commit and no group leave.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from zurau.connect.plugins import PluginRegistry
from zurau.connect.server import ConnectServer
from zurau.connect.worker_config import WorkerConfig
from zurau.edge_service import EmbeddedService


class EmbeddedConnect(EmbeddedService[ConnectServer]):
    thread_name = "zurau-embedded-connect"

    def __init__(self, bootstrap_servers: str, plugins: PluginRegistry | None = None, **props: Any) -> None:
        super().__init__()
        values = {"listeners": "http://127.0.0.1:0", "bootstrap.servers": bootstrap_servers,
                  "config.storage.replication.factor": "1", "offset.storage.replication.factor": "1",
                  "status.storage.replication.factor": "1"}
        values.update({k.replace("_", "."): str(v) for k, v in props.items()})
        if "group.id" in values:
            values.setdefault("config.storage.topic", "connect-configs")
            values.setdefault("offset.storage.topic", "connect-offsets")
            values.setdefault("status.storage.topic", "connect-status")
        elif "offset.storage.file.filename" not in values:
            self._tmp = tempfile.TemporaryDirectory(prefix="zurau-connect-")
            values["offset.storage.file.filename"] = str(Path(self._tmp.name) / "connect.offsets")
        self.config = WorkerConfig.from_props(values)
        self.plugins = plugins
        self._kill = False

    def new_server(self) -> ConnectServer:
        return ConnectServer(self.config, self.plugins)

    async def stop_server(self, server: ConnectServer) -> None:
        await server.stop(kill=self._kill)

    def start(self) -> EmbeddedConnect:
        self._kill = False
        super().start()
        return self

    def kill(self) -> None:
        """Stop abruptly: tasks are not committed and the group is not left."""
        self._kill = True
        self.stop()

    def __enter__(self) -> EmbeddedConnect:
        return self.start()
