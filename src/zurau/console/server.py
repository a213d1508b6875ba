"""One console process: the API state and an HTTP server (uvicorn), as the registry's server.

:meth:`ConsoleServer.start` binds the listener first (port 0 picks a free port), then connects
to the cluster (an unreachable cluster is logged, not fatal: pages show the error and work once
it is back), then serves. :meth:`ConsoleServer.stop` stops serving, the lag sampler and every
client, leaving no task behind.
"""

from __future__ import annotations

import logging
from typing import Any

from zurau.console.console_config import ConsoleConfig
from zurau.console.web_api import ConsoleApi
from zurau.edge_service import HttpService

log = logging.getLogger("zurau.console")


class ConsoleServer(HttpService):
    def __init__(self, config: ConsoleConfig) -> None:
        super().__init__(config.host, config.port, "zurau-console-http")
        self.config = config
        self.api: ConsoleApi | None = None

    async def open(self) -> Any:
        self.api = ConsoleApi(self.config)
        await self.api.start()
        log.info("console listening on %s (cluster %s)", self.url, self.config.bootstrap_servers)
        return self.api.app()

    async def close(self) -> None:
        if self.api is not None:
            await self.api.close()
            self.api = None


__all__ = ["ConsoleServer"]
