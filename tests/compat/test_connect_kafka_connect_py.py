"""kafka-connect-py (a Python client of Kafka Connect's REST API) manages connectors on a Zurau
worker: list with expand, create, config, status, tasks, topics, pause/resume/stop, restarts,
plugins, validate, update, delete — and its HTTP errors for unknown connectors and conflicts.

Known disagreement: the client's ``restart_connector(name)`` without ``include_tasks``/``only_failed``
parses the body of the 200 answer, which Kafka Connect (and Zurau) send empty, so it raises
``JSONDecodeError`` against both; the test uses the 202 form and checks the plain restart with HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from kafka_connect import KafkaConnect

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect


@pytest.fixture(scope="module")
def connect() -> Iterator[EmbeddedConnect]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as broker, \
            EmbeddedConnect(broker.bootstrap_servers, offset_flush_interval_ms=300) as worker:
        yield worker


def test_kafka_connect_py_manages_connectors(connect: EmbeddedConnect, tmp_path: Path) -> None:
    kc = KafkaConnect(url=connect.url)
    assert set(kc.get_cluster_info()) == {"version", "commit", "kafka_cluster_id"}
    assert kc.list_connectors() == []
    src = tmp_path / "in.txt"
    src.write_text("a\nb\n")
    config = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
              "file": str(src), "topic": "kc-lines"}
    created = kc.create_connector({"name": "kc-src", "config": config})
    assert created["name"] == "kc-src" and created["type"] == "source"
    with pytest.raises(requests.HTTPError) as conflict:
        kc.create_connector({"name": "kc-src", "config": config})
    assert conflict.value.response.status_code == 409

    wait_for(lambda: kc.get_connector_status("kc-src")["tasks"]
             and kc.get_connector_status("kc-src")["tasks"][0]["state"] == "RUNNING")
    assert kc.get_connector("kc-src")["tasks"] == [{"connector": "kc-src", "task": 0}]
    assert kc.get_connector_config("kc-src")["topic"] == "kc-lines"
    assert kc.list_connector_tasks("kc-src")[0]["id"] == {"connector": "kc-src", "task": 0}
    assert kc.get_connector_task_status("kc-src", 0)["state"] == "RUNNING"
    assert kc.list_connectors(expand="status", state="running") == {
        "kc-src": {"status": kc.get_connector_status("kc-src")}}
    assert list(kc.list_connectors(expand="info", pattern="kc-.*")) == ["kc-src"]
    wait_for(lambda: kc.list_connector_topics("kc-src") == {"kc-src": {"topics": ["kc-lines"]}})
    kc.reset_connector_topics("kc-src")

    kc.pause_connector("kc-src")
    wait_for(lambda: kc.get_connector_status("kc-src")["connector"]["state"] == "PAUSED")
    kc.resume_connector("kc-src")
    wait_for(lambda: kc.get_connector_task_status("kc-src", 0)["state"] == "RUNNING")
    planned = kc.restart_connector("kc-src", include_tasks=True)
    assert planned["tasks"][0]["state"] == "RESTARTING"
    plain = requests.post(f"{connect.url}/connectors/kc-src/restart", timeout=10)
    assert plain.status_code == 204 and plain.content == b""  # as Kafka's ConnectorsResource
    kc.restart_connector_task("kc-src", 0)
    wait_for(lambda: kc.get_connector_task_status("kc-src", 0)["state"] == "RUNNING")

    updated = kc.update_connector("kc-src", {**config, "batch.size": "5"})
    assert updated["config"]["batch.size"] == "5"
    plugins = {p["class"] for p in kc.list_connector_plugins()}
    assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in plugins
    report = kc.validate_connector_config("FileStreamSink", {"name": "x", "file": "/tmp/x"})
    assert report["error_count"] == 2  # neither topics nor topics.regex

    kc.stop_connector("kc-src")
    wait_for(lambda: kc.get_connector_status("kc-src")["connector"]["state"] == "STOPPED")
    kc.delete_connector("kc-src")
    assert kc.list_connectors() == []
    with pytest.raises(requests.HTTPError) as missing:
        kc.get_connector("kc-src")
    assert missing.value.response.status_code == 404
    assert missing.value.response.json() == {"error_code": 404, "message": "Connector kc-src not found"}
