"""DescribeTopicPartitions (KIP-966) on the wire: advertised and served on the client listener,
pages across two topics through a real socket; on the controller listener it is neither
advertised nor served (Kafka's controllers do not serve it: the connection is closed)."""

from __future__ import annotations

import asyncio

import pytest

from zurau.client.connection import BrokerConnection
from zurau.client.errors import ConnectionLostError
from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey


async def _create(conn: BrokerConnection, name: str, partitions: int) -> None:
    body = {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
        "timeout_ms": 5000,
    }
    created = await conn.request(ApiKey.CREATE_TOPICS, body, version=5)
    assert created["topics"][0]["error_code"] == 0


async def test_pages_on_the_client_listener_and_not_served_on_the_controller_listener() -> None:
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
    }
    async with EmbeddedBroker(**configs) as b:
        host, port = b.bootstrap_servers.rsplit(":", 1)
        conn = await BrokerConnection(host, int(port)).connect()
        try:
            versions = await conn.request(ApiKey.API_VERSIONS, {}, version=3)
            assert {"api_key": 75, "min_version": 0, "max_version": 0} in [
                {k: v for k, v in e.items() if k in ("api_key", "min_version", "max_version")}
                for e in versions["api_keys"]
            ]
            await _create(conn, "dtp-a", 3)
            await _create(conn, "dtp-b", 2)
            cursor = None
            pages = []
            while True:
                body = {
                    "topics": [{"name": "dtp-b"}, {"name": "dtp-a"}],
                    "response_partition_limit": 2,
                    "cursor": cursor,
                }
                resp = await conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, body, version=0)
                pages.append(
                    [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in resp["topics"]]
                )
                cursor = resp["next_cursor"]
                if cursor is None:
                    break
            assert pages == [[("dtp-a", [0, 1])], [("dtp-a", [2]), ("dtp-b", [0])], [("dtp-b", [1])]]
        finally:
            await conn.close()

        chost, cport = b.broker.server.bound["CONTROLLER"]
        ctl = await BrokerConnection(chost, cport).connect()
        try:
            versions = await ctl.request(ApiKey.API_VERSIONS, {}, version=3)
            keys = {e["api_key"] for e in versions["api_keys"]}
            assert ApiKey.METADATA in keys and ApiKey.DESCRIBE_TOPIC_PARTITIONS not in keys
            with pytest.raises(ConnectionLostError, match="closed by the broker"):
                await asyncio.wait_for(
                    ctl.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, {"topics": []}, version=0), 10
                )
        finally:
            await ctl.close()
