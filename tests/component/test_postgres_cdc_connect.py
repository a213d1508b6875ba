"""End to end: a Debezium PostgreSQL connector JSON posted unchanged to a Zurau Connect worker's
``/connectors``, Debezium's JSON change events read back from Zurau with confluent-kafka (across a
worker crash and a broker restart), a bad config refused by ``/config/validate``, and a dropped
replication slot shown as a FAILED task with a clear trace."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg2
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect
from zurau.testing.postgres import TemporaryPostgres

DEBEZIUM = "io.debezium.connector.postgresql.PostgresConnector"


@pytest.fixture
def database(zurau_postgres: TemporaryPostgres) -> Iterator[tuple[TemporaryPostgres, str, Any]]:
    name = f"shop_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(zurau_postgres.dsn)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    conn = psycopg2.connect(host=zurau_postgres.host, port=zurau_postgres.port, user="postgres", dbname=name)
    conn.autocommit = True
    try:
        yield zurau_postgres, name, conn
    finally:
        conn.close()
        with admin.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = %s AND active", (name,))
            deadline = time.monotonic() + 10
            while True:
                try:
                    cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s", (name,))
                    break
                except psycopg2.errors.ObjectInUse:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            cur.execute(f"DROP DATABASE {name} WITH (FORCE)")
        admin.close()


def read_topic(
    bootstrap: str, topic: str, count: int = 0, timeout: float = 30.0,
    done: Callable[[list[tuple[Any, Any]]], bool] | None = None,
) -> list[tuple[Any, Any]]:
    """The (key, value) JSON documents of ``topic`` from the start, until ``count`` records (or
    ``done(records)``) are there."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    out: list[tuple[Any, Any]] = []
    finished = done or (lambda records: len(records) >= count)
    deadline = time.monotonic() + timeout
    try:
        # Assigned, not subscribed: no group rebalance to wait for.
        partitions = wait_for(lambda: consumer.list_topics(topic, timeout=5).topics[topic].partitions, timeout)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(partitions)])
        while not finished(out):
            assert time.monotonic() < deadline, f"{len(out)} records of {topic} only"
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            value = msg.value()
            out.append((json.loads(msg.key()), None if value is None else json.loads(value)))
    finally:
        consumer.close()
    return out


def test_debezium_config_posted_to_the_worker_streams_debezium_json(zurau_broker: Any, database: Any) -> None:
    server, dbname, conn = database
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE customers (id serial PRIMARY KEY, email text NOT NULL, balance numeric(8,2))")
        cur.execute("INSERT INTO customers (email, balance) VALUES ('a@x', 10.5), ('b@x', 0)")
    slot = f"dbz_{uuid.uuid4().hex[:8]}"
    config = {
        "connector.class": DEBEZIUM,
        "tasks.max": "1",
        "database.hostname": server.host,
        "database.port": str(server.port),
        "database.user": "postgres",
        "database.password": "postgres",
        "database.dbname": dbname,
        "topic.prefix": "dbserver1",
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.name": f"pub_{slot}",
        "publication.autocreate.mode": "filtered",
        "table.include.list": "public.customers",
        "snapshot.mode": "initial",
        "decimal.handling.mode": "string",
        "tombstones.on.delete": "true",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
    }
    topic = "dbserver1.public.customers"
    with EmbeddedConnect(zurau_broker.bootstrap_servers, offset_flush_interval_ms=200) as connect, httpx.Client(
        base_url=connect.url, timeout=20
    ) as http:
        bad = http.put(f"/connector-plugins/{DEBEZIUM}/config/validate",
                       json={**config, "name": "inventory", "snapshot.mode": "sometimes", "plugin.name": "decoderbufs"})
        assert bad.status_code == 200 and bad.json()["error_count"] == 2

        created = http.post("/connectors", json={"name": "inventory", "config": config})
        assert created.status_code == 201, created.text
        wait_for(lambda: http.get("/connectors/inventory/status").json()["tasks"][:1]
                 and http.get("/connectors/inventory/status").json()["tasks"][0]["state"] == "RUNNING")
        snapshot = read_topic(zurau_broker.bootstrap_servers, topic, 2)
        with conn.cursor() as cur:
            cur.execute("UPDATE customers SET balance = 11.25 WHERE id = 1")
            cur.execute("DELETE FROM customers WHERE id = 2")
        events = read_topic(zurau_broker.bootstrap_servers, topic, 5)
        # The worker flushed the offsets and called commit(): the slot follows.
        wait_for(lambda: slot_confirmed(conn, slot) >= events[3][1]["payload"]["source"]["lsn"])
        assert http.delete("/connectors/inventory").status_code == 204

        # The slot goes away while the connector is stopped: on its return the task fails and says why.
        wait_for(lambda: try_drop_slot(conn, slot))
        assert http.post("/connectors", json={"name": "inventory", "config": config}).status_code == 201
        failed = wait_for(lambda: task_failed(http, "inventory"))
        assert f"replication slot '{slot}' does not exist" in failed["trace"] and "lost" in failed["trace"]

    assert [(k["payload"]["id"], v["payload"]["op"], v["payload"]["source"]["snapshot"]) for k, v in snapshot] == [
        (1, "r", "first"), (2, "r", "last"),
    ]
    key, value = snapshot[0]
    assert key["schema"]["name"] == "dbserver1.public.customers.Key"
    # A serial column's default (nextval(...)) appears as Debezium's stand-in 0.
    assert key["schema"]["fields"] == [{"type": "int32", "optional": False, "default": 0, "field": "id"}]
    assert value["schema"]["name"] == "dbserver1.public.customers.Envelope"
    assert value["payload"]["after"] == {"id": 1, "email": "a@x", "balance": "10.50"}
    assert value["payload"]["source"]["connector"] == "postgresql" and value["payload"]["source"]["db"] == dbname
    update, delete, tombstone = events[2:]
    assert update[1]["payload"]["op"] == "u" and update[1]["payload"]["after"]["balance"] == "11.25"
    assert update[1]["payload"]["before"] is None  # REPLICA IDENTITY DEFAULT
    assert delete[1]["payload"]["op"] == "d" and delete[1]["payload"]["before"]["id"] == 2
    assert tombstone == ({"schema": key["schema"], "payload": {"id": 2}}, None)


