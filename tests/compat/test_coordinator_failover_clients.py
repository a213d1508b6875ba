"""Real clients follow the coordinators when leadership moves (three-node EmbeddedCluster).

* Consumer groups (confluent-kafka, kafka-python, aiokafka): a consumer reads a replicated topic
  and commits; the broker coordinating its group stops (controlled shutdown); a new consumer of
  the same group finds the new coordinator (the new leader of the group's ``__consumer_offsets``
  partition), starts exactly at the committed offsets and commits again there.
* Transactions (confluent-kafka): a transactional producer commits transactions spanning
  partitions led by all three brokers (its coordinator sends WriteTxnMarkers to the other
  leaders); its coordinator's broker stops while a transaction is open; the producer commits that
  transaction through the new coordinator and carries on; a read_committed consumer sees exactly
  the committed records (none of an aborted transaction). kafka-python and aiokafka do the same
  with group offsets in their transactions (kafka-python while the old coordinator stays up: see
  ``_txn_failover_python_client`` for why).
* A group coordinated by another broker than the transaction's still gets its offsets through
  the transaction (AddOffsetsToTxn at the transaction coordinator, TxnOffsetCommit at the group's).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.test_transactions_confluent_kafka import _read_all
from zurau.embedded import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

CONFIGS = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "100",
    "offsets.topic.num.partitions": "6",
    "transaction.state.log.num.partitions": "6",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}
PARTITIONS = 3
PER_PARTITION = 10


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)


def _produce(bootstrap: str, topic: str, round_: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(topic, value=b"r%d-p%d-%d" % (round_, part, i), partition=part)
    assert p.flush(30) == 0


def _leader(c: EmbeddedCluster, topic: str, partition: int) -> int:
    for b in c.brokers:
        if b is not None:
            t = b.image.get(topic)
            assert t is not None
            return t.partitions[partition].leader
    raise AssertionError("no broker running")


def _wait_new_leader(c: EmbeddedCluster, topic: str, partition: int, old: int) -> int:
    deadline = time.monotonic() + 30
    while True:
        leaders = {b.image.get(topic).partitions[partition].leader for b in c.brokers if b is not None}  # type: ignore[union-attr]
        if len(leaders) == 1 and (leader := leaders.pop()) not in (-1, old):
            return leader
        assert time.monotonic() < deadline, "no new leader"
        time.sleep(0.05)


# ------------------------------------------------------------------ one group round per client
# Each round: consume until every partition has ``want_per_partition`` records read, commit,
# close; return the first offset read per partition.


def _round_confluent(bootstrap: str, topic: str, group: str, want: int) -> dict[int, int]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    c.subscribe([topic])
    first: dict[int, int] = {}
    seen = 0
    deadline = time.monotonic() + 60
    try:
        while seen < want:
            assert time.monotonic() < deadline, f"read {seen} of {want}"
            for m in c.consume(100, 0.5):
                if m.error() is None:
                    first.setdefault(m.partition(), m.offset())
                    seen += 1
        c.commit(asynchronous=False)
    finally:
        c.close()
    return first


def _round_kafka_python(bootstrap: str, topic: str, group: str, want: int) -> dict[int, int]:
    from kafka import KafkaConsumer

    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    first: dict[int, int] = {}
    seen = 0
    deadline = time.monotonic() + 60
    try:
        while seen < want:
            assert time.monotonic() < deadline, f"read {seen} of {want}"
            for tp, msgs in c.poll(500).items():
                for m in msgs:
                    first.setdefault(tp.partition, m.offset)
                    seen += 1
        c.commit()
    finally:
        c.close()
    return first


def _round_aiokafka(bootstrap: str, topic: str, group: str, want: int) -> dict[int, int]:
    from aiokafka import AIOKafkaConsumer

    async def run() -> dict[int, int]:
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await c.start()
        first: dict[int, int] = {}
        seen = 0
        deadline = time.monotonic() + 60
        try:
            while seen < want:
                assert time.monotonic() < deadline, f"read {seen} of {want}"
                for tp, msgs in (await c.getmany(timeout_ms=500)).items():
                    for m in msgs:
                        first.setdefault(tp.partition, m.offset)
                        seen += 1
            await c.commit()
        finally:
            await c.stop()
        return first

    return asyncio.run(run())


ROUNDS = {
    "confluent-kafka": _round_confluent,
    "kafka-python": _round_kafka_python,
    "aiokafka": _round_aiokafka,
}


def _committed(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in tps}


@pytest.mark.parametrize("client", sorted(ROUNDS))
def test_group_finds_the_new_coordinator_with_its_offsets(tmp_path: Path, client: str) -> None:
    round_ = ROUNDS[client]
    topic, group = "events", f"g-{client}"
    with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        bootstrap = c.bootstrap_servers
        _create(bootstrap, topic, PARTITIONS)
        c.call(c.wait_for_topic, topic)
        _produce(bootstrap, topic, 0)
        assert round_(bootstrap, topic, group, PARTITIONS * PER_PARTITION) == dict.fromkeys(
            range(PARTITIONS), 0
        )
        assert _committed(bootstrap, topic, group) == dict.fromkeys(range(PARTITIONS), PER_PARTITION)

        partition = c.node(1).group_coordinator.partition_for(group)
        coordinator = _leader(c, "__consumer_offsets", partition)
        assert c.node(coordinator).group_coordinator.loaded(partition)
        c.call(c.stop_node, coordinator)
        new = _wait_new_leader(c, "__consumer_offsets", partition, coordinator)

        bootstrap = c.bootstrap_servers  # the stopped broker is gone from the list
        _produce(bootstrap, topic, 1)
        first = round_(bootstrap, topic, group, PARTITIONS * PER_PARTITION)
        assert first == dict.fromkeys(range(PARTITIONS), PER_PARTITION), "resumed at the committed offsets"
        assert c.node(new).group_coordinator.loaded(partition)
        assert _committed(bootstrap, topic, group) == dict.fromkeys(range(PARTITIONS), 2 * PER_PARTITION)


# ------------------------------------------------------------------ transactions


def test_transactions_across_leaders_survive_the_coordinators_stop(tmp_path: Path) -> None:
    topic, tid, parts = "txn-out", "tx-failover", 6
    with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        bootstrap = c.bootstrap_servers
        _create(bootstrap, topic, parts)
        c.call(c.wait_for_topic, topic)
        assert {_leader(c, topic, p) for p in range(parts)} == {1, 2, 3}, "partitions led by every broker"

        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": tid,
                "log_level": 3,
                "transaction.timeout.ms": 60000,
            }
        )
        producer.init_transactions(30)
        committed: list[bytes] = []

        def txn(n: int, commit: bool = True) -> list[bytes]:
            values = [b"t%d-p%d" % (n, p) for p in range(parts)]
            producer.begin_transaction()
            for p, v in enumerate(values):
                producer.produce(topic, value=v, partition=p)
            assert producer.flush(30) == 0
            if commit:
                producer.commit_transaction(60)
            else:
                producer.abort_transaction(60)
            return values if commit else []

        for n in range(3):
            committed += txn(n)
        committed += txn(3, commit=False)

        txn_partition = c.node(1).txn_coordinator.partition_for(tid)
        coordinator = _leader(c, "__transaction_state", txn_partition)
        # A transaction is open when its coordinator's broker stops; it commits through the new one.
        producer.begin_transaction()
        open_values = [b"t4-p%d" % p for p in range(parts)]
        for p, v in enumerate(open_values):
            producer.produce(topic, value=v, partition=p)
        assert producer.flush(30) == 0
        c.call(c.stop_node, coordinator)
        new = _wait_new_leader(c, "__transaction_state", txn_partition, coordinator)
        producer.commit_transaction(60)
        committed += open_values
        assert c.node(new).txn_coordinator.loaded(txn_partition)

        for n in range(5, 8):
            committed += txn(n)
        committed += txn(8, commit=False)
        producer.flush(10)

        seen = _read_all(c.bootstrap_servers, topic, "read_committed", len(committed), timeout=60.0)
        assert Counter(seen) == Counter(committed), "exactly the committed records, each once"


def test_offsets_join_a_transaction_whose_group_another_broker_coordinates(tmp_path: Path) -> None:
    """AddOffsetsToTxn goes to the transaction coordinator, which need not coordinate the group:
    the offsets still join the transaction (TxnOffsetCommit then goes to the group's coordinator)
    and commit with it."""
    src, dst, tid = "cross-in", "cross-out", "cross-tx"
    with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        bootstrap = c.bootstrap_servers
        for topic in (src, dst):
            _create(bootstrap, topic, 1)
            c.call(c.wait_for_topic, topic)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
        for v in (b"a", b"b", b"c"):
            p.produce(src, value=v, partition=0)
        assert p.flush(30) == 0
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "log_level": 3})
        producer.init_transactions(30)
        _committed(bootstrap, src, "warm-up")  # creates __consumer_offsets
        c.call(c.wait_for_topic, "__consumer_offsets")
        txn_leader = _leader(c, "__transaction_state", c.node(1).txn_coordinator.partition_for(tid))
        groups = c.node(1).group_coordinator
        group = next(
            g
            for g in (f"cross-{i}" for i in range(100))
            if _leader(c, "__consumer_offsets", groups.partition_for(g)) != txn_leader
        )
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "log_level": 3,
            }
        )
        consumer.subscribe([src])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 3:
            assert time.monotonic() < deadline, f"read {got}"
            got += [m.value() for m in consumer.consume(10, 0.5) if m.error() is None]
        producer.begin_transaction()
        for v in got:
            producer.produce(dst, value=b"x" + v, partition=0)
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        consumer.close()
        assert _committed(bootstrap, src, group)[0] == 3
        assert sorted(_read_all(bootstrap, dst, "read_committed", 3)) == [b"xa", b"xb", b"xc"]


def _move_leadership(c: EmbeddedCluster, topic: str, partition: int) -> None:
    """Make another replica lead ``topic-partition`` while every broker stays up: reorder the
    replicas (a reassignment to the same set) and run a preferred-leader election."""
    from zurau.client.admin import AdminClient as ZAdmin
    from zurau.client.admin import ElectionType
    from zurau.client.config import ClientConfig
    from zurau.client.types import TopicPartition as ZTP

    old = _leader(c, topic, partition)
    replicas = list(c.node(old).image.get(topic).partitions[partition].replicas)  # type: ignore[union-attr]
    reordered = [r for r in replicas if r != old] + [old]
    tp = ZTP(topic, partition)

    async def run() -> None:
        async with ZAdmin(ClientConfig.from_props({"bootstrap.servers": c.bootstrap_servers})) as admin:
            assert await admin.alter_partition_reassignments({tp: reordered}) == {tp: None}
            deadline = time.monotonic() + 30
            while (await admin.elect_leaders(ElectionType.PREFERRED, [tp]))[tp] is not None:
                assert time.monotonic() < deadline, "no preferred leader election"
                await asyncio.sleep(0.2)

    asyncio.run(run())
    _wait_new_leader(c, topic, partition, old)


def _txn_failover_python_client(tmp_path: Path, client: str) -> None:
    """A kafka-python or aiokafka transactional producer: transactions with group offsets before,
    across (open while the coordinator moves) and after the coordinator moves.

    aiokafka: the coordinator's broker stops. kafka-python (3.0.x): leadership of the
    transactional id's ``__transaction_state`` partition moves while its old leader stays up
    (NOT_COORDINATOR sends the client to the new one). When the old coordinator's broker is down,
    kafka-python's sender waits for that node forever instead of looking the coordinator up again
    (``await_ready`` raises where the sender expects False), against Kafka as against Zurau.
    """
    from kafka import KafkaProducer, OffsetAndMetadata
    from kafka import TopicPartition as KpTP

    topic, tid, group, parts = f"txn-{client}", f"tx-{client}", f"g-{client}", 3
    with EmbeddedCluster(3, data_dir=tmp_path, **CONFIGS) as c:
        _create(c.bootstrap_servers, topic, parts)
        c.call(c.wait_for_topic, topic)
        committed: list[bytes] = []
        txn_partition = c.node(1).txn_coordinator.partition_for(tid)

        def stop_coordinator() -> None:
            coordinator = _leader(c, "__transaction_state", txn_partition)
            c.call(c.stop_node, coordinator)
            _wait_new_leader(c, "__transaction_state", txn_partition, coordinator)

        if client == "kafka-python":
            p = KafkaProducer(bootstrap_servers=c.bootstrap_servers, transactional_id=tid)
            try:
                p.init_transactions()
                for n in range(4):
                    p.begin_transaction()
                    values = [b"%s-t%d-p%d" % (client.encode(), n, i) for i in range(parts)]
                    for i, v in enumerate(values):
                        p.send(topic, v, partition=i)
                    p.send_offsets_to_transaction({KpTP(topic, 0): OffsetAndMetadata(n + 1, "", -1)}, group)
                    p.flush()
                    if n == 1:  # the transaction is open: it commits through the new coordinator
                        _move_leadership(c, "__transaction_state", txn_partition)
                    p.commit_transaction()
                    committed += values
            finally:
                p.close()
        else:
            from aiokafka import AIOKafkaProducer
            from aiokafka import TopicPartition as AioTP

            async def run(bootstrap: str) -> None:
                p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
                await p.start()
                try:
                    for n in range(4):
                        values = [b"%s-t%d-p%d" % (client.encode(), n, i) for i in range(parts)]
                        async with p.transaction():
                            for i, v in enumerate(values):
                                await p.send_and_wait(topic, v, partition=i)
                            await p.send_offsets_to_transaction({AioTP(topic, 0): n + 1}, group)
                            if n == 1:
                                await asyncio.to_thread(stop_coordinator)
                        committed.extend(values)
                finally:
                    await p.stop()

            asyncio.run(run(c.bootstrap_servers))
        seen = _read_all(c.bootstrap_servers, topic, "read_committed", len(committed), timeout=60.0)
        assert Counter(seen) == Counter(committed), "exactly the committed records, each once"
        assert _committed(c.bootstrap_servers, topic, group)[0] == 4


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_python_clients_transactions_follow_the_coordinator(tmp_path: Path, client: str) -> None:
    _txn_failover_python_client(tmp_path, client)
