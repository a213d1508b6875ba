"""Kafka Connect's REST API on a standalone worker against an embedded broker, endpoint by
endpoint: status codes and bodies as Kafka Connect answers, Connect's error bodies, and a task
that throws (FAILED with its trace; the worker keeps serving)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


@pytest.fixture(scope="module")
def connect(broker: EmbeddedBroker) -> Iterator[EmbeddedConnect]:
    providers = {"config.providers": "file",
                 "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider"}
    with EmbeddedConnect(broker.bootstrap_servers, offset_flush_interval_ms=300,
                         task_shutdown_graceful_timeout_ms=500, **providers) as c:
        yield c


@pytest.fixture
def http(connect: EmbeddedConnect) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=connect.url, timeout=20) as client:
        yield client


def source_config(path: Path, topic: str) -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "file": str(path), "topic": topic}


def task_state(http: httpx.Client, name: str) -> str | None:
    tasks = http.get(f"/connectors/{name}/status").json()["tasks"]
    return tasks[0]["state"] if tasks else None


def test_root_and_plugins(http: httpx.Client) -> None:
    root = http.get("/")
    assert root.status_code == 200 and set(root.json()) == {"version", "commit", "kafka_cluster_id"}
    assert root.json()["kafka_cluster_id"]
    plugins = http.get("/connector-plugins").json()
    assert {"class": FILE_SOURCE, "type": "source", "version": "1.0"} in plugins
    assert {p["type"] for p in plugins} <= {"source", "sink"}
    everything = {p["class"]: p["type"] for p in http.get("/connector-plugins?connectorsOnly=false").json()}
    assert everything["org.apache.kafka.connect.json.JsonConverter"] == "converter"
    assert everything["io.debezium.transforms.ExtractNewRecordState"] == "transformation"
    assert everything["org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"] == "predicate"
    config = http.get("/connector-plugins/FileStreamSource/config")
    assert config.status_code == 200
    assert [k["name"] for k in config.json()] == ["file", "topic", "batch.size"]
    missing = http.get("/connector-plugins/com.example.Nope/config")
    assert missing.status_code == 404 and missing.json()["error_code"] == 404


def test_validate(http: httpx.Client) -> None:
    ok = http.put(f"/connector-plugins/{FILE_SOURCE}/config/validate", json={"name": "v", "topic": "t"})
    assert ok.status_code == 200 and ok.json()["error_count"] == 0 and ok.json()["name"] == FILE_SOURCE
    bad = http.put("/connector-plugins/FileStreamSource/config/validate", json={"name": "v", "batch.size": "-1"}).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in bad["configs"] if c["value"]["errors"]}
    assert bad["error_count"] == 2 and set(errors) == {"topic", "batch.size"}
    mismatch = http.put("/connector-plugins/FileStreamSource/config/validate",
                        json={"connector.class": "FileStreamSink", "name": "v"})
    assert mismatch.status_code == 400
    assert mismatch.json() == {"error_code": 400, "message": "Included connector type FileStreamSink does not match "
                                                             "request type FileStreamSource"}
    assert http.put("/connector-plugins/Nope/config/validate", json={}).status_code == 404


def test_connector_lifecycle(http: httpx.Client, tmp_path: Path, broker: EmbeddedBroker) -> None:
    src = tmp_path / "in.txt"
    src.write_text("one\ntwo\n")
    created = http.post("/connectors", json={"name": "life", "config": source_config(src, "life-topic")})
    assert created.status_code == 201
    assert created.json() == {"name": "life", "config": {**source_config(src, "life-topic"), "name": "life"},
                              "tasks": [], "type": "source"}
    again = http.post("/connectors", json={"name": "life", "config": source_config(src, "life-topic")})
    assert again.status_code == 409
    assert again.json() == {"error_code": 409, "message": "Connector life already exists"}
    assert "life" in http.get("/connectors").json()

    wait_for(lambda: task_state(http, "life") == "RUNNING")
    info = http.get("/connectors/life").json()
    assert info["tasks"] == [{"connector": "life", "task": 0}] and info["type"] == "source"
    tasks = http.get("/connectors/life/tasks").json()
    assert tasks[0]["id"] == {"connector": "life", "task": 0} and tasks[0]["config"]["file"] == str(src)
    status = http.get("/connectors/life/status").json()
    assert status["name"] == "life" and status["type"] == "source"
    assert status["connector"] == {"state": "RUNNING", "worker_id": status["connector"]["worker_id"]}
    assert status["connector"]["worker_id"].startswith("127.0.0.1:")
    assert http.get("/connectors/life/tasks/0/status").json() == {"id": 0, "state": "RUNNING",
                                                                 "worker_id": status["connector"]["worker_id"]}
    missing_task = http.get("/connectors/life/tasks/3/status")
    assert missing_task.status_code == 404 and missing_task.json()["error_code"] == 404

    expanded = http.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(expanded["life"]) == {"status", "info"} and expanded["life"]["info"]["name"] == "life"
    assert set(http.get("/connectors?expand=status").json()["life"]) == {"status"}
    assert http.get("/connectors?expand=bogus").json()["life"] == {}

    assert http.get("/connectors/life/config").json()["topic"] == "life-topic"
    patched = http.patch("/connectors/life/config", json={"batch.size": "10"})
    assert patched.status_code == 200 and patched.json()["config"]["batch.size"] == "10"
    removed = http.patch("/connectors/life/config", json={"batch.size": None})
    assert "batch.size" not in removed.json()["config"]
    updated = http.put("/connectors/life/config", json=source_config(src, "life-topic"))
    assert updated.status_code == 200
    wrong_name = http.put("/connectors/life/config", json={**source_config(src, "t"), "name": "other"})
    assert wrong_name.status_code == 400

    wait_for(lambda: http.get("/connectors/life/topics").json() == {"life": {"topics": ["life-topic"]}})
    assert http.put("/connectors/life/topics/reset").status_code == 202

    assert http.put("/connectors/life/pause").status_code == 202
    wait_for(lambda: http.get("/connectors/life/status").json()["connector"]["state"] == "PAUSED"
             and task_state(http, "life") == "PAUSED")
    assert http.put("/connectors/life/resume").status_code == 202
    wait_for(lambda: task_state(http, "life") == "RUNNING")

    plain = http.post("/connectors/life/restart")
    assert plain.status_code == 204 and plain.content == b""
    planned = http.post("/connectors/life/restart?includeTasks=true")
    assert planned.status_code == 202
    assert planned.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in planned.json()["tasks"]] == ["RESTARTING"]
    wait_for(lambda: task_state(http, "life") == "RUNNING")
    only_failed = http.post("/connectors/life/restart?includeTasks=true&onlyFailed=true")
    assert only_failed.status_code == 202 and only_failed.json()["tasks"][0]["state"] == "RUNNING"
    assert http.post("/connectors/life/tasks/0/restart").status_code == 204
    assert http.post("/connectors/life/tasks/9/restart").status_code == 404
    wait_for(lambda: task_state(http, "life") == "RUNNING")

    assert http.delete("/connectors/life").status_code == 204
    gone = http.get("/connectors/life")
    assert gone.status_code == 404 and gone.json() == {"error_code": 404, "message": "Connector life not found"}
    assert http.delete("/connectors/life").status_code == 404
    assert http.get("/connectors/life/status").json() == {"error_code": 404,
                                                          "message": "No status found for connector life"}


def test_offsets_need_a_stopped_connector(http: httpx.Client, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("abc\n")
    assert http.put("/connectors/offs/config", json=source_config(src, "offs-topic")).status_code == 201
    partition = {"filename": str(src)}
    wait_for(lambda: http.get("/connectors/offs/offsets").json()["offsets"] == [
        {"partition": partition, "offset": {"position": 4}}])
    body = {"offsets": [{"partition": partition, "offset": {"position": 1}}]}
    refused = http.patch("/connectors/offs/offsets", json=body)
    assert refused.status_code == 400 and "STOPPED" in refused.json()["message"]
    assert http.delete("/connectors/offs/offsets").status_code == 400

    assert http.put("/connectors/offs/stop").status_code == 204
    wait_for(lambda: http.get("/connectors/offs/status").json()["connector"]["state"] == "STOPPED"
             and http.get("/connectors/offs/tasks").json() == [])
    altered = http.patch("/connectors/offs/offsets", json=body)
    assert altered.status_code == 200 and "altered successfully" in altered.json()["message"]
    assert http.get("/connectors/offs/offsets").json() == {"offsets": [{"partition": partition,
                                                                        "offset": {"position": 1}}]}
    assert http.patch("/connectors/offs/offsets", json={"offsets": "x"}).status_code == 400
    reset = http.delete("/connectors/offs/offsets")
    assert reset.status_code == 200 and "reset successfully" in reset.json()["message"]
    assert http.get("/connectors/offs/offsets").json() == {"offsets": []}
    assert http.put("/connectors/offs/resume").status_code == 202
    wait_for(lambda: task_state(http, "offs") == "RUNNING")
    assert http.delete("/connectors/offs").status_code == 204


def test_bad_requests_get_connect_errors(http: httpx.Client, tmp_path: Path) -> None:
    bad_json = http.post("/connectors", content=b"{nope", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400 and bad_json.json()["error_code"] == 400
    no_class = http.post("/connectors", json={"name": "x", "config": {"file": "f"}})
    assert no_class.status_code == 400 and "contains no connector type" in no_class.json()["message"]
    unknown = http.post("/connectors", json={"name": "x", "config": {"connector.class": "com.example.Nope"}})
    assert unknown.status_code == 400
    invalid = http.post("/connectors", json={"name": "x", "config": {"connector.class": "FileStreamSink",
                                                                     "tasks.max": "0"}})
    assert invalid.status_code == 400
    message = invalid.json()["message"]
    assert message.startswith("Connector configuration is invalid and contains the following 3 error(s):")
    assert "tasks.max" in message and "topics" in message
    assert "x" not in http.get("/connectors").json()
    assert http.get("/no/such/path").json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    assert http.get("/").status_code == 200  # still serving


def test_a_task_that_throws_is_failed_with_its_trace(http: httpx.Client, tmp_path: Path) -> None:
    src = tmp_path / "ok.txt"
    src.write_text("fine\n")
    assert http.post("/connectors", json={"name": "healthy", "config": source_config(src, "healthy")}).status_code == 201
    boom = {"connector.class": "tests.component.connect_plugins.ExplodingConnector", "topic": "boom", "good": "2"}
    assert http.post("/connectors", json={"name": "boom", "config": boom}).status_code == 201
    status = wait_for(lambda: (s := http.get("/connectors/boom/status").json())["tasks"]
                      and s["tasks"][0]["state"] == "FAILED" and s)
    trace = status["tasks"][0]["trace"]
    assert "RuntimeError: the source system is on fire" in trace and "Traceback" in trace
    assert status["connector"]["state"] == "RUNNING"
    assert http.get("/connectors/boom/tasks/0/status").json()["state"] == "FAILED"
    wait_for(lambda: task_state(http, "healthy") == "RUNNING")
    # The records produced before the failure were committed.
    wait_for(lambda: http.get("/connectors/boom/offsets").json()["offsets"] == [
        {"partition": {"p": 0}, "offset": {"n": 0}}])
    restarted = http.post("/connectors/boom/restart?includeTasks=true&onlyFailed=true").json()
    assert restarted["connector"]["state"] == "RUNNING" and restarted["tasks"][0]["state"] == "RESTARTING"
    wait_for(lambda: task_state(http, "boom") == "FAILED")
    for name in ("boom", "healthy"):
        assert http.delete(f"/connectors/{name}").status_code == 204


def test_pytest_fixture_gives_a_worker(zurau_connect: EmbeddedConnect) -> None:
    with httpx.Client(base_url=zurau_connect.url, timeout=20) as client:
        assert client.get("/connectors").status_code == 200
        assert client.get("/connector-plugins").json()


def test_a_connector_that_cannot_start_is_failed(http: httpx.Client) -> None:
    broken = {"connector.class": "tests.component.connect_plugins.BrokenConnector"}
    assert http.put("/connectors/broken/config", json=broken).status_code == 201
    status = wait_for(lambda: (s := http.get("/connectors/broken/status").json())["connector"]["state"] == "FAILED"
                      and s)
    assert "ValueError: cannot reach the source system" in status["connector"]["trace"]
    assert status["tasks"] == []
    assert http.delete("/connectors/broken").status_code == 204


def test_created_stopped_and_bad_records_in_sinks(http: httpx.Client, tmp_path: Path) -> None:
    src = tmp_path / "raw.txt"
    src.write_text('{"a":1}\noops\n{"a":2}\n')
    created = http.post("/connectors", json={"name": "raw", "initial_state": "STOPPED", "config": {
        **source_config(src, "raw-lines"), "value.converter": "org.apache.kafka.connect.storage.StringConverter"}})
    assert created.status_code == 201
    wait_for(lambda: http.get("/connectors/raw/status").json()["connector"]["state"] == "STOPPED")
    assert http.get("/connectors/raw/tasks").json() == []
    assert http.put("/connectors/raw/resume").status_code == 202
    wait_for(lambda: task_state(http, "raw") == "RUNNING")
    sink = {"connector.class": "FileStreamSink", "topics": "raw-lines",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false"}
    strict_out, tolerant_out = tmp_path / "strict.txt", tmp_path / "tolerant.txt"
    assert http.put("/connectors/strict/config", json={**sink, "file": str(strict_out)}).status_code == 201
    assert http.put("/connectors/tolerant/config", json={**sink, "file": str(tolerant_out),
                                                         "errors.tolerance": "all"}).status_code == 201
    failed = wait_for(lambda: (s := http.get("/connectors/strict/status").json())["tasks"]
                      and s["tasks"][0]["state"] == "FAILED" and s)
    assert "DataException" in failed["tasks"][0]["trace"]
    wait_for(lambda: tolerant_out.exists() and tolerant_out.read_text() == "{a=1}\n{a=2}\n")
    assert task_state(http, "tolerant") == "RUNNING"
    for name in ("raw", "strict", "tolerant"):
        assert http.delete(f"/connectors/{name}").status_code == 204


def test_config_provider_placeholders_stay_out_of_the_config_topic(http: httpx.Client, tmp_path: Path) -> None:
    src = tmp_path / "secret-source.txt"
    src.write_text("from a secret path\n")
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"source.file={src}\n")
    placeholder = f"${{file:{secrets}:source.file}}"
    config = {"connector.class": FILE_SOURCE, "file": placeholder, "topic": "secret-topic"}
    assert http.put("/connectors/secretive/config", json=config).status_code == 201
    wait_for(lambda: http.get("/connectors/secretive/offsets").json()["offsets"] == [
        {"partition": {"filename": str(src)}, "offset": {"position": src.stat().st_size}}])
    assert http.get("/connectors/secretive/config").json()["file"] == placeholder
    assert http.get("/connectors/secretive/tasks").json()[0]["config"]["file"] == placeholder
    checked = http.put("/connector-plugins/FileStreamSource/config/validate", json={"name": "v", **config}).json()
    assert checked["error_count"] == 0
    assert {c["value"]["name"]: c["value"]["value"] for c in checked["configs"]}["file"] == placeholder
    broken = {**config, "file": f"${{file:{secrets}:missing.key}}"}
    refused = http.put("/connector-plugins/FileStreamSource/config/validate", json={"name": "v", **broken})
    assert refused.status_code == 400 and "missing.key" in refused.json()["message"]
    assert http.delete("/connectors/secretive").status_code == 204


def test_a_task_stuck_in_poll_does_not_hold_the_worker(http: httpx.Client) -> None:
    hanging = {"connector.class": "tests.component.connect_plugins.HangingConnector", "topic": "never"}
    assert http.put("/connectors/stuck/config", json=hanging).status_code == 201
    wait_for(lambda: task_state(http, "stuck") == "RUNNING")
    assert http.delete("/connectors/stuck").status_code == 204
    wait_for(lambda: "stuck" not in http.get("/connectors").json())
    assert http.put("/connectors/after-stuck/config", json={"connector.class": "FileStreamSink", "topics": "t",
                                                           "file": "/dev/null"}).status_code == 201
    wait_for(lambda: task_state(http, "after-stuck") == "RUNNING")
    assert http.delete("/connectors/after-stuck").status_code == 204


def test_source_topics_are_created_as_topic_creation_says(http: httpx.Client, tmp_path: Path,
                                                          broker: EmbeddedBroker) -> None:
    src = tmp_path / "in.txt"
    src.write_text("x\n")
    config = {**source_config(src, "created-topic"), "topic.creation.default.replication.factor": "1",
              "topic.creation.default.partitions": "3", "topic.creation.default.retention.ms": "3600000"}
    assert http.put("/connectors/creator/config", json=config).status_code == 201
    wait_for(lambda: http.get("/connectors/creator/offsets").json()["offsets"])
    topic = broker.broker.image.get("created-topic")
    assert topic is not None and topic.num_partitions == 3 and topic.configs == {"retention.ms": "3600000"}
    assert http.delete("/connectors/creator").status_code == 204