def slot_confirmed(conn: Any, slot: str) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        row = cur.fetchone()
    return -1 if row is None else int(row[0])


def try_drop_slot(conn: Any, slot: str) -> bool:
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_drop_replication_slot(%s)::text", (slot,))
        return True
    except psycopg2.errors.ObjectInUse:
        return False


def task_failed(http: httpx.Client, name: str) -> dict[str, Any] | None:
    tasks = http.get(f"/connectors/{name}/status").json().get("tasks", [])
    if tasks and tasks[0]["state"] == "FAILED":
        return dict(tasks[0])
    return None


def test_a_killed_worker_resumes_from_the_committed_offsets_without_loss(
    zurau_broker: Any, database: Any, tmp_path: Any
) -> None:
    server, dbname, conn = database
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)")
        cur.execute("INSERT INTO counters SELECT g, 0 FROM generate_series(1, 5) g")
    slot = f"dbz_{uuid.uuid4().hex[:8]}"
    config = {
        "connector.class": DEBEZIUM, "database.hostname": server.host, "database.port": str(server.port),
        "database.user": "postgres", "database.dbname": dbname, "topic.prefix": "crash", "slot.name": slot,
        "publication.name": f"pub_{slot}",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
    }
    offsets_file = tmp_path / "offsets"
    props = {"offset_flush_interval_ms": 100, "offset.storage.file.filename": str(offsets_file)}
    topic = "crash.public.counters"

    def bump(rounds: range) -> None:
        with conn.cursor() as cur:
            for n in rounds:
                cur.execute("UPDATE counters SET n = %s", (n,))  # one transaction: five updates

    def counts(records: list[tuple[Any, Any]]) -> dict[int, list[int]]:
        per_key: dict[int, list[int]] = {}
        for key, value in records:
            per_key.setdefault(key["id"], []).append(value["after"]["n"])
        return per_key

    def reached(n: int) -> Callable[[list[tuple[Any, Any]]], bool]:
        """Every key has had every value up to ``n``."""
        return lambda records: len(counts(records)) == 5 and all(
            set(range(n + 1)) <= set(v) for v in counts(records).values()
        )

    bootstrap = zurau_broker.bootstrap_servers
    first = EmbeddedConnect(bootstrap, **props).start()
    try:
        with httpx.Client(base_url=first.url, timeout=20) as http:
            assert http.post("/connectors", json={"name": "crashy", "config": config}).status_code == 201
        read_topic(bootstrap, topic, done=reached(0))  # the snapshot
        bump(range(1, 4))
        read_topic(bootstrap, topic, done=reached(3))
        # Crash once an offset of the streamed changes is flushed (a crash before any flush would
        # just mean a new snapshot).
        wait_for(lambda: offsets_file.exists() and '"event_part"' in offsets_file.read_text())
    finally:
        first.kill()  # no final offset commit
    bump(range(4, 6))  # while no worker runs
    second = EmbeddedConnect(bootstrap, **props).start()
    try:
        with httpx.Client(base_url=second.url, timeout=20) as http:
            assert http.post("/connectors", json={"name": "crashy", "config": config}).status_code == 201
        bump(range(6, 8))
        events = read_topic(bootstrap, topic, done=reached(7), timeout=20)
    finally:
        second.stop()

    for k, values in counts(events).items():
        # At least once and in commit order: a crash may repeat a suffix of what was produced,
        # never lose or reorder a change.
        assert sorted(set(values)) == list(range(8)), (k, values)
        firsts = [values.index(n) for n in range(8)]
        assert firsts == sorted(firsts), (k, values)
        assert len(values) <= 8 + 3, (k, values)  # only the unflushed tail of the first run repeats


