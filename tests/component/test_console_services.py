"""The console's pages over the other services: Kafka Connect (status and restarts, against a peer
serving Connect's REST API that records what the console sends, and against Zurau's own Connect
worker), a broker's Prometheus endpoint (a real embedded broker's
``/metrics``), and services that are down (a clear 502, the console keeps serving)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from tests.support.broker_process import free_port
from tests.support.connect_rest import ConnectRest
from zurau import EmbeddedBroker
from zurau.console.embedded_console import EmbeddedConsole


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(metrics_http_listener="http://127.0.0.1:0") as b:
        yield b


def test_connectors_status_and_restart(broker: EmbeddedBroker) -> None:
    connectors = {
        "pg-source": {"class": "io.debezium.connector.postgresql.PostgresConnector", "type": "source",
                      "state": "RUNNING", "tasks": ["RUNNING", "FAILED"]},
        "s3-sink": {"class": "io.confluent.connect.s3.S3SinkConnector", "type": "sink",
                    "state": "FAILED", "tasks": ["FAILED"]},
    }
    with ConnectRest(connectors) as connect, EmbeddedConsole(broker.bootstrap_servers, connect_url=connect.url) as console:
        http = httpx.Client(base_url=console.url, timeout=30)
        listed = {c["name"]: c for c in http.get("/api/connect/connectors").json()["connectors"]}
        assert listed["pg-source"]["state"] == "RUNNING" and listed["pg-source"]["failed_tasks"] == 1
        assert [t["state"] for t in listed["pg-source"]["tasks"]] == ["RUNNING", "FAILED"]
        assert listed["pg-source"]["tasks"][1]["trace"] == "boom"
        assert listed["s3-sink"]["type"] == "sink" and listed["s3-sink"]["class"].endswith("S3SinkConnector")
        assert ("GET", "/connectors", {"expand": ["status", "info"]}) in connect.requests

        r = http.post("/api/connect/connectors/s3-sink/restart", params={"include_tasks": "true", "only_failed": "true"})
        assert r.status_code == 200, r.text
        assert connect.requests[-1] == ("POST", "/connectors/s3-sink/restart", {"includeTasks": ["true"], "onlyFailed": ["true"]})
        assert r.json()["answer"]["connector"]["state"] == "RUNNING"

        assert http.post("/api/connect/connectors/pg-source/tasks/1/restart").status_code == 200
        assert connect.requests[-1][:2] == ("POST", "/connectors/pg-source/tasks/1/restart")
        one = http.get("/api/connect/connectors/pg-source").json()
        assert [t["state"] for t in one["status"]["tasks"]] == ["RUNNING", "RUNNING"]
        assert one["config"]["connector.class"].endswith("PostgresConnector")

        r = http.get("/api/connect/connectors/nope")
        assert r.status_code == 404 and "Connector nope not found" in r.json()["error"]
        r = http.post("/api/connect/connectors/pg-source/tasks/x/restart")
        assert r.status_code == 400 and "whole number" in r.json()["error"]

    # Connect gone: a clear 502 naming it, and the console still serves
    with EmbeddedConsole(broker.bootstrap_servers, connect_url=f"http://127.0.0.1:{free_port()}",
                         registry_url=f"http://127.0.0.1:{free_port()}") as console:
        http = httpx.Client(base_url=console.url, timeout=30)
        r = http.get("/api/connect/connectors")
        assert r.status_code == 502 and "Kafka Connect at http://127.0.0.1:" in r.json()["error"] and "unreachable" in r.json()["error"]
        r = http.get("/api/schemas/subjects")
        assert r.status_code == 502 and "schema registry" in r.json()["error"]
        assert http.get("/api/overview").status_code == 200


def test_connectors_of_a_real_connect_worker(broker: EmbeddedBroker, tmp_path: Path) -> None:
    from zurau.connect.embedded_connect import EmbeddedConnect

    source = tmp_path / "in.txt"
    source.write_text("one\ntwo\n")
    with EmbeddedConnect(broker.bootstrap_servers) as connect, EmbeddedConsole(
        broker.bootstrap_servers, connect_url=connect.url
    ) as console:
        config = {"connector.class": "FileStreamSource", "file": str(source), "topic": f"file-{uuid.uuid4().hex[:6]}"}
        assert httpx.post(f"{connect.url}/connectors", json={"name": "lines", "config": config}).status_code == 201
        http = httpx.Client(base_url=console.url, timeout=30)
        deadline = time.monotonic() + 30
        while True:
            listed = {c["name"]: c for c in http.get("/api/connect/connectors").json()["connectors"]}
            if listed.get("lines", {}).get("tasks") and listed["lines"]["tasks"][0]["state"] == "RUNNING":
                break
            assert time.monotonic() < deadline, listed
            time.sleep(0.2)
        assert listed["lines"]["state"] == "RUNNING" and listed["lines"]["type"] == "source"
        assert listed["lines"]["class"] == "FileStreamSource", listed["lines"]  # as posted, as Kafka keeps it
        r = http.post("/api/connect/connectors/lines/restart", params={"include_tasks": "true"})
        assert r.status_code == 200, r.text
        assert http.post("/api/connect/connectors/lines/tasks/0/restart").status_code == 200
        one = http.get("/api/connect/connectors/lines").json()
        assert one["config"]["file"] == str(source)


def test_metrics_from_the_broker_endpoint(broker: EmbeddedBroker) -> None:
    assert broker.metrics_url is not None
    topic = f"m-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(37):
        p.produce(topic, b"v%d" % i)
    assert p.flush(30) == 0
    with EmbeddedConsole(broker.bootstrap_servers, metrics_url=broker.metrics_url) as console:
        http = httpx.Client(base_url=console.url, timeout=30)
        assert http.get("/api/info").json()["metrics_url"] == broker.metrics_url
        doc = http.get("/api/metrics").json()
        families = {f["name"]: f for f in doc["families"]}
        msgs = families["kafka_server_brokertopicmetrics_messagesin"]
        assert msgs["type"] == "counter"
        ours = [s for s in msgs["samples"] if s["labels"].get("topic") == topic and s["name"].endswith("_total")]
        assert [s["value"] for s in ours] == [37.0]
        # counters and gauges come first, for the charts
        ranks = [{"counter": 0, "gauge": 1}.get(f["type"], 2) for f in doc["families"]]
        assert ranks == sorted(ranks) and ranks[-1] == 2  # histograms last

    with EmbeddedConsole(broker.bootstrap_servers, metrics_url=f"http://127.0.0.1:{free_port()}/metrics") as console:
        r = httpx.get(console.url + "/api/metrics", timeout=30)
        assert r.status_code == 502 and "metrics endpoint" in r.json()["error"]


def test_the_console_command(broker: EmbeddedBroker) -> None:
    """``zurau console`` as a process: serves the API for the cluster it is given, stops on
    SIGTERM; bad options and a taken port fail with one clear line."""
    zurau = [sys.executable, "-m", "zurau.cli.main"]
    port = free_port()
    proc = subprocess.Popen(
        [*zurau, "console", "--port", str(port), "--bootstrap-server", broker.bootstrap_servers, "--log-level", "WARNING"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        info = None
        while info is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                info = httpx.get(f"http://127.0.0.1:{port}/api/info", timeout=5).json()
            except httpx.HTTPError:
                time.sleep(0.1)
        assert info is not None and info["bootstrap_servers"] == broker.bootstrap_servers, proc.stderr
        assert httpx.get(f"http://127.0.0.1:{port}/api/overview", timeout=30).json()["brokers"][0]["id"] == 1

        taken = subprocess.run([*zurau, "console", "--port", str(port)], capture_output=True, text=True, timeout=60)
        assert taken.returncode == 1 and f"error: cannot start the console on 127.0.0.1:{port}" in taken.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    bad = subprocess.run([*zurau, "console", "--registry-url", "ftp://x"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.strip() == (
        "error: --registry-url must be an http(s) URL like http://127.0.0.1:8081, not 'ftp://x'"
    )
