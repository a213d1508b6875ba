"""ShareFetch's answer on the wire (KIP-932) through a real socket, as librdkafka expects it.

An in-process broker with ``group.share.enable=true``: a member joins with raw
ShareGroupHeartbeat requests until its partition is assigned, acquires records with a ShareFetch
that opens a share session, then acknowledges them in the next ShareFetch of the session. A
partition that is in the answer only for its acknowledgement result carries empty records, never
null: Kafka 4.1+ made ``Records`` non-nullable from v1 (``MemoryRecords.EMPTY``), and librdkafka
drops the whole response on a null (``invalid MessageSetSize -1``), failing the acknowledgement
with INVALID_MSG (its test 0170's ``do_test_subscription_change_acks_pending``). A fetch with
``max_bytes`` 0 acquires nothing (librdkafka's test 0180 ``fetch.max.bytes=0``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from zurau.client import typed_api as api
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.producer import Producer
from zurau.embedded import EmbeddedBroker
from zurau.protocol import errors as E
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.share_states import AcknowledgeType

FAST: dict[str, Any] = {
    "group.share.heartbeat.interval.ms": 200,
    "group.share.min.heartbeat.interval.ms": 100,
}
RETRIABLE = {
    E.CoordinatorLoadInProgressError.code,
    E.CoordinatorNotAvailableError.code,
    E.NotCoordinatorError.code,
}
GROUP = "sg-wire"


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(group_share_enable=True, **FAST) as b:
        yield b


@pytest_asyncio.fixture
async def conn(broker: EmbeddedBroker) -> AsyncIterator[BrokerConnection]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    c = await BrokerConnection(host, int(port), client_id="share-fetch-wire").connect()
    try:
        yield c
    finally:
        await c.close()


async def _hb(conn: BrokerConnection, member: str, epoch: int, topics: list[str] | None = None) -> Any:
    body = api.SHARE_GROUP_HEARTBEAT(
        {
            "group_id": GROUP,
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": topics,
        }
    )
    for _ in range(100):
        r = await conn.call(body)
        if r["error_code"] not in RETRIABLE:
            assert r["error_code"] == 0, r
            return r
        await asyncio.sleep(0.05)
    raise AssertionError("the group coordinator did not become available")


async def _assigned_member(conn: BrokerConnection, topic: str) -> str:
    mid = str(uuid.uuid4())
    r = await _hb(conn, mid, 0, [topic])
    for _ in range(60):
        if r["assignment"] is not None and r["assignment"]["topic_partitions"]:
            return mid
        await asyncio.sleep(0.1)
        r = await _hb(conn, mid, r["member_epoch"])
    raise AssertionError("the partition was never assigned")


def _share_fetch(
    member: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: list[dict[str, Any]] | None = None,
    max_wait_ms: int = 500,
    max_bytes: int = 1 << 20,
) -> dict[str, Any]:
    return {
        "group_id": GROUP,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "max_records": 100,
        "batch_size": 100,
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": acks or []}],
            }
        ],
        "forgotten_topics_data": [],
    }


async def _produce(broker: EmbeddedBroker, topic: str, n: int) -> None:
    async with Producer(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as p:
        for i in range(n):
            await p.send(topic, b"v%d" % i, partition=0)
        await p.flush()


async def _session_with_records(
    broker: EmbeddedBroker, conn: BrokerConnection, topic: str
) -> tuple[str, uuid.UUID]:
    """A member assigned ``topic``'s one partition, with a share session open on it (epoch 0
    sent, so the next epoch is 1) and three records available to acquire. share.auto.offset.reset
    is latest: records written before the state is first read are not delivered, so they are
    written after the opening fetch has loaded the share-partition."""
    broker.create_topic(topic)
    member = await _assigned_member(conn, topic)
    t = broker.broker.group_coordinator.core.topics.get(topic)
    assert t is not None
    r = await conn.request(ApiKey.SHARE_FETCH, _share_fetch(member, 0, t.topic_id, max_wait_ms=0), version=1)
    assert r["error_code"] == 0, r
    await _produce(broker, topic, 3)
    return member, t.topic_id


def _acquired(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for tr in r["responses"] for pr in tr["partitions"] for a in pr["acquired_records"]]


async def test_an_acknowledgement_only_partition_carries_empty_records(
    broker: EmbeddedBroker, conn: BrokerConnection
) -> None:
    member, topic_id = await _session_with_records(broker, conn, "wire-acks")
    epoch, acquired = 1, list[dict[str, Any]]()
    for _ in range(40):
        r = await conn.request(ApiKey.SHARE_FETCH, _share_fetch(member, epoch, topic_id), version=1)
        assert r["error_code"] == 0, r
        epoch += 1
        acquired = _acquired(r)
        if acquired:
            break
    assert acquired, "no records were acquired"
    acks = [
        {
            "first_offset": a["first_offset"],
            "last_offset": a["last_offset"],
            "acknowledge_types": [AcknowledgeType.ACCEPT],
        }
        for a in acquired
    ]
    r = await conn.request(
        ApiKey.SHARE_FETCH, _share_fetch(member, epoch, topic_id, acks, max_wait_ms=0), version=1
    )
    assert r["error_code"] == 0, r
    parts = [pr for tr in r["responses"] for pr in tr["partitions"]]
    assert [(pr["partition_index"], pr["acknowledge_error_code"]) for pr in parts] == [(0, 0)]
    assert parts[0]["acquired_records"] == []
    assert parts[0]["records"] is not None and len(parts[0]["records"]) == 0


async def test_a_zero_byte_budget_acquires_nothing(broker: EmbeddedBroker, conn: BrokerConnection) -> None:
    """``max_bytes`` 0 (librdkafka's ``fetch.max.bytes=0``) answers at once with no records, as
    Kafka does; the records stay available to the next fetch with a budget."""
    member, topic_id = await _session_with_records(broker, conn, "wire-zero-bytes")
    for epoch in (1, 2):
        r = await conn.request(
            ApiKey.SHARE_FETCH,
            _share_fetch(member, epoch, topic_id, max_wait_ms=60_000, max_bytes=0),
            version=1,
        )
        assert r["error_code"] == 0, r
        assert _acquired(r) == []
    epoch, acquired = 3, list[dict[str, Any]]()
    while not acquired and epoch < 40:
        r = await conn.request(ApiKey.SHARE_FETCH, _share_fetch(member, epoch, topic_id), version=1)
        epoch += 1
        acquired = _acquired(r)
    assert [(a["first_offset"], a["last_offset"], a["delivery_count"]) for a in acquired] == [(0, 2, 1)]
