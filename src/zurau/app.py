"""Composition root: wires one broker node from its configuration, and runs it until a signal.

Layers are built bottom-up (DESIGN.md): storage (log manager) -> metadata (metadata log, image,
controller and its channel) -> replication (replica manager) -> coordinators -> broker (handlers'
services, listeners). Upward notifications go through small interfaces wired here: the
metadata publisher applies every new image to the replica manager and the coordinators.

Start-up order: open and replay the metadata log (migrating a pre-KRaft ``topics.json`` on first
start), recover every partition log, host the partitions the image places on this node, load the
coordinators' internal partitions, then listen. Shutdown: stop listening and close connections,
stop coordinators, flush and checkpoint the logs (a clean-shutdown marker lets the next start skip
recovery scans), close the metadata log.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import signal
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from zurau.broker.dispatcher import api_version_ranges, load_handlers
from zurau.broker.metadata_publisher import MetadataPublisher
from zurau.broker.request_context import BrokerServices
from zurau.broker.server import BrokerServer
from zurau.clock import Clock, SystemClock
from zurau.config import BrokerConfig, resolve_topic_config
from zurau.coordinator.partition_writer import ReplicaManagerPartitionWriter
from zurau.coordinator.runtime import GroupCoordinatorRuntime
from zurau.coordinator.transaction_runtime import TransactionRuntime
from zurau.metadata.controller import QuorumController
from zurau.metadata.image import MetadataImage, TopicImage
from zurau.metadata.local_controller import LocalControllerChannel
from zurau.metadata.metadata_log import MetadataLog, open_metadata
from zurau.metadata.producer_id_manager import ProducerIdManager
from zurau.protocol.errors import KafkaError, KafkaStorageError, UnknownTopicOrPartitionError, for_code
from zurau.replication.replica_manager import ReplicaManager
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager

log = logging.getLogger("zurau.broker")

_LOG_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(LogConfig))


@dataclass(slots=True)
class _TopicInfo:
    """A topic as the coordinators see it (name, id, partition count)."""

    name: str
    topic_id: uuid.UUID
    partitions: int


class CoordinatorTopics:
    """The coordinators' read-only view of topics, always on the current image."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    @staticmethod
    def _info(t: TopicImage | None) -> _TopicInfo | None:
        return None if t is None else _TopicInfo(t.name, t.topic_id, t.num_partitions)

    def get(self, name: str) -> _TopicInfo | None:
        return self._info(self._image().get(name))

    def by_id(self, topic_id: uuid.UUID) -> _TopicInfo | None:
        return self._info(self._image().by_id(topic_id))

    def names(self) -> list[str]:
        return self._image().names()


