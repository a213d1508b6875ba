"""``EmbeddedRegistry``: a schema registry in this process, for tests.

Runs :class:`~zurau.schema_registry.server.RegistryServer` on its own thread and event loop,
listening on an ephemeral 127.0.0.1 port, against any Kafka-compatible bootstrap server::

    with EmbeddedBroker() as broker, EmbeddedRegistry(broker.bootstrap_servers) as registry:
        SchemaRegistryClient({"url": registry.url})

Extra keyword arguments are registry properties with dots or underscores
(``schema_compatibility_level="FULL"``, ``**{"kafkastore.topic": "_schemas2"}``).

Several registries on one broker with the same store topic form one registry cluster (one
primary, the others forward writes). A registry given its own ``kafkastore.topic`` and no
``schema.registry.group.id`` joins the group ``schema-registry-<topic>``, so that test registries
on separate topics never forward to each other (Confluent's default group is ``schema-registry``
whatever the topic). :meth:`EmbeddedRegistry.kill` stops without leaving the group, as a crash.
"""

from __future__ import annotations

from typing import Any

from zurau.edge_service import EmbeddedService
from zurau.schema_registry.registry_config import RegistryConfig
from zurau.schema_registry.server import RegistryServer


class EmbeddedRegistry(EmbeddedService[RegistryServer]):
    thread_name = "zurau-embedded-registry"

    def __init__(self, bootstrap_servers: str, **props: Any) -> None:
        super().__init__()
        values = {"listeners": "http://127.0.0.1:0", "kafkastore.bootstrap.servers": bootstrap_servers}
        values.update({k.replace("_", "."): str(v) for k, v in props.items()})
        topic = values.get("kafkastore.topic")
        if topic is not None and topic != "_schemas":
            values.setdefault("schema.registry.group.id", f"schema-registry-{topic}")
        self.config = RegistryConfig.from_props(values)
        self._kill = False

    def new_server(self) -> RegistryServer:
        return RegistryServer(self.config)

    async def stop_server(self, server: RegistryServer) -> None:
        await server.stop(kill=self._kill)

    def start(self) -> EmbeddedRegistry:
        self._kill = False
        super().start()
        return self

    def kill(self) -> None:
        """Stop abruptly: the group is not left, the others elect anew when the session expires."""
        self._kill = True
        self.stop()

    @property
    def is_primary(self) -> bool:
        """Whether this instance is the primary of its group now."""
        server = self.server
        return server is not None and server.elector is not None and server.elector.is_primary

    def __enter__(self) -> EmbeddedRegistry:
        return self.start()
