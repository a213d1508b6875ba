"""The REST proxy's basic authentication without sockets: Jetty's password formats (plain, MD5,
CRYPT, OBF, checked against Jetty's documented values), the users file (Java properties syntax,
roles, read again when it changes, a broken change keeping the users in hand), the JAAS file
naming it, the ``Authorization`` header, the 401/403/200 decisions of the middleware (an ASGI
app driven directly) and the metrics' route templates."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.routing import Route

from zurau.rest_proxy.basic_auth import (
    BasicAuth,
    BasicAuthMiddleware,
    Credential,
    deobfuscate,
    parse_basic,
    users_file_from_jaas,
)
from zurau.rest_proxy.proxy_api import USER_STATE, ProxyApi
from zurau.rest_proxy.proxy_config import RestProxyConfig, RestProxyConfigError
from zurau.rest_proxy.proxy_metrics import ProxyMetrics, RequestMetricsMiddleware, consumer_instances


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_jetty_password_formats() -> None:
    # Jetty's documentation: "password" obfuscated, and the MD5 of "you"
    assert deobfuscate("OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v") == "password"
    assert Credential.parse("OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v").check("password")
    md5 = Credential.parse("MD5:639bae9ac6b3e1a84cebb7b403297b79")
    assert md5.check("you") and not md5.check("You") and not md5.check("")
    assert Credential.parse("MD5:639BAE9AC6B3E1A84CEBB7B403297B79").check("you")  # hex in either case
    plain = Credential.parse("s3cret:with,odd=chars")
    assert plain.check("s3cret:with,odd=chars") and not plain.check("s3cret")
    with pytest.raises(ValueError, match="hex"):
        Credential.parse("MD5:nothex")
    with pytest.raises(ValueError, match="32 hex digits"):
        Credential.parse("MD5:abcd")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # Python 3.11, the project's version, has it (removed in 3.13)
    cooked = crypt.crypt("blah", "me")
    assert Credential.parse("CRYPT:" + cooked).check("blah")
    assert not Credential.parse("CRYPT:" + cooked).check("blah!")


def test_authorization_header() -> None:
    assert parse_basic(basic("alice", "pw:with:colons")) == ("alice", "pw:with:colons")
    assert parse_basic("basic " + base64.b64encode(b"bob:").decode()) == ("bob", "")  # scheme is case-insensitive
    assert parse_basic(basic("j\u00f6rg", "p\u00e4ss")) == ("j\u00f6rg", "p\u00e4ss")
    for bad in (None, "", "Basic", "Basic !!!notbase64", "Bearer abc", "Basic " + base64.b64encode(b"nocolon").decode(),
                "Basic " + base64.b64encode(b":nouser").decode()):
        assert parse_basic(bad) is None, bad


def write_users(path: Path, text: str) -> None:
    path.write_text(text)
    st = path.stat()  # a distinct modification time even within the file system's granularity
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def config(users: Path, **props: str) -> RestProxyConfig:
    return RestProxyConfig.from_props(
        {"authentication.method": "basic", "authentication.users.file": str(users), **props}
    )


def test_users_file_roles_and_reload(tmp_path: Path) -> None:
    users = tmp_path / "users.properties"
    write_users(users, "# Jetty's format\nalice: alice-pw,admin, developer\nbob=MD5:639bae9ac6b3e1a84cebb7b403297b79\n"
                       "carol : OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v,reader\n")
    auth = BasicAuth(config(users, **{"authentication.roles": "admin,reader"}))
    assert set(auth.store.users) == {"alice", "bob", "carol"}
    assert auth.store.users["alice"].roles == {"admin", "developer"}
    assert auth.authenticate(basic("alice", "alice-pw")) == (200, "alice", "")
    assert auth.authenticate(basic("carol", "password"))[:2] == (200, "carol")
    status, user, message = auth.authenticate(basic("bob", "you"))  # right password, no allowed role
    assert (status, user) == (403, "bob") and "admin, reader" in message
    assert auth.authenticate(basic("alice", "wrong"))[0] == 401
    assert auth.authenticate(basic("nobody", "alice-pw"))[0] == 401
    assert auth.authenticate(None)[0] == 401

    write_users(users, "alice: new-pw,admin\n")  # changed: read again on the next request
    assert auth.authenticate(basic("alice", "alice-pw"))[0] == 401
    assert auth.authenticate(basic("alice", "new-pw"))[0] == 200
    assert auth.authenticate(basic("carol", "password"))[0] == 401

    write_users(users, "alice: MD5:zz\n")  # a broken change keeps the users in hand
    assert auth.authenticate(basic("alice", "new-pw"))[0] == 200
    users.unlink()  # so does a file that went away
    assert auth.authenticate(basic("alice", "new-pw"))[0] == 200
    write_users(users, "alice: back,admin\n")
    assert auth.authenticate(basic("alice", "back"))[0] == 200

    any_user = BasicAuth(config(users))  # authentication.roles=* (the default): every user
    write_users(users, "dave: pw\n")
    assert any_user.authenticate(basic("dave", "pw")) == (200, "dave", "")


def test_bad_users_files_fail_at_start(tmp_path: Path) -> None:
    with pytest.raises(RestProxyConfigError, match="cannot read"):
        BasicAuth(config(tmp_path / "missing"))
    broken = tmp_path / "broken"
    broken.write_text("alice: MD5:0123\n")
    with pytest.raises(RestProxyConfigError, match="user 'alice'"):
        BasicAuth(config(broken))
    with pytest.raises(RestProxyConfigError, match="needs its users"):
        BasicAuth(RestProxyConfig.from_props({"authentication.method": "BASIC"}))


def test_jaas_file_names_the_users_file(tmp_path: Path) -> None:
    users = tmp_path / "password.properties"
    users.write_text("alice: alice-pw\n")
    jaas = tmp_path / "rest-jaas.properties"
    jaas.write_text(
        "// Confluent's example\n"
        "Other { com.example.Login required file=\"/nope\"; };\n"
        "/* the proxy's realm */\n"
        "KafkaRest {\n"
        "    org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f"    debug=\"true\"\n    file=\"{users}\";\n"
        "};\n"
    )
    assert users_file_from_jaas(str(jaas), "KafkaRest") == str(users)
    auth = BasicAuth(RestProxyConfig.from_props(
        {"authentication.method": "BASIC", "java.security.auth.login.config": str(jaas)}
    ))
    assert auth.authenticate(basic("alice", "alice-pw"))[0] == 200
    with pytest.raises(RestProxyConfigError, match="no entry named Elsewhere.*entries: KafkaRest, Other"):
        users_file_from_jaas(str(jaas), "Elsewhere")
    (tmp_path / "nofile.jaas").write_text("KafkaRest { org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required; };")
    with pytest.raises(RestProxyConfigError, match="names no users file"):
        users_file_from_jaas(str(tmp_path / "nofile.jaas"), "KafkaRest")
    with pytest.raises(RestProxyConfigError, match="cannot read"):
        users_file_from_jaas(str(tmp_path / "absent.jaas"), "KafkaRest")


async def _call(app: Any, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": headers, "query_string": b""}
    await app(scope, receive, send)
    start = sent[0]
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_middleware_answers(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("alice: pw,rest\nbob: pw\n")
    auth = BasicAuth(config(users, **{"authentication.realm": 'My "Realm"', "authentication.roles": "rest"}))
    seen: list[Any] = []

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope.get(USER_STATE))
        status = 401 if scope.get(USER_STATE) == "alice" and len(seen) > 1 else 200
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    app = BasicAuthMiddleware(inner, auth)
    status, headers, body = asyncio.run(_call(app, []))
    assert status == 401 and headers[b"www-authenticate"] == b'Basic realm="My \\"Realm\\""'
    assert json.loads(body) == {"error_code": 401, "message": "Unauthorized"} and seen == []
    status, headers, body = asyncio.run(_call(app, [(b"authorization", basic("bob", "pw").encode())]))
    assert status == 403 and json.loads(body)["error_code"] == 403 and b"www-authenticate" not in headers
    assert asyncio.run(_call(app, [(b"authorization", basic("alice", "pw").encode())]))[0] == 200
    assert seen == ["alice"]
    # a 401 of the handler (the broker refused the user) carries the challenge too
    status, headers, _ = asyncio.run(_call(app, [(b"authorization", basic("alice", "pw").encode())]))
    assert status == 401 and headers[b"www-authenticate"].startswith(b"Basic realm=")


def test_metrics_templates_and_consumer_count() -> None:
    api = ProxyApi(RestProxyConfig(), shared=None)  # type: ignore[arg-type]  # not used here
    metrics = ProxyMetrics(api)

    async def ok(request: Any) -> Any:
        raise AssertionError

    routes = [Route("/v3/clusters/{cluster_id}/topics/{topic_name}", ok, methods=["GET"]),
              Route("/files/{name:path}", ok, methods=["GET"])]
    mw = RequestMetricsMiddleware(None, routes, metrics)  # type: ignore[arg-type]
    scope = {"type": "http", "method": "GET", "path": "/v3/clusters/abc/topics/t1", "root_path": ""}
    assert mw.endpoint_of(scope) == "/v3/clusters/{cluster_id}/topics/{topic_name}"
    assert mw.endpoint_of({**scope, "method": "DELETE"}) == "/v3/clusters/{cluster_id}/topics/{topic_name}"
    assert mw.endpoint_of({**scope, "path": "/files/a/b"}) == "/files/{name}"
    assert mw.endpoint_of({**scope, "path": "/elsewhere"}) == "other"

    assert consumer_instances(api) is None
    api.services["v2_consumer_instances"] = SimpleNamespace(instances={"a": object(), "b": object(), "c": None})
    assert consumer_instances(api) == 2  # "c" is still being created
    text = asyncio.run(metrics.endpoint(None)).body.decode()  # type: ignore[arg-type]
    assert "kafka_rest_consumer_instances 2.0" in text
