"""kafka-python 3.0 and aiokafka 0.14 log in with a delegation token (SCRAM-SHA-256/512, user name =
token id, password = base64 HMAC). Neither can send the SCRAM ``tokenauth`` extension, so this is
Zurau's fallback (a SCRAM login whose user is a live token id; see README "Delegation tokens"):
both produce as the token's owner, and a removed token's login fails."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError
from kafka import KafkaProducer

from zurau.client import ClientConfig
from zurau.client.delegation_token_admin import DelegationToken, DelegationTokenAdmin
from zurau.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(
        security="SASL_PLAINTEXT",
        users={"alice": "alice-pw"},
        **{"delegation.token.secret.key": "compat-secret", "connection.failed.authentication.delay.ms": "0"},
    ) as b:
        yield b


def _token(b: EmbeddedBroker) -> DelegationToken:
    async def run() -> DelegationToken:
        async with DelegationTokenAdmin(ClientConfig.from_props(b.client_config("alice"))) as admin:
            return await admin.create()

    return asyncio.run(run())


def _expire(b: EmbeddedBroker, token: DelegationToken) -> None:
    async def run() -> None:
        async with DelegationTokenAdmin(ClientConfig.from_props(b.client_config("alice"))) as admin:
            await admin.expire(token.hmac, -1)

    asyncio.run(run())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_produces_with_a_token(broker: EmbeddedBroker, mechanism: str) -> None:
    token = _token(broker)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=token.token_id,
        sasl_plain_password=token.hmac_base64,
    )
    try:
        producer.send("kp-tokens", b"v").get(timeout=20)
    finally:
        producer.close()


def test_aiokafka_produces_with_a_token_until_it_is_expired(broker: EmbeddedBroker) -> None:
    token = _token(broker)

    async def produce() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username=token.token_id,
            sasl_plain_password=token.hmac_base64,
        )
        try:
            await producer.start()
            await producer.send_and_wait("aio-tokens", b"v")
        finally:
            await producer.stop()

    asyncio.run(produce())
    _expire(broker, token)
    # aiokafka reports the SASL_AUTHENTICATION_FAILED answer (logged) as a failed bootstrap
    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
        asyncio.run(produce())
