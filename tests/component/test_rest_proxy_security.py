"""The REST proxy's security and metrics over real sockets.

* Basic authentication (``authentication.method=BASIC``): 401 with the challenge and Confluent's
  body without valid credentials, 403 for a user without an allowed role, 200 otherwise; the users
  file read again when it changes; the JAAS form of the configuration.
* Principal propagation on a SASL (SCRAM-SHA-256) cluster with ACLs
  (:func:`tests.support.sasl_broker.sasl_broker`: alice and bob may use the topics named
  ``<user>-...``; alice may also create them): each HTTP user reaches the brokers as themselves,
  so alice reads and creates her topics where bob gets 403, and a user the brokers refuse gets
  401 40101. The proxy's own principal is allowed nothing, so an answer that leaked through it
  would fail these tests.
* https listeners with generated certificates (a PEM key store; certificate and encrypted key
  apart), and a clear start-up error for files that cannot be used.
* ``GET /metrics``: requests and errors counted per route template.
"""

from __future__ import annotations

import os
import ssl
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from cryptography.hazmat.primitives import serialization
from prometheus_client.parser import text_string_to_metric_families

from tests.support.sasl_broker import USERS, create_topics, sasl_broker, superuser
from zurau import EmbeddedBroker
from zurau.rest_proxy.basic_auth import BasicAuth
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy
from zurau.testing.certificates import TestCA

PROXY_USER, PROXY_PASSWORD = "restproxy", "restproxy-secret"
SASL_CLIENT = {
    "client.security.protocol": "SASL_PLAINTEXT",
    "client.sasl.mechanism": "SCRAM-SHA-256",
    "client.sasl.username": PROXY_USER,
    "client.sasl.password": PROXY_PASSWORD,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with sasl_broker() as b:
        admin = superuser(b)
        upsert = UserScramCredentialUpsertion(
            PROXY_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), PROXY_PASSWORD.encode()
        )
        for f in admin.alter_user_scram_credentials([upsert]).values():
            f.result(timeout=30)
        create = AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, "User:alice", "*",
                            AclOperation.CREATE, AclPermissionType.ALLOW)
        for f in admin.create_acls([create]).values():
            f.result(timeout=30)
        yield b


@pytest.fixture(scope="module")
def topics(broker: EmbeddedBroker) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:6]
    names = {"alice": f"alice-{suffix}", "bob": f"bob-{suffix}"}
    create_topics(broker, *names.values())
    return names


def users_text(alice_password: str = USERS["alice"]) -> str:
    return (
        "# user: password[,role...]\n"
        f"alice: {alice_password},rest\n"
        f"bob: {USERS['bob']},rest,other\n"
        "carol: carol-secret,rest\n"  # in the file, unknown to the brokers
        "dave: MD5:639bae9ac6b3e1a84cebb7b403297b79,nobody\n"  # password "you", no allowed role
    )


def rewrite(path: Path, text: str) -> None:
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a new mtime even on coarse clocks


@pytest.fixture(scope="module")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("users") / "users.properties"
    path.write_text(users_text())
    return path


@pytest.fixture(scope="module")
def proxy(broker: EmbeddedBroker, users_file: Path) -> Iterator[EmbeddedRestProxy]:
    props = {
        **SASL_CLIENT,
        "authentication.method": "BASIC",
        "authentication.roles": "rest",
        "authentication.users.file": str(users_file),
    }
    with EmbeddedRestProxy(broker.listener_address("SASL_PLAINTEXT"), **props) as p:
        yield p


def http(proxy: EmbeddedRestProxy, user: str | None = None, password: str | None = None) -> httpx.Client:
    auth = (user, password if password is not None else USERS.get(user, "")) if user else None
    return httpx.Client(base_url=proxy.url, auth=auth, timeout=30)


def cluster_id(proxy: EmbeddedRestProxy) -> str:
    with http(proxy, "alice") as c:
        r = c.get("/v3/clusters")
        assert r.status_code == 200, r.text
        return str(r.json()["data"][0]["cluster_id"])


def test_basic_authentication_answers(proxy: EmbeddedRestProxy) -> None:
    for client in (http(proxy), http(proxy, "alice", "wrong"), http(proxy, "nobody", "x")):
        r = client.get("/v3/clusters")
        assert r.status_code == 401, r.text
        assert r.headers["www-authenticate"] == 'Basic realm="KafkaRest"'
        assert r.json() == {"error_code": 401, "message": "Unauthorized"}
    r = httpx.get(proxy.url + "/", headers={"Authorization": "Basic not-base64!"})
    assert r.status_code == 401 and r.json()["error_code"] == 401
    r = httpx.get(proxy.url + "/", headers={"Authorization": "Bearer abc"})
    assert r.status_code == 401

    r = http(proxy, "dave", "you").get("/")
    assert r.status_code == 403 and r.json()["error_code"] == 403 and "rest" in r.json()["message"], r.text
    r = http(proxy, "alice").get("/")
    assert r.status_code == 200 and r.json() == {}


