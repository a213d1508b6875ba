"""FindCoordinator: which broker coordinates a consumer group or a transactional id.

The one lookup the client's group member (:mod:`~zurau.client.group`), group admin
(:mod:`~zurau.client.groups_admin`) and transactions admin (:mod:`~zurau.client.transactions_admin`)
use:

* from v4 every key goes in one request (``coordinator_keys``) and the answer has one coordinator
  per key; before v4 each key is a request of its own (``key``). Key types other than groups need
  v1 (the first version with ``key_type``).
* Keys answered with COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR
  are asked for again after ``retry_backoff`` seconds, until ``request.timeout.ms`` has passed;
  other errors (and those, once time is up) are the key's result, built by the caller's
  :data:`ErrorFactory` so that each caller keeps its wording.
* A coordinator missing from the cluster metadata is looked for with a brokers-only Metadata
  refresh; if it is still missing (not in metadata yet), the address FindCoordinator gave is
  trusted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import NamedTuple

from zurau.client import typed_api
from zurau.client.cluster import BrokerNode, Cluster
from zurau.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
    UnknownServerError,
)
from zurau.protocol.messages import FindCoordinatorResponse, FindCoordinatorResponseCoordinators

FIND_COORDINATOR = 10
BATCHED_VERSION = 4  # the first version with coordinator_keys
GROUP, TRANSACTION = 0, 1  # key types

#: The answers after which a coordinator is looked up again: it moved, or is not ready yet.
COORDINATOR_RETRY = frozenset(
    {CoordinatorLoadInProgressError.code, CoordinatorNotAvailableError.code, NotCoordinatorError.code}
)

ErrorFactory = Callable[[str, int, str | None], KafkaError]
"""``error(key, error_code, broker's error message or None)``: the error reported for a key."""

_NOUNS = {GROUP: "group", TRANSACTION: "transactional id"}


class _Answer(NamedTuple):
    key: str
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int


def _answer(key: str, c: FindCoordinatorResponse | FindCoordinatorResponseCoordinators) -> _Answer:
    """One key's answer: an element of ``coordinators`` (v4+), or the whole response before."""
    return _Answer(key, c["error_code"], c.get("error_message"), c["node_id"], c["host"], c["port"])


async def _ask(cluster: Cluster, keys: list[str], key_type: int) -> list[_Answer]:
    """One round of FindCoordinator for ``keys`` at any broker."""
    conn = await cluster.any_connection()
    version = conn.version(FIND_COORDINATOR, min_version=0 if key_type == GROUP else 1)
    if version >= BATCHED_VERSION:
        call = typed_api.FIND_COORDINATOR({"key": "", "key_type": key_type, "coordinator_keys": keys})
        resp = await conn.call(call, version=version)
        return [_answer(c["key"], c) for c in resp["coordinators"]]
    answers: list[_Answer] = []
    for key in keys:
        resp = await conn.call(typed_api.FIND_COORDINATOR({"key": key, "key_type": key_type}), version=version)
        answers.append(_answer(key, resp))
    return answers


async def _learn_node(cluster: Cluster, node: int, host: str, port: int) -> None:
    if node not in cluster.metadata.brokers:
        await cluster.refresh_metadata([])
    if node not in cluster.metadata.brokers:  # not (yet) in metadata: trust the answer
        cluster.metadata.brokers[node] = BrokerNode(node, host, port)


async def find_coordinators(
    cluster: Cluster,
    keys: Iterable[str],
    key_type: int = GROUP,
    *,
    error: ErrorFactory,
    retry_backoff: float = 0.1,
) -> dict[str, int | KafkaError]:
    """The coordinator's node id per key, or the key's error (see the module's docstring)."""
    todo = list(dict.fromkeys(keys))
    out: dict[str, int | KafkaError] = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + cluster.config.request_timeout
    while todo:
        answers = await _ask(cluster, todo, key_type)
        retry = []
        for a in answers:
            if not a.error_code:
                await _learn_node(cluster, a.node_id, a.host, a.port)
                out[a.key] = a.node_id
            elif a.error_code in COORDINATOR_RETRY and loop.time() < deadline:
                retry.append(a.key)
            else:
                out[a.key] = error(a.key, a.error_code, a.error_message)
        answered = {a.key for a in answers}
        for key in todo:
            if key not in answered:
                out[key] = UnknownServerError(
                    f"FindCoordinator sent no answer for {_NOUNS.get(key_type, 'key')} '{key}'"
                )
        todo = [k for k in retry if k not in out]
        if todo:
            await asyncio.sleep(retry_backoff)
    return out


async def find_coordinator(
    cluster: Cluster,
    key: str,
    key_type: int = GROUP,
    *,
    error: ErrorFactory,
    retry_backoff: float = 0.1,
) -> int:
    """The node id of ``key``'s coordinator; raises the key's error."""
    found = (await find_coordinators(cluster, [key], key_type, error=error, retry_backoff=retry_backoff))[key]
    if isinstance(found, KafkaError):
        raise found
    return found


__all__ = [
    "COORDINATOR_RETRY",
    "GROUP",
    "TRANSACTION",
    "ErrorFactory",
    "find_coordinator",
    "find_coordinators",
]
