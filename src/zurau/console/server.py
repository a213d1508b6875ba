"""One console process: the API state and an HTTP server (uvicorn), as the registry's server.

:meth:`ConsoleServer.start` binds the listener first (port 0 picks a free port), then connects
to the cluster (an unreachable cluster is logged, not fatal: pages show the error and work once
it is back), then serves. :meth:`ConsoleServer.stop` stops serving, the lag sampler and every
client, leaving no task behind. A console without login listening on an address other than a
loopback one logs a warning: anyone who reaches it acts on the cluster as the console's principal.
``planner`` is the balancer's dry-run planner (see :mod:`~zurau.console.balancer_views`); without
it the Balancer page shows no plan.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from zurau.client.balancer_view import Planner
from zurau.console.console_config import ConsoleConfig
from zurau.console.web_api import ConsoleApi
from zurau.edge_service import HttpService

log = logging.getLogger("zurau.console")


class ConsoleServer(HttpService):
    def __init__(self, config: ConsoleConfig, planner: Planner | None = None) -> None:
        super().__init__(config.host, config.port, "zurau-console-http")
        self.config = config
        self.planner = planner
        self.api: ConsoleApi | None = None

    async def open(self) -> Any:
        self.api = ConsoleApi(self.config, self.planner)
        await self.api.start()
        log.info(
            "console listening on %s (cluster %s, %s)",
            self.url,
            self.config.bootstrap_servers,
            "users log in with their SASL credentials" if self.config.login else "no login",
        )
        if not self.config.login and not is_loopback(self.config.host):
            log.warning(
                "the console listens on %s without a login: anyone who can reach it acts on the cluster "
                "as the console's own principal (use --login with a SASL listener, or --host 127.0.0.1)",
                self.config.host or "every address",
            )
        return self.api.app()

    async def close(self) -> None:
        if self.api is not None:
            await self.api.close()
            self.api = None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


__all__ = ["ConsoleServer", "is_loopback"]
