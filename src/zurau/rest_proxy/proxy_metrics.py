"""The REST proxy's Prometheus metrics, served at ``GET /metrics`` (text format 0.0.4).

* Per endpoint: :class:`RequestMetricsMiddleware` (pure ASGI, outermost, so that refused and
  unauthenticated requests count too) records every HTTP request under its route template
  (``/v3/clusters/{cluster_id}/topics/{topic_name}``, never the concrete path: the label set
  stays bounded by the routes; a path no route serves counts as ``other``) and method: the
  requests, the errors by status class (``4xx``, ``5xx``) and the latency. Confluent's proxy
  reports these as ``jersey-metrics`` per endpoint (request rate, error rate, latency); the names
  here follow the JMX exporter's form of them, as the schema registry's do
  (:mod:`zurau.schema_registry.metrics`).
* In flight: the requests being answered now (a streaming consume counts until its stream ends).
* The v2 consumer instances alive, read at scrape time from the service the v2 consumer module
  registers as ``api.services["v2_consumer_instances"]`` (its ``instances`` mapping, whose
  ``None`` values are instances still being created, or anything with ``len()``); absent
  without it.

Each proxy has its own ``CollectorRegistry``, so several proxies in one process (tests) keep
their numbers apart. Everything runs on the proxy's event loop.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sized
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client import Counter as PromCounter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from zurau.rest_proxy.proxy_api import ProxyApi

CONSUMERS_SERVICE = "v2_consumer_instances"  # zurau.rest_proxy.v2_consumer_instances.SERVICE
_CONVERTOR = re.compile(r"\{(\w+):\w+\}")
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def consumer_instances(api: ProxyApi) -> int | None:
    """How many v2 consumer instances are alive (None without the v2 consumer service)."""
    service = api.services.get(CONSUMERS_SERVICE)
    if service is None:
        return None
    instances = getattr(service, "instances", None)
    if isinstance(instances, Mapping):
        return sum(1 for instance in instances.values() if instance is not None)
    if isinstance(service, Sized):
        return len(service)
    return None


class ConsumerInstancesCollector(Collector):
    def __init__(self, api: ProxyApi) -> None:
        self.api = api

    def collect(self) -> Iterable[Metric]:
        count = consumer_instances(self.api)
        if count is not None:
            yield GaugeMetricFamily(
                "kafka_rest_consumer_instances", "v2 consumer instances alive in this proxy.", value=count
            )


class ProxyMetrics:
    """The proxy's request instruments and collectors, in a registry of their own."""

    def __init__(self, api: ProxyApi) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(ConsumerInstancesCollector(api))
        self.requests = PromCounter(
            "kafka_rest_jersey_metrics_requests",
            "HTTP requests answered, per endpoint (route template) and method.",
            ["endpoint", "method"],
            registry=self.registry,
        )
        self.errors = PromCounter(
            "kafka_rest_jersey_metrics_request_errors",
            "HTTP requests answered with an error, per endpoint (route template), method and status class.",
            ["endpoint", "method", "status_class"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kafka_rest_jersey_metrics_request_latency_seconds",
            "HTTP request latency (until the response ended), per endpoint (route template) and method.",
            ["endpoint", "method"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "kafka_rest_jersey_metrics_requests_in_flight",
            "HTTP requests being answered.",
            registry=self.registry,
        )

    async def endpoint(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)


def _template(route: BaseRoute) -> str | None:
    path = getattr(route, "path", None)
    return _CONVERTOR.sub(r"{\1}", path) if isinstance(path, str) else None


class RequestMetricsMiddleware:
    """ASGI middleware recording each HTTP request in ``metrics`` under its route template."""

    def __init__(self, app: Any, routes: list[BaseRoute], metrics: ProxyMetrics) -> None:
        self.app = app
        self.routes = routes  # the server's list: routes added after this middleware count too
        self.metrics = metrics

    def endpoint_of(self, scope: dict[str, Any]) -> str:
        """The template of the route serving ``scope`` (as Starlette picks it: the first full
        match), the template of a path served with other methods (405), else ``other``."""
        partial = None
        for route in self.routes:
            match, _child = route.matches(scope)
            if match is Match.FULL:
                return _template(route) or "other"
            if match is Match.PARTIAL and partial is None:
                partial = _template(route)
        return partial or "other"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        metrics = self.metrics
        endpoint = self.endpoint_of(scope)  # before the router adds its own keys to the scope
        metrics.in_flight.inc()

        async def send_recording(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            metrics.in_flight.dec()
            method = scope.get("method", "")
            metrics.requests.labels(endpoint, method).inc()
            if status >= 400:
                metrics.errors.labels(endpoint, method, f"{status // 100}xx").inc()
            metrics.latency.labels(endpoint, method).observe(time.perf_counter() - started)


def install(api: ProxyApi, routes: list[BaseRoute]) -> Middleware:
    """Add ``GET /metrics`` to ``routes``, register the metrics in ``api.services`` and return
    the middleware that records the requests."""
    metrics = ProxyMetrics(api)
    api.services["metrics"] = metrics
    routes.append(Route("/metrics", metrics.endpoint, methods=["GET"]))
    return Middleware(RequestMetricsMiddleware, routes=routes, metrics=metrics)


__all__ = ["ProxyMetrics", "RequestMetricsMiddleware", "consumer_instances", "install"]
