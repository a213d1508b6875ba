"""SASL OAUTHBEARER with real clients, on one broker with two OAUTHBEARER listeners:

* ``UNSECURED`` validates unsecured JWTs (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler,
  required scope ``kafka``): confluent-kafka with librdkafka's own unsecured JWT
  (``enable.sasl.oauthbearer.unsecure.jwt``), kafka-python and aiokafka with a token provider,
  and zurau.client with ``sasl.oauthbearer.config``, produce and consume in a group; a token
  without the scope or already expired fails with SASL_AUTHENTICATION_FAILED naming the reason.
  Sessions last 2 s (``listener.name.unsecured.oauthbearer.connections.max.reauth.ms``): a
  long-lived librdkafka producer re-authenticates on its connections instead of being cut off.
* ``JWKS`` verifies signed tokens (Kafka's OAuthBearerValidatorCallbackHandler) against a JSON
  Web Key Set file holding an RSA and an EC key generated here, with an expected audience and
  issuer: RS256 and ES256 tokens (confluent-kafka's ``oauth_cb``) are accepted with their
  subject as principal; a wrong audience or issuer, an expired token, a token signed by an
  unknown key and an unsigned one are refused with the reason.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiokafka
import aiokafka.abc
import jwt
import kafka
import kafka.net.sasl.oauth
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from zurau.client import ClientConfig
from zurau.client import Consumer as ZConsumer
from zurau.client import Producer as ZProducer
from zurau.client.errors import AuthenticationError
from zurau.embedded import EmbeddedBroker
from zurau.protocol.sasl.oauthbearer import unsecured_claims, unsecured_jws

pytestmark = pytest.mark.slow
N = 20
AUDIENCE, ISSUER = "zurau-test", "https://issuer.example"
JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="broker" unsecuredValidatorRequiredScope="kafka";'
)
JWKS_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


class Keys:
    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key()))
        ec_jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key()))
        return {"keys": [{**rsa_jwk, "kid": "rsa-1", "use": "sig", "alg": "RS256"},
                         {**ec_jwk, "kid": "ec-1", "use": "sig", "alg": "ES256"}]}

    def token(self, sub: str = "carol", *, alg: str = "RS256", kid: str | None = None, key: Any = None,
              life: float = 600, **claims: Any) -> str:
        now = time.time()
        body = {"sub": sub, "iat": int(now), "exp": int(now + life), "aud": AUDIENCE, "iss": ISSUER, **claims}
        signer = key or (self.rsa if alg == "RS256" else self.ec)
        return jwt.encode(body, signer, algorithm=alg, headers={"kid": kid or ("rsa-1" if alg == "RS256" else "ec-1")})


class Setup:
    def __init__(self, broker: EmbeddedBroker, keys: Keys) -> None:
        self.broker, self.keys = broker, keys

    def props(self, listener: str, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.broker.listener_address(listener), "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER", **extra}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("oauth")
    keys = Keys()
    jwks = tmp / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks()))
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,UNSECURED://127.0.0.1:0,JWKS://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,UNSECURED:SASL_PLAINTEXT,JWKS:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "group.initial.rebalance.delay.ms": "0",
        "connection.failed.authentication.delay.ms": "0",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.unsecured.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.unsecured.oauthbearer.connections.max.reauth.ms": "2000",
        "listener.name.jwks.oauthbearer.sasl.server.callback.handler.class": JWKS_HANDLER,
        "listener.name.jwks.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri(),
        "listener.name.jwks.oauthbearer.sasl.oauthbearer.expected.audience": f"other,{AUDIENCE}",
        "listener.name.jwks.oauthbearer.sasl.oauthbearer.expected.issuer": ISSUER,
        "listener.name.jwks.oauthbearer.sasl.oauthbearer.clock.skew.seconds": "5",
    }
    with EmbeddedBroker(**configs) as broker:
        yield Setup(broker, keys)


def _topic() -> str:
    return f"oauth-{uuid.uuid4().hex[:10]}"


def _values() -> list[bytes]:
    return [f"value-{i}".encode() for i in range(N)]


def _principals(setup: Setup, listener: str) -> set[str]:
    server = setup.broker.broker.server
    assert server is not None
    return {c.session.principal for c in server.connections if c.listener == listener and c.session.authenticated}


def _confluent_roundtrip(props: dict[str, Any], topic: str, seen: Callable[[], set[str]] | None = None) -> list[bytes]:
    """Produce and consume N records; ``seen`` (principals of the listener's connections) must
    hold a principal while the consumer is still connected (checked through the return value)."""
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
        if seen is not None:
            got.append(" ".join(sorted(seen())).encode())
        return got
    finally:
        c.close()


def _confluent_auth_error(props: dict[str, Any]) -> str:
    """The first authentication error a producer reports."""
    errors: list[KafkaError] = []
    p = Producer({**props, "error_cb": errors.append})
    p.produce(_topic(), b"x")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        p.poll(0.2)
    p.purge()
    auth = [e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, errors
    return auth[0]


# ------------------------------------------------------------------------------ unsecured JWTs


def _unsecured(principal: str = "alice", scope: str = "kafka,extra") -> dict[str, Any]:
    return {"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": f"principal={principal} scope={scope}"}


def test_confluent_kafka_unsecured_jwt(setup: Setup) -> None:
    got = _confluent_roundtrip(setup.props("UNSECURED", **_unsecured()), _topic(), lambda: _principals(setup, "UNSECURED"))
    assert got[:-1] == _values() and b"User:alice" in got[-1]


def test_confluent_kafka_missing_scope_and_expired_token(setup: Setup) -> None:
    message = _confluent_auth_error(setup.props("UNSECURED", **_unsecured(scope="other")))
    assert "lacks the required scope kafka" in message and "insufficient_scope" in message

    def expired(_config: str) -> tuple[str, float]:
        return unsecured_jws(unsecured_claims("alice", time.time() - 7200, scope=["kafka"])), time.time() + 3600

    message = _confluent_auth_error(setup.props("UNSECURED", oauth_cb=expired))
    assert "the token expired" in message and "invalid_token" in message


class _KafkaPythonTokens(kafka.net.sasl.oauth.AbstractTokenProvider):
    def __init__(self, make: Callable[[], str]) -> None:
        super().__init__()
        self.make = make

    def token(self) -> str:
        return self.make()


class _AioTokens(aiokafka.abc.AbstractTokenProvider):
    def __init__(self, make: Callable[[], str]) -> None:
        self.make = make

    async def token(self) -> str:
        return self.make()


def _fresh_unsecured(principal: str) -> Callable[[], str]:
    return lambda: unsecured_jws(unsecured_claims(principal, time.time(), scope=["kafka"]))


def test_kafka_python_token_provider(setup: Setup) -> None:
    topic = _topic()
    kw = {"bootstrap_servers": setup.broker.listener_address("UNSECURED"), "security_protocol": "SASL_PLAINTEXT",
          "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _KafkaPythonTokens(_fresh_unsecured("kp"))}
    producer = kafka.KafkaProducer(**kw)
    for v in _values():
        producer.send(topic, v)
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=15000, **kw)
    got = [m.value for _, m in zip(range(N), consumer, strict=False)]
    consumer.close()
    assert got == _values()
    # A token for the JWKS listener that names the wrong audience: refused with error 58.
    bad = {**kw, "bootstrap_servers": setup.broker.listener_address("JWKS"),
           "sasl_oauth_token_provider": _KafkaPythonTokens(lambda: setup.keys.token(aud="someone-else"))}
    with pytest.raises(kafka.errors.KafkaError):
        kafka.KafkaProducer(bootstrap_timeout_ms=3000, **bad)


def test_aiokafka_token_provider(setup: Setup) -> None:
    async def run() -> list[bytes]:
        topic = _topic()
        kw = {"bootstrap_servers": setup.broker.listener_address("JWKS"), "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "OAUTHBEARER",
              "sasl_oauth_token_provider": _AioTokens(lambda: setup.keys.token("aio", alg="ES256"))}
        producer = aiokafka.AIOKafkaProducer(**kw)
        await producer.start()
        try:
            for v in _values():
                await producer.send(topic, v)
            await producer.flush()
            assert "User:aio" in _principals(setup, "JWKS")
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


def test_reauthentication_with_oauthbearer_keeps_connections(setup: Setup) -> None:
    # Sessions on UNSECURED last 2 s: librdkafka re-authenticates in place (with a fresh token).
    errors: list[Any] = []
    p = Producer({**setup.props("UNSECURED", **_unsecured("renewer")), "error_cb": errors.append})
    topic = _topic()
    p.produce(topic, b"v")
    assert p.flush(10) == 0
    server = setup.broker.broker.server
    assert server is not None
    before = {c for c in server.connections if c.listener == "UNSECURED" and c.session.principal == "User:renewer"}
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        p.produce(topic, b"v")
        assert p.flush(10) == 0
        time.sleep(0.2)
    after = {c for c in server.connections if c.listener == "UNSECURED" and c.session.principal == "User:renewer"}
    assert not errors, errors
    assert before and before <= after


def test_zurau_client_oauthbearer(setup: Setup) -> None:
    topic = _topic()
    setup.broker.create_topic(topic)

    async def run(props: dict[str, str]) -> list[bytes]:
        cfg = ClientConfig.from_props(props)
        async with ZProducer(cfg) as producer:
            for v in _values():
                await producer.send(topic, v)
            await producer.flush()
        got: list[bytes] = []
        async with ZConsumer(cfg, group_id=f"g-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest") as consumer:
            await consumer.subscribe([topic])
            async with asyncio.timeout(20):
                while len(got) < N:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        got += [r.value for r in records if r.value is not None]
        return got

    unsecured = {k: str(v).lower() if isinstance(v, bool) else v for k, v in setup.props("UNSECURED", **_unsecured("zed")).items()}
    assert asyncio.run(run(unsecured))[:N] == _values()
    signed = setup.props("JWKS", **{"sasl.oauthbearer.token": setup.keys.token("zed")})
    assert asyncio.run(run(signed))[:N] == _values()
    with pytest.raises(AuthenticationError, match="audience"):
        asyncio.run(run(setup.props("JWKS", **{"sasl.oauthbearer.token": setup.keys.token(aud="nope")})))


# ------------------------------------------------------------------------------------ JWKS


def test_confluent_kafka_jwks_tokens(setup: Setup) -> None:
    for alg in ("RS256", "ES256"):
        def token_cb(_config: str, alg: str = alg) -> tuple[str, float, str]:
            return setup.keys.token(f"dave-{alg}", alg=alg), time.time() + 600, f"dave-{alg}"

        got = _confluent_roundtrip(setup.props("JWKS", oauth_cb=token_cb), _topic(), lambda: _principals(setup, "JWKS"))
        assert got[:-1] == _values() and f"User:dave-{alg}".encode() in got[-1]


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda k: k.token(aud="someone-else"), "audience"),
        (lambda k: k.token(iss="https://evil.example"), "issuer"),
        (lambda k: k.token(life=-60), "expired"),
        (lambda k: k.token(key=k.stranger), "signature does not verify"),
        (lambda k: k.token(kid="unknown-kid"), "no key in the JWKS"),
        (lambda k: unsecured_jws(unsecured_claims("mallory", time.time(), scope=["kafka"])), "algorithm 'none'"),
    ],
    ids=["audience", "issuer", "expired", "foreign-key", "unknown-kid", "unsigned"],
)
def test_confluent_kafka_bad_jwks_tokens(setup: Setup, make: Callable[[Keys], str], reason: str) -> None:
    def token_cb(_config: str) -> tuple[str, float, str]:
        return make(setup.keys), time.time() + 600, "whoever"

    message = _confluent_auth_error(setup.props("JWKS", oauth_cb=token_cb))
    assert reason in message and "SASL authentication error" in message


def test_jwks_file_is_reread_when_it_changes(setup: Setup, tmp_path: Path) -> None:
    # A key added to the JWKS file is used without a restart.
    url = setup.broker.config.listener_config_raw("JWKS", "oauthbearer.sasl.oauthbearer.jwks.endpoint.url")
    assert url is not None
    path = Path(url.removeprefix("file://"))
    new = ec.generate_private_key(ec.SECP256R1())
    jwks = setup.keys.jwks()
    jwks["keys"].append({**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(new.public_key())), "kid": "ec-2"})
    path.write_text(json.dumps(jwks))

    def token_cb(_config: str) -> tuple[str, float, str]:
        return setup.keys.token("erin", alg="ES256", kid="ec-2", key=new), time.time() + 600, "erin"

    assert _confluent_roundtrip(setup.props("JWKS", oauth_cb=token_cb), _topic()) == _values()
