"""The Kafka clients the proxy uses for one principal: an admin client (whose connections the
group and ACL admins share) and a producer started on first use.

Without authentication one :class:`ProxyClients` serves every request (the ``client.*``
principal). With ``authentication.method=BASIC`` on a SASL cluster each HTTP user gets their own,
connecting with their own credentials (principal propagation, :mod:`.basic_auth`), so that the
brokers' ACLs apply per HTTP user.

Invariants: :meth:`ProxyClients.close` closes every connection and the producer and leaves no
task running; a cluster that is not reachable at start-up is not an error (requests answer 503
until it is back, and the clients reconnect by themselves).
"""

from __future__ import annotations

import asyncio
import logging

from zurau.client.acl_admin import AclAdmin
from zurau.client.admin import AdminClient
from zurau.client.config import ClientConfig
from zurau.client.errors import ClientError
from zurau.client.groups_admin import GroupAdmin
from zurau.client.producer import Producer
from zurau.protocol.errors import KafkaError

log = logging.getLogger("zurau.rest_proxy")


def _int(props: dict[str, str], key: str, default: int) -> int:
    try:
        return int(props.get(key, default))
    except ValueError:
        return default


class ProxyClients:
    """One principal's clients (see the module docstring)."""

    def __init__(
        self, config: ClientConfig, producer_config: ClientConfig, *, consumer_config: ClientConfig | None = None
    ) -> None:
        self.config = config
        self.consumer_config = consumer_config or config
        """The settings of this principal's consumers (v2 consumer instances, streaming consume)."""
        self.admin = AdminClient(config)
        self.groups = GroupAdmin(self.admin)
        self.acls = AclAdmin(self.admin.cluster)
        self._producer_config = producer_config
        self._producer: Producer | None = None
        self._producer_lock = asyncio.Lock()

    async def start(self, *, strict: bool = False) -> None:
        try:
            await self.admin.cluster.bootstrap()
        except (ClientError, KafkaError, OSError) as e:
            if strict:
                await self.close()
                raise
            log.warning("the Kafka cluster is not reachable yet: %s", e)

    async def producer(self) -> Producer:
        """The producer, started on first use, with the ``producer.*`` settings Kafka's producer
        takes (``acks`` default all, ``linger.ms`` default 0 here: every HTTP request waits for
        its delivery reports, ``compression.type``, ``max.request.size``, ``enable.idempotence``)."""
        async with self._producer_lock:
            if self._producer is None:
                props = dict(self._producer_config.extra)
                producer = Producer(
                    self._producer_config,
                    acks=props.get("acks", "all"),
                    compression=props.get("compression.type", "none"),
                    linger_ms=float(props.get("linger.ms", 0)),
                    batch_size=_int(props, "batch.size", 16_384),
                    max_request_size=_int(props, "max.request.size", 1_048_576),
                    delivery_timeout_ms=_int(props, "delivery.timeout.ms", 120_000),
                    enable_idempotence=props.get("enable.idempotence", "false").lower() == "true",
                    allow_auto_topic_creation=False,
                )
                await producer.start()
                self._producer = producer
            return self._producer

    async def close(self) -> None:
        if self._producer is not None:
            try:
                await self._producer.close()
            except Exception as e:  # noqa: BLE001 - closing must go on
                log.debug("closing the producer: %s", e)
            self._producer = None
        await self.admin.cluster.close()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"ProxyClients({self.config.client_id})"

