"""One registry process: the store, the state, the REST API and an HTTP server (uvicorn).

:func:`RegistryServer.start` binds the listener first (port 0 picks a free port), then loads the
store (reading ``_schemas`` to its end), then serves; :meth:`RegistryServer.stop` stops serving
and closes the Kafka clients. Single instance: several registries on one cluster with an elected
primary is not implemented yet.
"""

from __future__ import annotations

import logging
from typing import Any

from zurau.edge_service import HttpService
from zurau.schema_registry.kafka_store import KafkaStore
from zurau.schema_registry.registry import SchemaRegistry
from zurau.schema_registry.registry_config import RegistryConfig
from zurau.schema_registry.registry_state import RegistryState
from zurau.schema_registry.rest_api import RestApi

log = logging.getLogger("zurau.schema_registry")


class RegistryServer(HttpService):
    def __init__(self, config: RegistryConfig) -> None:
        super().__init__(config.host, config.port, "zurau-registry-http")
        self.config = config
        self.state = RegistryState()
        self.store = KafkaStore(config, self.state)
        self.registry = SchemaRegistry(self.state, self.store, config.compatibility_level)

    async def open(self) -> Any:
        await self.store.start()
        cluster_id = self.store._cluster.metadata.cluster_id if self.store._cluster else None
        log.info("schema registry listening on %s (store %s)", self.url, self.config.topic)
        return RestApi(self.registry, self.config.max_request_bytes, cluster_id).app()

    async def close(self) -> None:
        await self.store.close()
