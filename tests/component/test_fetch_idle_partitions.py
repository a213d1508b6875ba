"""Sessionless Fetch of many partitions (librdkafka's way): idle partitions are answered from
precomputed bytes, and the answer is exactly the one reading every partition gives.

One topic of 200 partitions, a few with records, one with an open transaction (its last stable
offset below the high watermark); fetched at the log end (idle), at offset 0 (data), beyond the
end (OFFSET_OUT_OF_RANGE), with a stale or future leader epoch (fenced / unknown), and a partition
that does not exist; read_committed and read_uncommitted, by topic id (v16) and by name (v11, v4).
Each fetch is sent twice, with the idle path on and off, and the answers compared field by field.
A delayed fetch of all partitions wakes on an append to any one of them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey
from zurau.replication import delayed_fetch

PARTITIONS = 200
TOPIC = "idle"
WITH_DATA = (3, 50, 199)
IN_TXN = 7


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        b.create_topic(TOPIC, PARTITIONS)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        for part in WITH_DATA:
            for i in range(5):
                p.produce(TOPIC, value=b"v%d" % i, partition=part)
        assert p.flush(10) == 0
        tp = Producer({"bootstrap.servers": b.bootstrap_servers, "transactional.id": "idle-txn"})
        tp.init_transactions(10)
        tp.begin_transaction()
        tp.produce(TOPIC, value=b"open", partition=IN_TXN)
        assert tp.flush(10) == 0  # left open: partition 7's LSO stays below its high watermark
        yield b


def _partition(i: int, offset: int, epoch: int, version: int) -> dict[str, Any]:
    return {"partition": i, "current_leader_epoch": epoch, "fetch_offset": offset, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}  # fmt: skip


def _body(version: int, topic_id: Any, offsets: dict[int, tuple[int, int]], isolation: int,
          max_wait_ms: int = 0) -> dict[str, Any]:  # fmt: skip
    topic: dict[str, Any] = {"partitions": [_partition(i, o, e, version) for i, (o, e) in offsets.items()]}
    if version >= 13:
        topic["topic_id"] = topic_id
    else:
        topic["topic"] = TOPIC
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 50 << 20,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1, "topics": [topic],
            "forgotten_topics_data": [], "rack_id": ""}  # fmt: skip


def _by_partition(resp: dict[str, Any]) -> dict[int, dict[str, Any]]:
    out = {}
    for t in resp["responses"]:
        for p in t["partitions"]:
            p = dict(p)
            p["records"] = bytes(p["records"]) if p["records"] is not None else None
            out[p["partition_index"]] = p
    return out


async def _ends(conn: BrokerConnection, version: int, topic_id: Any, isolation: int) -> dict[int, int]:
    """Where each partition's reading stops (HW or LSO), from a fetch at offset 0."""
    body = _body(version, topic_id, {i: (0, -1) for i in range(PARTITIONS)}, isolation)
    parts = _by_partition(await conn.request(ApiKey.FETCH, body, version=version, timeout=10))
    return {i: (p["last_stable_offset"] if isolation else p["high_watermark"]) for i, p in parts.items()}


@pytest.mark.parametrize("version", [16, 11, 4])
@pytest.mark.parametrize("isolation", [0, 1])
async def test_idle_answers_equal_full_reads(
    broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch, version: int, isolation: int
) -> None:
    conn = await BrokerConnection("127.0.0.1", broker.port).connect()
    try:
        md = await conn.request(ApiKey.METADATA, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
                                                  "include_topic_authorized_operations": False})  # fmt: skip
        topic_id = md["topics"][0]["topic_id"]
        ends = await _ends(conn, version, topic_id, isolation)
        assert ends[IN_TXN] == 0 if isolation else ends[IN_TXN] == 1
        offsets = {i: (end, 0 if version >= 9 else -1) for i, end in ends.items()}  # every one idle
        offsets[WITH_DATA[0]] = (0, -1)  # records
        offsets[WITH_DATA[1]] = (2, -1)  # records from the middle
        offsets[10] = (5, -1)  # beyond the log end: OFFSET_OUT_OF_RANGE
        if version >= 9:
            offsets[11] = (0, 7)  # a future leader epoch: UNKNOWN_LEADER_EPOCH
        offsets[PARTITIONS + 3] = (0, -1)  # no such partition
        body = _body(version, topic_id, offsets, isolation)

        idle_answers: list[int] = []
        real_encoder = delayed_fetch.idle_encoder

        def counting(version: int, read_committed: bool) -> Any:
            enc = real_encoder(version, read_committed)
            return lambda *a: idle_answers.append(a[0]) or enc(*a)

        monkeypatch.setattr(delayed_fetch, "idle_encoder", counting)
        fast = _by_partition(await conn.request(ApiKey.FETCH, body, version=version, timeout=10))
        assert len(idle_answers) > PARTITIONS - 10  # the idle ones took the fast path
        real_read = delayed_fetch.read_partitions
        monkeypatch.setattr(
            delayed_fetch,
            "read_partitions",
            lambda rm, params, topics, bound=None, remote=None: real_read(
                rm, dataclasses.replace(params, sessionless=False), topics, bound, remote
            ),
        )
        slow = _by_partition(await conn.request(ApiKey.FETCH, body, version=version, timeout=10))
    finally:
        await conn.close()
    assert fast == slow
    assert fast[WITH_DATA[0]]["records"] and not fast[100]["records"]
    assert fast[10]["error_code"] and fast[PARTITIONS + 3]["error_code"]
    if version >= 9:
        assert fast[11]["error_code"]


async def test_a_delayed_fetch_of_every_partition_wakes_on_one_append(broker: EmbeddedBroker) -> None:
    conn = await BrokerConnection("127.0.0.1", broker.port).connect()
    try:
        ends = await _ends(conn, 11, None, 0)
        body = _body(11, None, {i: (end, -1) for i, end in ends.items()}, 0, max_wait_ms=10_000)
        started = time.monotonic()
        waiting = asyncio.ensure_future(conn.request(ApiKey.FETCH, body, version=11, timeout=30))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        p = Producer({"bootstrap.servers": broker.bootstrap_servers})
        p.produce(TOPIC, value=b"wake", partition=123)
        assert await asyncio.to_thread(p.flush, 10) == 0
        parts = _by_partition(await asyncio.wait_for(waiting, 10))
    finally:
        await conn.close()
    assert time.monotonic() - started < 9  # woken by the append, not by max_wait_ms
    assert b"wake" in parts[123]["records"]
    assert sum(1 for p in parts.values() if p["records"]) == 1
