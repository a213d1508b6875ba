"""A real Zurau broker inside the caller's process, for test suites.

``EmbeddedBroker`` listens on an ephemeral 127.0.0.1 port with a temporary data directory (or a
given one) and accepts broker configs as keyword overrides (``log_segment_bytes=1048576`` means
``log.segment.bytes=1048576``; dotted names work through ``**{"log.segment.bytes": ...}``).
Two ways to run it:

* ``with EmbeddedBroker() as b:`` runs the broker on its own event loop (uvloop) in a background
  thread, for synchronous callers; ``__exit__`` stops it and joins the thread.
* ``async with EmbeddedBroker() as b:`` runs it on the caller's running loop.

Clean shutdown, both ways: listeners and connections closed, every task the broker started
(maintenance, request handlers, long polls) finished, logs flushed and their files closed, and a
temporary directory removed. In sync mode the broker's thread, its event loop and the loop's
executor threads are gone when ``__exit__`` returns. In async mode the broker leaves no task on
the caller's loop; file work it handed to the loop's default executor ran on the caller's
executor threads, which belong to (and end with) the caller's loop.

Invariant: a given ``data_dir`` is never deleted; a temporary one always is, also when start-up
fails (bad config, port in use).

Secured, for testing clients against TLS and SASL: ``EmbeddedBroker(security="SASL_SSL",
users={"alice": "secret"})`` listens with that security protocol only (SSL, SASL_PLAINTEXT or
SASL_SSL). TLS uses a throwaway CA and a broker certificate for 127.0.0.1/localhost, generated
into a temporary directory (:mod:`zurau.testing.certificates`; needs ``cryptography``) and
removed at stop; ``ca_location`` is the CA's PEM file. SASL offers PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, each user with its password for all three (the SCRAM credentials are written to
the metadata log at start). ``client_config(user)`` gives the Kafka client properties that
connect (``bootstrap.servers``, ``security.protocol``, ``ssl.ca.location``, ``sasl.*``), for
confluent-kafka, kcat and ``zurau.client.ClientConfig.from_props`` alike.

``EmbeddedCluster(3, security="SASL_SSL", users=...)`` secures a cluster the same way, and the
traffic between its nodes too: replication, transaction markers, Raft and broker heartbeats run
over the same protocol, the nodes logging in with PLAIN as the internal user ``zurau-broker``
(a random password, added to ``super.users`` so that ACLs never lock the brokers out).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.edge_service import run_in_thread
from zurau.protocol.messages import AlterUserScramCredentialsRequestUpsertions
from zurau.protocol.sasl import ScramMechanism
from zurau.protocol.sasl.scram import MIN_ITERATIONS, salted_password

_STOP_GRACE = 5.0  # seconds to wait for the broker's own tasks to finish after stop()
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SCRAM = (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)


def _security_protocol(security: str) -> str:
    """``security`` upper-cased; ValueError unless it is one of :data:`SECURITY_PROTOCOLS`."""
    security = security.upper()
    if security not in SECURITY_PROTOCOLS:
        raise ValueError(f"security must be one of {', '.join(SECURITY_PROTOCOLS)}, not {security}")
    return security


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def secure_props(security: str, users: Mapping[str, str], tls_dir: Path | None) -> dict[str, str]:
    """Broker configs of one listener named after ``security``; ``tls_dir`` receives the
    generated CA (``ca.pem``... see :mod:`zurau.testing.certificates`) when TLS is on."""
    props = {
        "listeners": f"{security}://127.0.0.1:0",
        "listener.security.protocol.map": f"{security}:{security}",
        "inter.broker.listener.name": security,
    }
    if security.endswith("SSL"):
        from zurau.testing.certificates import TestCA

        assert tls_dir is not None
        server = TestCA(tls_dir, "Zurau Embedded CA").issue("broker", "localhost", server=True)
        props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(server.keystore)})
    if security.startswith("SASL_"):
        if not users:
            raise ValueError(f"security={security} needs users={{name: password}}")
        props["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
        props[f"listener.name.{security.lower()}.plain.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f"user_{name}={_jaas_quote(pw)}" for name, pw in users.items()) + ";"
        )
    return props


#: The user the nodes of a secured EmbeddedCluster log in to each other as.
INTERNAL_USER = "zurau-broker"


def cluster_secure_props(
    security: str, users: Mapping[str, str], tls_dir: Path | None, internal_password: str, super_users: str | None
) -> dict[str, str]:
    """Security configs shared by every node of a secured :class:`EmbeddedCluster`: the client
    listener (named after ``security``) is also the inter-broker listener, and the controller
    listener uses the same protocol; the nodes authenticate to both as :data:`INTERNAL_USER`."""
    props = secure_props(security, users, tls_dir)
    del props["listeners"]
    props["listener.security.protocol.map"] = f"{security}:{security},CONTROLLER:{security}"
    if tls_dir is not None:
        props["ssl.truststore.type"] = "PEM"
        props["ssl.truststore.location"] = str(tls_dir / "zurau-embedded-ca.pem")
    if security.startswith("SASL_"):
        accounts = {**users, INTERNAL_USER: internal_password}
        login = f"username={_jaas_quote(INTERNAL_USER)} password={_jaas_quote(internal_password)} "
        module = "org.apache.kafka.common.security.plain.PlainLoginModule required "
        users_option = " ".join(f"user_{name}={_jaas_quote(pw)}" for name, pw in accounts.items())
        for listener in (security, "CONTROLLER"):
            props[f"listener.name.{listener.lower()}.plain.sasl.jaas.config"] = module + login + users_option + ";"
        props["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN"
        props["sasl.mechanism.inter.broker.protocol"] = "PLAIN"
        props["sasl.mechanism.controller.protocol"] = "PLAIN"
        props["super.users"] = ";".join(filter(None, (super_users, f"User:{INTERNAL_USER}")))
    return props


def broker_props(data_dir: Path, overrides: Mapping[str, Any]) -> dict[str, str]:
    """Broker properties: embedded defaults, then ``overrides`` (``a_b_c`` -> ``a.b.c``)."""
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        "log.retention.check.interval.ms": "1000",
    }
    for key, value in overrides.items():
        name = key if "." in key else key.replace("_", ".")
        props[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return props


def _is_broker_task(task: asyncio.Task[Any]) -> bool:
    """A task running broker-side code (not the caller's, not Zurau's client)."""
    coro = task.get_coro()
    frame = getattr(coro, "cr_frame", None)
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return module.startswith("zurau.") and not module.startswith(("zurau.client", "zurau.embedded"))


class EmbeddedBroker:
    """One broker in this process (see the module docstring for the two modes)."""

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        security: str = "PLAINTEXT",
        users: Mapping[str, str] | None = None,
        sasl_mechanism: str = "PLAIN",
        **configs: Any,
    ) -> None:
        """``security``/``users``: see the module docstring; ``sasl_mechanism`` is the one
        :meth:`client_config` names (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)."""
        security = self.security = _security_protocol(security)
        self.users = dict(users or {})
        self.sasl_mechanism = sasl_mechanism.upper()
        self._tls_dir: Path | None = None
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="zurau-"))
        try:
            # One broker: its internal topics have one replica, as Kafka's single-node configs set,
            # instead of warning that 3 were configured (overridable like any config).
            single: dict[str, Any] = {
                "offsets.topic.replication.factor": 1,
                "transaction.state.log.replication.factor": 1,
                "share.coordinator.state.topic.replication.factor": 1,
                "share.coordinator.state.topic.min.isr": 1,
            }
            if security != "PLAINTEXT":
                if security.endswith("SSL"):
                    self._tls_dir = Path(tempfile.mkdtemp(prefix="zurau-tls-"))
                single.update(secure_props(security, self.users, self._tls_dir))
            self.config = BrokerConfig.from_props(broker_props(self.data_dir, {**single, **configs}))
        except BaseException:
            self._cleanup_dir()
            raise
        self.broker = Broker(self.config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop_event: asyncio.Event | None = None
        self._async_running = False

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self.broker.started else "not running"
        return f"EmbeddedBroker({where}, data_dir={str(self.data_dir)!r})"

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        return self.broker.bootstrap_servers

    def listener_address(self, listener: str) -> str:
        """``host:port`` of one named listener (e.g. ``SASL_SSL`` of a broker with several)."""
        host, port = self.broker.advertised_for(listener.upper()) or ("", 0)
        if not port:
            raise KeyError(f"no client listener named {listener}")
        return f"{host}:{port}"

    @property
    def port(self) -> int:
        return self.broker.advertised[1]

    @property
    def ca_location(self) -> str | None:
        """The generated CA certificate (PEM) that TLS clients trust; None without TLS."""
        if self._tls_dir is None:
            return None
        return str(self._tls_dir / "zurau-embedded-ca.pem")

    def client_config(self, user: str | None = None) -> dict[str, str]:
        """Kafka client properties that reach this broker as ``user`` (default: the first user)."""
        return _client_config(self.bootstrap_servers, self.security, self.ca_location, self.sasl_mechanism,
                              self.users, user)

    async def _start_broker(self) -> None:
        """Start the broker, then store the users' SCRAM credentials (secured brokers)."""
        await self.broker.start()
        await _store_scram_credentials(self.broker, self.security, self.users)

    @property
    def running(self) -> bool:
        return self.broker.started

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` of a broker started with a metrics listener
        (``metrics_http_listener="http://127.0.0.1:0"``), else None. In async mode, scrape it
        from another thread: the scrape reads the broker's state on its event loop."""
        return self.broker.metrics_url

    # ------------------------------------------------------------------ sync mode
    def start(self) -> EmbeddedBroker:
        """Start on a background thread with its own event loop; returns once it listens."""
        if self._thread is not None or self._async_running:
            raise RuntimeError("this EmbeddedBroker is already running")
        try:
            self._loop, self._thread, self._stop_event = run_in_thread(
                "zurau-embedded-broker", self._start_broker, self._stop_broker
            )
        except BaseException:
            self._cleanup_dir()
            raise
        return self

    def stop(self) -> None:
        """Stop the broker, join its thread and remove a temporary data dir (idempotent)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        stop_event = self._stop_event
        if stop_event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop may have just finished
                loop.call_soon_threadsafe(stop_event.set)
        thread.join()
        self._thread = None
        self._loop = None
        self._cleanup_dir()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (awaiting it if it returns a coroutine) on the broker's loop (sync mode)."""
        if self._loop is None:
            raise RuntimeError("call() needs a broker started with start() or `with`")
        fut = asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop)
        return fut.result()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ async mode
    async def __aenter__(self) -> EmbeddedBroker:
        if self._thread is not None or self._async_running:
            raise RuntimeError("this EmbeddedBroker is already running")
        try:
            await self._start_broker()
        except BaseException:
            await self._stop_broker()
            self._cleanup_dir()
            raise
        self._async_running = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._stop_broker()
        finally:
            self._async_running = False
            self._cleanup_dir()

    # ------------------------------------------------------------------ topics
    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> str:
        """Create a topic directly on the broker (no client); returns its name.

        Sync mode: callable from any thread. Async mode: call it from the broker's loop.
        """
        args = (name, partitions, 1, dict(configs or {}))
        if self._loop is not None:
            self.call(self.broker.create_topic, *args)
        else:
            self.broker.create_topic(*args)
        return name

    def delete_topic(self, name: str) -> None:
        """Delete a topic directly on the broker (UnknownTopicOrPartitionError if absent)."""
        if self._loop is not None:
            self.call(self.broker.delete_topic, name)
        else:
            self.broker.delete_topic(name)

    # ------------------------------------------------------------------ internals
    async def _stop_broker(self) -> None:
        """Stop the broker and wait (bounded) for every task it started to finish."""
        try:
            await self.broker.stop()
        finally:
            await self._wait_for_broker_tasks()

    async def _wait_for_broker_tasks(self) -> None:
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _STOP_GRACE
        while True:
            # connection_lost (which cancels a connection's handler tasks) runs a loop turn or
            # two after the transports are closed.
            await asyncio.sleep(0)
            tasks = [t for t in asyncio.all_tasks() if t is not current and _is_broker_task(t)]
            if (not tasks and not self.broker.connections) or loop.time() > deadline:
                break
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks, timeout=0.05) if tasks else await asyncio.sleep(0.001)

    def _cleanup_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self._tls_dir is not None:
            shutil.rmtree(self._tls_dir, ignore_errors=True)


def _client_config(
    bootstrap: str, security: str, ca_location: str | None, mechanism: str, users: Mapping[str, str], user: str | None
) -> dict[str, str]:
    props = {"bootstrap.servers": bootstrap, "security.protocol": security}
    if ca_location is not None:
        props["ssl.ca.location"] = ca_location
    if security.startswith("SASL_"):
        name = user if user is not None else next(iter(users))
        props.update({"sasl.mechanism": mechanism, "sasl.username": name, "sasl.password": users[name]})
    return props


async def _store_scram_credentials(broker: Broker, security: str, users: Mapping[str, str]) -> None:
    """Each user's SCRAM-SHA-256 and -512 credentials, written through the (active) controller."""
    upsertions: list[AlterUserScramCredentialsRequestUpsertions] = []
    for name, password in users.items() if security.startswith("SASL_") else ():
        for mech in _SCRAM:
            salt = secrets.token_bytes(32)
            upsertions.append({"name": name, "mechanism": int(mech), "iterations": MIN_ITERATIONS, "salt": salt,
                               "salted_password": salted_password(mech, password, salt, MIN_ITERATIONS)})
    if upsertions:
        results = await broker.controller.alter_user_scram_credentials([], upsertions)
        failed = [r for r in results if r["error_code"]]
        if failed:
            raise RuntimeError(f"cannot store SCRAM credentials: {failed}")


async def _call(fn: Any, *args: Any) -> Any:
    result = fn(*args)
    if asyncio.iscoroutine(result):
        result = await result
    return result


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports that were free a moment ago (for listeners other nodes must know
    before they start, such as the controller quorum's).

    They are drawn from just below the kernel's ephemeral range: a port from that range, free
    when chosen, can be taken by any outgoing connection or ``bind(0)`` of this or another test
    before the listener binds it; ports below the range are only ever taken by explicit binds."""
    import random
    import socket

    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    candidates = list(range(max(1024, low - 12_000), low))
    random.shuffle(candidates)
    socks: list[socket.socket] = []
    try:
        for port in candidates:
            if len(socks) == count:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        while len(socks) < count:  # no room below the range: fall back to ephemeral ports
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class EmbeddedCluster:
    """A KRaft cluster of ``nodes`` combined (broker + controller) nodes inside this process, all on
    one event loop: the in-process twin of ``zurau cluster start``, for test suites.

    Node ``i`` (1-based) has ``node.id`` i, a client listener on an ephemeral 127.0.0.1 port and a
    controller listener on a port chosen before start (the voters must know each other). Data lives
    in ``<data_dir>/node-i``, formatted with one new cluster id. Use ``with EmbeddedCluster(3) as c``
    (background thread) or ``async with`` (the caller's loop). :meth:`stop_node` and
    :meth:`start_node` stop and restart one node (a clean stop; a process kill needs real
    processes, see ``zurau.testing``)."""

    def __init__(
        self,
        nodes: int = 3,
        data_dir: str | Path | None = None,
        node_configs: Mapping[int, Mapping[str, Any]] | None = None,
        *,
        security: str = "PLAINTEXT",
        users: Mapping[str, str] | None = None,
        sasl_mechanism: str = "PLAIN",
        **configs: Any,
    ) -> None:
        """``configs`` apply to every node; ``node_configs`` maps a node id to its own overrides
        (e.g. ``{1: {"broker.rack": "a"}}``); ``security``, ``users`` and ``sasl_mechanism`` as
        for :class:`EmbeddedBroker` (see the module docstring)."""
        from zurau.metadata.metadata_log import MetaProperties, format_dirs
        from zurau.metadata.topic_names import new_cluster_id

        if nodes < 1:
            raise ValueError("a cluster needs at least one node")
        security = self.security = _security_protocol(security)
        self.users = dict(users or {})
        self.sasl_mechanism = sasl_mechanism.upper()
        self._tls_dir = Path(tempfile.mkdtemp(prefix="zurau-tls-")) if security.endswith("SSL") else None
        self._internal_password = secrets.token_urlsafe(24)
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="zurau-cluster-"))
        self.cluster_id = new_cluster_id()
        ports = free_ports(nodes)
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(ports, start=1))
        self.configs: list[BrokerConfig] = []
        try:
            secured: dict[str, str] = {}
            if security != "PLAINTEXT":
                super_users = configs.pop("super.users", configs.pop("super_users", None))
                secured = cluster_secure_props(
                    security, self.users, self._tls_dir, self._internal_password, super_users
                )
            for i, port in enumerate(ports, start=1):
                node_dir = self.data_dir / f"node-{i}"
                props = broker_props(node_dir, {**secured, **configs, **(node_configs or {}).get(i, {})})
                props.update(
                    {
                        "process.roles": "broker,controller",
                        "node.id": str(i),
                        "controller.quorum.voters": voters,
                        "listeners": f"{security}://127.0.0.1:0,CONTROLLER://127.0.0.1:{port}",
                        "controller.listener.names": "CONTROLLER",
                        "listener.security.protocol.map": secured.get(
                            "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
                        ),
                    }
                )
                self.configs.append(BrokerConfig.from_props(props))
                format_dirs([node_dir], MetaProperties(self.cluster_id, i), ignore_formatted=False)
        except BaseException:
            self._cleanup_dir()
            raise
        self.brokers: list[Broker | None] = [None] * nodes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop_event: asyncio.Event | None = None

    def __repr__(self) -> str:
        return f"EmbeddedCluster({len(self.brokers)} nodes, data_dir={str(self.data_dir)!r})"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers if b is not None and b.started)

    def node(self, node_id: int) -> Broker:
        b = self.brokers[node_id - 1]
        if b is None:
            raise RuntimeError(f"node {node_id} is not running")
        return b

    @property
    def controller_id(self) -> int:
        """The active controller's node id as the running nodes see it (-1 if none)."""
        for b in self.brokers:
            if b is not None and b.kraft is not None and b.kraft.channel.active:
                return b.node_id
        return -1

    # ------------------------------------------------------------------ async
    async def start_node(self, node_id: int) -> Broker:
        """Start (or restart) node ``node_id`` on the running loop; returns once it serves clients."""
        if self.brokers[node_id - 1] is not None:
            raise RuntimeError(f"node {node_id} is already running")
        broker = Broker(self.configs[node_id - 1])
        await broker.start()
        self.brokers[node_id - 1] = broker
        return broker

    async def stop_node(self, node_id: int) -> None:
        broker = self.brokers[node_id - 1]
        self.brokers[node_id - 1] = None
        if broker is not None:
            await broker.stop()

    async def _start_all(self) -> None:
        results = await asyncio.gather(
            *(self.start_node(i) for i in range(1, len(self.brokers) + 1)), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self._stop_all()
            raise errors[0]
        await self.wait_for_brokers()
        first = next(b for b in self.brokers if b is not None)
        await _store_scram_credentials(first, self.security, self.users)

    @property
    def ca_location(self) -> str | None:
        """The generated CA certificate (PEM) that TLS clients trust; None without TLS."""
        return None if self._tls_dir is None else str(self._tls_dir / "zurau-embedded-ca.pem")

    def client_config(self, user: str | None = None) -> dict[str, str]:
        """Kafka client properties that reach the cluster as ``user`` (default: the first user)."""
        return _client_config(self.bootstrap_servers, self.security, self.ca_location, self.sasl_mechanism,
                              self.users, user)

    async def wait_for_brokers(self, timeout: float = 30.0) -> None:
        """Until every running node's metadata lists every running node as a live broker."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        running = [b for b in self.brokers if b is not None]
        want = sorted(b.node_id for b in running)
        while not all(sorted(x.id for x in b.image.live_brokers()) == want for b in running):
            if loop.time() > deadline:
                raise TimeoutError(f"not every node saw brokers {want} within {timeout} s")
            await asyncio.sleep(0.01)

    async def _stop_all(self) -> None:
        # Every broker asks for its controlled shutdown while the quorum is still whole; then
        # all stop (stopped one by one, the last ones would wait for a quorum that is gone).
        await asyncio.gather(*(b.controlled_shutdown() for b in self.brokers if b is not None), return_exceptions=True)
        await asyncio.gather(
            *(self.stop_node(i) for i in range(1, len(self.brokers) + 1)), return_exceptions=True
        )

    async def __aenter__(self) -> EmbeddedCluster:
        try:
            await self._start_all()
        except BaseException:
            self._cleanup_dir()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._stop_all()
        finally:
            self._cleanup_dir()

    async def wait_for_topic(self, name: str, timeout: float = 30.0) -> None:
        """Until every running node's metadata image has ``name``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not all(b.image.get(name) is not None for b in self.brokers if b is not None):
            if loop.time() > deadline:
                raise TimeoutError(f"topic {name!r} did not reach every node within {timeout} s")
            await asyncio.sleep(0.01)

    async def create_topic_async(
        self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> str:
        from zurau.client.admin import AdminClient, NewTopic
        from zurau.client.config import ClientConfig

        props = _client_config(self.bootstrap_servers, self.security, self.ca_location, "PLAIN",
                               {INTERNAL_USER: self._internal_password}, INTERNAL_USER)
        async with AdminClient(ClientConfig.from_props(props)) as admin:
            results = await admin.create_topics([NewTopic(name, partitions, 1, dict(configs or {}))])
        err = results.get(name)
        if err is not None:
            raise err
        await self.wait_for_topic(name)
        return name

    # ------------------------------------------------------------------ sync
    def start(self) -> EmbeddedCluster:
        """Start every node on a background thread with its own event loop; returns once every
        node serves clients and sees every other as a live broker."""
        if self._thread is not None:
            raise RuntimeError("this EmbeddedCluster is already running")
        try:
            self._loop, self._thread, self._stop_event = run_in_thread(
                "zurau-embedded-cluster", self._start_all, self._stop_all
            )
        except BaseException:
            self._cleanup_dir()
            raise
        return self

    def stop(self) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if self._stop_event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._stop_event.set)
        thread.join()
        self._thread = None
        self._loop = None
        self._cleanup_dir()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (awaiting a coroutine) on the cluster's loop (sync mode)."""
        if self._loop is None:
            raise RuntimeError("call() needs a cluster started with start() or `with`")
        return asyncio.run_coroutine_threadsafe(_call(fn, *args), self._loop).result()

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> str:
        """Create a topic through the cluster's controller and wait until every node has it."""
        return self.call(self.create_topic_async, name, partitions, configs)

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _cleanup_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self._tls_dir is not None:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
