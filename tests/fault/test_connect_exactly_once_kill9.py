"""KIP-618 exactly-once source connectors with the Connect worker a real process killed with
SIGKILL, on three node processes (topics with replication factor 3 and ``min.insync.replicas=2``).

One ``zurau connect start`` worker (``exactly.once.source.support=enabled``) runs two connectors:

* the file source with ``transaction.boundary=interval`` and an interval far longer than the test,
  so its transaction is open until the worker stops: a SIGTERM commits it, a SIGKILL leaves it
  open, and lines sent in it are seen by read_uncommitted readers only;
* the PostgreSQL change data capture source (Debezium's class name) with the default
  ``transaction.boundary=poll``, ``exactly.once.support=required``, while a writer updates every
  row of a table in numbered rounds (one database transaction per round), before, during and
  after the kill.

Worker A takes the snapshot and streams rounds 1-5, and is stopped with SIGTERM (exit code 0).
Worker B sends more lines and streams while the writer runs; it is killed with SIGKILL with the
file source's lines 10-19 in an open transaction, and then a node is killed with SIGKILL and
restarted while no worker runs. Worker C fences B's transactional ids (aborting their open
transactions), resumes from the last committed offsets and catches up.

read_committed then sees each line once, in order, and for every row each round's value once, in
round order: nothing lost, nothing twice; read_uncommitted shows the aborted copies of lines
10-19, which proves a transaction was open at the kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.component.test_postgres_cdc_connect import database  # noqa: F401 (a fixture)
from tests.support.broker_process import free_port
from tests.support.reading import read_records
from tests.support.waiting import wait_for
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ZURAU = [sys.executable, "-m", "zurau.cli.main"]
OVERRIDES = {
    "group.min.session.timeout.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.num.partitions": "4",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.num.partitions": "2",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "4000",
    "replica.fetch.wait.max.ms": "200",
}
FILE_TOPIC = "eos-lines"
CDC_TOPIC = "eos.public.accounts"
ROWS = 5
#: the kill falls somewhere inside these rounds (the writer is still running)
ROUNDS_DURING_B = range(6, 41)
LAST_ROUND = 45


def worker_properties(path: Path, bootstrap: str, port: int) -> Path:
    props = {
        "bootstrap.servers": bootstrap,
        "listeners": f"http://127.0.0.1:{port}",
        "group.id": "eos-kill9",
        "config.storage.topic": "eos-kill9-configs",
        "offset.storage.topic": "eos-kill9-offsets",
        "status.storage.topic": "eos-kill9-status",
        "config.storage.replication.factor": "3",
        "offset.storage.replication.factor": "3",
        "status.storage.replication.factor": "3",
        "offset.storage.partitions": "3",
        "exactly.once.source.support": "enabled",
        "session.timeout.ms": "2000",
        "heartbeat.interval.ms": "300",
        "offset.flush.interval.ms": "500",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class Worker:
    """A ``zurau connect start`` process and its REST URL."""

    def __init__(self, config: Path, port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*ZURAU, "connect", "start", "--config", str(config)],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

        def up() -> bool:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                return httpx.get(f"{self.url}/connectors", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(up, 60, "the worker's REST API")

    def running(self, connectors: list[str]) -> bool:
        try:
            for name in connectors:
                s = httpx.get(f"{self.url}/connectors/{name}/status", timeout=5).json()
                if not s.get("tasks") or s["tasks"][0]["state"] != "RUNNING":
                    assert not s.get("tasks") or s["tasks"][0]["state"] != "FAILED", s
                    return False
        except (httpx.HTTPError, ValueError):
            return False
        return True

    def sigterm(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(60) == 0, self.log.read_text()[-3000:]

    def sigkill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def lines(bootstrap: str, isolation: str) -> list[str]:
    return [json.loads(v) if v is not None else "" for _, v in read_records(bootstrap, FILE_TOPIC, isolation=isolation, idle_polls=4)]


def rounds_per_row(bootstrap: str, isolation: str = "read_committed") -> dict[int, list[int]]:
    """For every row id, the ``n`` of each change event in topic order."""
    per_row: dict[int, list[int]] = {}
    for key, value in read_records(bootstrap, CDC_TOPIC, isolation=isolation, idle_polls=4):
        assert key is not None and value is not None
        per_row.setdefault(json.loads(key)["id"], []).append(json.loads(value)["after"]["n"])
    return per_row


def reached(bootstrap: str, n: int) -> Callable[[], bool]:
    def check() -> bool:
        per_row = rounds_per_row(bootstrap)
        return len(per_row) == ROWS and all(v and v[-1] >= n for v in per_row.values())

    return check


def test_exactly_once_sources_survive_a_worker_killed_with_sigkill(
    tmp_path: Path, database: tuple[Any, str, Any]  # noqa: F811 (the imported fixture)
) -> None:
    server, dbname, conn = database
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE accounts (id int PRIMARY KEY, n int NOT NULL)")
        cur.execute(f"INSERT INTO accounts SELECT g, 0 FROM generate_series(1, {ROWS}) g")

    def bump(rounds: range, pause: float = 0.0) -> None:
        with conn.cursor() as cur:
            for n in rounds:
                cur.execute("UPDATE accounts SET n = %s", (n,))  # one transaction: every row
                time.sleep(pause)

    source = tmp_path / "in.txt"
    source.write_text("".join(f"line {n}\n" for n in range(10)))
    slot = f"eos_{uuid.uuid4().hex[:8]}"
    connectors = {
        "file-src": {
            "connector.class": "FileStreamSource",
            "file": str(source),
            "topic": FILE_TOPIC,
            "exactly.once.support": "required",
            "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": "3600000",
        },
        "pg-src": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": server.host,
            "database.port": str(server.port),
            "database.user": "postgres",
            "database.dbname": dbname,
            "topic.prefix": "eos",
            "slot.name": slot,
            "publication.name": f"pub_{slot}",
            "exactly.once.support": "required",
        },
    }
    port = free_port()
    workers: list[Worker] = []
    with ClusterProcesses(tmp_path / "cluster", **OVERRIDES) as cluster:
        boot = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": boot})
        for f in admin.create_topics(
            [NewTopic(t, 1, 3, config={"min.insync.replicas": "2"}) for t in (FILE_TOPIC, CDC_TOPIC)]
        ).values():
            f.result(30)
        config = worker_properties(tmp_path / "worker.properties", boot, port)

        def start_worker() -> Worker:
            w = Worker(config, port, tmp_path / "worker.log")
            workers.append(w)
            return w

        try:
            # A: snapshot, rounds 1-5 and lines 0-9; a SIGTERM commits the file source's transaction.
            a = start_worker()
            for name, c in connectors.items():
                r = httpx.post(f"{a.url}/connectors", json={"name": name, "config": c}, timeout=30)
                assert r.status_code == 201, r.text
            wait_for(lambda: a.running(list(connectors)), 60, "both tasks running")
            wait_for(reached(boot, 0), 60, "the snapshot")
            bump(range(1, 6))
            wait_for(reached(boot, 5), 60, "rounds 1-5")
            wait_for(lambda: len(lines(boot, "read_uncommitted")) == 10, 60, "lines 0-9 sent")
            assert lines(boot, "read_committed") == []  # the interval has not elapsed
            a.sigterm()
            assert lines(boot, "read_committed") == [f"line {n}" for n in range(10)]

            # B: killed with SIGKILL mid-stream, lines 10-19 in its open transaction.
            b = start_worker()
            wait_for(lambda: b.running(list(connectors)), 60, "tasks running on B")
            with source.open("a") as f:
                f.write("".join(f"line {n}\n" for n in range(10, 20)))
            writer = threading.Thread(target=bump, args=(ROUNDS_DURING_B, 0.1))
            writer.start()
            try:
                wait_for(lambda: len(lines(boot, "read_uncommitted")) == 20, 60, "lines 10-19 sent")
                wait_for(reached(boot, ROUNDS_DURING_B.start + 3), 60, "B streaming")
                b.sigkill()
            finally:
                writer.join(60)
            assert lines(boot, "read_committed") == [f"line {n}" for n in range(10)]
            # a node of the cluster is killed and restarted while no worker runs
            cluster.restart(2)
            bump(range(ROUNDS_DURING_B.stop, LAST_ROUND - 2))

            # C: fences B, resumes from the committed offsets, catches up; then a clean stop.
            c = start_worker()
            wait_for(lambda: c.running(list(connectors)), 90, "tasks running on C")
            bump(range(LAST_ROUND - 2, LAST_ROUND + 1))
            wait_for(reached(boot, LAST_ROUND), 90, "every round")
            wait_for(lambda: len(lines(boot, "read_uncommitted")) == 30, 60, "lines 10-19 sent again")
            c.sigterm()

            assert lines(boot, "read_committed") == [f"line {n}" for n in range(20)]
            assert lines(boot, "read_uncommitted") == [
                *(f"line {n}" for n in range(20)),
                *(f"line {n}" for n in range(10, 20)),
            ]  # B's aborted copies sit in the log, between the committed ones
            per_row = rounds_per_row(boot)
            assert sorted(per_row) == list(range(1, ROWS + 1))
            for row, values in per_row.items():
                assert values == list(range(LAST_ROUND + 1)), (row, values)  # once each, in order
        finally:
            for w in workers:
                w.close()
