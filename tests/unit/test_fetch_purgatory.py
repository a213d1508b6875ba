"""FetchPurgatory's per-topic watches: a fetch waiting on a topic's partition set wakes on an
append to one of those partitions only, is counted like per-partition watches, and leaves
nothing registered behind."""

from __future__ import annotations

import asyncio

from zurau.clock import SystemClock
from zurau.replication.purgatory import FetchPurgatory


async def test_a_topic_watch_wakes_on_its_partitions_only() -> None:
    purgatory = FetchPurgatory(SystemClock())
    waiting = asyncio.ensure_future(purgatory.wait({"t": {0, 2}, "u": set()}, purgatory.deadline(5000)))
    await asyncio.sleep(0)
    assert purgatory.operation_count() == 1 and purgatory.watch_count() == 2
    purgatory.notify("t", 1)  # not a partition it reads
    purgatory.notify("u", 0)  # nor a topic with partitions
    await asyncio.sleep(0.01)
    assert not waiting.done()
    purgatory.notify("t", 2)
    await asyncio.wait_for(waiting, 1.0)
    assert purgatory.operation_count() == purgatory.watch_count() == 0


async def test_topic_and_partition_watches_together_and_timeouts_clean_up() -> None:
    purgatory = FetchPurgatory(SystemClock())
    by_topic = asyncio.ensure_future(purgatory.wait({"t": {0}}, purgatory.deadline(5000)))
    by_key = asyncio.ensure_future(purgatory.wait([("t", 0), ("t", 1)], purgatory.deadline(5000)))
    await asyncio.sleep(0)
    assert purgatory.operation_count() == 2 and purgatory.watch_count() == 3
    purgatory.notify("t", 0)
    await asyncio.wait_for(asyncio.gather(by_topic, by_key), 1.0)
    await purgatory.wait({"t": {5}}, purgatory.deadline(10))  # times out
    assert purgatory.operation_count() == purgatory.watch_count() == 0


async def test_notify_all_wakes_topic_watches() -> None:
    purgatory = FetchPurgatory(SystemClock())
    waiting = asyncio.ensure_future(purgatory.wait({"t": {0}}, purgatory.deadline(5000)))
    await asyncio.sleep(0)
    purgatory.notify_all()
    await asyncio.wait_for(waiting, 1.0)


async def test_a_follower_fetch_waits_on_appends_not_on_high_watermark_moves() -> None:
    """A follower reads up to the log end offset: a high watermark move alone (notify with
    ``data=False``) wakes consumers' fetches but leaves followers' waiting, by key or by topic,
    and ``notified_since`` tells the two apart."""
    purgatory = FetchPurgatory(SystemClock())
    mark = purgatory.mark()
    follower_keys = asyncio.ensure_future(purgatory.wait([("t", 0)], purgatory.deadline(5000), data_only=True))
    follower_topic = asyncio.ensure_future(purgatory.wait({"t": {0}}, purgatory.deadline(5000), data_only=True))
    consumer = asyncio.ensure_future(purgatory.wait([("t", 0)], purgatory.deadline(5000)))
    await asyncio.sleep(0)
    purgatory.notify("t", 0, data=False)
    await asyncio.wait_for(consumer, 1.0)
    await asyncio.sleep(0.01)
    assert not follower_keys.done() and not follower_topic.done()
    assert purgatory.notified_since(mark, [("t", 0)])
    assert not purgatory.notified_since(mark, [("t", 0)], data_only=True)
    assert not purgatory.notified_since(mark, {"t": {0}}, data_only=True)
    purgatory.notify("t", 0)
    await asyncio.wait_for(asyncio.gather(follower_keys, follower_topic), 1.0)
    assert purgatory.notified_since(mark, {"t": {0}}, data_only=True)
    assert purgatory.operation_count() == purgatory.watch_count() == 0
    assert not purgatory._data_only
