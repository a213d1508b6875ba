"""Delegation tokens survive restarts of a broker process, and their expiry still holds.

One single-node broker process (:class:`~zurau.testing.broker_process.BrokerProcess`) on
``SASL_PLAINTEXT`` (PLAIN for alice, SCRAM for token logins) with ``delegation.token.secret.key``.
alice creates a long-lived token, a short one (max lifetime 6 s) and one she expires at once. The
broker is stopped with SIGTERM and started again, then killed with ``kill -9`` and started again;
after each restart confluent-kafka logs in with the long token (SCRAM-SHA-256, user = token id,
password = its HMAC) and produces, and the expired token still fails. Once the short token's max
lifetime has passed, a login with it fails with an authentication error and the controller's
periodic check (every 500 ms) removes it from the metadata: DescribeDelegationToken no longer
lists it, after one more ``kill -9`` and restart too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from zurau.client import ClientConfig
from zurau.client.delegation_token_admin import DelegationToken, DelegationTokenAdmin
from zurau.testing.broker_process import HOST, BrokerProcess, free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ALICE = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": "alice-pw",
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    port = free_port()
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'
    configs: dict[str, Any] = {  # Any: passed as keyword arguments (config names)
        "listeners": f"SASL_PLAINTEXT://{HOST}:{port}",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        "connection.failed.authentication.delay.ms": "0",
        "delegation.token.secret.key": "restart-secret",
        "delegation.token.expiry.check.interval.ms": "500",
        "offsets.topic.replication.factor": "1",
    }
    b = BrokerProcess(tmp_path / "data", port, **configs)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def _admin(b: BrokerProcess) -> DelegationTokenAdmin:
    return DelegationTokenAdmin(ClientConfig.from_props({"bootstrap.servers": b.bootstrap_servers, **ALICE}))


def _token_props(b: BrokerProcess, token: DelegationToken) -> dict[str, str]:
    return {
        "bootstrap.servers": b.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": token.token_id,
        "sasl.password": token.hmac_base64,
    }


def _produce_as(b: BrokerProcess, token: DelegationToken) -> None:
    errors: list[KafkaError | None] = []
    producer = Producer({**_token_props(b, token), "message.timeout.ms": 20000})
    producer.produce("tokens-restart", b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(25)
    assert errors == [None]


def _login_fails(b: BrokerProcess, token: DelegationToken) -> bool:
    """True when librdkafka reports an authentication error for a login with ``token``."""
    seen: list[KafkaError] = []
    consumer = Consumer({**_token_props(b, token), "group.id": "probe", "error_cb": seen.append})
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            consumer.poll(0.1)
            if any(e.code() == KafkaError._AUTHENTICATION for e in seen):
                return True
            try:
                consumer.list_topics(timeout=0.5)
                return False
            except Exception:
                continue
        raise AssertionError(f"no answer to a login: {seen}")
    finally:
        consumer.close()


def _described(b: BrokerProcess) -> set[str]:
    async def run() -> set[str]:
        async with _admin(b) as admin:
            return {t.token_id for t in await admin.describe()}

    return asyncio.run(run())


def test_tokens_survive_sigterm_and_kill9_and_still_expire(broker: BrokerProcess) -> None:
    async def create() -> tuple[DelegationToken, DelegationToken, DelegationToken]:
        async with _admin(broker) as admin:
            long_token = await admin.create()
            short = await admin.create(max_lifetime_ms=6000)
            gone = await admin.create()
            await admin.expire(gone.hmac, -1)
            return long_token, short, gone

    long_token, short, gone = asyncio.run(create())
    _produce_as(broker, long_token)
    assert _login_fails(broker, gone)

    broker.stop()  # SIGTERM
    broker.start()
    _produce_as(broker, long_token)
    assert not _login_fails(broker, short) and _login_fails(broker, gone)

    broker.kill()  # kill -9
    broker.start()
    _produce_as(broker, long_token)
    assert {long_token.token_id, short.token_id} <= _described(broker)
    assert gone.token_id not in _described(broker)

    time.sleep(max(0.0, short.max_timestamp_ms / 1000 - time.time()) + 0.2)
    assert _login_fails(broker, short)
    deadline = time.monotonic() + 15
    while short.token_id in _described(broker):
        assert time.monotonic() < deadline, "the expired token was not removed"
        time.sleep(0.2)
    broker.kill()
    broker.start()
    assert _described(broker) == {long_token.token_id}
    _produce_as(broker, long_token)
