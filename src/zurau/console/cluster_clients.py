"""The clients the console uses to reach the cluster as one principal: an admin client (whose
cluster connections the message browser and the group and share-group admins share), a lazily started producer and
the lag sampler of the groups that principal looks at.

Without login the console holds one :class:`ClusterClients` for everybody (the principal of
``--command-config``); with login each logged-in user has their own (see
:mod:`~zurau.console.auth`), so every request runs as that user and the broker's ACLs apply.
:meth:`ClusterClients.close` stops the sampler and closes every connection; nothing is left
running after it.
"""

from __future__ import annotations

import logging

from zurau.client.admin import AdminClient
from zurau.client.config import ClientConfig
from zurau.client.errors import ClientError
from zurau.client.groups_admin import GroupAdmin
from zurau.client.producer import Producer
from zurau.client.share_groups_admin import ShareGroupAdmin
from zurau.console.groups_view import LagSampler
from zurau.console.message_browser import MessageBrowser
from zurau.protocol.errors import KafkaError
from zurau.schema_formats.record_decoding import RecordDecoder

log = logging.getLogger("zurau.console")


class ClusterClients:
    """One principal's connections to the cluster (see the module docstring)."""

    def __init__(self, config: ClientConfig, decoder: RecordDecoder, lag_sample_interval: float) -> None:
        self.config = config
        self.admin = AdminClient(config)
        self.groups = GroupAdmin(self.admin)
        self.share_groups = ShareGroupAdmin(self.admin)
        self.browser = MessageBrowser(self.admin, decoder)
        self.sampler = LagSampler(self.groups, lag_sample_interval)
        self._producer: Producer | None = None

    async def start(self, *, strict: bool = False) -> None:
        """Connect (authenticating when the protocol is SASL) and start the lag sampler. With
        ``strict`` a failure to connect or authenticate is raised (and nothing is left open);
        otherwise it is logged: the pages show it and work once the cluster is back."""
        try:
            await self.admin.cluster.bootstrap()
        except (ClientError, KafkaError, OSError) as e:
            if strict:
                await self.close()
                raise
            log.warning("the cluster is not reachable yet: %s", e)
        self.sampler.start()

    async def producer(self) -> Producer:
        if self._producer is None:
            self._producer = Producer(
                self.admin.cluster, acks=-1, linger_ms=0, allow_auto_topic_creation=False
            )
            await self._producer.start()
        return self._producer

    async def close(self) -> None:
        await self.sampler.stop()
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                await producer.close()
            except (ClientError, KafkaError, OSError) as e:
                log.debug("closing the producer: %s", e)
        await self.admin.close()


__all__ = ["ClusterClients"]
