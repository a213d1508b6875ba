"""aiokafka against Zurau, on the client's default settings (acks=1, not idempotent)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.admin.records_to_delete import RecordsToDelete

from tests.compat.dataset import CODECS, assert_partition_matches, by_partition, make_records

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

N = 100_000
PARTITIONS = 3

pytestmark = pytest.mark.slow


async def _consume(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list]:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in counts]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        got: dict[int, list] = {p: [] for p in counts}
        deadline = time.monotonic() + 180
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=1000, max_records=10000)
            for tp, msgs in batch.items():
                got[tp.partition].extend((m.key, m.value, list(m.headers or [])) for m in msgs)
        return got
    finally:
        await c.stop()


def _config_value(responses: list, name: str) -> str | None:
    for resp in responses:
        for res in resp.resources:
            for entry in res[4]:
                if entry[0] == name:
                    return entry[1]
    raise AssertionError(f"{name} not in {responses!r}")


@pytest.mark.zurau_topic(partitions=PARTITIONS)
@pytest.mark.parametrize("codec", CODECS)
async def test_full_cycle(zurau_broker: EmbeddedBroker, zurau_topic: str, codec: str) -> None:
    bootstrap, topic_name = zurau_broker.bootstrap_servers, zurau_topic
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        # The topic exists (zurau_topic); aiokafka's CreateTopics is exercised on a second one.
        await admin.create_topics([NewTopic(topic_name + "-new", num_partitions=1, replication_factor=1)])
        await admin.delete_topics([topic_name + "-new"])
        # aiokafka's producer rejects null header values; the dataset leaves them out here.
        records = make_records(N, PARTITIONS, seed=len(codec) + 100, null_header_values=False)
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec)
        await p.start()
        half = N // 2
        t_mid = 0
        try:
            futures = []
            for n, r in enumerate(records):
                if n == half:
                    await p.flush()
                    await asyncio.sleep(0.05)
                    t_mid = int(time.time() * 1000)
                    await asyncio.sleep(0.01)
                futures.append(
                    await p.send(
                        topic_name, value=r.value, key=r.key, partition=r.partition, headers=list(r.headers)
                    )
                )
            await asyncio.gather(*futures)
        finally:
            await p.stop()
        expected = by_partition(records)

        got = await _consume(bootstrap, topic_name, {q: len(v) for q, v in expected.items()})
        for q, recs in expected.items():
            assert_partition_matches(recs, got[q], f"{codec} partition {q}")

        c = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await c.start()
        try:
            tps = [TopicPartition(topic_name, q) for q in range(PARTITIONS)]
            found = await c.offsets_for_times({tp: t_mid for tp in tps})
            for tp, ot in found.items():
                first = next(i for i, r in enumerate(expected[tp.partition]) if r.index >= half)
                assert ot is not None and ot.offset == first, (tp, ot, first)
            ends = await c.end_offsets(tps)
            assert ends == {tp: len(expected[tp.partition]) for tp in tps}
        finally:
            await c.stop()

        lows = await admin.delete_records({TopicPartition(topic_name, 0): RecordsToDelete(1000)})
        assert list(lows.values())[0] == 1000

        resource = ConfigResource(ConfigResourceType.TOPIC, topic_name)
        assert _config_value(await admin.describe_configs([resource]), "retention.ms") == "604800000"
        await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic_name, configs={"retention.ms": "3600000"})]
        )
        assert _config_value(await admin.describe_configs([resource]), "retention.ms") == "3600000"

        await admin.delete_topics([topic_name])
        assert topic_name not in await admin.list_topics()
    finally:
        await admin.close()
