"""Dynamic ``log.cleaner.*`` and ``num.replica.fetchers`` on running brokers over real sockets
(broker/broker_reconfigurables.py): IncrementalAlterConfigs on a BROKER resource restarts the log
cleaner with the new thread count and compaction goes on; a cluster default resizes every
follower's fetcher pool and replication goes on (acks=all produce, every replica in the ISR);
DescribeConfigs shows them as dynamic; a restart applies the stored values at start."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from tests.component.test_log_compaction import BROKER, COMPACTED, cfg, eventually, plog, read_from_start
from zurau.client import AdminClient, ClientConfig, Producer
from zurau.client.admin import (
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from zurau.embedded import EmbeddedBroker, EmbeddedCluster

pytestmark = pytest.mark.timeout(180)


async def _describe(admin: AdminClient, node: int, name: str) -> ConfigEntry:
    res = ConfigResource(ResourceType.BROKER, str(node))
    entries = (await admin.describe_configs([res], [name]))[res]
    assert not isinstance(entries, Exception), entries
    [entry] = [e for e in entries if e.name == name]
    return entry


async def _alter(admin: AdminClient, resource: str, **values: str) -> None:
    res = ConfigResource(ResourceType.BROKER, resource)
    ops = [AlterConfigOp(name.replace("_", "."), value=v) for name, v in values.items()]
    assert (await admin.incremental_alter_configs({res: ops}))[res] is None


async def _produce_rounds(b: EmbeddedBroker, latest: dict[bytes, bytes], rounds: int, seed: int) -> None:
    rnd = random.Random(seed)
    async with Producer(cfg(b), linger_ms=1, batch_size=512) as p:
        for i in range(rounds * 100):
            key = b"key-%02d" % rnd.randrange(15)
            latest[key] = b"value-%d-%05d" % (seed, i)
            await p.send("table", latest[key], key=key)
            if i % 100 == 99:  # a segment per round (segment.ms=100)
                await p.flush()
                await asyncio.sleep(0.12)
        latest[b"last"] = b"rolls the segment before it %d" % seed
        await p.send_and_wait("table", latest[b"last"], key=b"last")


async def test_log_cleaner_threads_change_on_a_running_broker_and_compaction_goes_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    latest: dict[bytes, bytes] = {}
    async with EmbeddedBroker(data, **BROKER) as b:
        node = b.broker.node_id
        cleaner = b.broker.log_cleaner
        assert cleaner is not None and cleaner.config.threads == 1
        async with AdminClient(cfg(b)) as admin:
            assert await admin.create_topics([NewTopic("table", 1, 1, COMPACTED)]) == {"table": None}
            await _produce_rounds(b, latest, 4, seed=1)
            # the change lands while the cleaner has work (a pass may be in flight)
            await _alter(admin, str(node), log_cleaner_threads="2", log_cleaner_io_buffer_size="65536")
            await _alter(admin, "", log_cleaner_backoff_ms="40")
            await eventually(
                "the cleaner runs 2 workers with the new config",
                lambda: (cleaner.config.threads, cleaner.config.io_buffer_size, cleaner.config.backoff_ms)
                == (2, 65536, 40),
            )
            assert len(cleaner.cleaners) == 2 and not cleaner.reconfiguring
            assert b.broker.log_cleaner is cleaner, "the same cleaner (its checkpoints) reconfigured"
            await _produce_rounds(b, latest, 4, seed=2)
            threads = await _describe(admin, node, "log.cleaner.threads")
            assert (threads.value, threads.source, threads.read_only) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
            backoff = await _describe(admin, node, "log.cleaner.backoff.ms")
            assert (backoff.value, backoff.source) == ("40", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        rolled_at = plog(b, "table").active_segment.base_offset
        await eventually(
            "everything below the active segment compacted",
            lambda: (cleaner.manager.checkpointed_offset("table", 0) or 0) >= rolled_at,
        )
        records = await read_from_start(b, "table")
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets)) and len(records) < 40
        assert {r.key: r.value for r in records} == latest, "every key keeps its latest value"
    # a restart on the same data: the stored value is the one the cleaner starts with
    async with EmbeddedBroker(data, **BROKER) as b:
        cleaner = b.broker.log_cleaner
        assert cleaner is not None and (cleaner.config.threads, len(cleaner.cleaners)) == (2, 2)
        assert {r.key: r.value for r in await read_from_start(b, "table")} == latest


CLUSTER = {
    "replica.lag.time.max.ms": "10000",
    "replica.fetch.wait.max.ms": "100",
    "replica.fetch.backoff.ms": "50",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
}


async def test_num_replica_fetchers_as_cluster_default_resizes_every_followers_pool() -> None:
    async with EmbeddedCluster(3, **CLUSTER) as c:
        client = ClientConfig.load(bootstrap_servers=c.bootstrap_servers)
        async with AdminClient(client) as admin:
            assert await admin.create_topics([NewTopic("r", 8, 3)]) == {"r": None}
            sent: dict[int, int] = {}

            async def produce(n: int) -> None:
                async with Producer(client, acks=-1, linger_ms=1) as p:
                    for i in range(n):
                        md = await p.send_and_wait("r", b"v%d" % i, key=b"k%d" % i)
                        sent[md.partition] = sent.get(md.partition, 0) + 1

            await produce(80)
            for i in (1, 2, 3):
                fetchers = c.node(i).fetchers
                assert fetchers is not None and {fid for _leader, fid in fetchers.fetchers} == {0}
            producing = asyncio.create_task(produce(200))  # acks=all produce while the pools resize
            await _alter(admin, "", num_replica_fetchers="3")
            for i in (1, 2, 3):
                broker = c.node(i)
                await eventually(f"node {i} runs 3 fetchers per leader", lambda b=broker: b.fetchers.num_fetchers == 3)
                assert len({fid for _leader, fid in broker.fetchers.fetchers}) > 1, "partitions moved"
            await producing
            await produce(80)
            entry = await _describe(admin, 2, "num.replica.fetchers")
            assert (entry.value, entry.source, entry.read_only) == ("3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)

            def replicas_equal() -> bool:
                for p in range(8):
                    ends = {c.node(i).replica_manager.get("r", p).log_end_offset for i in (1, 2, 3)}
                    if len(ends) != 1:
                        return False
                return True

            await eventually("every replica holds the same records", replicas_equal)
            assert sum(c.node(1).replica_manager.get("r", p).log_end_offset for p in range(8)) == sum(
                sent.values()
            ) == 360, "no record lost or appended twice"
            [desc] = (await admin.describe_topics(["r"])).values()
            assert not isinstance(desc, Exception)
            assert all(sorted(p.isr) == [1, 2, 3] for p in desc.partitions), desc
