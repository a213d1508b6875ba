"""Connect's error handling end to end: a file sink with the JSON converter fed records that are not
JSON and records a transform rejects, on a standalone worker against an embedded broker.

* tolerance all + DLQ: the good records reach the file, the bad ones are in the dead letter queue
  byte for byte with Kafka's ``__connect.errors.*`` headers (read back with confluent-kafka), and
  the task error metrics count them;
* tolerance none: the task FAILS with "Tolerance exceeded in error handler";
* retries: a transform raising RetriableException twice passes the record on the third attempt;
  a sink whose put() raises RetriableException gets the same batch again;
* restarts: after a clean stop and start no record is in the DLQ twice; after a crash (kill, no
  final commit) the records after the last commit are delivered again: at least once.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.component.connect_plugins import BUSY_PUTS
from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect

REJECT = "tests.component.connect_plugins.RejectField"
FLAKY = "tests.component.connect_plugins.FlakyTransform"
WORKER: dict[str, Any] = {
    "offset_flush_interval_ms": 300,
    "task_shutdown_graceful_timeout_ms": 2000,
    "session_timeout_ms": 1500,
    "heartbeat_interval_ms": 300,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=500) as b:
        yield b


@pytest.fixture(scope="module")
def connect(broker: EmbeddedBroker) -> Iterator[EmbeddedConnect]:
    with EmbeddedConnect(broker.bootstrap_servers, **WORKER) as c:
        yield c


def create_topic(broker: EmbeddedBroker, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=20)


def produce(
    broker: EmbeddedBroker, topic: str, records: list[tuple[bytes, bytes, list[tuple[str, bytes]]]]
) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value, headers in records:
        sent_headers: list[tuple[str, str | bytes | None]] = list(headers)
        p.produce(
            topic,
            value=value,
            key=key,
            headers=sent_headers,
            timestamp=1_700_000_000_000 + len(key),
        )
    assert p.flush(20) == 0


def batch(
    start: int, count: int, bad_json: set[int], rejected: set[int], flaky: set[int] | None = None
) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    out = []
    for n in range(start, start + count):
        if n in bad_json:
            value = b"{not json " + str(n).encode()
        else:
            value = json.dumps({"n": n, "bad": n in rejected, "flaky": n in (flaky or set())}).encode()
        out.append((f"k{n}".encode(), value, [("origin", f"h{n}".encode()), ("binary", bytes([0, 255, n]))]))
    return out


def read_all(broker: EmbeddedBroker, topic: str, expected: int, timeout: float = 30) -> list[Any]:
    """Every record of ``topic`` once at least ``expected`` are there (and a moment more)."""
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    out: list[Any] = []
    try:

        def enough() -> bool:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                out.append(msg)
            return len(out) >= expected

        wait_for(enough, timeout, what=f"{expected} records in {topic}")
        while (msg := c.poll(0.5)) is not None:
            if msg.error() is None:
                out.append(msg)
    finally:
        c.close()
    return out


def sink_config(topic: str, out: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "topics": topic,
        "file": str(out),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        **extra,
    }


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def good_line(n: int) -> str:
    return f"{{n={n}, bad=false, flaky=false}}"


def task_status(http: httpx.Client, name: str) -> dict[str, Any] | None:
    tasks = http.get(f"/connectors/{name}/status").json().get("tasks") or []
    return tasks[0] if tasks else None


def metric(http: httpx.Client, name: str, connector: str) -> float:
    text = http.get("/metrics").text
    m = re.search(
        rf'^kafka_connect_task_error_metrics_{name}{{connector="{connector}",task="0"}} (\S+)$', text, re.M
    )
    assert m is not None, text
    return float(m.group(1))


def test_bad_records_go_to_the_dead_letter_queue_with_context_headers(
    broker: EmbeddedBroker, connect: EmbeddedConnect, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    create_topic(broker, "orders")
    sent = batch(0, 10, bad_json={2, 5}, rejected={7})
    produce(broker, "orders", sent)
    out = tmp_path / "out.txt"
    config = sink_config(
        "orders",
        out,
        **{
            "transforms": "reject",
            "transforms.reject.type": REJECT,
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.log.include.messages": "true",
            "errors.deadletterqueue.topic.name": "orders-dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    with httpx.Client(base_url=connect.url, timeout=20) as http:
        assert http.put("/connectors/orders-sink/config", json=config).status_code == 201
        wait_for(lambda: lines(out) == [good_line(n) for n in (0, 1, 3, 4, 6, 8, 9)])
        dlq = read_all(broker, "orders-dlq", 3)
        assert [m.offset() for m in dlq] == [0, 1, 2] and {m.partition() for m in dlq} == {0}
        for msg, n in zip(dlq, (2, 5, 7), strict=True):
            key, value, headers = sent[n]
            assert msg.key() == key and msg.value() == value
            assert msg.timestamp() == (1, 1_700_000_000_000 + len(key))  # CreateTime of the original
            got = msg.headers()
            assert got[:2] == headers
            context = dict(got[2:])
            stage, cls = (
                ("VALUE_CONVERTER", "org.apache.kafka.connect.json.JsonConverter")
                if n != 7
                else ("TRANSFORMATION", REJECT)
            )
            assert {k: v for k, v in context.items() if k != "__connect.errors.exception.stacktrace"} == {
                "__connect.errors.topic": b"orders",
                "__connect.errors.partition": b"0",
                "__connect.errors.offset": str(n).encode(),
                "__connect.errors.connector.name": b"orders-sink",
                "__connect.errors.task.id": b"0",
                "__connect.errors.stage": stage.encode(),
                "__connect.errors.class.name": cls.encode(),
                "__connect.errors.exception.class.name": b"org.apache.kafka.connect.errors.DataException",
                "__connect.errors.exception.message": context["__connect.errors.exception.message"],
            }
            message = context["__connect.errors.exception.message"].decode()
            if n == 7:
                assert message == "record 7 is rejected"
            else:
                assert message.startswith(
                    "Converting byte[] to Kafka Connect data failed due to serialization error"
                )
            assert b"Traceback (most recent call last)" in context["__connect.errors.exception.stacktrace"]
        state = task_status(http, "orders-sink")
        assert state is not None and state["state"] == "RUNNING"
        assert metric(http, "total_record_failures", "orders-sink") == 3
        assert metric(http, "total_record_errors", "orders-sink") == 3
        assert metric(http, "total_records_skipped", "orders-sink") == 3
        assert metric(http, "deadletterqueue_produce_requests", "orders-sink") == 3
        assert metric(http, "deadletterqueue_produce_failures", "orders-sink") == 0
        assert metric(http, "total_errors_logged", "orders-sink") == 3
        assert metric(http, "last_error_timestamp", "orders-sink") > 1_700_000_000_000
        wait_for(
            lambda: (
                http.get("/connectors/orders-sink/offsets").json()["offsets"]
                == [
                    {
                        "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                        "offset": {"kafka_offset": 10},
                    }
                ]
            )
        )
        assert http.delete("/connectors/orders-sink").status_code == 204
    logged = [r.getMessage() for r in caplog.records if r.name == "zurau.connect.errors"]
    assert (
        "Error encountered in task orders-sink-0. Executing stage 'TRANSFORMATION' with class "
        f"'{REJECT}', where consumed record is {{topic='orders', partition=0, offset=7, "
        f"timestamp={1_700_000_000_000 + 2}, timestampType=CreateTime}}."
    ) in logged


def test_tolerance_none_fails_the_task(
    broker: EmbeddedBroker, connect: EmbeddedConnect, tmp_path: Path
) -> None:
    create_topic(broker, "strict-in")
    produce(broker, "strict-in", batch(0, 4, bad_json={2}, rejected=set()))
    with httpx.Client(base_url=connect.url, timeout=20) as http:
        assert (
            http.put(
                "/connectors/strict/config", json=sink_config("strict-in", tmp_path / "strict.txt")
            ).status_code
            == 201
        )
        failed = wait_for(lambda: (t := task_status(http, "strict")) and t["state"] == "FAILED" and t)
        assert "ConnectException: Tolerance exceeded in error handler" in failed["trace"]
        assert "DataException: Converting byte[] to Kafka Connect data failed" in failed["trace"]
        assert http.delete("/connectors/strict").status_code == 204


def test_a_dlq_replication_factor_above_the_brokers_fails_the_task(
    broker: EmbeddedBroker, connect: EmbeddedConnect, tmp_path: Path
) -> None:
    """Kafka creates the DLQ topic with the configured factor (default 3), not fitted to the brokers."""
    with httpx.Client(base_url=connect.url, timeout=20) as http:
        config = sink_config(
            "three-in",
            tmp_path / "three.txt",
            **{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "three-dlq"},
        )
        assert http.put("/connectors/three/config", json=config).status_code == 201
        failed = wait_for(lambda: (t := task_status(http, "three")) and t["state"] == "FAILED" and t)
        assert "Could not initialize dead letter queue with topic=three-dlq" in failed["trace"]
        assert http.delete("/connectors/three").status_code == 204


def test_retriable_failures_are_retried(
    broker: EmbeddedBroker, connect: EmbeddedConnect, tmp_path: Path
) -> None:
    create_topic(broker, "flaky-in")
    produce(broker, "flaky-in", batch(0, 4, bad_json=set(), rejected=set(), flaky={1}))
    out = tmp_path / "flaky.txt"
    config = sink_config(
        "flaky-in",
        out,
        **{
            "transforms": "flaky",
            "transforms.flaky.type": FLAKY,
            "transforms.flaky.failures": "2",
            "errors.retry.timeout": "30000",
            "errors.retry.delay.max.ms": "1000",
        },
    )
    with httpx.Client(base_url=connect.url, timeout=20) as http:
        assert http.put("/connectors/flaky/config", json=config).status_code == 201
        wait_for(lambda: len(lines(out)) == 4)
        assert lines(out) == [good_line(0), "{n=1, bad=false, flaky=true}", good_line(2), good_line(3)]
        assert metric(http, "total_retries", "flaky") == 2
        assert metric(http, "total_record_failures", "flaky") == 2
        assert metric(http, "total_record_errors", "flaky") == 0
        assert http.delete("/connectors/flaky").status_code == 204


def test_put_retriable_exception_redelivers_the_batch(
    broker: EmbeddedBroker, connect: EmbeddedConnect, tmp_path: Path
) -> None:
    create_topic(broker, "busy-in")
    produce(broker, "busy-in", [(b"k", f"v{n}".encode(), []) for n in range(5)])
    out = tmp_path / "busy.txt"
    config = {
        "connector.class": "tests.component.connect_plugins.BusySinkConnector",
        "topics": "busy-in",
        "file": str(out),
        "busy": "2",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    with httpx.Client(base_url=connect.url, timeout=20) as http:
        assert http.put("/connectors/busy/config", json=config).status_code == 201
        wait_for(lambda: len(lines(out)) >= 5)
        assert lines(out) == [f"v{n}" for n in range(5)]
        assert BUSY_PUTS[str(out)] == 2  # two put() calls raised RetriableException before this one
        state = task_status(http, "busy")
        assert state is not None and state["state"] == "RUNNING"
        assert http.delete("/connectors/busy").status_code == 204


def dlq_offsets(broker: EmbeddedBroker, count: int) -> list[int]:
    return sorted(
        int(dict(m.headers())["__connect.errors.offset"]) for m in read_all(broker, "restart-dlq", count)
    )


def test_worker_restarts_lose_no_dead_letter(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """A clean stop commits after the DLQ writes: nothing twice. A kill before any commit
    (offset.flush.interval.ms long) delivers everything again: every DLQ record at least once."""
    create_topic(broker, "restart-in")
    out = tmp_path / "restart.txt"
    config = sink_config(
        "restart-in",
        out,
        **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "restart-dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )

    def start(**props: Any) -> EmbeddedConnect:
        c = EmbeddedConnect(broker.bootstrap_servers, **{**WORKER, **props}).start()
        with httpx.Client(base_url=c.url, timeout=20) as http:
            assert http.put("/connectors/restart-sink/config", json=config).status_code == 201
        return c

    produce(broker, "restart-in", batch(0, 6, bad_json={1, 4}, rejected=set()))
    first = start()
    try:
        wait_for(lambda: len(lines(out)) == 4)
        assert dlq_offsets(broker, 2) == [1, 4]
    finally:
        first.stop()  # clean: the final commit waits for the DLQ writes
    produce(broker, "restart-in", batch(6, 4, bad_json={8}, rejected=set()))
    second = start()
    try:
        wait_for(lambda: len(lines(out)) == 7)
        assert dlq_offsets(broker, 3) == [1, 4, 8]  # exactly once across a clean restart
        assert lines(out) == [good_line(n) for n in (0, 2, 3, 5, 6, 7, 9)]
    finally:
        second.stop()
    produce(broker, "restart-in", batch(10, 4, bad_json={11}, rejected=set()))
    crashing = start(offset_flush_interval_ms=600_000)  # no periodic commit before the kill
    try:
        assert dlq_offsets(broker, 4) == [1, 4, 8, 11]
    finally:
        crashing.kill()  # no final commit: 10..13 are delivered again
    third = start()
    try:
        assert dlq_offsets(broker, 5) == [1, 4, 8, 11, 11]  # at least once: none lost, 11 twice
        wait_for(lambda: {good_line(n) for n in (10, 12, 13)} <= set(lines(out)[7:]))
        assert set(lines(out)[7:]) == {good_line(n) for n in (10, 12, 13)}
    finally:
        third.stop()
