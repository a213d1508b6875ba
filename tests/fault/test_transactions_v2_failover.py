"""Transactions v2 (KIP-890 part 2) across a kill -9 and a SIGTERM of the transaction coordinator
(three real nodes).

Zurau's own producer is the client here: it negotiates transactions v2 (the finalized
``transaction.version=2`` of a new cluster), so partitions join the transaction through Produce
v12 and every EndTxn v5 hands out the next epoch. Topics, ``__transaction_state`` included, have
replication factor 3 and ``min.insync.replicas=2``. The producer commits numbered batches; while a
transaction is open (its records acknowledged, the commit not yet sent) the node coordinating its
transactional id is killed with SIGKILL, and later, in another open transaction, the new
coordinator is stopped with SIGTERM. Each time the producer must commit through the next
coordinator (the Ongoing state and its implicitly added partitions were replicated), the stopped
node then returns, and a read_committed consumer sees exactly the committed batches, in order,
each record once; the epoch grew by one per transaction.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.fault.test_transactions_failover import _find_coordinator
from zurau.client import AdminClient, ClientConfig, NewTopic, Producer
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OVERRIDES = {
    "transaction.state.log.num.partitions": "4",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.num.partitions": "1",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "4000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "100",
}

BATCH = 20


def read_committed(bootstrap: str, topic: str, expected: int, timeout: float = 60.0) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(values) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                values.append(m.value())
        # Nothing beyond what was committed follows.
        for _ in range(4):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                values.append(m.value())
    finally:
        c.close()
    return values


def sigterm_and_restart(cluster: ClusterProcesses, node_id: int) -> None:
    node = cluster.nodes[node_id]
    assert node.proc is not None
    node.proc.terminate()
    node.proc.wait(60)
    node.proc = None
    node.launch()
    node.wait_ready(60)


def test_transactions_v2_commit_through_the_next_coordinator_after_kill9_and_sigterm(tmp_path: Path) -> None:
    topic, tid = f"tv2-{uuid.uuid4().hex[:6]}", "tv2-failover"
    committed: list[bytes] = []
    with ClusterProcesses(tmp_path / "cluster", **OVERRIDES) as cluster:

        async def run() -> None:
            cfg = ClientConfig.load(bootstrap_servers=cluster.bootstrap_servers)
            async with AdminClient(cfg) as admin:
                created = await admin.create_topics([NewTopic(topic, 1, 3, {"min.insync.replicas": "2"})])
                assert created == {topic: None}
            # The transaction timeout outlasts a failover (the killed node is fenced after 4 s).
            async with Producer(cfg, transactional_id=tid, transaction_timeout_ms=60_000, linger_ms=1) as p:
                await p.init_transactions()
                assert p.transaction_version == 2  # a new cluster finalizes transactions v2
                epochs = [p.producer_epoch]

                async def one_batch(n: int, *, before_commit: object = None) -> None:
                    p.begin_transaction()
                    values = [f"{n}-{i}".encode() for i in range(BATCH)]
                    for v in values:
                        await p.send(topic, v, partition=0)
                    await p.flush()  # acknowledged: the partition joined the transaction (Produce v12)
                    if callable(before_commit):
                        await asyncio.to_thread(before_commit)
                    await p.commit_transaction()
                    committed.extend(values)
                    epochs.append(p.producer_epoch)

                for n in range(3):
                    await one_batch(n)
                victim = await asyncio.to_thread(_find_coordinator, cluster.nodes[1].port, tid)
                await one_batch(3, before_commit=lambda: cluster.kill(victim))
                for n in range(4, 6):
                    await one_batch(n)
                await asyncio.to_thread(cluster.restart, victim)
                survivor = next(i for i in cluster.broker_ids if i != victim)
                second = await asyncio.to_thread(_find_coordinator, cluster.nodes[survivor].port, tid)
                assert second != victim
                await one_batch(6, before_commit=lambda: sigterm_and_restart(cluster, second))
                for n in range(7, 9):
                    await one_batch(n)
                # Every transaction bumped the epoch by exactly one (no producer id rotation here).
                assert epochs == list(range(epochs[0], epochs[0] + len(epochs)))

        asyncio.run(run())
        values = read_committed(cluster.bootstrap_servers, topic, len(committed))

    assert values == committed
