"""Configs through a running broker: refused topic configs get INVALID_CONFIG, inert broker configs
are warned about once at start, and the connection and fetch settings made effective here are
honoured on the wire (``socket.listen.backlog.size``, ``max.connections``,
``max.connections.per.ip`` and its overrides, ``connections.max.idle.ms``, ``fetch.max.bytes``,
``compression.<codec>.level``)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig, ConfigError
from zurau.embedded import EmbeddedBroker
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch

TOPIC, BROKER = 2, 4
INVALID_CONFIG = 40
CREATE_TOPICS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CONFIGS = 19, 33, 44, 32
PRODUCE, FETCH, API_VERSIONS = 0, 1, 18


@asynccontextmanager
async def running(tmp_path: Path, **props: str) -> AsyncIterator[Broker]:
    config = BrokerConfig.from_props(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"), **props}
    )
    broker = Broker(config)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()


async def connect(broker: Broker) -> KafkaWireClient:
    host, port = broker.listen_addresses[0]
    return await KafkaWireClient.connect(host, port)


def new_topic(name: str, **configs: str) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }


async def create(client: KafkaWireClient, name: str, **configs: str) -> dict[str, Any]:
    body = {"topics": [new_topic(name, **configs)], "timeout_ms": 5000, "validate_only": False}
    return (await client.request(CREATE_TOPICS, 5, body))["topics"][0]


async def produce(client: KafkaWireClient, topic: str, batch: bytes) -> None:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    r = await client.request(PRODUCE, 7, body)
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 0, r


async def fetch(client: KafkaWireClient, topic: str, max_bytes: int = 50 * 1024 * 1024) -> bytes:
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    r = await client.request(FETCH, 11, body)
    part = r["responses"][0]["partitions"][0]
    assert part["error_code"] == 0, part
    return bytes(part["records"] or b"")


# ---------------------------------------------------------------------------------------------
# Refused and inert configs
# ---------------------------------------------------------------------------------------------


async def test_unsupported_topic_config_gets_invalid_config(tmp_path: Path) -> None:
    async with running(tmp_path) as broker:
        client = await connect(broker)
        try:
            refused = await create(client, "tiered", **{"remote.storage.enable": "true"})
            assert refused["error_code"] == INVALID_CONFIG
            assert "Tiered Storage functionality is disabled in the broker" in refused["error_message"]
            assert broker.image.get("tiered") is None
            assert (await create(client, "plain", **{"remote.storage.enable": "false"}))["error_code"] == 0

            set_op = {"name": "remote.storage.enable", "config_operation": 0, "value": "true"}
            inc = {"resource_type": TOPIC, "resource_name": "plain", "configs": [set_op]}
            r = await client.request(INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [inc], "validate_only": False})
            assert r["responses"][0]["error_code"] == INVALID_CONFIG
            assert "Tiered Storage functionality is disabled" in r["responses"][0]["error_message"]
            legacy = {
                "resource_type": TOPIC,
                "resource_name": "plain",
                "configs": [{"name": "remote.storage.enable", "value": "true"}],
            }
            r = await client.request(ALTER_CONFIGS, 1, {"resources": [legacy], "validate_only": False})
            assert r["responses"][0]["error_code"] == INVALID_CONFIG
            assert broker.image.get("plain").configs == {"remote.storage.enable": "false"}
        finally:
            await client.close()


async def test_broker_warns_once_at_start_for_each_inert_config_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="zurau.broker"):
        async with running(tmp_path, **{"num.io.threads": "16", "socket.receive.buffer.bytes": "65536"}) as broker:
            client = await connect(broker)
            try:
                body = {
                    "resources": [
                        {"resource_type": BROKER, "resource_name": "1", "configuration_keys": ["num.io.threads"]}
                    ],
                    "include_synonyms": False,
                    "include_documentation": True,
                }
                r = await client.request(DESCRIBE_CONFIGS, 4, body)
                (entry,) = r["results"][0]["configs"]
                assert entry["value"] == "16" and "Has no effect in Zurau" in entry["documentation"]
            finally:
                await client.close()
    warned = [r.getMessage() for r in caplog.records if "has no effect" in r.getMessage()]
    assert len([m for m in warned if m.startswith("num.io.threads ")]) == 1
    assert len([m for m in warned if m.startswith("socket.receive.buffer.bytes ")]) == 1
    assert len(warned) == 2


def test_embedded_broker_refuses_an_unsupported_config() -> None:
    with pytest.raises(ConfigError, match="create.topic.policy.class.name"):
        EmbeddedBroker(**{"create.topic.policy.class.name": "com.example.Policy"})


# ---------------------------------------------------------------------------------------------
# Connection settings
# ---------------------------------------------------------------------------------------------


async def test_listen_backlog_comes_from_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    real = loop.create_server
    backlogs: list[int] = []

    async def spy(*args: Any, **kwargs: Any) -> Any:
        backlogs.append(kwargs["backlog"])
        return await real(*args, **kwargs)

    monkeypatch.setattr(loop, "create_server", spy)
    async with running(tmp_path, **{"socket.listen.backlog.size": "7"}):
        pass
    assert backlogs == [7]


async def closed_by_server(client: KafkaWireClient) -> bool:
    """True when the broker has closed this connection (a request then gets no answer)."""
    try:
        await client.request(API_VERSIONS, 0, {}, timeout=5.0)
    except (asyncio.IncompleteReadError, ConnectionError):
        return True
    return False


async def test_max_connections_per_ip_and_its_overrides(tmp_path: Path) -> None:
    async with running(tmp_path, **{"max.connections.per.ip": "2"}) as broker:
        first, second = await connect(broker), await connect(broker)
        third = await connect(broker)
        assert await closed_by_server(third)
        assert not await closed_by_server(first) and not await closed_by_server(second)
        await first.close()
        for _ in range(100):  # the broker counts the closed connection out
            if len(broker.connections) < 2:
                break
            await asyncio.sleep(0.02)
        fourth = await connect(broker)
        assert not await closed_by_server(fourth)
        for c in (second, third, fourth):
            await c.close()
    async with running(tmp_path, **{"max.connections.per.ip.overrides": "localhost:1,127.0.0.1:1"}) as broker:
        first, second = await connect(broker), await connect(broker)
        assert await closed_by_server(second) and not await closed_by_server(first)
        await first.close()
        await second.close()


async def test_max_connections(tmp_path: Path) -> None:
    async with running(tmp_path, **{"max.connections": "1"}) as broker:
        first, second = await connect(broker), await connect(broker)
        assert await closed_by_server(second) and not await closed_by_server(first)
        await first.close()
        await second.close()


async def test_idle_connections_are_closed(tmp_path: Path) -> None:
    async with running(tmp_path, **{"connections.max.idle.ms": "200"}) as broker:
        client = await connect(broker)
        try:
            assert (await client.request(API_VERSIONS, 0, {}))["error_code"] == 0
            # The broker closes it on its own: the read ends without our sending anything.
            assert await asyncio.wait_for(client.reader.read(1), 10.0) == b""
        finally:
            await client.close()


# ---------------------------------------------------------------------------------------------
# Fetch and compression settings
# ---------------------------------------------------------------------------------------------


def batch_of(values: list[bytes]) -> bytes:
    return bytes(build_batch([NewRecord(None, v) for v in values]))


async def test_fetch_max_bytes_bounds_a_consumer_fetch(tmp_path: Path) -> None:
    async with running(tmp_path, **{"fetch.max.bytes": "1024"}) as broker:
        client = await connect(broker)
        try:
            assert (await create(client, "bounded"))["error_code"] == 0
            for i in range(3):
                await produce(client, "bounded", batch_of([bytes([i]) * 600]))
            # Asked for 50 MiB, the consumer gets what fetch.max.bytes allows: the first batch
            # whole (KIP-74), and nothing that would take the response past 1024 bytes.
            assert len(list(iter_batches(await fetch(client, "bounded")))) == 1
        finally:
            await client.close()


def _text(rng: random.Random, words: int) -> bytes:
    letters = b"abcdefghijklmnopqrstuvwxyz"
    vocabulary = [bytes(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(400)]
    return b" ".join(rng.choice(vocabulary) for _ in range(words))


async def test_topic_compression_level_is_used_when_the_broker_recompresses(tmp_path: Path) -> None:
    payload = batch_of([_text(random.Random(i), 400) for i in range(40)])  # uncompressed
    sizes: dict[str, int] = {}
    async with running(tmp_path) as broker:
        client = await connect(broker)
        try:
            for level in ("1", "9"):
                topic = f"gzip-{level}"
                configs = {"compression.type": "gzip", "compression.gzip.level": level}
                assert (await create(client, topic, **configs))["error_code"] == 0
                await produce(client, topic, payload)
                ((_pos, header),) = list(iter_batches(await fetch(client, topic)))
                assert header.compression == 1  # gzip
                sizes[level] = header.size
        finally:
            await client.close()
    assert sizes["9"] < sizes["1"] < len(payload)
