"""OAUTHBEARER pieces without a broker: the client initial response, Kafka's unsecured validator
rules, the JWKS validator's algorithm policy, the listener configs that are refused, and the
client's token settings."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from zurau.broker.auth.listener_security import listener_security
from zurau.broker.auth.oauthbearer import JwksKeySource, JwksValidator, UnsecuredValidator
from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity
from zurau.config import BrokerConfig, ConfigError
from zurau.protocol.sasl import SaslError
from zurau.protocol.sasl.oauthbearer import (
    OAuthBearerClient,
    TokenValidationError,
    b64url_encode,
    client_initial_response,
    parse_client_initial_response,
    unsecured_claims,
    unsecured_jws,
)

NOW = 1_700_000_000.0


def test_client_initial_response_round_trip() -> None:
    data = client_initial_response("a.b.c", authzid="al=ice,x", extensions={"traceId": "123 abc"})
    assert data == b"n,a=al=3Dice=2Cx,\x01auth=Bearer a.b.c\x01traceId=123 abc\x01\x01"
    parsed = parse_client_initial_response(data)
    assert (parsed.token, parsed.authzid, parsed.extensions) == ("a.b.c", "al=ice,x", {"traceId": "123 abc"})
    assert parse_client_initial_response(b"n,,\x01auth=bearer  t0k-en_.x\x01\x01").token == "t0k-en_.x"


@pytest.mark.parametrize(
    "data",
    [b"", b"y,,\x01auth=Bearer t\x01\x01", b"n,,\x01auth=Bearer t\x01", b"n,,\x01\x01",
     b"n,,\x01auth=Bearer t!t\x01\x01", b"n,,\x01auth=Basic t\x01\x01", b"\xff\xfe"],
)
def test_malformed_client_initial_responses(data: bytes) -> None:
    with pytest.raises(SaslError):
        parse_client_initial_response(data)


def _validator(**kw: Any) -> UnsecuredValidator:
    return UnsecuredValidator(clock=lambda: NOW, **kw)


def test_unsecured_validator_accepts_and_reads_claims() -> None:
    token = unsecured_jws(unsecured_claims("alice", NOW - 10, lifetime_s=60, scope=["a", "b"]))
    t = _validator(required_scope=["a"])(token)
    assert (t.principal, t.scope, t.lifetime_ms, t.start_ms) == ("alice", {"a", "b"}, (NOW + 50) * 1000, (NOW - 10) * 1000)
    spaced = unsecured_jws({"user": "bob", "exp": NOW + 5, "roles": "x y"})
    t = _validator(principal_claim="user", scope_claim="roles")(spaced)
    assert (t.principal, t.scope) == ("bob", {"x", "y"})


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": NOW + 60}, "no principal"),
        ({"sub": "a"}, "no exp"),
        ({"sub": "a", "exp": NOW}, "expired"),
        ({"sub": "a", "exp": NOW + 60, "iat": NOW + 30}, "Issued At"),
        ({"sub": "a", "exp": "soon"}, "not a number"),
        ({"sub": "a", "exp": NOW + 60, "scope": 5}, "scope claim"),
    ],
)
def test_unsecured_validator_refusals(claims: dict[str, Any], reason: str) -> None:
    with pytest.raises(TokenValidationError, match=reason):
        _validator()(unsecured_jws(claims))


def test_unsecured_validator_clock_skew_scope_and_alg() -> None:
    late = unsecured_jws({"sub": "a", "exp": NOW - 1})
    assert _validator(clock_skew_ms=2000)(late).principal == "a"
    with pytest.raises(TokenValidationError) as e:
        _validator(required_scope=["kafka"])(unsecured_jws({"sub": "a", "exp": NOW + 9, "scope": ["x"]}))
    assert (e.value.status, e.value.scope) == ("insufficient_scope", "kafka")
    signed = b64url_encode(b'{"alg":"HS256"}') + "." + b64url_encode(json.dumps({"sub": "a", "exp": NOW + 9}).encode()) + ".sig"
    with pytest.raises(TokenValidationError, match="alg none"):
        _validator()(signed)
    with pytest.raises(TokenValidationError, match="3"):
        _validator()("a.b")


def test_jwks_validator_refuses_hmac_and_none(tmp_path: Any) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{**jwk, "kid": "k"}]}))
    v = JwksValidator(JwksKeySource(path.as_uri()))
    now = int(time.time())
    good = jwt.encode({"sub": "s", "exp": now + 60, "iat": now}, key, algorithm="RS256", headers={"kid": "k"})
    assert v(good).principal == "s"
    hmac = jwt.encode({"sub": "s", "exp": now + 60, "iat": now}, "secret" * 6, algorithm="HS256", headers={"kid": "k"})
    with pytest.raises(TokenValidationError, match="algorithm 'HS256'"):
        v(hmac)
    no_iat = jwt.encode({"sub": "s", "exp": now + 60}, key, algorithm="RS256", headers={"kid": "k"})
    with pytest.raises(TokenValidationError, match="iat"):
        v(no_iat)


BASE = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "OAUTHBEARER",
    "log.dirs": "/nonexistent",
}
PREFIX = "listener.name.sasl_plaintext."


@pytest.mark.parametrize(
    ("props", "match"),
    [
        ({f"{PREFIX}oauthbearer.sasl.oauthbearer.jwks.endpoint.url": "file:///x.json"}, "unsecured"),
        ({f"{PREFIX}oauthbearer.sasl.server.callback.handler.class": "com.example.Custom"}, "validators"),
        ({f"{PREFIX}oauthbearer.sasl.server.callback.handler.class":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"}, "needs"),
        ({f"{PREFIX}oauthbearer.sasl.server.callback.handler.class":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
          "sasl.oauthbearer.jwks.endpoint.url": "http://idp.example/jwks"}, "https"),
        ({f"{PREFIX}oauthbearer.sasl.jaas.config":
          'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'}, "OAuthBearerLoginModule"),
    ],
)
def test_listener_oauthbearer_configs_refused(props: dict[str, str], match: str) -> None:
    cfg = BrokerConfig.from_props({**BASE, **props})
    with pytest.raises(ConfigError, match=match):
        listener_security(cfg, "SASL_PLAINTEXT")


def test_mechanism_prefixed_configs() -> None:
    with pytest.raises(ConfigError, match="SASL mechanism's own configs"):
        BrokerConfig.from_props({**BASE, f"{PREFIX}oauthbearer.ssl.client.auth": "required"})
    cfg = BrokerConfig.from_props({**BASE, "connections.max.reauth.ms": "100", f"{PREFIX}oauthbearer.connections.max.reauth.ms": "7"})
    sec = listener_security(cfg, "SASL_PLAINTEXT")
    assert (sec.reauth_ms_for("OAUTHBEARER"), sec.reauth_ms_for("PLAIN")) == (7, 100)
    plain_handler = BrokerConfig.from_props({
        **BASE, "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        f"{PREFIX}plain.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";',
        f"{PREFIX}plain.sasl.server.callback.handler.class": "com.example.PlainHandler"})
    with pytest.raises(ConfigError, match="no server callback handlers for PLAIN"):
        listener_security(plain_handler, "SASL_PLAINTEXT")


def test_client_token_settings() -> None:
    base = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}
    with pytest.raises(ClientConfigError, match="needs a token"):
        ClientSecurity.from_props(base)
    with pytest.raises(ClientConfigError, match="principal"):
        ClientSecurity.from_props({**base, "enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "scope=a"})
    sec = ClientSecurity.from_props({**base, "enable.sasl.oauthbearer.unsecure.jwt": "true",
                                     "sasl.oauthbearer.config": "principal=al scope=a,b lifeSeconds=60 extension_t=1"})
    client = sec.sasl_client()
    assert isinstance(client, OAuthBearerClient)
    parsed = parse_client_initial_response(client.first())
    t = UnsecuredValidator(required_scope=["a", "b"])(parsed.token)
    assert (t.principal, parsed.extensions) == ("al", {"t": "1"})
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredLoginStringClaim_sub="jo" unsecuredLoginListClaim_scope=",a,b";')
    client = ClientSecurity.from_props({**base, "sasl.jaas.config": jaas}).sasl_client()
    assert isinstance(client, OAuthBearerClient)
    t = UnsecuredValidator(required_scope=["b"])(parse_client_initial_response(client.first()).token)
    assert t.principal == "jo"
    fixed = ClientSecurity.from_props({**base, "sasl.oauthbearer.token": "x.y.z"}).sasl_client()
    assert fixed is not None and parse_client_initial_response(fixed.first()).token == "x.y.z"
    assert fixed.step(b'{"status":"invalid_token"}') == b"\x01"
