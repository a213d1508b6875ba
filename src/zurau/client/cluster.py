"""Bootstrap, cluster metadata and one connection per broker.

:class:`Cluster` connects to the first reachable bootstrap server, learns the brokers and topic
partitions from Metadata, and then talks to each broker at the address the cluster advertises for
it (as every Kafka client does). Metadata is cached; callers refresh it after a retriable error
(NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, a lost connection).

Invariants:

* ``brokers`` and ``topics`` are replaced together by each Metadata answer; a topic absent from the
  latest answer for it is dropped from the cache.
* At most one live :class:`BrokerConnection` per node id (plus the bootstrap connection until the
  node id of its server is known); :meth:`close` closes all of them and leaves no task running.
* Metadata is asked for by topic name (v12 at most), so topic ids are never needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from zurau.client import typed_api
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.errors import BrokerUnreachableError, ClientError, ConnectionLostError
from zurau.client.typed_api import Call
from zurau.protocol.errors import KafkaError, LeaderNotAvailableError, for_code
from zurau.protocol.messages import MetadataResponse

METADATA = 3
METADATA_MAX_VERSION = 12  # v13 adds only a top-level error code; names suffice for us

R = TypeVar("R")


@dataclass(frozen=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    error_code: int
    is_internal: bool = False
    topic_id: Any = None
    partitions: tuple[PartitionMetadata, ...] = ()

    @property
    def error(self) -> KafkaError | None:
        return (
            for_code(self.error_code)(_topic_message(self.name, self.error_code)) if self.error_code else None
        )


@dataclass
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    topics: dict[str, TopicMetadata] = field(default_factory=dict)


def _topic_message(name: str, code: int) -> str:
    if code == 3:
        return f"Topic '{name}' does not exist"
    return f"{for_code(code).__name__} for topic '{name}'"


class Cluster:
    """Connections and metadata for one Kafka-compatible cluster."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.metadata = ClusterMetadata()
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap: BrokerConnection | None = None
        self._connecting: dict[int, asyncio.Future[BrokerConnection]] = {}
        self._metadata_lock = asyncio.Lock()
        self._last_refresh = 0.0
        self._closed = False

    @classmethod
    def of(cls, config: ClientConfig | Cluster) -> tuple[Cluster, bool]:
        """A client's cluster: ``config`` itself when it is one (shared), else a new one for the
        config. The flag is True for a new cluster, which the client then owns and closes."""
        if isinstance(config, Cluster):
            return config, False
        return cls(config), True

    async def __aenter__(self) -> Cluster:
        await self.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ connections
    def _new_connection(self, host: str, port: int, node_id: int = -1) -> BrokerConnection:
        return BrokerConnection(
            host,
            port,
            client_id=self.config.client_id,
            request_timeout=self.config.request_timeout,
            node_id=node_id,
            security=self.config.security,
        )

    async def bootstrap(self) -> None:
        """Connect to the first reachable bootstrap server and load broker metadata."""
        if self._bootstrap is not None and self._bootstrap.connected:
            return
        errors = []
        servers = list(self.config.bootstrap_servers)
        for host, port in servers:
            conn = self._new_connection(host, port)
            try:
                await conn.connect(self.config.connection_setup_timeout)
            except BrokerUnreachableError as e:
                errors.append(str(e).removeprefix("cannot connect to "))
                continue
            self._bootstrap = conn
            await self.refresh_metadata([])
            return
        raise BrokerUnreachableError(f"no broker reachable at {', '.join(errors)}")

    async def connection(self, node_id: int) -> BrokerConnection:
        """The live connection to broker ``node_id``, opened on first use."""
        conn = self._connections.get(node_id)
        if conn is not None and conn.connected:
            return conn
        pending = self._connecting.get(node_id)
        if pending is not None:
            return await asyncio.shield(pending)
        node = self.metadata.brokers.get(node_id)
        if node is None:
            await self.refresh_metadata([])
            node = self.metadata.brokers.get(node_id)
            if node is None:
                raise BrokerUnreachableError(f"broker {node_id} is not in the cluster metadata")
        boot = self._bootstrap
        if boot is not None and boot.connected and (boot.host, boot.port) == (node.host, node.port):
            boot.node_id = node_id
            self._connections[node_id] = boot
            return boot
        fut: asyncio.Future[BrokerConnection] = asyncio.get_running_loop().create_future()
        self._connecting[node_id] = fut
        try:
            conn = self._new_connection(node.host, node.port, node_id)
            await conn.connect(self.config.connection_setup_timeout)
            self._connections[node_id] = conn
            fut.set_result(conn)
            return conn
        except BaseException as e:
            fut.set_exception(e)
            fut.exception()  # retrieved: waiters re-raise it, nobody else needs to
            raise
        finally:
            self._connecting.pop(node_id, None)

    async def any_connection(self) -> BrokerConnection:
        """A live connection to some broker (the bootstrap one if still open)."""
        if self._bootstrap is not None and self._bootstrap.connected:
            return self._bootstrap
        for conn in self._connections.values():
            if conn.connected:
                return conn
        ids = list(self.metadata.brokers)
        random.shuffle(ids)
        for node_id in ids:
            with contextlib.suppress(ClientError):
                return await self.connection(node_id)
        self._bootstrap = None
        await self.bootstrap()
        assert self._bootstrap is not None
        return self._bootstrap

    async def close(self) -> None:
        self._closed = True
        conns = {id(c): c for c in self._connections.values()}
        if self._bootstrap is not None:
            conns[id(self._bootstrap)] = self._bootstrap
        self._connections.clear()
        self._bootstrap = None
        await asyncio.gather(*(c.close() for c in conns.values()), return_exceptions=True)

    # ------------------------------------------------------------------ requests
    async def call(self, node_id: int | None, call: Call[R], **kwargs: Any) -> R:
        """Send a typed call (:mod:`zurau.client.typed_api`) to broker ``node_id`` (any broker
        when None) and return its answer, typed; a lost connection is retried once. ``kwargs``
        are :meth:`BrokerConnection.call`'s (``version``, ``max_version``, ``timeout``)."""
        for attempt in (0, 1):
            conn = await (self.any_connection() if node_id is None else self.connection(node_id))
            try:
                return await conn.call(call, **kwargs)
            except ConnectionLostError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def supports(self, api_key: int) -> bool:
        return (await self.any_connection()).supports(api_key)

    # ------------------------------------------------------------------ metadata
    async def refresh_metadata(
        self, topics: Iterable[str] | None = None, *, allow_auto_topic_creation: bool = False
    ) -> ClusterMetadata:
        """Ask for ``topics`` (None: all topics, []: brokers only) and update the cache."""
        names = None if topics is None else list(topics)
        async with self._metadata_lock:
            conn = await self.any_connection()
            version = conn.version(METADATA, METADATA_MAX_VERSION, min_version=1)
            call = typed_api.METADATA(
                {
                    "topics": None if names is None else [{"name": n} for n in names],
                    "allow_auto_topic_creation": allow_auto_topic_creation,
                }
            )
            resp = await conn.call(call, version=version)
            self._apply(resp, names)
            self._last_refresh = time.monotonic()
            return self.metadata

    def _apply(self, resp: MetadataResponse, asked: list[str] | None) -> None:
        md = self.metadata
        md.cluster_id = resp.get("cluster_id")
        md.controller_id = resp.get("controller_id", -1)
        md.brokers = {
            b["node_id"]: BrokerNode(b["node_id"], b["host"], b["port"], b.get("rack"))
            for b in resp["brokers"]
        }
        if asked is None:
            md.topics = {}
        else:
            for n in asked:
                md.topics.pop(n, None)
        for t in resp["topics"]:
            name = t["name"]
            if name is None:  # nullable from v12 for a topic asked for by id, which this cache never does
                continue
            parts = tuple(
                sorted(
                    (
                        PartitionMetadata(
                            topic=name,
                            partition=p["partition_index"],
                            leader=p["leader_id"],
                            leader_epoch=p.get("leader_epoch", -1),
                            replicas=tuple(p["replica_nodes"]),
                            isr=tuple(p["isr_nodes"]),
                            offline_replicas=tuple(p.get("offline_replicas") or ()),
                            error_code=p["error_code"],
                        )
                        for p in t["partitions"]
                    ),
                    key=lambda p: p.partition,
                )
            )
            md.topics[name] = TopicMetadata(
                name=name,
                error_code=t["error_code"],
                is_internal=t.get("is_internal", False),
                topic_id=t.get("topic_id"),
                partitions=parts,
            )
        # Forget connections to brokers that left the cluster.
        for node_id in [n for n in self._connections if n not in md.brokers]:
            conn = self._connections.pop(node_id)
            if conn is not self._bootstrap:
                asyncio.get_running_loop().create_task(conn.close())

    async def topic(
        self, name: str, *, refresh: bool = False, allow_auto_topic_creation: bool = False
    ) -> TopicMetadata:
        """Metadata of one topic; raises its Kafka error (e.g. UnknownTopicOrPartitionError).

        A topic whose partitions have no leader yet (just created) is asked for again for a
        short while, as clients do, before LEADER_NOT_AVAILABLE is raised.
        """
        deadline = time.monotonic() + self.config.request_timeout
        delay = 0.01
        while True:
            t = self.metadata.topics.get(name)
            if refresh or t is None:
                await self.refresh_metadata([name], allow_auto_topic_creation=allow_auto_topic_creation)
                t = self.metadata.topics.get(name)
            refresh = True
            if t is None:
                raise for_code(3)(_topic_message(name, 3))
            retriable = t.error_code in (LeaderNotAvailableError.code,) or any(
                p.leader < 0 for p in t.partitions
            )
            error = t.error  # None exactly when error_code is 0
            if error is not None and not retriable:
                raise error
            if not retriable or time.monotonic() > deadline:
                if error is not None:
                    raise error
                return t
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def leader_for(self, topic: str, partition: int, *, refresh: bool = False) -> int:
        t = await self.topic(topic, refresh=refresh)
        for p in t.partitions:
            if p.partition == partition:
                if p.leader < 0:
                    raise LeaderNotAvailableError(f"{topic}-{partition} has no leader")
                return p.leader
        from zurau.protocol.errors import UnknownTopicOrPartitionError

        raise UnknownTopicOrPartitionError(f"topic '{topic}' has no partition {partition}")
