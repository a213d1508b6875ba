"""One Connect worker process: the worker and its REST API on an HTTP server (uvicorn).

:meth:`ConnectServer.start` binds the listener first (port 0 picks a free port, which then names
the worker in statuses), starts the worker (reading the Connect topics in distributed mode), then
serves; :meth:`ConnectServer.stop` stops serving, then the worker (tasks commit their offsets and
the worker leaves its group). ``stop(kill=True)`` skips the commits and the group leave, as a
crashed worker would, for failover tests.
"""

from __future__ import annotations

import logging
from typing import Any

from zurau.connect.plugins import PluginRegistry
from zurau.connect.rest_api import RestApi
from zurau.connect.worker import Worker
from zurau.connect.worker_config import WorkerConfig
from zurau.edge_service import HttpService

log = logging.getLogger("zurau.connect")


class ConnectServer(HttpService):
    def __init__(self, config: WorkerConfig, plugins: PluginRegistry | None = None) -> None:
        super().__init__(config.host, config.port, "zurau-connect-http")
        self.config = config
        self.worker = Worker(config, plugins)
        self._kill = False

    async def open(self) -> Any:
        self.worker.set_rest_address(self.config.host, self.port)
        await self.worker.start()
        log.info("Kafka Connect REST API listening on %s", self.url)
        return RestApi(self.worker).app()

    async def close(self) -> None:
        await self.worker.stop(kill=self._kill)

    async def stop(self, kill: bool = False) -> None:
        self._kill = kill
        await super().stop()
