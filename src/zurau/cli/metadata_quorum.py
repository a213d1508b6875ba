"""``zurau metadata-quorum describe --status | --replication``: kafka-metadata-quorum.sh.

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
