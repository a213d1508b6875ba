"""A KRaft cluster of real processes on 127.0.0.1, for fault tests and benchmarks: nodes that can
be killed with SIGKILL and restarted over their data.

Two shapes: ``ClusterProcesses(root, controllers=3)`` runs three combined (broker + controller)
nodes; ``ClusterProcesses(root, controllers=3, brokers=3)`` runs three dedicated controllers
(ids 1..3) and three brokers (ids 4..6). Each node has ``root/node-<id>`` with its
``server.properties`` and data, formatted through the CLI (``zurau storage format``) with one
cluster id, and logs to ``root/node-<id>.log``. :meth:`ClusterProcesses.start` returns once every
broker serves clients (it has been registered and unfenced) and every controller listens.

Like the rest of :mod:`zurau.testing`, this module runs Zurau only as processes and imports none
of its code.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Self

from zurau.testing.broker_process import HOST, ServerProcess, free_port


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

    def command(self) -> list[str]:
        return [sys.executable, "-m", "zurau.cli.main", "broker", "start", "--config", str(self.config_path)]

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class ClusterProcesses:
    """See the module docstring."""

    def __init__(self, root: Path, controllers: int = 3, brokers: int = 0, **overrides: str) -> None:
        self.root = root
        self.cluster_id = random_cluster_id()
        self.combined = brokers == 0
        ids = list(range(1, controllers + brokers + 1))
        self.controller_ids = ids[:controllers]
        self.broker_ids = self.controller_ids if self.combined else ids[controllers:]
        controller_ports = {i: free_port() for i in self.controller_ids}
        client_ports = {i: free_port() for i in self.broker_ids}
        voters = ",".join(f"{i}@{HOST}:{p}" for i, p in controller_ports.items())
        self.nodes: dict[int, NodeProcess] = {}
        for node_id in ids:
            is_controller = node_id in controller_ports
            is_broker = node_id in client_ports
            roles = ",".join(r for r, on in (("broker", is_broker), ("controller", is_controller)) if on)
            listeners = []
            if is_broker:
                listeners.append(f"PLAINTEXT://{HOST}:{client_ports[node_id]}")
            if is_controller:
                listeners.append(f"CONTROLLER://{HOST}:{controller_ports[node_id]}")
            props = {
                "process.roles": roles,
                "node.id": str(node_id),
                "controller.quorum.voters": voters,
                "listeners": ",".join(listeners),
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "log.dirs": str(root / f"node-{node_id}"),
                **overrides,
            }
            if is_broker:
                props["advertised.listeners"] = f"PLAINTEXT://{HOST}:{client_ports[node_id]}"
            config_path = root / f"node-{node_id}.properties"
            config_path.parent.mkdir(parents=True, exist_ok=True)
            config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")
            port = client_ports[node_id] if is_broker else controller_ports[node_id]
            self.nodes[node_id] = NodeProcess(
                node_id, config_path, port, controller_ports.get(node_id), root / f"node-{node_id}.log"
            )
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "zurau.cli.main",
                    "storage",
                    "format",
                    "--cluster-id",
                    self.cluster_id,
                    "--config",
                    str(config_path),
                ],
                check=True,
                capture_output=True,
            )

    @property
    def bootstrap_servers(self) -> str:
        """Every running broker's client address."""
        return ",".join(self.nodes[i].bootstrap_servers for i in self.broker_ids if self.nodes[i].running)

    def start(self, timeout: float = 60.0) -> Self:
        for node in self.nodes.values():
            node.launch()
        try:
            for node in self.nodes.values():
                node.wait_ready(timeout)
        except BaseException:
            self.kill_all()
            raise
        return self

    def kill(self, node_id: int) -> None:
        """kill -9 one node."""
        self.nodes[node_id].kill()

    def restart(self, node_id: int, timeout: float = 60.0) -> None:
        node = self.nodes[node_id]
        node.kill()
        node.launch()
        node.wait_ready(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to every node at once (brokers shut down in a controlled way while the quorum
        lasts), then wait for each."""
        for node in self.nodes.values():
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["ClusterProcesses", "NodeProcess", "random_cluster_id"]
