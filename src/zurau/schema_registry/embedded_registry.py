"""``EmbeddedRegistry``: a schema registry in this process, for tests.

Runs :class:`~zurau.schema_registry.server.RegistryServer` on its own thread and event loop,
listening on an ephemeral 127.0.0.1 port, against any Kafka-compatible bootstrap server::

    with EmbeddedBroker() as broker, EmbeddedRegistry(broker.bootstrap_servers) as registry:
        SchemaRegistryClient({"url": registry.url})

Extra keyword arguments are registry properties with dots or underscores
(``schema_compatibility_level="FULL"``, ``**{"kafkastore.topic": "_schemas2"}``).
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
        self.config = RegistryConfig.from_props(values)

    def new_server(self) -> RegistryServer:
        return RegistryServer(self.config)

    def start(self) -> EmbeddedRegistry:
        super().start()
        return self

    def __enter__(self) -> EmbeddedRegistry:
        return self.start()