def test_changes_committed_while_the_broker_is_down_arrive_once_it_is_back(
    database: Any, tmp_path: Any
) -> None:
    """A broker restart under a streaming CDC task (same port and log dir): the task's producer
    retries, the slot is only confirmed up to what the broker acknowledged, and every change,
    also those committed while no broker ran, arrives in commit order."""
    server, dbname, conn = database
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE tally (id int PRIMARY KEY, n int NOT NULL)")
        cur.execute("INSERT INTO tally SELECT g, 0 FROM generate_series(1, 3) g")
    slot = f"dbz_{uuid.uuid4().hex[:8]}"
    config = {
        "connector.class": DEBEZIUM, "database.hostname": server.host, "database.port": str(server.port),
        "database.user": "postgres", "database.dbname": dbname, "topic.prefix": "bounce", "slot.name": slot,
        "publication.name": f"pub_{slot}",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
    }
    topic = "bounce.public.tally"
    log_dir = tmp_path / "broker"

    def bump(rounds: range) -> None:
        with conn.cursor() as cur:
            for n in rounds:
                cur.execute("UPDATE tally SET n = %s", (n,))

    def per_key(records: list[tuple[Any, Any]]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for key, value in records:
            if value is not None:
                out.setdefault(key["id"], []).append(value["after"]["n"])
        return out

    def reached(n: int) -> Callable[[list[tuple[Any, Any]]], bool]:
        return lambda records: len(per_key(records)) == 3 and all(
            set(range(n + 1)) <= set(v) for v in per_key(records).values()
        )

    broker = EmbeddedBroker(log_dir).start()
    port = broker.port
    connect = None
    try:
        bootstrap = broker.bootstrap_servers
        connect = EmbeddedConnect(bootstrap, offset_flush_interval_ms=100,
                                  **{"offset.storage.file.filename": str(tmp_path / "offsets")}).start()
        with httpx.Client(base_url=connect.url, timeout=20) as http:
            assert http.post("/connectors", json={"name": "bouncy", "config": config}).status_code == 201
        read_topic(bootstrap, topic, done=reached(0))  # the snapshot
        bump(range(1, 3))
        read_topic(bootstrap, topic, done=reached(2))
        broker.stop()
        bump(range(3, 6))  # committed in PostgreSQL while no broker runs
        time.sleep(1.0)  # the task polls these and its producer retries
        broker = EmbeddedBroker(log_dir, listeners=f"PLAINTEXT://127.0.0.1:{port}").start()
        bump(range(6, 8))
        events = read_topic(bootstrap, topic, done=reached(7), timeout=60)
        with httpx.Client(base_url=connect.url, timeout=20) as http:
            status = http.get("/connectors/bouncy/status").json()
        assert status["tasks"][0]["state"] == "RUNNING", status
    finally:
        if connect is not None:
            connect.stop()
        broker.stop()
    for k, values in per_key(events).items():
        assert sorted(set(values)) == list(range(8)), (k, values)
        firsts = [values.index(n) for n in range(8)]
        assert firsts == sorted(firsts), (k, values)  # commit order per key
