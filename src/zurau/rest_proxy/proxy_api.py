"""What every endpoint module of the proxy is given: :class:`ProxyApi`.

Each endpoint module (``v3_clusters``, ``v3_topics``, ``v3_consumer_groups``, ``v3_acls``,
``v3_records``, ``v2_produce``, ``v2_consumers``, ``v2_metadata``, ``streaming_consume``) has a
function ``routes(api: ProxyApi) -> list[BaseRoute]``; :mod:`.server` puts them together. A
handler finds the clients of the request's principal with :meth:`ProxyApi.clients` and checks a
v3 path's cluster id with :meth:`ProxyApi.check_cluster`.

Invariant: handlers never hold a client across requests except through :meth:`clients` (the
principal's clients may be closed and replaced when the user's credentials change or the proxy
stops).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from zurau.rest_proxy.errors import RestProxyError
from zurau.rest_proxy.proxy_clients import ProxyClients
from zurau.rest_proxy.proxy_config import RestProxyConfig

USER_STATE = "rest_proxy_user"
"""``request.scope`` key holding the authenticated HTTP user's name (None without authentication)."""


@dataclass
class ProxyApi:
    config: RestProxyConfig
    shared: ProxyClients
    clients_for_user: Callable[[str], Awaitable[ProxyClients]] | None = None
    """Set by :mod:`.basic_auth` when each HTTP user talks to the brokers as themselves."""
    services: dict[str, Any] = field(default_factory=dict)
    """Long-lived parts that endpoint modules share (the v2 consumer instances, the metrics)."""

    async def clients(self, request: Request) -> ProxyClients:
        """The clients of the request's principal (see :mod:`.proxy_clients`)."""
        user = request.scope.get(USER_STATE)
        if user is not None and self.clients_for_user is not None:
            return await self.clients_for_user(user)
        return self.shared

    async def cluster_id(self, request: Request | None = None) -> str:
        """The cluster's id, from Metadata (refreshed when not yet known)."""
        clients = await self.clients(request) if request is not None else self.shared
        cluster = clients.admin.cluster
        cid = cluster.metadata.cluster_id
        if not cid:
            await cluster.refresh_metadata([])
            cid = cluster.metadata.cluster_id
        return cid or ""

    async def check_cluster(self, request: Request) -> str:
        """The ``cluster_id`` path parameter, which must be this cluster's (404 otherwise)."""
        asked = request.path_params.get("cluster_id", "")
        cid = await self.cluster_id(request)
        if asked != cid:
            raise RestProxyError(404, 404, f"Cluster {asked} cannot be found.")
        return cid

    def base_url(self, request: Request) -> str:
        """Scheme, host and port as the client addressed the proxy (for ``metadata.self``)."""
        return str(request.base_url).rstrip("/")
