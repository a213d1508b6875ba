"""The PostgreSQL sink through a Connect worker: Debezium's JDBC sink configuration posted as it is,
records produced as schema'd JSON by confluent-kafka (upserts, a tombstone delete, a new field that
evolves the table), Confluent's alias names with insert.mode=update, bad configs refused by
``/config/validate``, and the CDC replication pipeline PostgreSQL -> Zurau -> PostgreSQL."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import psycopg2
import pytest
from confluent_kafka import Producer

from tests.support.waiting import wait_for
from zurau.connect.embedded_connect import EmbeddedConnect
from zurau.testing.postgres import TemporaryPostgres

DEBEZIUM_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
CONFLUENT_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _database(server: TemporaryPostgres) -> tuple[str, Any]:
    name = f"db_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(server.dsn)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    admin.close()
    conn = psycopg2.connect(host=server.host, port=server.port, user="postgres", dbname=name)
    conn.autocommit = True
    return name, conn


def _drop(server: TemporaryPostgres, name: str, conn: Any) -> None:
    conn.close()
    admin = psycopg2.connect(server.dsn)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = %s AND active",
                    (name,))
        deadline = time.monotonic() + 10
        while True:
            try:
                cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s",
                            (name,))
                break
            except psycopg2.errors.ObjectInUse:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        cur.execute(f"DROP DATABASE {name} WITH (FORCE)")
    admin.close()


@pytest.fixture
def target(zurau_postgres: TemporaryPostgres) -> Iterator[tuple[str, Any]]:
    name, conn = _database(zurau_postgres)
    try:
        yield name, conn
    finally:
        _drop(zurau_postgres, name, conn)


def rows(conn: Any, query: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        try:
            cur.execute(query)
        except (psycopg2.errors.UndefinedTable, psycopg2.errors.UndefinedColumn):
            return []
        return [tuple(r) for r in cur.fetchall()]


KEY_SCHEMA = {"type": "struct", "optional": False, "name": "k", "fields": [
    {"field": "id", "type": "int32", "optional": False}]}


def value_schema(with_note: bool) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "name", "type": "string", "optional": False},
        {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
         "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "8"}},
        {"field": "seen", "type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp",
         "version": 1},
    ]
    if with_note:
        fields.append({"field": "note", "type": "string", "optional": True})
    return {"type": "struct", "optional": False, "name": "v", "fields": fields}


def decimal_b64(cents: int) -> str:
    return base64.b64encode(cents.to_bytes(4, "big", signed=True)).decode()


def send(producer: Producer, topic: str, key: int, value: dict[str, Any] | None, with_note: bool = False) -> None:
    k = json.dumps({"schema": KEY_SCHEMA, "payload": {"id": key}})
    v = None if value is None else json.dumps({"schema": value_schema(with_note), "payload": value})
    producer.produce(topic, key=k, value=v)


def sink_config(server: TemporaryPostgres, dbname: str, topic: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": DEBEZIUM_SINK, "tasks.max": "1", "topics": topic,
        "connection.url": f"jdbc:postgresql://{server.host}:{server.port}/{dbname}",
        "connection.username": "postgres", "connection.password": "postgres",
        "key.converter": JSON, "value.converter": JSON,
        "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true", **extra,
    }


def test_upserts_deletes_and_evolves_a_table_from_schemad_json(
    zurau_broker: Any, zurau_postgres: TemporaryPostgres, target: tuple[str, Any]
) -> None:
    dbname, conn = target
    topic = f"shop.items.{uuid.uuid4().hex[:6]}"
    table = topic.replace(".", "_")
    producer = Producer({"bootstrap.servers": zurau_broker.bootstrap_servers})
    send(producer, topic, 1, {"id": 1, "name": "apple", "price": decimal_b64(150), "seen": 1_700_000_000_000})
    send(producer, topic, 2, {"id": 2, "name": "pear", "price": None, "seen": None})
    send(producer, topic, 1, {"id": 1, "name": "apple", "price": decimal_b64(175), "seen": 1_700_000_000_000})
    producer.flush(10)
    config = sink_config(zurau_postgres, dbname, topic, **{
        "insert.mode": "upsert", "primary.key.mode": "record_key", "delete.enabled": "true",
        "schema.evolution": "basic", "retry.backoff.ms": "100"})
    with EmbeddedConnect(zurau_broker.bootstrap_servers, offset_flush_interval_ms=200) as connect, \
            httpx.Client(base_url=connect.url, timeout=20) as http:
        bad = http.put(f"/connector-plugins/{DEBEZIUM_SINK}/config/validate", json={
            **config, "name": "bad", "connection.url": "jdbc:mysql://h/db", "insert.mode": "merge"})
        assert bad.status_code == 200 and bad.json()["error_count"] == 2
        errors = {c["value"]["name"]: c["value"]["errors"] for c in bad.json()["configs"] if c["value"]["errors"]}
        assert set(errors) == {"connection.url", "insert.mode"}
        crossed = http.put(f"/connector-plugins/{DEBEZIUM_SINK}/config/validate", json={
            **config, "name": "bad", "primary.key.mode": "none"})
        errors = {c["value"]["name"]: c["value"]["errors"] for c in crossed.json()["configs"] if c["value"]["errors"]}
        assert set(errors) == {"insert.mode", "delete.enabled"}, errors

        assert http.post("/connectors", json={"name": "items-sink", "config": config}).status_code == 201
        wait_for(lambda: rows(conn, f'SELECT id, name, price, seen FROM "{table}" ORDER BY id') == [
            (1, "apple", Decimal("1.75"), _ts(1_700_000_000_000)), (2, "pear", None, None)])
        with conn.cursor() as cur:
            cur.execute("SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                        "WHERE table_name = %s ORDER BY ordinal_position", (table,))
            assert cur.fetchall() == [("id", "integer", "NO"), ("name", "text", "NO"), ("price", "numeric", "YES"),
                                      ("seen", "timestamp without time zone", "YES")]
        # A tombstone deletes; a record with a new optional field adds the column.
        send(producer, topic, 2, None)
        send(producer, topic, 3, {"id": 3, "name": "plum", "price": None, "seen": None, "note": "new"}, with_note=True)
        producer.flush(10)
        wait_for(lambda: rows(conn, f'SELECT id, name, note FROM "{table}" ORDER BY id') == [
            (1, "apple", None), (3, "plum", "new")])
        # The server drops the sink's connection: the next batch goes through a new one.
        assert rows(conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = 'zurau-jdbc-sink'") == [(True,)]
        send(producer, topic, 4, {"id": 4, "name": "fig", "price": None, "seen": None, "note": None}, with_note=True)
        producer.flush(10)
        wait_for(lambda: rows(conn, f'SELECT id FROM "{table}" ORDER BY id') == [(1,), (3,), (4,)])
        assert http.get("/connectors/items-sink/status").json()["tasks"][0]["state"] == "RUNNING"


def _ts(ms: int) -> Any:
    import datetime as dt

    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def test_confluent_names_update_mode_and_a_missing_table(
    zurau_broker: Any, zurau_postgres: TemporaryPostgres, target: tuple[str, Any]
) -> None:
    dbname, conn = target
    topic = f"people-{uuid.uuid4().hex[:6]}"
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, price numeric, seen timestamp)")
        cur.execute("INSERT INTO people VALUES (1, 'old', NULL, NULL)")
    producer = Producer({"bootstrap.servers": zurau_broker.bootstrap_servers})
    send(producer, topic, 1, {"id": 1, "name": "renamed", "price": None, "seen": None})
    send(producer, topic, 9, {"id": 9, "name": "never inserted", "price": None, "seen": None})
    producer.flush(10)
    config = sink_config(zurau_postgres, dbname, topic, **{
        "connector.class": CONFLUENT_SINK, "insert.mode": "update", "pk.mode": "record_value", "pk.fields": "id",
        "table.name.format": "people"})
    config.pop("connection.username")
    config["connection.user"] = "postgres"
    missing = dict(config, topics=topic + "-x", **{"table.name.format": "absent"})
    send(producer, topic + "-x", 5, {"id": 5, "name": "x", "price": None, "seen": None})
    producer.flush(10)
    with EmbeddedConnect(zurau_broker.bootstrap_servers, offset_flush_interval_ms=200) as connect, \
            httpx.Client(base_url=connect.url, timeout=20) as http:
        assert http.post("/connectors", json={"name": "people-sink", "config": config}).status_code == 201
        assert http.post("/connectors", json={"name": "absent-sink", "config": missing}).status_code == 201
        wait_for(lambda: rows(conn, "SELECT id, name FROM people ORDER BY id") == [(1, "renamed")])

        def failed() -> str:
            tasks = http.get("/connectors/absent-sink/status").json()["tasks"]
            return tasks[0].get("trace", "") if tasks and tasks[0]["state"] == "FAILED" else ""
        assert 'table "absent" does not exist' in wait_for(failed)
        assert http.get("/connectors/people-sink/status").json()["tasks"][0]["state"] == "RUNNING"


def test_cdc_replication_postgres_to_zurau_to_postgres(
    zurau_broker: Any, zurau_postgres: TemporaryPostgres, target: tuple[str, Any]
) -> None:
    """Debezium's CDC source -> topic -> ExtractNewRecordState -> the sink: the replica equals the
    source table after inserts, updates, deletes and a column added while streaming."""
    replica_db, replica = target
    source_db, source = _database(zurau_postgres)
    prefix = f"cdc{uuid.uuid4().hex[:6]}"
    slot = f"slot_{prefix}"
    try:
        with source.cursor() as cur:
            cur.execute("CREATE TABLE orders (id serial PRIMARY KEY, customer text NOT NULL, "
                        "amount numeric(10,2), placed timestamp)")
            cur.execute("INSERT INTO orders (customer, amount, placed) VALUES "
                        "('ann', 10.50, '2024-05-01 10:00:00.123456'), ('bob', 3, NULL), ('cid', NULL, now())")
        cdc = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "tasks.max": "1",
            "database.hostname": zurau_postgres.host, "database.port": str(zurau_postgres.port),
            "database.user": "postgres", "database.password": "postgres", "database.dbname": source_db,
            "topic.prefix": prefix, "plugin.name": "pgoutput", "slot.name": slot, "publication.name": f"pub_{slot}",
            "publication.autocreate.mode": "filtered", "table.include.list": "public.orders",
            "key.converter": JSON, "value.converter": JSON,
        }
        sink = sink_config(zurau_postgres, replica_db, f"{prefix}.public.orders", **{
            "insert.mode": "upsert", "primary.key.mode": "record_key", "delete.enabled": "true",
            "schema.evolution": "basic", "table.name.format": "orders",
            "transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.delete.tombstone.handling.mode": "tombstone"})
        query = "SELECT * FROM orders ORDER BY id"
        with EmbeddedConnect(zurau_broker.bootstrap_servers, offset_flush_interval_ms=200) as connect, \
                httpx.Client(base_url=connect.url, timeout=20) as http:
            assert http.post("/connectors", json={"name": "cdc", "config": cdc}).status_code == 201
            wait_for(lambda: http.get("/connectors/cdc/status").json()["tasks"][:1]
                     and http.get("/connectors/cdc/status").json()["tasks"][0]["state"] == "RUNNING")
            assert http.post("/connectors", json={"name": "replica", "config": sink}).status_code == 201
            wait_for(lambda: rows(replica, query) == rows(source, query))
            with source.cursor() as cur:
                cur.execute("UPDATE orders SET amount = 99.99 WHERE customer = 'bob'")
                cur.execute("DELETE FROM orders WHERE customer = 'ann'")
                cur.execute("ALTER TABLE orders ADD COLUMN note text")
                cur.execute("INSERT INTO orders (customer, amount, note) VALUES ('dan', 1.25, 'rush')")
                cur.execute("UPDATE orders SET note = 'late' WHERE customer = 'cid'")
            expected = rows(source, query)
            assert len(expected) == 3 and len(expected[0]) == 5
            wait_for(lambda: rows(replica, query) == expected)
            for name in ("cdc", "replica"):
                assert http.get(f"/connectors/{name}/status").json()["tasks"][0]["state"] == "RUNNING"
            assert http.delete("/connectors/cdc").status_code == 204
    finally:
        _drop(zurau_postgres, source_db, source)
