"""Issue 29's reproductions against the three HTTP edge services (schema registry, Kafka Connect,
console) running in-process over one embedded broker: each is a hostile request that used to get
a 500 or a wrong answer, and now gets the 4xx (with the service's own error body) or the status
Kafka/Confluent answer, after which the service keeps serving."""

from __future__ import annotations

import json
import logging
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import avro.schema
import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker, EmbeddedRegistry
from zurau.connect import rest_api as connect_rest
from zurau.connect.embedded_connect import EmbeddedConnect
from zurau.console import web_api
from zurau.console.embedded_console import EmbeddedConsole

JSON = {"Content-Type": "application/json"}
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0, metrics_http_listener="http://127.0.0.1:0") as b:
        yield b


@pytest.fixture(scope="module")
def registry(broker: EmbeddedBroker) -> Iterator[EmbeddedRegistry]:
    with EmbeddedRegistry(broker.bootstrap_servers, max_request_bytes=65536) as r:
        yield r


@pytest.fixture(scope="module")
def connect(broker: EmbeddedBroker) -> Iterator[EmbeddedConnect]:
    with EmbeddedConnect(broker.bootstrap_servers, task_shutdown_graceful_timeout_ms=500) as c:
        yield c


@pytest.fixture(scope="module")
def console(broker: EmbeddedBroker) -> Iterator[EmbeddedConsole]:
    with EmbeddedConsole(broker.bootstrap_servers) as c:
        yield c


@pytest.fixture(scope="module")
def services(registry: EmbeddedRegistry, connect: EmbeddedConnect, console: EmbeddedConsole) -> dict[str, str]:
    return {"registry": registry.url, "connect": connect.url, "console": console.url}


# A JSON-bodied endpoint of each service and its health probe.
BODY_ENDPOINT = {"registry": "/subjects/edge-x/versions", "connect": "/connectors", "console": "/api/topics"}
HEALTH = {"registry": "/subjects", "connect": "/connectors", "console": "/api/info"}


def error_body(service: str, resp: httpx.Response) -> str:
    """The message of the service's own error body (Confluent's/Kafka's or the console's)."""
    body = resp.json()
    if service == "console":
        assert set(body) == {"error", "kind"}, body
        return str(body["error"])
    assert set(body) == {"error_code", "message"} and isinstance(body["error_code"], int), body
    return str(body["message"])


def serves(service: str, url: str) -> bool:
    return httpx.get(url + HEALTH[service], timeout=30).status_code == 200


# ---------------------------------------------------------------------------- 1: deep nesting
@pytest.mark.parametrize("service", ["registry", "connect", "console"])
@pytest.mark.parametrize("depth", [1000, 900, 65])
def test_deeply_nested_body_is_400(services: dict[str, str], service: str, depth: int) -> None:
    url = services[service]
    body = "[" * depth + "]" * depth
    resp = httpx.post(url + BODY_ENDPOINT[service], content=body, headers=JSON, timeout=30)
    assert resp.status_code == 400, resp.text
    assert "nested" in error_body(service, resp)
    assert serves(service, url)


# ---------------------------------------------------------------------------- 2, 3: registry schemas
def _json_schema(depth: int) -> dict:
    s: dict = {"type": "string"}
    for _ in range(depth):
        s = {"type": "object", "properties": {"a": s}}
    return s


def _avro_records(depth: int) -> str:
    """Records nested ``depth`` deep, built as text (json.dumps itself recurses)."""
    text = '"int"'
    for i in range(depth):
        text = f'{{"type": "record", "name": "R{i}", "fields": [{{"name": "f", "type": {text}}}]}}'
    return text


@pytest.mark.parametrize(
    ("schema_type", "document"),
    [("JSON", json.dumps(_json_schema(100))), ("AVRO", _avro_records(400)), ("AVRO", _avro_records(60))],
    ids=["json-schema-100-deep", "avro-records-400-deep", "avro-records-60-deep"],
)
def test_registry_deep_schema_is_422(registry: EmbeddedRegistry, schema_type: str, document: str) -> None:
    resp = httpx.post(
        f"{registry.url}/subjects/deep-{uuid.uuid4().hex[:6]}/versions",
        json={"schema": document, "schemaType": schema_type},
        timeout=30,
    )
    assert resp.status_code == 422, resp.text
    assert resp.json()["error_code"] == 42201
    assert serves("registry", registry.url)


