"""The broker process shell: listeners, connections, periodic log maintenance.

``Broker`` composes the layers for one node (topic registry -> log manager -> replica manager ->
handlers) and owns every socket. Start-up order: open the metadata, recover every log (torn tails
truncated, indexes rebuilt), host the partitions, then listen. Shutdown: stop listening, close
connections, flush and checkpoint the logs (a clean shutdown marker lets the next start skip
recovery scans).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import time
from typing import Any, Protocol

from zurau.broker.connection import KafkaConnection
from zurau.broker.dispatcher import Handler, api_version_ranges, load_handlers
from zurau.broker.request_context import BrokerServices
from zurau.clock import SystemClock
from zurau.config import BrokerConfig, ConfigError, resolve_topic_config, validate_topic_configs
from zurau.coordinator.runtime import GroupCoordinatorRuntime
from zurau.coordinator.transaction_runtime import TransactionRuntime
from zurau.metadata.producer_id_manager import ProducerIdManager
from zurau.metadata.topic_registry import TopicMetadata, TopicRegistry, validate_topic_name
from zurau.protocol.errors import (
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from zurau.replication.replica_manager import ReplicaManager
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager

log = logging.getLogger("zurau.broker")

_LOG_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(LogConfig))


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class ConnectionHost(Protocol):
    """What a connection needs of the server that accepted it."""

    connections: set[KafkaConnection]
    handlers: dict[int, Handler]
    services: BrokerServices


class _Metadata:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    @property
    def image(self) -> Any:
        return self._broker.topics


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id: int = config.node_id
        self.handlers = load_handlers()
        self.api_versions = api_version_ranges(self.handlers)
        self.connections: set[KafkaConnection] = set()
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.listen_addresses: list[tuple[str, int]] = []
        self.topics: TopicRegistry
        self.log_manager: LogManager
        self.replica_manager: ReplicaManager
        self.group_coordinator: GroupCoordinatorRuntime
        self.txn_coordinator: TransactionRuntime
        self.started = False
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Open metadata and logs, start coordinators, then listen. On failure, undo it all."""
        try:
            await self._start()
        except BaseException:
            await self._shutdown()
            raise
        self.started = True
        log.info("broker %d listening on %s", self.node_id, self.listen_addresses)

    async def _start(self) -> None:
        cfg = self.config
        # fsync and checkpoint writes run here, never on the event loop (DESIGN.md principle 5);
        # one thread keeps them in order and away from the caller's default executor.
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zurau-flush")
        log_dirs = cfg.log_dirs
        for d in log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        meta_dir = log_dirs[0] / "__cluster_metadata"
        self.topics = TopicRegistry.load(meta_dir, cfg.cluster_id)
        self.producer_ids = ProducerIdManager(meta_dir)
        self.log_manager = LogManager(log_dirs, now_ms, config_for=self.log_config_for)
        self.replica_manager = ReplicaManager(self.node_id, self.log_manager, self.log_config_for, now_ms)
        for t in self.topics.all():
            for i in range(t.partitions):
                self.replica_manager.host(t.name, i)
        # Group coordinator: replays __consumer_offsets (if it exists) before the broker listens.
        self.group_coordinator = GroupCoordinatorRuntime(
            cfg, self.replica_manager, self.topics, self.create_topic, now_ms
        )
        self.group_coordinator.start()
        # Transaction coordinator: replays __transaction_state and completes the transactions it
        # finds prepared (markers reach __consumer_offsets too, hence after the groups).
        self.txn_coordinator = TransactionRuntime(
            cfg,
            self.replica_manager,
            self.topics,
            self.create_topic,
            now_ms,
            self.producer_ids.next_id,
            self.group_coordinator,
        )
        self.txn_coordinator.start()
        self.services = BrokerServices(
            node_id=self.node_id,
            config=cfg,
            clock=SystemClock(),
            replica_manager=self.replica_manager,
            metadata=_Metadata(self),
            controller=self,
            groups=self.group_coordinator,
            txns=self.txn_coordinator,
            api_versions=self.api_versions,
            advertised=lambda: self.advertised,
            running=lambda: self.started,
        )
        loop = asyncio.get_running_loop()
        for _name, host, port in cfg.listeners:
            server = await loop.create_server(
                lambda: KafkaConnection(self), host or None, port, reuse_address=True, backlog=1024
            )
            self._servers.append(server)
            sock = server.sockets[0]
            self.listen_addresses.append(sock.getsockname()[:2])
        self._tasks.append(asyncio.create_task(self._maintenance()))

    async def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        await self._shutdown()

    async def _shutdown(self) -> None:
        """Stop everything that exists; safe on a half-started broker."""
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        for s in self._servers:
            s.close()
        handler_tasks = []
        for c in list(self.connections):
            handler_tasks.extend(c._tasks)
            if c.transport is not None:
                c.transport.close()
        for t in handler_tasks:
            t.cancel()
        if handler_tasks:
            await asyncio.gather(*handler_tasks, return_exceptions=True)
        for s in self._servers:
            with contextlib.suppress(Exception):
                await s.wait_closed()
        self._servers.clear()
        if hasattr(self, "txn_coordinator"):
            self.txn_coordinator.stop()
        if hasattr(self, "group_coordinator"):
            self.group_coordinator.stop()
        if hasattr(self, "replica_manager"):
            self.replica_manager.purgatory.notify_all()
        if self._executor is not None:
            self._executor.shutdown(wait=True)  # an fsync in flight finishes before logs close
            self._executor = None
        if hasattr(self, "log_manager"):
            self.log_manager.close()
        log.info("broker %d stopped", self.node_id)

    async def _maintenance(self) -> None:
        """Retention, flush.ms and checkpoints, each on its Kafka interval."""
        cfg = self.config
        retention_every = cfg.get("log.retention.check.interval.ms") / 1000
        checkpoint_every = cfg.get("log.flush.offset.checkpoint.interval.ms") / 1000
        flush_every = min(cfg.get("log.flush.scheduler.interval.ms") / 1000, 1.0)
        last_retention = last_checkpoint = time.monotonic()
        while True:
            await asyncio.sleep(flush_every)
            now = time.monotonic()
            try:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self._executor, self.log_manager.flush_dirty, now_ms())
                if now - last_retention >= retention_every:
                    last_retention = now
                    self.log_manager.run_retention(now_ms())
                if now - last_checkpoint >= checkpoint_every:
                    last_checkpoint = now
                    await loop.run_in_executor(self._executor, self.log_manager.checkpoint)
            except Exception:
                log.exception("log maintenance failed")

    # ------------------------------------------------------------------ endpoints
    @property
    def advertised(self) -> tuple[str, int]:
        """The (host, port) clients should connect to (advertised.listeners, else the bound one)."""
        bound_host, bound_port = self.listen_addresses[0]
        adv = self.config.advertised_listeners
        if adv:
            _name, host, port = adv[0]
            return (host or bound_host, port or bound_port)
        host = self.config.listeners[0][1]
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1" if bound_host in ("0.0.0.0", "::") else bound_host
        return host, bound_port

    @property
    def bootstrap_servers(self) -> str:
        host, port = self.advertised
        return f"{host}:{port}"

    # ------------------------------------------------------------------ topics
    def log_config_for(self, topic: str) -> LogConfig:
        t = self.topics.get(topic)
        typed = resolve_topic_config(self.config, t.configs if t else {})
        return LogConfig(**{k: typed[k] for k in _LOG_CONFIG_FIELDS if k in typed})

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str | None], validate_only: bool = False
    ) -> TopicMetadata | None:
        validate_topic_name(name)
        if self.topics.get(name) is not None:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if partitions == -1:
            partitions = self.config.get("num.partitions")
        if replication_factor == -1:
            replication_factor = self.config.get("default.replication.factor")
        if partitions <= 0:
            raise InvalidPartitionsError("Number of partitions must be larger than 0.")
        if replication_factor <= 0:
            raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
        if replication_factor > 1:
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): the number of live brokers is 1."
            )
        try:
            validate_topic_configs(configs)
        except ConfigError as e:
            raise InvalidConfigError(str(e)) from None
        if validate_only:
            return None
        clean = {k: v for k, v in configs.items() if v is not None}
        t = self.topics.create(name, partitions, clean)
        for i in range(partitions):
            self.replica_manager.host(name, i)
        log.info("created topic %s with %d partitions", name, partitions)
        return t

    def delete_topic(self, name: str) -> TopicMetadata:
        t = self.topics.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        self.topics.delete(name)
        for i in range(t.partitions):
            self.replica_manager.stop_hosting(name, i, delete=True)
        self.group_coordinator.on_topic_deleted(name)  # committed offsets of the topic go too
        log.info("deleted topic %s", name)
        return t

    def add_partitions(self, name: str, total: int, validate_only: bool = False) -> None:
        t = self.topics.get(name)
        if t is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        if total <= t.partitions:
            raise InvalidPartitionsError(
                f"Topic currently has {t.partitions} partitions, which is higher than or equal to the requested {total}."
            )
        if validate_only:
            return
        old = t.partitions
        self.topics.set_partitions(name, total)
        for i in range(old, total):
            self.replica_manager.host(name, i)

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.topics.set_configs(name, configs)
        self.replica_manager.update_config(name)
