"""Transaction markers for partitions led by other brokers (Kafka's TransactionMarkerChannelManager).

The transaction coordinator ends a transaction by writing a COMMIT or ABORT marker into every
partition of it. A partition this broker leads gets its marker in-process; every other one gets
it from its leader, through a WriteTxnMarkers request sent to that broker's inter-broker
listener. :class:`TxnMarkerChannel` sends those requests: the markers of one transaction for one
broker travel in one request, over one connection per broker (opened on demand and reused), and
each partition's outcome comes back as the error code the leader answered (None: the marker is
committed there, below its high watermark).

A broker that cannot be reached or does not answer in time fails every partition of the request
with NOT_LEADER_OR_FOLLOWER (retriable), so that the state machine retries after its marker
backoff, by which time the metadata may name another leader. The receiving broker writes the
markers only where it leads (it never forwards them) and answers once each is committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import WRITE_TXN_MARKERS
from zurau.coordinator.txn.inter_broker import inter_broker_connection
from zurau.protocol.errors import KafkaError, NotLeaderOrFollowerError, for_code
from zurau.types import TopicPartitionKey

log = logging.getLogger("zurau.coordinator")

# (topic, partition) -> its outcome (None: committed)
MarkerResults = dict[TopicPartitionKey, KafkaError | None]


class TxnMarkerChannel:
    """Sends WriteTxnMarkers to the leaders of partitions this broker does not lead.

    ``leader_of(topic, partition)`` is the partition's leader in the current metadata (-1 when
    none); ``endpoint(broker_id)`` that broker's inter-broker (host, port), or None.
    """

    def __init__(
        self,
        node_id: int,
        leader_of: Callable[[str, int], int],
        endpoint: Callable[[int], tuple[str, int] | None],
        request_timeout_ms: int = 30_000,
        security: ClientSecurity | None = None,
    ) -> None:
        self.node_id = node_id
        self.leader_of = leader_of
        self.endpoint = endpoint
        self.request_timeout_ms = request_timeout_ms
        self.security = security
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._conns: ConnectionCache[int] = ConnectionCache(self._new_connection, request_timeout_ms / 1000)

    def _new_connection(self, broker_id: int) -> BrokerConnection:
        return inter_broker_connection(
            self.endpoint,
            broker_id,
            client_id=f"zurau-txn-markers-{self.node_id}",
            request_timeout_ms=self.request_timeout_ms,
            security=self.security,
            unreachable=NotLeaderOrFollowerError,
        )

    def split(
        self, partitions: Iterable[TopicPartitionKey]
    ) -> tuple[list[TopicPartitionKey], dict[int, list[TopicPartitionKey]]]:
        """The partitions led here (or whose leader is unknown: the local path answers them)
        and those led elsewhere, by leader."""
        local: list[TopicPartitionKey] = []
        remote: dict[int, list[TopicPartitionKey]] = defaultdict(list)
        for tp in partitions:
            leader = self.leader_of(*tp)
            if leader < 0 or leader == self.node_id:
                local.append(tp)
            else:
                remote[leader].append(tp)
        return local, dict(remote)

    def send(
        self,
        broker_id: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: list[TopicPartitionKey],
        done: Callable[[MarkerResults], None],
        transaction_version: int = 0,
    ) -> None:
        """Ask ``broker_id`` to write the markers; ``done`` gets every partition's outcome
        (``transaction_version``: the transaction's, WriteTxnMarkers v2)."""
        if self._closed:
            done({tp: NotLeaderOrFollowerError("the marker channel is closed") for tp in partitions})
            return
        task = asyncio.get_running_loop().create_task(
            self._send(
                broker_id, producer_id, producer_epoch, commit, coordinator_epoch, partitions, done, transaction_version
            ),
            name=f"zurau-txn-markers-{broker_id}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(
        self,
        broker_id: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: list[TopicPartitionKey],
        done: Callable[[MarkerResults], None],
        transaction_version: int = 0,
    ) -> None:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, index in partitions:
            by_topic[topic].append(index)
        call = WRITE_TXN_MARKERS({
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "transaction_result": commit,
                    "topics": [{"name": t, "partition_indexes": idx} for t, idx in by_topic.items()],
                    "coordinator_epoch": coordinator_epoch,
                    "transaction_version": transaction_version,
                }
            ]
        })
        results: MarkerResults = {}
        try:
            conn = await self._conns.get(broker_id)
            resp = await conn.call(call)
            for m in resp["markers"]:
                for t in m["topics"]:
                    for p in t["partitions"]:
                        code = p["error_code"]
                        results[(t["name"], p["partition_index"])] = for_code(code)() if code else None
        except asyncio.CancelledError:
            results = {tp: NotLeaderOrFollowerError("the marker channel is closed") for tp in partitions}
            done(results)
            raise
        except (ClientError, KafkaError, OSError) as e:
            log.info("cannot send transaction markers to broker %d: %s", broker_id, e)
            await self._conns.drop(broker_id)
        except Exception:
            log.exception("sending transaction markers to broker %d failed", broker_id)
            await self._conns.drop(broker_id)
        for tp in partitions:
            if tp not in results:
                results[tp] = NotLeaderOrFollowerError(f"no marker answer from broker {broker_id} for {tp[0]}-{tp[1]}")
        try:
            done(results)
        except Exception:
            log.exception("transaction marker callback failed")

    async def close(self) -> None:
        """Stop: pending sends are answered with an error; connections are closed."""
        self._closed = True
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        await self._conns.close()


__all__ = ["MarkerResults", "TxnMarkerChannel"]
