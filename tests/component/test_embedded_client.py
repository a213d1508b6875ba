"""zurau.client against an embedded broker (async mode, the caller's loop): producer, consumer,
admin and consumer groups. Results are cross-checked with confluent-kafka where a second opinion
helps."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from zurau.client import AdminClient, ClientConfig, Consumer, Producer, TopicPartition
from zurau.client.admin import EARLIEST, LATEST, NewTopic
from zurau.client.errors import ClientError
from zurau.embedded import EmbeddedBroker
from zurau.protocol.errors import OffsetOutOfRangeError, UnknownTopicOrPartitionError


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


def cfg(b: EmbeddedBroker) -> ClientConfig:
    return ClientConfig.load(bootstrap_servers=b.bootstrap_servers)


async def consume_all(b: EmbeddedBroker, tps: list[TopicPartition], n: int, **kw: object) -> list:
    out = []
    async with Consumer(cfg(b), auto_offset_reset="earliest", **kw) as c:  # type: ignore[arg-type]
        c.assign(tps)
        for _ in range(100):
            for recs in (await c.getmany(200)).values():
                out.extend(recs)
            if len(out) >= n:
                break
    return out


async def test_many_records_keep_per_partition_order_and_clean_up(broker: EmbeddedBroker) -> None:
    tasks_before = asyncio.all_tasks()
    async with AdminClient(cfg(broker)) as admin:
        assert (await admin.create_topics([NewTopic("orders", 3, 1)])) == {"orders": None}
    async with Producer(cfg(broker), compression="lz4", linger_ms=2, batch_size=4096) as p:
        futs = [await p.send("orders", f"{i}".encode(), key=f"k{i % 17}".encode()) for i in range(6000)]
        await p.flush()
        metas = await asyncio.gather(*futs)
    assert {m.partition for m in metas} == {0, 1, 2}
    got = await consume_all(broker, [TopicPartition("orders", i) for i in range(3)], 6000)
    assert len(got) == 6000
    by_partition: dict[int, list[int]] = {}
    for r in got:
        by_partition.setdefault(r.partition, []).append(r.offset)
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))
    # Each record is where its ack said it was.
    placed = {(m.partition, m.offset): i for i, m in enumerate(metas)}
    assert all(placed[(r.partition, r.offset)] == int(r.value) for r in got)
    leftover = {t for t in asyncio.all_tasks() - tasks_before if not t.done()}
    assert leftover == set()


async def test_records_before_the_fetch_offset_in_a_compressed_batch_are_skipped(
    broker: EmbeddedBroker,
) -> None:
    async with Producer(cfg(broker), compression="zstd", linger_ms=50, batch_size=1 << 20) as p:
        futs = [await p.send("batch", f"v{i}".encode(), partition=0) for i in range(10)]
        await p.flush()
        assert [m.offset for m in await asyncio.gather(*futs)] == list(range(10))
    tp = TopicPartition("batch", 0)
    async with Consumer(cfg(broker)) as c:
        c.assign([tp])
        c.seek(tp, 6)
        got = (await c.getmany(2000))[tp]
        assert [r.value for r in got] == [b"v6", b"v7", b"v8", b"v9"]
        assert await c.position(tp) == 10
        assert c.high_watermark(tp) == 10


async def test_offset_out_of_range_resets_or_raises(broker: EmbeddedBroker) -> None:
    tp = TopicPartition("range", 0)
    async with Producer(cfg(broker), linger_ms=0) as p:
        for i in range(5):
            await p.send("range", f"r{i}".encode(), partition=0)
    async with AdminClient(cfg(broker)) as admin:
        assert (await admin.delete_records({tp: 2}))[tp] == 2
        offsets = await admin.list_offsets({tp: EARLIEST})
        assert offsets[tp].offset == 2  # type: ignore[union-attr]
    async with Consumer(cfg(broker), auto_offset_reset="earliest") as c:
        c.assign([tp])
        c.seek(tp, 0)  # below the log start offset
        assert [r.value for r in (await c.getmany(2000))[tp]] == [b"r2", b"r3", b"r4"]
    async with Consumer(cfg(broker), auto_offset_reset="latest") as c:
        c.assign([tp])
        c.seek(tp, 100)  # beyond the end
        assert await c.getmany(300) == {}
        assert await c.position(tp) == 5
    async with Consumer(cfg(broker), auto_offset_reset="none") as c:
        c.assign([tp])
        c.seek(tp, 100)
        with pytest.raises(OffsetOutOfRangeError):
            await c.getmany(1000)


async def test_acks_zero_and_idempotence(broker: EmbeddedBroker) -> None:
    async with Producer(cfg(broker), acks=0, linger_ms=0) as p:
        md = await (await p.send("acks", b"fire and forget", partition=0))
        assert md.offset == -1
    async with Producer(cfg(broker), enable_idempotence=True) as p:
        assert p.producer_id >= 0 and p.producer_epoch >= 0
        futs = [await p.send("acks", f"i{i}".encode(), partition=0) for i in range(100)]
        await p.flush()
        assert [m.offset for m in await asyncio.gather(*futs)] == list(range(1, 101))
    got = await consume_all(broker, [TopicPartition("acks", 0)], 101)
    assert [r.value for r in got] == [b"fire and forget"] + [f"i{i}".encode() for i in range(100)]


async def test_producer_errors_are_raised_at_send(broker: EmbeddedBroker) -> None:
    async with AdminClient(cfg(broker)) as admin:
        await admin.create_topics([NewTopic("small", 2, 1, {"max.message.bytes": "2000"})])
    async with Producer(cfg(broker), allow_auto_topic_creation=False, max_request_size=10_000) as p:
        with pytest.raises(UnknownTopicOrPartitionError):
            await p.send("never-created", b"x")
        with pytest.raises(UnknownTopicOrPartitionError, match="has no partition 5"):
            await p.send("small", b"x", partition=5)
        with pytest.raises(Exception, match="max.request.size"):
            await p.send("small", b"x" * 20_000)
        fut = await p.send("small", b"y" * 5000, partition=0)  # fits the request, not the topic
        await p.flush()
        with pytest.raises(Exception) as ei:
            await fut
        assert getattr(ei.value, "code", None) == 10  # MESSAGE_TOO_LARGE


async def test_admin_describe_and_offsets(broker: EmbeddedBroker) -> None:
    async with AdminClient(cfg(broker)) as admin:
        await admin.create_topics([NewTopic("desc", 2, 1)])
        async with Producer(admin.cluster, linger_ms=0) as p:
            for i in range(7):
                await p.send("desc", b"x", partition=1, timestamp_ms=1_000 + i)
        d = await admin.describe_topics(["desc", "missing"])
        assert isinstance(d["missing"], UnknownTopicOrPartitionError)
        parts = d["desc"].partitions  # type: ignore[union-attr]
        assert [(p.log_start_offset, p.log_end_offset) for p in parts] == [(0, 0), (0, 7)]
        found = await admin.list_offsets(
            {TopicPartition("desc", 1): 1_004, TopicPartition("desc", 0): LATEST}
        )
        assert found[TopicPartition("desc", 1)].offset == 4  # type: ignore[union-attr]
        assert found[TopicPartition("desc", 0)].offset == 0  # type: ignore[union-attr]
        assert "desc" in await admin.list_topics()


async def test_consumer_group_splits_partitions_and_rebalances(broker: EmbeddedBroker) -> None:
    async with AdminClient(cfg(broker)) as admin:
        await admin.create_topics([NewTopic("grouped", 4, 1)])
    group = f"g-{uuid.uuid4().hex[:6]}"
    kw = {
        "group_id": group,
        "heartbeat_interval_ms": 100,
        "session_timeout_ms": 6000,
        "auto_offset_reset": "earliest",
    }
    c1, c2 = Consumer(cfg(broker), **kw), Consumer(cfg(broker), **kw)  # type: ignore[arg-type]
    try:
        assert sorted(await c1.subscribe(["grouped"])) == [TopicPartition("grouped", i) for i in range(4)]
        stop = asyncio.Event()

        async def keep_polling() -> None:  # c1 must notice the rebalance and join again
            while not stop.is_set():
                await c1.getmany(100)

        poller = asyncio.create_task(keep_polling())
        a2 = await asyncio.wait_for(c2.subscribe(["grouped"]), 20)
        for _ in range(100):
            if len(c1.assignment()) == 2:
                break
            await asyncio.sleep(0.05)
        stop.set()
        await poller
        a1 = c1.assignment()
        assert sorted(a1 + a2) == [TopicPartition("grouped", i) for i in range(4)]
        assert len(a1) == len(a2) == 2
        await c2.commit({a2[0]: 3})
        assert await c1.committed([a2[0]]) == {a2[0]: 3}
    finally:
        await c1.close()
        await c2.close()


async def test_a_subscribed_topic_created_or_grown_later_is_picked_up(broker: EmbeddedBroker) -> None:
    """A consumer subscribed before its topic exists rejoins once it appears (checked every second
    while missing) and again when partitions are added (every metadata.max.age.ms)."""
    config = ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers, "metadata.max.age.ms": "500"})
    c = Consumer(config, group_id=f"g-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest",
                 heartbeat_interval_ms=100, session_timeout_ms=6000)
    try:
        assert await c.subscribe(["later"]) == []
        async with AdminClient(cfg(broker)) as admin, Producer(cfg(broker)) as producer:
            await admin.create_topics([NewTopic("later", 2, 1)])
            await producer.send("later", b"first", partition=1)
            await producer.flush()
            got = []
            for _ in range(100):
                got += [r.value for recs in (await c.getmany(100)).values() for r in recs]
                if got:
                    break
            assert got == [b"first"]
            assert sorted(c.assignment()) == [TopicPartition("later", 0), TopicPartition("later", 1)]
            await admin.create_partitions({"later": 3})
            for _ in range(100):
                await c.getmany(100)
                if len(c.assignment()) == 3:
                    break
            assert sorted(c.assignment()) == [TopicPartition("later", i) for i in range(3)]
    finally:
        await c.close()


async def test_subscribe_needs_a_group_and_unreachable_bootstrap_fails(broker: EmbeddedBroker) -> None:
    async with Consumer(cfg(broker)) as c:
        with pytest.raises(ClientError, match="needs a group_id"):
            await c.subscribe(["x"])
    from tests.support.broker_process import free_port

    dead = ClientConfig.load(bootstrap_servers=f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}")
    with pytest.raises(ClientError, match="no broker reachable at 127.0.0.1:.*, 127.0.0.1:"):
        async with AdminClient(dead):
            pass
