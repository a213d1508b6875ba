"""A dynamic KRaft quorum (KIP-853), in-process: formatted with ``zurau storage format
--standalone`` / ``--no-initial-controllers``, grown one controller at a time with AddRaftVoter sent
to any node, surviving the loss of its first controller, and shrunk with RemoveRaftVoter. Bad voter
changes are refused with Kafka's error codes and change nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zurau.app import Broker
from zurau.cli.main import app as cli
from zurau.client.admin import AdminClient, NewTopic
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.config import BrokerConfig
from zurau.embedded import free_ports
from zurau.metadata.metadata_log import directory_id, kafka_uuid
from zurau.metadata.topic_names import new_cluster_id
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    DuplicateVoterError,
    InvalidRequestError,
    UnsupportedVersionError,
    VoterNotFoundError,
)

pytestmark = pytest.mark.timeout(180)


def _write_config(tmp: Path, node_id: int, port: int, bootstrap_port: int) -> Path:
    path = tmp / f"node-{node_id}.properties"
    path.write_text(
        "\n".join(
            [
                "process.roles=broker,controller",
                f"node.id={node_id}",
                f"controller.quorum.bootstrap.servers=127.0.0.1:{bootstrap_port}",
                f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{port}",
                "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                f"log.dirs={tmp / f'data-{node_id}'}",
                "broker.session.timeout.ms=3000",
                "broker.heartbeat.interval.ms=500",
            ]
        )
        + "\n"
    )
    return path


def _format(cluster_id: str, config: Path, *flags: str) -> str:
    result = CliRunner().invoke(cli, ["storage", "format", "--cluster-id", cluster_id, "--config", str(config), *flags])
    assert result.exit_code == 0, result.output
    return result.output


async def _request(broker: Broker, api_key: int, body: dict[str, Any], version: int = 0) -> dict[str, Any]:
    host, port = broker.bootstrap_servers.split(":")
    conn = await BrokerConnection(host, int(port), client_id="test", request_timeout=40).connect()
    try:
        return await conn.request(api_key, body, version=version)
    finally:
        await conn.close()


async def _quorum(broker: Broker) -> tuple[int, list[int], list[int]]:
    body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
    resp = await _request(broker, ApiKey.DESCRIBE_QUORUM, body, version=2)
    part = resp["topics"][0]["partitions"][0]
    return (
        part["leader_id"],
        sorted(v["replica_id"] for v in part["current_voters"]),
        sorted(o["replica_id"] for o in part["observers"]),
    )


def _add_body(broker: Broker, node_id: int, controller_port: int, dir_id: uuid.UUID | None = None) -> dict[str, Any]:
    return {
        "cluster_id": None,
        "timeout_ms": 20_000,
        "voter_id": node_id,
        "voter_directory_id": dir_id or directory_id(broker.config.metadata_log_dir),
        "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": controller_port}],
    }


async def _wait(predicate: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def _create_topic(broker: Broker, name: str) -> None:
    async with AdminClient(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as admin:
        results = await admin.create_topics([NewTopic(name, 1, 1, {})])
    assert results.get(name) is None, results


async def test_a_standalone_quorum_grows_loses_its_first_controller_and_shrinks(tmp_path: Path) -> None:
    cluster_id = new_cluster_id()
    ports = free_ports(3)
    configs = [_write_config(tmp_path, i, p, ports[0]) for i, p in enumerate(ports, start=1)]
    out = _format(cluster_id, configs[0], "--standalone")
    assert "Formatting" in out
    _format(cluster_id, configs[1], "--no-initial-controllers")
    _format(cluster_id, configs[2], "--no-initial-controllers")
    brokers = [Broker(BrokerConfig.from_file(c)) for c in configs]
    try:
        await asyncio.wait_for(brokers[0].start(), 30)
        await _create_topic(brokers[0], "before")
        # The others join as observers (they find the leader through the bootstrap server).
        await asyncio.gather(*(asyncio.wait_for(b.start(), 30) for b in brokers[1:]))
        leader, voters, observers = await _quorum(brokers[1])
        assert (leader, voters) == (1, [1]) and {2, 3} <= set(observers)

        # AddRaftVoter through a node that is not the leader: passed on to it.
        resp = await _request(brokers[2], ApiKey.ADD_RAFT_VOTER, _add_body(brokers[1], 2, ports[1]))
        assert resp["error_code"] == 0, resp
        resp = await _request(brokers[0], ApiKey.ADD_RAFT_VOTER, _add_body(brokers[2], 3, ports[2]))
        assert resp["error_code"] == 0, resp
        assert (await _quorum(brokers[0]))[1] == [1, 2, 3]

        # Refused: a voter twice, a removal naming the wrong directory, a voter without one.
        resp = await _request(brokers[1], ApiKey.ADD_RAFT_VOTER, _add_body(brokers[1], 2, ports[1]))
        assert resp["error_code"] == DuplicateVoterError.code
        wrong = {"cluster_id": None, "voter_id": 3, "voter_directory_id": uuid.uuid4()}
        resp = await _request(brokers[0], ApiKey.REMOVE_RAFT_VOTER, wrong)
        assert resp["error_code"] == VoterNotFoundError.code and resp["error_message"]
        resp = await _request(brokers[0], ApiKey.ADD_RAFT_VOTER, _add_body(brokers[0], 9, 1, uuid.UUID(int=0)))
        assert resp["error_code"] == InvalidRequestError.code
        assert (await _quorum(brokers[0]))[1] == [1, 2, 3]

        # The first controller goes: 2 and 3 elect a leader and keep the cluster's metadata going.
        first_dir = directory_id(brokers[0].config.metadata_log_dir)
        await brokers[0].stop()

        async def new_leader() -> bool:
            try:
                return (await _quorum(brokers[1]))[0] in (2, 3)
            except Exception:
                return False

        await _wait(new_leader, 30)
        await _create_topic(brokers[1], "after")

        # And it leaves the voter set for good.
        body = {"cluster_id": None, "voter_id": 1, "voter_directory_id": first_dir}
        resp = await _request(brokers[2], ApiKey.REMOVE_RAFT_VOTER, body)
        assert resp["error_code"] == 0, resp
        assert (await _quorum(brokers[2]))[1] == [2, 3]
        await _create_topic(brokers[2], "after-removal")
    finally:
        for b in brokers:
            if b.started:
                await b.stop()


async def test_voter_changes_are_refused_on_a_static_quorum(tmp_path: Path) -> None:
    from zurau.embedded import EmbeddedCluster

    async with EmbeddedCluster(3, data_dir=tmp_path / "c") as c:
        body = {
            "cluster_id": None,
            "timeout_ms": 5000,
            "voter_id": 4,
            "voter_directory_id": uuid.uuid4(),
            "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}],
        }
        resp = await _request(c.node(2), ApiKey.ADD_RAFT_VOTER, body)
        assert resp["error_code"] == UnsupportedVersionError.code
        assert "static" in resp["error_message"]


def test_format_refuses_wrong_flags(tmp_path: Path) -> None:
    cluster_id = new_cluster_id()
    (port,) = free_ports(1)
    config = _write_config(tmp_path, 1, port, port)
    runner = CliRunner()
    result = runner.invoke(cli, ["storage", "format", "--cluster-id", cluster_id, "--config", str(config)])
    assert result.exit_code == 1 and "--standalone" in result.output
    both = ["--standalone", "--no-initial-controllers"]
    result = runner.invoke(cli, ["storage", "format", "--cluster-id", cluster_id, "--config", str(config), *both])
    assert result.exit_code == 1
    dir_id = kafka_uuid(uuid.uuid4())
    other = f"2@127.0.0.1:{port + 1}:{dir_id}"
    result = runner.invoke(
        cli, ["storage", "format", "--cluster-id", cluster_id, "--config", str(config), "--initial-controllers", other]
    )
    assert result.exit_code == 1 and "does not name this node" in result.output
    mine = f"1@127.0.0.1:{port}:{dir_id},{other}"
    result = runner.invoke(
        cli, ["storage", "format", "--cluster-id", cluster_id, "--config", str(config), "--initial-controllers", mine]
    )
    assert result.exit_code == 0, result.output
    cfg = BrokerConfig.from_file(config)
    assert kafka_uuid(directory_id(cfg.metadata_log_dir)) == dir_id
    assert (cfg.metadata_log_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").exists()


async def test_auto_join_and_update_raft_voter(tmp_path: Path) -> None:
    """Controller 1 is formatted with a stale endpoint for itself (``localhost``; it listens on
    127.0.0.1): it corrects its entry with UpdateRaftVoter. Controller 2 has
    ``controller.quorum.auto.join.enable``: it adds itself once it follows the leader."""
    cluster_id = new_cluster_id()
    ports = free_ports(2)
    configs = [_write_config(tmp_path, i, p, ports[0]) for i, p in enumerate(ports, start=1)]
    with configs[1].open("a") as f:
        f.write("controller.quorum.auto.join.enable=true\n")
    dir1 = kafka_uuid(uuid.uuid4())
    _format(cluster_id, configs[0], "--initial-controllers", f"1@localhost:{ports[0]}:{dir1}")
    _format(cluster_id, configs[1], "--no-initial-controllers")
    brokers = [Broker(BrokerConfig.from_file(c)) for c in configs]
    try:
        await asyncio.wait_for(brokers[0].start(), 30)

        async def endpoint_updated() -> bool:
            body = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
            resp = await _request(brokers[0], ApiKey.DESCRIBE_QUORUM, body, version=2)
            hosts = {li["host"] for n in resp["nodes"] if n["node_id"] == 1 for li in n["listeners"]}
            return hosts == {"127.0.0.1"}

        await _wait(endpoint_updated, 20)
        await asyncio.wait_for(brokers[1].start(), 30)

        async def joined() -> bool:
            return (await _quorum(brokers[0]))[1] == [1, 2]

        await _wait(joined, 30)
        await _create_topic(brokers[1], "with-two-voters")
    finally:
        for b in brokers:
            if b.started:
                await b.stop()
