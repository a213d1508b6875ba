"""kill -9 a broker under acks=all produce load: every acknowledged record survives the restart.

docs/architecture.md: a produce is acknowledged only after its batch reached the OS on the leader,
so SIGKILL at any moment never loses an acknowledged record. Each test produces numbered records
from a thread while the main thread SIGKILLs the broker at a seeded random moment, restarts it on
the same data dir and port, reads every partition from the beginning and checks that each
acknowledged record sits exactly at its acknowledged (partition, offset) with the same value, and
that new produces continue after the surviving records (no acknowledged offset is reused).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.slow

PARTITIONS = 3
PRODUCE_SECONDS = 3.0

Acked = dict[tuple[int, int], bytes]  # (partition, offset) -> value


@pytest.fixture
def bp(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data")
    b.start()
    try:
        yield b
    finally:
        b.kill()


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)
    futures[name].result(timeout=15)


def value_of(i: int) -> bytes:
    return f"record-{i:08d}-".encode() + b"x" * 64


def consume_all(bootstrap: str, topic: str, partitions: int = PARTITIONS, timeout: float = 30.0) -> Acked:
    """Every record of every partition, from the beginning up to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: Acked = {}
        remaining = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout
        while remaining and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= ends[msg.partition()]:
                        remaining.discard(msg.partition())
                    continue
                raise AssertionError(f"consumer error: {msg.error()}")
            key = (msg.partition(), msg.offset())
            assert key not in got, f"offset {key} delivered twice"
            got[key] = msg.value()
            if msg.offset() + 1 >= ends[msg.partition()]:
                remaining.discard(msg.partition())
        assert not remaining, (
            f"partitions {remaining} not read up to their high watermarks {ends} in {timeout}s"
        )
        return got
    finally:
        consumer.close()


def assert_acked_survived(acked: Acked, log: Acked, partitions: int = PARTITIONS) -> None:
    missing = {k: v for k, v in acked.items() if k not in log}
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    changed = {k for k, v in acked.items() if log[k] != v}
    assert not changed, f"{len(changed)} acknowledged records changed value, e.g. {sorted(changed)[:5]}"
    for p in range(partitions):
        offsets = sorted(o for q, o in log if q == p)
        assert offsets == list(range(len(offsets))), f"partition {p} has holes in its offsets"


