"""HTTP clients for the services beside the cluster: Kafka Connect, a Kafka REST proxy and a
broker's Prometheus ``/metrics`` endpoint (the schema registry's, :class:`RegistryClient`, and
their base :class:`ServiceClient` are in :mod:`zurau.schema_formats.registry_http`, which the
record decoders share with the REST proxy).

Each wraps one ``httpx.AsyncClient`` (timeouts of :data:`~zurau.schema_formats.registry_http.TIMEOUT`
seconds) for one base URL; an https URL is checked with the given TLS context (the ``ssl.*``
settings of the console's ``--command-config``) or else the system's CAs.
Any failure (the service down, a timeout, an error status, a body that is not JSON) becomes a
:class:`ServiceError` carrying the HTTP status to answer with (the service's own 4xx status,
else 502) and a message that names the service; the registry's and Connect's error bodies
(``{"error_code": N, "message": "..."}``) give the message.
"""

from __future__ import annotations

import ssl

from zurau.schema_formats.registry_http import RegistryClient, ServiceClient, ServiceError


class ConnectClient(ServiceClient):
    def __init__(self, base_url: str, tls: ssl.SSLContext | None = None) -> None:
        super().__init__("Kafka Connect", base_url, tls)


class RestProxyClient(ServiceClient):
    def __init__(self, base_url: str, tls: ssl.SSLContext | None = None) -> None:
        super().__init__("REST proxy", base_url, tls)


class MetricsClient(ServiceClient):
    def __init__(self, base_url: str, tls: ssl.SSLContext | None = None) -> None:
        super().__init__("metrics endpoint", base_url, tls)

    async def scrape(self) -> str:
        """The exposition text of the configured URL."""
        return (await self.request("GET", "")).text


__all__ = ["ConnectClient", "MetricsClient", "RegistryClient", "RestProxyClient", "ServiceClient", "ServiceError"]
