"""confluent-kafka (librdkafka) against Zurau, on the client's default settings.

Per codec: create a 3-partition topic, produce 100,000 records with keys, headers and null
values, read them back byte-exact and in per-partition order, look offsets up by timestamp,
delete records, describe and alter configs, delete the topic.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from tests.compat.dataset import CODECS, assert_partition_matches, by_partition, make_records

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

N = 100_000
PARTITIONS = 3

pytestmark = pytest.mark.slow


def _produce(bootstrap: str, topic: str, records: list, codec: str) -> int:
    """Produce in two halves around a timestamp; return that timestamp (ms)."""
    errors: list = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(err)

    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec})
    half = len(records) // 2
    t_mid = 0
    for n, r in enumerate(records):
        if n == half:
            assert p.flush(60) == 0
            time.sleep(0.05)
            t_mid = int(time.time() * 1000)
            time.sleep(0.01)
        while True:
            try:
                p.produce(
                    topic,
                    value=r.value,
                    key=r.key,
                    partition=r.partition,
                    headers=list(r.headers) or None,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0, "records left undelivered"
    assert not errors, errors[:3]
    return t_mid


def _consume(bootstrap: str, topic: str, counts: dict[int, int], start: int = 0) -> dict[int, list]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"compat-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.assign([TopicPartition(topic, p, start) for p in counts])
        got: dict[int, list] = {p: [] for p in counts}
        deadline = time.monotonic() + 120
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            for m in c.consume(10000, 1.0):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(m.error())
                got[m.partition()].append((m.key(), m.value(), m.headers() or []))
        return got
    finally:
        c.close()


@pytest.mark.zurau_topic(partitions=PARTITIONS)
@pytest.mark.parametrize("codec", CODECS)
def test_full_cycle(zurau_broker: EmbeddedBroker, zurau_topic: str, codec: str) -> None:
    bootstrap, topic_name = zurau_broker.bootstrap_servers, zurau_topic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(topic_name, timeout=10)
    assert sorted(md.topics[topic_name].partitions) == [0, 1, 2]

    records = make_records(N, PARTITIONS, seed=hash(codec) & 0xFFFF)
    t_mid = _produce(bootstrap, topic_name, records, codec)
    expected = by_partition(records)

    got = _consume(bootstrap, topic_name, {p: len(v) for p, v in expected.items()})
    for p, recs in expected.items():
        assert_partition_matches(recs, got[p], f"{codec} partition {p}")

    # Offsets by timestamp: the first record of the second half in each partition.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ts-" + uuid.uuid4().hex[:6]})
    try:
        found = c.offsets_for_times(
            [TopicPartition(topic_name, p, t_mid) for p in range(PARTITIONS)], timeout=10
        )
        half = N // 2
        for tp in found:
            first_second_half = next(i for i, r in enumerate(expected[tp.partition]) if r.index >= half)
            assert tp.error is None
            assert tp.offset == first_second_half, (tp.partition, tp.offset, first_second_half)
        lo, hi = c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10)
        assert (lo, hi) == (0, len(expected[0]))
    finally:
        c.close()

    # Delete records below offset 1000 of partition 0, then read from the new start.
    res = admin.delete_records([TopicPartition(topic_name, 0, 1000)])
    low = list(res.values())[0].result(30)
    assert low.low_watermark == 1000
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "dr-" + uuid.uuid4().hex[:6]})
    try:
        assert c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=10)[0] == 1000
    finally:
        c.close()
    got0 = _consume(bootstrap, topic_name, {0: len(expected[0]) - 1000})
    assert_partition_matches(expected[0][1000:], got0[0], f"{codec} partition 0 after DeleteRecords")

    # Describe and alter configs.
    res = ConfigResource(ResourceType.TOPIC, topic_name)
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["retention.ms"].value == "604800000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["cleanup.policy"].value == "delete"
    alter = ConfigResource(
        ResourceType.TOPIC,
        topic_name,
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([alter])[alter].result(30)
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    bad = ConfigResource(
        ResourceType.TOPIC,
        topic_name,
        incremental_configs=[ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as ei:
        admin.incremental_alter_configs([bad])[bad].result(30)
    assert ei.value.args[0].code() == KafkaError.INVALID_CONFIG

    admin.delete_topics([topic_name])[topic_name].result(30)
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_errors_reach_the_client(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    bootstrap, topic_name = zurau_broker.bootstrap_servers, zurau_topic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with pytest.raises(KafkaException) as ei:
        admin.create_topics([NewTopic("bad name!", num_partitions=1, replication_factor=1)])[
            "bad name!"
        ].result(30)
    assert ei.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
    created = topic_name + "-new"
    admin.create_topics([NewTopic(created, num_partitions=1, replication_factor=1)])[created].result(30)
    admin.delete_topics([created])[created].result(30)
    with pytest.raises(KafkaException) as ei:
        admin.create_topics([NewTopic(topic_name, num_partitions=1, replication_factor=1)])[
            topic_name
        ].result(30)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaException) as ei:
        admin.create_topics([NewTopic(topic_name + "x", num_partitions=1, replication_factor=3)])[
            topic_name + "x"
        ].result(30)
    assert ei.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR

    # A record larger than max.message.bytes is refused with MSG_SIZE_TOO_LARGE.
    alter = ConfigResource(
        ResourceType.TOPIC,
        topic_name,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([alter])[alter].result(30)
    errs: list = []
    p = Producer({"bootstrap.servers": bootstrap, "message.send.max.retries": 0})
    p.produce(topic_name, b"x" * 5000, on_delivery=lambda e, m: errs.append(e))
    p.flush(30)
    assert errs and errs[0] is not None and errs[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