def test_each_user_reaches_the_brokers_as_themselves(proxy: EmbeddedRestProxy, topics: dict[str, str]) -> None:
    cid = cluster_id(proxy)
    alice, bob = http(proxy, "alice"), http(proxy, "bob")
    base = f"/v3/clusters/{cid}/topics"

    r = alice.get(f"{base}/{topics['alice']}")
    assert r.status_code == 200, r.text
    assert r.json()["topic_name"] == topics["alice"]
    r = bob.get(f"{base}/{topics['alice']}")
    assert r.status_code == 403, r.text
    assert r.json()["error_code"] == 40301
    assert bob.get(f"{base}/{topics['bob']}").status_code == 200

    listed = {t["topic_name"] for t in alice.get(base).json()["data"]}
    assert topics["alice"] in listed and topics["bob"] not in listed

    new = f"alice-new-{uuid.uuid4().hex[:6]}"
    r = alice.post(base, json={"topic_name": new, "partitions_count": 2, "replication_factor": 1})
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 20
    while alice.get(f"{base}/{new}").status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = bob.post(base, json={"topic_name": f"bob-new-{uuid.uuid4().hex[:6]}", "partitions_count": 1,
                             "replication_factor": 1})
    assert r.status_code == 403, r.text
    assert r.json()["error_code"] == 40301

    # in the users file but unknown to the brokers: the broker's refusal is a 401
    r = http(proxy, "carol", "carol-secret").get(f"{base}/{topics['alice']}")
    assert r.status_code == 401, r.text
    assert r.json()["error_code"] == 40101 and "carol" in r.json()["message"]
    assert r.headers["www-authenticate"] == 'Basic realm="KafkaRest"'

    assert proxy.server is not None and proxy.server.api is not None
    auth = proxy.server.api.services["basic_auth"]
    assert isinstance(auth, BasicAuth) and auth.user_clients is not None
    assert auth.user_clients.users == ["alice", "bob"]  # one set of clients per user, reused


def test_a_consumer_instance_belongs_to_the_user_who_created_it(proxy: EmbeddedRestProxy) -> None:
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    alice, bob = http(proxy, "alice"), http(proxy, "bob")
    r = alice.post("/consumers/shared-group", json={"name": "alices", "format": "binary"}, headers=v2)
    assert r.status_code == 200, r.text
    base = "/consumers/shared-group/instances/alices"
    assert alice.get(f"{base}/subscription").status_code == 200
    for answer in (bob.get(f"{base}/subscription"), bob.delete(base, headers=v2),
                   bob.post(f"{base}/subscription", json={"topics": ["t"]}, headers=v2)):
        assert answer.status_code == 404 and answer.json()["error_code"] == 40403, answer.text
    assert alice.delete(base, headers=v2).status_code == 204


def test_the_users_file_is_read_again_when_it_changes(proxy: EmbeddedRestProxy, users_file: Path,
                                                      topics: dict[str, str]) -> None:
    cid = cluster_id(proxy)
    path = f"/v3/clusters/{cid}/topics/{topics['alice']}"
    try:
        rewrite(users_file, users_text("changed-password"))
        assert http(proxy, "alice").get(path).status_code == 401  # the old password is gone
        r = http(proxy, "alice", "changed-password").get(path)  # the file says yes, the brokers no
        assert r.status_code == 401 and r.json()["error_code"] == 40101, r.text
        rewrite(users_file, "bob: bob-secret,rest\n")  # alice removed
        assert http(proxy, "alice").get("/").status_code == 401
        assert http(proxy, "bob").get(f"/v3/clusters/{cid}/topics/{topics['bob']}").status_code == 200
        rewrite(users_file, "this is :: not [a users file\nalice: MD5:bad\n")  # unusable: users kept
        assert http(proxy, "bob").get("/").status_code == 200
    finally:
        rewrite(users_file, users_text())
    assert http(proxy, "alice").get(path).status_code == 200


def test_users_from_a_jaas_file(broker: EmbeddedBroker, tmp_path: Path, topics: dict[str, str]) -> None:
    users = tmp_path / "password.properties"
    users.write_text(f"alice: {USERS['alice']},admin\n")
    jaas = tmp_path / "rest-jaas.properties"
    jaas.write_text(
        "Proxy {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  debug="true"\n  file="{users}";\n}};\n'
    )
    props = {**SASL_CLIENT, "authentication.method": "BASIC", "authentication.realm": "Proxy",
             "authentication.roles": "admin", "java.security.auth.login.config": str(jaas)}
    with EmbeddedRestProxy(broker.listener_address("SASL_PLAINTEXT"), **props) as p:
        r = httpx.get(p.url + "/v3/clusters")
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Basic realm="Proxy"'
        cid = cluster_id(p)
        assert http(p, "alice").get(f"/v3/clusters/{cid}/topics/{topics['alice']}").status_code == 200
        assert http(p, "bob").get("/").status_code == 401
    (tmp_path / "bad.jaas").write_text("Other { x required file=\"/nope\"; };")
    with pytest.raises(Exception, match="no entry named KafkaRest"):
        EmbeddedRestProxy(broker.listener_address("SASL_PLAINTEXT"), **{
            **SASL_CLIENT, "authentication.method": "BASIC",
            "java.security.auth.login.config": str(tmp_path / "bad.jaas")}).start()


