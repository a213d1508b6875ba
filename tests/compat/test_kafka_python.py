"""kafka-python against Zurau, on the client's default settings (idempotent producer)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import (
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
)

from tests.compat.dataset import CODECS, assert_partition_matches, by_partition, make_records

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

N = 100_000
PARTITIONS = 3

pytestmark = pytest.mark.slow


def _consume(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        tps = [TopicPartition(topic, p) for p in counts]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got: dict[int, list] = {p: [] for p in counts}
        deadline = time.monotonic() + 180
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            for tp, msgs in c.poll(timeout_ms=1000, max_records=10000).items():
                got[tp.partition].extend((m.key, m.value, list(m.headers or [])) for m in msgs)
        return got
    finally:
        c.close()


@pytest.mark.zurau_topic(partitions=PARTITIONS)
@pytest.mark.parametrize("codec", CODECS)
def test_full_cycle(zurau_broker: EmbeddedBroker, zurau_topic: str, codec: str) -> None:
    bootstrap, topic_name = zurau_broker.bootstrap_servers, zurau_topic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        # kafka-python's producer accepts only (str, bytes) headers: no null header values.
        records = make_records(N, PARTITIONS, seed=len(codec), null_header_values=False)
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec)
        half = N // 2
        t_mid = 0
        futures = []
        for n, r in enumerate(records):
            if n == half:
                p.flush(60)
                time.sleep(0.05)
                t_mid = int(time.time() * 1000)
                time.sleep(0.01)
            futures.append(
                p.send(topic_name, value=r.value, key=r.key, partition=r.partition, headers=list(r.headers))
            )
        p.flush(60)
        p.close()
        assert all(f.succeeded() for f in futures), [f.exception for f in futures if not f.succeeded()][:3]
        expected = by_partition(records)

        got = _consume(bootstrap, topic_name, {q: len(v) for q, v in expected.items()})
        for q, recs in expected.items():
            assert_partition_matches(recs, got[q], f"{codec} partition {q}")

        c = KafkaConsumer(bootstrap_servers=bootstrap)
        try:
            tps = [TopicPartition(topic_name, q) for q in range(PARTITIONS)]
            found = c.offsets_for_times({tp: t_mid for tp in tps})
            for tp, ot in found.items():
                first = next(i for i, r in enumerate(expected[tp.partition]) if r.index >= half)
                assert ot is not None and ot.offset == first, (tp, ot, first)
            assert c.end_offsets(tps) == {tp: len(expected[tp.partition]) for tp in tps}
        finally:
            c.close()

        lows = admin.delete_records({TopicPartition(topic_name, 0): 1000})
        assert list(lows.values())[0]["low_watermark"] == 1000
        c = KafkaConsumer(bootstrap_servers=bootstrap)
        try:
            assert c.beginning_offsets([TopicPartition(topic_name, 0)]) == {
                TopicPartition(topic_name, 0): 1000
            }
        finally:
            c.close()

        resource = ConfigResource(ConfigResourceType.TOPIC, topic_name)
        described = admin.describe_configs([resource], config_filter="all")
        entries = _entries(described, topic_name)
        assert entries["retention.ms"] == "604800000"
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic_name, configs={"retention.ms": "3600000"})]
        )
        entries = _entries(admin.describe_configs([resource], config_filter="all"), topic_name)
        assert entries["retention.ms"] == "3600000"

        admin.delete_topics([topic_name])
        assert topic_name not in admin.list_topics()
    finally:
        admin.close()


def _entries(described: object, topic: str) -> dict[str, str | None]:
    """Flatten kafka-python 3's describe_configs result to {name: value}."""
    found: dict[str, str | None] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, dict) and "value" in v:
                    found[k] = v["value"]
                else:
                    walk(v)
        elif isinstance(node, (list, tuple)):
            for x in node:
                walk(x)

    walk(described)
    assert found, f"no config entries in {described!r}"
    return found


def test_admin_errors(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    bootstrap, topic_name = zurau_broker.bootstrap_servers, zurau_topic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        with pytest.raises(InvalidTopicError):
            admin.create_topics([NewTopic("bad/name", num_partitions=1, replication_factor=1)])
        admin.create_topics([NewTopic(topic_name + "-new", num_partitions=1, replication_factor=1)])
        admin.delete_topics([topic_name + "-new"])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(topic_name, num_partitions=1, replication_factor=1)])
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic(topic_name + "2", num_partitions=1, replication_factor=2)])
    finally:
        admin.close()
