"""Transactions v2 (KIP-890 part 2) on the wire: an in-process broker with ``transaction.version=2``
finalized, driven with Zurau's typed API as a Kafka 4 Java producer would (InitProducerId,
Produce v12 with no AddPartitionsToTxn, TxnOffsetCommit v5 with no AddOffsetsToTxn, EndTxn v5
handing out the next epoch), read back by a read_committed confluent-kafka consumer; a zombie's
produce and late EndTxn are fenced. Below ``transaction.version`` 2 the same request versions
behave as transactions v1."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.support.reading import committed_offset, read_values
from zurau.client import typed_api as api
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedBroker
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.records import FeatureLevelRecord
from zurau.protocol import errors as E
from zurau.protocol.records.builder import build_batch

TOPIC, GROUP, TID = "tv2-data", "tv2-group", "tv2-producer"
RETRIABLE = {
    E.CoordinatorNotAvailableError.code,
    E.CoordinatorLoadInProgressError.code,
    E.NotCoordinatorError.code,
    E.ConcurrentTransactionsError.code,
}


def finalize_transaction_version(b: EmbeddedBroker, level: int) -> None:
    """What ``kafka-features.sh upgrade --feature transaction.version=<level>`` commits."""
    b.broker.controller._commit(ControllerResult([FeatureLevelRecord("transaction.version", level)], None))


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker() as b:
        finalize_transaction_version(b, 2)
        b.create_topic(TOPIC, 1)
        yield b


@pytest_asyncio.fixture
async def conn(broker: EmbeddedBroker) -> AsyncIterator[BrokerConnection]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    c = await BrokerConnection(host, int(port), client_id="tv2-test").connect()
    try:
        yield c
    finally:
        await c.close()


async def init_producer(conn: BrokerConnection) -> tuple[int, int]:
    for _ in range(200):
        r = await conn.call(
            api.INIT_PRODUCER_ID(
                {
                    "transactional_id": TID,
                    "transaction_timeout_ms": 60_000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                }
            ),
            version=5,
        )
        if r["error_code"] not in RETRIABLE:
            assert r["error_code"] == 0, r
            return r["producer_id"], r["producer_epoch"]
        await asyncio.sleep(0.05)
    raise AssertionError("InitProducerId never succeeded")


async def produce(
    conn: BrokerConnection, pid: int, epoch: int, seq: int, values: list[bytes], version: int = 12
) -> int:
    records = build_batch(
        [(None, v, [], int(time.time() * 1000)) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )
    r = await conn.call(
        api.PRODUCE(
            {
                "transactional_id": TID,
                "acks": -1,
                "timeout_ms": 5_000,
                "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}],
            }
        ),
        version=version,
    )
    return int(r["responses"][0]["partition_responses"][0]["error_code"])


async def txn_offset_commit(
    conn: BrokerConnection, pid: int, epoch: int, offset: int, version: int = 5
) -> int:
    for _ in range(200):
        r = await conn.call(
            api.TXN_OFFSET_COMMIT(
                {
                    "transactional_id": TID,
                    "group_id": GROUP,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "generation_id": -1,
                    "member_id": "",
                    "group_instance_id": None,
                    "topics": [
                        {
                            "name": TOPIC,
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "committed_offset": offset,
                                    "committed_leader_epoch": -1,
                                    "committed_metadata": "",
                                }
                            ],
                        }
                    ],
                }
            ),
            version=version,
        )
        code = int(r["topics"][0]["partitions"][0]["error_code"])
        if code not in RETRIABLE:
            return code
        await asyncio.sleep(0.05)
    raise AssertionError("TxnOffsetCommit kept failing")


async def end_txn(conn: BrokerConnection, pid: int, epoch: int, commit: bool, version: int = 5) -> Any:
    return await conn.call(
        api.END_TXN(
            {"transactional_id": TID, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
        ),
        version=version,
    )


async def describe(conn: BrokerConnection) -> Any:
    r = await conn.call(api.DESCRIBE_TRANSACTIONS({"transactional_ids": [TID]}))
    return r["transaction_states"][0]


async def test_a_transactions_v2_producer_commits_aborts_and_fences_its_zombie(
    broker: EmbeddedBroker, conn: BrokerConnection
) -> None:
    assert conn.version(api.END_TXN.key) == 5 and conn.version(api.TXN_OFFSET_COMMIT.key) == 5
    pid, epoch = await init_producer(conn)

    # Transaction 1: Produce v12 adds the partition itself, TxnOffsetCommit v5 the group's.
    assert await produce(conn, pid, epoch, 0, [b"a", b"b"]) == 0
    assert await produce(conn, pid, epoch, 2, [b"c"]) == 0
    assert await txn_offset_commit(conn, pid, epoch, 3) == 0
    state = await describe(conn)
    assert state["transaction_state"] == "Ongoing"
    assert sorted(t["topic"] for t in state["topics"]) == ["__consumer_offsets", TOPIC]
    r = await end_txn(conn, pid, epoch, True)
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (0, pid, epoch + 1)
    zombie_epoch, epoch = epoch, epoch + 1

    # Transaction 2, with the epoch EndTxn handed out; the zombie of the old epoch is fenced.
    assert await produce(conn, pid, epoch, 0, [b"x", b"y"]) == 0
    assert await produce(conn, pid, zombie_epoch, 3, [b"zombie"]) == E.InvalidProducerEpochError.code
    late = await end_txn(conn, pid, zombie_epoch, True)
    assert late["error_code"] == E.ProducerFencedError.code
    r = await end_txn(conn, pid, epoch, False)
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (0, pid, epoch + 1)
    # A retry of that abort is answered with the current id and epoch.
    r = await end_txn(conn, pid, epoch, False)
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (0, pid, epoch + 1)

    seen = await asyncio.to_thread(read_values, broker.bootstrap_servers, TOPIC)
    committed = await asyncio.to_thread(committed_offset, broker.bootstrap_servers, GROUP, TOPIC)
    assert seen == [b"a", b"b", b"c"] and committed == 3


async def test_below_transaction_version_2_the_same_versions_behave_as_v1(
    broker: EmbeddedBroker, conn: BrokerConnection
) -> None:
    finalize_transaction_version(broker, 1)
    pid, epoch = await init_producer(conn)
    # Produce v12 is verified only: the partition was never added.
    assert await produce(conn, pid, epoch, 0, [b"a"]) == E.InvalidTxnStateError.code
    add = await conn.call(
        api.ADD_PARTITIONS_TO_TXN(
            {
                "v3_and_below_transactional_id": TID,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}],
            }
        ),
        version=3,
    )
    assert add["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
    assert await produce(conn, pid, epoch, 0, [b"a"]) == 0
    r = await end_txn(conn, pid, epoch, True)
    assert (r["error_code"], r["producer_id"], r["producer_epoch"]) == (0, pid, epoch)  # no bump


@pytest.mark.parametrize("version", [3, 4])
async def test_end_txn_before_v5_keeps_the_epoch_with_transactions_v2_finalized(
    broker: EmbeddedBroker, conn: BrokerConnection, version: int
) -> None:
    pid, epoch = await init_producer(conn)
    assert await produce(conn, pid, epoch, 0, [b"a"], version=9) == E.InvalidTxnStateError.code  # v1 producer
    r = await end_txn(conn, pid, epoch, False, version=version)
    assert r["error_code"] == E.InvalidTxnStateError.code  # no empty abort in v1
