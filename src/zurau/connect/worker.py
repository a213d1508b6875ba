"""A Connect worker: connector configs in, running connectors and tasks out.

Standalone mode (no ``group.id``): this worker runs every connector and task; configs and
statuses live in memory, source offsets in the offsets file.

Distributed mode: workers join the ``connect`` group (:mod:`~zurau.connect.connect_group`); the
leader assigns connectors and tasks round-robin; configs, offsets and statuses live in the three
compacted topics (:mod:`~zurau.connect.stores`). Every worker reads the config topic, so any worker
answers REST requests and writes changes straight to the config topic (Kafka forwards them to the
leader; the single-partition topic orders them either way). A change that alters what there is to
assign (a connector added or removed, a new set of task configs) makes the workers rejoin; with the
eager protocol each worker stops everything it runs before rejoining and starts what it is given,
so a task of a dead worker restarts elsewhere, from the offsets committed last, once the group
coordinator has expired the dead worker's session (``session.timeout.ms``).

Invariants: only the worker running a connector writes its task configs (with ``task.class``
added, as Kafka does); only the worker running a connector or task writes its status; a FAILED
task stays FAILED (with its trace) until it is restarted through the REST API or reconfigured.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import traceback
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig, parse_bootstrap
from zurau.client.groups_admin import GroupAdmin
from zurau.client.producer import Producer
from zurau.client.security import ClientSecurity
from zurau.client.topic_admin import ensure_topic
from zurau.client.transactions_admin import TransactionsAdmin
from zurau.client.types import TopicPartition
from zurau.config import ConfigException, ConfigKey, ConfigType, ConfigValue
from zurau.connect.api import (
    ConnectException,
    Connector,
    ConnectorContext,
    SinkConnector,
    SinkTask,
    SourceTask,
    Task,
)
from zurau.connect.client_configs import ADMIN, CONSUMER, PRODUCER, override_errors, task_client_security
from zurau.connect.config_infos import config_key_info, config_value_info
from zurau.connect.config_providers import ConfigProviders
from zurau.connect.connect_group import CONFIG_MISMATCH, ConnectGroupMember
from zurau.connect.connector_config import (
    build_converter,
    build_transforms,
    connector_type,
    validate_connector_config,
    validation_errors,
)
from zurau.connect.errors import (
    DLQ_NUM_PARTITIONS,
    DeadLetterQueueReporter,
    ErrorHandlingConfig,
    ErrorHandlingMetrics,
    LogReporter,
    RetryWithToleranceOperator,
)
from zurau.connect.exactly_once import (
    ConnectorOffsetStore,
    ExactlyOnceSettings,
    ExactlyOnceSourceTaskRunner,
    transactional_id,
)
from zurau.connect.plugins import KIND_CONNECTOR, PluginNotFound, PluginRegistry, _load
from zurau.connect.stores import (
    PAUSED,
    STOPPED,
    ConfigStore,
    FileOffsetStore,
    KafkaConfigStore,
    KafkaOffsetStore,
    KafkaStatusStore,
    OffsetStore,
    RestartRequest,
    Status,
    StatusStore,
    connector_record,
    offset_key,
    restart_record,
    target_state_record,
    task_records,
)
from zurau.connect.task_runners import SinkTaskRunner, SourceTaskRunner, TaskEnv, TaskRunner
from zurau.connect.threads import CallThread
from zurau.connect.topic_creation import TopicCreator, topic_creation_groups
from zurau.connect.worker_config import WorkerConfig

log = logging.getLogger("zurau.connect.worker")

TaskId = tuple[str, int]


class ConnectError(Exception):
    """A request the REST API answers with ``status`` and Connect's error body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def not_found(name: str) -> ConnectError:
    return ConnectError(404, f"Connector {name} not found")


class _ConnectorContext(ConnectorContext):
    def __init__(self, worker: Worker, name: str, loop: asyncio.AbstractEventLoop) -> None:
        self.worker, self.name, self.loop = worker, name, loop

    def request_task_reconfiguration(self) -> None:
        self.loop.call_soon_threadsafe(self.worker._request_reconfiguration, self.name)

    def raise_error(self, error: BaseException) -> None:
        trace = "".join(traceback.format_exception(error))
        self.loop.call_soon_threadsafe(self.worker._connector_failed_soon, self.name, trace)


class ConnectorRunner:
    """One connector instance on this worker (its methods run on a thread of its own)."""

    def __init__(self, name: str, config: dict[str, str], cls: type[Connector] | None) -> None:
        self.name = name
        self.config = config
        self.cls = cls
        self.instance: Connector | None = None
        self.state = "UNASSIGNED"
        self.thread = CallThread(f"connector-{name}")
        self.needs_task_configs = True
        self.resolved: dict[str, str] = dict(config)

    async def call(self, fn: Any, *args: Any) -> Any:
        return await self.thread.call(fn, *args)

    async def stop(self) -> None:
        if self.instance is not None and self.state not in ("FAILED", "STOPPED"):
            try:
                await asyncio.wait_for(self.call(self.instance.stop), 10)
            except Exception:
                log.exception("connector %s failed to stop", self.name)
        self.instance = None
        self.thread.shutdown()


