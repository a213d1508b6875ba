"""Kafka Connect's clients over SASL_SSL: a distributed worker configured as a Kafka Connect worker
is for a secured cluster (un-prefixed ``security.protocol``/``ssl.*``/``sasl.*`` for its own
clients, the same under ``producer.``/``consumer.`` for the tasks') runs a FileStream source ->
topic -> FileStream sink round trip; the tasks' clients do not inherit the worker's settings (as in
Kafka); connectors override them with ``producer.override.*`` as the worker's
``connector.client.config.override.policy`` allows; bad settings fail early and clearly."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer

from tests.support.waiting import wait_for
from zurau.client.errors import AuthenticationError
from zurau.connect.embedded_connect import EmbeddedConnect
from zurau.connect.worker_config import WorkerConfig, WorkerConfigError
from zurau.embedded import EmbeddedBroker

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def jaas(user: str, password: str) -> str:
    return f'{PLAIN} required username="{user}" password="{password}";'


def client_props(broker: EmbeddedBroker, user: str, password: str, prefix: str = "") -> dict[str, str]:
    """A Java client's security settings for the broker (PEM truststore, PLAIN)."""
    assert broker.ca_location is not None
    return {f"{prefix}security.protocol": "SASL_SSL", f"{prefix}ssl.truststore.type": "PEM",
            f"{prefix}ssl.truststore.location": broker.ca_location, f"{prefix}sasl.mechanism": "PLAIN",
            f"{prefix}sasl.jaas.config": jaas(user, password)}


def worker_props(broker: EmbeddedBroker, group: str, **extra: Any) -> dict[str, Any]:
    return {"group.id": group, "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status", "offset.storage.partitions": 2, "status.storage.partitions": 1,
            "offset_flush_interval_ms": 200, "heartbeat_interval_ms": 300, "value.converter": STRING,
            **client_props(broker, "alice", USERS["alice"]), **extra}


def task_clients(broker: EmbeddedBroker) -> dict[str, str]:
    return {**client_props(broker, "alice", USERS["alice"], "producer."),
            **client_props(broker, "alice", USERS["alice"], "consumer.")}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(security="SASL_SSL", users=USERS, group_initial_rebalance_delay_ms=0) as b:
        yield b


def task_status(http: httpx.Client, name: str) -> dict[str, Any] | None:
    r = http.get(f"/connectors/{name}/status")
    tasks = r.json().get("tasks") if r.status_code == 200 else None
    return tasks[0] if tasks and tasks[0]["state"] in ("RUNNING", "FAILED") else None


def partitions(broker: EmbeddedBroker, topic: str) -> int:
    """How many partitions ``topic`` has (0: none), asked over SASL_SSL as bob."""
    consumer = Consumer({**broker.client_config("bob"), "group.id": "sec-check"})
    try:
        found = consumer.list_topics(timeout=10).topics.get(topic)
        return len(found.partitions) if found is not None and found.error is None else 0
    finally:
        consumer.close()


def test_distributed_file_round_trip_over_sasl_ssl(broker: EmbeddedBroker, tmp_path: Path) -> None:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"secret line {i}" for i in range(25)]
    src.write_text("".join(f"{line}\n" for line in lines))
    with EmbeddedConnect(broker.bootstrap_servers, **worker_props(broker, "sec-rt", **task_clients(broker))) as connect:
        with httpx.Client(base_url=connect.url, timeout=20) as http:
            r = http.post("/connectors", json={"name": "sec-in", "config": {
                "connector.class": "FileStreamSource", "file": str(src), "topic": "sec-lines",
                "topic.creation.default.replication.factor": "1", "topic.creation.default.partitions": "2"}})
            assert r.status_code == 201, r.text
            # The topic exists before the sink subscribes: the client's group member does not
            # rejoin when a subscribed topic appears later.
            wait_for(lambda: partitions(broker, "sec-lines") == 2)
            r = http.post("/connectors", json={"name": "sec-out", "config": {
                "connector.class": "FileStreamSink", "file": str(dst), "topics": "sec-lines"}})
            assert r.status_code == 201, r.text
            wait_for(lambda: dst.exists() and sorted(dst.read_text().splitlines()) == sorted(lines), timeout=60)
            assert http.get("/connectors/sec-in/status").json()["tasks"][0]["state"] == "RUNNING"
            offsets = wait_for(lambda: http.get("/connectors/sec-out/offsets").json()["offsets"] or None)
            assert sum(o["offset"]["kafka_offset"] for o in offsets) == len(lines)


