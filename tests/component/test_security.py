"""Security on the wire and in Zurau's own client and CLI, against an in-process broker with
PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners.

* The SASL state machine on real sockets: a request before authentication closes the connection
  (Kafka's IllegalSaslState), SaslHandshake v0 switches to raw tokens (the legacy flow), a garbage
  token fails with SASL_AUTHENTICATION_FAILED and the connection closes, an unknown mechanism is
  answered UNSUPPORTED_SASL_MECHANISM with the enabled list; the broker keeps serving throughout
  and leaks no connection.
* zurau.client and ``zurau`` commands with ``--command-config`` holding ``security.protocol``,
  ``sasl.*`` and ``ssl.ca.location``: SCRAM users set with ``zurau user-scram``, then used.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import zurau.broker.server as server_module
from tests.component.kafka_wire import KafkaWireClient
from tests.support.tls import TestCA
from zurau.cli.main import app
from zurau.client import AdminClient, ClientConfig, Consumer, Producer
from zurau.client.errors import AuthenticationError, ClientConfigError
from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
runner = CliRunner()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedBroker, TestCA]]:
    tmp = tmp_path_factory.mktemp("tls")
    ca = TestCA(tmp)
    server = ca.issue("server", "localhost", server=True)
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "0",
        "group.initial.rebalance.delay.ms": "0",
        "listener.name.sasl_plaintext.connections.max.reauth.ms": "1000",
    }
    handshake_timeout = server_module.TLS_HANDSHAKE_TIMEOUT_S
    server_module.TLS_HANDSHAKE_TIMEOUT_S = 1.0  # so that the slow-loris case ends quickly
    try:
        with EmbeddedBroker(**configs) as broker:
            yield broker, ca
    finally:
        server_module.TLS_HANDSHAKE_TIMEOUT_S = handshake_timeout


def _port(broker: EmbeddedBroker, listener: str) -> int:
    return int(broker.listener_address(listener).rsplit(":", 1)[1])


async def _closed(client: KafkaWireClient) -> bool:
    """True when the broker closes the connection (EOF) within a few seconds."""
    try:
        return await asyncio.wait_for(client.reader.read(1), 5) == b""
    except ConnectionError:
        return True


def test_sasl_state_machine_on_the_wire(secured: tuple[EmbeddedBroker, TestCA]) -> None:
    broker, _ca = secured
    port = _port(broker, "SASL_PLAINTEXT")
    server = broker.broker.server
    assert server is not None

    async def run() -> None:
        fds_before = len(os.listdir("/proc/self/fd"))
        # Metadata before authenticating: the connection is closed, no answer.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            versions = await c.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
            assert {k["api_key"] for k in versions["api_keys"]} >= {17, 36, 50, 51}
            _cid, frame = c.frame(ApiKey.METADATA, 1, {"topics": None})
            c.writer.write(frame)
            assert await _closed(c)
        # Legacy flow: SaslHandshake v0, then a raw size-prefixed PLAIN token and a raw answer.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            hs = await c.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
            assert hs == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
            token = b"\x00admin\x00admin-secret"
            c.writer.write(struct.pack(">i", len(token)) + token)
            assert await asyncio.wait_for(c.reader.readexactly(4), 5) == b"\x00\x00\x00\x00"
            md = await c.request(ApiKey.METADATA, 1, {"topics": None})
            assert md["brokers"][0]["port"] == port  # the address of the listener asked
            assert {s.principal for s in (x.session for x in server.connections) if s.authenticated} >= {"User:admin"}
        # SaslAuthenticate with a garbage SCRAM token: SASL_AUTHENTICATION_FAILED, then closed.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            await c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
            bad = await c.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\xff\x00garbage"})
            assert bad["error_code"] == SaslAuthenticationFailedError.code and bad["error_message"]
            assert await _closed(c)
        # An unknown mechanism: UNSUPPORTED_SASL_MECHANISM and the list, then closed.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            hs = await c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
            assert hs["error_code"] == UnsupportedSaslMechanismError.code and "PLAIN" in hs["mechanisms"]
            assert await _closed(c)
        # A truncated token frame (size says more than comes) then EOF: nothing hangs or leaks.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            await c.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
            c.writer.write(struct.pack(">i", 100) + b"\x00ad")
        # TLS spoken to the plaintext port: the ClientHello is no Kafka frame; the broker hangs up.
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _r, w = await asyncio.wait_for(asyncio.open_connection(
                "127.0.0.1", _port(broker, "PLAINTEXT"), ssl=ssl.create_default_context(), server_hostname="localhost"), 5)
            w.close()
        # A TLS client that never sends its ClientHello is dropped after the handshake timeout.
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(broker, "SASL_SSL"))
        assert await asyncio.wait_for(reader.read(1), 5) == b""
        writer.close()
        # The PLAINTEXT listener is untouched by all of it.
        async with await KafkaWireClient.connect("127.0.0.1", _port(broker, "PLAINTEXT")) as c:
            assert (await c.request(ApiKey.METADATA, 1, {"topics": None}))["brokers"]
        for _ in range(50):
            if not any(x.listener == "SASL_PLAINTEXT" for x in server.connections):
                break
            await asyncio.sleep(0.05)
        assert not any(x.listener == "SASL_PLAINTEXT" for x in server.connections)
        await asyncio.sleep(0.1)
        assert len(os.listdir("/proc/self/fd")) <= fds_before  # no descriptor left behind

    asyncio.run(run())


def _value(i: int) -> bytes:
    return f"value {i} ".encode() * 1800


def _props(path: Path, **props: str) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _cli(*args: str) -> Result:
    return runner.invoke(app, list(args))


def test_client_and_cli_over_sasl_ssl(secured: tuple[EmbeddedBroker, TestCA], tmp_path: Path) -> None:
    broker, ca = secured
    sasl_ssl = f"127.0.0.1:{_port(broker, 'SASL_SSL')}"
    admin_props = _props(
        tmp_path / "admin.properties",
        **{"security.protocol": "SASL_SSL", "ssl.ca.location": str(ca.cert_path), "sasl.mechanism": "PLAIN",
           "sasl.jaas.config": JAAS.replace('user_admin="admin-secret"', 'username="admin" password="admin-secret"')},
    )
    user = f"u{uuid.uuid4().hex[:6]}"
    out = _cli("user-scram", "alter", "--user", user, "--mechanism", "SCRAM-SHA-512", "--password", "pw-512",
               "--iterations", "8192", "--bootstrap-server", sasl_ssl, "--command-config", str(admin_props))
    assert out.exit_code == 0, out.stderr
    described = _cli("user-scram", "describe", "--user", user, "--bootstrap-server", sasl_ssl,
                     "--command-config", str(admin_props), "--format", "json")
    assert described.exit_code == 0, described.stderr
    assert f'"user": "{user}"' in described.stdout and '"SCRAM-SHA-512"' in described.stdout and "8192" in described.stdout
    refused = _cli("user-scram", "alter", "--user", user, "--password", "x", "--iterations", "100",
                   "--bootstrap-server", sasl_ssl, "--command-config", str(admin_props))
    assert refused.exit_code == 1 and "Too few iterations" in refused.stderr

    # kafka-configs.sh's way: --entity-type users, SCRAM-SHA-256=[iterations=N,password=P].
    other = f"k{uuid.uuid4().hex[:6]}"
    common = ["--bootstrap-server", sasl_ssl, "--command-config", str(admin_props)]
    set_256 = _cli("configs", "alter", "--entity-type", "users", "--entity-name", other,
                   "--add-config", "SCRAM-SHA-256=[iterations=4096,password=k-256],SCRAM-SHA-512=[password=k-512]", *common)
    assert set_256.stdout == f"Completed updating config for user {other}.\n", set_256.stderr
    dropped = _cli("configs", "alter", "--entity-type", "users", "--entity-name", other,
                   "--delete-config", "SCRAM-SHA-512", *common)
    assert dropped.exit_code == 0, dropped.stderr
    shown = _cli("configs", "describe", "--entity-type", "users", "--entity-name", other, *common)
    assert shown.stdout == f"SCRAM credential configs for user-principal '{other}' are SCRAM-SHA-256=iterations=4096\n"
    not_scram = _cli("configs", "alter", "--entity-type", "users", "--entity-name", other,
                     "--add-config", "producer_byte_rate=1024", *common)
    assert not_scram.exit_code == 1 and "SCRAM credentials only" in not_scram.stderr

    user_props = _props(
        tmp_path / "user.properties",
        **{"security.protocol": "SASL_SSL", "ssl.ca.location": str(ca.cert_path), "sasl.mechanism": "SCRAM-SHA-512",
           "sasl.username": user, "sasl.password": "pw-512"},
    )
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    created = _cli("topics", "create", topic, "--partitions", "2", "--bootstrap-server", sasl_ssl,
                   "--command-config", str(user_props))
    assert created.exit_code == 0, created.stderr
    wrong = _props(tmp_path / "wrong.properties", **{**dict(line.split("=", 1) for line in user_props.read_text().splitlines()),
                                                     "sasl.password": "nope"})
    denied = _cli("topics", "list", "--bootstrap-server", sasl_ssl, "--command-config", str(wrong))
    assert denied.exit_code == 1 and "Authentication failed" in denied.stderr, denied.stderr

    async def roundtrip() -> list[bytes | None]:
        cfg = ClientConfig.load(user_props, sasl_ssl)
        async with Producer(cfg) as producer:
            for i in range(10):  # ~150 KB in all: a fetch sends it over TLS in several pieces
                await producer.send(topic, _value(i), partition=0)
            await producer.flush()
        async with AdminClient(cfg) as admin:
            assert topic in await admin.list_topics()
        async with Consumer(cfg, group_id=f"g-{topic}", auto_offset_reset="earliest") as consumer:
            await consumer.subscribe([topic])
            got: list[bytes | None] = []
            async with asyncio.timeout(20):
                while len(got) < 10:
                    for records in (await consumer.getmany(timeout_ms=1000)).values():
                        got += [r.value for r in records]
            return got

    assert asyncio.run(roundtrip()) == [_value(i) for i in range(10)]

    async def bad_password() -> None:
        cfg = ClientConfig.load(wrong, sasl_ssl)
        async with AdminClient(cfg) as admin:
            await admin.list_topics()

    with pytest.raises(AuthenticationError, match="Authentication failed"):
        asyncio.run(bad_password())
    with pytest.raises(ClientConfigError, match="sasl.mechanism=GSSAPI"):
        ClientConfig.from_props({"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "p"})
    with pytest.raises(ClientConfigError, match="ssl.bogus"):
        ClientConfig.from_props({"security.protocol": "SSL", "ssl.bogus": "1"})


def test_zurau_client_reauthenticates_in_place(secured: tuple[EmbeddedBroker, TestCA]) -> None:
    # SASL_PLAINTEXT sessions last 1 s (KIP-368): the client re-authenticates on the same
    # connection; without it the broker would close the connection at the first late request.
    broker, _ca = secured
    server = broker.broker.server
    assert server is not None
    props = {"bootstrap.servers": broker.listener_address("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
             "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"}

    async def run() -> None:
        async with AdminClient(ClientConfig.from_props(props)) as admin:
            conn = await admin.cluster.any_connection()
            before = {c for c in server.connections if c.listener == "SASL_PLAINTEXT"}
            for _ in range(12):
                await asyncio.gather(admin.list_topics(), admin.list_topics())
                await asyncio.sleep(0.25)
            assert conn.connected and await admin.cluster.any_connection() is conn
            after = {c for c in server.connections if c.listener == "SASL_PLAINTEXT"}
            assert before and before == after

    asyncio.run(run())
