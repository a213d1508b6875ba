"""A small HTTP client for the schema registry's REST API, which the record decoders use to fetch
writer schemas by id (the console and the REST proxy share it).

:class:`ServiceClient` wraps one ``httpx.AsyncClient`` (timeouts of :data:`TIMEOUT` seconds) for
one base URL; an https URL is checked with the given TLS context or else the system's CAs.
Any failure (the service down, a timeout, an error status, a body that is not JSON) becomes a
:class:`ServiceError` carrying the HTTP status to answer with (the service's own 4xx status,
else 502) and a message that names the service; the registry's error body
(``{"error_code": N, "message": "..."}``) gives the message. :class:`RegistryClient` is the
registry's; the console's clients for its other services
(:mod:`zurau.console.service_clients`) build on :class:`ServiceClient` too.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

TIMEOUT = 10.0


class ServiceError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ServiceClient:
    """JSON over HTTP to one service (``name`` is used in messages)."""

    def __init__(self, name: str, base_url: str, tls: ssl.SSLContext | None = None) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=TIMEOUT, verify=tls if tls is not None else True)

    async def close(self) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            resp = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as e:
            raise ServiceError(502, f"{self.name} at {self.base_url} is unreachable: {e or type(e).__name__}") from e
        if resp.status_code >= 400:
            message = resp.text[:500]
            try:
                body = resp.json()
                if isinstance(body, dict) and body.get("message"):
                    message = str(body["message"])
            except ValueError:
                pass
            status = resp.status_code if 400 <= resp.status_code < 500 else 502
            raise ServiceError(status, f"{self.name}: {message} (HTTP {resp.status_code})")
        return resp

    async def get_json(self, path: str, **kwargs: Any) -> Any:
        return self._json(await self.request("GET", path, **kwargs))

    async def send_json(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = await self.request(method, path, **kwargs)
        if not resp.content:
            return None
        return self._json(resp)

    def _json(self, resp: httpx.Response) -> Any:
        try:
            return resp.json()
        except ValueError as e:
            raise ServiceError(502, f"{self.name} answered {resp.request.url.path} with a body that is not JSON") from e


class RegistryClient(ServiceClient):
    def __init__(self, base_url: str, tls: ssl.SSLContext | None = None) -> None:
        super().__init__("schema registry", base_url, tls)
