"""The embedded broker secured for users' tests: ``EmbeddedBroker(security=..., users=...)``
generates a throwaway CA and broker certificate, enables SASL (PLAIN, SCRAM-SHA-256/512) for the
users, and ``client_config()`` connects confluent-kafka and zurau.client; wrong passwords and
untrusting clients are refused; the pytest fixture ``zurau_secure_broker`` works in a fresh
pytest run; the certificates are removed at stop."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from zurau.client import ClientConfig
from zurau.client import Consumer as ZConsumer
from zurau.client import Producer as ZProducer
from zurau.client.errors import AuthenticationError
from zurau.embedded import EmbeddedBroker

pytest_plugins = ["pytester"]
USERS = {"alice": "alice-secret", "bob": 'b"o\\b'}


def _confluent(props: dict[str, Any], topic: str, n: int = 10) -> list[bytes]:
    errors: list[Any] = []
    p = Producer({**props, "error_cb": errors.append})
    for i in range(n):
        p.produce(topic, f"v{i}".encode())
    assert p.flush(30) == 0, errors
    c = Consumer({**props, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        c.close()


def _auth_error(props: dict[str, Any]) -> KafkaError:
    errors: list[KafkaError] = []
    p = Producer({**props, "error_cb": errors.append})
    p.produce("t", b"x")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not errors:
        p.poll(0.2)
    p.purge()
    assert errors
    return errors[0]


def test_sasl_ssl_embedded_broker() -> None:
    with EmbeddedBroker(security="SASL_SSL", users=USERS, group_initial_rebalance_delay_ms=0) as broker:
        ca = broker.ca_location
        assert ca is not None and Path(ca).exists()
        props = broker.client_config()
        assert props["security.protocol"] == "SASL_SSL" and props["sasl.username"] == "alice"
        assert _confluent(props, "t1") == [f"v{i}".encode() for i in range(10)]
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            bob = {**broker.client_config("bob"), "sasl.mechanism": mech}
            assert len(_confluent(bob, f"t-{mech}", 3)) == 3
        wrong = _auth_error({**props, "sasl.password": "nope"})
        assert wrong.code() == KafkaError._AUTHENTICATION
        untrusting = _auth_error({k: v for k, v in props.items() if k != "ssl.ca.location"})
        assert untrusting.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)

        async def zurau_client() -> list[bytes]:
            cfg = ClientConfig.from_props(broker.client_config("bob"))
            topic = f"z-{uuid.uuid4().hex[:6]}"
            async with ZProducer(cfg) as producer:
                await producer.send(topic, b"hello")
                await producer.flush()
            got: list[bytes] = []
            async with ZConsumer(cfg, group_id="zg", auto_offset_reset="earliest") as consumer:
                await consumer.subscribe([topic])
                async with asyncio.timeout(20):
                    while not got:
                        for records in (await consumer.getmany(timeout_ms=500)).values():
                            got += [r.value for r in records if r.value is not None]
            return got

        assert asyncio.run(zurau_client()) == [b"hello"]

        async def bad() -> None:
            cfg = ClientConfig.from_props({**broker.client_config(), "sasl.password": "nope"})
            async with ZProducer(cfg) as producer:
                await producer.send("t1", b"x")

        with pytest.raises(AuthenticationError):
            asyncio.run(bad())
    assert not Path(ca).exists()  # the throwaway CA went with the broker


@pytest.mark.parametrize("security", ["SSL", "SASL_PLAINTEXT"])
def test_other_secured_protocols(security: str) -> None:
    with EmbeddedBroker(security=security, users={"carol": "pw"}) as broker:
        props = broker.client_config()
        assert ("ssl.ca.location" in props) == (security == "SSL")
        assert ("sasl.username" in props) == (security == "SASL_PLAINTEXT")
        assert _confluent(props, "t", 2) == [b"v0", b"v1"]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="users"):
        EmbeddedBroker(security="SASL_SSL")
    with pytest.raises(ValueError, match="security"):
        EmbeddedBroker(security="KERBEROS")


def test_secure_fixture_in_a_fresh_pytest_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_secure="""
from confluent_kafka.admin import AdminClient

def test_secure(zurau_secure_broker):
    props = zurau_secure_broker.client_config("alice")
    assert props["security.protocol"] == "SASL_SSL"
    assert "t" not in AdminClient(props).list_topics(timeout=10).topics
"""
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
