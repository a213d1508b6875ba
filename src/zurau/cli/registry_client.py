"""The CLI's access to a schema registry (``zurau schemas``, ``zurau consume --value-format``):
:class:`zurau.client.schema_registry.SchemaRegistryClient`, with its errors turned into
:class:`CommandError` lines reading ``<message> (error_code N)``, or naming the URL when the
registry cannot be reached.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from zurau.cli.common import CommandError
from zurau.client.schema_registry import SchemaRegistryClient, SchemaRegistryError

DEFAULT_URL = "http://127.0.0.1:8081"


def subject_path(subject: str) -> str:
    """A subject as one path segment (``/`` becomes ``%2F``)."""
    return quote(subject, safe="")


class RegistryClient:
    def __init__(self, url: str = DEFAULT_URL, timeout_s: float = 30.0) -> None:
        self.client = SchemaRegistryClient(url, timeout_s)

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        try:
            return self.client.request(method, path, body, **params)
        except SchemaRegistryError as e:
            if e.status == 0:
                raise CommandError(f"cannot reach the {e}") from None
            raise CommandError(f"{e} (error_code {e.error_code})" if e.error_code else f"{e} (HTTP {e.status})") from None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, **params)

    def schema_by_id(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/schemas/ids/{schema_id}", format=fmt)
        return found

    def version(self, subject: str, version: str | int, fmt: str | None = None) -> dict[str, Any]:
        found: dict[str, Any] = self.get(f"/subjects/{subject_path(subject)}/versions/{version}", format=fmt)
        return found