def _tls_client(ca: TestCA) -> httpx.Client:
    return httpx.Client(verify=ssl.create_default_context(cafile=str(ca.cert_path)), timeout=30)


def test_https_listener(broker: EmbeddedBroker, tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    pem = ca.issue("proxy", "localhost", server=True)
    plaintext = broker.listener_address("PLAINTEXT")
    with EmbeddedRestProxy(plaintext, listeners="https://127.0.0.1:0",
                           **{"ssl.keystore.location": str(pem.keystore)}) as p, _tls_client(ca) as c:
        assert p.url.startswith("https://127.0.0.1:")
        r = c.get(p.url + "/v3/clusters")
        assert r.status_code == 200, r.text
        assert r.json()["data"][0]["metadata"]["self"].startswith(p.url + "/v3/clusters/")
        with pytest.raises(httpx.HTTPError):  # plain http to the https port
            httpx.get(p.url.replace("https://", "http://") + "/", timeout=10)
        with pytest.raises(httpx.ConnectError):  # a client that does not trust the CA
            httpx.get(p.url + "/", timeout=10)

    # certificate and an encrypted key in two files
    key = serialization.load_pem_private_key(pem.key.read_bytes(), password=None)
    encrypted = tmp_path / "proxy-encrypted.key"
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"key-pass")))
    apart = {"ssl.certificate.location": str(pem.cert), "ssl.key.location": str(encrypted)}
    with EmbeddedRestProxy(plaintext, listeners="https://localhost:0",
                           **{**apart, "ssl.key.password": "key-pass"}) as p, _tls_client(ca) as c:
        assert p.url.startswith("https://localhost:")
        assert c.get(p.url + "/").json() == {}

    with pytest.raises(OSError, match="cannot be loaded"):
        EmbeddedRestProxy(plaintext, listeners="https://127.0.0.1:0", **{**apart, "ssl.key.password": "wrong"}).start()
    with pytest.raises(OSError, match=r"missing\.pem\) cannot be read"):
        EmbeddedRestProxy(plaintext, listeners="https://127.0.0.1:0",
                          **{"ssl.keystore.location": str(tmp_path / "missing.pem")}).start()


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_count_requests_and_errors_per_template(broker: EmbeddedBroker, proxy: EmbeddedRestProxy) -> None:
    with EmbeddedRestProxy(broker.listener_address("PLAINTEXT")) as p, httpx.Client(base_url=p.url, timeout=30) as c:
        cid = c.get("/v3/clusters").json()["data"][0]["cluster_id"]
        assert c.get("/v3/clusters").status_code == 200
        assert c.get(f"/v3/clusters/{cid}").status_code == 200
        assert c.get("/v3/clusters/no-such-cluster").status_code == 404
        assert c.delete("/").status_code == 405
        assert c.get("/no/such/path").status_code == 404
        r = c.get("/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        assert cid not in r.text and "no-such-cluster" not in r.text  # templates, never raw paths
        got = _samples(r.text)

        def value(name: str, **labels: str) -> float:
            return got.get((name, frozenset(labels.items())), 0.0)

        requests, errors = "kafka_rest_jersey_metrics_requests_total", "kafka_rest_jersey_metrics_request_errors_total"
        assert value(requests, endpoint="/v3/clusters", method="GET") == 2
        assert value(requests, endpoint="/v3/clusters/{cluster_id}", method="GET") == 2
        assert value(errors, endpoint="/v3/clusters/{cluster_id}", method="GET", status_class="4xx") == 1
        assert value(errors, endpoint="/v3/clusters", method="GET", status_class="4xx") == 0
        assert value(errors, endpoint="/", method="DELETE", status_class="4xx") == 1
        assert value(errors, endpoint="other", method="GET", status_class="4xx") == 1
        assert value("kafka_rest_jersey_metrics_request_latency_seconds_count",
                     endpoint="/v3/clusters", method="GET") == 2
        assert value("kafka_rest_jersey_metrics_requests_in_flight") == 1  # this scrape

    # behind basic authentication, refused requests count too
    with http(proxy) as anonymous:
        assert anonymous.get("/v3/clusters").status_code == 401
    with http(proxy, "alice") as alice:
        got = _samples(alice.get("/metrics").text)
    assert got[("kafka_rest_jersey_metrics_request_errors_total",
                frozenset({"endpoint": "/v3/clusters", "method": "GET", "status_class": "4xx"}.items()))] >= 1
