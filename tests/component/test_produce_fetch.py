"""Produce, Fetch and ListOffsets semantics over a real socket against an in-process broker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records

PRODUCE, FETCH, LIST_OFFSETS, METADATA, CREATE_TOPICS = 0, 1, 2, 3, 19


class Env:
    def __init__(self, broker: Broker, client: KafkaWireClient) -> None:
        self.broker = broker
        self.client = client

    async def connect(self) -> KafkaWireClient:
        host, port = self.broker.listen_addresses[0]
        return await KafkaWireClient.connect(host, port)

    async def create(self, name: str, partitions: int = 1, **configs: str) -> None:
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
                }
            ],
            "timeout_ms": 5000,
        }
        r = await self.client.request(CREATE_TOPICS, 5, body)
        assert r["topics"][0]["error_code"] == 0, r

    @staticmethod
    def produce_body(topic: str, batch: bytes, acks: int = -1, partition: int = 0) -> dict[str, Any]:
        return {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        }

    async def produce(self, topic: str, batch: bytes, acks: int = -1, version: int = 9) -> dict[str, Any]:
        r = await self.client.request(PRODUCE, version, self.produce_body(topic, batch, acks))
        return r["responses"][0]["partition_responses"][0]

    @staticmethod
    def fetch_body(topic: str, offset: int, **kw: Any) -> dict[str, Any]:
        return {
            "replica_id": -1,
            "max_wait_ms": kw.get("max_wait_ms", 0),
            "min_bytes": kw.get("min_bytes", 1),
            "max_bytes": kw.get("max_bytes", 50 * 1024 * 1024),
            "isolation_level": kw.get("isolation_level", 0),
            "session_id": kw.get("session_id", 0),
            "session_epoch": kw.get("session_epoch", -1),
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": 0,
                            "fetch_offset": offset,
                            "partition_max_bytes": kw.get("partition_max_bytes", 1 << 20),
                        }
                    ],
                }
            ],
        }

    async def fetch(self, topic: str, offset: int, version: int = 11, **kw: Any) -> dict[str, Any]:
        return await self.client.request(FETCH, version, self.fetch_body(topic, offset, **kw), timeout=10)


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    broker = Broker(
        BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)})
    )
    await broker.start()
    host, port = broker.listen_addresses[0]
    client = await KafkaWireClient.connect(host, port)
    try:
        yield Env(broker, client)
    finally:
        await client.close()
        await broker.stop()


def records_of(data: bytes | memoryview) -> list[Any]:
    out = []
    for pos, h in iter_batches(data):
        out.extend(decode_batch_records(memoryview(data)[pos : pos + h.size]))
    return out


async def test_acks0_success_sends_nothing_and_stores(env: Env) -> None:
    await env.create("a0")
    await env.client.send_only(
        PRODUCE, 9, env.produce_body("a0", build_batch([NewRecord(b"k", b"v")]), acks=0)
    )
    # The next request on the same connection is answered first: nothing was queued for acks=0.
    r = await env.fetch("a0", 0)
    got = records_of(r["responses"][0]["partitions"][0]["records"])
    assert [(x.key, x.value) for x in got] == [(b"k", b"v")]


async def test_acks0_failure_closes_the_connection(env: Env) -> None:
    c = await env.connect()
    try:
        await c.send_only(
            PRODUCE, 9, env.produce_body("no-such-topic", build_batch([NewRecord(None, b"v")]), acks=0)
        )
        assert await asyncio.wait_for(c.reader.read(), 5) == b""  # closed by the broker
    finally:
        await c.close()
    # Other connections are unaffected.
    assert (await env.fetch("no-such-topic", 0))["responses"][0]["partitions"][0]["error_code"] == 3


async def test_invalid_acks_and_unknown_topic(env: Env) -> None:
    await env.create("acks")
    batch = build_batch([NewRecord(None, b"v")])
    assert (await env.produce("acks", batch, acks=2))["error_code"] == 21  # INVALID_REQUIRED_ACKS
    assert (await env.produce("nope", batch))["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


async def test_idempotent_retry_is_deduplicated(env: Env) -> None:
    await env.create("idem")
    b0 = build_batch(
        [NewRecord(None, b"a"), NewRecord(None, b"b")], producer_id=7, producer_epoch=0, base_sequence=0
    )
    b1 = build_batch([NewRecord(None, b"c")], producer_id=7, producer_epoch=0, base_sequence=2)
    first = await env.produce("idem", b0)
    again = await env.produce("idem", b0)  # a retry of the same batch
    assert first["error_code"] == again["error_code"] == 0
    assert again["base_offset"] == first["base_offset"] == 0
    assert (await env.produce("idem", b1))["base_offset"] == 2
    gap = build_batch([NewRecord(None, b"x")], producer_id=7, producer_epoch=0, base_sequence=9)
    assert (await env.produce("idem", gap))["error_code"] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    old = build_batch([NewRecord(None, b"x")], producer_id=7, producer_epoch=0, base_sequence=3)
    await env.produce(
        "idem", build_batch([NewRecord(None, b"y")], producer_id=7, producer_epoch=1, base_sequence=0)
    )
    assert (await env.produce("idem", old))["error_code"] == 47  # INVALID_PRODUCER_EPOCH
    r = await env.fetch("idem", 0)
    assert [x.value for x in records_of(r["responses"][0]["partitions"][0]["records"])] == [
        b"a",
        b"b",
        b"c",
        b"y",
    ]


async def test_long_poll_wakes_on_produce(env: Env) -> None:
    await env.create("lp")
    c2 = await env.connect()
    try:
        started = time.monotonic()
        fetch = asyncio.create_task(env.fetch("lp", 0, max_wait_ms=5000, min_bytes=1))
        await asyncio.sleep(0.2)
        assert not fetch.done()
        r = await c2.request(PRODUCE, 9, env.produce_body("lp", build_batch([NewRecord(None, b"wake")])))
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
        resp = await fetch
        waited = time.monotonic() - started
        assert waited < 4.5, f"fetch waited {waited:.2f}s: it did not wake on new data"
        assert [x.value for x in records_of(resp["responses"][0]["partitions"][0]["records"])] == [b"wake"]
    finally:
        await c2.close()


async def test_long_poll_times_out_empty(env: Env) -> None:
    await env.create("lp2")
    started = time.monotonic()
    r = await env.fetch("lp2", 0, max_wait_ms=300, min_bytes=1)
    assert time.monotonic() - started >= 0.25
    part = r["responses"][0]["partitions"][0]
    assert part["error_code"] == 0 and len(part["records"]) == 0 and part["high_watermark"] == 0


async def test_pipelined_requests_answer_in_order_while_a_fetch_waits(env: Env) -> None:
    await env.create("pipe")
    cid1, f1 = env.client.frame(FETCH, 11, env.fetch_body("pipe", 0, max_wait_ms=3000))
    cid2, f2 = env.client.frame(PRODUCE, 9, env.produce_body("pipe", build_batch([NewRecord(None, b"p")])))
    env.client.writer.write(f1 + f2)
    await env.client.writer.drain()
    # The produce behind the waiting fetch is processed at once and wakes it; answers keep order.
    fetched = await asyncio.wait_for(env.client.read_response(FETCH, 11, cid1), 5)
    produced = await asyncio.wait_for(env.client.read_response(PRODUCE, 9, cid2), 5)
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert [x.value for x in records_of(fetched["responses"][0]["partitions"][0]["records"])] == [b"p"]


async def test_fetch_limits_and_out_of_range(env: Env) -> None:
    await env.create("lim")
    for i in range(5):
        await env.produce("lim", build_batch([NewRecord(None, bytes([i]) * 1000)]))
    r = await env.fetch("lim", 0, partition_max_bytes=1)  # KIP-74: still one whole batch
    assert len(records_of(r["responses"][0]["partitions"][0]["records"])) == 1
    r = await env.fetch("lim", 2, partition_max_bytes=2500)
    assert [x.offset for x in records_of(r["responses"][0]["partitions"][0]["records"])] == [2, 3]
    r = await env.fetch("lim", 99)
    assert r["responses"][0]["partitions"][0]["error_code"] == 1  # OFFSET_OUT_OF_RANGE


async def test_fetch_sessions_are_granted_and_checked(env: Env) -> None:
    await env.create("sess")
    r = await env.fetch("sess", 0, version=12, session_epoch=0)  # asks for a new session
    assert r["error_code"] == 0 and r["session_id"] != 0
    session = r["session_id"]
    r = await env.fetch("sess", 0, version=12, session_id=session, session_epoch=1)
    assert r["error_code"] == 0 and r["session_id"] == session
    r = await env.fetch("sess", 0, version=12, session_id=session, session_epoch=5)
    assert r["error_code"] == 71  # INVALID_FETCH_SESSION_EPOCH
    r = await env.fetch("sess", 0, version=12, session_id=session + 1, session_epoch=1)
    assert r["error_code"] == 70  # FETCH_SESSION_ID_NOT_FOUND


async def test_list_offsets(env: Env) -> None:
    await env.create("lo")
    now = int(time.time() * 1000)
    for i, ts in enumerate((now - 3000, now - 2000, now - 1000)):
        await env.produce("lo", build_batch([NewRecord(None, b"%d" % i, (), ts)]))

    async def lookup(ts: int, version: int = 7) -> tuple[int, int, int]:
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": "lo", "partitions": [{"partition_index": 0, "timestamp": ts}]}],
        }
        p = (await env.client.request(LIST_OFFSETS, version, body))["topics"][0]["partitions"][0]
        return p["error_code"], p["offset"], p["timestamp"]

    assert await lookup(-2) == (0, 0, -1)
    assert await lookup(-1) == (0, 3, -1)
    assert await lookup(-3) == (0, 2, now - 1000)
    assert await lookup(now - 2500) == (0, 1, now - 2000)
    assert await lookup(now + 60_000) == (0, -1, -1)
    assert (await lookup(-2, version=1))[1] == 0


async def test_min_insync_replicas_refuses_acks_all(env: Env) -> None:
    await env.create("minisr", min_insync_replicas="2")
    batch = build_batch([NewRecord(None, b"v")])
    assert (await env.produce("minisr", batch, acks=-1))["error_code"] == 19  # NOT_ENOUGH_REPLICAS
    assert (await env.produce("minisr", batch, acks=1))["error_code"] == 0


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
async def test_topic_compression_type_rewrites_batches(env: Env, codec: int) -> None:
    await env.create(f"zt{codec}", compression_type="zstd")
    recs = [NewRecord(b"k%d" % i, b"v%d" % i, [("h", b"1")], 1_700_000_000_000 + i) for i in range(10)]
    batch = build_batch(recs, compression=codec, producer_id=3, producer_epoch=0, base_sequence=0)
    assert (await env.produce(f"zt{codec}", batch))["error_code"] == 0
    data = (await env.fetch(f"zt{codec}", 0))["responses"][0]["partitions"][0]["records"]
    ((_pos, h),) = list(iter_batches(data))
    assert h.compression == 4 and h.producer_id == 3 and h.base_sequence == 0
    got = records_of(data)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (r.key, r.value, [("h", b"1")], r.timestamp_ms) for r in recs
    ]


async def test_failed_start_releases_everything(env: Env, tmp_path: Path) -> None:
    host, port = env.broker.listen_addresses[0]
    data = tmp_path / "second"
    other = Broker(BrokerConfig.from_props({"listeners": f"PLAINTEXT://{host}:{port}", "log.dirs": str(data)}))
    import os

    fds_before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError):
        await other.start()  # the port is taken
    leaked = [
        os.readlink(f"/proc/self/fd/{fd}")
        for fd in set(os.listdir("/proc/self/fd")) - fds_before
        if os.path.exists(f"/proc/self/fd/{fd}")
    ]
    assert not [p for p in leaked if str(data) in p], leaked
    # The same data dir opens again (nothing half-held).
    again = Broker(BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data)}))
    await again.start()
    await again.stop()
