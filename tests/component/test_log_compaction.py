"""Compaction through a running broker: compacted topics, ``__consumer_offsets``, DescribeLogDirs.

The broker runs in-process (EmbeddedBroker, async mode) with small segments and a log cleaner
that wakes every 50 ms; clients are Zurau's own and the test's wire client.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.component.kafka_wire import KafkaWireClient
from zurau.client import AdminClient, ClientConfig, Consumer, Producer, TopicPartition
from zurau.client.admin import NewTopic
from zurau.client.groups_admin import GroupAdmin
from zurau.embedded import EmbeddedBroker
from zurau.protocol.errors import InvalidRecordError
from zurau.storage.partition_log import PartitionLog

DESCRIBE_LOG_DIRS = 35

# segment.bytes cannot go below 1 MiB (as in Kafka), so segments roll by age here: a compacted
# log rolls at max.compaction.lag.ms (it also makes a segment that old cleanable at once).
BROKER = {
    "log.cleaner.backoff.ms": "50",
    "log.cleaner.max.compaction.lag.ms": "200",
    "log.cleaner.min.cleanable.ratio": "0.3",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}
COMPACTED = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.1"}


def cfg(b: EmbeddedBroker) -> ClientConfig:
    return ClientConfig.load(bootstrap_servers=b.bootstrap_servers)


def plog(b: EmbeddedBroker, topic: str, partition: int = 0) -> PartitionLog:
    log = b.broker.log_manager.get(topic, partition)
    assert log is not None
    return log


async def eventually(what: str, cond: Callable[[], bool | Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = cond()
        if not isinstance(got, bool):
            got = await got
        if got:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.05)


async def read_from_start(b: EmbeddedBroker, topic: str) -> list[Any]:
    tp = TopicPartition(topic, 0)
    end = plog(b, topic).high_watermark
    out: list[Any] = []
    async with Consumer(cfg(b), auto_offset_reset="earliest") as c:
        c.assign([tp])
        while not out or out[-1].offset < end - 1:
            for recs in (await c.getmany(200)).values():
                out.extend(recs)
    return out


async def test_a_compacted_topic_is_cleaned_and_reads_as_a_changelog(tmp_path: Path) -> None:
    async with EmbeddedBroker(tmp_path / "data", **BROKER) as b:
        async with AdminClient(cfg(b)) as admin:
            assert await admin.create_topics([NewTopic("table", 1, 1, COMPACTED)]) == {"table": None}
        latest: dict[bytes, bytes] = {}
        rnd = random.Random(3)
        async with Producer(cfg(b), linger_ms=1, batch_size=512) as p:
            for i in range(1500):
                key = b"key-%02d" % rnd.randrange(20)
                latest[key] = b"value-%05d" % i
                await p.send("table", latest[key], key=key)
                if i % 150 == 149:  # ten rounds, each in a segment of its own (segment.ms=100)
                    await p.flush()
                    await asyncio.sleep(0.12)
            # A record without a key is refused: INVALID_RECORD (87).
            fut = await p.send("table", b"no key", key=None, partition=0)
            await p.flush()
            with pytest.raises(InvalidRecordError) as e:
                await fut
            assert e.value.code == 87
            await asyncio.sleep(0.15)
            latest[b"last"] = b"rolls the segment before it"
            await p.send_and_wait("table", latest[b"last"], key=b"last")
        log = plog(b, "table")
        assert log.log_end_offset == 1501
        rolled_at = log.active_segment.base_offset
        cleaner = b.broker.log_cleaner
        assert cleaner is not None
        await eventually(
            "the cleaner compacted everything below the active segment",
            lambda: (cleaner.manager.checkpointed_offset("table", 0) or 0) >= rolled_at,
        )
        assert cleaner.passes > 0
        records = await read_from_start(b, "table")
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets)) and len(records) < 30  # gaps, never renumbered
        changelog = {r.key: r.value for r in records}
        assert changelog == latest
        # DescribeLogDirs reports the cleaned size.
        host, port = b.broker.listen_addresses[0]
        async with await KafkaWireClient.connect(host, port) as wire:
            r = await wire.request(DESCRIBE_LOG_DIRS, 1, {"topics": [{"topic": "table", "partitions": [0]}]})
        [part] = [p for d in r["results"] for t in d["topics"] for p in t["partitions"]]
        assert part["partition_size"] == log.size_in_bytes


async def test_consumer_offsets_stay_bounded_and_replay_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    tps = [TopicPartition("orders", i) for i in range(3)]
    async with EmbeddedBroker(data, **BROKER) as b:
        async with AdminClient(cfg(b)) as admin:
            await admin.create_topics([NewTopic("orders", 3, 1)])
            groups = GroupAdmin(admin)
            for i in range(1, 1201):
                result = await groups.commit_offsets("g", {tp: i * 10 + tp.partition for tp in tps})
                assert all(err is None for err in result.values())
                if i == 600:
                    await groups.commit_offsets("other", {tps[0]: 1})
            await asyncio.sleep(0.25)  # one more commit rolls the active segment (max.compaction.lag.ms)
            await groups.commit_offsets("g", {tp: 12000 + tp.partition for tp in tps})
            offsets_log = plog(b, "__consumer_offsets")
            assert offsets_log.log_end_offset >= 3604
            size_uncompacted = 3601 * 90  # each commit appends a batch of three ~80-byte records
            # Every commit rewrote the same keys: cleaning keeps the partition small.
            await eventually(
                "__consumer_offsets was compacted", lambda: offsets_log.size_in_bytes < size_uncompacted / 10
            )
            assert offsets_log.log_start_offset == 0 and offsets_log.segment_count > 1
            size_compacted = offsets_log.size_in_bytes
            assert await groups.committed_offsets("g") == {tp: 12000 + tp.partition for tp in tps}
    # A restart replays the compacted partition (with its offset gaps) to the same offsets.
    async with EmbeddedBroker(data, **BROKER) as b:
        offsets_log = plog(b, "__consumer_offsets")
        assert offsets_log.size_in_bytes <= size_compacted + 4096
        async with AdminClient(cfg(b)) as admin:
            groups = GroupAdmin(admin)
            assert await groups.committed_offsets("g") == {tp: 12000 + tp.partition for tp in tps}
            assert await groups.committed_offsets("other") == {tps[0]: 1}


async def test_no_cleaning_with_log_cleaner_threads_0(tmp_path: Path) -> None:
    async with EmbeddedBroker(tmp_path / "data", **{**BROKER, "log.cleaner.threads": "0"}) as b:
        assert b.broker.log_cleaner is None
        async with AdminClient(cfg(b)) as admin:
            await admin.create_topics([NewTopic("table", 1, 1, COMPACTED)])
        async with Producer(cfg(b), linger_ms=0) as p:
            for i in range(3):
                for _ in range(20):
                    await p.send("table", b"v%d" % i, key=b"same")
                await p.flush()
                await asyncio.sleep(0.12)  # a segment per round
        await asyncio.sleep(0.3)
        assert plog(b, "table").segment_count == 3
        assert len(await read_from_start(b, "table")) == 60  # nothing was compacted