INVALID_AVRO = {
    "union-in-union": [["int"]],
    "duplicate-union-branch": ["int", "int"],
    "duplicate-union-array": [{"type": "array", "items": "int"}, {"type": "array", "items": "long"}],
    "duplicate-field": {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                                  {"name": "a", "type": "string"}]},
    "fixed-negative-size": {"type": "fixed", "name": "F", "size": -1},
    "duplicate-enum-symbol": {"type": "enum", "name": "E", "symbols": ["A", "A"]},
}


@pytest.mark.parametrize("name", sorted(INVALID_AVRO))
def test_registry_refuses_avro_that_avro_refuses(registry: EmbeddedRegistry, name: str) -> None:
    text = json.dumps(INVALID_AVRO[name])
    with pytest.raises(Exception):  # noqa: B017 - the Apache library's errors vary by rule
        avro.schema.parse(text)  # the oracle: Avro's own parser refuses it
    resp = httpx.post(f"{registry.url}/subjects/bad-avro-{name}/versions", json={"schema": text}, timeout=30)
    assert resp.status_code == 422, resp.text
    assert resp.json()["error_code"] == 42201 and resp.json()["message"].startswith("Invalid schema")


def test_registry_refuses_numbers_java_avro_cannot_hold(registry: EmbeddedRegistry) -> None:
    """Java's Avro (Confluent's parser) reads an int default as a 32-bit int and a fixed's size as
    an int; a number beyond a double is not JSON the registry could serve back."""
    record = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": 2**31}]}
    for text in (json.dumps(record), json.dumps({"type": "fixed", "name": "F", "size": 2**31}),
                 '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "double", "default": 1e400}]}'):
        resp = httpx.post(f"{registry.url}/subjects/big-{uuid.uuid4().hex[:6]}/versions", json={"schema": text},
                          timeout=30)
        assert resp.status_code == 422 and resp.json()["error_code"] == 42201, resp.text
    for body in (b'{"schema": "\"int\"", "x": 1e400}', b'{"schema": "\"int\"", "x": NaN}'):
        resp = httpx.post(f"{registry.url}/subjects/big/versions", content=body, headers=JSON, timeout=30)
        assert resp.status_code == 400 and resp.json()["error_code"] == 400, resp.text


def test_registry_still_accepts_what_avro_accepts(registry: EmbeddedRegistry) -> None:
    valid = [
        ["null", "int", "string", {"type": "array", "items": "int"}, {"type": "map", "values": "int"}],
        ["null", {"type": "fixed", "name": "a.F", "size": 1}, {"type": "fixed", "name": "b.F", "size": 0}],
        {"type": "record", "name": "R", "fields": [
            {"name": "a", "type": ["null", {"type": "record", "name": "S", "fields": []},
                                   {"type": "enum", "name": "E", "symbols": ["X", "Y"]}]},
            {"name": "b", "type": ["null", "S"]}]},
    ]
    for i, doc in enumerate(valid):
        text = json.dumps(doc)
        avro.schema.parse(text)
        resp = httpx.post(f"{registry.url}/subjects/good-avro-{i}-{uuid.uuid4().hex[:6]}/versions",
                          json={"schema": text}, timeout=30)
        assert resp.status_code == 200 and isinstance(resp.json()["id"], int), resp.text


# ---------------------------------------------------------------------------- 4, 6, 7, 8: Connect
def test_connect_sink_offsets_outside_kafka_types_are_400(broker: EmbeddedBroker, connect: EmbeddedConnect) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("edge-sink-in", 1, 1)])["edge-sink-in"].result(30)
    with httpx.Client(base_url=connect.url, timeout=30) as http:
        created = http.post("/connectors", json={"name": "edge-sink", "initial_state": "STOPPED", "config": {
            "connector.class": "FileStreamSink", "topics": "edge-sink-in", "file": "/dev/null"}})
        assert created.status_code == 201, created.text
        for partition, offset in ((0, 2**64), (2**31, 5), (0, -1), (-1, 5)):
            body = {"offsets": [{"partition": {"kafka_topic": "edge-sink-in", "kafka_partition": partition},
                                 "offset": {"kafka_offset": offset}}]}
            resp = http.patch("/connectors/edge-sink/offsets", json=body)
            assert resp.status_code == 400, resp.text
            assert resp.json()["error_code"] == 400
        ok = http.patch("/connectors/edge-sink/offsets", json={"offsets": [
            {"partition": {"kafka_topic": "edge-sink-in", "kafka_partition": 0}, "offset": {"kafka_offset": 2**63 - 1}}]})
        assert ok.status_code == 200, ok.text


