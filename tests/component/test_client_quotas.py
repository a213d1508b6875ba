"""Client quotas through the broker: AlterClientQuotas / DescribeClientQuotas with Kafka's
matching and validation, ``zurau client-quotas``, the metadata log carrying them over a restart,
CLUSTER authorisation, connection-creation rate limits per IP, and a Produce over its quota
answered with ``throttle_time_ms`` and the channel muted (not disconnected)."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zurau.cli.main import app
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.quota_admin import ANY, QuotaAdmin, QuotaAlteration
from zurau.client.security import ClientSecurity
from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    UnsupportedVersionError,
)

runner = CliRunner()


def _cfg(broker: EmbeddedBroker) -> ClientConfig:
    return ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})


def _cli(broker: EmbeddedBroker, *args: str) -> Any:
    return runner.invoke(app, ["client-quotas", *args, "--bootstrap-server", broker.bootstrap_servers])


async def _alter_and_describe(broker: EmbeddedBroker) -> list[Any]:
    async with QuotaAdmin(_cfg(broker)) as admin:
        results = await admin.alter([
            QuotaAlteration({"client-id": "app"}, {"producer_byte_rate": 1000}),
            QuotaAlteration({"user": None}, {"consumer_byte_rate": 10}),
            QuotaAlteration({"ip": None}, {"connection_creation_rate": 100}),
            QuotaAlteration({"ip": "127.0.0.1"}, {"producer_byte_rate": 1}),
            QuotaAlteration({"user": "bob"}, {"producer_byte_rate": 1.5}),
            QuotaAlteration({"user": "carol"}, {"producer_byte_rate": 5}),
        ])
        assert [e is None for _, e in results] == [True, True, True, False, False, True]
        assert isinstance(results[3][1], InvalidRequestError)
        assert "Invalid configuration key producer_byte_rate" in str(results[3][1])
        assert "must be a Long value" in str(results[4][1])
        # validate_only changes nothing; removing a key and then the last key drops the entity
        assert await admin.alter([QuotaAlteration({"user": "dave"}, {"producer_byte_rate": 7})], True) == [
            ({"user": "dave"}, None)]
        assert (await admin.alter([QuotaAlteration({"user": "carol"}, {"producer_byte_rate": None})]))[0][1] is None

        alice = await admin.describe({"user": "alice"}, strict=True)
        assert alice == [({"user": "alice"}, {"consumer_byte_rate": 2097152.0, "producer_byte_rate": 1048576.0})]
        assert len(await admin.describe({"user": "alice"})) == 2
        users = await admin.describe({"user": ANY}, strict=True)
        assert sorted(str(e["user"]) for e, _ in users) == ["None", "alice"]
        assert await admin.describe({"user": None}) == [({"user": None}, {"consumer_byte_rate": 10.0})]
        with pytest.raises(UnsupportedVersionError):
            await admin.describe({"group": ANY})
        with pytest.raises(InvalidRequestError):
            await admin.describe({"ip": ANY, "user": "x"})
        return await admin.describe()


async def _describe_all(broker: EmbeddedBroker) -> list[Any]:
    async with QuotaAdmin(_cfg(broker)) as admin:
        return await admin.describe()


def test_alter_describe_validate_and_survive_a_restart(tmp_path: Path) -> None:
    with EmbeddedBroker(data_dir=tmp_path) as broker:
        done = _cli(broker, "alter", "--entity-type", "users", "--entity-name", "alice",
                    "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
        assert done.exit_code == 0, done.output
        assert "Completed updating quota configs for user-principal 'alice'." in done.output
        done = _cli(broker, "alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                    "--entity-name", "<default>", "--add-config", "request_percentage=50")
        assert done.exit_code == 0, done.output
        everything = asyncio.run(_alter_and_describe(broker))
        assert len(everything) == 5
        listed = _cli(broker, "describe", "--entity-type", "users", "--format", "json")
        assert listed.exit_code == 0, listed.output
        assert {json.dumps(e["entity"], sort_keys=True) for e in json.loads(listed.output)} == {
            '{"user": "alice"}', '{"user": null}'}
        bad = _cli(broker, "alter", "--entity-type", "ips", "--entity-name", "nope",
                   "--add-config", "connection_creation_rate=3")
        assert bad.exit_code == 1 and "nope is not a valid IP or resolvable host." in bad.output

    with EmbeddedBroker(data_dir=tmp_path) as broker:  # the metadata log brings them back
        assert sorted(map(str, asyncio.run(_describe_all(broker)))) == sorted(map(str, everything))
        table = _cli(broker, "describe", "--entity-type", "users", "--entity-name", "alice")
        assert table.exit_code == 0 and "producer_byte_rate=1048576" in table.output


def _api_versions_answered(port: int) -> bool:
    """Connect and send ApiVersions v0; True when it is answered (not refused or closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        body = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
        try:
            s.sendall(struct.pack(">i", len(body)) + body)
            return len(s.recv(4)) == 4
        except OSError:
            return False


async def test_connection_creation_rate_per_ip() -> None:
    with EmbeddedBroker() as broker:
        async with QuotaAdmin(_cfg(broker)) as admin:
            assert await admin.alter([QuotaAlteration({"ip": None}, {"connection_creation_rate": 3})]) == [
                ({"ip": None}, None)]
            answered = [_api_versions_answered(broker.port) for _ in range(10)]
            assert 1 <= sum(answered) <= 4 and not all(answered)
            # another address's own quota (and no quota at all, once removed) lets them in
            await admin.alter([QuotaAlteration({"ip": "127.0.0.1"}, {"connection_creation_rate": 1000})])
            assert all(_api_versions_answered(broker.port) for _ in range(10))


async def test_quota_apis_need_cluster_alter_and_describe_configs() -> None:
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'user_admin="admin-secret" user_alice="alice-secret";')
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }
    with EmbeddedBroker(**configs) as broker:
        host, port = broker.listener_address("SASL_PLAINTEXT").rsplit(":", 1)
        alice = await BrokerConnection(host, int(port), security=ClientSecurity(
            protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="alice",
            sasl_password="alice-secret")).connect()
        try:
            entity = [{"entity_type": "user", "entity_name": "alice"}]
            altered = await alice.request(ApiKey.ALTER_CLIENT_QUOTAS, {"entries": [
                {"entity": entity, "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]}],
                "validate_only": False})
            assert altered["entries"][0]["error_code"] == ClusterAuthorizationFailedError.code
            assert altered["entries"][0]["entity"] == entity
            described = await alice.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, {"components": [], "strict": False})
            assert described["error_code"] == ClusterAuthorizationFailedError.code
            assert described["entries"] is None
        finally:
            await alice.close()


async def test_produce_over_quota_is_throttled_and_muted_not_disconnected() -> None:
    """Raw Produce requests: once over the quota, responses carry throttle_time_ms and the
    broker reads nothing from the connection for that long, but answers everything."""
    from zurau.protocol.records.builder import NewRecord, build_batch

    with EmbeddedBroker() as broker:
        async with QuotaAdmin(_cfg(broker)) as admin:
            await admin.alter([QuotaAlteration({"client-id": "slow"}, {"producer_byte_rate": 100_000})])
        host, port = broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await BrokerConnection(host, int(port), client_id="slow").connect()
        try:
            created = await conn.request(ApiKey.CREATE_TOPICS, {
                "topics": [{"name": "q", "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000})
            assert created["topics"][0]["error_code"] == 0
            batch = bytes(build_batch([NewRecord(key=None, value=b"x" * 60_000)]))
            body = {"acks": 1, "timeout_ms": 5000, "topic_data": [
                {"name": "q", "partition_data": [{"index": 0, "records": batch}]}]}
            throttles = []
            start = time.monotonic()
            for _ in range(4):
                resp = await conn.request(ApiKey.PRODUCE, body, version=9)
                assert resp["responses"][0]["partition_responses"][0]["error_code"] == 0
                throttles.append(resp["throttle_time_ms"])
            elapsed = time.monotonic() - start
        finally:
            await conn.close()
    assert throttles[0] == 0 and all(t > 0 for t in throttles[1:]), throttles
    # the muted channel held each next request back for the previous throttle time
    assert elapsed >= sum(throttles[:-1]) / 1000 * 0.9
