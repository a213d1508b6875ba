"""Composition root: wires one broker node from its configuration, and runs it until a signal.

Layers are built bottom-up (docs/architecture.md): storage (log manager) -> metadata (metadata log, image,
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
import dataclasses
import functools
import logging
import os
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from zurau.broker.auth.authorizer import StandardAuthorizer
from zurau.broker.auth.broker_client_security import controller_client_security, inter_broker_client_security
from zurau.broker.broker_reconfigurables import BrokerReconfigurables
from zurau.broker.client_metrics_manager import ClientMetricsManager
from zurau.broker.client_telemetry_store import ClientTelemetryStore
from zurau.broker.dispatcher import api_version_ranges, load_handlers
from zurau.broker.metadata_publisher import ChunkedPublishing, MetadataPublisher
from zurau.broker.quotas.client_quota_manager import ClientQuotaManager
from zurau.broker.request_context import BrokerServices
from zurau.broker.schema_validation import RegistryLookup, SchemaValidator
from zurau.broker.server import BrokerServer
from zurau.clock import Clock, SystemClock
from zurau.config import BrokerConfig, resolve_topic_config, warn_inert_configs
from zurau.config.group_configs import effective_group_config, effective_group_overrides
from zurau.coordinator.group.group_runtime import GroupCoordinatorRuntime
from zurau.coordinator.group.partition_metadata_client import LeaderEndOffsets
from zurau.coordinator.group.service import RuntimeGroupCoordinatorService
from zurau.coordinator.partition_writer import ReplicaManagerPartitionWriter
from zurau.coordinator.share.dead_letter_producer import DeadLetterProducer
from zurau.coordinator.share.service import RuntimeShareCoordinatorService
from zurau.coordinator.share.share_runtime import ShareRuntime
from zurau.coordinator.share.state_initializer import ShareStateChannel
from zurau.coordinator.txn.marker_channel import TxnMarkerChannel
from zurau.coordinator.txn.service import RuntimeTxnCoordinatorService
from zurau.coordinator.txn.transaction_runtime import TRANSACTION_STATE_TOPIC, TransactionRuntime
from zurau.coordinator.txn.transaction_version import finalized_transaction_version
from zurau.coordinator.txn.txn_verification_channel import TxnVerificationChannel
from zurau.edge_service import new_event_loop  # one uvloop event loop per broker process
from zurau.gc_tuning import tune_for_server
from zurau.loop_watchdog import LoopWatchdog
from zurau.metadata.balancer_load import LoadMonitor
from zurau.metadata.balancer_service import BalancerService
from zurau.metadata.broker_lifecycle_manager import BrokerLifecycleManager
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import MetadataImage, TopicImage
from zurau.metadata.kraft_manager import KRaftManager
from zurau.metadata.local_controller import LocalControllerChannel
from zurau.metadata.metadata_log import MetadataLog, formatted_cluster_id, open_metadata
from zurau.metadata.producer_id_manager import ProducerIdManager
from zurau.metadata.raft_controller_channel import ClusterProducerIdManager, RaftControllerChannel
from zurau.metrics.exporter import MetricsExporter
from zurau.metrics.recorder import BrokerMetrics
from zurau.protocol.errors import (
    InconsistentVoterSetError,
    KafkaError,
    KafkaStorageError,
    NotControllerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    for_code,
)
from zurau.protocol.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from zurau.raft import QuorumInfo, ReplicaInfo
from zurau.raft.wire import describe_quorum_response, error_response
from zurau.replication.alter_partition_manager import AlterPartitionManager, isr_maintenance
from zurau.replication.byte_rate_quota import ByteRateQuota
from zurau.replication.replica_fetcher import EarlierEpochEnd, FetcherConfig, RemoteAuxState, TierBootstrap
from zurau.replication.replica_fetcher_manager import ReplicaFetcherManager
from zurau.replication.replica_manager import ReplicaManager
from zurau.replication.replica_selector import selector_for
from zurau.replication.replication_quota import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    ReplicationQuota,
)
from zurau.replication.share.dead_letters import DEFAULT_TOPIC_PREFIX
from zurau.replication.share.share_partition_manager import ShareConfig, SharePartitionManager
from zurau.replication.tiered.remote_log_aux_state import remote_tier_bootstrap
from zurau.replication.tiered.remote_log_manager import RemoteLogManager
from zurau.replication.tiered.tiered_storage import TieredStorage
from zurau.replication.tiered.topic_based_metadata_manager import TopicBasedRemoteLogMetadataManager
from zurau.storage.cleaner import CleanerStats
from zurau.storage.log_cleaner import LogCleaner
from zurau.storage.log_cleaner_threads import owner_loop_caller, run_cleaner_threads
from zurau.storage.log_config import LogConfig
from zurau.storage.log_maintenance import LogMaintenance
from zurau.storage.log_manager import LogManager, read_clean_shutdown_epoch
from zurau.storage.remote.plugins import load_remote_storage_manager
from zurau.storage.remote.remote_storage_manager import RemoteStorageError
from zurau.types import TopicIdPartition

log = logging.getLogger("zurau.broker")

_LOG_CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(LogConfig))
#: Kafka's ``Topic.isInternal`` topics, never tiered.
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_NO_OVERRIDES: Mapping[str, str] = MappingProxyType({})
#: How long one step of a broker's shutdown may take before it is logged and left behind.
SHUTDOWN_STEP_TIMEOUT_S = 20.0


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

    def __init__(
        self,
        config: BrokerConfig,
        clock: Clock | None = None,
        *,
        default_metrics_listener: str | None = None,
        loop_watchdog: bool = False,
    ) -> None:
        """``default_metrics_listener``: where to serve metrics when ``metrics.http.listener`` is
        not set (``zurau broker start``); unlike a configured one, if it cannot be bound the
        broker runs without metrics (with a warning). ``loop_watchdog``: watch the event loop
        for stalls from a thread (``zurau broker start``; an embedded broker starts no thread
        on its host's loop)."""
        self.config = config
        self._watch_loop = loop_watchdog
        self.node_id: int = config.node_id
        self.clock: Clock = clock or SystemClock()
        self.handlers = load_handlers(config=config.values())
        self.api_versions = api_version_ranges(self.handlers)
        self.started = False
        self.server: BrokerServer | None = None
        self.metadata_log: MetadataLog | None = None
        self.controller: LocalControllerChannel
        self.log_manager: LogManager
        self.replica_manager: ReplicaManager
        self.group_coordinator: GroupCoordinatorRuntime
        self.txn_coordinator: TransactionRuntime
        self.share_coordinator: ShareRuntime
        self.services: BrokerServices
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.kraft: KRaftManager | None = None
        # Set when the node must stop because its metadata log cannot be written.
        self.failed = asyncio.Event()
        self.fatal_error: BaseException | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        # The metadata image has caught up with the quorum (see BrokerServices.metadata_caught_up).
        self._image_caught_up = False
        self._tasks: list[asyncio.Task[Any]] = []
        # Replication (cluster mode): follower fetchers and the leader's ISR proposals.
        self.fetchers: ReplicaFetcherManager | None = None
        self.alter_partitions: AlterPartitionManager | None = None
        self.marker_channel: TxnMarkerChannel | None = None
        self.verification_channel: TxnVerificationChannel | None = None
        self.group_service: RuntimeGroupCoordinatorService | None = None
        self.share_state_channel: ShareStateChannel | None = None
        self.share_partitions: SharePartitionManager | None = None
        self.dead_letter_producer: DeadLetterProducer | None = None
        self.tiered: TieredStorage | None = None  # the remote tier (remote.log.storage.system.enable)
        self._remote_bootstrap: TierBootstrap | None = None  # followers behind the leader's local start
        self.partition_metadata: LeaderEndOffsets | None = None
        self.balancer: BalancerService | None = None  # a cluster controller's self-balancing loop
        self.log_cleaner: LogCleaner | None = None
        # Prometheus metrics (metrics.http.listener; empty: off).
        configured = config.get("metrics.http.listener")
        self._metrics_fallback = configured is None and bool(default_metrics_listener)
        self._metrics_listener: str = (default_metrics_listener or "") if configured is None else configured
        self.metrics: BrokerMetrics | None = BrokerMetrics() if self._metrics_listener else None
        self.metrics_exporter: MetricsExporter | None = None
        # Client telemetry (KIP-714): subscriptions read from the image at each request.
        self.client_metrics = ClientMetricsManager(
            lambda: self.controller.image.client_metrics,
            self.clock.now_ms,
            lambda: int(self.effective_config().get("telemetry.max.bytes")),
            ClientTelemetryStore(int(config.get("zurau.client.telemetry.max.clients"))),
        )
        self.loop_watchdog: LoopWatchdog | None = None
        self.publishing: ChunkedPublishing | None = None  # a cluster node's metadata publisher
        # log_config_for's cache: topic -> (its overrides, the effective broker config, LogConfig).
        self._log_configs: dict[str, tuple[Mapping[str, str], BrokerConfig, LogConfig]] = {}
        # This node's effective config: ``config`` with the dynamic broker configs of the image.
        self.dynamic_config = EffectiveBrokerConfig(config)
        # Broker-side schema ID validation (confluent.schema.registry.url; topics opt in).
        registry_url = config.get("confluent.schema.registry.url")
        self.schema_validator = SchemaValidator(
            RegistryLookup(registry_url) if registry_url else None,
            max_cache_size=config.get("confluent.schema.registry.max.cache.size"),
        )

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
        return self.endpoints()[0][1:3]

    def advertised_for(self, listener: str) -> tuple[str, int] | None:
        """The advertised (host, port) of the client listener ``listener``, if it has one."""
        for name, host, port, _protocol in self.endpoints():
            if name == listener:
                return host, port
        return None

    def endpoints(self) -> list[tuple[str, str, int, str]]:
        """(listener name, host, port, security protocol) of every client-facing listener, as
        advertised: ``advertised.listeners`` (controller listeners excluded) with a bound port and
        a reachable host filled in where they are left empty."""
        assert self.server is not None
        cfg = self.config
        bound = self.server.bound
        controllers = set(cfg.controller_listener_names)
        configured = {name: host for name, host, _port in cfg.listeners}
        out = []
        for name, host, port in cfg.advertised_listeners or cfg.listeners:
            if name in controllers:
                continue
            bound_host, bound_port = bound.get(name, self.listen_addresses[0])
            if not host:
                host = configured.get(name, "")
            if host in ("", "0.0.0.0", "::"):
                host = "127.0.0.1" if bound_host in ("0.0.0.0", "::", "") else bound_host
            out.append((name, host, port or bound_port, cfg.security_protocol(name)))
        if not out:  # a controller-only node: its controller listener
            name, host, port = cfg.listeners[0]
            bound_host, bound_port = self.listen_addresses[0]
            out.append((name, host or bound_host, bound_port, cfg.security_protocol(name)))
        return out

    @property
    def bootstrap_servers(self) -> str:
        host, port = self.advertised
        return f"{host}:{port}"

    def effective_config(self) -> BrokerConfig:
        """This node's broker config as of the current metadata image: the static config with
        the dynamic broker configs (this node's own over the cluster default) stored there."""
        return self.dynamic_config.of(self.controller.image)

    def log_config_for(self, topic: str) -> LogConfig:
        """The effective config of ``topic``'s logs: its overrides in the current metadata image
        over the broker's effective configs (static, with the image's dynamic broker configs).
        Always derived from the image (never remembered from an earlier one); resolved once per
        distinct set of overrides and broker config, since an image shares an unchanged topic's
        config mapping with its parent (and an unchanged broker config is the same object)."""
        image = self.controller.image
        t = image.get(topic)
        overrides: Mapping[str, str] = t.configs if t is not None else _NO_OVERRIDES
        broker = self.dynamic_config.of(image)
        cached = self._log_configs.get(topic)
        if cached is not None and cached[0] is overrides and cached[1] is broker:
            return cached[2]
        typed = resolve_topic_config(broker, overrides)
        # A log is tiered only on a broker running the remote tier (Kafka's isRemoteLogEnabled;
        # internal topics never are): elsewhere its topic's remote.storage.enable is ignored.
        typed["remote_storage_enable"] = (
            typed["remote_storage_enable"]
            and broker.remote_log_storage_system_enable
            and topic not in _INTERNAL_TOPICS
        )
        config = LogConfig(**{k: typed[k] for k in _LOG_CONFIG_FIELDS if k in typed})
        self._log_configs[topic] = (overrides, broker, config)
        return config

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

    async def _flush_off_loop(self, fn: Callable[[], object]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    @property
    def clustered(self) -> bool:
        """True for a node of a multi-node cluster: a quorum of several controllers, or a node
        that is not itself a controller (it follows the quorum named in its config)."""
        cfg = self.config
        return len(cfg.controller_quorum_voters) > 1 or not cfg.is_controller or cfg.dynamic_quorum

    async def _start(self) -> None:
        cfg = self.config
        warn_inert_configs(cfg, log)  # once per start, for each one set (config.py: inert)
        # fsync and checkpoint writes run here, never on the event loop (docs/architecture.md);
        # one thread keeps them in order and away from the caller's default executor.
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="zurau-flush")
        # Half the Raft fetch timeout: a stall that long already endangers the quorum's leader
        # (ZURAU_LOOP_STALL_WARN_MS lowers it to find shorter stalls).
        if self._watch_loop:
            warn_ms = (
                os.environ.get("ZURAU_LOOP_STALL_WARN_MS")
                or cfg.get("controller.quorum.fetch.timeout.ms") / 2
            )
            self.loop_watchdog = LoopWatchdog(f"node {self.node_id}", float(warn_ms) / 1000)
            self.loop_watchdog.start()
        for d in cfg.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        cfg.metadata_log_dir.mkdir(parents=True, exist_ok=True)
        if self.clustered:
            await self._start_cluster()
        else:
            await self._start_single()

    def _build_broker(self, image: Callable[[], MetadataImage], next_producer_id: Callable[[], int]) -> None:
        """Storage, replication and coordinators, reading metadata through ``image()``."""
        cfg = self.config
        now_ms = self.clock.now_ms
        # A cluster broker loads its logs only once its metadata has caught up (``_catch_up``):
        # a log opened against a half-replayed image would take the broker's defaults.
        self.log_manager = LogManager(
            cfg.log_dirs, now_ms, config_for=self.log_config_for, load=not self.clustered
        )
        self.replica_manager = ReplicaManager(self.node_id, self.log_manager, self.log_config_for, self.clock)
        topics = CoordinatorTopics(image)
        writer = ReplicaManagerPartitionWriter(self.replica_manager)

        def group_configs(group_id: str) -> Mapping[str, Any]:  # dynamic group configs, as of now
            return effective_group_overrides(cfg, image().group_config(group_id), group_id)

        self.group_coordinator = GroupCoordinatorRuntime(
            cfg.group_coordinator, writer, topics, self.create_topic, self.clock, group_configs
        )
        self.txn_coordinator = TransactionRuntime(
            cfg.transaction_coordinator,
            writer,
            topics,
            self.create_topic,
            self.clock,
            next_producer_id,
            self.group_coordinator,
        )
        self.share_coordinator = ShareRuntime(
            cfg.share_coordinator, writer, topics, self.create_topic, self.clock
        )
        if cfg.get("transaction.partition.verification.enable"):
            self.replica_manager.txn_verifier = self.txn_coordinator.verify
        self.txn_coordinator.transaction_version = lambda: finalized_transaction_version(image())

        def live_brokers() -> int:  # internal topics get at most one replica per live broker
            return len(image().live_brokers()) or 1

        self.group_coordinator.live_brokers = live_brokers
        self.txn_coordinator.live_brokers = live_brokers
        self.share_coordinator.live_brokers = live_brokers

    def _share_state_channel(self, shares: RuntimeShareCoordinatorService) -> ShareStateChannel:
        """Share-state initialization for the group coordinator: in-process when this broker leads
        the share-partition's ``__share_group_state`` partition, else over the inter-broker listener."""
        cfg = self.config
        listener = cfg.inter_broker_listener_name
        runtime = self.share_coordinator

        def coordinator_of(key: str) -> int:
            t = self.controller.image.get(runtime.topic)
            if t is None:
                return -1
            p = t.partitions.get(runtime.partition_for(key))
            return -1 if p is None else p.leader

        self.share_state_channel = ShareStateChannel(
            self.node_id,
            shares,
            coordinator_of,
            lambda b: self.controller.image.endpoint(b, listener),
            cfg.get("request.timeout.ms"),
            security=lambda: inter_broker_client_security(cfg),
        )
        return self.share_state_channel

    async def _tier_bootstrap(
        self,
        tip: TopicIdPartition,
        leader_local_log_start_offset: int,
        leader_epoch_of_local_start: int,
        leader_log_start_offset: int,
        /,
        *,
        earlier_epoch_end: EarlierEpochEnd,
    ) -> RemoteAuxState:
        """The replica fetchers' bootstrap of a follower behind its leader's local log start
        (OFFSET_MOVED_TO_TIERED_STORAGE): from this broker's remote tier once it runs; before
        that a retriable error (the fetcher backs off and asks again)."""
        if self._remote_bootstrap is None:
            raise RemoteStorageError("the remote tier of this broker is not started yet")
        return await self._remote_bootstrap(
            tip,
            leader_local_log_start_offset,
            leader_epoch_of_local_start,
            leader_log_start_offset,
            earlier_epoch_end=earlier_epoch_end,
        )

    def _start_tiered_storage(self) -> None:
        """The remote tier, when ``remote.log.storage.system.enable``: the storage plugin, the
        topic-based remote log metadata (a client of this broker's own inter-broker listener, as
        the share-group dead letters), the remote log manager, and reads of remote offsets in the
        fetch path. Started once the logs are loaded and the image applied (nothing is copied or
        deleted before)."""
        cfg = self.config
        rl = cfg.remote_log_manager
        if not rl.system_enable:
            return
        listener = rl.metadata_manager_listener_name or cfg.inter_broker_listener_name
        assert rl.storage_manager_class_name is not None  # checked when the config was built
        rsm = load_remote_storage_manager(rl.storage_manager_class_name, rl.storage_manager_props)
        rlmm = TopicBasedRemoteLogMetadataManager(
            self.node_id,
            lambda: self.controller.image.endpoint(self.node_id, listener) or self.advertised,
            security=lambda: inter_broker_client_security(cfg),
            num_partitions=rl.metadata_topic_num_partitions,
            replication_factor=rl.metadata_topic_replication_factor,
            retention_ms=rl.metadata_topic_retention_ms,
            consume_wait_ms=rl.metadata_consume_wait_ms,
            initialization_retry_interval_ms=rl.metadata_init_retry_interval_ms,
            initialization_retry_max_timeout_ms=rl.metadata_init_retry_max_timeout_ms,
        )
        rlm = RemoteLogManager(
            broker_id=self.node_id,
            rsm=rsm,
            rlmm=rlmm,
            config=rl,
            clock=self.clock,
            # KIP-956: the rates are read at each use (dynamic broker configs), the windows at start.
            copy_quota=ByteRateQuota(
                self.clock,
                self.broker_config_source("remote.log.manager.copy.max.bytes.per.second"),
                window_num=rl.copy_quota_window_num,
                window_ms=rl.copy_quota_window_size_seconds * 1000,
            ),
            fetch_quota=ByteRateQuota(
                self.clock,
                self.broker_config_source("remote.log.manager.fetch.max.bytes.per.second"),
                window_num=rl.fetch_quota_window_num,
                window_ms=rl.fetch_quota_window_size_seconds * 1000,
            ),
        )

        def topic_id(topic: str) -> uuid.UUID | None:
            t = self.controller.image.get(topic)
            return None if t is None else t.topic_id

        def image_leader(topic: str, partition: int) -> tuple[int, int] | None:
            t = self.controller.image.get(topic)
            p = None if t is None else t.partitions.get(partition)
            return None if p is None else (p.leader, p.leader_epoch)

        tiered = TieredStorage(
            self.node_id,
            lambda: self.replica_manager.hosted_partitions,
            topic_id,
            rlm,
            rlmm,
            fetch_max_wait_ms=rl.fetch_max_wait_ms,
            image_leader=image_leader,
        )
        self.tiered = tiered
        self.replica_manager.tiered = tiered
        self._remote_bootstrap = remote_tier_bootstrap(rlmm, rsm)
        tiered.start()
        self.controller.add_listener(lambda _old, _new: tiered.sync())
        log.info("broker %d: tiered storage on (%s)", self.node_id, rl.storage_manager_class_name)

    def _dead_letter_producer(self) -> DeadLetterProducer:
        """Share-group dead letters, produced through this broker's own inter-broker listener."""
        cfg = self.config
        listener = cfg.inter_broker_listener_name
        if self.dead_letter_producer is None:
            self.dead_letter_producer = DeadLetterProducer(
                self.node_id,
                lambda: self.controller.image.endpoint(self.node_id, listener) or self.advertised,
                security=lambda: inter_broker_client_security(cfg),
            )
        return self.dead_letter_producer

    def _share_partition_manager(self, channel: ShareStateChannel) -> SharePartitionManager:
        """ShareFetch/ShareAcknowledge on the partitions this broker leads, their state kept by
        the share coordinators through ``channel``."""
        cfg = self.config

        def topic_name(topic_id: uuid.UUID) -> str | None:
            t = self.controller.image.by_id(topic_id)
            return None if t is None else t.name

        manager = SharePartitionManager(
            channel,
            self.clock,
            self.replica_manager.partition,
            topic_name,
            ShareConfig(
                record_lock_duration_ms=int(cfg.get("group.share.record.lock.duration.ms", 30_000)),
                delivery_count_limit=int(cfg.get("group.share.delivery.count.limit", 5)),
                max_record_locks=int(cfg.get("group.share.partition.max.record.locks", 2000)),
                max_share_sessions=int(cfg.get("group.share.max.share.sessions", 2000)),
            ),
            group_config=lambda group_id, name: effective_group_config(
                cfg, self.controller.image.group_config(group_id), name, group_id
            ),
            purgatory=self.replica_manager.purgatory,
            dead_letters=self._dead_letter_producer(),
            dead_letter_prefix=str(cfg.get("errors.deadletterqueue.topic.name.prefix", DEFAULT_TOPIC_PREFIX)),
        )
        self.replica_manager.add_resign_listener(manager.on_resigned)
        return manager

    def _partition_metadata(self) -> LeaderEndOffsets:
        """Latest offsets for share-partition lag: this broker's high watermark where it leads,
        else ListOffsets to the leader over the inter-broker listener."""
        cfg = self.config
        listener = cfg.inter_broker_listener_name

        def leader_of(topic: str, index: int) -> int:
            t = self.controller.image.get(topic)
            p = None if t is None else t.partitions.get(index)
            return -1 if p is None else p.leader

        self.partition_metadata = LeaderEndOffsets(
            self.node_id,
            leader_of,
            self.replica_manager.high_watermark,
            lambda b: self.controller.image.endpoint(b, listener),
            cfg.get("request.timeout.ms"),
            security=lambda: inter_broker_client_security(cfg),
        )
        return self.partition_metadata

    def _services(
        self,
        quorum: Any = None,
        controller_id: Callable[[], int] = lambda: -1,
        metadata_caught_up: Callable[[], bool] = lambda: True,
    ) -> BrokerServices:
        shares = RuntimeShareCoordinatorService(self.share_coordinator)
        channel = self._share_state_channel(shares)
        self.group_service = RuntimeGroupCoordinatorService(
            self.group_coordinator, channel, self._partition_metadata()
        )
        if self.share_partitions is not None:
            self.share_partitions.close()
        self.share_partitions = self._share_partition_manager(channel)
        return BrokerServices(
            node_id=self.node_id,
            metadata_caught_up=metadata_caught_up,
            config=self.config,
            effective_config=self.effective_config,
            clock=self.clock,
            replica_manager=self.replica_manager,
            metadata=self.controller,
            controller=self.controller,
            groups=self.group_service,
            txns=RuntimeTxnCoordinatorService(self.txn_coordinator),
            shares=shares,
            share_partitions=self.share_partitions,
            api_versions=self.api_versions,
            advertised=lambda: self.advertised,
            advertised_for=self.advertised_for,
            running=lambda: self.started,
            controller_id=controller_id,
            quorum=quorum,
            controller_listeners=frozenset(self.config.controller_listener_names),
            metrics=self.metrics,
            client_metrics=self.client_metrics,
            schema_validator=self.schema_validator,
            # A cluster node's image is empty or stale until it catches up: until then only super
            # users pass (Kafka's authorizer before its initial load; see _catch_up).
            authorizer=StandardAuthorizer.from_config(
                self.config, lambda: self.controller.image.acls, loaded=not self.clustered
            ),
            quotas=ClientQuotaManager(
                lambda: self.controller.image.client_quotas,
                int(self.config.get("quota.window.num")),
                int(self.config.get("quota.window.size.seconds")),
                self.clock.now_ms,
            ),
        )

    def _start_metrics(self) -> None:
        """Serve /metrics (metrics.http.listener) from a thread of its own."""
        if self.metrics is None:
            return
        exporter = MetricsExporter(self, self._metrics_listener, self.metrics)
        try:
            self.metrics_exporter = exporter.start()
        except OSError as e:
            if not self._metrics_fallback:
                raise KafkaStorageError(f"cannot serve metrics on {self._metrics_listener}: {e}") from e
            log.warning("metrics are off: cannot listen on %s (%s)", self._metrics_listener, e)
            self.metrics = self.services.metrics = None
            return
        log.info("broker %d serves metrics on %s", self.node_id, exporter.url)

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` when metrics are served, else None."""
        return self.metrics_exporter.url if self.metrics_exporter is not None else None

    async def _start_single(self) -> None:
        """One node that is the whole cluster: its own controller over a local metadata log."""
        cfg = self.config
        now_ms = self.clock.now_ms
        self.metadata_log, image = open_metadata(
            cfg.log_dirs, cfg.metadata_log_dir, self.node_id, cfg.cluster_id, now_ms()
        )
        controller = QuorumController(cfg, lambda: (self.node_id,))
        self.controller = LocalControllerChannel(
            controller, self.metadata_log, image, now_ms, self._flush_off_loop
        )
        producer_ids = ProducerIdManager(lambda: self.controller.allocate_producer_ids_now(self.node_id, -1))
        self._build_broker(lambda: self.controller.image, producer_ids.next_id)
        publisher = MetadataPublisher(
            self.node_id,
            self.replica_manager,
            self.group_coordinator,
            self.txn_coordinator,
            self.share_coordinator,
        )
        # Everything the image already holds is published once, like a fresh snapshot: every
        # partition placed here is hosted, and the coordinators replay their partitions (groups
        # first; the transaction coordinator then completes the transactions it finds prepared)
        # before the broker listens.
        publisher.publish(MetadataImage(image.cluster_id), image, blocking=True)
        self.controller.add_listener(publisher.publish)
        quorum = SingleNodeQuorum(self)
        self.services = self._services(quorum, lambda: self.node_id)
        self.server = BrokerServer(self.services, self.handlers)
        await self.server.listen(cfg.listeners)
        self._start_metrics()
        self._tasks.append(asyncio.create_task(self._maintenance()))
        self._tasks.append(asyncio.create_task(self._sweep_delegation_tokens()))
        self._start_log_cleaner()
        self._start_tiered_storage()

    async def _sweep_delegation_tokens(self) -> None:
        """A single node's controller: remove expired delegation tokens every
        ``delegation.token.expiry.check.interval.ms`` (a cluster's active controller does this in
        :meth:`RaftControllerChannel.fence_expired_brokers`)."""
        while True:
            await asyncio.sleep(int(self.config.get("delegation.token.expiry.check.interval.ms")) / 1000)
            if not self.controller.image.delegation_tokens:
                continue
            try:
                await self.controller.sweep_expired_delegation_tokens()
            except Exception:
                log.exception("removing expired delegation tokens failed")

    async def _start_cluster(self) -> None:
        """A node of a KRaft cluster: follow (and, as a voter, keep) the metadata quorum; as a
        broker, register, catch up, get unfenced, then open the client listeners."""
        cfg = self.config
        metadata_dir = cfg.metadata_log_dir
        cluster_id = formatted_cluster_id(cfg.log_dirs, metadata_dir, self.node_id, cfg.cluster_id)
        voters = cfg.controller_quorum_voters
        if cfg.is_controller and not cfg.dynamic_quorum and self.node_id not in {v.node_id for v in voters}:
            raise KafkaStorageError(
                f"node.id {self.node_id} has the controller role but is not in controller.quorum.voters "
                f"({', '.join(f'{v.node_id}@{v.host}:{v.port}' for v in voters)})"
            )
        if not cfg.is_controller and self.node_id in {v.node_id for v in voters}:
            raise KafkaStorageError(
                f"node.id {self.node_id} is in controller.quorum.voters but process.roles lacks 'controller'"
            )
        if cfg.is_controller and not cfg.controller_listener_names:
            raise KafkaStorageError(
                "a controller needs controller.listener.names naming one of its listeners"
            )
        controller = QuorumController(cfg, lambda: (self.node_id,))
        self.kraft = KRaftManager(
            cfg, cluster_id, metadata_dir, self.clock, controller, security=controller_client_security(cfg)
        )
        self.kraft.raft.on_fatal = self._on_fatal
        self.controller = self.kraft.channel  # type: ignore[assignment]
        channel = self.kraft.channel
        producer_ids = ClusterProducerIdManager(channel, self.node_id, lambda: self._broker_epoch())
        self._build_broker(lambda: channel.image, producer_ids.next_id)
        self._wire_replication(lambda: channel.image, channel.alter_partition)
        self.services = self._services(self.kraft, self._controller_id, lambda: self._image_caught_up)
        self.server = BrokerServer(self.services, self.handlers)
        controller_names = set(cfg.controller_listener_names)
        await self.server.listen(cfg.listeners, serving=controller_names)
        self._start_metrics()
        self.kraft.start()
        if cfg.is_controller:
            self.balancer = self._balancer(cfg, channel)
            self.balancer.start()
        if not cfg.is_broker:  # a controller hosts no partitions: nothing to catch up for
            await self._catch_up()
            self._tasks.append(asyncio.create_task(self._controller_caught_up()))
            await self.server.start_serving()
            return
        self.lifecycle = BrokerLifecycleManager(
            node_id=self.node_id,
            cluster_id=cluster_id,
            endpoints=self.endpoints,
            rack=cfg.get("broker.rack"),
            heartbeat_interval_ms=cfg.get("broker.heartbeat.interval.ms"),
            metadata_offset=lambda: channel.image.offset,
            register=channel.register_broker,
            heartbeat=channel.broker_heartbeat,
            # Read before the logs load (loading removes the markers).
            previous_broker_epoch=read_clean_shutdown_epoch(cfg.log_dirs),
        )
        self.lifecycle.start()
        log.info("broker %d: waiting to be registered and to catch up with the metadata log", self.node_id)
        registration_timeout_ms = cfg.get("initial.broker.registration.timeout.ms")
        await self.lifecycle.wait_caught_up(registration_timeout_ms)
        await self._catch_up()
        self.lifecycle.ready()
        await self.lifecycle.wait_unfenced(registration_timeout_ms)
        # The first block of producer ids now, not on the first InitProducerId (which would
        # answer COORDINATOR_LOAD_IN_PROGRESS and cost the client its retry back-off, ~0.5 s).
        producer_ids.prefetch()
        await self.server.start_serving()

    async def _catch_up(self) -> None:
        """What a cluster node does once its metadata image holds every topic as committed up to
        its registration (Kafka's broker: the first publish after the initial catch-up): load
        the logs, each with its topic's effective config from that image; apply the whole image
        (leaders, followers, coordinator partitions) and from then on every committed change;
        only then start what acts on the logs by themselves (retention, the log cleaner, ISR
        expiry). Before this nothing is opened, served, cleaned or deleted."""
        channel = self.kraft.channel if self.kraft is not None else None
        assert channel is not None
        started = time.monotonic()
        # Off the event loop: recovering thousands of partitions must not starve Raft. Nothing
        # else touches the log manager before the publisher below is installed.
        await asyncio.get_running_loop().run_in_executor(None, self.log_manager.load)
        publisher = MetadataPublisher(
            self.node_id,
            self.replica_manager,
            self.group_coordinator,
            self.txn_coordinator,
            self.share_coordinator,
        )
        # Applied in chunks, here and for every later change: Raft and the controller keep
        # running between chunks however many partitions a change touches.
        self.publishing = ChunkedPublishing(publisher)
        published = MetadataImage(channel.image.cluster_id)
        while channel.image is not published:  # changes committed meanwhile are applied too
            target = channel.image
            await self.publishing.apply(published, target, blocking=True)
            published = target
        # Installed with nothing between it and the last apply: every later change is heard.
        channel.add_listener(self.publishing.publish)
        if self.server is not None:  # clients that forgot a broker while it was down see it again
            channel.add_listener(self.server.on_image)
        if self.lifecycle is not None:  # the controller said we caught up, and the image is applied
            self._image_caught_up = True
            if self.services.authorizer is not None:
                self.services.authorizer.complete_initial_load()
        log.info(
            "node %d: %d partition logs loaded and metadata offset %d applied in %.2f s",
            self.node_id,
            len(self.log_manager.all_logs()),
            channel.image.offset,
            time.monotonic() - started,
        )
        cfg = self.config
        self._tasks.append(asyncio.create_task(self._maintenance()))
        self._start_log_cleaner()
        self._start_tiered_storage()
        self._tasks.append(
            asyncio.create_task(isr_maintenance(self.replica_manager, cfg.get("replica.lag.time.max.ms")))
        )

    async def _controller_caught_up(self) -> None:
        """A dedicated controller's image has caught up once it holds the log up to the quorum's
        high watermark as it was when this node first learned one: from then on its controller
        listener answers from it (``metadata_caught_up``) and its authorizer decides from its ACLs."""
        authorizer = self.services.authorizer
        kraft = self.kraft
        if kraft is None:
            return
        raft, channel = kraft.raft, kraft.channel
        target = 0
        while True:
            if target <= 0 and raft.leader_id is not None:
                target = raft.high_watermark
            if target > 0 and channel.image.offset >= target - 1:
                self._image_caught_up = True
                if authorizer is not None:
                    authorizer.complete_initial_load()
                log.info("node %d: metadata caught up at offset %d", self.node_id, channel.image.offset)
                return
            await asyncio.sleep(0.05)

    def _wire_replication(
        self,
        image: Callable[[], MetadataImage],
        alter_partition: Callable[[AlterPartitionRequest], Awaitable[AlterPartitionResponse]],
    ) -> None:
        """Cluster mode: followers fetch from their leaders' inter-broker listeners; leaders send
        ISR changes (AlterPartition) to the active controller; only live brokers join an ISR."""
        cfg = self.config
        rm = self.replica_manager
        listener = cfg.inter_broker_listener_name
        security = inter_broker_client_security(cfg)

        def topic_id(name: str) -> uuid.UUID | None:
            t = image().get(name)
            return None if t is None else t.topic_id

        def live(broker_id: int) -> bool:
            reg = image().brokers.get(broker_id)
            return reg is not None and reg.live

        def topic_configs(name: str) -> Mapping[str, str] | None:
            t = image().get(name)
            return None if t is None else t.configs

        def quota(config_name: str, rate_name: str) -> ReplicationQuota:
            return ReplicationQuota(
                self.clock,
                broker_id=self.node_id,
                config_name=config_name,
                configs=topic_configs,
                rate=self.broker_config_source(rate_name),
                window_num=cfg.get("replication.quota.window.num"),
                window_ms=cfg.get("replication.quota.window.size.seconds") * 1000,
            )

        # Replication throttles (reassignments): the rates are read at every use.
        rm.leader_quota = quota(LEADER_REPLICAS, LEADER_RATE)
        rm.follower_quota = quota(FOLLOWER_REPLICAS, FOLLOWER_RATE)
        self.fetchers = ReplicaFetcherManager(
            node_id=self.node_id,
            logs=rm,
            endpoint=lambda b: image().endpoint(b, listener),
            topic_id=topic_id,
            broker_epoch=self._broker_epoch,
            config=FetcherConfig(
                max_bytes=cfg.get("replica.fetch.max.bytes"),
                response_max_bytes=cfg.get("replica.fetch.response.max.bytes"),
                wait_max_ms=cfg.get("replica.fetch.wait.max.ms"),
                min_bytes=cfg.get("replica.fetch.min.bytes"),
                backoff_ms=cfg.get("replica.fetch.backoff.ms"),
                socket_timeout_ms=cfg.get("replica.socket.timeout.ms"),
            ),
            num_fetchers=cfg.get("num.replica.fetchers"),
            tier_bootstrap=self._tier_bootstrap if cfg.remote_log_manager.system_enable else None,
            security=security,
            quota=rm.follower_quota,
        )
        self.alter_partitions = AlterPartitionManager(
            node_id=self.node_id,
            replica_manager=rm,
            broker_epoch=self._broker_epoch,
            topic_id=topic_id,
            send=alter_partition,
        )
        rm.fetchers = self.fetchers
        rm.broker_live = live
        rm.isr_change_sender = self.alter_partitions.submit

        def rack(broker_id: int) -> str | None:
            reg = image().brokers.get(broker_id)
            return None if reg is None else reg.rack

        # Fetch from follower (KIP-392): consumers may be sent to a replica in their rack.
        rm.replica_selector = selector_for(cfg.get("replica.selector.class"))
        rm.broker_rack = rack

        def leader_of(topic: str, index: int) -> int:
            t = image().get(topic)
            p = t.partitions.get(index) if t is not None else None
            return -1 if p is None else p.leader

        # Transaction markers for partitions led elsewhere go to their leaders (WriteTxnMarkers).
        self.marker_channel = TxnMarkerChannel(
            self.node_id,
            leader_of,
            lambda b: image().endpoint(b, listener),
            cfg.get("request.timeout.ms"),
            security=security,
        )
        self.txn_coordinator.marker_channel = self.marker_channel
        self.txn_coordinator.verify_unknown_producers = True
        if cfg.get("transaction.partition.verification.enable"):
            txns = self.txn_coordinator

            def coordinator_of(transactional_id: str) -> int:
                return leader_of(TRANSACTION_STATE_TOPIC, txns.partition_for(transactional_id))

            self.verification_channel = TxnVerificationChannel(
                self.node_id,
                coordinator_of,
                lambda b: image().endpoint(b, listener),
                cfg.get("request.timeout.ms"),
                security=security,
            )
            txns.verification_channel = self.verification_channel

    def _on_fatal(self, error: BaseException) -> None:
        """The metadata log cannot be written: this node must stop (``failed`` is set)."""
        self.fatal_error = error
        self.failed.set()

    def _balancer(self, cfg: BrokerConfig, channel: RaftControllerChannel) -> BalancerService:
        """The self-balancing loop of this controller (it acts while it is the active one), reading
        the balancer configs as they are now (dynamic over static) at every tick."""
        listener = cfg.inter_broker_listener_name
        monitor = LoadMonitor(
            self.node_id,
            self.clock,
            endpoint=lambda b: channel.image.endpoint(b, listener),
            security=lambda: inter_broker_client_security(cfg),
        )
        return BalancerService(channel, monitor, self.clock, lambda name: self.dynamic_config.value(channel.image, name))

    def broker_config_source(self, name: str) -> Callable[[], Any]:
        """An accessor of broker config ``name`` that reads its value at each call (for configs
        that may change while the broker runs, such as the replication throttle rates): what
        this broker's config says now: its dynamic value in the current metadata image (this
        broker's own override over the cluster default) over the static config."""
        return lambda: self.effective_config().get(name)

    def _broker_epoch(self) -> int:
        return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

    def _controller_id(self) -> int:
        """What Metadata and DescribeCluster name as the controller: the active controller when it
        is a broker too (combined mode), else a live broker (as Kafka does with dedicated
        controllers, whose ids clients cannot reach)."""
        active = self.kraft.channel.controller_id() if self.kraft is not None else -1
        image = self.controller.image
        brokers = image.brokers
        if active >= 0 and active in brokers:
            return active
        live = image.live_brokers()
        return live[0].id if live else active

    async def controlled_shutdown(self) -> bool:
        """In a cluster: ask the active controller to fence this broker (and, with replication,
        move its leaderships away) before it stops; bounded, since a cluster that has lost its
        quorum cannot answer. True when the controller agreed (always on a single node, and
        at once with ``controlled.shutdown.enable=false``: the broker then just stops, and the
        controller fences it when its session expires)."""
        if self.lifecycle is None or not self.config.get("controlled.shutdown.enable"):
            return True
        timeout = self.config.get("broker.heartbeat.interval.ms") / 1000 + 3
        return await self.lifecycle.controlled_shutdown(timeout)

    async def stop(self) -> None:
        if not self.started:
            return
        await self.controlled_shutdown()
        self.started = False
        await self._shutdown()

    async def _shutdown(self) -> None:
        """Stop everything that exists; safe on a half-started broker."""
        if self.loop_watchdog is not None:
            self.loop_watchdog.stop()
        if self.metrics_exporter is not None:
            exporter, self.metrics_exporter = self.metrics_exporter, None
            await asyncio.get_running_loop().run_in_executor(None, exporter.close)
        if self.publishing is not None:
            await self._stop_step("the metadata publisher", self.publishing.close())
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            await self._stop_step(f"task {t.get_name()}", t)
        self._tasks.clear()
        if self.balancer is not None:
            await self._stop_step("the balancer", self.balancer.close())
            self.balancer = None
        if self.fetchers is not None:  # they write to the logs: stopped before the logs close
            await self._stop_step("the replica fetchers", self.fetchers.close())
            self.fetchers = None
        if self.alter_partitions is not None:
            await self._stop_step("the AlterPartition sender", self.alter_partitions.close())
            self.alter_partitions = None
        if self.marker_channel is not None:
            await self._stop_step("the transaction marker channel", self.marker_channel.close())
            self.marker_channel = None
        if self.verification_channel is not None:
            self.txn_coordinator.verification_channel = None
            await self._stop_step("the transaction verification channel", self.verification_channel.close())
            self.verification_channel = None
        if self.group_service is not None:
            await self._stop_step("the share-state initializations", self.group_service.close())
        if self.share_partitions is not None:
            self.share_partitions.close()
        if self.tiered is not None:
            self.replica_manager.tiered = None
            await self._stop_step("tiered storage", self.tiered.close())
            self.tiered = None
        if self.dead_letter_producer is not None:
            await self._stop_step("the dead-letter producer", self.dead_letter_producer.close())
            self.dead_letter_producer = None
        if self.share_state_channel is not None:
            await self._stop_step("the share-state channel", self.share_state_channel.close())
            self.share_state_channel = None
        if self.partition_metadata is not None:
            await self._stop_step("the partition-metadata client", self.partition_metadata.close())
            self.partition_metadata = None
        if self.lifecycle is not None:
            if hasattr(self, "log_manager"):  # the clean-shutdown marker names this epoch
                self.log_manager.broker_epoch = self.lifecycle.broker_epoch
            await self._stop_step("the broker lifecycle", self.lifecycle.close())
            self.lifecycle = None
        if self.server is not None:
            await self._stop_step("the listeners", self.server.close())
        if hasattr(self, "replica_manager"):
            self.replica_manager.txn_verifier = None
        if hasattr(self, "txn_coordinator"):
            self.txn_coordinator.stop()
        if hasattr(self, "share_coordinator"):
            self.share_coordinator.stop()
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
        if self.kraft is not None:
            await self._stop_step("the metadata quorum client", self.kraft.close())
            self.kraft = None
        log.info("broker %d stopped", self.node_id)

    async def _stop_step(
        self, what: str, step: Awaitable[Any], timeout_s: float = SHUTDOWN_STEP_TIMEOUT_S
    ) -> None:
        """Await one shutdown step for at most ``timeout_s``: a step that does not finish (a
        task that ignores its cancellation, a peer that never answers) is logged as an error and
        left behind, so that the rest of the shutdown (closing the logs, writing checkpoints)
        still happens and a stop never hangs."""
        task = asyncio.ensure_future(step)
        done, _pending = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            log.error(
                "broker %d: %s did not stop within %.0f s; the shutdown goes on without it",
                self.node_id,
                what,
                timeout_s,
            )
            return
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("broker %d: stopping %s failed: %r", self.node_id, what, exc)

    def _start_log_cleaner(self) -> None:
        """Compaction (``log.cleaner.*``, dynamic over static): logs are chosen and swapped on this
        loop and cleaned on worker threads (storage/log_cleaner.py, storage/log_cleaner_threads.py).
        The cleaner and the fetchers follow the dynamic configs (broker/broker_reconfigurables.py)."""
        reconfigurables = BrokerReconfigurables(self.dynamic_config, lambda: self.log_cleaner, lambda: self.fetchers)
        reconfigurables.install(self.controller)
        config = reconfigurables.cleaner_config(self.controller.image)
        if config.threads == 0:
            return
        run_on_owner = owner_loop_caller(asyncio.get_running_loop())
        self.log_cleaner = LogCleaner(config, self.log_manager, self.clock.now_ms, run_on_owner=run_on_owner)
        metrics = self.metrics
        on_pass = None if metrics is None else functools.partial(_record_cleaner_pass, metrics)
        self._tasks.append(asyncio.create_task(run_cleaner_threads(self.log_cleaner, on_pass)))

    async def _maintenance(self) -> None:
        """Flushes, retention, checkpoints and producer-id expiration, each on its Kafka interval
        (storage/log_maintenance.py), with the flush thread of this broker."""
        metrics = self.metrics
        await LogMaintenance(
            self.log_manager,
            self.config.get,
            self.clock.now_ms,
            self._flush_off_loop,
            also_flush=[self.metadata_log] if self.metadata_log is not None else [],
            on_flush_synced=None if metrics is None else metrics.log_flush.observe,
        ).run()

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


class SingleNodeQuorum:
    """The quorum APIs on a single node, which is its metadata quorum all alone: DescribeQuorum
    names it as leader and only voter; it takes no other voter or broker."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    @property
    def kraft_version(self) -> int:
        return 0  # no voters to change: a static quorum of one

    async def handle_raft_request(
        self, api_key: int, version: int, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        return error_response(api_key, version, InconsistentVoterSetError.code)

    async def describe_quorum(self, version: int, body: DescribeQuorumRequest) -> DescribeQuorumResponse:
        b = self._broker
        now = b.clock.now_ms()
        end = b.metadata_log.end_offset if b.metadata_log is not None else 0
        me = ReplicaInfo(b.node_id, end, now, now)
        info = QuorumInfo(b.node_id, 0, end, [me], [])
        name, host, port, _proto = b.endpoints()[0]
        return describe_quorum_response(version, info, leader_endpoints={b.node_id: [(name, host, port)]})

    async def add_raft_voter(self, version: int, body: AddRaftVoterRequest) -> AddRaftVoterResponse:
        return {
            "throttle_time_ms": 0,
            "error_code": UnsupportedVersionError.code,
            "error_message": _STATIC_QUORUM,
        }

    async def remove_raft_voter(self, version: int, body: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
        return {
            "throttle_time_ms": 0,
            "error_code": UnsupportedVersionError.code,
            "error_message": _STATIC_QUORUM,
        }

    async def update_raft_voter(self, version: int, body: UpdateRaftVoterRequest) -> UpdateRaftVoterResponse:
        return {
            "throttle_time_ms": 0,
            "error_code": UnsupportedVersionError.code,
            "current_leader": {"leader_id": self._broker.node_id, "leader_epoch": 0, "host": "", "port": -1},
        }

    async def register_broker(
        self, body: BrokerRegistrationRequest, forward: bool
    ) -> BrokerRegistrationResponse:
        return {"throttle_time_ms": 0, "error_code": NotControllerError.code, "broker_epoch": -1}

    async def broker_heartbeat(self, body: BrokerHeartbeatRequest, forward: bool) -> BrokerHeartbeatResponse:
        return {
            "throttle_time_ms": 0,
            "error_code": NotControllerError.code,
            "is_caught_up": False,
            "is_fenced": True,
            "should_shut_down": False,
        }

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, forward: bool
    ) -> tuple[int, int]:
        raise NotControllerError("a single-node quorum hands out producer ids to itself only")


_STATIC_QUORUM = (
    "a single node's quorum is static; voters change only in a dynamic quorum "
    "(controller.quorum.bootstrap.servers, formatted with --standalone or --initial-controllers)"
)


def _record_cleaner_pass(metrics: BrokerMetrics, stats: CleanerStats) -> None:
    metrics.cleaner_pass(
        stats.bytes_read,
        stats.bytes_written,
        stats.records_removed,
        stats.map_utilization,
        stats.elapsed_s,
        time.monotonic(),
    )


async def serve(config: BrokerConfig, default_metrics_listener: str | None = None) -> None:
    broker = Broker(config, default_metrics_listener=default_metrics_listener, loop_watchdog=True)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        stopped = asyncio.create_task(stop.wait())
        failed = asyncio.create_task(broker.failed.wait())
        await asyncio.wait({stopped, failed}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        failed.cancel()
    finally:
        log.info("shutting down")
        await broker.stop()
    if broker.fatal_error is not None:
        raise KafkaStorageError(f"the metadata log cannot be written: {broker.fatal_error}")


def run(config: BrokerConfig, default_metrics_listener: str | None = None) -> None:
    """Serve until SIGINT/SIGTERM: the broker process's main (``zurau broker start``)."""
    tune_for_server()  # this process is the broker's alone: its collector is set for serving
    loop = new_event_loop()
    try:
        loop.run_until_complete(serve(config, default_metrics_listener))
    finally:
        loop.close()
