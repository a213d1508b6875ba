"""A KRaft cluster of real processes on 127.0.0.1, for fault tests and benchmarks: nodes that can
be killed with SIGKILL and restarted over their data.

Three shapes: ``ClusterProcesses(root, controllers=3)`` runs three combined (broker + controller)
nodes; ``ClusterProcesses(root, controllers=3, brokers=3)`` runs three dedicated controllers
(ids 1..3) and three brokers (ids 4..6); ``ClusterProcesses(root, controllers=3, brokers=1,
combined=True)`` runs three combined nodes (ids 1..3) and one broker-only node (id 4). Each node
has ``root/node-<id>`` with its ``server.properties`` and data, formatted through the CLI
(``zurau storage format``) with one cluster id, and logs to ``root/node-<id>.log``.
:meth:`ClusterProcesses.start` returns once every broker serves clients (it has been registered
and unfenced) and every controller listens.

Nodes that join later: ``deferred=(4,)`` names nodes that are configured and formatted but not
launched by :meth:`~ClusterProcesses.start` (nor by ``with``); the test launches one when it wants
it to join, ``cluster.nodes[4].launch(); cluster.nodes[4].wait_ready(60)`` (a deferred node must
be a broker only: the controller quorum is whole from the start). Until then it is not running,
so :attr:`~ClusterProcesses.bootstrap_servers` leaves it out.

Faults: :meth:`ClusterProcesses.kill` (``kill -9``), :meth:`~ClusterProcesses.pause` /
:meth:`~ClusterProcesses.resume` (SIGSTOP / SIGCONT: a process that stops answering but keeps its
sockets and memory, like a long GC pause or a frozen VM), and, with ``proxy_inter_broker=True``
and/or ``proxy_controller=True``, network faults through :attr:`ClusterProcesses.network` (a
:class:`~zurau.testing.fault_proxy.FaultNetwork` with one proxy per directed link):

* ``proxy_inter_broker``: every broker listens on one replication listener per broker
  (``REPLICATION_FROM_<i>``, real ports) and advertises, for each other broker ``i``, the port of
  the proxy on link ``(i, this broker, "replication")``; broker ``i`` sets
  ``inter.broker.listener.name=REPLICATION_FROM_<i>``, so its follower fetchers dial every leader
  through its own links. Clients keep the ``PLAINTEXT`` listener, never proxied.
* ``proxy_controller``: each node's ``controller.quorum.voters`` names, for every other voter
  ``c``, the port of the proxy on link ``(this node, c, "controller")`` (its own entry stays its
  real port): Raft traffic and broker heartbeats to the active controller go through the links.

So ``cluster.network.isolate(n)`` cuts node ``n`` off both ways while clients still reach it.
Without these options the configs are exactly as before.

Secured: ``security="SASL_SSL"`` (or SSL, SASL_PLAINTEXT) with ``users={name: password}`` makes
the client listener (named after the protocol) also the inter-broker listener and gives the
controller listener the same protocol, so every connection between nodes is secured too. TLS uses
a throwaway CA in ``root/tls`` (:attr:`ClusterProcesses.ca_location`) and one certificate for
127.0.0.1/localhost; SASL offers PLAIN to the users and the nodes log in to each other with PLAIN
as ``zurau-broker`` (a random password, a super user). :meth:`ClusterProcesses.client_config`
gives a client's properties. Not combinable with the proxies.

Like the rest of :mod:`zurau.testing`, this module runs Zurau only as processes and imports none
of its code.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from zurau.testing.broker_process import HOST, ServerProcess
from zurau.testing.fault_proxy import FaultNetwork

#: Link kinds of :attr:`ClusterProcesses.network`.
REPLICATION = "replication"
CONTROLLER = "controller"


#: The user the nodes of a secured cluster log in to each other as.
INTERNAL_USER = "zurau-broker"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def replication_listener(node_id: int) -> str:
    """The listener broker ``node_id`` dials other brokers' replication through (proxied links)."""
    return f"REPLICATION_FROM_{node_id}"


