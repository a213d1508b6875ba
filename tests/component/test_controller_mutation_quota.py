"""``controller_mutation_rate`` (KIP-599) through the broker, on the wire at chosen versions, for
client id ``cmq`` limited to 1 partition/s (a bucket of 11):

* only topics the controller creates stay charged: an existing topic is not charged, one the
  controller refuses (an invalid config) is charged and given back;
* a strict request (CreateTopics v6+) within the bucket is accepted whole, even into debt; while
  in debt strict requests (CreateTopics v7, DeleteTopics v5, CreatePartitions v3) are refused
  with THROTTLING_QUOTA_EXCEEDED and a throttle time, older versions are accepted and throttled,
  and validate-only requests pass uncharged;
* other client ids are not limited.

Every throttled response mutes its connection, so each request after one opens a new connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig
from zurau.protocol.api_keys import ApiKey

NONE, THROTTLED, EXISTS, INVALID_CONFIG = 0, 89, 36, 40


class Env:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def req(self, api_key: int, version: int, body: dict[str, Any], client_id: str = "cmq") -> dict[str, Any]:
        host, port = self.broker.listen_addresses[0]
        client = await KafkaWireClient.connect(host, port, client_id=client_id)
        try:
            return await client.request(api_key, version, body)
        finally:
            await client.close()

    async def create(self, version: int, *topics: tuple[str, int, dict[str, str]], validate_only: bool = False,
                     client_id: str = "cmq") -> tuple[dict[str, int], int]:
        body = {"topics": [{"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in c.items()]} for n, p, c in topics],
                "timeout_ms": 5000, "validate_only": validate_only}
        r = await self.req(ApiKey.CREATE_TOPICS, version, body, client_id)
        return {t["name"]: t["error_code"] for t in r["topics"]}, r["throttle_time_ms"]

    async def delete(self, version: int, name: str) -> tuple[int, int]:
        body: dict[str, Any] = {"timeout_ms": 5000}
        if version >= 6:
            body["topics"] = [{"name": name, "topic_id": None}]
        else:
            body["topic_names"] = [name]
        r = await self.req(ApiKey.DELETE_TOPICS, version, body)
        return r["responses"][0]["error_code"], r["throttle_time_ms"]

    async def grow(self, version: int, name: str, count: int) -> tuple[int, int]:
        body = {"topics": [{"name": name, "count": count, "assignments": None}], "timeout_ms": 5000, "validate_only": False}
        r = await self.req(ApiKey.CREATE_PARTITIONS, version, body)
        return r["results"][0]["error_code"], r["throttle_time_ms"]


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    broker = Broker(BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}))
    await broker.start()
    e = Env(broker)
    try:
        quota = {"entries": [{"entity": [{"entity_type": "client-id", "entity_name": "cmq"}],
                              "ops": [{"key": "controller_mutation_rate", "value": 1.0, "remove": False}]}],
                 "validate_only": False}
        r = await e.req(ApiKey.ALTER_CLIENT_QUOTAS, 1, quota, client_id="admin")
        assert r["entries"][0]["error_code"] == NONE
        yield e
    finally:
        await broker.stop()


async def test_charges_refunds_strict_and_permissive(env: Env) -> None:
    assert (await env.create(7, ("a", 1, {}), client_id="other"))[0] == {"a": NONE}
    # 11 credits: "a" exists (not charged), "bad" is refused by the controller (8 charged, then
    # given back), "ok" takes 5. Had "bad" stayed charged, the bucket would be 2 in debt.
    errors, throttle = await env.create(7, ("a", 100, {}), ("bad", 8, {"cleanup.policy": "nope"}), ("ok", 5, {}))
    assert errors == {"a": EXISTS, "bad": INVALID_CONFIG, "ok": NONE} and throttle == 0
    # 6 left: a 30-partition topic is accepted whole (strict quotas refuse only when in debt) ...
    assert await env.create(7, ("big", 30, {})) == ({"big": NONE}, 0)
    # ... and now the bucket is ~24 in debt: strict requests are refused with a throttle time.
    errors, throttle = await env.create(7, ("late", 1, {}), ("late2", 1, {}))
    assert errors == {"late": THROTTLED, "late2": THROTTLED} and throttle > 0
    code, throttle = await env.delete(5, "ok")
    assert code == THROTTLED and throttle > 0
    code, throttle = await env.grow(3, "ok", 7)
    assert code == THROTTLED and throttle > 0
    assert env.broker.image.get("late") is None and env.broker.image.get("ok") is not None
    # Validate-only is neither charged nor refused; other clients are not limited.
    assert await env.create(7, ("v", 500, {}), validate_only=True) == ({"v": NONE}, 0)
    assert await env.create(7, ("free", 50, {}), client_id="other") == ({"free": NONE}, 0)
    # Versions before the strict ones are accepted, and throttled.
    errors, throttle = await env.create(5, ("old", 1, {}))
    assert errors == {"old": NONE} and throttle > 0
    code, throttle = await env.grow(2, "ok", 7)
    assert code == NONE and throttle > 0
    code, throttle = await env.delete(4, "ok")
    assert code == NONE and throttle > 0
    assert env.broker.image.get("old") is not None and env.broker.image.get("ok") is None
