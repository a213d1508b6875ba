"""kcat (Debian's, librdkafka 2.0.2) over SASL OAUTHBEARER with librdkafka's own unsecured JWTs
(``-X sasl.mechanism=OAUTHBEARER -X enable.sasl.oauthbearer.unsecure.jwt=true
-X sasl.oauthbearer.config=principal=alice``), next to the other kcat security tests
(tests/compat/test_security_clients.py), on one broker running Kafka's StandardAuthorizer:

* ``OAUTH`` (SASL_PLAINTEXT) and ``OAUTH_SSL`` (SASL_SSL) validate unsecured JWTs without a
  required scope: kcat produces and consumes (in a group) as ``User:alice``, who has ACLs;
* ``SCOPED`` (SASL_PLAINTEXT) requires the scope ``kafka``
  (``unsecuredValidatorRequiredScope``): kcat's token without it is refused at authentication,
  with the reason in kcat's error; with ``scope=kafka`` it gets in;
* ``User:mallory`` authenticates but has no ACL: kcat's produce fails with "Topic
  authorization failed" and its consume of the topic is refused the same way.

ACLs and topics are set up over the PLAINTEXT listener, whose ``User:ANONYMOUS`` is a super user.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.support.tls import TestCA
from zurau.embedded import EmbeddedBroker

# Debian's kcat is installed by `make test`; without it these tests fail (they never skip).
KCAT = shutil.which("kcat") or "kcat"
pytestmark = pytest.mark.slow
N = 20
PREFIX = "kcat-oauth-"
JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"broker\";"
SCOPED_JAAS = JAAS[:-1] + ' unsecuredValidatorRequiredScope="kafka";'


class OAuth:
    def __init__(self, broker: EmbeddedBroker, ca: TestCA) -> None:
        self.broker, self.ca = broker, ca
        self.admin = AdminClient({"bootstrap.servers": broker.listener_address("PLAINTEXT")})

    def props(self, listener: str, config: str) -> list[str]:
        """kcat's arguments for ``listener`` with the unsecured JWT ``config`` (librdkafka's
        ``sasl.oauthbearer.config``: ``principal=... [scope=...]``)."""
        protocol = "SASL_SSL" if listener == "OAUTH_SSL" else "SASL_PLAINTEXT"
        args = ["-b", self.broker.listener_address(listener), "-X", f"security.protocol={protocol}",
                "-X", "sasl.mechanism=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
                "-X", f"sasl.oauthbearer.config={config}"]
        if protocol == "SASL_SSL":
            args += ["-X", f"ssl.ca.location={self.ca.cert_path}"]
        return args

    def topic(self) -> str:
        name = f"{PREFIX}{uuid.uuid4().hex[:10]}"
        for f in self.admin.create_topics([NewTopic(name, 1, 1)]).values():
            f.result(timeout=30)
        return name


def _allow(rtype: ResourceType, op: AclOperation) -> AclBinding:
    return AclBinding(rtype, PREFIX, ResourcePatternType.PREFIXED, "User:alice", "*", op, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def oauth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuth]:
    ca = TestCA(tmp_path_factory.mktemp("kcat-oauth"))
    server = ca.issue("server", "localhost", server=True)
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,OAUTH://127.0.0.1:0,OAUTH_SSL://127.0.0.1:0,SCOPED://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OAUTH:SASL_PLAINTEXT,OAUTH_SSL:SASL_SSL,SCOPED:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "group.initial.rebalance.delay.ms": "0",
        "connection.failed.authentication.delay.ms": "0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.cert_path),
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.oauth.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.oauth_ssl.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.scoped.oauthbearer.sasl.jaas.config": SCOPED_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
    }
    with EmbeddedBroker(**configs) as broker:
        setup = OAuth(broker, ca)
        acls = [_allow(ResourceType.TOPIC, op) for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)]
        acls.append(_allow(ResourceType.GROUP, AclOperation.READ))
        for f in setup.admin.create_acls(acls, request_timeout=30).values():
            f.result(timeout=30)
        yield setup


def _kcat(args: list[str], *more: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([KCAT, *args, *more], input=stdin, capture_output=True, timeout=60, check=False)


def _values() -> list[bytes]:
    return [f"value-{i}".encode() for i in range(N)]


@pytest.mark.parametrize("listener", ["OAUTH", "OAUTH_SSL"])
def test_kcat_produces_and_consumes_with_an_unsecured_jwt(oauth: OAuth, listener: str) -> None:
    topic = oauth.topic()
    args = oauth.props(listener, "principal=alice")
    produced = _kcat(args, "-P", "-t", topic, stdin=b"\n".join(_values()) + b"\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = _kcat(args, "-G", f"{PREFIX}g-{topic}", "-o", "beginning", "-e", "-q", topic)
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stdout.split(b"\n")[:-1] == _values()


def test_kcat_token_without_the_required_scope_is_refused(oauth: OAuth) -> None:
    refused = _kcat(oauth.props("SCOPED", "principal=alice"), "-L", "-m", "5")
    err = refused.stderr.decode()
    assert refused.returncode != 0, err
    assert "lacks the required scope kafka" in err and "insufficient_scope" in err, err
    # The same principal with the scope gets in.
    topic = oauth.topic()
    ok = _kcat(oauth.props("SCOPED", "principal=alice scope=kafka"), "-P", "-t", topic, stdin=b"scoped\n")
    assert ok.returncode == 0, ok.stderr.decode()


def test_kcat_principal_without_acls_is_refused(oauth: OAuth) -> None:
    topic = oauth.topic()
    args = oauth.props("OAUTH", "principal=mallory")
    produced = _kcat(args, "-P", "-t", topic, stdin=b"nope\n")
    err = produced.stderr.decode()
    assert produced.returncode != 0, err
    assert "Topic authorization failed" in err, err
    consumed = _kcat(args, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert consumed.returncode != 0 and consumed.stdout == b"", consumed.stderr.decode()
    assert "Topic authorization failed" in consumed.stderr.decode(), consumed.stderr.decode()
