"""One registry process: the store, the state, the primary election, the REST API and an HTTP
server (uvicorn).

:func:`RegistryServer.start` binds the listener first (port 0 picks a free port, and the port is
part of this instance's identity), then loads the store (reading ``_schemas`` to its end), joins
the registry group (:mod:`.leader_election`) and serves; :meth:`RegistryServer.stop` stops
serving, leaves the group (``kill=True`` does not: the others notice when the session times out)
and closes the Kafka clients.

Several instances on one cluster (same ``kafkastore.topic`` and ``schema.registry.group.id``)
elect one primary through the Kafka group protocol, as Confluent's do. The primary alone writes
to the store and so allocates ids; it first catches up with the store after every election it
wins, so an id is never handed out twice. Secondaries serve reads from their own copy of the
state and forward writes to the primary (:mod:`.forwarding`). Joining does not delay start-up:
the first writes wait for the first election instead.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from zurau.edge_service import HttpService, url_host
from zurau.schema_registry.errors import RegistryError
from zurau.schema_registry.forwarding import Forwarder
from zurau.schema_registry.kafka_store import KafkaStore
from zurau.schema_registry.leader_election import LeaderElector, RegistryGroupMember, RegistryIdentity
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
        self.elector: LeaderElector | None = None
        self.forwarder: Forwarder | None = None

    def identity(self) -> RegistryIdentity:
        """How the other instances reach this one: ``host.name``/``host.port``, else the
        listener's host (this machine's name for a wildcard listener) and port."""
        host = self.config.host_name
        if host is None:
            # a wildcard listener is reached through this machine's name (Confluent's default)
            host = socket.gethostname() if self.host in ("", "0.0.0.0", "::") else url_host(self.host).strip("[]")
        return RegistryIdentity(
            host=host,
            port=self.config.host_port or self.port,
            scheme=self.config.inter_instance_protocol,
            leader_eligibility=self.config.leader_eligibility,
        )

    async def open(self) -> Any:
        await self.store.start()
        cluster = self.store._cluster
        assert cluster is not None
        cfg = self.config
        member = RegistryGroupMember(
            cluster, cfg.group_id, self.identity, sticky=cfg.leader_election_sticky,
            session_timeout_ms=cfg.session_timeout_ms, rebalance_timeout_ms=cfg.rebalance_timeout_ms,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
        )
        await member.check_apis()
        self.elector = LeaderElector(member, self.identity(), on_elected=self._on_elected)
        self.forwarder = Forwarder(cfg, self.elector, self.store.catch_up)
        self.elector.start()
        log.info("schema registry listening on %s (store %s, group %s)", self.url, cfg.topic, cfg.group_id)
        return RestApi(
            self.registry, cfg.max_request_bytes, cluster.metadata.cluster_id, self.forwarder, cfg.group_id
        ).app()

    async def _on_elected(self, primary: RegistryIdentity | None, is_primary: bool) -> None:
        """A new primary reads the store to its end before it writes (ids stay unique)."""
        if is_primary:
            try:
                await self.store.catch_up()
            except RegistryError as e:
                log.warning("the new primary could not catch up with the store: %s", e.message)

    async def stop(self, kill: bool = False) -> None:
        """Stop serving, then leave the group (unless ``kill``) and close the clients."""
        if self.listener is not None:
            await self.listener.close()
        if self.elector is not None:
            await self.elector.stop(kill=kill)
        await self.close()

    async def close(self) -> None:
        if self.forwarder is not None:
            await self.forwarder.close()
        await self.store.close()
