"""The shapes of v3 answers (Confluent's REST Admin API v3): resources and collections with their
``kind``, ``metadata`` and links.

* A resource: ``{"kind": "Kafka<Thing>", "metadata": {"self": <url>, "resource_name": <crn>},
  ...fields}``; a field that points at another resource is ``{"related": <url>}``.
* A collection: ``{"kind": "Kafka<Thing>List", "metadata": {"self": <url>, "next": null},
  "data": [resource, ...]}``.
* Resource names are Confluent's CRNs: ``crn:///kafka=<cluster_id>`` followed by
  ``/<type>=<id>`` per path level (``/topic=t/partition=0``, ``/broker=1``, ``/group=g``, ...).

:class:`V3Links` builds the URLs from the base the client addressed (``request.base_url``), so
``self`` links work behind the host name and port the client used. Path segments are
percent-encoded (topic names may hold ``.``, ``_`` and ``-`` only, but group ids and config names
may hold anything).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


def _seg(part: object) -> str:
    return quote(str(part), safe="")


@dataclass(frozen=True)
class V3Links:
    base: str
    cluster_id: str

    def url(self, *parts: object) -> str:
        """``<base>/v3/clusters/<cluster_id>/<parts...>`` (no parts: the cluster itself)."""
        path = "/".join(_seg(p) for p in parts)
        root = f"{self.base}/v3/clusters/{_seg(self.cluster_id)}"
        return f"{root}/{path}" if path else root

    def crn(self, *pairs: tuple[str, object]) -> str:
        """``crn:///kafka=<cluster_id>/<type>=<id>...``."""
        tail = "".join(f"/{kind}={value}" for kind, value in pairs)
        return f"crn:///kafka={self.cluster_id}{tail}"

    def related(self, *parts: object) -> dict[str, str]:
        return {"related": self.url(*parts)}


def resource(kind: str, self_url: str, resource_name: str | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """One v3 resource (see the module docstring)."""
    return {"kind": kind, "metadata": {"self": self_url, "resource_name": resource_name}, **fields}


def collection(kind: str, self_url: str, items: Iterable[dict[str, Any]], next_url: str | None = None) -> dict[str, Any]:
    """One v3 collection (see the module docstring)."""
    return {"kind": kind, "metadata": {"self": self_url, "next": next_url}, "data": list(items)}
