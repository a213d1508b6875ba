"""Writes on a secondary go to the primary (Confluent's ``*OrForward`` operations).

Writes are: register (``POST /subjects/{s}/versions``), deletes of versions and subjects, and
``PUT``/``DELETE`` of ``/config`` and ``/mode``. :meth:`Forwarder.forward` decides per write:

* no :class:`~zurau.schema_registry.leader_election.LeaderElector` (a registry alone), or this
  instance is the primary: ``None``, the write is served here;
* an election under way: wait for it to settle (at most ``kafkastore.timeout.ms``);
* no primary known afterwards: Confluent's 50004 (HTTP 500), worded as each resource words it;
* another instance is the primary: the request goes to ``<primary URL><raw path>?<query>`` with
  the original method, body and the headers ``Content-Type``, ``Accept``, ``Authorization`` plus
  ``inter.instance.headers.whitelist``; its answer (status, body, content type) is returned as is.
  A primary that cannot be reached gives Confluent's 50003 (HTTP 500).

Read-your-writes: after a forwarded write succeeded, the secondary catches up with the store
(:meth:`~zurau.schema_registry.kafka_store.KafkaStore.catch_up`) before it answers, so a read
sent to it next sees the write (ids and versions included).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zurau.schema_registry import errors
from zurau.schema_registry.registry_config import RegistryConfig

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from zurau.schema_registry.leader_election import LeaderElector

log = logging.getLogger("zurau.schema_registry.forwarding")

FORWARDED_HEADERS = ("content-type", "accept", "authorization")


@dataclass(frozen=True)
class WriteOp:
    """A write and Confluent's messages for its two forwarding failures (both HTTP 500)."""

    name: str
    unknown_leader: str
    forwarding_failed: str
    unknown_leader_code: int = 50004
    forwarding_failed_code: int = 50003

    def unknown_leader_error(self, subject: str | None = None) -> errors.RegistryError:
        return errors.RegistryError(500, self.unknown_leader_code, self.unknown_leader.format(subject=subject))

    def forwarding_error(self, subject: str | None = None) -> errors.RegistryError:
        return errors.RegistryError(500, self.forwarding_failed_code, self.forwarding_failed.format(subject=subject))


REGISTER = WriteOp("register", "Leader not known.", "Error while forwarding register schema request to the leader")
DELETE_VERSION = WriteOp(
    "delete version", "Leader not known.", "Error while forwarding delete schema version request to the leader"
)
# Confluent's subject resource turns both failures into its generic error (code 500).
DELETE_SUBJECT = WriteOp(
    "delete subject", "Error while deleting the subject {subject}", "Error while deleting the subject {subject}", 500, 500
)
UPDATE_CONFIG = WriteOp(
    "update config", "Failed to update compatibility level", "Error while forwarding update config request to the leader"
)
DELETE_CONFIG = WriteOp(
    "delete config", "Failed to delete compatibility level", "Error while forwarding delete config request to the leader"
)
UPDATE_MODE = WriteOp("update mode", "Failed to update mode", "Error while forwarding update mode request to the leader")
DELETE_MODE = WriteOp("delete mode", "Failed to delete mode", "Error while forwarding delete mode request to the leader")


class Forwarder:
    """Routes the writes of one instance (see the module docstring)."""

    def __init__(self, config: RegistryConfig, elector: LeaderElector | None,
                 catch_up: Callable[[], Awaitable[Any]]) -> None:
        self.config = config
        self.elector = elector
        self.catch_up = catch_up
        self.headers = FORWARDED_HEADERS + tuple(h.lower() for h in config.headers_whitelist)
        self._client: Any = None

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            timeout = httpx.Timeout(
                self.config.leader_read_timeout_ms / 1000, connect=self.config.leader_connect_timeout_ms / 1000
            )
            self._client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        return self._client

    async def primary_url(self, op: WriteOp, subject: str | None) -> str | None:
        """None when this instance serves writes itself; else the primary's URL (or the error)."""
        elector = self.elector
        if elector is None:
            return None
        if not elector.settled and not await elector.wait_settled(self.config.store_timeout_ms / 1000):
            raise op.unknown_leader_error(subject)
        if elector.is_primary:
            return None
        url = elector.primary_url
        if url is None:
            raise op.unknown_leader_error(subject)
        return url

    async def forward(self, request: Request, body: bytes, op: WriteOp, subject: str | None = None) -> Response | None:
        """The primary's answer to this write, or None when this instance is the primary."""
        url = await self.primary_url(op, subject)
        if url is None:
            return None
        import httpx
        from starlette.responses import Response

        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        target = url + raw_path.decode("latin-1")
        query = request.scope.get("query_string", b"")
        if query:
            target += "?" + query.decode("latin-1")
        headers = {k: v for k, v in request.headers.items() if k.lower() in self.headers}
        try:
            answer = await self._http().request(request.method, target, content=body, headers=headers)
        except httpx.HTTPError as e:
            log.warning("forwarding %s %s to the primary %s failed: %s", request.method, raw_path, url, e)
            raise op.forwarding_error(subject) from e
        if 200 <= answer.status_code < 300:
            try:
                await self.catch_up()
            except errors.RegistryError as e:  # the write is done; only read-your-writes is late
                log.warning("catching up with the store after a forwarded %s: %s", op.name, e.message)
        media = answer.headers.get("content-type")
        return Response(answer.content, status_code=answer.status_code, media_type=media)
