"""KIP-368 re-authentication and OAUTHBEARER on the wire, with raw sockets.

* A PLAIN session on a listener with ``connections.max.reauth.ms=800``: SaslAuthenticate v1
  answers ``session_lifetime_ms=800``; a client that re-authenticates (SaslHandshake and
  SaslAuthenticate again on the live connection) keeps being served past the lifetime; one that
  does not is served until the lifetime ends, and its next request closes the connection
  (Kafka checks between requests, never cutting a request in flight).
* OAUTHBEARER (unsecured validator): the session lifetime is the token's remaining life when that
  is shorter than ``connections.max.reauth.ms``; a malformed client message fails at once; an
  invalid token gets Kafka's JSON error challenge (error code 0) and the client's ``\\x01`` then
  fails the exchange with SASL_AUTHENTICATION_FAILED; re-authenticating as another principal is
  refused.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest

from tests.component.kafka_wire import KafkaWireClient
from zurau.embedded import EmbeddedBroker
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import SaslAuthenticationFailedError
from zurau.protocol.sasl.oauthbearer import client_initial_response, unsecured_claims, unsecured_jws

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
PLAIN_TOKEN = b"\x00admin\x00admin-secret"


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.connections.max.reauth.ms": "800",
        "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": "60000",
        "connection.failed.authentication.delay.ms": "0",
    }
    with EmbeddedBroker(**configs) as b:
        yield b


def _port(broker: EmbeddedBroker) -> int:
    return int(broker.listener_address("SASL_PLAINTEXT").rsplit(":", 1)[1])


async def _closed(client: KafkaWireClient) -> bool:
    try:
        return await asyncio.wait_for(client.reader.read(1), 5) == b""
    except ConnectionError:
        return True


async def _auth(c: KafkaWireClient, mechanism: str, token: bytes) -> dict[str, object]:
    hs = await c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    assert hs["error_code"] == 0
    return await c.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


async def _metadata_ok(c: KafkaWireClient) -> bool:
    return bool((await c.request(ApiKey.METADATA, 1, {"topics": None}))["brokers"])


def test_session_expiry_and_reauthentication(broker: EmbeddedBroker) -> None:
    async def run() -> None:
        port = _port(broker)
        async with await KafkaWireClient.connect("127.0.0.1", port) as renewing, \
                await KafkaWireClient.connect("127.0.0.1", port) as lapsing:
            for c in (renewing, lapsing):
                resp = await _auth(c, "PLAIN", PLAIN_TOKEN)
                assert resp["error_code"] == 0 and resp["session_lifetime_ms"] == 800
                assert await _metadata_ok(c)
            # Re-authenticate one of them twice over 2 s: it is served throughout.
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                await asyncio.sleep(0.3)
                resp = await _auth(renewing, "PLAIN", PLAIN_TOKEN)
                assert resp["error_code"] == 0 and resp["session_lifetime_ms"] == 800
                assert await _metadata_ok(renewing)
            # The other one's session ended long ago: its next request closes the connection.
            _cid, frame = lapsing.frame(ApiKey.METADATA, 1, {"topics": None})
            lapsing.writer.write(frame)
            assert await _closed(lapsing)
            assert await _metadata_ok(renewing)

    asyncio.run(run())


def _token(principal: str, life_s: float, **extra: object) -> bytes:
    claims = unsecured_claims(principal, time.time(), lifetime_s=life_s, scope=["kafka"], extra=extra)
    return client_initial_response(unsecured_jws(claims))


def test_oauthbearer_on_the_wire(broker: EmbeddedBroker) -> None:
    async def run() -> None:
        port = _port(broker)
        # The session lasts as long as the token (5 s < 60 s of connections.max.reauth.ms).
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            resp = await _auth(c, "OAUTHBEARER", _token("alice", 5))
            assert resp["error_code"] == 0 and resp["auth_bytes"] == b""
            assert 3000 < resp["session_lifetime_ms"] <= 5000
            assert await _metadata_ok(c)
            # Re-authentication as someone else is refused, and the connection closed.
            resp = await _auth(c, "OAUTHBEARER", _token("mallory", 60))
            assert resp["error_code"] == SaslAuthenticationFailedError.code
            assert "Cannot change principals" in str(resp["error_message"])
            assert await _closed(c)
        # An expired token: the JSON challenge first, then the failure after the client's %x01.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            resp = await _auth(c, "OAUTHBEARER", _token("bob", -10))
            assert resp["error_code"] == 0
            assert json.loads(bytes(resp["auth_bytes"])) == {"status": "invalid_token"}  # type: ignore[arg-type]
            resp = await c.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
            assert resp["error_code"] == SaslAuthenticationFailedError.code
            assert "the token expired" in str(resp["error_message"])
            assert await _closed(c)
        # A message that is no OAUTHBEARER client response fails at once.
        async with await KafkaWireClient.connect("127.0.0.1", port) as c:
            resp = await _auth(c, "OAUTHBEARER", b"n,,\x01auth=Basic abc\x01\x01")
            assert resp["error_code"] == SaslAuthenticationFailedError.code
            assert "not Bearer" in str(resp["error_message"])
            assert await _closed(c)

    asyncio.run(run())