class Broker:
    """One broker node (combined broker and controller roles on a single node)."""

    def __init__(self, config: BrokerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.node_id: int = config.node_id
        self.clock: Clock = clock or SystemClock()
        self.handlers = load_handlers()
        self.api_versions = api_version_ranges(self.handlers)
        self.started = False
        self.server: BrokerServer | None = None
        self.metadata_log: MetadataLog | None = None
        self.controller: LocalControllerChannel
        self.log_manager: LogManager
        self.replica_manager: ReplicaManager
        self.group_coordinator: GroupCoordinatorRuntime
        self.txn_coordinator: TransactionRuntime
        self.services: BrokerServices
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    # ------------------------------------------------------------------ views
    @property
    def image(self) -> MetadataImage:
        return self.controller.image

    @property
    def connections(self) -> set[Any]:
        return self.server.connections if self.server is not None else set()

    @property
    def listen_addresses(self) -> list[tuple[str, int]]:
        return self.server.listen_addresses if self.server is not None else []

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

    def log_config_for(self, topic: str) -> LogConfig:
        t = self.controller.image.get(topic)
        typed = resolve_topic_config(self.config, t.configs if t else {})
        return LogConfig(**{k: typed[k] for k in _LOG_CONFIG_FIELDS if k in typed})

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

    async def _flush_off_loop(self, fn: Callable[[], None]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _start(self) -> None:
        cfg = self.config
        now_ms = self.clock.now_ms
        # fsync and checkpoint writes run here, never on the event loop (DESIGN.md principle 5);
        # one thread keeps them in order and away from the caller's default executor.
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zurau-flush")
        for d in cfg.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        metadata_dir = cfg.metadata_log_dir
        metadata_dir.mkdir(parents=True, exist_ok=True)
        voters = cfg.controller_quorum_voters
        # A node of a multi-node cluster must be formatted (one cluster id everywhere); a single
        # node formats itself on first start.
        self.metadata_log, image = open_metadata(
            cfg.log_dirs, metadata_dir, self.node_id, cfg.cluster_id, now_ms(), require_formatted=len(voters) > 1
        )
        if len(voters) > 1:
            raise KafkaStorageError(
                f"controller.quorum.voters names {len(voters)} controllers, but this Zurau runs a single-node "
                "metadata quorum only: a node alone must not act as the whole cluster (split brain)"
            )
        controller = QuorumController(cfg, lambda: (self.node_id,))
        self.controller = LocalControllerChannel(controller, self.metadata_log, image, now_ms, self._flush_off_loop)
        self.log_manager = LogManager(cfg.log_dirs, now_ms, config_for=self.log_config_for)
        self.replica_manager = ReplicaManager(self.node_id, self.log_manager, self.log_config_for, now_ms)
        topics = CoordinatorTopics(lambda: self.controller.image)
        producer_ids = ProducerIdManager(lambda: self.controller.allocate_producer_ids_now(self.node_id, -1))
        writer = ReplicaManagerPartitionWriter(self.replica_manager)
        self.group_coordinator = GroupCoordinatorRuntime(cfg, writer, topics, self.create_topic, self.clock)
        self.txn_coordinator = TransactionRuntime(
            cfg, writer, topics, self.create_topic, self.clock, producer_ids.next_id, self.group_coordinator
        )
        if cfg.get("transaction.partition.verification.enable"):
            self.replica_manager.txn_verifier = self.txn_coordinator.verify
        publisher = MetadataPublisher(self.node_id, self.replica_manager, self.group_coordinator, self.txn_coordinator)
        # Everything the image already holds is published once, like a fresh snapshot: every
        # partition placed here is hosted, and the coordinators replay their partitions (groups
        # first; the transaction coordinator then completes the transactions it finds prepared)
        # before the broker listens.
        publisher.publish(MetadataImage(image.cluster_id), image, blocking=True)
        self.controller.add_listener(publisher.publish)
        self.services = BrokerServices(
            node_id=self.node_id,
            config=cfg,
            clock=self.clock,
            replica_manager=self.replica_manager,
            metadata=self.controller,
            controller=self.controller,
            groups=self.group_coordinator,
            txns=self.txn_coordinator,
            api_versions=self.api_versions,
            advertised=lambda: self.advertised,
            running=lambda: self.started,
        )
        self.server = BrokerServer(self.services, self.handlers)
        await self.server.listen(cfg.listeners)
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
        if self.server is not None:
            await self.server.close()
        if hasattr(self, "replica_manager"):
            self.replica_manager.txn_verifier = None
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
        if self.metadata_log is not None:
            self.metadata_log.flush()
            self.metadata_log.close()
            self.metadata_log = None
        log.info("broker %d stopped", self.node_id)

    async def _maintenance(self) -> None:
        """Retention, flush.ms and checkpoints, each on its Kafka interval."""
        cfg = self.config
        retention_every = cfg.get("log.retention.check.interval.ms") / 1000
        checkpoint_every = cfg.get("log.flush.offset.checkpoint.interval.ms") / 1000
        flush_every = min(cfg.get("log.flush.scheduler.interval.ms") / 1000, 1.0)
        last_retention = last_checkpoint = time.monotonic()
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(flush_every)
            now = time.monotonic()
            try:
                await loop.run_in_executor(self._executor, self.log_manager.flush_dirty, self.clock.now_ms())
                if self.metadata_log is not None:
                    await loop.run_in_executor(self._executor, self.metadata_log.flush)
                if now - last_retention >= retention_every:
                    last_retention = now
                    self.log_manager.run_retention(self.clock.now_ms())
                if now - last_checkpoint >= checkpoint_every:
                    last_checkpoint = now
                    await loop.run_in_executor(self._executor, self.log_manager.checkpoint)
            except Exception:
                log.exception("log maintenance failed")

    # ------------------------------------------------------------------ conveniences
    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> TopicImage:
        """Create a topic through the controller at once; raises the Kafka error on refusal."""
        result = self.controller.create_topic_now(name, partitions, replication_factor, configs)
        if result["error_code"]:
            raise for_code(result["error_code"])(result["error_message"] or name)
        t = self.controller.image.get(name)
        assert t is not None
        return t

    def delete_topic(self, name: str) -> None:
        """Delete a topic through the controller (UnknownTopicOrPartitionError if absent)."""
        if self.controller.image.get(name) is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        result = self.controller.delete_topics_now([(name, uuid.UUID(int=0))])
        code = result[0]["error_code"]
        if code:
            err: KafkaError = for_code(code)(result[0]["error_message"] or name)
            raise err


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop where available (DESIGN.md: one uvloop event loop per broker process)."""
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency on every supported platform
        return asyncio.new_event_loop()


async def serve(config: BrokerConfig) -> None:
    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await broker.stop()


def run(config: BrokerConfig) -> None:
    loop = new_event_loop()
    try:
        loop.run_until_complete(serve(config))
    finally:
        loop.close()
