"""Security building blocks without sockets: SCRAM (RFC 7677 vectors), PLAIN tokens, principal
mapping rules, JAAS configs, listener security resolution, the SCRAM credential controller and
the SASL session's state machine."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from tests.support.tls import TestCA
from zurau.broker.auth.jaas import parse_jaas_config, plain_users
from zurau.broker.auth.listener_security import listener_security
from zurau.broker.auth.principal_mapping import NoMatchingRule, PrincipalMapper, distinguished_name
from zurau.broker.auth.session import SecuritySession
from zurau.broker.auth.ssl_context import ListenerSslContext
from zurau.config import BrokerConfig, ConfigError
from zurau.metadata.controller.scram_control import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.snapshot import image_records
from zurau.protocol.errors import (
    DuplicateResourceError,
    IllegalSaslStateError,
    ResourceNotFoundError,
    SaslAuthenticationFailedError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from zurau.protocol.sasl import (
    SaslError,
    ScramClient,
    ScramMechanism,
    ScramServer,
    parse_plain_token,
    scram_credential,
)
from zurau.protocol.sasl.scram import salted_password

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# ------------------------------------------------------------------------------------ SCRAM


def test_scram_sha256_matches_rfc7677_test_vector() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    client = ScramClient(SHA256, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    server = ScramServer(SHA256, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = server.first(client.first(), scram_credential(SHA256, "pencil", iterations=4096, salt=salt))
    assert server_first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    client_final = client.step(server_first)
    assert client_final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert client_final is not None
    server_final = server.final(client_final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert client.step(server_final) is None and client.complete and server.username == "user"


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_scram_wrong_password_and_tampering_fail(mech: ScramMechanism) -> None:
    cred = scram_credential(mech, "right", iterations=4096)
    client = ScramClient(mech, "a,b=c", "wrong")
    server = ScramServer(mech)
    assert b"n=a=2Cb=3Dc," in client.first()
    final = client.step(server.first(client.first(), cred))
    assert final is not None
    with pytest.raises(SaslError, match="invalid credentials"):
        server.final(final)
    # A client checks the server's signature: a server without the password is caught.
    good = ScramClient(mech, "u", "right")
    server2 = ScramServer(mech)
    good_final = good.step(server2.first(good.first(), cred))
    assert good_final is not None
    server2.final(good_final)
    with pytest.raises(SaslError, match="server signature"):
        good.step(b"v=" + base64.b64encode(b"x" * 32))
    for garbage in (b"", b"\xff\xfe", b"p=tls-unique,,n=u,r=x", b"n,,r=x", b"n,,n=u"):
        with pytest.raises(SaslError):
            ScramServer(mech).first(garbage, cred)
    with pytest.raises(SaslError, match="nonce"):
        s = ScramServer(mech)
        s.first(b"n,,n=u,r=abc", cred)
        s.final(b"c=biws,r=abcXYZ,p=" + base64.b64encode(b"x" * 32))


def test_plain_token_rules() -> None:
    assert parse_plain_token(b"\x00alice\x00pw") == ("alice", "pw")
    assert parse_plain_token(b"alice\x00alice\x00pw") == ("alice", "pw")
    for bad, message in ((b"alice\x00pw", "3 tokens"), (b"\x00\x00pw", "username"), (b"\x00a\x00", "password"),
                         (b"bob\x00alice\x00pw", "authorization id")):
        with pytest.raises(SaslError, match=message):
            parse_plain_token(bad)


# ------------------------------------------------------------------------------ principals


def test_distinguished_name_is_rfc2253_and_rules_map_it() -> None:
    subject = (
        (("countryName", "GB"),),
        (("organizationName", "Example, Inc"),),
        (("organizationalUnitName", "eng"),),
        (("commonName", "alice"), ("emailAddress", "a@x.io")),
    )
    dn = distinguished_name(subject)
    assert dn == "CN=alice+1.2.840.113549.1.9.1=#16066140782e696f,OU=eng,O=Example\\, Inc,C=GB"
    assert PrincipalMapper("DEFAULT").name("CN=alice,OU=eng") == "CN=alice,OU=eng"
    rules = PrincipalMapper(r"RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L, RULE:^CN=([^,]*).*$/$1/U, DEFAULT")
    assert rules.name("CN=Alice,OU=Eng,O=Example,C=GB") == "alice@eng"
    assert rules.name("CN=bob,C=GB") == "BOB"
    slash = PrincipalMapper(r"RULE:^CN=([^,]*)\/x$/u\/$1/")
    assert slash.name("CN=k/x") == "u/k"
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=bob"):
        PrincipalMapper("RULE:^CN=alice$/a/").name("CN=bob")
    for bad in ("RULE:(/x/", "RULE:a/b", "NOPE"):
        with pytest.raises(ConfigError, match="ssl.principal.mapping.rules"):
            PrincipalMapper(bad)


# -------------------------------------------------------------------------- listener config

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
    'password="admin-secret" user_admin="admin-secret" user_alice="al\\"ice";'
)


def test_jaas_config_parsing() -> None:
    entry = parse_jaas_config(JAAS)
    assert entry.login_module.endswith("PlainLoginModule") and entry.flag == "required"
    assert plain_users(entry) == {"admin": "admin-secret", "alice": 'al"ice'}
    for bad in ("PlainLoginModule", "PlainLoginModule maybe;", 'PlainLoginModule required user_a="x"',
                'X required a="1"; Y required;'):
        with pytest.raises(ConfigError) as e:
            parse_jaas_config(bad, "listener.name.sasl.plain.sasl.jaas.config")
        assert "listener.name.sasl.plain.sasl.jaas.config" in str(e.value) and "x" not in str(e.value.value or "")


def _multi(**extra: str) -> BrokerConfig:
    return BrokerConfig(
        {
            "listeners": "PLAINTEXT://:9092,SSL://:9093,SASL_SSL://:9094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            **extra,
        }
    )


def test_listener_security_resolves_overrides_and_refuses_incomplete_tls(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    server = ca.issue("server", "localhost", server=True)
    cfg = _multi(**{
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(ca.cert_path),
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/L",
        "listener.name.sasl_ssl.connections.max.reauth.ms": "60000",
    })
    plain = listener_security(cfg, "PLAINTEXT")
    assert plain.ssl is None and not plain.uses_sasl
    ssl_l = listener_security(cfg, "SSL")
    assert ssl_l.ssl is not None and ssl_l.ssl.client_auth == "required" and not ssl_l.uses_sasl
    assert ssl_l.principal_mapper.name("CN=Alice,O=X") == "alice"
    sasl = listener_security(cfg, "SASL_SSL")
    assert sasl.ssl is not None and sasl.ssl.client_auth == "none" and sasl.reauth_ms == 60000
    assert sasl.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-512") and sasl.plain_users["admin"] == "admin-secret"
    assert ListenerSslContext(ssl_l.ssl).context.verify_mode.name == "CERT_REQUIRED"

    with pytest.raises(ConfigError, match="ssl.keystore.type=PEM"):
        listener_security(_multi(**{"ssl.keystore.location": str(server.keystore)}), "SSL")
    with pytest.raises(ConfigError, match="needs ssl.keystore.location"):
        listener_security(_multi(**{"ssl.keystore.type": "PEM"}), "SSL")
    with pytest.raises(ConfigError, match="TLSv1.2, TLSv1.3"):
        listener_security(_multi(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(server.keystore),
                                    "ssl.enabled.protocols": "TLSv1.1"}), "SSL")
    with pytest.raises(ConfigError, match="cannot load"):
        ListenerSslContext(listener_security(
            _multi(**{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(ca.cert_path)}), "SSL").ssl)  # type: ignore[arg-type]
    no_users = BrokerConfig({
        "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
    })
    with pytest.raises(ConfigError, match="defines no users"):
        listener_security(no_users, "SASL_PLAINTEXT")
    # In a cluster, brokers and controllers may talk to each other over TLS (see
    # test_broker_client_security.py for the node's own side of those connections).
    cluster = BrokerConfig({
        "process.roles": "broker", "node.id": "2", "controller.quorum.voters": "1@h:9093,3@h:9095",
        "controller.listener.names": "CONTROLLER", "listeners": "SSL://:9092",
        "listener.security.protocol.map": "SSL:SSL,CONTROLLER:SSL", "inter.broker.listener.name": "SSL",
    })
    assert cluster.inter_broker_listener_name == "SSL"


def test_inline_pem_material_loads(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    server = ca.issue("server", "localhost", server=True)
    cfg = _multi(**{
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": server.cert.read_text(),
        "ssl.keystore.key": server.key.read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca.pem,
        "ssl.client.auth": "requested",
    })
    ctx = ListenerSslContext(listener_security(cfg, "SSL").ssl)  # type: ignore[arg-type]
    assert ctx.context.verify_mode.name == "CERT_OPTIONAL"
    assert [c["subject"] for c in ctx.context.get_ca_certs()] == [((("countryName", "GB"),), (("organizationName", "Example"),), (("commonName", "Zurau Test CA"),))]


# ------------------------------------------------------------------------ SCRAM credentials


def _upsert(name: str, mech: int = 1, iterations: int = 4096, password: str = "pw") -> dict[str, object]:
    salt = b"salt-" + name.encode()
    m = ScramMechanism(mech) if mech in (1, 2) else SHA256
    return {"name": name, "mechanism": mech, "iterations": iterations, "salt": salt,
            "salted_password": salted_password(m, password, salt, max(iterations, 1))}


def test_scram_credentials_controller_rules_and_image() -> None:
    image = MetadataImage("c")
    result = alter_user_scram_credentials(
        image, [], [_upsert("alice"), _upsert("alice", 2, 8192), _upsert("bob", 1, 100), _upsert("carol", 3),
                    _upsert(""), _upsert("dave"), _upsert("dave")]
    )
    codes = {r["user"]: r["error_code"] for r in result.response}
    assert codes == {"alice": 0, "bob": UnacceptableCredentialError.code, "carol": UnsupportedSaslMechanismError.code,
                     "": UnacceptableCredentialError.code, "dave": DuplicateResourceError.code}
    assert all(decode_record(encode_record(r)) == r for r in result.records)
    image = image.apply(result.records)
    assert set(image.scram_credentials) == {("alice", SHA256), ("alice", SHA512)}
    # The stored keys verify the password (and survive a snapshot).
    again = MetadataImage("c").apply(image_records(image))
    assert again.scram_credentials == image.scram_credentials
    client, server = ScramClient(SHA512, "alice", "pw"), ScramServer(SHA512)
    final = client.step(server.first(client.first(), again.scram_credentials[("alice", SHA512)]))
    assert final is not None and server.final(final).startswith(b"v=")

    described = describe_user_scram_credentials(image, None)["results"]
    assert described == [{"user": "alice", "error_code": 0, "error_message": None,
                          "credential_infos": [{"mechanism": 1, "iterations": 4096}, {"mechanism": 2, "iterations": 8192}]}]
    some = describe_user_scram_credentials(image, [{"name": "nobody"}, {"name": "alice"}, {"name": "alice"}])["results"]
    assert [(r["user"], r["error_code"]) for r in some] == [
        ("nobody", ResourceNotFoundError.code), ("alice", DuplicateResourceError.code)]

    deleted = alter_user_scram_credentials(image, [{"name": "alice", "mechanism": 1}, {"name": "zed", "mechanism": 1}], [])
    assert [r["error_code"] for r in deleted.response] == [0, ResourceNotFoundError.code]
    assert set(image.apply(deleted.records).scram_credentials) == {("alice", SHA512)}


# ---------------------------------------------------------------------------- SASL session


def test_sasl_session_states() -> None:
    cfg = BrokerConfig({
        "listeners": "SASL_PLAINTEXT://:9093",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "0",
    })
    security = listener_security(cfg, "SASL_PLAINTEXT")
    creds = {("bob", SHA256): scram_credential(SHA256, "bob-pw")}

    async def run() -> None:
        closed: list[str] = []
        s = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        assert s.refuse(18) is None and s.refuse(17) is None
        assert "ILLEGAL_SASL_STATE" in (s.refuse(3) or "")
        assert s.handshake("PLAIN", 1) == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
        assert s.refuse(36) is None
        ok = s.authenticate(b"\x00alice\x00al\"ice", 2)
        assert ok["error_code"] == 0 and s.principal == "User:alice" and s.refuse(3) is None

        # SCRAM through SaslAuthenticate; an unknown user fails at once.
        s2 = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        s2.handshake("SCRAM-SHA-256", 1)
        c = ScramClient(SHA256, "bob", "bob-pw")
        first = s2.authenticate(c.first(), 1)
        final = c.step(first["auth_bytes"])
        assert final is not None
        assert s2.authenticate(final, 1)["error_code"] == 0 and s2.principal == "User:bob"

        s3 = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        assert s3.handshake("GSSAPI", 1)["error_code"] == UnsupportedSaslMechanismError.code
        s4 = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        s4.handshake("PLAIN", 1)
        bad = s4.authenticate(b"\x00alice\x00nope", 1)
        assert bad["error_code"] == SaslAuthenticationFailedError.code and "Invalid username or password" in bad["error_message"]
        assert s4.refuse(18) is not None
        s5 = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        assert s5.authenticate(b"x", 1)["error_code"] == IllegalSaslStateError.code
        # Legacy v0: raw tokens.
        s6 = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        s6.handshake("PLAIN", 0)
        assert s6.raw_tokens and s6.raw_token(b"\x00admin\x00admin-secret") == b"" and s6.principal == "User:admin"
        s7 = SecuritySession(security, lambda u, m: creds.get((u, m)), closed.append)
        s7.handshake("SCRAM-SHA-256", 0)
        assert s7.raw_token(b"n,,n=nobody,r=x") is None
        await asyncio.sleep(0.01)
        assert len(closed) == 4 and all(c.startswith("authentication failed") for c in closed)

    asyncio.run(run())


def test_spark_sink_driver_takes_the_security_settings() -> None:
    from zurau.spark.batch_marker import admin_config

    cfg = admin_config({
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "u", "sasl.password": "p", "ssl.ca.location": "/ca.pem", "linger.ms": "5",
    })
    assert cfg.security.protocol == "SASL_SSL" and cfg.security.sasl_mechanism == "SCRAM-SHA-256"
    assert cfg.security.ca_location == "/ca.pem" and cfg.security.sasl_username == "u"