def produce_after_restart(bootstrap: str, topic: str, acked: Acked, log: Acked) -> None:
    """A record produced to each partition after the restart lands right after the log's end."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    results: dict[int, tuple[int, bytes]] = {}

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        assert err is None, err
        results[msg.partition()] = (msg.offset(), msg.value())  # type: ignore[attr-defined]

    for p in range(PARTITIONS):
        producer.produce(topic, value=f"after-restart-{p}".encode(), partition=p, on_delivery=on_delivery)
    assert producer.flush(20) == 0, "produce after restart did not complete"
    producer.close()
    for p in range(PARTITIONS):
        end = 1 + max((o for q, o in log if q == p), default=-1)
        last_acked = max((o for q, o in acked if q == p), default=-1)
        offset, _ = results[p]
        assert offset == end, f"partition {p}: new record at {offset}, log ended at {end}"
        assert offset > last_acked, f"partition {p}: offset {offset} reuses an acknowledged offset"
    log2 = consume_all(bootstrap, topic)
    for p, (offset, value) in results.items():
        assert log2[(p, offset)] == value
    assert_acked_survived(acked, log2)


def run_confluent_producer(
    bootstrap: str, topic: str, stop: threading.Event, acked: Acked, failed: list[KafkaError]
) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    lock = threading.Lock()

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        with lock:
            if err is None:
                acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]
            else:
                failed.append(err)

    i = 0
    deadline = time.monotonic() + PRODUCE_SECONDS
    while time.monotonic() < deadline and not stop.is_set():
        for _ in range(50):
            try:
                producer.produce(topic, key=str(i).encode(), value=value_of(i), on_delivery=on_delivery)
                i += 1
            except BufferError:
                producer.poll(0.05)
        producer.poll(0.002)
    producer.poll(0)
    return producer


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill9_under_acks_all_confluent_producer_loses_nothing(bp: BrokerProcess, seed: int) -> None:
    rng = random.Random(seed)
    topic = f"kill9-{seed}-{uuid.uuid4().hex[:6]}"
    create_topic(bp.bootstrap_servers, topic)
    acked: Acked = {}
    failed: list[KafkaError] = []
    holder: list[Producer] = []
    stop = threading.Event()
    t = threading.Thread(
        target=lambda: holder.append(run_confluent_producer(bp.bootstrap_servers, topic, stop, acked, failed))
    )
    t.start()
    time.sleep(rng.uniform(0.3, PRODUCE_SECONDS - 0.5))
    bp.kill()
    t.join(PRODUCE_SECONDS + 10)
    assert not t.is_alive()
    producer = holder[0]
    producer.poll(0.5)  # deliver any reports already received before the kill
    producer.purge()  # everything else failed: purged messages report errors, not successes
    producer.flush(5)
    producer.close()
    snapshot = dict(acked)
    assert len(snapshot) > 0, "nothing was acknowledged before the kill: the test proves nothing"
    assert failed, "no record was in flight at the kill: the test proves nothing"

    bp.start()
    log = consume_all(bp.bootstrap_servers, topic)
    assert_acked_survived(snapshot, log)
    produce_after_restart(bp.bootstrap_servers, topic, snapshot, log)


@pytest.mark.parametrize("seed", [7])
def test_kill9_under_kafka_python_idempotent_producer_loses_nothing(bp: BrokerProcess, seed: int) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KPError
    from kafka.errors import KafkaTimeoutError

    rng = random.Random(seed)
    topic = f"kill9-kp-{uuid.uuid4().hex[:6]}"
    create_topic(bp.bootstrap_servers, topic)
    producer = KafkaProducer(
        bootstrap_servers=bp.bootstrap_servers, acks="all", enable_idempotence=True, max_block_ms=2000
    )
    acked: Acked = {}
    lock = threading.Lock()

    def run() -> None:
        deadline = time.monotonic() + PRODUCE_SECONDS
        i = 0
        while time.monotonic() < deadline:
            value = value_of(i)
            try:
                fut = producer.send(topic, key=str(i).encode(), value=value)
            except KPError:
                time.sleep(0.05)
                continue

            def ok(md: object, value: bytes = value) -> None:
                with lock:
                    acked[(md.partition, md.offset)] = value  # type: ignore[attr-defined]

            fut.add_callback(ok)
            i += 1
            if i % 200 == 0:
                time.sleep(0.005)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(rng.uniform(0.5, PRODUCE_SECONDS - 0.5))
    bp.kill()
    t.join(PRODUCE_SECONDS + 10)
    assert not t.is_alive()
    try:
        producer.close(timeout=1)
    except KafkaTimeoutError:  # batches in flight to the dead broker: abort them (they fail)
        producer._sender.force_close()
    with lock:
        snapshot = dict(acked)
    assert len(snapshot) > 0, "nothing was acknowledged before the kill: the test proves nothing"

    bp.start()
    log = consume_all(bp.bootstrap_servers, topic)
    assert_acked_survived(snapshot, log)
    produce_after_restart(bp.bootstrap_servers, topic, snapshot, log)


def test_kill9_of_idle_broker_keeps_everything_visible(bp: BrokerProcess) -> None:
    """Records acknowledged long before a kill are readable right after the restart.

    The high watermark must be rebuilt from the log on restart (the single replica is the whole
    ISR), not taken from a replication-offset checkpoint that may be stale or missing.
    """
    topic = f"kill9-idle-{uuid.uuid4().hex[:6]}"
    create_topic(bp.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": bp.bootstrap_servers, "acks": "all"})
    acked: Acked = {}

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = msg.value()  # type: ignore[attr-defined]

    for i in range(300):
        producer.produce(topic, key=str(i).encode(), value=value_of(i), on_delivery=on_delivery)
    assert producer.flush(20) == 0
    producer.close()
    assert len(acked) == 300
    bp.kill()
    bp.start()
    log = consume_all(bp.bootstrap_servers, topic)
    assert_acked_survived(acked, log)
    assert len(log) == 300
