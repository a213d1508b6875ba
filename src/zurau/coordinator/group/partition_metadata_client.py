"""The latest offsets of partitions, as the group coordinator needs them for a share partition's
lag (DescribeShareGroupOffsets v1, KIP-1226): Kafka's ``PartitionMetadataClient``.

:class:`LeaderEndOffsets` asks each partition's leader: this broker's own replica manager when it
leads the partition (its high watermark), otherwise ListOffsets (timestamp -1, read_uncommitted:
the high watermark) over the inter-broker listener, one request per leader, run concurrently.

Invariants: every requested partition gets exactly one answer, its offset or the Kafka error that
kept it from one (a partition without a leader, an unreachable broker: LEADER_NOT_AVAILABLE);
nothing raises for a broker's problem.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable

from zurau.client.connection import BrokerConnection, ConnectionCache
from zurau.client.errors import ClientError
from zurau.client.security import ClientSecurity
from zurau.client.typed_api import LIST_OFFSETS
from zurau.protocol.errors import KafkaError, LeaderNotAvailableError, for_code

log = logging.getLogger("zurau.coordinator")

TopicPartitionKey = tuple[str, int]
LATEST_TIMESTAMP = -1


class LeaderEndOffsets:
    """``leader_of(topic, partition)``: the leader's broker id (-1: none); ``local(topic,
    partition)``: this broker's high watermark (raises a KafkaError when it cannot tell);
    ``endpoint(broker)``: a broker's inter-broker address."""

    def __init__(
        self,
        node_id: int,
        leader_of: Callable[[str, int], int],
        local: Callable[[str, int], int],
        endpoint: Callable[[int], tuple[str, int] | None],
        request_timeout_ms: int = 30_000,
        security: Callable[[], ClientSecurity | None] = lambda: None,
    ) -> None:
        self.node_id = node_id
        self.leader_of = leader_of
        self.local = local
        self.endpoint = endpoint
        self.request_timeout_ms = request_timeout_ms
        self.security = security
        self._conns: ConnectionCache[int] = ConnectionCache(self._new_connection, request_timeout_ms / 1000)

    def _new_connection(self, broker_id: int) -> BrokerConnection:
        address = self.endpoint(broker_id)
        if address is None:
            raise LeaderNotAvailableError(f"broker {broker_id} has no inter-broker endpoint")
        return BrokerConnection(
            address[0],
            address[1],
            client_id=f"zurau-partition-metadata-{self.node_id}",
            request_timeout=self.request_timeout_ms / 1000,
            node_id=broker_id,
            security=self.security(),
        )

    async def latest_offsets(
        self, partitions: Iterable[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, int | KafkaError]:
        out: dict[TopicPartitionKey, int | KafkaError] = {}
        remote: dict[int, list[TopicPartitionKey]] = defaultdict(list)
        for tp in dict.fromkeys(partitions):
            leader = self.leader_of(*tp)
            if leader == self.node_id:
                try:
                    out[tp] = self.local(*tp)
                except KafkaError as e:
                    out[tp] = e
            elif leader < 0:
                out[tp] = LeaderNotAvailableError(f"{tp[0]}-{tp[1]} has no leader")
            else:
                remote[leader].append(tp)
        for answer in await asyncio.gather(*(self._ask(b, tps) for b, tps in remote.items())):
            out.update(answer)
        return out

    async def _ask(
        self, broker: int, tps: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, int | KafkaError]:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for name, index in tps:
            by_topic[name].append(index)
        out: dict[TopicPartitionKey, int | KafkaError] = {}
        try:
            conn = await self._conns.get(broker)
            resp = await conn.call(
                LIST_OFFSETS(
                    {
                        "replica_id": -1,
                        "isolation_level": 0,
                        "topics": [
                            {
                                "name": t,
                                "partitions": [
                                    {
                                        "partition_index": p,
                                        "current_leader_epoch": -1,
                                        "timestamp": LATEST_TIMESTAMP,
                                    }
                                    for p in ps
                                ],
                            }
                            for t, ps in by_topic.items()
                        ],
                    }
                )
            )
            for topic in resp["topics"]:
                for part in topic["partitions"]:
                    code = part["error_code"]
                    out[(topic["name"], part["partition_index"])] = (
                        for_code(code)(f"ListOffsets on broker {broker}") if code else part["offset"]
                    )
        except (ClientError, KafkaError, OSError) as e:
            log.info("latest offsets from broker %d failed: %s", broker, e)
            await self._conns.drop(broker)
        for tp in tps:
            out.setdefault(tp, LeaderNotAvailableError(f"broker {broker} did not answer for {tp[0]}-{tp[1]}"))
        return out

    async def close(self) -> None:
        await self._conns.close()


__all__ = ["LeaderEndOffsets"]
