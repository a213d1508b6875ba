"""KIP-890 verification when the transaction coordinator is another broker (three-node
EmbeddedCluster, real sockets).

The leader of a partition asks the producer's transaction coordinator (AddPartitionsToTxn v4,
``verify_only``) before appending a transaction's first batch there: a partition that was never
added to the transaction is refused with INVALID_TXN_STATE, a fenced epoch with
INVALID_PRODUCER_EPOCH, an unknown producer id with INVALID_PRODUCER_ID_MAPPING; an added one is
written; later batches of the same transaction need no second round trip.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.component.test_coordinator_failover import _connect, _coordinator
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedCluster
from zurau.protocol import errors as E
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.records.builder import build_batch

pytestmark = pytest.mark.timeout(120)

TOPIC = "verified"
CONFIGS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


async def _produce(
    conn: BrokerConnection, tid: str, pid: int, epoch: int, seq: int, partition: int, version: int = 9
) -> int:
    """One transactional record to ``partition`` of TOPIC; its partition error code."""
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
    r = await conn.request(ApiKey.PRODUCE, body, version=version)
    code: int = r["responses"][0]["partition_responses"][0]["error_code"]
    return code


async def _add(conn: BrokerConnection, tid: str, pid: int, epoch: int, partition: int) -> int:
    body = {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": TOPIC, "partitions": [partition]}],
    }
    r = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, body, version=3)
    code: int = r["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"]
    return code


async def _init(conn: BrokerConnection, tid: str) -> dict[str, Any]:
    """InitProducerId, again while the coordinator is still loading its partition."""
    body = {"transactional_id": tid, "transaction_timeout_ms": 60_000, "producer_id": -1, "producer_epoch": -1}
    deadline = time.monotonic() + 30
    while True:
        r = await conn.request(ApiKey.INIT_PRODUCER_ID, body, version=4)
        if r["error_code"] != E.CoordinatorLoadInProgressError.code or time.monotonic() > deadline:
            return r
        await asyncio.sleep(0.1)


@dataclass
class RemoteLeader:
    """A transactional id whose coordinator does not lead ``partition`` of TOPIC, with
    connections to node 1, to the coordinator and to that partition's leader, and the producer
    id and epoch InitProducerId gave."""

    conn1: BrokerConnection
    coord: BrokerConnection
    leader: BrokerConnection
    leader_id: int
    partition: int
    pid: int
    epoch: int

    async def close(self) -> None:
        for conn in (self.conn1, self.coord, self.leader):
            await conn.close()


async def remote_leader(c: EmbeddedCluster, tid: str) -> RemoteLeader:
    """TOPIC with 3 partitions (replication factor 1) and ``tid`` initialized at its coordinator."""
    conn1 = await _connect(c, 1)
    await conn1.request(
        ApiKey.CREATE_TOPICS,
        {
            "topics": [{"name": TOPIC, "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10_000,
        },
        version=5,
    )
    await c.wait_for_topic(TOPIC)
    coordinator = await _coordinator(c, conn1, tid, key_type=1)
    leaders = {i: p.leader for i, p in c.node(1).image.get(TOPIC).partitions.items()}  # type: ignore[union-attr]
    partition = next(p for p, leader in leaders.items() if leader != coordinator)
    coord = await _connect(c, coordinator)
    leader = await _connect(c, leaders[partition])
    init = await _init(coord, tid)
    assert init["error_code"] == 0, init
    return RemoteLeader(conn1, coord, leader, leaders[partition], partition, init["producer_id"], init["producer_epoch"])


async def test_a_partition_leader_verifies_with_a_remote_coordinator(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        r = await remote_leader(c, "verify-me")
        tid, leader, partition, pid, epoch = "verify-me", r.leader, r.partition, r.pid, r.epoch
        log = c.node(r.leader_id).replica_manager.partition(TOPIC, partition).log

        assert await _produce(leader, tid, pid, epoch, 0, partition) == E.InvalidTxnStateError.code
        assert await _produce(leader, tid, pid + 1000, 0, 0, partition) == E.InvalidProducerIdMappingError.code
        assert await _produce(leader, tid, pid, epoch + 1, 0, partition) == E.InvalidProducerEpochError.code
        assert log.log_end_offset == 0

        assert await _add(r.coord, tid, pid, epoch, partition) == 0
        assert await _produce(leader, tid, pid, epoch, 0, partition) == 0
        assert await _produce(leader, tid, pid, epoch, 1, partition) == 0
        assert log.log_end_offset == 2
        await r.close()
