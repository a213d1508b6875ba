"""Real clients over secured listeners: confluent-kafka, kafka-python, aiokafka and kcat produce and
consume (in a group) over SSL, SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and SASL_SSL, on
one broker that serves PLAINTEXT next to them; wrong passwords fail with an authentication error
while the broker keeps serving; a listener with ``ssl.client.auth=required`` refuses a client
without a certificate and maps a client certificate to its principal; confluent-kafka's
transactions (commit and abort, read_committed) work over every secured listener; a new certificate is served
without a restart; KIP-368 re-authentication keeps a long-lived producer going.

Certificates are generated into a temporary directory; SCRAM users are created with
AlterUserScramCredentials through confluent-kafka's admin client on the PLAINTEXT listener.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiokafka
import aiokafka.errors
import kafka
import kafka.errors
import pytest
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.support.tls import Pem, TestCA
from zurau.embedded import EmbeddedBroker

pytestmark = pytest.mark.slow
KCAT = shutil.which("kcat") or "kcat"
N = 50
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_alice="alice-secret" user_admin="admin-secret";'
)
USERS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("bob", "bob-256"), "SCRAM-SHA-512": ("carol", "carol-512")}
# (listener, mechanism or None): every client runs each of these.
CASES = [("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
         ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "SCRAM-SHA-512")]


class Secured:
    def __init__(self, broker: EmbeddedBroker, ca: TestCA, client: Pem, server: Pem) -> None:
        self.broker, self.ca, self.client, self.server = broker, ca, client, server

    def port(self, listener: str) -> int:
        return int(self.bootstrap(listener).rsplit(":", 1)[1])

    def bootstrap(self, listener: str) -> str:
        return self.broker.listener_address(listener)

    def librdkafka(self, listener: str, mechanism: str | None, password: str | None = None) -> dict[str, str]:
        """librdkafka properties (confluent-kafka and kcat) for a listener."""
        protocol = "SSL" if listener == "MTLS" else listener
        props = {"bootstrap.servers": self.bootstrap(listener), "security.protocol": protocol}
        if protocol.endswith("SSL"):
            props["ssl.ca.location"] = str(self.ca.cert_path)
        if listener == "MTLS":
            props["ssl.certificate.location"] = str(self.client.cert)
            props["ssl.key.location"] = str(self.client.key)
        if mechanism is not None:
            user, pw = USERS[mechanism]
            props.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password or pw})
        return props

    def python_client(self, listener: str, mechanism: str | None, password: str | None = None) -> dict[str, Any]:
        """kafka-python / aiokafka keyword arguments for a listener."""
        kw: dict[str, Any] = {"bootstrap_servers": self.bootstrap(listener), "security_protocol": listener}
        if listener.endswith("SSL"):
            kw["ssl_context"] = create_ssl_context(cafile=str(self.ca.cert_path))
        if mechanism is not None:
            user, pw = USERS[mechanism]
            kw.update({"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password or pw})
        return kw


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tmp = tmp_path_factory.mktemp("tls")
    ca = TestCA(tmp)
    server = ca.issue("server", "localhost", server=True)
    client = ca.issue("client", "Alice", unit="eng")
    listeners = ["PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL"]
    configs = {
        "listeners": ",".join(f"{n}://127.0.0.1:0" for n in listeners),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "group.initial.rebalance.delay.ms": "0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert_path),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=([^,]*),.*$/$1@$2/L,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.connections.max.reauth.ms": "1500",
    }
    with EmbeddedBroker(**configs) as broker:
        admin = AdminClient({"bootstrap.servers": broker.listener_address("PLAINTEXT")})
        upserts = [
            UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"bob-256"),
            UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-512"),
        ]
        for future in admin.alter_user_scram_credentials(upserts).values():
            future.result(timeout=30)
        yield Secured(broker, ca, client, server)


def _topic() -> str:
    return f"sec-{uuid.uuid4().hex[:10]}"


def _values(n: int = N) -> list[bytes]:
    return [f"value-{i}".encode() for i in range(n)]


# ------------------------------------------------------------------------------- confluent-kafka


def _confluent_roundtrip(props: dict[str, str], topic: str) -> list[bytes]:
    errors: list[Any] = []
    p = Producer({**props, "error_cb": errors.append})
    for v in _values():
        p.produce(topic, v)
    assert p.flush(30) == 0, errors
    c = Consumer({**props, "group.id": f"g-{topic}", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < N and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        c.close()


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_confluent_kafka(secured: Secured, listener: str, mechanism: str | None) -> None:
    topic = _topic()
    assert _confluent_roundtrip(secured.librdkafka(listener, mechanism), topic) == _values()


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_confluent_kafka_transactions(secured: Secured, listener: str, mechanism: str | None) -> None:
    """A transactional producer over the secured listener (the transaction coordinator and the
    group coordinator are reached over it too): a committed and an aborted transaction, of which a
    read_committed consumer sees only the committed one."""
    props = secured.librdkafka(listener, mechanism)
    topic = _topic()
    p = Producer({**props, "transactional.id": f"tx-{topic}"})
    p.init_transactions(30)
    for commit, tag in ((True, b"kept"), (False, b"dropped")):
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, tag + b"-%d" % i)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    c = Consumer({**props, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        quiet = time.monotonic() + 1.0  # then nothing of the aborted transaction may follow
        while time.monotonic() < quiet:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert got == [b"kept-%d" % i for i in range(5)]
    finally:
        c.close()


def test_confluent_kafka_client_certificate_required(secured: Secured) -> None:
    topic = _topic()
    producer = Producer(secured.librdkafka("MTLS", None))
    producer.produce(topic, b"x")
    assert producer.flush(10) == 0
    server = secured.broker.broker.server
    assert server is not None
    # The certificate's DN, CN=Alice,OU=eng,O=Example,C=GB, through the listener's mapping rule.
    principals = {c.session.principal for c in server.connections if c.listener == "MTLS"}
    assert principals == {"User:alice@eng"}
    del producer
    # Without a certificate the handshake fails: the client reports a transport error.
    errors: list[Any] = []
    props = secured.librdkafka("SSL", None)
    props["bootstrap.servers"] = secured.bootstrap("MTLS")
    p = Producer({**props, "error_cb": errors.append, "message.timeout.ms": 3000})
    delivered: list[Any] = []
    p.produce(topic, b"x", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(10)
    assert len(delivered) == 1 and delivered[0] is not None
    assert errors and any("SSL" in e.str() or "Disconnected" in e.str() or "brokers are down" in e.str() for e in errors)


def _delivery_errors(props: dict[str, str]) -> list[Any]:
    """Produce one record with a short timeout; the client's error reports (none if it was delivered)."""
    errors: list[Any] = []
    delivered: list[Any] = []
    p = Producer({**props, "error_cb": errors.append, "message.timeout.ms": 2000})
    p.produce(_topic(), b"x", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(10)
    assert len(delivered) == 1 and delivered[0] is not None
    return errors


def test_untrusted_and_expired_certificates_are_refused(secured: Secured, tmp_path: Path) -> None:
    # The client does not trust the broker's CA: its handshake fails on the certificate.
    stranger = TestCA(tmp_path / "other", "Other CA")
    props = {**secured.librdkafka("SSL", None), "ssl.ca.location": str(stranger.cert_path)}
    assert any("certificate verify failed" in e.str() for e in _delivery_errors(props))
    # An expired client certificate on a listener that requires one: the broker refuses it, and
    # a valid one from the same CA still works.
    expired = secured.ca.issue("expired-client", "Old", unit="eng", expired=True)
    props = {**secured.librdkafka("MTLS", None), "ssl.certificate.location": str(expired.cert),
             "ssl.key.location": str(expired.key)}
    assert _delivery_errors(props)  # the broker ends each handshake: "brokers are down"
    assert _confluent_roundtrip(secured.librdkafka("MTLS", None), _topic()) == _values()


def test_stalled_tls_handshakes_do_not_hold_up_others(secured: Secured) -> None:
    # Connections that never start their TLS handshake (slow loris) leave the listener serving.
    idle = [socket.create_connection(("127.0.0.1", secured.port("SSL")), timeout=5) for _ in range(20)]
    try:
        assert _confluent_roundtrip(secured.librdkafka("SSL", None), _topic()) == _values()
    finally:
        for s in idle:
            s.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_confluent_kafka_wrong_password(secured: Secured, mechanism: str) -> None:
    errors: list[Any] = []
    props = secured.librdkafka("SASL_PLAINTEXT", mechanism, password="wrong")
    p = Producer({**props, "error_cb": errors.append, "message.timeout.ms": 2000})
    delivered: list[Any] = []
    p.produce(_topic(), b"x", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(10)
    assert len(delivered) == 1 and delivered[0] is not None
    assert any(e.code() == -169 for e in errors), errors  # _AUTHENTICATION
    assert any("Authentication failed" in e.str() for e in errors), errors
    # ... and the broker keeps serving everyone else.
    assert _confluent_roundtrip(secured.librdkafka("SASL_PLAINTEXT", mechanism), _topic()) == _values()


def test_reauthentication_keeps_a_producer_going(secured: Secured) -> None:
    # SASL_PLAINTEXT has connections.max.reauth.ms=1500: librdkafka re-authenticates in place.
    errors: list[Any] = []
    p = Producer({**secured.librdkafka("SASL_PLAINTEXT", "SCRAM-SHA-256"), "error_cb": errors.append})
    topic = _topic()
    p.produce(topic, b"v")
    assert p.flush(10) == 0
    server = secured.broker.broker.server
    assert server is not None
    before = {c for c in server.connections if c.listener == "SASL_PLAINTEXT"}
    deadline = time.monotonic() + 4
    sent = 1
    while time.monotonic() < deadline:
        p.produce(topic, b"v")
        sent += 1
        assert p.flush(10) == 0
        time.sleep(0.2)
    after = {c for c in server.connections if c.listener == "SASL_PLAINTEXT"}
    # The same connections served throughout: each session was renewed in place, not reconnected
    # (a connection whose session ends without re-authentication is closed at its next request).
    assert sent >= 10 and not errors, errors
    assert before and before <= after and all(c.session.authenticated for c in before)


# -------------------------------------------------------------------------------- kafka-python


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kafka_python(secured: Secured, listener: str, mechanism: str | None) -> None:
    topic = _topic()
    kw = secured.python_client(listener, mechanism)
    producer = kafka.KafkaProducer(**kw)
    for v in _values():
        producer.send(topic, v)
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=15000, **kw)
    got = []
    for m in consumer:
        got.append(m.value)
        if len(got) == N:
            break
    consumer.close()
    assert got == _values()


def test_kafka_python_wrong_password(secured: Secured, caplog: pytest.LogCaptureFixture) -> None:
    kw = secured.python_client("SASL_PLAINTEXT", "SCRAM-SHA-512", password="wrong")
    with pytest.raises(kafka.errors.KafkaError):
        kafka.KafkaProducer(bootstrap_timeout_ms=3000, **kw)
    assert "[Error 58] SaslAuthenticationFailedError" in caplog.text


# ------------------------------------------------------------------------------------ aiokafka


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_aiokafka(secured: Secured, listener: str, mechanism: str | None) -> None:
    async def run() -> list[bytes]:
        topic = _topic()
        kw = secured.python_client(listener, mechanism)
        producer = aiokafka.AIOKafkaProducer(**kw)
        await producer.start()
        try:
            for v in _values():
                await producer.send(topic, v)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **kw)
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(20):
                async for m in consumer:
                    got.append(m.value)
                    if len(got) == N:
                        break
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == _values()


