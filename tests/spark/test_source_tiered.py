"""A batch read through ``format("zurau")`` of a tiered topic (issue 33): its first segments are in
remote storage (the ``file`` plugin) and deleted locally, and the job reads from offset 0 -- the
replay or backfill from the beginning that tiered storage is for -- every record byte-exact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.spark.conftest import produce
from tests.support.waiting import wait_for
from zurau.embedded import EmbeddedBroker

pytestmark = pytest.mark.slow

N = 300
VALUE = 10_000  # 300 x 10 kB: three 1 MiB segments (Kafka's smallest segment.bytes)


@pytest.fixture(scope="module")
def tiered_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    root = tmp_path_factory.mktemp("tiered")
    with EmbeddedBroker(
        root / "data",
        **{
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": "file",
            "rsm.config.dir": str(root / "remote"),
            "remote.log.manager.task.interval.ms": "200",
            "log.retention.check.interval.ms": "200",
            "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        },
    ) as broker:
        yield broker


def _value(i: int) -> bytes:
    return f"v{i}-".encode() + bytes([i % 251]) * VALUE


def test_batch_read_of_a_tiered_topic_from_offset_zero(spark: Any, tiered_broker: EmbeddedBroker) -> None:
    topic = "tiered-spark"
    tiered_broker.create_topic(
        topic,
        1,
        {
            "remote.storage.enable": "true",
            "segment.bytes": "1048576",
            "local.retention.bytes": "1048576",
            "retention.ms": "-1",
        },
    )
    bs = tiered_broker.bootstrap_servers
    produce(bs, topic, [{"key": f"k{i}".encode(), "value": _value(i)} for i in range(N)])

    probe = Consumer({"bootstrap.servers": bs, "group.id": "probe"})
    try:
        # EARLIEST_LOCAL (-4): the local log starts above the first segment, deleted after its copy.
        wait_for(
            lambda: probe.offsets_for_times([TopicPartition(topic, 0, -4)], 5)[0].offset > 0,
            timeout=60,
            what="the first segment tiered and deleted locally",
        )
        local_start = probe.offsets_for_times([TopicPartition(topic, 0, -4)], 5)[0].offset
        assert probe.get_watermark_offsets(TopicPartition(topic, 0), 5) == (0, N)
    finally:
        probe.close()

    rows = (
        spark.read.format("zurau")
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", topic)
        .load()
        .selectExpr("partition", "offset", "key", "value")
        .collect()
    )
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in rows)
    assert got == [(0, i, f"k{i}".encode(), _value(i)) for i in range(N)]
    assert local_start > 0  # some of them came from the remote tier
