"""Share-partition state initialization for the group coordinator (KIP-932).

:class:`ShareStateChannel` implements the group coordinator's
:class:`~zurau.coordinator.group.service.ShareStateInitializer` (Kafka's ``Persister.initializeState``
as the ``DefaultStatePersister`` does it): each share-partition goes to the share coordinator of
its ``groupId:topicId:partition`` key, the leader of that key's ``__share_group_state`` partition
(what FindCoordinator with key type SHARE answers). When this broker leads it, or no broker does
yet (the topic is still to be created, which this broker's share coordinator does on first use),
the broker's own :class:`~zurau.coordinator.share.service.ShareCoordinatorService` answers
in-process; otherwise one InitializeShareGroupState per broker goes over an inter-broker
connection, with the broker's own login. The start offset is always -1
(``UNINITIALIZED_START_OFFSET``: the share-partition starts where ``share.auto.offset.reset``
says when it is first read).

Invariants: every requested partition gets exactly one error code (0: its state is initialized);
a broker that cannot be reached, or answers without a partition, gives it
COORDINATOR_NOT_AVAILABLE; nothing raises for a coordinator problem. Requests run concurrently,
one per owning broker.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import INITIALIZE_SHARE_GROUP_STATE
from zurau.coordinator.share.service import ShareCoordinatorService
from zurau.coordinator.share.share_coordinator_shard import UNINITIALIZED_START_OFFSET
from zurau.coordinator.share.share_state_records import coordinator_key
from zurau.coordinator.txn.inter_broker import inter_broker_connection
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import CoordinatorNotAvailableError, KafkaError
from zurau.protocol.messages import InitializeShareGroupStateRequestTopics

log = logging.getLogger("zurau.coordinator.share")

Codes = dict[uuid.UUID, dict[int, int]]


class ShareStateChannel:
    """InitializeShareGroupState to the share coordinator of each share-partition.

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
    ) -> None:
        """``security`` gives the inter-broker client security when a remote call is first made
        (a single node never makes one, and may have no inter-broker SASL mechanism set)."""
        self.node_id = node_id
        self.local = local
        self.coordinator_of = coordinator_of
        self.endpoint = endpoint
        self.request_timeout_ms = request_timeout_ms
        self.security = security
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
        by_broker: dict[int, dict[uuid.UUID, list[int]]] = defaultdict(lambda: defaultdict(list))
        for tid, ps in topics.items():
            for p in ps:
                broker = self.coordinator_of(coordinator_key(group_id, tid, p))
                by_broker[self.node_id if broker < 0 else broker][tid].append(p)
        out: Codes = {tid: {} for tid in topics}
        answers = await asyncio.gather(
            *(self._send(broker, group_id, state_epoch, parts) for broker, parts in by_broker.items())
        )
        for parts, codes in zip(by_broker.values(), answers, strict=True):
            for tid, ps in parts.items():
                got = codes.get(tid, {})
                for p in ps:
                    out[tid][p] = got.get(p, CoordinatorNotAvailableError.code)
        return out

    async def _send(
        self, broker: int, group_id: str, state_epoch: int, parts: Mapping[uuid.UUID, list[int]]
    ) -> Codes:
        body: list[InitializeShareGroupStateRequestTopics] = [
            {
                "topic_id": tid,
                "partitions": [
                    {"partition": p, "state_epoch": state_epoch, "start_offset": UNINITIALIZED_START_OFFSET}
                    for p in ps
                ],
            }
            for tid, ps in parts.items()
        ]
        codes: Codes = {}
        if broker == self.node_id:
            results = await self.local.initialize_state(group_id, body)
        elif self._closed:
            return codes
        else:
            try:
                conn = await self._conns.get(broker)
                version = conn.version(ApiKey.INITIALIZE_SHARE_GROUP_STATE)
                resp = await conn.call(
                    INITIALIZE_SHARE_GROUP_STATE({"group_id": group_id, "topics": body}), version=version
                )
                results = list(resp.get("results", []))
            except (ClientError, KafkaError, OSError) as e:
                log.info("cannot initialize share state of group %r with broker %d: %s", group_id, broker, e)
                await self._conns.drop(broker)
                return codes
        for r in results:
            for p in r["partitions"]:
                codes.setdefault(r["topic_id"], {})[p["partition"]] = p["error_code"]
        return codes

    async def close(self) -> None:
        self._closed = True
        await self._conns.close()


__all__ = ["ShareStateChannel"]
