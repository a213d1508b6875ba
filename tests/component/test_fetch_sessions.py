"""Incremental fetch sessions (KIP-227) over the wire, with hand-built Fetch requests.

A full fetch of 1,000 partitions creates a session; incremental fetches then answer only the
partitions that got records (or whose offsets changed), a delayed incremental fetch wakes when an
idle partition of the session gets data, forgotten partitions leave the session, and the session
errors (unknown id, wrong epoch, the other topic naming) come back as Kafka's. Both topic naming
schemes are covered: names (Fetch v12) and topic ids (v13+).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    FetchSessionIdNotFoundError,
    FetchSessionTopicIdError,
    InvalidFetchSessionEpochError,
)

PARTITIONS = 1000
TOPIC = "sessions"


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        b.create_topic(TOPIC, PARTITIONS)
        yield b


def produce(broker: EmbeddedBroker, partitions: list[int], count: int = 3) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for part in partitions:
        for i in range(count):
            p.produce(TOPIC, value=b"v%d" % i, partition=part)
    assert p.flush(10) == 0


def body(topics: list[dict[str, Any]], session_id: int, epoch: int, *, max_wait_ms: int = 0,
         forgotten: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 50 * 1024 * 1024,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": topics,
        "forgotten_topics_data": forgotten or [],
        "rack_id": "",
    }


def parts(indexes: list[int], offsets: dict[int, int]) -> list[dict[str, Any]]:
    return [
        {"partition": i, "current_leader_epoch": -1, "fetch_offset": offsets.get(i, 0), "last_fetched_epoch": -1,
         "log_start_offset": -1, "partition_max_bytes": 1 << 20}  # fmt: skip
        for i in indexes
    ]


def answered(resp: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition_index"]: p for t in resp["responses"] for p in t["partitions"]}


async def _topic_id(conn: BrokerConnection) -> Any:
    md = await conn.request(ApiKey.METADATA, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
                                              "include_topic_authorized_operations": False})  # fmt: skip
    return md["topics"][0]["topic_id"]


@pytest.mark.parametrize("version", [12, 13])
def test_full_then_incremental_fetches_answer_only_partitions_with_news(broker: EmbeddedBroker, version: int) -> None:
    async def run() -> None:
        conn = await BrokerConnection("127.0.0.1", broker.port).connect()
        try:
            by_id = version >= 13
            tid = await _topic_id(conn)
            name = {"topic_id": tid} if by_id else {"topic": TOPIC}
            offsets: dict[int, int] = {}
            # Full fetch (epoch 0): every partition is answered and a session is created.
            resp = await conn.request(ApiKey.FETCH, body([{**name, "partitions": parts(list(range(PARTITIONS)), offsets)}], 0, 0), version=version)
            assert resp["error_code"] == 0 and resp["session_id"] > 0
            sid = resp["session_id"]
            full = answered(resp)
            assert len(full) == PARTITIONS
            for i, p in full.items():
                offsets[i] = p["high_watermark"]  # start at the end
            # Incremental, nothing changed: an empty answer that still names the session.
            resp = await conn.request(ApiKey.FETCH, body([{**name, "partitions": parts(list(range(PARTITIONS)), offsets)}], sid, 1), version=version)
            assert resp["error_code"] == 0 and resp["session_id"] == sid
            assert answered(resp) == {}
            # Records in 3 partitions: an incremental fetch naming no partition gets those 3 only.
            hot = [7, 500, 999]
            produce(broker, hot)
            resp = await conn.request(ApiKey.FETCH, body([], sid, 2), version=version)
            got = answered(resp)
            assert sorted(got) == hot
            for i in hot:
                assert got[i]["error_code"] == 0 and got[i]["records"]
                assert got[i]["high_watermark"] == offsets[i] + 3
            # The client moves its offsets forward in the next request; nothing else is new.
            resp = await conn.request(
                ApiKey.FETCH,
                body([{**name, "partitions": parts(hot, {i: got[i]["high_watermark"] for i in hot})}], sid, 3),
                version=version,
            )
            assert answered(resp) == {}
            # A delayed incremental fetch wakes when an idle partition of the session gets data.
            task = asyncio.ensure_future(conn.request(ApiKey.FETCH, body([], sid, 4, max_wait_ms=10_000), version=version))
            await asyncio.sleep(0.3)
            assert not task.done()
            started = time.monotonic()
            await asyncio.get_running_loop().run_in_executor(None, produce, broker, [321], 1)
            resp = await asyncio.wait_for(task, 10)
            assert time.monotonic() - started < 9
            assert sorted(answered(resp)) == [321]
            # Forgetting a partition: its news no longer come back.
            forget = [{**name, "partitions": [321, 7]}]
            resp = await conn.request(ApiKey.FETCH, body([], sid, 5, forgotten=forget), version=version)
            assert answered(resp) == {}
            produce(broker, [7, 8], 1)
            resp = await conn.request(ApiKey.FETCH, body([], sid, 6), version=version)
            assert sorted(answered(resp)) == [8]
            # Session errors: a wrong epoch, an unknown id, the other topic naming.
            resp = await conn.request(ApiKey.FETCH, body([], sid, 6), version=version)
            assert resp["error_code"] == InvalidFetchSessionEpochError.code and resp["responses"] == []
            resp = await conn.request(ApiKey.FETCH, body([], sid + 1 if sid < 2**31 - 1 else 1, 1), version=version)
            assert resp["error_code"] == FetchSessionIdNotFoundError.code
            resp = await conn.request(ApiKey.FETCH, body([], sid, 7), version=12 if by_id else 13)
            assert resp["error_code"] == FetchSessionTopicIdError.code
            # The epoch did not move on errors; epoch -1 closes the session and answers sessionless.
            resp = await conn.request(ApiKey.FETCH, body([{**name, "partitions": parts([8], {})}], sid, -1), version=version)
            assert resp["error_code"] == 0 and resp["session_id"] == 0 and list(answered(resp)) == [8]
            resp = await conn.request(ApiKey.FETCH, body([], sid, 7), version=version)
            assert resp["error_code"] == FetchSessionIdNotFoundError.code
        finally:
            await conn.close()

    asyncio.run(run())


def test_sessionless_fetches_are_unchanged(broker: EmbeddedBroker) -> None:
    """Epoch -1 with no session (kafka-python, librdkafka, our own consumer): everything asked is
    answered, session id 0, every time."""

    async def run() -> None:
        conn = await BrokerConnection("127.0.0.1", broker.port).connect()
        try:
            for _ in range(2):
                resp = await conn.request(ApiKey.FETCH, body([{"topic": TOPIC, "partitions": parts(list(range(50)), {})}], 0, -1), version=12)
                assert resp["session_id"] == 0 and len(answered(resp)) == 50
        finally:
            await conn.close()

    asyncio.run(run())


def test_no_slots_answers_full_fetches_sessionless(tmp_path: Any) -> None:
    with EmbeddedBroker(tmp_path, **{"max.incremental.fetch.session.cache.slots": 0}) as b:
        b.create_topic(TOPIC, 2)

        async def run() -> None:
            conn = await BrokerConnection("127.0.0.1", b.port).connect()
            try:
                resp = await conn.request(ApiKey.FETCH, body([{"topic": TOPIC, "partitions": parts([0, 1], {})}], 0, 0), version=12)
                assert resp["error_code"] == 0 and resp["session_id"] == 0 and len(answered(resp)) == 2
            finally:
                await conn.close()

        asyncio.run(run())
