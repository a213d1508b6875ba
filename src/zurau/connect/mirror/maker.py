"""MirrorMaker 2's dedicated mode (``connect-mirror-maker.sh mm2.properties``): every replication
flow between several clusters, from one properties file, in one process.

The file (MM2's ``MirrorMakerConfig``)::

    clusters = A, B
    A.bootstrap.servers = a1:9092
    B.bootstrap.servers = b1:9092
    A->B.enabled = true
    A->B.topics = orders.*
    B->A.enabled = true
    replication.factor = 1            # top level: every flow
    B.offset.flush.interval.ms = 5000 # cluster level

* ``clusters``: the aliases. ``<alias>.<key>`` are that cluster's settings: its clients'
  (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``, ``<alias>.consumer.*``
  ...) and, when it is the target of a flow, the Connect worker's. Client settings at the top
  level apply to every cluster that does not set its own.
* A pair ``S->T`` gets a Connect worker on ``T`` (group ``S-mm2``; config, offset and status
  topics ``mm2-configs.S.internal``, ``mm2-offsets.S.internal``, ``mm2-status.S.internal``;
  byte-array converters) when ``S->T.enabled=true`` or heartbeats are on (``emit.heartbeats.enabled``,
  top level or ``S->T.``; default true): the heartbeats of ``T->S`` land on ``S``, from where
  flow ``S->T`` copies them back as ``S.heartbeats``. The worker runs ``MirrorSourceConnector``,
  ``MirrorCheckpointConnector`` and ``MirrorHeartbeatConnector`` (named so), whose configs are
  the top-level connector settings (``topics``, ``groups``, ``sync.topic.configs.enabled``,
  ``emit.checkpoints.interval.seconds``, ``tasks.max``, ``replication.factor`` ...), then
  ``source.cluster.*`` / ``target.cluster.*`` from the two clusters' settings (``source.consumer.*``
  ... for their ``consumer.``/``producer.``/``admin.`` ones), then every ``S->T.<key>`` setting
  of the flow; ``enabled`` is false unless the flow sets it, so a pair that runs only for
  heartbeats copies nothing.
* Top-level worker settings as MM2 takes them: ``offset.storage.*``, ``config.storage.*``,
  ``status.storage.*``, ``key.converter*``, ``value.converter*``, ``header.converter*``,
  ``task*``, ``worker*``, ``replication.policy*``, ``config.providers*``.

:class:`MirrorMaker` starts the workers of the pairs whose target is in ``clusters`` (``--clusters``;
all by default: several processes with the same file and different ``--clusters`` split the
work, and processes with the same targets share it through the worker groups), writes the three
connector configs to each (unless they are already those), and stops them all on :meth:`stop`.
Workers have no REST API here (as MM2's dedicated mode by default). :class:`EmbeddedMirrorMaker`
runs one in this process on a thread of its own, for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from zurau.connect.mirror.checkpoint import CHECKPOINT_DEF
from zurau.connect.mirror.heartbeat import HEARTBEAT_DEF
from zurau.connect.mirror.source import BYTE_ARRAY_CONVERTER, SOURCE_DEF
from zurau.connect.plugins import PluginRegistry
from zurau.connect.worker import Worker
from zurau.connect.worker_config import WorkerConfig
from zurau.edge_service import run_in_thread, set_threadsafe

log = logging.getLogger("zurau.connect.mirror")

CONNECTORS = (
    ("MirrorSourceConnector", "org.apache.kafka.connect.mirror.MirrorSourceConnector"),
    ("MirrorCheckpointConnector", "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"),
    ("MirrorHeartbeatConnector", "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"),
)
CONNECTOR_NAMES = (
    frozenset(SOURCE_DEF.names())
    | frozenset(CHECKPOINT_DEF.names())
    | frozenset(HEARTBEAT_DEF.names())
    | {
        "tasks.max",
        "key.converter",
        "value.converter",
        "header.converter",
        "errors.tolerance",
        "errors.log.enable",
        "errors.log.include.messages",
    }
)
WORKER_PREFIXES = (
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task",
    "worker",
    "replication.policy",
)
_CLIENT_ROLES = ("consumer.", "producer.", "admin.")


class MirrorMakerConfigError(ValueError):
    """An mm2.properties that cannot run."""


def is_client_config(key: str) -> bool:
    """Settings every client of a cluster takes (MM2's ``MirrorClientConfig`` ones)."""
    return key in ("bootstrap.servers", "security.protocol", "client.dns.lookup") or key.startswith(
        ("ssl.", "sasl.")
    )


@dataclass(frozen=True, order=True)
class SourceAndTarget:
    source: str
    target: str

    def __str__(self) -> str:
        return f"{self.source}->{self.target}"


class MirrorMakerConfig:
    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = {str(k).strip(): str(v).strip() for k, v in props.items()}
        self.clusters = [c.strip() for c in self.props.get("clusters", "").split(",") if c.strip()]
        if not self.clusters:
            raise MirrorMakerConfigError(
                'Missing required configuration "clusters" which has no default value.'
            )
        if len(set(self.clusters)) != len(self.clusters):
            raise MirrorMakerConfigError(f"clusters lists an alias twice: {', '.join(self.clusters)}")
        for alias in self.clusters:
            if not self.cluster_props(alias).get("bootstrap.servers"):
                raise MirrorMakerConfigError(f"cluster {alias} has no {alias}.bootstrap.servers")

    def _bool(self, key: str, default: bool) -> bool:
        value = self.props.get(key)
        return default if value is None else value.lower() == "true"

    def flow_enabled(self, pair: SourceAndTarget) -> bool:
        return self._bool(f"{pair}.enabled", False)

    def cluster_pairs(self) -> list[SourceAndTarget]:
        """Pairs that get a worker: the flow is enabled, or its heartbeats are on."""
        heartbeats = self._bool("emit.heartbeats.enabled", True)
        pairs = []
        for source in self.clusters:
            for target in self.clusters:
                if source == target:
                    continue
                pair = SourceAndTarget(source, target)
                if self.flow_enabled(pair) or self._bool(f"{pair}.emit.heartbeats.enabled", heartbeats):
                    pairs.append(pair)
        return pairs

    def _with_prefix(self, prefix: str) -> dict[str, str]:
        return {k: v for k, v in self.props.items() if k.startswith(prefix)}

    def _stripped(self, prefix: str) -> dict[str, str]:
        return {
            k[len(prefix) :]: v
            for k, v in self.props.items()
            if k.startswith(prefix) and len(k) > len(prefix)
        }

    def cluster_props(self, alias: str) -> dict[str, str]:
        """``<alias>.*`` settings, with the top-level client settings it does not override, and
        its client settings copied to the ``consumer.``/``producer.``/``admin.`` roles."""
        props = self._stripped(f"{alias}.")
        for source in (dict(props), {k: v for k, v in self.props.items() if is_client_config(k)}):
            for key, value in source.items():
                if is_client_config(key):
                    for role in _CLIENT_ROLES:
                        props.setdefault(role + key, value)
                    props.setdefault(key, value)
        return props

    def worker_props(self, pair: SourceAndTarget) -> dict[str, str]:
        """The Connect worker of ``pair`` (it runs on the target cluster)."""
        props = self.cluster_props(pair.target)
        for prefix in (*WORKER_PREFIXES, "config.providers"):
            props.update(self._with_prefix(prefix))
        props.setdefault("group.id", f"{pair.source}-mm2")
        props.setdefault("offset.storage.topic", f"mm2-offsets.{pair.source}.internal")
        props.setdefault("status.storage.topic", f"mm2-status.{pair.source}.internal")
        props.setdefault("config.storage.topic", f"mm2-configs.{pair.source}.internal")
        for converter in ("key.converter", "value.converter", "header.converter"):
            props.setdefault(converter, BYTE_ARRAY_CONVERTER)
        # The worker has no REST API: its id only names it in statuses.
        props.setdefault(
            "rest.advertised.host.name",
            f"mm2-{pair.source}-{pair.target}.{socket.gethostname()}.{os.getpid()}",
        )
        return props

    def connector_config(self, pair: SourceAndTarget, name: str, connector_class: str) -> dict[str, str]:
        props = {k: v for k, v in self.props.items() if k in CONNECTOR_NAMES}
        props.update(self._with_prefix("config.providers"))
        props.update(self._with_prefix("replication.policy"))
        for side, alias in (("source", pair.source), ("target", pair.target)):
            for key, value in self.cluster_props(alias).items():
                if key.startswith(_CLIENT_ROLES):
                    props[f"{side}.{key}"] = value
                else:
                    props[f"{side}.cluster.{key}"] = value
        props.setdefault("name", name)
        props.setdefault("connector.class", connector_class)
        props.setdefault("source.cluster.alias", pair.source)
        props.setdefault("target.cluster.alias", pair.target)
        props.update(self._stripped(f"{pair}."))
        props.setdefault("enabled", "false")
        return props


class MirrorMaker:
    """The workers of one dedicated MirrorMaker process (see the module docstring)."""

    def __init__(
        self,
        config: MirrorMakerConfig,
        clusters: Iterable[str] | None = None,
        plugins: PluginRegistry | None = None,
    ) -> None:
        self.config = config
        targets = [c.strip() for c in clusters or [] if c.strip()] or list(config.clusters)
        unknown = [c for c in targets if c not in config.clusters]
        if unknown:
            raise MirrorMakerConfigError(
                f"--clusters names {', '.join(unknown)}, not in clusters ({', '.join(config.clusters)})"
            )
        self.pairs = [p for p in config.cluster_pairs() if p.target in targets]
        if not self.pairs:
            raise MirrorMakerConfigError("No source->target replication flows.")
        self.plugins = plugins
        self.workers: dict[SourceAndTarget, Worker] = {}

    async def start(self) -> None:
        """Start a worker per pair and configure its connectors (a failure stops what started)."""
        try:
            for pair in self.pairs:
                worker = Worker(WorkerConfig.from_props(self.config.worker_props(pair)), self.plugins)
                log.info("MirrorMaker: starting the worker of %s", pair)
                await worker.start()
                self.workers[pair] = worker
            for pair, worker in self.workers.items():
                for name, cls in CONNECTORS:
                    wanted = self.config.connector_config(pair, name, cls)
                    await worker.config_store.refresh()
                    if worker.config_store.state.connectors.get(name) == wanted:
                        continue
                    await worker.put_connector_config(name, wanted)
                log.info(
                    "MirrorMaker: %s configured (%s)",
                    pair,
                    "enabled" if self.config.flow_enabled(pair) else "heartbeats only",
                )
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        workers, self.workers = list(self.workers.items()), {}
        for pair, worker in reversed(workers):
            log.info("MirrorMaker: stopping the worker of %s", pair)
            with contextlib.suppress(Exception):
                await worker.stop()


class EmbeddedMirrorMaker:
    """A :class:`MirrorMaker` in this process, on its own thread and event loop, for tests::

    with EmbeddedMirrorMaker({"clusters": "A, B", "A.bootstrap.servers": a, ...}):
        ...

    ``props`` are mm2.properties; ``clusters`` as ``--clusters``.
    """

    def __init__(
        self,
        props: Mapping[str, str],
        clusters: Iterable[str] | None = None,
        plugins: PluginRegistry | None = None,
    ) -> None:
        self.maker = MirrorMaker(MirrorMakerConfig(props), clusters, plugins)
        self._running: tuple[asyncio.AbstractEventLoop, threading.Thread, asyncio.Event] | None = None

    def start(self) -> EmbeddedMirrorMaker:
        if self._running is None:
            self._running = run_in_thread("zurau-embedded-mirror-maker", self.maker.start, self.maker.stop)
        return self

    def stop(self) -> None:
        if self._running is not None:
            loop, thread, stop = self._running
            self._running = None
            set_threadsafe(loop, stop)
            thread.join()

    def __enter__(self) -> EmbeddedMirrorMaker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
