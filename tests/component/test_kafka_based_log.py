"""The edge services' kit against an embedded broker: ``ensure_topic`` (create if missing, tolerate an
existing topic, refuse a mismatch) and ``KafkaBasedLog`` (compacted topic, read-your-writes, read to
the end, recovery by a new instance, a failing callback surfaced to writers)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.kafka_based_log import COMPACT, KafkaBasedLog, KafkaBasedLogError
from zurau.client.topic_admin import TopicMismatchError, ensure_topic
from zurau.client.types import ConsumerRecord
from zurau.embedded import EmbeddedBroker


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker() as b:
        yield b


@pytest_asyncio.fixture
async def cluster(broker: EmbeddedBroker) -> AsyncIterator[Cluster]:
    c = Cluster(ClientConfig.load(bootstrap_servers=broker.bootstrap_servers))
    await c.bootstrap()
    try:
        yield c
    finally:
        await c.close()


async def test_ensure_topic_creates_once_then_checks_what_exists(cluster: Cluster) -> None:
    admin = AdminClient(cluster)
    first = await ensure_topic(admin, NewTopic("kit-a", 3, 5, COMPACT), fit_to_brokers=True)
    assert (first.partitions, first.created) == (3, True)  # RF 5 fitted to the one live broker
    again = await ensure_topic(admin, NewTopic("kit-a", 1, 1), required_configs=COMPACT)
    assert (again.partitions, again.created) == (3, False)
    with pytest.raises(TopicMismatchError, match="partitions=3, 1 is required"):
        await ensure_topic(admin, NewTopic("kit-a", 1, 1), required_partitions=1)
    await ensure_topic(admin, NewTopic("kit-b", 1, 1))
    with pytest.raises(TopicMismatchError) as mismatch:
        await ensure_topic(admin, NewTopic("kit-b", 1, 1), required_configs=COMPACT)
    assert (mismatch.value.setting, mismatch.value.actual) == ("cleanup.policy", "delete")


async def test_log_reads_its_own_writes_in_order_and_a_new_instance_recovers_them(cluster: Cluster) -> None:
    seen: list[tuple[int, bytes | None, bytes | None]] = []

    def apply(record: ConsumerRecord) -> None:
        seen.append((record.partition, record.key, record.value))

    log = KafkaBasedLog(cluster, NewTopic("kit-log", 2, 1, COMPACT), apply)
    await log.start()
    try:
        assert seen == []
        meta = await log.write(b"k0", b"v0", partition=0)
        assert seen == [(0, b"k0", b"v0")] and meta.offset == 0  # applied before write returned
        await log.write_many([(b"k1", b"v1"), (b"k1", b"v2"), (b"k1", None)])
        assert [v for _, k, v in seen if k == b"k1"] == [b"v1", b"v2", None]  # in order per key
        await log.send(b"k2", b"v3", partition=1)
        await log.read_to_end()
        assert (1, b"k2", b"v3") in seen
    finally:
        await log.close()

    recovered: list[tuple[int, bytes | None, bytes | None]] = []
    again = KafkaBasedLog(cluster, NewTopic("kit-log", 7, 1, COMPACT),
                          lambda r: recovered.append((r.partition, r.key, r.value)))
    await again.start()  # reads everything written before it started
    try:
        assert again.partitions == 2  # the existing topic's count, not the NewTopic's
        assert sorted(recovered, key=repr) == sorted(seen, key=repr)
    finally:
        await again.close()


async def test_a_failing_callback_stops_the_reader_and_fails_later_writes(cluster: Cluster) -> None:
    def apply(record: ConsumerRecord) -> None:
        if record.value == b"bad":
            raise ValueError("cannot apply")

    log = KafkaBasedLog(cluster, NewTopic("kit-fail", 1, 1, COMPACT), apply)
    await log.start()
    try:
        await log.write(b"k", b"good")
        with pytest.raises(KafkaBasedLogError, match="cannot apply"):
            await log.write(b"k", b"bad")
        with pytest.raises(KafkaBasedLogError):
            await log.write(b"k", b"good again", timeout=5)
    finally:
        await log.close()
