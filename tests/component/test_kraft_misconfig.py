"""Misconfiguration and bad input against a running three-node KRaft cluster (in-process): each is
refused with a clear logged reason, never a split brain, and the cluster keeps serving.

* a node formatted with another cluster id: its fetches are refused (INCONSISTENT_CLUSTER_ID);
* a node whose voter set disagrees: its vote requests are refused (INCONSISTENT_VOTER_SET) and it
  never leads;
* a duplicate ``node.id``: a second voter with the same id cannot take the first one's listener;
  a second broker with a live broker's id is refused (DUPLICATE_BROKER_REGISTRATION) and never
  unfenced;
* malformed and out-of-epoch Raft messages get an error answer and change nothing.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from zurau.app import Broker
from zurau.client.connection import BrokerConnection
from zurau.config import BrokerConfig
from zurau.embedded import EmbeddedCluster, free_ports
from zurau.metadata.metadata_log import MetaProperties, format_dirs
from zurau.metadata.topic_names import new_cluster_id
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    FencedLeaderEpochError,
    InconsistentVoterSetError,
    InvalidRequestError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from zurau.raft.messages import BeginQuorumEpochRequest, VoteRequest
from zurau.raft.wire import METADATA_TOPIC_ID, request_to_wire

pytestmark = pytest.mark.timeout(120)


def _voters(c: EmbeddedCluster) -> str:
    return ",".join(f"{v.node_id}@{v.host}:{v.port}" for v in c.configs[0].controller_quorum_voters)


def _node(tmp: Path, cluster_id: str, node_id: int, voters: str, roles: str = "broker", controller_port: int = 0) -> Broker:
    listeners = "PLAINTEXT://127.0.0.1:0"
    if "controller" in roles:
        listeners += f",CONTROLLER://127.0.0.1:{controller_port}"
    d = tmp / f"extra-{node_id}-{cluster_id[:4]}"
    cfg = BrokerConfig.from_props(
        {
            "process.roles": roles,
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(d),
        }
    )
    format_dirs([d], MetaProperties(cluster_id, node_id), ignore_formatted=True)
    return Broker(cfg)


async def _run_for(broker: Broker, seconds: float) -> asyncio.Task[None]:
    task = asyncio.create_task(broker.start())
    await asyncio.sleep(seconds)
    return task


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass


async def test_a_node_of_another_cluster_is_refused(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="zurau.raft")
    async with EmbeddedCluster(3, data_dir=tmp_path / "c") as c:
        stranger = _node(tmp_path, new_cluster_id(), 7, _voters(c))
        task = await _run_for(stranger, 1.5)
        try:
            assert not task.done()
            assert all(7 not in b.image.brokers for b in c.brokers if b is not None)
            assert any("of cluster" in r.getMessage() for r in caplog.records)
            await c.create_topic_async("still-works", 1)
        finally:
            await _cancel(task)


async def test_a_disagreeing_voter_set_never_leads(tmp_path: Path) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path / "c") as c:
        leader, epoch = c.controller_id, c.node(1).kraft.raft.epoch  # type: ignore[union-attr]
        (port,) = free_ports(1)
        # Node 4 believes the voters are 1, 2 and itself.
        voters = ",".join([*_voters(c).split(",")[:2], f"4@127.0.0.1:{port}"])
        rogue = _node(tmp_path, c.cluster_id, 4, voters, roles="broker,controller", controller_port=port)
        task = await _run_for(rogue, 4.0)
        try:
            assert rogue.kraft is not None and not rogue.kraft.raft.is_leader
            assert c.controller_id == leader
            assert c.node(1).kraft.raft.epoch == epoch  # type: ignore[union-attr]
            await c.create_topic_async("still-works", 1)
        finally:
            await _cancel(task)


async def test_duplicate_node_ids(tmp_path: Path, caplog: Any) -> None:
    caplog.set_level(logging.ERROR, logger="zurau.broker")
    async with EmbeddedCluster(3, data_dir=tmp_path / "c") as c:
        # A second voter 2 cannot bind voter 2's controller listener.
        twin = Broker(c.configs[1])
        with pytest.raises(OSError):
            await twin.start()
        # A broker-only node 5 joins; a second process with node.id 5 is refused.
        first = _node(tmp_path / "a", c.cluster_id, 5, _voters(c))
        await asyncio.wait_for(first.start(), 20)
        try:
            second = _node(tmp_path / "b", c.cluster_id, 5, _voters(c))
            task = await _run_for(second, 1.5)
            try:
                assert not task.done(), "the duplicate must never be unfenced"
                assert any("same node.id" in r.getMessage() for r in caplog.records)
                reg = c.node(1).image.brokers[5]
                assert reg.incarnation_id == first.lifecycle.incarnation_id  # type: ignore[union-attr]
                assert not reg.fenced
            finally:
                await _cancel(task)
        finally:
            await first.stop()


async def test_malformed_and_stale_raft_messages(tmp_path: Path) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path / "c") as c:
        await c.create_topic_async("before", 1)
        leader = c.node(c.controller_id)
        epoch = leader.kraft.raft.epoch  # type: ignore[union-attr]
        host, port = leader.server.bound["CONTROLLER"]  # type: ignore[union-attr]
        conn = await BrokerConnection(host, port).connect()
        try:
            # A Vote for another topic.
            api, version, body = request_to_wire(VoteRequest(epoch + 5, 2, 0, 0), c.cluster_id, destination=leader.node_id)
            body["topics"][0]["topic_name"] = "not-metadata"
            resp = await conn.request(api, body, version=version)
            assert resp["error_code"] == InvalidRequestError.code
            # A vote from a node outside the voter set.
            api, version, body = request_to_wire(VoteRequest(epoch + 5, 42, epoch, 1000), c.cluster_id)
            resp = await conn.request(api, body, version=version)
            part = resp["topics"][0]["partitions"][0]
            assert part["error_code"] == InconsistentVoterSetError.code and not part["vote_granted"]
            # A BeginQuorumEpoch from an old epoch.
            api, version, body = request_to_wire(BeginQuorumEpochRequest(2, epoch - 1), c.cluster_id)
            resp = await conn.request(api, body, version=version)
            assert resp["topics"][0]["partitions"][0]["error_code"] == FencedLeaderEpochError.code
            # A replica's Fetch of a metadata partition that does not exist.
            fetch = {
                "replica_id": 2,
                "max_wait_ms": 0,
                "min_bytes": 1,
                "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [{"partition": 5, "fetch_offset": 0}]}],
            }
            resp = await conn.request(ApiKey.FETCH, fetch, version=13)
            refused = (InvalidRequestError.code, UnknownTopicIdError.code, UnknownTopicOrPartitionError.code)
            assert resp["error_code"] in refused or resp["responses"][0]["partitions"][0]["error_code"] in refused
            # A consumer's Fetch of the metadata log: not a topic clients may read.
            fetch["replica_id"] = -1
            fetch["topics"][0]["partitions"][0]["partition"] = 0
            resp = await conn.request(ApiKey.FETCH, fetch, version=13)
            assert resp["error_code"] == 0
            assert resp["responses"][0]["partitions"][0]["error_code"] in (
                UnknownTopicIdError.code,
                UnknownTopicOrPartitionError.code,
            )
        finally:
            await conn.close()
        assert c.controller_id == leader.node_id and leader.kraft.raft.epoch == epoch  # type: ignore[union-attr]
        await c.create_topic_async("after", 1)


async def test_a_full_disk_under_the_active_controllers_metadata_log(tmp_path: Path, caplog: Any) -> None:
    """The active controller cannot append (ENOSPC): it leaves the quorum with a logged reason and
    is marked failed; the others elect a new controller and the request still succeeds."""
    import errno

    caplog.set_level(logging.CRITICAL, logger="zurau.raft")
    async with EmbeddedCluster(3, data_dir=tmp_path / "c") as c:
        leader = c.node(c.controller_id)
        assert leader.kraft is not None

        def full(*_args: Any, **_kwargs: Any) -> Any:
            raise OSError(errno.ENOSPC, "No space left on device")

        leader.kraft.log.append_as_leader = full  # type: ignore[method-assign]
        other = next(b for b in c.brokers if b is not None and b is not leader)
        from zurau.client.admin import AdminClient, NewTopic
        from zurau.client.config import ClientConfig

        async with AdminClient(ClientConfig.from_props({"bootstrap.servers": other.bootstrap_servers})) as admin:
            result = await admin.create_topics([NewTopic("after-full-disk", 1, 1)])
        assert result["after-full-disk"] is None
        assert leader.failed.is_set() and isinstance(leader.fatal_error, OSError)
        assert any("cannot be written" in r.getMessage() for r in caplog.records)
        assert c.controller_id not in (-1, leader.node_id)
        await c.stop_node(leader.node_id)
