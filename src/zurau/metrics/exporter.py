"""One broker's metrics endpoint: recorder, collector and HTTP server, started and closed together."""

from __future__ import annotations

import asyncio
import functools

from prometheus_client import CollectorRegistry
from prometheus_client.process_collector import ProcessCollector

from zurau.config import parse_http_listener
from zurau.metrics.collector import BrokerCollector, MetricsSource
from zurau.metrics.http_server import MetricsHttpServer, on_loop
from zurau.metrics.recorder import BrokerMetrics


class MetricsExporter:
    """Serves ``source``'s metrics at ``listener`` (``http://host:port``).

    ``recorder`` is what the broker's hot path updates; :meth:`start` (on the broker's loop)
    binds the listener (OSError if it cannot) and serves from a thread; :meth:`close` stops it.
    Each exporter has its own registry, so several brokers in one process (EmbeddedCluster) do
    not mix their metrics; the registry also holds ``prometheus_client``'s process metrics.
    """

    def __init__(self, source: MetricsSource, listener: str, recorder: BrokerMetrics | None = None) -> None:
        self.source = source
        self.host, self.port = parse_http_listener(listener)
        self.recorder = recorder if recorder is not None else BrokerMetrics()
        self.registry = CollectorRegistry(auto_describe=False)
        self._server: MetricsHttpServer | None = None

    @property
    def url(self) -> str:
        """``http://host:port/metrics`` once started."""
        if self._server is None:
            raise RuntimeError("the metrics exporter is not started")
        return self._server.url

    def start(self) -> MetricsExporter:
        loop = asyncio.get_running_loop()
        self.registry.register(
            BrokerCollector(self.source, self.recorder, functools.partial(on_loop, loop))
        )
        ProcessCollector(registry=self.registry)
        self._server = MetricsHttpServer(self.registry, self.host, self.port).start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
