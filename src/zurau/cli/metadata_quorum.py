"""``zurau metadata-quorum describe --status | --replication``, ``add-controller`` and
``remove-controller``: kafka-metadata-quorum.sh.

Sends DescribeQuorum to any broker or controller of the cluster (a node that is not the quorum's
leader asks the leader) and prints Kafka's layout::

    ClusterId:              <id>
    LeaderId:               1
    LeaderEpoch:            3
    HighWatermark:          120
    MaxFollowerLag:         0
    MaxFollowerLagTimeMs:   0
    CurrentVoters:          [{"id": 1, "endpoints": ["CONTROLLER://127.0.0.1:9093"]}, ...]
    CurrentObservers:       [{"id": 4}]

and for ``--replication`` one row per replica: NodeId, LogEndOffset, Lag, LastFetchTimestamp,
LastCaughtUpTimestamp, Status (Leader, Follower or Observer).

``add-controller --command-config controller.properties`` adds that (formatted, running) controller
to a dynamic quorum's voters; ``remove-controller --controller-id N --controller-directory-id D``
removes one (KIP-853). Both retry while the quorum has no leader or another change is in flight.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import BootstrapOption, CommandConfigOption, client_config, run
from zurau.cli.output import print_lines, print_table

app = typer.Typer(help="Describe the KRaft metadata quorum.", no_args_is_help=True)

_METADATA_TOPIC = "__cluster_metadata"


async def _describe(cfg: Any) -> tuple[str, dict[str, Any]]:
    from zurau.client.cluster import Cluster
    from zurau.protocol.api_keys import ApiKey
    from zurau.protocol.errors import for_code

    cluster, _owned = Cluster.of(cfg)
    try:
        await cluster.bootstrap()
        conn = await cluster.any_connection()
        body = {"topics": [{"topic_name": _METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
        resp = await conn.request(ApiKey.DESCRIBE_QUORUM, body)
        cluster_resp = await conn.request(ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False})
    finally:
        await cluster.close()
    if resp["error_code"]:
        raise for_code(resp["error_code"])(resp.get("error_message") or "DescribeQuorum failed")
    part = resp["topics"][0]["partitions"][0]
    if part["error_code"]:
        raise for_code(part["error_code"])(part.get("error_message") or "DescribeQuorum failed")
    return cluster_resp["cluster_id"], resp


def _endpoints(resp: dict[str, Any]) -> dict[int, list[str]]:
    return {
        n["node_id"]: [f"{li['name']}://{li['host']}:{li['port']}" for li in n["listeners"]]
        for n in resp.get("nodes") or []
    }


def status_lines(cluster_id: str, resp: dict[str, Any], now_ms: int) -> list[str]:
    part = resp["topics"][0]["partitions"][0]
    hw = part["high_watermark"]
    leader = part["leader_id"]
    followers = [v for v in part["current_voters"] if v["replica_id"] != leader]
    max_lag = max((max(0, hw - v["log_end_offset"]) for v in followers), default=0)
    lag_times = [
        now_ms - v["last_caught_up_timestamp"] if v.get("last_caught_up_timestamp", -1) >= 0 else -1 for v in followers
    ]
    max_lag_ms = max(lag_times, default=0)
    endpoints = _endpoints(resp)

    def voter(v: dict[str, Any]) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": v["replica_id"]}
        if v["replica_id"] in endpoints:
            doc["endpoints"] = endpoints[v["replica_id"]]
        return doc

    rows = [
        ("ClusterId", cluster_id),
        ("LeaderId", leader),
        ("LeaderEpoch", part["leader_epoch"]),
        ("HighWatermark", hw),
        ("MaxFollowerLag", max_lag),
        ("MaxFollowerLagTimeMs", max_lag_ms),
        ("CurrentVoters", json.dumps([voter(v) for v in part["current_voters"]])),
        ("CurrentObservers", json.dumps([{"id": o["replica_id"]} for o in part["observers"]])),
    ]
    return [f"{k + ':':<24}{v}" for k, v in rows]


def replication_rows(resp: dict[str, Any]) -> list[tuple[object, ...]]:
    part = resp["topics"][0]["partitions"][0]
    leader = part["leader_id"]
    hw = part["high_watermark"]
    rows: list[tuple[object, ...]] = []
    for status, replicas in (("Voter", part["current_voters"]), ("Observer", part["observers"])):
        for r in replicas:
            rid = r["replica_id"]
            kind = "Leader" if rid == leader else ("Follower" if status == "Voter" else "Observer")
            rows.append(
                (
                    rid,
                    r["log_end_offset"],
                    max(0, hw - r["log_end_offset"]) if rid != leader else 0,
                    r.get("last_fetch_timestamp", -1),
                    r.get("last_caught_up_timestamp", -1),
                    kind,
                )
            )
    rows.sort(key=lambda row: (0 if row[5] == "Leader" else 1 if row[5] == "Follower" else 2, row[0]))
    return rows


@app.command("describe")
def describe(
    status: bool = typer.Option(False, "--status", help="the quorum's leader, epoch, high watermark and members"),
    replication: bool = typer.Option(False, "--replication", help="each replica's log end offset and lag"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Describe the metadata quorum (exactly one of --status and --replication)."""
    import time

    if status == replication:
        raise typer.BadParameter("give exactly one of --status and --replication")
    cfg = client_config(bootstrap_server, command_config)
    cluster_id, resp = run(lambda: _describe(cfg))
    if status:
        print_lines(status_lines(cluster_id, resp, int(time.time() * 1000)))
    else:
        print_table(
            ["NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"],
            replication_rows(resp),
        )


