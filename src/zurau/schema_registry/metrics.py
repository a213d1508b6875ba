"""The registry's Prometheus metrics, served at ``GET /metrics`` of its REST listener.

* Requests per endpoint: :class:`RequestMetricsMiddleware` (pure ASGI) counts every HTTP request
  by route template (``/subjects/{subject}/versions``, never the concrete subject, so the label
  set stays bounded; an unmatched path counts as ``other``), method and status, and observes
  its latency. Confluent's registry reports these as ``jersey-metrics`` per endpoint; the names
  here follow the JMX exporter's form of them.
* Schema counts: :class:`SchemaCountCollector` reads the registry state at scrape time (subjects,
  live versions, schema ids per type).

Each app has its own ``CollectorRegistry``, so several registries in one process (tests) keep
their numbers apart. Everything runs on the registry's event loop; a scrape costs one pass over
the subjects.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client import Counter as PromCounter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from zurau.schema_registry.registry_state import RegistryState

_CONVERTOR = re.compile(r"\{(\w+):\w+\}")
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class SchemaCountCollector(Collector):
    def __init__(self, state: RegistryState) -> None:
        self.state = state

    def collect(self) -> Iterable[Metric]:
        state = self.state
        live_versions = 0
        subjects = 0
        for versions in state.versions.values():
            live = sum(1 for sv in versions.values() if not sv.deleted)
            live_versions += live
            subjects += 1 if live else 0
        by_type = Counter(s.schema_type for s in state.schemas_by_id.values())
        yield GaugeMetricFamily(
            "kafka_schema_registry_registered_count",
            "Schema versions registered under subjects and not deleted.",
            value=live_versions,
        )
        yield GaugeMetricFamily("zurau_schema_registry_subjects", "Subjects with a live version.", value=subjects)
        schemas = GaugeMetricFamily(
            "zurau_schema_registry_schemas", "Schema ids, per schema type.", labels=["schema_type"]
        )
        for schema_type, n in sorted(by_type.items()):
            schemas.add_metric([schema_type], n)
        yield schemas
        yield GaugeMetricFamily("zurau_schema_registry_max_schema_id", "Highest schema id assigned.", value=state.max_id)


class RegistryMetrics:
    """The registry's collectors and request instruments, in a registry of their own."""

    def __init__(self, state: RegistryState) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SchemaCountCollector(state))
        self.requests = PromCounter(
            "kafka_schema_registry_jersey_metrics_requests",
            "HTTP requests, per endpoint (route template), method and status.",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kafka_schema_registry_jersey_metrics_request_latency_seconds",
            "HTTP request latency, per endpoint (route template) and method.",
            ["endpoint", "method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)


class RequestMetricsMiddleware:
    """ASGI middleware recording each HTTP request in ``metrics`` under its route template."""

    def __init__(self, app: Any, routes: list[Route], metrics: RegistryMetrics) -> None:
        self.app = app
        # (route, its template without convertors: "/subjects/{subject:path}" -> "/subjects/{subject}")
        self.routes = [(route, _CONVERTOR.sub(r"{\1}", route.path)) for route in routes]
        self.metrics = metrics

    def _endpoint(self, scope: dict[str, Any]) -> str:
        partial = None
        for route, template in self.routes:
            match, _child = route.matches(scope)
            if match is Match.FULL:
                return template
            if match is Match.PARTIAL and partial is None:
                partial = template  # the path exists, the method does not (405)
        return partial or "other"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_recording(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            endpoint = self._endpoint(scope)
            method = scope.get("method", "")
            self.metrics.requests.labels(endpoint, method, str(status)).inc()
            self.metrics.latency.labels(endpoint, method).observe(time.perf_counter() - started)
