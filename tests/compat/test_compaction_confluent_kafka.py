"""confluent-kafka (librdkafka) and a compacted topic: the changelog a consumer reads from the
beginning after cleaning, and the refusal of records without a key (librdkafka's test 0011
expects INVALID_RECORD in the delivery report)."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from zurau.embedded import EmbeddedBroker

pytestmark = pytest.mark.slow

TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(log_cleaner_backoff_ms=50) as b:
        yield b


def produce(bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes]]) -> list[KafkaError | None]:
    """Produce ``(key, value)`` pairs in order; one delivery error (or None) per record."""
    reports: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for key, value in items:
        p.produce(topic, value=value, key=key, partition=0, on_delivery=lambda err, _msg: reports.append(err))
        p.poll(0)
    assert p.flush(30) == 0
    return reports


def read_from_beginning(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes | None, bytes | None]]:
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}
    )
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while (not out or out[-1][0] < end - 1) and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            out.append((msg.offset(), msg.key(), msg.value()))
        return out
    finally:
        c.close()


def test_a_consumer_reads_the_compacted_changelog_from_the_beginning(broker: EmbeddedBroker) -> None:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, TOPIC_CONFIGS)
    rnd = random.Random(5)
    latest: dict[bytes, bytes | None] = {}
    for _round in range(8):  # segment.ms=100: each round lands in a segment of its own
        items: list[tuple[bytes | None, bytes]] = []
        for i in range(250):
            key = b"user-%02d" % rnd.randrange(25)
            items.append((key, b"v-%d-%d" % (_round, i)))
            latest[key] = items[-1][1]
        assert produce(broker.bootstrap_servers, topic, items) == [None] * len(items)
        time.sleep(0.12)
    assert produce(broker.bootstrap_servers, topic, [(b"last", b"rolls the rest")]) == [None]
    latest[b"last"] = b"rolls the rest"
    end = 2001
    cleaner = broker.broker.log_cleaner
    assert cleaner is not None
    deadline = time.monotonic() + 30
    while (cleaner.manager.checkpointed_offset(topic, 0) or 0) < end - 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    records = read_from_beginning(broker.bootstrap_servers, topic, end)
    offsets = [o for o, _k, _v in records]
    assert offsets == sorted(set(offsets)) and offsets[-1] == end - 1
    assert len(records) <= len(latest) + 1  # one record per key (and maybe the active segment's)
    assert {k: v for _o, k, v in records if k is not None} == latest


def test_a_record_without_a_key_gets_invalid_record(broker: EmbeddedBroker) -> None:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, TOPIC_CONFIGS)
    assert produce(broker.bootstrap_servers, topic, [(b"k", b"keyed")]) == [None]
    [err] = produce(broker.bootstrap_servers, topic, [(None, b"no key")])
    assert err is not None and err.code() == KafkaError.INVALID_RECORD, err
    assert not err.retriable()
    # As in Kafka, the whole batch holding a keyless record is refused.
    reports = produce(broker.bootstrap_servers, topic, [(b"k2", b"keyed"), (None, b"no key")])
    assert [e.code() if e else None for e in reports] == [KafkaError.INVALID_RECORD] * 2
    assert read_from_beginning(broker.bootstrap_servers, topic, 1) == [(0, b"k", b"keyed")]
