"""Back-to-back transactions on a three-node EmbeddedCluster (real sockets), as librdkafka runs
them: right after EndTxn is answered (the PrepareCommit record is stored; the markers are still
being written to the partitions' leaders) it sends AddOffsetsToTxn and AddPartitionsToTxn for the
next transaction. The coordinator lets them wait for the previous transaction to complete instead
of answering CONCURRENT_TRANSACTIONS (which librdkafka retries only after retry.backoff.ms for
AddOffsetsToTxn): both are answered 0 and the next transaction holds both partitions.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.component.test_coordinator_failover import _connect, _coordinator
from tests.component.test_txn_verification_cluster import _init
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedCluster
from zurau.protocol.api_keys import ApiKey

pytestmark = pytest.mark.timeout(120)

TOPIC = "back-to-back"
GROUP = "b2b-group"
CONFIGS = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"}


async def _add(conn: BrokerConnection, tid: str, pid: int, epoch: int, partitions: list[int]) -> list[int]:
    body = {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": TOPIC, "partitions": partitions}],
    }
    r = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, body, version=3)
    return [p["partition_error_code"] for p in r["results_by_topic_v3_and_below"][0]["results_by_partition"]]


async def _add_offsets(conn: BrokerConnection, tid: str, pid: int, epoch: int) -> int:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "group_id": GROUP}
    r = await conn.request(ApiKey.ADD_OFFSETS_TO_TXN, body, version=3)
    code: int = r["error_code"]
    return code


async def _end(conn: BrokerConnection, tid: str, pid: int, epoch: int) -> int:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True}
    r = await conn.request(ApiKey.END_TXN, body, version=3)
    code: int = r["error_code"]
    return code


async def _describe(conn: BrokerConnection, tid: str) -> dict[str, Any]:
    r = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [tid]}, version=0)
    state: dict[str, Any] = r["transaction_states"][0]
    return state


async def test_the_next_transaction_waits_for_the_previous_markers(tmp_path: Any) -> None:
    async with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        conn1 = await _connect(c, 1)
        await conn1.request(
            ApiKey.CREATE_TOPICS,
            {
                "topics": [{"name": TOPIC, "num_partitions": 3, "replication_factor": 3, "assignments": [], "configs": []}],
                "timeout_ms": 10_000,
            },
            version=5,
        )
        await c.wait_for_topic(TOPIC)
        tid = "back-to-back"
        coord = await _connect(c, await _coordinator(c, conn1, tid, key_type=1))
        await _coordinator(c, conn1, GROUP)  # __consumer_offsets exists
        init = await _init(coord, tid)
        assert init["error_code"] == 0, init
        pid, epoch = init["producer_id"], init["producer_epoch"]
        assert await _add(coord, tid, pid, epoch, [0, 1, 2]) == [0, 0, 0]
        for _ in range(3):
            assert await _end(coord, tid, pid, epoch) == 0
            offsets, parts = await asyncio.gather(
                _add_offsets(coord, tid, pid, epoch), _add(coord, tid, pid, epoch, [0, 1, 2])
            )
            assert (offsets, parts) == (0, [0, 0, 0])
            state = await _describe(coord, tid)
            assert state["transaction_state"] == "Ongoing", state
            topics = {t["topic"]: sorted(t["partitions"]) for t in state["topics"]}
            assert topics[TOPIC] == [0, 1, 2] and "__consumer_offsets" in topics, topics
        for conn in (conn1, coord):
            await conn.close()
