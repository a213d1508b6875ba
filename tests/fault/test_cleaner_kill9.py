"""kill -9 a broker while its log cleaner compacts: no latest value is lost, no deleted key returns.

A broker process cleans a compacted topic non-stop (segments roll every 100 ms, the cleaner
wakes every 20 ms, any dirty byte makes the log cleanable, tombstones expire after 300 ms) while
a confluent-kafka producer (acks=all) writes values and tombstones over a set of keys. Each round
SIGKILLs the broker at a seeded random moment, restarts it on the same data dir and reads the
partition from the beginning. For every key, what the consumer ends with must be the key's latest
acknowledged record or a later one that was written but not acknowledged; a key whose latest
acknowledged record is a tombstone may also be absent, never back at an older value.
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

ROUNDS = 5
KEYS = 400
TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "300",
}
BROKER = {"log.cleaner.backoff.ms": "20", "num.partitions": "1"}

Written = dict[bytes, list[tuple[int, bytes | None]]]  # key -> (offset or -1 if unacked, value)


@pytest.fixture
def bp(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data", log_level="INFO", **BROKER)
    b.start()
    try:
        yield b
    finally:
        b.kill()


def produce_until_killed(
    bootstrap: str, topic: str, rng: random.Random, round_: int, stop: threading.Event
) -> Written:
    """Write until ``stop``; return every record sent, with its offset once acknowledged."""
    written: Written = {}
    acked: dict[int, int] = {}  # index in ``sent`` -> acknowledged offset
    lock = threading.Lock()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})

    def on_delivery(index: int, err: KafkaError | None, msg: object) -> None:
        if err is None:
            with lock:
                acked[index] = msg.offset()  # type: ignore[attr-defined]

    sent: list[tuple[bytes, bytes | None]] = []
    while not stop.is_set():
        i = len(sent)
        key = b"k%04d" % rng.randrange(KEYS)
        value = None if rng.random() < 0.05 else b"r%d-%07d-" % (round_, i) + b"x" * rng.randrange(20, 200)
        try:
            producer.produce(
                topic, key=key, value=value, partition=0, on_delivery=lambda e, m, i=i: on_delivery(i, e, m)
            )
            sent.append((key, value))
        except BufferError:
            producer.poll(0.02)
        if i % 50 == 0:
            producer.poll(0.002)
    producer.poll(0.5)
    producer.purge()
    producer.flush(5)
    with lock:
        for i, (key, value) in enumerate(sent):
            written.setdefault(key, []).append((acked.get(i, -1), value))
    return written


def read_partition(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes, bytes | None]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                if msg.offset() >= end:
                    return out
                continue
            out.append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() + 1 >= end:
                return out
        raise AssertionError(f"partition not read up to its high watermark {end}")
    finally:
        c.close()


def check(history: Written, records: list[tuple[int, bytes, bytes | None]]) -> None:
    offsets = [o for o, _k, _v in records]
    assert offsets == sorted(set(offsets)), "offsets are not strictly increasing"
    final: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, key, value in records:
        final[key] = (offset, value)
    for key, sent in history.items():
        acked = [(o, v) for o, v in sent if o >= 0]
        if not acked:
            continue
        last_offset, last_value = max(acked, key=lambda ov: ov[0])
        later = {v for o, v in sent if o < 0 or o > last_offset}
        if key not in final:
            assert last_value is None or None in later, f"{key!r} lost its latest value {last_value!r}"
            continue
        offset, value = final[key]
        assert offset >= last_offset, f"{key!r} is back at offset {offset}, older than {last_offset}"
        if offset == last_offset:
            assert value == last_value, f"{key!r} at {offset} reads {value!r}, not {last_value!r}"
        else:
            assert value in later, f"{key!r} at {offset} reads {value!r}, which was never written after"


@pytest.mark.parametrize("seed", [11])
def test_kill9_while_cleaning_loses_no_latest_value(bp: BrokerProcess, seed: int) -> None:
    rng = random.Random(seed)
    topic = f"compact-kill9-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bp.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config=TOPIC_CONFIGS)])[topic].result(15)
    history: Written = {}
    caught_mid_clean = 0
    for round_ in range(ROUNDS):
        stop = threading.Event()
        result: list[Written] = []

        def produce(r: int = round_, out: list[Written] = result, until: threading.Event = stop) -> None:
            out.append(produce_until_killed(bp.bootstrap_servers, topic, rng, r, until))

        t = threading.Thread(target=produce)
        t.start()
        time.sleep(rng.uniform(0.8, 2.5))
        bp.kill()
        stop.set()
        t.join(30)
        assert not t.is_alive() and result
        partition_dir = bp.data_dir / f"{topic}-0"
        if any(p.name.endswith((".cleaned", ".swap", ".deleted")) for p in partition_dir.iterdir()):
            caught_mid_clean += 1
        for key, sent in result[0].items():
            history.setdefault(key, []).extend(sent)
        assert sum(o >= 0 for sent in result[0].values() for o, _v in sent) > 0, "nothing acknowledged"
        bp.start()
        check(history, read_partition(bp.bootstrap_servers, topic))
    log = bp.log_text()
    assert log.count(f"cleaned {topic}-0") >= ROUNDS, "the cleaner hardly ran: the test proves little"
    print(f"{caught_mid_clean} of {ROUNDS} kills left cleaner files behind")
