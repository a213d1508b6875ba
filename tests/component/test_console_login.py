"""The console's login against a broker with a SASL_PLAINTEXT (SCRAM-SHA-256) listener and ACLs,
through the HTTP API: a visitor without a session gets 401; a wrong password or unknown user is
refused with the broker's reason and the console keeps serving; two users each see the topics
their ACLs let them describe and get the broker's authorization error for the others; the
session cookie is signed, HttpOnly and SameSite=Strict; state-changing requests need the
session's CSRF token and the console's own origin; logout and expiry end the session. The
balancer's state and actions need a session, its token and the cluster's ACLs (403 otherwise).

The broker is :func:`tests.support.sasl_broker.sasl_broker`: users alice and bob, each allowed
the topics named ``<user>-...``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import ConfigResource, ResourceType
from typer.testing import CliRunner

from tests.support.sasl_broker import SASL, USERS, create_topics, sasl_broker, superuser
from zurau import EmbeddedBroker
from zurau.cli.main import app as cli_app
from zurau.console.auth import CSRF_HEADER, SESSION_COOKIE
from zurau.console.embedded_console import EmbeddedConsole


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with sasl_broker() as b:
        yield b


@pytest.fixture(scope="module")
def topics(broker: EmbeddedBroker) -> dict[str, str]:
    """One topic per user (named with the user's ACL prefix) and one nobody but supers may see."""
    suffix = uuid.uuid4().hex[:6]
    names = {"alice": f"alice-{suffix}", "bob": f"bob-{suffix}", "admin": f"secret-{suffix}"}
    create_topics(broker, *names.values())
    return names


@pytest.fixture(scope="module")
def console(broker: EmbeddedBroker) -> Iterator[EmbeddedConsole]:
    with EmbeddedConsole(broker.listener_address("SASL_PLAINTEXT"), client_properties=SASL) as c:
        assert c.config.login  # SASL without a sasl.username: visitors log in
        yield c


def client(console: EmbeddedConsole) -> httpx.Client:
    return httpx.Client(base_url=console.url, timeout=60)


def login(http: httpx.Client, user: str, password: str | None = None) -> str:
    """Log ``user`` in on ``http``; the CSRF token of the session."""
    r = http.post("/api/login", json={"username": user, "password": password or USERS[user]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["user"] == user and body["login"] is True
    return str(body["csrf_token"])


def error_of(r: httpx.Response, status: int, kind: str | None = None) -> str:
    assert r.status_code == status, r.text
    if kind is not None:
        assert r.json()["kind"] == kind, r.text
    return str(r.json()["error"])


def test_without_a_session_every_api_route_is_401(console: EmbeddedConsole) -> None:
    with client(console) as http:
        assert http.get("/api/session").json() == {"login": True, "user": None, "csrf_token": None}
        for path in ("/api/info", "/api/overview", "/api/topics", "/api/groups", "/api/share-groups/sg"):
            assert "log in first" in error_of(http.get(path), 401, "unauthenticated")
        error_of(http.post("/api/topics", json={"name": "x"}), 401, "unauthenticated")
        error_of(http.post("/api/share-groups/sg/reset-offsets", json={"mode": "earliest"}), 401, "unauthenticated")
        page = http.get("/")
        assert page.status_code == 200 and "console.js" in page.text  # the page renders the login form
        assert http.get("/static/console.js").status_code == 200


def test_a_wrong_password_is_refused_and_the_console_keeps_serving(console: EmbeddedConsole) -> None:
    with client(console) as http:
        for user, password in (("alice", "wrong"), ("mallory", "anything"), ("bob", "")):
            r = http.post("/api/login", json={"username": user, "password": password})
            message = error_of(r, 401, "authentication")
            assert message.startswith("login failed: ") and "127.0.0.1:" not in message, message
            assert SESSION_COOKIE not in r.cookies
        assert "user name and a password" in error_of(http.post("/api/login", json={"username": "alice"}), 400)
        assert "not JSON" in error_of(http.post("/api/login", content=b"{"), 400)
        assert http.get("/api/session").json()["user"] is None
        login(http, "alice")
        assert http.get("/api/session").json()["user"] == "alice"
        assert http.get("/api/topics").status_code == 200


def test_each_user_sees_the_topics_their_acls_allow(console: EmbeddedConsole, topics: dict[str, str]) -> None:
    with client(console) as alice, client(console) as bob:
        alice_csrf = login(alice, "alice")
        login(bob, "bob")
        seen_by_alice = {t["name"] for t in alice.get("/api/topics").json()["topics"]}
        seen_by_bob = {t["name"] for t in bob.get("/api/topics").json()["topics"]}
        assert topics["alice"] in seen_by_alice and topics["bob"] not in seen_by_alice
        assert topics["bob"] in seen_by_bob and topics["alice"] not in seen_by_bob
        assert topics["admin"] not in seen_by_alice | seen_by_bob
        assert alice.get(f"/api/topics/{topics['alice']}").status_code == 200

        # a topic alice may not describe: the broker's authorization error, as 403
        denied = error_of(alice.get(f"/api/topics/{topics['bob']}"), 403)
        assert "TOPIC_AUTHORIZATION_FAILED" in denied, denied
        # she may write and read her own topic: the record is produced as alice and browsed back
        headers = {CSRF_HEADER: alice_csrf}
        r = alice.post(f"/api/topics/{topics['alice']}/messages", json={"key": "k", "value": "from alice"},
                       headers=headers)
        assert r.status_code == 200, r.text
        browsed = alice.get(f"/api/topics/{topics['alice']}/messages", params={"start": "beginning"}).json()
        assert [m["value"]["data"] for m in browsed["records"]] == ["from alice"], browsed
        # but not write bob's, nor create topics (no CREATE on the cluster or the name)
        denied = error_of(alice.post(f"/api/topics/{topics['bob']}/messages", json={"value": "x"}, headers=headers), 403)
        assert "AUTHORIZATION_FAILED" in denied, denied
        created = alice.post("/api/topics", json={"name": f"alice-new-{uuid.uuid4().hex[:6]}", "partitions": 1,
                                                  "replication_factor": 1}, headers=headers)
        assert "AUTHORIZATION_FAILED" in error_of(created, 403), created.text
        assert alice.get("/api/session").json()["user"] == "alice"  # still logged in, still serving


def test_the_session_cookie_is_signed_httponly_and_samesite_strict(console: EmbeddedConsole) -> None:
    with client(console) as http:
        r = http.post("/api/login", json={"username": "bob", "password": USERS["bob"]})
        assert r.status_code == 200, r.text
        cookie = r.headers["set-cookie"]
        attrs = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
        assert {"httponly", "path", "max-age"} <= attrs and "samesite=strict" in cookie.lower()
        assert "secure" not in attrs  # plain http on 127.0.0.1
        value = r.cookies[SESSION_COOKIE]
        sid, _, mac = value.rpartition(".")
        forged = f"{sid}.{'A' * len(mac)}"
        with client(console) as other:
            other.cookies.set(SESSION_COOKIE, forged)
            error_of(other.get("/api/topics"), 401, "unauthenticated")
            other.cookies.set(SESSION_COOKIE, value)  # the real one works from anywhere that has it
            assert other.get("/api/topics").status_code == 200


def test_state_changing_requests_need_the_csrf_token_and_the_same_origin(
    console: EmbeddedConsole, topics: dict[str, str]
) -> None:
    with client(console) as http:
        token = login(http, "alice")
        path = f"/api/topics/{topics['alice']}/messages"
        assert "X-CSRF-Token" in error_of(http.post(path, json={"value": "v"}), 403, "csrf")
        assert "X-CSRF-Token" in error_of(http.post(path, json={"value": "v"}, headers={CSRF_HEADER: "guess"}), 403, "csrf")
        evil = {CSRF_HEADER: token, "Origin": "http://evil.example"}
        assert "another site" in error_of(http.post(path, json={"value": "v"}, headers=evil), 403, "csrf")
        assert "another site" in error_of(
            http.post("/api/login", json={"username": "alice", "password": USERS["alice"]},
                      headers={"Origin": "http://evil.example"}), 403, "csrf")
        own = {CSRF_HEADER: token, "Origin": console.url}
        assert http.post(path, json={"value": "v"}, headers=own).status_code == 200
        assert http.get(path, params={"start": "beginning"}).status_code == 200  # reads need no token


def test_logout_ends_the_session(console: EmbeddedConsole) -> None:
    with client(console) as http:
        token = login(http, "bob")
        cookie = http.cookies[SESSION_COOKIE]
        error_of(http.post("/api/logout"), 403, "csrf")  # logout is state-changing too
        r = http.post("/api/logout", headers={CSRF_HEADER: token})
        assert r.status_code == 200 and r.json()["user"] is None
        assert SESSION_COOKIE not in http.cookies
        error_of(http.get("/api/topics"), 401, "unauthenticated")
        http.cookies.set(SESSION_COOKIE, cookie)  # the old cookie is dead on the server too
        error_of(http.get("/api/topics"), 401, "unauthenticated")
        assert http.post("/api/logout").status_code == 200  # logging out twice is harmless


def test_a_session_expires(broker: EmbeddedBroker) -> None:
    address = broker.listener_address("SASL_PLAINTEXT")
    with EmbeddedConsole(address, client_properties=SASL, login=True, session_timeout=0.5) as console, \
            client(console) as http:
        login(http, "alice")
        assert http.get("/api/topics").status_code == 200
        time.sleep(0.8)
        error_of(http.get("/api/topics"), 401, "unauthenticated")
        assert http.get("/api/session").json()["user"] is None


def test_a_command_config_with_a_user_runs_the_console_as_that_user(
    broker: EmbeddedBroker, topics: dict[str, str]
) -> None:
    """Without login, the console uses the command config's credentials for everybody."""
    props = {**SASL, "sasl.username": "bob", "sasl.password": USERS["bob"]}
    with EmbeddedConsole(broker.listener_address("SASL_PLAINTEXT"), client_properties=props) as console, \
            client(console) as http:
        assert not console.config.login
        assert http.get("/api/session").json() == {"login": False, "user": None, "csrf_token": None}
        names = {t["name"] for t in http.get("/api/topics").json()["topics"]}
        assert topics["bob"] in names and topics["alice"] not in names
        info = http.get("/api/info").json()
        assert info["security_protocol"] == "SASL_PLAINTEXT" and info["login"] is False
        # without login, a cross-site POST is still refused
        r = http.post(f"/api/topics/{topics['bob']}/messages", json={"value": "v"}, headers={"Origin": "http://evil.example"})
        error_of(r, 403, "csrf")


def test_the_cli_refuses_a_login_it_cannot_check(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli_app, ["console", "--login", "--port", "0"])
    assert r.exit_code == 1 and "--login checks users' passwords with SASL" in r.output, r.output
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\n")
    r = runner.invoke(cli_app, ["console", "--command-config", str(config), "--port", "0"])
    assert r.exit_code == 1 and "sasl.mechanism" in r.output, r.output
    r = runner.invoke(cli_app, ["console", "--command-config", str(tmp_path / "missing"), "--port", "0"])
    assert r.exit_code == 1 and "cannot read" in r.output, r.output


def test_the_balancer_needs_a_session_its_csrf_token_and_the_cluster_acls(
    console: EmbeddedConsole, broker: EmbeddedBroker
) -> None:
    """alice has no ACL on the cluster: she may neither read the balancer's state nor act on it
    (the broker's error, as 403), and nothing changes."""
    with client(console) as http:
        error_of(http.get("/api/balancer"), 401, "unauthenticated")
        error_of(http.post("/api/balancer/rebalance", headers={"Origin": console.url}), 401, "unauthenticated")
        token = login(http, "alice")
        assert "CLUSTER_AUTHORIZATION_FAILED" in error_of(http.get("/api/balancer"), 403)
        assert "X-CSRF-Token" in error_of(http.post("/api/balancer/rebalance", headers={"Origin": console.url}), 403, "csrf")
        evil = {CSRF_HEADER: token, "Origin": "http://evil.example"}
        assert "another site" in error_of(http.post("/api/balancer/cancel", headers=evil), 403, "csrf")
        own = {CSRF_HEADER: token, "Origin": console.url}
        for path, body in (("rebalance", {}), ("remove-broker", {"broker_id": 1}), ("cancel", {})):
            denied = error_of(http.post(f"/api/balancer/{path}", json=body, headers=own), 403)
            assert "CLUSTER_AUTHORIZATION_FAILED" in denied, (path, denied)
        assert http.get("/api/session").json()["user"] == "alice"  # still logged in, still serving
    admin = superuser(broker)
    node = str(next(iter(admin.list_topics(timeout=10).brokers)))
    res = ConfigResource(ResourceType.BROKER, node)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["zurau.balancer.rebalance.requested"].value == "false"
    assert configs["zurau.balancer.removing"].value == "false"
