"""Data replication on a three-node KRaft cluster (EmbeddedCluster): followers fetch from leaders,
acks=all waits for the ISR, a stopped leader's partitions get a new leader from the ISR without
losing an acknowledged record, a restarted broker catches up and rejoins the ISR, and a follower
that stops fetching is dropped from the ISR (so min.insync.replicas refuses acks=all)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedCluster
from zurau.metadata.image import PartitionRegistration
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import NotEnoughReplicasError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.record import decode_batch_records

pytestmark = pytest.mark.timeout(180)

FAST = {
    "replica.lag.time.max.ms": "1500",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "50",
}


async def _wait(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in time"
        await asyncio.sleep(0.02)


def _partition(c: EmbeddedCluster, node: int, topic: str, index: int = 0) -> PartitionRegistration:
    t = c.node(node).image.get(topic)
    assert t is not None
    return t.partitions[index]


def _running(c: EmbeddedCluster) -> list[int]:
    return [b.node_id for b in c.brokers if b is not None]


async def _create(c: EmbeddedCluster, name: str, partitions: int, rf: int, **configs: str) -> None:
    async with AdminClient(ClientConfig.from_props({"bootstrap.servers": c.bootstrap_servers})) as admin:
        result = await admin.create_topics([NewTopic(name, partitions, rf, configs)])
    assert result[name] is None
    await c.wait_for_topic(name)


async def _connect(c: EmbeddedCluster, node: int) -> BrokerConnection:
    host, port = c.node(node).advertised
    return await BrokerConnection(host, port, client_id="replication-test").connect()


async def _produce(conn: BrokerConnection, topic: str, values: list[bytes], acks: int = -1) -> dict[str, Any]:
    batch = build_batch([(None, v, [], 1_700_000_000_000 + i) for i, v in enumerate(values)])
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    resp = await conn.request(ApiKey.PRODUCE, body, max_version=12)
    part: dict[str, Any] = resp["responses"][0]["partition_responses"][0]
    return part


async def _consume(conn: BrokerConnection, topic: str) -> list[tuple[int, bytes]]:
    """Every record a consumer can read (below the high watermark), with its offset."""
    out: list[tuple[int, bytes]] = []
    offset = 0
    while True:
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}],
        }
        resp = await conn.request(ApiKey.FETCH, body, max_version=12)
        part = resp["responses"][0]["partitions"][0]
        assert part["error_code"] == 0, part
        data = bytes(part["records"] or b"")
        if not data:
            return out
        for pos, h in iter_batches(data):
            for r in decode_batch_records(memoryview(data)[pos : pos + h.size]):
                out.append((r.offset, bytes(r.value or b"")))
            offset = h.last_offset + 1


async def test_acks_all_replicates_and_survives_the_leaders_stop(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **FAST) as c:
        await _create(c, "rep", 1, 3)
        p = _partition(c, 1, "rep")
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isr) == [1, 2, 3]
        leader = p.leader
        conn = await _connect(c, leader)
        acked: list[bytes] = []
        try:
            for i in range(5):
                values = [b"before-%d-%d" % (i, j) for j in range(3)]
                part = await _produce(conn, "rep", values)
                assert part["error_code"] == 0, part
                assert part["base_offset"] == 3 * i
                acked += values
            acks1 = await _produce(conn, "rep", [b"acks1"], acks=1)
            assert acks1["error_code"] == 0 and acks1["base_offset"] == 15
            acked.append(b"acks1")
        finally:
            await conn.close()

        # Every replica holds every record, byte for byte, and knows the high watermark.
        def replicated() -> bool:
            logs = [c.node(n).replica_manager.get("rep", 0) for n in (1, 2, 3)]
            return all(lg is not None and lg.log_end_offset == 16 and lg.high_watermark == 16 for lg in logs)

        await _wait(replicated, what="all three logs at offset 16")
        files = []
        for n in (1, 2, 3):
            part_dir = c.configs[n - 1].log_dirs[0] / "rep-0"
            files.append({f.name: f.read_bytes() for f in part_dir.iterdir() if f.suffix == ".log"})
        assert files[0] == files[1] == files[2]

        # The leader stops (controlled shutdown): another ISR member leads at a new epoch.
        await c.stop_node(leader)
        survivors = _running(c)
        await _wait(
            lambda: all(_partition(c, n, "rep").leader in survivors for n in survivors),
            what="a new leader",
        )
        after = _partition(c, survivors[0], "rep")
        assert after.leader_epoch == p.leader_epoch + 1
        assert leader not in after.isr and sorted(after.isr) == survivors
        new_leader = after.leader
        await _wait(
            lambda: c.node(new_leader).replica_manager.get("rep", 0).leader_epoch == after.leader_epoch,  # type: ignore[union-attr]
            what="the new leader taking over",
        )

        conn = await _connect(c, new_leader)
        try:
            part = await _produce(conn, "rep", [b"after-0", b"after-1"])
            assert part["error_code"] == 0 and part["base_offset"] == 16
            acked += [b"after-0", b"after-1"]
            records = await _consume(conn, "rep")
        finally:
            await conn.close()
        assert [v for _o, v in records] == acked, "no acknowledged record is lost"
        assert [o for o, _v in records] == list(range(18))

        # The old leader comes back as a follower, catches up and rejoins the ISR.
        await c.start_node(leader)
        await _wait(
            lambda: sorted(_partition(c, new_leader, "rep").isr) == [1, 2, 3], timeout=30, what="ISR expansion"
        )
        back = c.node(leader).replica_manager.get("rep", 0)
        assert back is not None and back.leader_id == new_leader and back.log_end_offset == 18
        assert [e.epoch for e in back.log.leader_epoch_cache.entries] == [p.leader_epoch, after.leader_epoch]


async def test_a_follower_that_stops_fetching_leaves_the_isr(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **FAST) as c:
        await _create(c, "lag", 1, 3, **{"min.insync.replicas": "3"})
        p = _partition(c, 1, "lag")
        leader = p.leader
        follower = next(n for n in p.replicas if n != leader)
        conn = await _connect(c, leader)
        try:
            assert (await _produce(conn, "lag", [b"a"]))["error_code"] == 0
            # The follower's fetchers stop (as if its process hung): after replica.lag.time.max.ms
            # the leader asks the controller to drop it from the ISR.
            fetchers = c.node(follower).fetchers
            assert fetchers is not None
            await fetchers.close()
            await _wait(lambda: follower not in _partition(c, leader, "lag").isr, what="ISR shrink")
            assert _partition(c, follower, "lag").leader == leader  # still a replica, not leading
            part = await _produce(conn, "lag", [b"b"])
            assert part["error_code"] == NotEnoughReplicasError.code
            assert (await _produce(conn, "lag", [b"c"], acks=1))["error_code"] == 0
        finally:
            await conn.close()