class Worker:
    def __init__(self, config: WorkerConfig, plugins: PluginRegistry | None = None) -> None:
        self.config = config
        self.plugins = plugins or PluginRegistry()
        self.providers = ConfigProviders(config.props)
        self.worker_id = f"{config.advertised_host or config.host}:{config.advertised_port or config.port}"
        self.url = f"http://{self.worker_id}"
        self.cluster: Cluster | None = None
        self.cluster_id: str | None = None
        self.config_store: ConfigStore = ConfigStore()
        self.offset_store: OffsetStore = OffsetStore()
        self.status_store: StatusStore = StatusStore()
        self.producer: Producer | None = None
        self.group: ConnectGroupMember | None = None
        self.generation = 0
        self.connectors: dict[str, ConnectorRunner] = {}
        self.tasks: dict[TaskId, TaskRunner] = {}
        self.failed_tasks: set[TaskId] = set()
        self.assigned_connectors: set[str] = set()
        self.assigned_tasks: set[TaskId] = set()
        self._restarts: deque[RestartRequest] = deque()
        self._reconfigure: set[str] = set()
        self._wake: asyncio.Event | None = None
        self._structure_version = 0
        self._joined_version = -1
        self._main: asyncio.Task[None] | None = None
        self._stopping = False
        self._lock: asyncio.Lock | None = None
        # the tasks' clients whose security differs from the worker's own, shared by security
        self._task_producers: dict[ClientSecurity, tuple[Cluster, Producer]] = {}
        self._admin_clusters: dict[ClientSecurity, Cluster] = {}
        self._connector_offset_stores: dict[str, KafkaOffsetStore] = {}  # offsets.storage.topic stores

    def set_rest_address(self, host: str, port: int) -> None:
        """Called by the server once its port is bound (port 0 picks one)."""
        h = self.config.advertised_host or ("127.0.0.1" if host in ("0.0.0.0", "") else host)
        self.worker_id = f"{h}:{self.config.advertised_port or port}"
        self.url = f"http://{self.worker_id}"

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        cfg = self.config
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self.cluster = Cluster(self._client_config(cfg.security))
        await self.cluster.bootstrap()
        self.cluster_id = self.cluster.metadata.cluster_id
        if cfg.distributed:
            self.config_store = KafkaConfigStore(self.cluster, cfg.config_topic, cfg.config_replication_factor)
            self.offset_store = KafkaOffsetStore(self.cluster, cfg.offset_topic, cfg.offset_partitions,
                                                 cfg.offset_replication_factor,
                                                 read_committed=cfg.exactly_once_source)
            self.status_store = KafkaStatusStore(self.cluster, cfg.status_topic, cfg.status_partitions,
                                                 cfg.status_replication_factor)
        else:
            self.offset_store = FileOffsetStore(Path(cfg.offset_file))
        self.config_store.listeners.append(self._on_config_record)
        for store in (self.status_store, self.offset_store, self.config_store):
            await store.start()
        self.producer = Producer(self.cluster, acks="all", linger_ms=5)
        await self.producer.start()
        if cfg.distributed:
            assert cfg.group_id is not None
            self.group = ConnectGroupMember(
                self.cluster, cfg.group_id, self.url, self._assignable,
                session_timeout_ms=cfg.session_timeout_ms, rebalance_timeout_ms=cfg.rebalance_timeout_ms,
                heartbeat_interval_ms=cfg.heartbeat_interval_ms)
            await self.group.check_apis()
        self._main = asyncio.create_task(self._run(), name="zurau-connect-worker")
        log.info("Connect worker %s started (%s mode)", self.worker_id,
                 "distributed" if cfg.distributed else "standalone")

    async def stop(self, kill: bool = False) -> None:
        """Stop every connector and task (committing their offsets unless ``kill``), leave the
        group (unless ``kill``: the coordinator then notices only when the session expires)."""
        self._stopping = True
        if self._main is not None:
            self._main.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._main
            self._main = None
        await self._stop_all(kill=kill)
        if self.group is not None:
            if kill:
                await self.group.stop_heartbeat()
            else:
                await self.group.leave()
        if self.producer is not None:
            with contextlib.suppress(Exception):
                await self.producer.close()
        await self._close_task_clients()
        for store in (self.config_store, self.offset_store, self.status_store):
            with contextlib.suppress(Exception):
                await store.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                await self.cluster.close()

    # ------------------------------------------------------------------ the tasks' clients
    def _client_config(self, security: ClientSecurity) -> ClientConfig:
        return ClientConfig(bootstrap_servers=parse_bootstrap(self.config.bootstrap_servers),
                            client_id=f"zurau-connect-{self.worker_id}", security=security,
                            security_protocol=security.protocol)

    async def _task_producer(self, security: ClientSecurity) -> Producer:
        """The producer of source tasks whose clients have ``security`` (the worker's own when
        it has the same; else one per distinct security, made on first use)."""
        assert self.producer is not None
        if security == self.config.security:
            return self.producer
        entry = self._task_producers.get(security)
        if entry is None:
            cluster = Cluster(self._client_config(security))
            try:
                await cluster.bootstrap()
                producer = Producer(cluster, acks="all", linger_ms=5)
                await producer.start()
            except BaseException:
                with contextlib.suppress(Exception):
                    await cluster.close()
                raise
            entry = self._task_producers[security] = (cluster, producer)
        return entry[1]

    async def _admin_cluster(self, security: ClientSecurity) -> Cluster:
        """The cluster connection of topic creation for ``security`` (shared like producers)."""
        assert self.cluster is not None
        if security == self.config.security:
            return self.cluster
        cluster = self._admin_clusters.get(security)
        if cluster is None:
            cluster = Cluster(self._client_config(security))
            try:
                await cluster.bootstrap()
            except BaseException:
                with contextlib.suppress(Exception):
                    await cluster.close()
                raise
            self._admin_clusters[security] = cluster
        return cluster

    async def _close_task_clients(self) -> None:
        for cluster, producer in self._task_producers.values():
            with contextlib.suppress(Exception):
                await producer.close()
            with contextlib.suppress(Exception):
                await cluster.close()
        for cluster in self._admin_clusters.values():
            with contextlib.suppress(Exception):
                await cluster.close()
        for store in self._connector_offset_stores.values():
            with contextlib.suppress(Exception):
                await store.close()
        self._connector_offset_stores.clear()
        self._task_producers.clear()
        self._admin_clusters.clear()

    # ------------------------------------------------------------------ config changes
    def _assignable(self) -> tuple[int, list[str], list[TaskId]]:
        state = self.config_store.state
        tasks = [(c, i) for c, ts in state.tasks.items() if c in state.connectors for i in range(len(ts))]
        return state.offset, sorted(state.connectors), sorted(tasks)

    def _on_config_record(self, key: str, restart: RestartRequest | None) -> None:
        if restart is not None:
            self._restarts.append(restart)
        if key.startswith(("connector-", "commit-")):
            self._structure_version += 1
        if self._wake is not None:
            self._wake.set()

    def _request_reconfiguration(self, name: str) -> None:
        self._reconfigure.add(name)
        if self._wake is not None:
            self._wake.set()

    def _connector_failed_soon(self, name: str, trace: str) -> None:
        runner = self.connectors.get(name)
        if runner is not None:
            runner.state = "FAILED"
            asyncio.ensure_future(self._put_connector_status(name, "FAILED", trace))

    # ------------------------------------------------------------------ main loop
    async def _run(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            try:
                if self.group is not None:
                    if self.group.needs_rejoin or self._joined_version != self._structure_version:
                        await self._rejoin()
                else:
                    _, connectors, tasks = self._assignable()
                    self.assigned_connectors, self.assigned_tasks = set(connectors), set(tasks)
                await self._reconcile()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Connect worker %s: reconciliation failed; retrying", self.worker_id)
                await asyncio.sleep(0.5)
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the cancellation of stop()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    await self._wake.wait()
            self._wake.clear()

    async def _rejoin(self) -> None:
        assert self.group is not None
        await self._stop_all()
        self.assigned_connectors, self.assigned_tasks = set(), set()
        await self.config_store.refresh()
        version = self._structure_version
        await self.group.join([])
        a = self.group.connect_assignment
        if a.error == CONFIG_MISMATCH:
            await self.config_store.refresh()
            self.group.needs_rejoin = True
            return
        if a.config_offset > self.config_store.state.offset:
            await self.config_store.refresh()
        self.generation = self.group.generation_id
        self._joined_version = version
        self.assigned_connectors = set(a.connectors)
        self.assigned_tasks = set(a.tasks)
        log.info("worker %s joined generation %d: connectors %s, tasks %s", self.worker_id, self.generation,
                 sorted(a.connectors), sorted(a.tasks))

    async def _stop_all(self, kill: bool = False) -> None:
        timeout = self.config.task_shutdown_timeout_ms / 1000
        await asyncio.gather(*(r.stop(timeout, kill=kill) for r in self.tasks.values()), return_exceptions=True)
        self.tasks.clear()
        self.failed_tasks.clear()
        for runner in list(self.connectors.values()):
            await runner.stop()
        self.connectors.clear()

    async def _reconcile(self) -> None:
        assert self._lock is not None
        async with self._lock:
            state = self.config_store.state
            while self._restarts:
                await self._apply_restart(self._restarts.popleft())
            # Connectors
            for name in list(self.connectors):
                runner = self.connectors[name]
                if (name not in self.assigned_connectors or state.connectors.get(name) != runner.config
                        or state.target_state(name) == STOPPED):
                    await runner.stop()
                    del self.connectors[name]
            for name in sorted(self.assigned_connectors):
                if name not in state.connectors:
                    continue
                if state.target_state(name) == STOPPED:  # no instance, no tasks (Kafka's STOPPED)
                    current = self.status_store.connectors.get(name)
                    if current is None or (current.state, current.worker_id) != ("STOPPED", self.worker_id):
                        await self._put_connector_status(name, "STOPPED")
                    if state.tasks.get(name):
                        await self.config_store.write(task_records(name, []))
                    continue
                if name not in self.connectors:
                    await self._start_connector(name, dict(state.connectors[name]))
                runner = self.connectors[name]
                if runner.state == "FAILED":
                    continue
                wanted = "PAUSED" if state.target_state(name) == PAUSED else "RUNNING"
                if runner.state != wanted:
                    runner.state = wanted
                    await self._put_connector_status(name, wanted)
                if runner.needs_task_configs or name in self._reconfigure:
                    self._reconfigure.discard(name)
                    await self._update_task_configs(runner)
            # Tasks
            for tid in list(self.tasks):
                runner_t = self.tasks[tid]
                c, n = tid
                configs = state.tasks.get(c, [])
                if (tid not in self.assigned_tasks or c not in state.connectors or n >= len(configs)
                        or configs[n] != runner_t.env.config or state.target_state(c) == STOPPED):
                    await runner_t.stop(self.config.task_shutdown_timeout_ms / 1000)
                    del self.tasks[tid]
            self.failed_tasks &= self.assigned_tasks
            for tid in sorted(self.assigned_tasks):
                c, n = tid
                configs = state.tasks.get(c, [])
                if c not in state.connectors or n >= len(configs) or state.target_state(c) == STOPPED:
                    continue
                if tid not in self.tasks and tid not in self.failed_tasks:
                    await self._start_task(tid, dict(configs[n]), dict(state.connectors[c]),
                                           paused=state.target_state(c) == PAUSED)
                task_runner = self.tasks.get(tid)
                if task_runner is not None and task_runner.state != "FAILED":
                    if state.target_state(c) == PAUSED:
                        task_runner.pause()
                    else:
                        task_runner.resume()

    async def _start_connector(self, name: str, config: dict[str, str]) -> None:
        try:
            cls = self.plugins.resolve(config.get("connector.class", ""), KIND_CONNECTOR)
        except PluginNotFound as e:
            runner = ConnectorRunner(name, config, None)
            runner.state = "FAILED"
            self.connectors[name] = runner
            await self._put_connector_status(name, "FAILED", str(e))
            return
        runner = ConnectorRunner(name, config, cls)
        self.connectors[name] = runner
        try:
            instance = cls()
            instance.initialize(_ConnectorContext(self, name, asyncio.get_running_loop()))
            runner.instance = instance
            runner.resolved = self.providers.resolve(config)
            await runner.call(instance.start, dict(runner.resolved))
        except Exception as e:
            runner.state = "FAILED"
            log.error("connector %s failed to start: %s", name, e)
            await self._put_connector_status(name, "FAILED", "".join(traceback.format_exception(e)))
            return
        runner.state = "RUNNING"
        await self._put_connector_status(name, "RUNNING")

    async def _update_task_configs(self, runner: ConnectorRunner) -> None:
        runner.needs_task_configs = False
        if runner.instance is None:
            return
        try:
            max_tasks = int(runner.config.get("tasks.max", "1"))
            configs = await runner.call(runner.instance.task_configs, max_tasks)
            task_cls = await runner.call(runner.instance.task_class)
        except Exception as e:
            runner.state = "FAILED"
            await self._put_connector_status(runner.name, "FAILED", "".join(traceback.format_exception(e)))
            return
        if len(configs) > max_tasks:
            configs = configs[:max_tasks]
        task_class = f"{task_cls.__module__}:{task_cls.__qualname__}"
        full = [{**self.providers.reverse(runner.config, runner.resolved, {str(k): str(v) for k, v in c.items()}),
                 "task.class": task_class} for c in configs]
        if self.config_store.state.tasks.get(runner.name) != full:
            before = len(self.config_store.state.tasks.get(runner.name) or ())
            await self.config_store.write(task_records(runner.name, full))
            if not self._is_sink(runner.config):
                await self._fence_removed_tasks(runner.name, before, len(full))

    async def _start_task(self, tid: TaskId, task_config: dict[str, str], connector_config: dict[str, str],
                          paused: bool) -> None:
        c, n = tid
        assert self.producer is not None and self.cluster is not None
        try:
            task_cls = _load(task_config.get("task.class", ""))
            if not issubclass(task_cls, Task):
                raise TypeError(f"{task_cls} is not a Task")
            resolved = self.providers.resolve(connector_config)
            task = task_cls()
            errors = ErrorHandlingConfig.from_connector_config(resolved, sink=isinstance(task, SinkTask))
            metrics = ErrorHandlingMetrics()
            operator = RetryWithToleranceOperator(errors, metrics, class_name=self._class_name)
            if errors.log_enable:
                operator.reporters.append(LogReporter(c, n, errors.log_include_messages, metrics, self._class_name))
            env = TaskEnv(
                connector=c, task_id=n, config=task_config, connector_config=resolved,
                start_config=self.providers.resolve(task_config),
                key_converter=build_converter(resolved, self.config.props, "key", self.plugins),
                value_converter=build_converter(resolved, self.config.props, "value", self.plugins),
                transforms=build_transforms(resolved, self.plugins),
                flush_interval=self.config.offset_flush_interval_ms / 1000,
                on_status=lambda state, trace: self._put_task_status(c, n, state, trace),
                on_topic=lambda topic: self.status_store.put_topic(c, topic, n, int(time.time() * 1000)),
                errors=operator,
            )
            runner: TaskRunner
            client_props = self.config.client_props
            if isinstance(task, SourceTask):
                groups = topic_creation_groups(resolved)
                creator = None
                if groups is not None:
                    admin = await self._admin_cluster(task_client_security(client_props, ADMIN, resolved))
                    creator = TopicCreator(admin, groups)
                security = task_client_security(client_props, PRODUCER, resolved)
                if self.config.exactly_once_source:
                    runner = await self._exactly_once_runner(env, task, security, resolved, creator)
                else:
                    producer = await self._task_producer(security)
                    runner = SourceTaskRunner(env, task, producer, self.offset_store, creator)
            elif isinstance(task, SinkTask):
                dlq_setup = None
                if errors.dlq_topic:
                    dlq_producer = await self._task_producer(task_client_security(client_props, PRODUCER, resolved))
                    dlq_admin = await self._admin_cluster(task_client_security(client_props, ADMIN, resolved))
                    operator.reporters.append(DeadLetterQueueReporter(
                        dlq_producer, errors.dlq_topic, errors.dlq_context_headers, c, n, metrics, self._class_name))
                    dlq_setup = functools.partial(_create_dlq_topic, dlq_admin, errors)
                sink_cluster = Cluster(self._client_config(task_client_security(client_props, CONSUMER, resolved)))
                runner = SinkTaskRunner(env, task, sink_cluster, self.config.session_timeout_ms,
                                        self.config.heartbeat_interval_ms, dlq_setup)
            else:
                raise TypeError(f"{task_cls} is neither a SourceTask nor a SinkTask")
        except Exception as e:
            self.failed_tasks.add(tid)
            log.error("task %s-%d cannot start: %s", c, n, e)
            await self._put_task_status(c, n, "FAILED", "".join(traceback.format_exception(e)))
            return
        self.tasks[tid] = runner
        runner.start(paused=paused)

    async def _exactly_once_runner(self, env: TaskEnv, task: SourceTask, security: ClientSecurity,
                                   config: Mapping[str, str], creator: TopicCreator | None) -> TaskRunner:
        """KIP-618: the task's own transactional producer, its offsets in the connector's
        ``offsets.storage.topic`` (read before the worker's) or the worker's offsets topic."""
        assert self.cluster is not None and self.config.group_id is not None
        settings = ExactlyOnceSettings.of(config)
        offsets: OffsetStore = self.offset_store
        topic = self.config.offset_topic
        if settings.offsets_topic and settings.offsets_topic != self.config.offset_topic:
            topic = settings.offsets_topic
            own = self._connector_offset_stores.get(topic)
            if own is None:
                own = KafkaOffsetStore(self.cluster, topic, self.config.offset_partitions,
                                       self.config.offset_replication_factor, read_committed=True)
                await own.start()
                self._connector_offset_stores[topic] = own
            offsets = ConnectorOffsetStore(own, self.offset_store)
        producer = Producer(self._client_config(security), acks="all", linger_ms=5,
                            transactional_id=transactional_id(self.config.group_id, env.connector, env.task_id))
        return ExactlyOnceSourceTaskRunner(env, task, producer, offsets, topic, settings, creator)

    async def _fence_removed_tasks(self, name: str, old: int, new: int) -> None:
        """KIP-618: fence the transactional ids of a source connector's tasks that are gone."""
        if not self.config.exactly_once_source or new >= old or self.cluster is None:
            return
        assert self.config.group_id is not None
        txn = TransactionsAdmin(self.cluster)
        for n in range(new, old):
            tid = transactional_id(self.config.group_id, name, n)
            try:
                await txn.init_producer_id(tid, 60_000)
            except Exception as e:
                log.warning("cannot fence the transactional id %s: %s", tid, e)

    def _class_name(self, cls: type) -> str:
        """How a converter, transform or other executing class is named in error reports: Kafka's
        class name for a built-in plugin that has one, else the Python class path."""
        return self.plugins.display_name(cls)

    def task_error_metrics(self) -> list[tuple[str, int, dict[str, int]]]:
        """``(connector, task, Kafka's task-error-metrics)`` for each task this worker runs."""
        return [(c, n, runner.env.operator.metrics.values()) for (c, n), runner in sorted(self.tasks.items())]

    async def _apply_restart(self, req: RestartRequest) -> None:
        if req.task is not None:
            tid = (req.connector, req.task)
            if tid in self.tasks:
                await self.tasks.pop(tid).stop(self.config.task_shutdown_timeout_ms / 1000)
            self.failed_tasks.discard(tid)
            return
        runner = self.connectors.get(req.connector)
        if runner is not None and (not req.only_failed or runner.state == "FAILED"):
            await runner.stop()
            del self.connectors[req.connector]
        if req.include_tasks:
            for tid in [t for t in self.assigned_tasks if t[0] == req.connector]:
                current = self.tasks.get(tid)
                failed = tid in self.failed_tasks or (current is not None and current.state == "FAILED")
                if req.only_failed and not failed:
                    continue
                if current is not None:
                    await self.tasks.pop(tid).stop(self.config.task_shutdown_timeout_ms / 1000)
                self.failed_tasks.discard(tid)

    async def _put_connector_status(self, name: str, state: str, trace: str | None = None) -> None:
        if name not in self.config_store.state.connectors:
            return
        await self.status_store.put_connector(name, Status(state, self.worker_id, trace, self.generation))

    async def _put_task_status(self, name: str, task: int, state: str, trace: str | None) -> None:
        if name not in self.config_store.state.connectors:
            return
        await self.status_store.put_task(name, task, Status(state, self.worker_id, trace, self.generation))

    # ------------------------------------------------------------------ REST operations
    def connector_names(self) -> list[str]:
        return sorted(self.config_store.state.connectors)

    def _config(self, name: str) -> dict[str, str]:
        config = self.config_store.state.connectors.get(name)
        if config is None:
            raise not_found(name)
        return config

    def _type(self, config: Mapping[str, str]) -> str:
        try:
            return connector_type(self.plugins.resolve(config.get("connector.class", ""), KIND_CONNECTOR))
        except PluginNotFound:
            return "unknown"

    def connector_info(self, name: str) -> dict[str, Any]:
        config = self._config(name)
        n = len(self.config_store.state.tasks.get(name, []))
        return {"name": name, "config": dict(config), "tasks": [{"connector": name, "task": i} for i in range(n)],
                "type": self._type(config)}

    def connector_status(self, name: str) -> dict[str, Any]:
        config = self.config_store.state.connectors.get(name)
        if config is None:
            raise ConnectError(404, f"No status found for connector {name}")
        status = self.status_store.connectors.get(name)
        connector: dict[str, Any] = {"state": status.state if status else "UNASSIGNED",
                                     "worker_id": status.worker_id if status else self.worker_id}
        if status is not None and status.trace:
            connector["trace"] = status.trace
        tasks = [self._task_state(name, i) for i in range(len(self.config_store.state.tasks.get(name, [])))]
        return {"name": name, "connector": connector, "tasks": tasks, "type": self._type(config)}

    def _task_state(self, name: str, task: int) -> dict[str, Any]:
        s = self.status_store.tasks.get((name, task))
        out: dict[str, Any] = {"id": task, "state": s.state if s else "UNASSIGNED",
                               "worker_id": s.worker_id if s else self.worker_id}
        if s is not None and s.trace:
            out["trace"] = s.trace
        return out

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        self._config(name)
        if task < 0 or task >= len(self.config_store.state.tasks.get(name, [])):
            raise ConnectError(404, f"No status found for task {name}-{task}")
        return self._task_state(name, task)

    def tasks_info(self, name: str) -> list[dict[str, Any]]:
        self._config(name)
        return [{"id": {"connector": name, "task": i}, "config": dict(c)}
                for i, c in enumerate(self.config_store.state.tasks.get(name, []))]

    def active_topics(self, name: str) -> list[str]:
        self._config(name)
        return sorted(self.status_store.topics.get(name, set()))

    async def reset_topics(self, name: str) -> None:
        self._config(name)
        await self.status_store.reset_topics(name)

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """ConfigInfos for ``config``, checked with config-provider placeholders resolved but
        answered with the values as given (resolved secrets are never echoed)."""
        raw = {str(k): v for k, v in config.items()}
        try:
            resolved = self.providers.resolve({k: v for k, v in raw.items() if isinstance(v, str)})
        except ConfigException as e:
            raise ConnectError(400, str(e)) from None
        try:
            infos = validate_connector_config({**raw, **resolved}, self.plugins,
                                              exactly_once_source=self.config.exactly_once_source)
        except PluginNotFound as e:
            raise ConnectError(400, str(e)) from None
        overrides = override_errors(self.config.client_props, {**{k: str(v) for k, v in raw.items()}, **resolved},
                                    self.config.client_override_policy)
        for name, error in overrides.items():  # KIP-458 client overrides the worker's policy refuses
            key = ConfigKey(name, ConfigType.STRING, None, doc="A client config override (KIP-458).")
            infos["configs"].append({"definition": config_key_info(key),
                                     "value": config_value_info(ConfigValue(name, raw.get(name), errors=[error]))})
            infos["error_count"] += 1
        for entry in infos["configs"]:
            name = entry["value"]["name"]
            if name in raw and isinstance(raw[name], str) and raw[name] != resolved.get(name, raw[name]):
                entry["value"]["value"] = raw[name]
        return infos

    def _check_valid(self, name: str, config: Mapping[str, Any]) -> None:
        if "connector.class" not in config:
            raise ConnectError(400, f"Connector config {dict(config)} contains no connector type")
        infos = self.validate(config)
        if infos["error_count"]:
            errors = validation_errors(infos)
            raise ConnectError(400, f"Connector configuration is invalid and contains the following "
                                    f"{len(errors)} error(s):\n" + "\n".join(errors) + "\nYou can also find the "
                                    "above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")

    async def put_connector_config(self, name: str, config: Mapping[str, Any], *, create_only: bool = False,
                                   initial_state: str | None = None) -> tuple[bool, dict[str, Any]]:
        """Create or replace; returns (created, info). ``create_only``: 409 when it exists."""
        await self.config_store.refresh()
        cfg = {str(k): _text(v) for k, v in config.items()}
        if "name" in cfg and cfg["name"] != name:
            raise ConnectError(400, f"Connector name configuration ({cfg['name']}) doesn't match connector name "
                                    f"in the URL ({name})")
        cfg["name"] = name
        exists = name in self.config_store.state.connectors
        if exists and create_only:
            raise ConnectError(409, f"Connector {name} already exists")
        self._check_valid(name, cfg)
        records = []
        if not exists and initial_state is not None:
            records.append(target_state_record(name, initial_state))
        records.append(connector_record(name, cfg))
        await self.config_store.write(records)
        if self._wake is not None:
            self._wake.set()
        return not exists, self.connector_info(name)

    async def patch_connector_config(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        await self.config_store.refresh()
        current = dict(self._config(name))
        for k, v in patch.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = _text(v)
        _, info = await self.put_connector_config(name, current)
        return info

    async def delete_connector(self, name: str) -> None:
        await self.config_store.refresh()
        self._config(name)
        n = len(self.config_store.state.tasks.get(name, []))
        await self.config_store.write([connector_record(name, None), target_state_record(name, None)])
        await self.status_store.put_connector(name, None)
        for i in range(n):
            await self.status_store.put_task(name, i, None)
        if self._wake is not None:
            self._wake.set()

    async def set_target_state(self, name: str, state: str) -> None:
        await self.config_store.refresh()
        self._config(name)
        await self.config_store.write([target_state_record(name, state)])

    def target_state(self, name: str) -> str:
        self._config(name)
        return self.config_store.state.target_state(name)

    async def restart_connector(self, name: str, include_tasks: bool, only_failed: bool) -> dict[str, Any] | None:
        """None for the plain restart (HTTP 200, no body); else the status with RESTARTING marks (202)."""
        await self.config_store.refresh()
        self._config(name)
        req = RestartRequest(name, None, include_tasks, only_failed)
        if not include_tasks and not only_failed:
            await self.config_store.write([restart_record(req)])
            return None
        status = self.connector_status(name)
        if not only_failed or status["connector"]["state"] == "FAILED":
            status["connector"]["state"] = "RESTARTING"
            await self.status_store.put_connector(name, Status("RESTARTING", status["connector"]["worker_id"]))
        if include_tasks:
            for t in status["tasks"]:
                if not only_failed or t["state"] == "FAILED":
                    t["state"] = "RESTARTING"
                    await self.status_store.put_task(name, t["id"], Status("RESTARTING", t["worker_id"]))
        await self.config_store.write([restart_record(req)])
        return status

    async def restart_task(self, name: str, task: int) -> None:
        await self.config_store.refresh()
        self._config(name)
        if task < 0 or task >= len(self.config_store.state.tasks.get(name, [])):
            raise ConnectError(404, f"Task {name}-{task} not found")
        await self.config_store.write([restart_record(RestartRequest(name, task))])

    # ------------------------------------------------------------------ offsets
    def _is_sink(self, config: Mapping[str, str]) -> bool:
        try:
            return issubclass(self.plugins.resolve(config.get("connector.class", ""), KIND_CONNECTOR), SinkConnector)
        except PluginNotFound:
            return False

    async def get_offsets(self, name: str) -> dict[str, Any]:
        config = self._config(name)
        if self._is_sink(config):
            assert self.cluster is not None
            try:
                committed = await GroupAdmin(self.cluster).committed_offsets(f"connect-{name}")
            except Exception:
                committed = {}
            return {"offsets": [{"partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                                 "offset": {"kafka_offset": off}} for tp, off in sorted(committed.items())]}
        await self.offset_store.refresh()
        return {"offsets": [{"partition": p, "offset": o} for p, o in self.offset_store.offsets_of(name)]}

    def _require_stopped(self, name: str) -> None:
        state = self.config_store.state
        if state.target_state(name) != STOPPED or state.tasks.get(name):
            raise ConnectError(400, "Connectors must be in the STOPPED state before their offsets can be modified. "
                                    f"This can be done for the specified connector by issuing a 'PUT' request to the "
                                    f"'/connectors/{name}/stop' endpoint")

    async def alter_offsets(self, name: str, body: Any, reset: bool = False) -> str:
        await self.config_store.refresh()
        config = self._config(name)
        self._require_stopped(name)
        sink = self._is_sink(config)
        if reset:
            if sink:
                assert self.cluster is not None
                result = await GroupAdmin(self.cluster).delete_groups([f"connect-{name}"])
                err = result.get(f"connect-{name}")
                if err is not None and getattr(err, "code", None) not in (69,):  # GROUP_ID_NOT_FOUND
                    raise ConnectError(500, f"Failed to reset offsets of connector {name}: {err}")
                return "The offsets for this connector have been reset successfully"
            await self.offset_store.refresh()
            await self.offset_store.put(name, {offset_key(name, p): None for p, _ in self.offset_store.offsets_of(name)})
            return ("The Connect framework-managed offsets for this connector have been reset successfully. However, if "
                    "this connector manages offsets externally, they will need to be manually reset in the system that "
                    "the connector uses.")
        entries = body.get("offsets") if isinstance(body, dict) else None
        if not isinstance(entries, list) or not entries:
            raise ConnectError(400, "Partitions / offsets need to be provided for an alter offsets request")
        if sink:
            commits: dict[TopicPartition, int] = {}
            for e in entries:
                p = e.get("partition") if isinstance(e, dict) else None
                o = e.get("offset") if isinstance(e, dict) else None
                if (not isinstance(p, dict) or not isinstance(p.get("kafka_topic"), str)
                        or not isinstance(p.get("kafka_partition"), int)):
                    raise ConnectError(400, "Each sink partition must have a string 'kafka_topic' and an integer "
                                            "'kafka_partition'")
                if not isinstance(o, dict) or not isinstance(o.get("kafka_offset"), int) or o["kafka_offset"] < 0:
                    raise ConnectError(400, "Each sink offset must be an object with a non-negative integer "
                                            "'kafka_offset' (resetting single partitions is not supported; use DELETE)")
                commits[TopicPartition(p["kafka_topic"], p["kafka_partition"])] = o["kafka_offset"]
            assert self.cluster is not None
            results = await GroupAdmin(self.cluster).commit_offsets(f"connect-{name}", commits)
            failed = {tp: e for tp, e in results.items() if e is not None}
            if failed:
                raise ConnectError(500, f"Failed to alter consumer group offsets for connector {name}: {failed}")
            return "The offsets for this connector have been altered successfully"
        updates: dict[bytes, dict[str, Any] | None] = {}
        for e in entries:
            p = e.get("partition") if isinstance(e, dict) else None
            if not isinstance(p, dict):
                raise ConnectError(400, "Source partitions must be JSON objects")
            o = e.get("offset")
            if o is not None and not isinstance(o, dict):
                raise ConnectError(400, "Source offsets must be JSON objects or null")
            updates[offset_key(name, p)] = o
        await self.offset_store.put(name, updates)
        return ("The Connect framework-managed offsets for this connector have been altered successfully. However, if "
                "this connector manages offsets externally, they will need to be manually altered in the system that "
                "the connector uses.")


async def _create_dlq_topic(cluster: Cluster, errors: ErrorHandlingConfig) -> None:
    """Kafka's DeadLetterQueueReporter setup: create the topic with one partition and
    ``errors.deadletterqueue.topic.replication.factor`` replicas unless it exists (the factor is
    not fitted to the brokers: more than there are fails the task)."""
    topic = errors.dlq_topic
    try:
        await ensure_topic(AdminClient(cluster), NewTopic(topic, DLQ_NUM_PARTITIONS, errors.dlq_replication_factor))
    except Exception as e:
        raise ConnectException(f"Could not initialize dead letter queue with topic={topic}") from e


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    return str(v)

