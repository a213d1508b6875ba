"""Zurau's own producer with a ``transactional.id`` against an in-process broker, under
transactions v2 (the default finalized ``transaction.version``) and v1 (the level set to 1 with
UpdateFeatures): commit makes records and offsets visible to a read_committed confluent-kafka
consumer, abort hides them, a second producer with the same id fences the first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.support.reading import committed_offset, read_values
from zurau.client import AdminClient, ClientConfig, Producer, TopicPartition
from zurau.client.admin import FeatureUpgradeType
from zurau.client.transaction_manager import (
    AbortableTransactionError,
    ConsumerGroupMetadata,
    TransactionAbortedError,
    TransactionState,
    TransactionStateError,
)
from zurau.embedded import EmbeddedBroker, EmbeddedCluster
from zurau.protocol.errors import ProducerFencedError


@pytest_asyncio.fixture(params=[2, 1], ids=["tv2", "tv1"])
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[tuple[EmbeddedBroker, int]]:
    level = int(request.param)
    async with EmbeddedBroker() as b:
        async with AdminClient(ClientConfig.load(bootstrap_servers=b.bootstrap_servers)) as admin:
            finalized = (await admin.describe_features()).finalized.get("transaction.version", 0)
            if finalized != level:
                kind = FeatureUpgradeType.UPGRADE if level > finalized else FeatureUpgradeType.SAFE_DOWNGRADE
                await admin.update_features({"transaction.version": (level, kind)})
            for _ in range(100):
                if (await admin.describe_features()).finalized.get("transaction.version", 0) == level:
                    break
                await asyncio.sleep(0.05)
        yield b, level


def cfg(bootstrap: str) -> ClientConfig:
    return ClientConfig.load(bootstrap_servers=bootstrap)


async def test_commit_shows_and_abort_hides_records_and_offsets(broker: tuple[EmbeddedBroker, int]) -> None:
    b, level = broker
    b.create_topic("txn-out", 2)
    b.create_topic("txn-in", 1)
    boot = b.bootstrap_servers
    async with Producer(cfg(boot), transactional_id="tp-1", linger_ms=1) as p:
        await p.init_transactions()
        assert p.transaction_version == level
        first_pid, first_epoch = p.producer_id, p.producer_epoch

        p.begin_transaction()
        futs = [await p.send("txn-out", f"c{i}".encode(), key=str(i).encode()) for i in range(6)]
        await p.send_offsets_to_transaction(
            {TopicPartition("txn-in", 0): 7}, ConsumerGroupMetadata("txn-group")
        )
        await p.commit_transaction()
        assert all(f.done() and f.exception() is None for f in futs)
        assert p.transaction_state is TransactionState.READY
        if level >= 2:  # EndTxn v5 hands out the next epoch
            assert (p.producer_id, p.producer_epoch) == (first_pid, first_epoch + 1)
        else:
            assert (p.producer_id, p.producer_epoch) == (first_pid, first_epoch)

        p.begin_transaction()
        await p.send("txn-out", b"aborted-1", key=b"1")
        await p.send_and_wait("txn-out", b"aborted-2", key=b"2")
        await p.send_offsets_to_transaction({TopicPartition("txn-in", 0): 99}, "txn-group")
        await p.abort_transaction()

        p.begin_transaction()  # sequence numbers go on (v1) or start again (v2) correctly
        await p.send("txn-out", b"c6", key=b"6")
        await p.send_offsets_to_transaction({TopicPartition("txn-in", 0): 8}, "txn-group")
        await p.commit_transaction()

        p.begin_transaction()  # an empty transaction commits without EndTxn
        await p.commit_transaction()

    seen = await asyncio.to_thread(read_values, boot, "txn-out", partitions=range(2))
    assert sorted(seen) == [f"c{i}".encode() for i in range(7)]
    assert await asyncio.to_thread(committed_offset, boot, "txn-group", "txn-in") == 8


async def test_offsets_appear_only_on_commit(broker: tuple[EmbeddedBroker, int]) -> None:
    b, _ = broker
    b.create_topic("off-in", 1)
    boot = b.bootstrap_servers
    async with Producer(cfg(boot), transactional_id="tp-offsets") as p:
        await p.init_transactions()
        p.begin_transaction()
        await p.send_offsets_to_transaction({TopicPartition("off-in", 0): 5}, "off-group")
        assert await asyncio.to_thread(lambda: committed_offset(boot, "off-group", "off-in", isolation="read_uncommitted")) < 0
        await p.commit_transaction()
    assert await asyncio.to_thread(committed_offset, boot, "off-group", "off-in") == 5


async def test_a_second_producer_fences_the_first(broker: tuple[EmbeddedBroker, int]) -> None:
    b, _ = broker
    b.create_topic("fence-out", 1)
    boot = b.bootstrap_servers
    async with Producer(cfg(boot), transactional_id="tp-fence", linger_ms=0) as zombie:
        await zombie.init_transactions()
        zombie.begin_transaction()
        await zombie.send_and_wait("fence-out", b"zombie")
        async with Producer(cfg(boot), transactional_id="tp-fence", linger_ms=0) as p:
            await p.init_transactions()  # aborts the zombie's open transaction
            with pytest.raises(ProducerFencedError):
                await zombie.commit_transaction()
            assert zombie.transaction_state is TransactionState.FATAL_ERROR
            with pytest.raises(ProducerFencedError):
                zombie.begin_transaction()
            p.begin_transaction()
            await p.send("fence-out", b"winner")
            await p.commit_transaction()
    assert await asyncio.to_thread(read_values, boot, "fence-out") == [b"winner"]


async def test_misuse_and_abortable_errors(broker: tuple[EmbeddedBroker, int]) -> None:
    b, _ = broker
    b.create_topic("misuse-out", 1, {"max.message.bytes": "2000"})
    boot = b.bootstrap_servers
    async with Producer(cfg(boot), transactional_id="tp-misuse", linger_ms=0) as p:
        with pytest.raises(TransactionStateError):
            p.begin_transaction()  # before init_transactions
        await p.init_transactions()
        with pytest.raises(TransactionStateError):
            await p.send("misuse-out", b"outside")
        with pytest.raises(TransactionStateError):
            await p.commit_transaction()
        p.begin_transaction()
        fut = await p.send("misuse-out", b"x" * 5000)  # the topic refuses it: abortable
        with pytest.raises(AbortableTransactionError):
            await p.commit_transaction()
        assert fut.exception() is not None
        with pytest.raises(AbortableTransactionError):
            await p.send("misuse-out", b"still in the failed transaction")
        await p.abort_transaction()
        p.begin_transaction()
        await p.send("misuse-out", b"after-abort")
        await p.commit_transaction()
    assert await asyncio.to_thread(read_values, boot, "misuse-out") == [b"after-abort"]


async def test_transactions_on_a_three_node_cluster() -> None:
    async with EmbeddedCluster(3) as c:
        await c.create_topic_async("cluster-out", 3)
        boot = c.bootstrap_servers
        async with Producer(cfg(boot), transactional_id="tp-cluster", linger_ms=1) as p:
            await p.init_transactions()
            assert p.transaction_version == 2
            p.begin_transaction()
            for i in range(9):
                await p.send("cluster-out", f"v{i}".encode(), partition=i % 3)
            await p.send_offsets_to_transaction({TopicPartition("cluster-out", 0): 3}, "cluster-group")
            await p.commit_transaction()
            p.begin_transaction()
            dropped = await p.send("cluster-out", b"gone", partition=1)
            await p.abort_transaction()  # never sent: dropped, and no EndTxn is needed
            assert isinstance(dropped.exception(), TransactionAbortedError)
        seen = await asyncio.to_thread(read_values, boot, "cluster-out", partitions=range(3))
        assert sorted(seen) == [f"v{i}".encode() for i in range(9)]
