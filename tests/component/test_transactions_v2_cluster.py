"""Transactions v2 when the transaction coordinator is another broker (three-node EmbeddedCluster,
real sockets): the partition leader adds the partition with AddPartitionsToTxn v5
(``verify_only=false``) on a producer's first Produce v12 batch, the coordinator's markers reach
it with WriteTxnMarkers v2 at the bumped epoch, and the old epoch is refused there afterwards."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.component.test_coordinator_failover import _connect, _coordinator
from tests.component.test_txn_verification_cluster import CONFIGS, TOPIC, _init
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedCluster
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import FeatureLevelRecord
from zurau.protocol import errors as E
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.records.builder import build_batch

pytestmark = pytest.mark.timeout(120)


async def _produce(conn: BrokerConnection, tid: str, pid: int, epoch: int, seq: int, partition: int) -> int:
    batch = build_batch(
        [(None, b"v%d" % seq, (), int(time.time() * 1000))],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    body = {
        "transactional_id": tid,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}],
    }
    r = await conn.request(ApiKey.PRODUCE, body, version=12)
    code: int = r["responses"][0]["partition_responses"][0]["error_code"]
    return code


async def _finalize_transaction_version(c: EmbeddedCluster, level: int) -> None:
    """Commit ``transaction.version=level`` through the active controller; wait until every node has it."""

    def op(image: MetadataImage) -> ControllerResult[None]:
        return ControllerResult([FeatureLevelRecord("transaction.version", level)], None)

    kraft = c.node(c.controller_id).kraft
    assert kraft is not None
    await kraft.channel._run(op)
    deadline = time.monotonic() + 30
    while any(c.node(n).image.features.get("transaction.version") != level for n in (1, 2, 3)):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_remote_leader_adds_the_partition_and_gets_the_bumped_marker(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **dict[str, Any](CONFIGS)) as c:
        await _finalize_transaction_version(c, 2)
        conn1 = await _connect(c, 1)
        await conn1.request(
            ApiKey.CREATE_TOPICS,
            {
                "topics": [
                    {
                        "name": TOPIC,
                        "num_partitions": 3,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": 10_000,
            },
            version=5,
        )
        await c.wait_for_topic(TOPIC)
        tid = "tv2-remote"
        coordinator = await _coordinator(c, conn1, tid, key_type=1)
        leaders = {i: p.leader for i, p in c.node(1).image.get(TOPIC).partitions.items()}  # type: ignore[union-attr]
        partition = next(p for p, leader in leaders.items() if leader != coordinator)
        coord = await _connect(c, coordinator)
        leader = await _connect(c, leaders[partition])
        init = await _init(coord, tid)
        assert init["error_code"] == 0, init
        pid, epoch = init["producer_id"], init["producer_epoch"]
        log = c.node(leaders[partition]).replica_manager.partition(TOPIC, partition).log

        # No AddPartitionsToTxn: the leader has the coordinator add the partition.
        assert await _produce(leader, tid, pid, epoch, 0, partition) == 0
        assert await _produce(leader, tid, pid, epoch, 1, partition) == 0
        r = await coord.request(
            ApiKey.END_TXN,
            {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True},
            version=5,
        )
        assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (0, pid, epoch + 1)
        deadline = time.monotonic() + 30
        while log.last_stable_offset < 3:  # two records and the COMMIT marker (epoch + 1)
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        entry = log.producer_entry(pid)
        assert entry is not None and entry.producer_epoch == epoch + 1
        assert await _produce(leader, tid, pid, epoch, 2, partition) == E.InvalidProducerEpochError.code
        assert await _produce(leader, tid, pid, epoch + 1, 0, partition) == 0  # the next transaction
        for conn in (conn1, coord, leader):
            await conn.close()
