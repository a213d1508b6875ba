"""One REST proxy process: the Kafka clients, the endpoint modules and an HTTP server (uvicorn).

:meth:`RestProxyServer.start` binds the listener first (port 0 picks a free one), opens the
shared clients (a cluster that is not reachable yet is not fatal: requests answer 503 until it
is back), starts the long-lived parts (v2 consumer instances and their expiry, metrics) and
serves every endpoint module's routes (:mod:`.proxy_api`). :meth:`RestProxyServer.stop` stops
serving, closes every consumer instance (each leaves its group) and every client.

Every request is counted by :mod:`.proxy_metrics` (``GET /metrics``) and, with
``authentication.method=BASIC``, authenticated by :mod:`.basic_auth` before any route sees it. An
``https://`` listener serves TLS with the ``ssl.*`` PEM files.

Paths no route serves answer 404 and methods a path does not serve 405 with ``Allow``, both with
Confluent's error body.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from zurau.edge_requests import allowed_methods
from zurau.edge_service import HttpService, TlsFiles
from zurau.rest_proxy import (
    basic_auth,
    proxy_metrics,
    streaming_consume,
    v2_consumers,
    v2_metadata,
    v2_produce,
    v3_acls,
    v3_clusters,
    v3_consumer_groups,
    v3_records,
    v3_topics,
)
from zurau.rest_proxy.proxy_api import ProxyApi
from zurau.rest_proxy.proxy_clients import ProxyClients
from zurau.rest_proxy.proxy_config import RestProxyConfig

log = logging.getLogger("zurau.rest_proxy")

ENDPOINT_MODULES = (
    v3_clusters,
    v3_topics,
    v3_consumer_groups,
    v3_acls,
    v3_records,
    v2_metadata,
    v2_produce,
    v2_consumers,
    streaming_consume,
)


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status_code=status, media_type="application/json", headers=headers)


async def root(request: Request) -> Response:
    """``GET /``: Confluent answers an empty object (clients use it as a liveness probe)."""
    return _json({})


class RestProxyServer(HttpService):
    def __init__(self, config: RestProxyConfig) -> None:
        super().__init__(config.host, config.port, "zurau-rest-proxy-http")
        self.config = config
        self.api: ProxyApi | None = None
        self.routes: list[BaseRoute] = []
        if config.scheme == "https":
            certfile = config.ssl_keystore_location or config.ssl_certificate_location
            assert certfile is not None  # RestProxyConfig requires one for https
            keyfile = None if config.ssl_keystore_location else config.ssl_key_location
            self.tls = TlsFiles(certfile, keyfile, config.ssl_key_password)

    async def open(self) -> Any:
        cfg = self.config
        shared = ProxyClients(
            cfg.client_config(), cfg.client_config("producer"), consumer_config=cfg.client_config("consumer")
        )
        await shared.start()
        self.api = api = ProxyApi(cfg, shared)
        routes: list[BaseRoute] = [Route("/", root, methods=["GET"])]
        for module in ENDPOINT_MODULES:
            routes.extend(module.routes(api))
        self.routes = routes
        middleware = [proxy_metrics.install(api, routes)]  # adds GET /metrics; outermost: counts 401s too
        auth = basic_auth.install(api)  # with authentication.method=BASIC
        if auth is not None:
            middleware.append(auth)
        app = Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: self._http_error})
        log.info("REST proxy listening on %s (Kafka %s)", self.url, cfg.bootstrap_servers)
        return app

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            allow = ", ".join(allowed_methods(self.routes, request.scope))
            return _json({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, 405, {"Allow": allow})
        if exc.status_code == 404:
            return _json({"error_code": 404, "message": "HTTP 404 Not Found"}, 404)
        return _json({"error_code": exc.status_code, "message": str(exc.detail)}, exc.status_code)

    async def close(self) -> None:
        api, self.api = self.api, None
        if api is None:
            return
        for service in reversed(list(api.services.values())):
            close = getattr(service, "close", None)
            if close is not None:
                try:
                    await close()
                except Exception as e:  # noqa: BLE001 - stopping must go on
                    log.warning("stopping %s: %s", type(service).__name__, e)
        await api.shared.close()