def test_connect_restart_and_stop_answer_204(connect: EmbeddedConnect, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("one\n")
    with httpx.Client(base_url=connect.url, timeout=30) as http:
        config = {"connector.class": FILE_SOURCE, "file": str(src), "topic": "edge-204"}
        assert http.post("/connectors", json={"name": "edge-204", "config": config}).status_code == 201
        restarted = http.post("/connectors/edge-204/restart")
        assert restarted.status_code == 204 and restarted.content == b""
        stopped = http.put("/connectors/edge-204/stop")
        assert stopped.status_code == 204 and stopped.content == b""
        wait_for(lambda: http.get("/connectors/edge-204/status").json()["connector"]["state"] == "STOPPED")


def test_connect_config_values_bind_as_strings(connect: EmbeddedConnect, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("")
    base = {"connector.class": FILE_SOURCE, "file": str(src), "topic": "edge-typed"}
    with httpx.Client(base_url=connect.url, timeout=30) as http:
        for bad in ({"x": {"a": 1}}, {"x": [1, 2]}):
            resp = http.post("/connectors", json={"name": "edge-typed", "config": {**base, **bad}})
            assert resp.status_code == 400 and "java.lang.String" in resp.json()["message"], resp.text
            resp = http.put("/connectors/edge-typed/config", json={**base, **bad})
            assert resp.status_code == 400, resp.text
        null = http.post("/connectors", json={"name": "edge-typed", "config": {**base, "x": None}})
        assert null.status_code == 400 and "Null value can not be supplied" in null.json()["message"], null.text
        assert http.get("/connectors/edge-typed").status_code == 404  # nothing was stored
        created = http.post("/connectors", json={"name": "edge-typed", "config": {**base, "batch.size": 7, "x": True}})
        assert created.status_code == 201, created.text
        stored = http.get("/connectors/edge-typed/config").json()
        assert stored["batch.size"] == "7" and stored["x"] == "true"
        nested_patch = http.patch("/connectors/edge-typed/config", json={"x": {"a": 1}})
        assert nested_patch.status_code == 400
        validated = http.put(f"/connector-plugins/{FILE_SOURCE}/config/validate", json={**base, "name": "v", "x": None})
        assert validated.status_code == 200
        errors = {c["value"]["name"]: c["value"]["errors"] for c in validated.json()["configs"]}
        assert errors["x"] == ["Null value can not be supplied as the configuration value."]
        assert validated.json()["error_count"] == 1


def test_connect_boolean_query_parameters_as_kafka(connect: EmbeddedConnect) -> None:
    with httpx.Client(base_url=connect.url, timeout=30) as http:
        def kinds(value: str | None) -> set[str]:
            params = {} if value is None else {"connectorsOnly": value}
            return {p["type"] for p in http.get("/connector-plugins", params=params).json()}

        assert kinds(None) <= {"source", "sink"} and kinds("TRUE") <= {"source", "sink"}
        for not_true in ("yes", "1", "false", ""):
            assert "converter" in kinds(not_true), not_true


# ---------------------------------------------------------------------------- 5: console numbers
def test_console_numbers_outside_kafka_types_are_400(console: EmbeddedConsole) -> None:
    with httpx.Client(base_url=console.url, timeout=60) as http:
        topic = f"edge-{uuid.uuid4().hex[:6]}"
        assert http.post("/api/topics", json={"name": topic, "partitions": 1, "replication_factor": 1}).status_code == 200
        hostile = [
            http.get(f"/api/topics/{topic}/messages", params={"start": "timestamp", "timestamp": "1" + "0" * 20}),
            http.get(f"/api/topics/{topic}/messages", params={"start": "timestamp", "timestamp": "9" * 5000}),
            http.get(f"/api/topics/{topic}/messages", params={"start": "offset", "offset": str(2**63)}),
            http.get(f"/api/topics/{topic}/messages", params={"partition": str(2**31)}),
            http.post("/api/topics", json={"name": topic + "-x", "partitions": 2**40, "replication_factor": 1}),
            http.post("/api/topics", json={"name": topic + "-x", "partitions": 1, "replication_factor": 32768}),
            http.post("/api/topics", json={"name": topic + "-x", "partitions": 10**5000 // 10**4990}),
            http.post("/api/groups/edge-g/reset-offsets",
                      json={"topics": [topic], "mode": "timestamp", "value": 10**20, "dry_run": True}),
            http.post("/api/groups/edge-g/reset-offsets",
                      json={"topics": [topic], "mode": "offset", "value": -(2**64), "dry_run": True}),
            http.post(f"/api/topics/{topic}/messages", json={"value": "v", "partition": 2**31}),
        ]
        for resp in hostile:
            assert resp.status_code == 400, (resp.request.url, resp.text)
            assert resp.json()["kind"] == "bad_request"
        assert http.get(f"/api/topics/{topic}").status_code == 200


# ---------------------------------------------------------------------------- smaller findings
ALLOW = [
    ("registry", "DELETE", "/subjects", "GET, HEAD"),
    ("registry", "PATCH", "/config/s", "DELETE, GET, HEAD, PUT"),
    ("connect", "DELETE", "/connectors", "GET, HEAD, POST"),
    ("connect", "POST", "/connectors/c/offsets", "DELETE, GET, HEAD, PATCH"),
    ("console", "PUT", "/api/topics", "GET, HEAD, POST"),
    ("console", "PUT", "/api/topics/t/messages", "GET, HEAD, POST"),
]


@pytest.mark.parametrize(("service", "method", "path", "allow"), ALLOW)
def test_405_names_the_allowed_methods(services: dict[str, str], service: str, method: str, path: str,
                                       allow: str) -> None:
    resp = httpx.request(method, services[service] + path, timeout=30)
    assert resp.status_code == 405
    assert resp.headers["allow"] == allow
    error_body(service, resp)


def test_head_metrics(broker: EmbeddedBroker, registry: EmbeddedRegistry) -> None:
    assert broker.metrics_url is not None
    for url in (broker.metrics_url, registry.url + "/metrics"):
        head = httpx.head(url, timeout=30)
        assert head.status_code == 200 and head.content == b"", url
        assert httpx.get(url, timeout=30).status_code == 200


def _send_raw(url: str, head: bytes, body_parts: list[bytes]) -> socket.socket:
    parsed = urlparse(url)
    sock = socket.create_connection((parsed.hostname, parsed.port), timeout=20)
    sock.sendall(head)
    for part in body_parts:
        sock.sendall(part)
    return sock


@pytest.mark.parametrize("service", ["registry", "connect", "console"])
def test_client_disconnecting_mid_body_is_not_an_error(services: dict[str, str], service: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    url = services[service]
    path = BODY_ENDPOINT[service]
    caplog.set_level(logging.INFO)
    head = (f"POST {path} HTTP/1.1\r\nHost: {urlparse(url).netloc}\r\nContent-Type: application/json\r\n"
            "Content-Length: 50000\r\n\r\n").encode()
    sock = _send_raw(url, head, [b'{"name": "' + b"x" * 1000])
    time.sleep(0.2)  # the handler is reading the body when the client goes
    sock.close()
    wait_for(lambda: any("disconnected" in r.getMessage() for r in caplog.records), what="the disconnect logged")
    assert serves(service, url)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


@pytest.mark.parametrize("service", ["connect", "console"])
def test_body_size_limit_checked_while_streaming(services: dict[str, str], service: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunked body over the limit is refused (413) before the client finished sending it: the
    request is never completed here, so a service reading the whole body first would not answer."""
    monkeypatch.setattr(connect_rest if service == "connect" else web_api, "MAX_BODY", 4096)
    url = services[service]
    head = (f"POST {BODY_ENDPOINT[service]} HTTP/1.1\r\nHost: {urlparse(url).netloc}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    chunk = b"x" * 2048
    sock = _send_raw(url, head, [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 3)  # 6 KiB, no final chunk
    try:
        answer = sock.recv(65536)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert serves(service, url)