def random_cluster_id() -> str:
    """A cluster id as ``kafka-storage.sh random-uuid`` prints it (22 characters of base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class NodeProcess(ServerProcess):
    """One node of the cluster: ``port`` is its client port (a broker) or controller port."""

    def __init__(self, node_id: int, config_path: Path, port: int, controller_port: int | None, log_path: Path) -> None:
        super().__init__(port, log_path)
        self.node_id = node_id
        self.config_path = config_path
        self.controller_port = controller_port
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets but runs no code until :meth:`resume`."""
        assert self.proc is not None and self.proc.poll() is None, f"node {self.node_id} is not running"
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT after :meth:`pause` (a no-op when not paused)."""
        if self.paused and self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        """kill -9 (also of a paused process: SIGKILL needs no SIGCONT)."""
        super().kill()
        self.paused = False

    def command(self) -> list[str]:
        return [sys.executable, "-m", "zurau.cli.main", "broker", "start", "--config", str(self.config_path)]

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class ClusterProcesses:
    """See the module docstring."""

    def __init__(
        self,
        root: Path,
        controllers: int = 3,
        brokers: int = 0,
        *,
        proxy_inter_broker: bool = False,
        proxy_controller: bool = False,
        security: str = "PLAINTEXT",
        users: dict[str, str] | None = None,
        format_args: Sequence[str] = (),
        combined: bool | None = None,
        deferred: Sequence[int] = (),
        **overrides: str,
    ) -> None:
        """``format_args``: extra arguments of every node's ``zurau storage format`` (e.g.
        ``["--add-scram", "SCRAM-SHA-512=[name=broker,password=broker-secret]"]``).
        ``combined``: the controllers are brokers too (default: only when ``brokers`` is 0);
        ``deferred``: ids of broker-only nodes :meth:`start` does not launch (module docstring)."""
        self.root = root
        self.deferred = frozenset(deferred)
        self.format_args = list(format_args)
        self.security = security.upper()
        self.users = dict(users or {})
        if self.security != "PLAINTEXT" and (proxy_inter_broker or proxy_controller):
            raise ValueError("a secured cluster runs without the fault proxies")
        if self.security.startswith("SASL_") and not self.users:
            raise ValueError(f"security={self.security} needs users={{name: password}}")
        self.ca_location: str | None = None
        self.network: FaultNetwork | None = FaultNetwork() if proxy_inter_broker or proxy_controller else None
        self.cluster_id = random_cluster_id()
        # Ports chosen for the nodes stay bound (not listening) until every config is written, so
        # that neither another choice nor a proxy's own ephemeral port can land on one of them.
        self._held: list[socket.socket] = []
        try:
            self._configure(controllers, brokers, combined, proxy_inter_broker, proxy_controller, overrides)
        except BaseException:
            if self.network is not None:
                self.network.close()
            raise
        finally:
            for s in self._held:
                s.close()
            self._held.clear()

    def _reserve_port(self) -> int:
        """A free port on 127.0.0.1, held bound until the configuration is done."""
        s = socket.socket()
        s.bind((HOST, 0))
        self._held.append(s)
        return int(s.getsockname()[1])

    def _configure(
        self,
        controllers: int,
        brokers: int,
        combined: bool | None,
        proxy_inter_broker: bool,
        proxy_controller: bool,
        overrides: dict[str, str],
    ) -> None:
        """Write and format every node's config (and create the proxies they name)."""
        root = self.root
        self.combined = brokers == 0 if combined is None else combined
        ids = list(range(1, controllers + brokers + 1))
        self.controller_ids = ids[:controllers]
        self.broker_ids = (self.controller_ids if self.combined else []) + ids[controllers:]
        misplaced = sorted(i for i in self.deferred if i not in ids or i in self.controller_ids)
        if misplaced:
            raise ValueError(f"deferred nodes {misplaced} are not broker-only nodes of this cluster")
        controller_ports = {i: self._reserve_port() for i in self.controller_ids}
        client_ports = {i: self._reserve_port() for i in self.broker_ids}
        # Replication listeners, when proxied: broker j listens on repl_ports[i][j] for broker i.
        repl_ports = (
            {i: {j: self._reserve_port() for j in self.broker_ids} for i in self.broker_ids} if proxy_inter_broker else {}
        )
        advertised_repl: dict[int, list[str]] = {j: [] for j in self.broker_ids}
        for i, targets in repl_ports.items():
            for j, real in targets.items():
                port = real if i == j else self._proxy(i, j, REPLICATION, real)
                advertised_repl[j].append(f"{replication_listener(i)}://{HOST}:{port}")

        def voters_for(node_id: int) -> str:
            def port(c: int) -> int:
                real = controller_ports[c]
                return self._proxy(node_id, c, CONTROLLER, real) if proxy_controller and c != node_id else real

            return ",".join(f"{c}@{HOST}:{port(c)}" for c in controller_ports)

        client = self.security  # the client listener's name: its protocol
        protocol_map = f"{client}:{client},CONTROLLER:{client}" + "".join(
            f",{replication_listener(i)}:PLAINTEXT" for i in repl_ports
        )
        secured = self._security_props()
        self.nodes: dict[int, NodeProcess] = {}
        for node_id in ids:
            is_controller = node_id in controller_ports
            is_broker = node_id in client_ports
            roles = ",".join(r for r, on in (("broker", is_broker), ("controller", is_controller)) if on)
            listeners = []
            if is_broker:
                listeners.append(f"{client}://{HOST}:{client_ports[node_id]}")
                listeners += [f"{replication_listener(i)}://{HOST}:{repl_ports[i][node_id]}" for i in repl_ports]
            if is_controller:
                listeners.append(f"CONTROLLER://{HOST}:{controller_ports[node_id]}")
            props = {
                "process.roles": roles,
                "node.id": str(node_id),
                "controller.quorum.voters": voters_for(node_id),
                "listeners": ",".join(listeners),
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": protocol_map,
                "log.dirs": str(root / f"node-{node_id}"),
                **secured,
                **overrides,
            }
            if is_broker:
                props["advertised.listeners"] = ",".join(
                    [f"{client}://{HOST}:{client_ports[node_id]}", *advertised_repl[node_id]]
                )
                if proxy_inter_broker:
                    props["inter.broker.listener.name"] = replication_listener(node_id)
            config_path = root / f"node-{node_id}.properties"
            config_path.parent.mkdir(parents=True, exist_ok=True)
            config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")
            port = client_ports[node_id] if is_broker else controller_ports[node_id]
            self.nodes[node_id] = NodeProcess(
                node_id, config_path, port, controller_ports.get(node_id), root / f"node-{node_id}.log"
            )
            command = [sys.executable, "-m", "zurau.cli.main", "storage", "format"]
            command += ["--cluster-id", self.cluster_id, "--config", str(config_path), *self.format_args]
            formatted = subprocess.run(command, capture_output=True, text=True)
            if formatted.returncode != 0:
                raise RuntimeError(
                    f"zurau storage format failed for node {node_id} ({config_path}): "
                    f"{formatted.stderr.strip() or formatted.stdout.strip()}"
                )

    def _security_props(self) -> dict[str, str]:
        """Configs shared by every node of a secured cluster (see the module docstring)."""
        security = self.security
        if security == "PLAINTEXT":
            return {}
        props = {"inter.broker.listener.name": security}
        if security.endswith("SSL"):
            from zurau.testing.certificates import TestCA

            ca = TestCA(self.root / "tls", "Zurau Cluster CA")
            node = ca.issue("node", "localhost", server=True)
            self.ca_location = str(ca.cert_path)
            props.update({
                "ssl.keystore.type": "PEM", "ssl.keystore.location": str(node.keystore),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_location,
            })
        if security.startswith("SASL_"):
            password = secrets.token_urlsafe(24)
            accounts = {**self.users, INTERNAL_USER: password}
            entry = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f"username={_quote(INTERNAL_USER)} password={_quote(password)} "
                + " ".join(f"user_{name}={_quote(pw)}" for name, pw in accounts.items()) + ";"
            )
            props.update({
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "sasl.mechanism.controller.protocol": "PLAIN",
                f"listener.name.{security.lower()}.plain.sasl.jaas.config": entry,
                "listener.name.controller.plain.sasl.jaas.config": entry,
                "super.users": f"User:{INTERNAL_USER}",
            })
        return props

    def client_config(self, user: str | None = None) -> dict[str, str]:
        """Kafka client properties reaching the running brokers as ``user`` (default: the first)."""
        props = {"bootstrap.servers": self.bootstrap_servers, "security.protocol": self.security}
        if self.ca_location is not None:
            props["ssl.ca.location"] = self.ca_location
        if self.security.startswith("SASL_"):
            name = user if user is not None else next(iter(self.users))
            props.update({"sasl.mechanism": "PLAIN", "sasl.username": name, "sasl.password": self.users[name]})
        return props

    def _proxy(self, source: int, destination: int, kind: str, target_port: int) -> int:
        assert self.network is not None
        return self.network.add(source, destination, kind, target_port).port

    @property
    def bootstrap_servers(self) -> str:
        """Every running broker's client address."""
        return ",".join(self.nodes[i].bootstrap_servers for i in self.broker_ids if self.nodes[i].running)

    def start(self, timeout: float = 60.0) -> Self:
        """Launch every node but the deferred ones, and wait until each is ready."""
        starting = [node for node_id, node in self.nodes.items() if node_id not in self.deferred]
        for node in starting:
            node.launch()
        try:
            for node in starting:
                node.wait_ready(timeout)
        except BaseException:
            self.kill_all()
            raise
        return self

    def kill(self, node_id: int) -> None:
        """kill -9 one node."""
        self.nodes[node_id].kill()

    def pause(self, node_id: int) -> None:
        """SIGSTOP one node (see :meth:`NodeProcess.pause`)."""
        self.nodes[node_id].pause()

    def resume(self, node_id: int) -> None:
        """SIGCONT one paused node."""
        self.nodes[node_id].resume()

    def restart(self, node_id: int, timeout: float = 60.0) -> None:
        node = self.nodes[node_id]
        node.kill()
        node.launch()
        node.wait_ready(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to every node at once (brokers shut down in a controlled way while the quorum
        lasts), then wait for each."""
        for node in self.nodes.values():
            node.resume()  # a SIGTERM to a stopped process would wait for its SIGCONT
            if node.running:
                assert node.proc is not None
                node.proc.terminate()
        deadline = time.monotonic() + timeout
        for node in self.nodes.values():
            proc = node.proc
            if proc is None:
                continue
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.kill()
            node.proc = None

    def kill_all(self) -> None:
        for node in self.nodes.values():
            node.kill()

    def close(self, timeout: float = 30.0) -> None:
        """:meth:`stop`, then close the proxies of :attr:`network` (the cluster cannot start again)."""
        try:
            self.stop(timeout)
        finally:
            if self.network is not None:
                self.network.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CONTROLLER", "REPLICATION", "ClusterProcesses", "NodeProcess", "random_cluster_id", "replication_listener"]
