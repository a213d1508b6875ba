"""``zurau cluster start --nodes N``: a local KRaft cluster of N combined (broker + controller)
nodes, one process each, for people trying Zurau as a cluster.

Node ``i`` (1..N) keeps its data and its ``server.properties`` in ``<data-dir>/node-i``; its client
listener is ``127.0.0.1:<base-port + 2(i-1)>`` and its controller listener the port after it
(defaults: 9092/9093, 9094/9095, ...), and it serves metrics on ``127.0.0.1:<9404 + i-1>`` when
that port is free at start (else on ``zurau broker start``'s default, if that is free). The first
start formats every node with one new cluster
id; later starts reuse the directories (same ids, same data). Ctrl-C (or SIGTERM) stops every node
with a controlled shutdown; a node that dies is reported and the others keep running.

``zurau cluster unregister --id N`` is kafka-cluster.sh's ``unregister``: it removes broker N's
registration from the cluster metadata (UnregisterBroker), for a broker that is gone for good.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, client_config, run
from zurau.cli.output import notice, print_error

app = typer.Typer(help="Run a local multi-node Zurau cluster; unregister brokers.", no_args_is_help=True)


def node_properties(node: int, nodes: int, data_dir: Path, base_port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """The config of node ``node`` (1-based) in a cluster of ``nodes`` combined nodes."""
    voters = ",".join(f"{i}@{host}:{base_port + 2 * (i - 1) + 1}" for i in range(1, nodes + 1))
    port = base_port + 2 * (node - 1)
    return {
        "process.roles": "broker,controller",
        "node.id": str(node),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{port + 1}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(data_dir / f"node-{node}"),
    }


METRICS_BASE_PORT = 9404


def free_metrics_listener(node: int, host: str = "127.0.0.1") -> str | None:
    """``http://host:<9404 + node-1>`` if that port can be bound now, else None."""
    import socket

    port = METRICS_BASE_PORT + node - 1
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return None
    return f"http://{host}:{port}"


def write_properties(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")


def prepare(nodes: int, data_dir: Path, base_port: int) -> list[Path]:
    """Write every node's config and format the unformatted ones with one cluster id."""
    from zurau.metadata.metadata_log import MetaProperties, find_cluster_id, format_dirs
    from zurau.metadata.topic_names import new_cluster_id

    dirs = [data_dir / f"node-{i}" for i in range(1, nodes + 1)]
    existing = {cid for d in dirs if d.exists() and (cid := find_cluster_id([d])) is not None}
    if len(existing) > 1:
        raise ValueError(f"the node directories under {data_dir} belong to different clusters: {sorted(existing)}")
    cluster_id = existing.pop() if existing else new_cluster_id()
    configs = []
    for i, d in enumerate(dirs, start=1):
        cfg_path = d / "server.properties"
        write_properties(cfg_path, node_properties(i, nodes, data_dir, base_port))
        format_dirs([d], MetaProperties(cluster_id, i), ignore_formatted=True)
        configs.append(cfg_path)
    return configs


@app.command("unregister")
def unregister(
    broker_id: int = typer.Option(..., "--id", help="the id of the broker to unregister"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Remove a broker's registration from the cluster metadata (kafka-cluster.sh unregister)."""
    from zurau.client.admin import AdminClient
    from zurau.client.errors import UnsupportedApiError
    from zurau.protocol.errors import UnsupportedVersionError

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> str:
        async with AdminClient(cfg) as admin:
            try:
                await admin.unregister_broker(broker_id)
            except (UnsupportedVersionError, UnsupportedApiError):
                return "The target cluster does not support the broker unregistration API."
        return f"Broker {broker_id} is no longer registered."

    typer.echo(run(main))


@app.command("start")
def start(
    nodes: int = typer.Option(3, "--nodes", "-n", min=1, max=9, help="number of nodes"),
    data_dir: Path = typer.Option(Path("data"), "--data-dir", help="where node-1..node-N live"),
    base_port: int = typer.Option(9092, "--base-port", help="client port of node 1; node i uses base+2(i-1) and the next"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Start N combined broker+controller nodes in the foreground (Ctrl-C stops them all)."""
    try:
        configs = prepare(nodes, data_dir, base_port)
    except (OSError, ValueError) as e:
        print_error(f"cannot prepare the cluster: {e}")
        raise typer.Exit(1) from None
    procs: list[subprocess.Popen[bytes]] = []
    for i, cfg in enumerate(configs, start=1):
        metrics = free_metrics_listener(i)
        extra = ["--override", f"metrics.http.listener={metrics}"] if metrics is not None else []
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "zurau.cli.main", "broker", "start", "--config", str(cfg), "--log-level", log_level,
                 *extra],
                stdout=open(cfg.parent / "broker.log", "ab"),  # noqa: SIM115 - owned by the child
                stderr=subprocess.STDOUT,
            )
        )
    bootstrap = ",".join(f"127.0.0.1:{base_port + 2 * i}" for i in range(nodes))
    notice(f"started {nodes} nodes (logs in {data_dir}/node-N/broker.log); bootstrap servers: {bootstrap}")
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    reported: set[int] = set()
    while not stopping:
        time.sleep(0.2)
        for i, p in enumerate(procs, start=1):
            if p.poll() is not None and i not in reported:
                reported.add(i)
                print_error(f"node {i} exited with status {p.returncode} (see {data_dir}/node-{i}/broker.log)")
        if len(reported) == len(procs):
            raise typer.Exit(1)
    notice("stopping the cluster")
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
