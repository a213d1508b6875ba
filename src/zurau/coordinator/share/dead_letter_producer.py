"""The broker's producer of share-group dead letters
(:mod:`zurau.replication.share.dead_letters`): Zurau's own client, connected to this broker's
inter-broker listener with the broker's login, started on first use, ``acks=all``, keys hashed to
partitions as any producer does (dead letters of one source key stay in order)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from zurau.client.config import ClientConfig
from zurau.client.producer import Producer
from zurau.client.security import ClientSecurity
from zurau.replication.share.dead_letters import DeadLetter


class DeadLetterProducer:
    """A :class:`~zurau.replication.share.dead_letters.DeadLetterSink` over a producer."""

    def __init__(
        self,
        node_id: int,
        endpoint: Callable[[], tuple[str, int] | None],
        security: Callable[[], ClientSecurity | None] = lambda: None,
    ) -> None:
        self.node_id = node_id
        self.endpoint = endpoint
        self.security = security
        self._producer: Producer | None = None
        self._lock = asyncio.Lock()

    async def _get(self) -> Producer:
        async with self._lock:
            if self._producer is None:
                ep = self.endpoint()
                if ep is None:
                    raise ConnectionError("this broker's inter-broker listener is not known yet")
                security = self.security() or ClientSecurity()
                cfg = ClientConfig(
                    bootstrap_servers=(ep,),
                    client_id=f"zurau-share-dlq-{self.node_id}",
                    security_protocol=security.protocol,
                    security=security,
                )
                producer = Producer(cfg, acks="all", linger_ms=1, allow_auto_topic_creation=True)
                await producer.start()
                self._producer = producer
            return self._producer

    async def send(self, topic: str, letters: Sequence[DeadLetter]) -> None:
        producer = await self._get()
        futures = [
            await producer.send(
                topic,
                letter.value,
                key=letter.key,
                headers=letter.record_headers(),
                timestamp_ms=letter.timestamp_ms,
            )
            for letter in letters
        ]
        await producer.flush()
        for f in futures:
            await f

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.close()
            self._producer = None