def test_aiokafka_wrong_password(secured: Secured, caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(**secured.python_client("SASL_SSL", "SCRAM-SHA-512", password="wrong"))
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(aiokafka.errors.KafkaConnectionError):
        asyncio.run(run())
    assert "[Error 58] SaslAuthenticationFailed" in caplog.text


# ---------------------------------------------------------------------------------------- kcat


def _kcat(props: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    cmd = [KCAT, "-b", props["bootstrap.servers"]]
    for k, v in props.items():
        if k != "bootstrap.servers":
            cmd += ["-X", f"{k}={v}"]
    return subprocess.run([*cmd, *args], input=stdin, capture_output=True, timeout=60, check=False)


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kcat(secured: Secured, listener: str, mechanism: str | None) -> None:
    topic = _topic()
    props = secured.librdkafka(listener, mechanism)
    produced = _kcat(props, "-P", "-t", topic, stdin=b"\n".join(_values()) + b"\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = _kcat(props, "-G", f"g-{topic}", "-o", "beginning", "-e", "-q", topic)
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout.split(b"\n")[:-1] == _values()


def test_kcat_wrong_password(secured: Secured) -> None:
    props = secured.librdkafka("SASL_SSL", "SCRAM-SHA-512", password="wrong")
    proc = _kcat(props, "-L", "-m", "2")
    assert proc.returncode != 0 and b"Authentication failed" in proc.stderr, proc.stderr.decode()


# ------------------------------------------------------------------- TLS on the wire, reload


def _server_certificate(port: int, ca: Path) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw, server_hostname="localhost") as s:
        cert = s.getpeercert()
        assert cert is not None and s.version() in ("TLSv1.2", "TLSv1.3")
        return cert


def test_plaintext_client_on_tls_port_and_certificate_reload(secured: Secured) -> None:
    # A plaintext Kafka request on a TLS port: the broker drops it and keeps serving.
    with socket.create_connection(("127.0.0.1", secured.port("SSL")), timeout=5) as s:
        s.sendall(b"\x00\x00\x00\x0b\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01x")
        received = b""
        while chunk := s.recv(100):  # a TLS alert at most, then the broker closes (a hang times out)
            received += chunk
        assert not received.startswith(b"\x00\x00")  # no Kafka response
    before = _server_certificate(secured.port("SSL"), secured.ca.cert_path)
    assert dict(x[0] for x in before["subject"])["commonName"] == "localhost"
    # Replace the key store file: new connections get the new certificate, no restart.
    renewed = secured.ca.issue("renewed", "renewed.localhost", server=True)
    tmp = secured.server.keystore.with_suffix(".tmp")
    tmp.write_bytes(renewed.keystore.read_bytes())
    tmp.replace(secured.server.keystore)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        after = _server_certificate(secured.port("SSL"), secured.ca.cert_path)
        if dict(x[0] for x in after["subject"])["commonName"] == "renewed.localhost":
            break
        time.sleep(0.2)
    assert dict(x[0] for x in after["subject"])["commonName"] == "renewed.localhost"
    assert _confluent_roundtrip(secured.librdkafka("SSL", None), _topic()) == _values()
