"""The share-group-state persister (KIP-932): the five share-group-state APIs, routed.

:class:`ShareStateChannel` is Kafka's ``DefaultStatePersister``: the group coordinator initializes
share-partition state through it (it implements
:class:`~zurau.coordinator.group.service.ShareStateInitializer`), share-partition leaders read and
write it, the admin APIs read summaries and delete it. Each share-partition goes to the share coordinator of
its ``groupId:topicId:partition`` key, the leader of that key's ``__share_group_state`` partition
(what FindCoordinator with key type SHARE answers). When this broker leads it, or no broker does
yet (the topic is still to be created, which this broker's share coordinator does on first use),
the broker's own :class:`~zurau.coordinator.share.service.ShareCoordinatorService` answers
in-process; otherwise one request per broker goes over an inter-broker connection, with the
broker's own login. Initialization always writes start offset -1 (``UNINITIALIZED_START_OFFSET``:
the share-partition leader starts it where ``share.auto.offset.reset`` says when it first reads
it).

Invariants: every requested partition gets exactly one answer with an error code;
a broker that cannot be reached, or answers without a partition, gives it
COORDINATOR_NOT_AVAILABLE; nothing raises for a coordinator problem. Requests run concurrently,
one per owning broker. A partition answered with a coordinator error that passes (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE: a coordinator moving or loading after a
failover) is asked again, re-routed by the current metadata, after a backoff that doubles from
``retry_backoff_ms`` (at most 1 s), until ``retry_timeout_ms`` has passed since the first
attempt, with at least ``RETRY_ATTEMPTS`` attempts in all (Kafka's persister retries a bounded
number of times; a coordinator elected after a ``kill -9`` takes a few seconds to load its
partition, and an acknowledgement answered COORDINATOR_NOT_AVAILABLE meanwhile is lost to the
consumer, so Zurau waits longer); the last answer stands.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import (
    DELETE_SHARE_GROUP_STATE,
    INITIALIZE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE_SUMMARY,
    WRITE_SHARE_GROUP_STATE,
)
from zurau.coordinator.share.service import ShareCoordinatorService
from zurau.coordinator.share.share_coordinator_shard import UNINITIALIZED_START_OFFSET
from zurau.coordinator.share.share_state_records import coordinator_key
from zurau.coordinator.txn.inter_broker import inter_broker_connection
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
)

log = logging.getLogger("zurau.coordinator.share")

Codes = dict[uuid.UUID, dict[int, int]]
Key = tuple[uuid.UUID, int]  # (topic id, partition)
Item = dict[str, Any]  # a request or response partition entry of a share-group-state API

RETRY_ATTEMPTS = 5
TRANSIENT = frozenset(
    {NotCoordinatorError.code, CoordinatorLoadInProgressError.code, CoordinatorNotAvailableError.code}
)

_LOCAL = {
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: "initialize_state",
    ApiKey.READ_SHARE_GROUP_STATE: "read_state",
    ApiKey.WRITE_SHARE_GROUP_STATE: "write_state",
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: "read_state_summary",
    ApiKey.DELETE_SHARE_GROUP_STATE: "delete_state",
}
_REMOTE: dict[ApiKey, Any] = {
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: INITIALIZE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE: READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE: WRITE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: READ_SHARE_GROUP_STATE_SUMMARY,
    ApiKey.DELETE_SHARE_GROUP_STATE: DELETE_SHARE_GROUP_STATE,
}


class ShareStateChannel:
    """The share-group-state APIs to the share coordinator of each share-partition.

    ``coordinator_of(key)``: the broker leading the coordinator key's ``__share_group_state``
    partition in the current metadata (-1: none, or the topic does not exist yet);
    ``endpoint(broker_id)``: that broker's inter-broker (host, port), or None.
    """

    def __init__(
        self,
        node_id: int,
        local: ShareCoordinatorService,
        coordinator_of: Callable[[str], int],
        endpoint: Callable[[int], tuple[str, int] | None],
        request_timeout_ms: int = 30_000,
        security: Callable[[], ClientSecurity | None] = lambda: None,
        retry_backoff_ms: int = 100,
        retry_timeout_ms: int = 15_000,
    ) -> None:
        """``security`` gives the inter-broker client security when a remote call is first made
        (a single node never makes one, and may have no inter-broker SASL mechanism set)."""
        self.node_id = node_id
        self.local = local
        self.coordinator_of = coordinator_of
        self.endpoint = endpoint
        self.request_timeout_ms = request_timeout_ms
        self.security = security
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_timeout_ms = retry_timeout_ms
        self._closed = False
        self._conns: ConnectionCache[int] = ConnectionCache(self._new_connection, request_timeout_ms / 1000)

    def _new_connection(self, broker_id: int) -> BrokerConnection:
        return inter_broker_connection(
            self.endpoint,
            broker_id,
            client_id=f"zurau-share-state-{self.node_id}",
            request_timeout_ms=self.request_timeout_ms,
            security=self.security(),
            unreachable=CoordinatorNotAvailableError,
        )

    async def initialize_state(
        self, group_id: str, state_epoch: int, topics: Mapping[uuid.UUID, Iterable[int]]
    ) -> Codes:
        items = {
            (tid, p): {"partition": p, "state_epoch": state_epoch, "start_offset": UNINITIALIZED_START_OFFSET}
            for tid, ps in topics.items()
            for p in ps
        }
        results = await self.call(ApiKey.INITIALIZE_SHARE_GROUP_STATE, group_id, items)
        out: Codes = {tid: {} for tid in topics}
        for (tid, p), r in results.items():
            out[tid][p] = r["error_code"]
        return out

    async def initialize_offsets(
        self, group_id: str, state_epoch: int, offsets: Mapping[uuid.UUID, Mapping[int, int]]
    ) -> Codes:
        """InitializeShareGroupState with a start offset per partition (AlterShareGroupOffsets):
        an error code per requested partition."""
        items = {
            (tid, p): {"partition": p, "state_epoch": state_epoch, "start_offset": offset}
            for tid, ps in offsets.items()
            for p, offset in ps.items()
        }
        results = await self.call(ApiKey.INITIALIZE_SHARE_GROUP_STATE, group_id, items)
        out: Codes = {tid: {} for tid in offsets}
        for (tid, p), r in results.items():
            out[tid][p] = r["error_code"]
        return out

    async def read_state(self, group_id: str, items: Mapping[Key, Item]) -> dict[Key, Item]:
        """ReadShareGroupState: ``items`` maps ``(topic id, partition)`` to the request
        partition (``partition``, ``leader_epoch``); the result maps each to its response
        partition (``error_code``, ``state_epoch``, ``start_offset``, ``state_batches``)."""
        return await self.call(ApiKey.READ_SHARE_GROUP_STATE, group_id, items)

    async def write_state(self, group_id: str, items: Mapping[Key, Item]) -> dict[Key, Item]:
        """WriteShareGroupState (request partitions as the API has them): error code per key."""
        return await self.call(ApiKey.WRITE_SHARE_GROUP_STATE, group_id, items)

    async def read_state_summary(self, group_id: str, items: Mapping[Key, Item]) -> dict[Key, Item]:
        """ReadShareGroupStateSummary: start offset and epochs per key."""
        return await self.call(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, group_id, items)

    async def delete_state(self, group_id: str, items: Mapping[Key, Item]) -> dict[Key, Item]:
        """DeleteShareGroupState: error code per key."""
        return await self.call(ApiKey.DELETE_SHARE_GROUP_STATE, group_id, items)

    async def call(self, api: ApiKey, group_id: str, items: Mapping[Key, Item]) -> dict[Key, Item]:
        """One share-group-state API for ``items`` (``(topic id, partition)`` -> the request's
        partition entry): split by owning share coordinator, one request per broker, run
        concurrently. Every key gets a response partition; one whose broker could not be asked
        or did not answer it has COORDINATOR_NOT_AVAILABLE. Keys answered with a passing
        coordinator error are asked again (see the module docstring)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry_timeout_ms / 1000
        out = await self._call_once(api, group_id, items)
        backoff = self.retry_backoff_ms / 1000
        attempts = 1
        while attempts < RETRY_ATTEMPTS or loop.time() + backoff < deadline:
            again = {k: items[k] for k, r in out.items() if r.get("error_code") in TRANSIENT}
            if not again or self._closed:
                break
            attempts += 1
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
            out.update(await self._call_once(api, group_id, again))
        return out

    async def _call_once(self, api: ApiKey, group_id: str, items: Mapping[Key, Item]) -> dict[Key, Item]:
        by_broker: dict[int, dict[Key, Item]] = defaultdict(dict)
        for key, item in items.items():
            tid, p = key
            broker = self.coordinator_of(coordinator_key(group_id, tid, p))
            by_broker[self.node_id if broker < 0 else broker][key] = item
        answers = await asyncio.gather(*(self._send(api, b, group_id, part) for b, part in by_broker.items()))
        out: dict[Key, Item] = {}
        for answer in answers:
            out.update(answer)
        for tid, p in items:
            out.setdefault(
                (tid, p),
                {
                    "partition": p,
                    "error_code": CoordinatorNotAvailableError.code,
                    "error_message": "The share coordinator is not available.",
                },
            )
        return out

    async def _send(
        self, api: ApiKey, broker: int, group_id: str, items: Mapping[Key, Item]
    ) -> dict[Key, Item]:
        by_topic: dict[uuid.UUID, list[Item]] = defaultdict(list)
        for (tid, _), item in items.items():
            by_topic[tid].append(item)
        body: list[Any] = [{"topic_id": tid, "partitions": parts} for tid, parts in by_topic.items()]
        results: list[Any]
        if broker == self.node_id:
            results = list(await getattr(self.local, _LOCAL[api])(group_id, body))
        elif self._closed:
            return {}
        else:
            try:
                conn = await self._conns.get(broker)
                resp = await conn.call(
                    _REMOTE[api]({"group_id": group_id, "topics": body}), version=conn.version(api)
                )
                results = list(resp.get("results", []))
            except (ClientError, KafkaError, OSError) as e:
                log.info(
                    "share-state %s of group %r with broker %d failed: %s", api.name, group_id, broker, e
                )
                await self._conns.drop(broker)
                return {}
        out: dict[Key, Item] = {}
        for r in results:
            for p in r["partitions"]:
                out[(r["topic_id"], p["partition"])] = dict(p)
        return out

    async def close(self) -> None:
        self._closed = True
        await self._conns.close()


__all__ = ["ShareStateChannel"]
