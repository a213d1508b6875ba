"""KIP-618 exactly-once source connectors in distributed mode: the file source's records and its
offsets commit in one transaction; a worker killed mid-transaction leaves records a
read_committed reader never sees, and the task's next instance fences it, resumes from the last
committed offset and produces every line exactly once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect

WORKER: dict[str, Any] = {
    "group.id": "eos-connect",
    "exactly.once.source.support": "enabled",
    "offset_flush_interval_ms": 200,
    "session_timeout_ms": 2000,
    "heartbeat_interval_ms": 200,
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    "offset.storage.partitions": 2,
    "status.storage.partitions": 1,
}
TOPIC = "eos-lines"


def read_values(bootstrap: str, isolation: str) -> list[str]:
    """Every value in the topic, in order, as a consumer with ``isolation`` sees them."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    c.subscribe([TOPIC])
    seen: list[str] = []
    idle = 0
    try:
        while idle < 4:
            m = c.poll(0.5)
            if m is None:
                idle += 1
                continue
            if m.error() is None:
                value = m.value()
                assert value is not None
                seen.append(value.decode())
    finally:
        c.close()
    return seen


def task_running(url: str) -> bool:
    try:
        s = httpx.get(f"{url}/connectors/src/status", timeout=10).json()
    except (httpx.HTTPError, ValueError):
        return False
    return bool(s.get("tasks")) and s["tasks"][0]["state"] == "RUNNING"


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=500) as b:
        b.create_topic(TOPIC, 1)
        yield b


def test_a_worker_killed_mid_transaction_loses_and_duplicates_nothing(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("".join(f"line {n}\n" for n in range(10)))
    boot = broker.bootstrap_servers

    # 1. A transaction stays open for the interval; a graceful stop commits it.
    worker = EmbeddedConnect(boot, **WORKER).start()
    try:
        r = httpx.post(
            f"{worker.url}/connectors",
            json={
                "name": "src",
                "config": {
                    "connector.class": "FileStreamSource",
                    "file": str(source),
                    "topic": TOPIC,
                    "exactly.once.support": "required",
                    "transaction.boundary": "interval",
                    "transaction.boundary.interval.ms": "600000",
                },
            },
            timeout=20,
        )
        assert r.status_code == 201, r.text
        wait_for(lambda: task_running(worker.url), what="task running")
        wait_for(lambda: len(read_values(boot, "read_uncommitted")) == 10, what="10 lines sent")
        assert read_values(boot, "read_committed") == []  # sent, not committed
    finally:
        worker.stop()
    assert read_values(boot, "read_committed") == [f"line {n}" for n in range(10)]

    # 2. A second worker resumes after line 9; it is killed with lines 10-19 in an open transaction.
    with source.open("a") as f:
        f.write("".join(f"line {n}\n" for n in range(10, 20)))
    worker = EmbeddedConnect(boot, **WORKER).start()
    try:
        wait_for(lambda: len(read_values(boot, "read_uncommitted")) == 20, what="lines 10-19 sent")
    finally:
        worker.kill()
    assert len(read_values(boot, "read_committed")) == 10

    # 3. The task's next instance fences the killed one (aborting its transaction) and sends 10-19 again.
    worker = EmbeddedConnect(boot, **WORKER).start()
    try:
        wait_for(lambda: len(read_values(boot, "read_uncommitted")) == 30, what="lines 10-19 sent again")
    finally:
        worker.stop()
    committed = read_values(boot, "read_committed")
    assert committed == [f"line {n}" for n in range(20)]  # no loss, no duplicate, in order


def test_exactly_once_needs_distributed_mode_and_a_supporting_connector(broker: EmbeddedBroker) -> None:
    from zurau.connect.worker_config import WorkerConfig, WorkerConfigError

    with pytest.raises(WorkerConfigError, match="distributed"):
        WorkerConfig.from_props({"exactly.once.source.support": "enabled"})
    with EmbeddedConnect(broker.bootstrap_servers, **WORKER) as worker:
        base = {"name": "v", "connector.class": "FileStreamSource", "file": "/dev/null", "topic": TOPIC}
        r = httpx.put(
            f"{worker.url}/connector-plugins/FileStreamSource/config/validate",
            json={**base, "transaction.boundary": "connector", "transaction.boundary.interval.ms": "5"},
            timeout=20,
        )
        errors = {
            c["value"]["name"]: c["value"]["errors"] for c in r.json()["configs"] if c["value"]["errors"]
        }
        assert set(errors) == {"transaction.boundary", "transaction.boundary.interval.ms"}
        r = httpx.put(
            f"{worker.url}/connector-plugins/FileStreamSource/config/validate",
            json={**base, "exactly.once.support": "required", "transaction.boundary": "poll"},
            timeout=20,
        )
        assert r.json()["error_count"] == 0
