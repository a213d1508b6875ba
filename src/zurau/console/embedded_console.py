"""``EmbeddedConsole``: the web console in this process, for tests (like ``EmbeddedRegistry``).

Runs :class:`~zurau.console.server.ConsoleServer` on its own thread and event loop, listening on
an ephemeral 127.0.0.1 port::

    with EmbeddedBroker() as broker, EmbeddedConsole(broker.bootstrap_servers) as console:
        httpx.get(console.url + "/api/overview")

Keyword arguments are those of :meth:`~zurau.console.console_config.ConsoleConfig.create`
(``registry_url=...``, ``connect_url=...``, ``metrics_url=...``, ``lag_sample_interval=0.5``,
``client_properties={"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256"}``
for a login page, ``login=True``, ``session_timeout=...`` in seconds).
``planner=`` is the balancer's dry-run planner (``zurau.cli.balancer.plan_of``; the console
cannot import it itself). Leaving the ``with`` block stops the server and its thread.
"""

from __future__ import annotations

from typing import Any

from zurau.client.balancer_view import Planner
from zurau.console.console_config import ConsoleConfig
from zurau.console.server import ConsoleServer
from zurau.edge_service import EmbeddedService


class EmbeddedConsole(EmbeddedService[ConsoleServer]):
    thread_name = "zurau-embedded-console"

    def __init__(self, bootstrap_servers: str, *, planner: Planner | None = None, **settings: Any) -> None:
        super().__init__()
        settings.setdefault("port", 0)
        self.config = ConsoleConfig.create(bootstrap_servers=bootstrap_servers, **settings)
        self.planner = planner

    def new_server(self) -> ConsoleServer:
        return ConsoleServer(self.config, self.planner)

    def start(self) -> EmbeddedConsole:
        super().start()
        return self

    def __enter__(self) -> EmbeddedConsole:
        return self.start()


__all__ = ["EmbeddedConsole"]