async def _change_voters(cfg: Any, api_key: int, body: dict[str, Any]) -> None:
    """Send AddRaftVoter / RemoveRaftVoter to any node (it reaches the leader); retries while no
    leader is known or another change is in flight."""
    import asyncio

    from zurau.client.cluster import Cluster
    from zurau.protocol.errors import NotLeaderOrFollowerError, RequestTimedOutError, for_code

    cluster, _owned = Cluster.of(cfg)
    try:
        await cluster.bootstrap()
        conn = await cluster.any_connection()
        for attempt in range(20):
            resp = await conn.request(api_key, body, version=0)
            code = resp["error_code"]
            if code in (NotLeaderOrFollowerError.code, RequestTimedOutError.code) and attempt < 19:
                await asyncio.sleep(0.5)
                continue
            if code:
                raise for_code(code)(resp.get("error_message") or "the voter change failed")
            return
    finally:
        await cluster.close()


def _controller_identity(config: Path) -> tuple[int, Any, list[dict[str, Any]]]:
    """(node id, directory id, controller listeners) of the controller ``config`` describes: the
    directory id from its formatted ``metadata.log.dir``."""
    from zurau.config import BrokerConfig, ConfigError, load_properties
    from zurau.types import parse_kafka_uuid

    try:
        server = BrokerConfig.from_file(config)
        meta = server.metadata_log_dir / "meta.properties"
        text = dict(load_properties(meta)).get("directory.id") if meta.exists() else None
        if not text:
            raise ValueError(f"{meta} has no directory.id: format the controller (and start it) first")
        dir_id = parse_kafka_uuid(str(text))
    except (ConfigError, ValueError, OSError) as e:
        raise typer.BadParameter(f"{config}: {e}") from None
    names = set(server.controller_listener_names)
    listeners = [
        {"name": li.name, "host": li.host or "localhost", "port": li.port}
        for li in server.listeners
        if li.name.upper() in names
    ]
    if not server.is_controller or not listeners:
        raise typer.BadParameter(f"{config} does not describe a controller (process.roles, controller.listener.names)")
    return server.node_id, dir_id, listeners


@app.command("add-controller")
def add_controller(
    command_config: Path = typer.Option(..., "--command-config", help="the new controller's server.properties"),
    bootstrap_server: str | None = BootstrapOption,
    bootstrap_controller: str | None = typer.Option(None, "--bootstrap-controller", help="host:port of a controller"),
) -> None:
    """Add the controller that --command-config describes (formatted, running, caught up as an
    observer) to a dynamic quorum's voters (AddRaftVoter, KIP-853)."""
    from zurau.protocol.api_keys import ApiKey

    node_id, dir_id, listeners = _controller_identity(command_config)
    cfg = client_config(bootstrap_controller or bootstrap_server, None)
    body = {
        "cluster_id": None,
        "timeout_ms": 30_000,
        "voter_id": node_id,
        "voter_directory_id": dir_id,
        "listeners": listeners,
        "ack_when_committed": True,
    }
    run(lambda: _change_voters(cfg, ApiKey.ADD_RAFT_VOTER, body))
    typer.echo(f"Added controller {node_id} with directory id {_kafka_uuid(dir_id)} and endpoints: "
               + ", ".join(f"{li['name']}://{li['host']}:{li['port']}" for li in listeners))


@app.command("remove-controller")
def remove_controller(
    controller_id: int = typer.Option(..., "--controller-id", help="the voter's node id"),
    controller_directory_id: str = typer.Option(..., "--controller-directory-id", help="the voter's directory id"),
    bootstrap_server: str | None = BootstrapOption,
    bootstrap_controller: str | None = typer.Option(None, "--bootstrap-controller", help="host:port of a controller"),
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Remove a controller from a dynamic quorum's voters (RemoveRaftVoter, KIP-853)."""
    from zurau.protocol.api_keys import ApiKey
    from zurau.types import parse_kafka_uuid

    try:
        dir_id = parse_kafka_uuid(controller_directory_id)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    cfg = client_config(bootstrap_controller or bootstrap_server, command_config)
    body = {"cluster_id": None, "voter_id": controller_id, "voter_directory_id": dir_id}
    run(lambda: _change_voters(cfg, ApiKey.REMOVE_RAFT_VOTER, body))
    typer.echo(f"Removed controller {controller_id} with directory id {controller_directory_id}")


def _kafka_uuid(u: Any) -> str:
    from zurau.types import kafka_uuid

    return kafka_uuid(u)
