"""A node's own login on the connections it opens to other brokers and to the controllers
(zurau.broker.auth.broker_client_security): which listener's settings apply, which credentials are
taken from the JAAS configs, and the settings refused with a clear error."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from tests.support.tls import TestCA
from zurau.broker.auth.broker_client_security import controller_client_security, inter_broker_client_security
from zurau.config import BrokerConfig, ConfigError
from zurau.protocol.sasl import PlainClient, ScramClient
from zurau.protocol.sasl.oauthbearer import OAuthBearerClient

PLAIN_LOGIN = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="b-pw" '
    'user_broker="b-pw" user_alice="a-pw";'
)


def _cluster(**extra: str) -> BrokerConfig:
    """A combined node: INTERNAL (inter-broker), CLIENT and CONTROLLER listeners."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293",
        "controller.listener.names": "CONTROLLER",
        "listeners": "INTERNAL://127.0.0.1:9091,CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,CLIENT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": PLAIN_LOGIN,
        "listener.name.controller.plain.sasl.jaas.config": PLAIN_LOGIN,
    }
    props.update(extra)
    return BrokerConfig(props)


def test_plaintext_listeners_need_no_client_security() -> None:
    cfg = _cluster(**{"listener.security.protocol.map": "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT"})
    assert inter_broker_client_security(cfg) is None
    assert controller_client_security(cfg) is None


def test_plain_login_comes_from_the_listeners_jaas_entry() -> None:
    sec = inter_broker_client_security(_cluster())
    assert sec is not None and sec.protocol == "SASL_PLAINTEXT" and sec.sasl_mechanism == "PLAIN"
    assert (sec.sasl_username, sec.sasl_password) == ("broker", "b-pw")
    assert isinstance(sec.sasl_client(), PlainClient)
    ctrl = controller_client_security(_cluster())
    assert ctrl is not None and ctrl.sasl_username == "broker"


def test_scram_between_brokers_uses_the_mechanisms_own_entry() -> None:
    cfg = _cluster(**{
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config":
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="repl" password="r-pw";',
    })
    sec = inter_broker_client_security(cfg)
    assert sec is not None and (sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SCRAM-SHA-512", "repl", "r-pw")
    assert isinstance(sec.sasl_client(), ScramClient)


def test_refused_settings_name_what_to_change(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol") as e:
        inter_broker_client_security(_cluster(**{"sasl.mechanism.inter.broker.protocol": "GSSAPI"}))
    assert "Kerberos" in str(e.value)
    with pytest.raises(ConfigError, match="SCRAM credentials are stored in the metadata log"):
        controller_client_security(_cluster(**{"sasl.mechanism.controller.protocol": "SCRAM-SHA-512"}))
    no_login = _cluster(**{
        "listener.name.internal.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-pw";',
    })
    with pytest.raises(ConfigError, match="username"):
        inter_broker_client_security(no_login)
    missing = BrokerConfig({**_cluster().originals, "listener.name.internal.plain.sasl.jaas.config": ""})
    with pytest.raises(ConfigError):
        inter_broker_client_security(missing)
    with pytest.raises(ConfigError, match="file: URL"):
        inter_broker_client_security(_cluster(**{
            "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
            "listener.name.internal.oauthbearer.sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        }))
    with pytest.raises(ConfigError, match="Java classes cannot be loaded"):
        inter_broker_client_security(_cluster(**{
            "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
            "listener.name.internal.oauthbearer.sasl.login.callback.handler.class": "com.example.MyLogin",
            "listener.name.internal.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="broker";',
        }))


def test_oauthbearer_login_unsecured_or_from_a_token_file(tmp_path: Path) -> None:
    unsecured = inter_broker_client_security(_cluster(**{
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.internal.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="broker";',
    }))
    assert unsecured is not None and isinstance(unsecured.sasl_client(), OAuthBearerClient)
    assert b"n,,\x01auth=Bearer " in unsecured.sasl_client().first()  # type: ignore[union-attr]
    token = tmp_path / "token.jwt"
    token.write_text("first.token.value\n")
    from_file = inter_broker_client_security(_cluster(**{
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.internal.oauthbearer.sasl.oauthbearer.token.endpoint.url": f"file://{token}",
    }))
    assert from_file is not None
    assert b"auth=Bearer first.token.value\x01" in from_file.sasl_client().first()  # type: ignore[union-attr]
    token.write_text("rotated.token.value")  # read again at every authentication
    assert b"auth=Bearer rotated.token.value\x01" in from_file.sasl_client().first()  # type: ignore[union-attr]


def _tls(tmp_path: Path, **extra: str) -> tuple[BrokerConfig, TestCA]:
    ca = TestCA(tmp_path)
    node = ca.issue("node", "localhost", server=True)
    cfg = _cluster(**{
        "listener.security.protocol.map": "INTERNAL:SSL,CLIENT:PLAINTEXT,CONTROLLER:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(node.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert_path),
        **extra,
    })
    return cfg, ca


def test_tls_uses_the_listeners_trust_store_key_store_and_host_name_check(tmp_path: Path) -> None:
    cfg, _ca = _tls(tmp_path)
    sec = inter_broker_client_security(cfg)
    assert sec is not None and sec.protocol == "SSL" and not sec.uses_sasl
    ctx = sec.ssl_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert any("Zurau Test CA" in str(c.get("subject")) for c in ctx.get_ca_certs())
    ctrl = controller_client_security(cfg)
    assert ctrl is not None and ctrl.protocol == "SASL_SSL" and ctrl.sasl_username == "broker"
    no_check, _ = _tls(tmp_path / "b", **{"listener.name.internal.ssl.endpoint.identification.algorithm": ""})
    ctx2 = inter_broker_client_security(no_check).ssl_context()  # type: ignore[union-attr]
    assert ctx2 is not None and not ctx2.check_hostname and ctx2.verify_mode == ssl.CERT_REQUIRED


def test_tls_client_without_key_store_and_bad_algorithm(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    base: dict[str, Any] = {
        "listener.security.protocol.map": "INTERNAL:SSL,CLIENT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "process.roles": "broker",
        "node.id": "4",
        "listeners": "INTERNAL://127.0.0.1:9091,CLIENT://127.0.0.1:9092",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert_path),
    }
    # A broker-only node dials the controllers; it needs no key store for a listener it does not serve.
    cfg = _cluster(**{**base, "listener.security.protocol.map": "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT,CONTROLLER:SSL"})
    sec = controller_client_security(cfg)
    assert sec is not None and sec.ssl_context() is not None
    with pytest.raises(ConfigError, match="https"):
        inter_broker_client_security(_tls(tmp_path / "c", **{"ssl.endpoint.identification.algorithm": "dns"})[0])