def test_task_clients_do_not_inherit_and_overrides_apply(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """No ``producer.*``: the source task's producer speaks plaintext to the TLS listener and the
    task fails (Kafka's rule); ``producer.override.*`` under the ``Principal`` policy gives it
    credentials, and a wrong password in them fails the task with the broker's answer."""
    src = tmp_path / "in.txt"
    src.write_text("a\nb\n")
    props = worker_props(broker, "sec-ovr", **{"connector.client.config.override.policy": "Principal"})
    with EmbeddedConnect(broker.bootstrap_servers, **props) as connect, \
            httpx.Client(base_url=connect.url, timeout=20) as http:
        base = {"connector.class": "FileStreamSource", "file": str(src), "topic": "sec-ovr"}
        assert http.post("/connectors", json={"name": "plain", "config": base}).status_code == 201
        failed = wait_for(lambda: task_status(http, "plain"), timeout=30)
        assert failed["state"] == "FAILED" and "ConnectionLostError" in failed["trace"]

    # The worker gives the tasks' producer the TLS settings; connectors bring their principal.
    tls_only = {k: v for k, v in task_clients(broker).items() if k.startswith("producer.ssl.")}
    props = worker_props(broker, "sec-ovr2", **{"connector.client.config.override.policy": "Principal"}, **tls_only)
    with EmbeddedConnect(broker.bootstrap_servers, **props) as connect, \
            httpx.Client(base_url=connect.url, timeout=20) as http:
        base = {"connector.class": "FileStreamSource", "file": str(src), "topic": "sec-ovr2",
                "producer.override.security.protocol": "SASL_SSL", "producer.override.sasl.mechanism": "PLAIN"}
        wrong = {**base, "producer.override.sasl.jaas.config": jaas("bob", "nope")}
        assert http.post("/connectors", json={"name": "wrong", "config": wrong}).status_code == 201
        failed = wait_for(lambda: task_status(http, "wrong"), timeout=30)
        assert failed["state"] == "FAILED" and "AuthenticationError" in failed["trace"]
        right = {**base, "producer.override.sasl.jaas.config": jaas("bob", USERS["bob"])}
        assert http.post("/connectors", json={"name": "right", "config": right}).status_code == 201
        running = wait_for(lambda: task_status(http, "right"), timeout=30)
        assert running["state"] == "RUNNING", running
        r = http.post("/connectors", json={"name": "acks", "config": {**base, "producer.override.acks": "1"}})
        assert r.status_code == 400
        assert "The 'Principal' policy does not allow 'acks' to be overridden" in r.text
    consumer = Consumer({**broker.client_config("alice"), "group.id": "sec-ovr-check", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["sec-ovr2"])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert sorted(got) == [b"a", b"b"]
    finally:
        consumer.close()


def test_override_policy_none_refuses_overrides(broker: EmbeddedBroker, tmp_path: Path) -> None:
    props = worker_props(broker, "sec-none", **{"connector.client.config.override.policy": "None"})
    with EmbeddedConnect(broker.bootstrap_servers, **props) as connect, \
            httpx.Client(base_url=connect.url, timeout=20) as http:
        r = http.post("/connectors", json={"name": "c", "config": {
            "connector.class": "FileStreamSource", "file": str(tmp_path / "x"), "topic": "t",
            "producer.override.security.protocol": "SASL_SSL"}})
        assert r.status_code == 400
        assert "The 'None' policy does not allow 'security.protocol' to be overridden" in r.text


def test_worker_security_is_checked(broker: EmbeddedBroker) -> None:
    with pytest.raises(WorkerConfigError, match="producer.*JKS"):
        WorkerConfig.from_props({"producer.ssl.truststore.type": "JKS"})
    with pytest.raises(WorkerConfigError, match="worker's clients.*sasl.username"):
        WorkerConfig.from_props({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"})
    with pytest.raises(WorkerConfigError, match="override.policy"):
        WorkerConfig.from_props({"connector.client.config.override.policy": "Some"})
    cfg = WorkerConfig.from_props({**client_props(broker, "alice", "pw"),
                                   "connector.client.config.override.policy":
                                   "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy"})
    assert cfg.security.protocol == "SASL_SSL" and cfg.security.sasl_username == "alice"
    assert cfg.client_override_policy == "None"
    # a wrong password fails the worker's start-up with the broker's answer
    connect = EmbeddedConnect(broker.bootstrap_servers, **worker_props(broker, "sec-bad", **{
        "sasl.jaas.config": jaas("alice", "wrong")}))
    with pytest.raises(AuthenticationError, match="(?i)invalid username or password"):
        connect.start()
    assert not connect.running


def test_worker_secrets_from_a_config_provider(broker: EmbeddedBroker, tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"jaas={jaas('alice', USERS['alice'])}\n".replace("\\", "\\\\"))
    cfg = WorkerConfig.from_props({**client_props(broker, "x", "y"), "config.providers": "file",
                                   "config.providers.file.class":
                                   "org.apache.kafka.common.config.provider.FileConfigProvider",
                                   "sasl.jaas.config": f"${{file:{secrets}:jaas}}"})
    assert cfg.security.sasl_username == "alice" and cfg.security.sasl_password == USERS["alice"]
