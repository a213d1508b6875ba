"""Exactly-once across a kill -9 of the transaction coordinator's broker (three real nodes).

The consume-transform-produce process of the transactions tests (``eos_transformer.py``, with
confluent-kafka's transactional API and ``send_offsets_to_transaction``) runs against three
combined nodes; every topic, ``__consumer_offsets`` and ``__transaction_state`` included, has
replication factor 3 and ``min.insync.replicas=2``. While a transaction is open (its records and
offsets sent, not yet committed), the broker leading the transformer's ``__transaction_state``
partition is killed with SIGKILL. The transformer must carry on through the new coordinator
without a restart, the killed broker then returns, and a read_committed consumer of the output
sees every input record transformed exactly once.

Client case (librdkafka 2.16, confluentinc/librdkafka#5511, open): once a fenced broker drops out
of Metadata responses (as Kafka's KRaft brokers answer: only unfenced brokers are listed),
librdkafka decommissions its handle, but a handle still cached as a *group* coordinator stays in
its coordinator cache, and ``send_offsets_to_transaction`` then waits for that handle to come up
forever (its broker thread spins in "Handle is terminating"); the report is against Apache Kafka.
Seen here in 1 run of 6 before this choice. The group is therefore chosen so that its coordinator is not on the killed broker; the
consumer side of a group-coordinator kill is covered by the group failover tests.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.test_transactions_confluent_kafka import (
    Transformer,
    _read_all,
    assert_transformed_exactly_once,
)
from tests.component.kafka_wire import KafkaWireClient
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "transaction.state.log.num.partitions": "4",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.num.partitions": "4",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "4000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "100",
}


def _find_coordinator(port: int, transactional_id: str) -> int:
    """The node id coordinating ``transactional_id`` (FindCoordinator, key type 1), asked of ``port``."""

    async def run() -> int:
        deadline = time.monotonic() + 30
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            while True:
                r = await c.request(10, 4, {"key_type": 1, "coordinator_keys": [transactional_id]})
                entry = r["coordinators"][0]
                if entry["error_code"] == 0:
                    return int(entry["node_id"])
                assert time.monotonic() < deadline, f"no coordinator: {entry}"
                await asyncio.sleep(0.2)

    return asyncio.run(run())


def _group_coordinated_elsewhere(port: int, avoid: int) -> str:
    """A group id whose coordinator (FindCoordinator, key type 0) is not node ``avoid``."""

    async def run() -> str:
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            for i in range(200):
                group = f"eos-failover-group-{i}"
                r = await c.request(10, 4, {"key_type": 0, "coordinator_keys": [group]})
                entry = r["coordinators"][0]
                if entry["error_code"] == 0 and int(entry["node_id"]) != avoid:
                    return group
                await asyncio.sleep(0.05)
        raise AssertionError(f"every group probed is coordinated by node {avoid}")

    return asyncio.run(run())


def test_exactly_once_across_a_kill_of_the_transaction_coordinator(tmp_path: Path) -> None:
    src, dst, tid = f"in-{uuid.uuid4().hex[:6]}", f"out-{uuid.uuid4().hex[:6]}", "eos-failover"
    n = 6_000
    with ClusterProcesses(tmp_path / "cluster", **OVERRIDES) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [NewTopic(t, 3, 3, config={"min.insync.replicas": "2"}) for t in (src, dst)]
        for f in admin.create_topics(topics).values():
            f.result(30)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "log_level": 3})
        for i in range(n):
            p.produce(src, key=str(i).encode(), value=str(i).encode())
            if i % 2000 == 0:
                p.poll(0)
        assert p.flush(30) == 0

        # Kafka's default transaction timeout is 60 s; 30 s outlasts the failover (the dead broker is
        # fenced after 4 s, and librdkafka looks the coordinator up again at its reconnect backoff,
        # up to 10 s), where a timed-out transaction would fence the producer for good.
        victim = _find_coordinator(cluster.nodes[1].port, tid)
        group = _group_coordinated_elsewhere(cluster.nodes[1].port, victim)
        t = Transformer(
            bootstrap,
            src,
            dst,
            group,
            tid,
            tmp_path / "transformer.log",
            txn_timeout_ms=30_000,
        )
        try:
            t.start()
            t.wait_for("txn ", 3)
            assert _find_coordinator(cluster.nodes[1].port, tid) == victim
            t.wait_for("produced ", 1)  # a transaction is open: its records and offsets are sent
            cluster.kill(victim)
            # The same transformer process carries on through the new coordinator.
            t.wait_for("txn ", 3, timeout=90)
            survivor = next(i for i in cluster.broker_ids if i != victim)
            assert _find_coordinator(cluster.nodes[survivor].port, tid) != victim
            cluster.restart(victim)
            t.wait_for("txn ", 3, timeout=60)
            values = _read_all(cluster.bootstrap_servers, dst, "read_committed", n, timeout=120)
        finally:
            t.stop()

    assert_transformed_exactly_once(values, n)
