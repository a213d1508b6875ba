"""The PostgreSQL CDC source task against a real PostgreSQL (the session's temporary server):
snapshot and streaming in commit order, replica identities, schema changes, aborted transactions,
restarts from committed offsets, heartbeats, a dropped slot, PostgreSQL going away, and the
pgoutput decoder on the server's own bytes.

The tests play the Connect worker themselves (:class:`Worker`): they poll the task, acknowledge
records (``commit_record``) and flush offsets (``commit``) exactly when a test says so, which is
what makes crashes between those steps testable. Each test gets its own database and slot.
"""

from __future__ import annotations

import json
import select
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg2
import psycopg2.extras
import pytest

from zurau.connect.api import ConnectException, OffsetStorageReader, SourceRecord, SourceTaskContext
from zurau.connect.converters import JsonConverter
from zurau.connect.postgres import PostgresSourceTask
from zurau.connect.postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    Relation,
    Truncate,
    Update,
    decode_message,
)
from zurau.testing.postgres import TemporaryPostgres


class MemoryOffsets(OffsetStorageReader):
    """The worker's offset store: the last flushed offset of the connector's one partition."""

    def __init__(self) -> None:
        self.stored: dict[str, Any] | None = None

    def offset(self, partition: Any) -> dict[str, Any] | None:
        return None if self.stored is None else dict(self.stored)


class Worker:
    """Runs one task the way Connect's worker does, one step at a time."""

    def __init__(self, props: dict[str, str], offsets: MemoryOffsets) -> None:
        self.offsets = offsets
        self.task = PostgresSourceTask()
        self.task.initialize(SourceTaskContext(props, offsets))
        self.task.start(props)

    def poll_until(self, done: Callable[[list[SourceRecord]], bool], timeout: float = 15.0) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        deadline = time.monotonic() + timeout
        while not done(records):
            assert time.monotonic() < deadline, f"timed out; got {describe(records)}"
            records += self.task.poll() or []
        return records

    def poll_count(self, n: int, timeout: float = 15.0) -> list[SourceRecord]:
        records = self.poll_until(lambda rs: len(rs) >= n, timeout)
        assert len(records) == n, describe(records)
        return records

    def ack(self, records: list[SourceRecord]) -> None:
        """Kafka acknowledged ``records``; the worker flushes the last one's offset and commits."""
        for r in records:
            self.task.commit_record(r, None)
        self.offsets.stored = dict(records[-1].source_offset or {})
        self.task.commit()

    def stop(self) -> None:
        self.task.stop()


def describe(records: list[SourceRecord]) -> list[tuple[str, Any, Any]]:
    return [(r.topic, r.value.get("op") if r.value is not None else None, r.key) for r in records]


def op(r: SourceRecord) -> str | None:
    return None if r.value is None else r.value.get("op")


def after(r: SourceRecord) -> dict[str, Any] | None:
    a = r.value.get("after")
    return None if a is None else a.as_dict()


def before(r: SourceRecord) -> dict[str, Any] | None:
    b = r.value.get("before")
    return None if b is None else b.as_dict()


class Database:
    def __init__(self, server: TemporaryPostgres, name: str) -> None:
        self.server = server
        self.name = name
        self.slot = f"slot_{uuid.uuid4().hex[:12]}"
        self.conn = psycopg2.connect(host=server.host, port=server.port, user=server.user, dbname=name)
        self.conn.autocommit = True

    def sql(self, *statements: str) -> None:
        with self.conn.cursor() as cur:
            for s in statements:
                cur.execute(s)

    def one(self, query: str, *args: Any) -> Any:
        with self.conn.cursor() as cur:
            cur.execute(query, args)
            row = cur.fetchone()
        return None if row is None else row[0]

    def props(self, **overrides: str) -> dict[str, str]:
        props = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": self.server.host,
            "database.port": str(self.server.port),
            "database.user": self.server.user,
            "database.password": "unused",
            "database.dbname": self.name,
            "topic.prefix": "shop",
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": "cdc_pub",
            "poll.interval.ms": "100",
        }
        props.update({k.replace("_", "."): v for k, v in overrides.items()})
        return props

    def drop_slot(self) -> None:
        """Drop the slot once its walsender (of a stopped task) has let go of it."""
        deadline = time.monotonic() + 10
        while True:
            try:
                self.one("SELECT pg_drop_replication_slot(%s)::text", self.slot)
                return
            except psycopg2.errors.ObjectInUse:
                assert time.monotonic() < deadline
                time.sleep(0.05)

    def confirmed_flush_lsn(self) -> int:
        text = self.one("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", self.slot)
        high, low = text.split("/")
        return (int(high, 16) << 32) | int(low, 16)


@pytest.fixture
def db(zurau_postgres: TemporaryPostgres) -> Iterator[Database]:
    name = f"cdc_{uuid.uuid4().hex[:10]}"
    admin = psycopg2.connect(zurau_postgres.dsn)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    database = Database(zurau_postgres, name)
    try:
        yield database
    finally:
        database.conn.close()
        with admin.cursor() as cur:
            cur.execute(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = %s AND active", (name,)
            )
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


def test_snapshot_then_streaming_in_commit_order(db: Database) -> None:
    db.sql(
        "CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, amount numeric(10,2))",
        "INSERT INTO orders VALUES (1, 'ann', 1.50), (2, 'bob', 2), (3, 'cy', NULL)",
    )
    worker = Worker(db.props(), MemoryOffsets())
    try:
        snap = worker.poll_count(3)
        assert [op(r) for r in snap] == ["r", "r", "r"]
        assert [r.value.get("source").get("snapshot") for r in snap] == ["first", "true", "last"]
        assert sorted(after(r)["id"] for r in snap) == [1, 2, 3]
        assert {r.topic for r in snap} == {"shop.public.orders"}
        assert snap[-1].source_offset is not None and snap[-1].source_offset["last_snapshot_record"] is True

        db.sql(
            "INSERT INTO orders VALUES (4, 'dee', 4.25)",
            "UPDATE orders SET amount = 9 WHERE id = 1",
            "DELETE FROM orders WHERE id = 2",
            "BEGIN; INSERT INTO orders VALUES (99, 'aborted', 0); UPDATE orders SET customer = 'x' WHERE id = 3; ROLLBACK",
            "BEGIN; INSERT INTO orders VALUES (5, 'eve', 5); UPDATE orders SET amount = 6 WHERE id = 5; COMMIT",
        )
        changes = worker.poll_count(6)
    finally:
        worker.stop()
    assert [(op(r), r.key.get("id")) for r in changes] == [("c", 4), ("u", 1), ("d", 2), (None, 2), ("c", 5), ("u", 5)]
    assert after(changes[0]) == {"id": 4, "customer": "dee", "amount": pytest.approx(4.25)}
    # REPLICA IDENTITY DEFAULT: no before-image on update; only the key (and zero values for
    # NOT NULL columns, as Debezium writes them) on delete.
    assert before(changes[1]) is None and after(changes[1])["amount"] == 9
    assert before(changes[2]) == {"id": 2, "customer": "", "amount": None} and after(changes[2]) is None
    assert changes[3].value is None and changes[3].value_schema is None  # the tombstone
    sources = [r.value.get("source") for r in changes if r.value is not None]
    assert all(s.get("snapshot") == "false" and s.get("connector") == "postgresql" for s in sources)
    assert [s.get("lsn") for s in sources] == sorted(s.get("lsn") for s in sources)
    assert sources[-1].get("txId") == sources[-2].get("txId") != sources[0].get("txId")
    assert json.loads(sources[-1].get("sequence"))[1] == str(sources[-1].get("lsn"))
    assert (sources[0].get("db"), sources[0].get("schema"), sources[0].get("table")) == (db.name, "public", "orders")
    # Nothing of the rolled-back transaction.
    assert all(r.key.get("id") != 99 for r in changes) and all(after(r) is None or after(r)["customer"] != "x" for r in changes if r.value)

    # Debezium's JSON through the JSON converter with schemas.
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    value = json.loads(converter.from_connect_data(changes[0].topic, changes[0].value_schema, changes[0].value) or b"")
    assert value["schema"]["name"] == "shop.public.orders.Envelope"
    assert [f["field"] for f in value["schema"]["fields"]] == [
        "before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction",
    ]
    amount = value["schema"]["fields"][1]["fields"][2]
    assert amount["name"] == "org.apache.kafka.connect.data.Decimal" and amount["parameters"] == {
        "scale": "2", "connect.decimal.precision": "10",
    }
    assert value["payload"]["after"] == {"id": 4, "customer": "dee", "amount": "Aak="}  # 425 unscaled = 0x01A9, base64
    assert value["payload"]["op"] == "c" and value["payload"]["transaction"] is None
    key_converter = JsonConverter()
    key_converter.configure({"schemas.enable": "true"}, True)
    key = json.loads(key_converter.from_connect_data(changes[0].topic, changes[0].key_schema, changes[0].key) or b"")
    assert key == {
        "schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                   "optional": False, "name": "shop.public.orders.Key"},
        "payload": {"id": 4},
    }


def test_replica_identity_full_and_primary_key_change(db: Database) -> None:
    db.sql("CREATE TABLE items (id int PRIMARY KEY, name text, qty int)", "ALTER TABLE items REPLICA IDENTITY FULL")
    db.sql("INSERT INTO items VALUES (1, 'nut', 5)")
    worker = Worker(db.props(snapshot_mode="never", skipped_operations="none"), MemoryOffsets())
    try:
        db.sql(
            "UPDATE items SET qty = 6 WHERE id = 1",
            "UPDATE items SET id = 10 WHERE id = 1",
            "DELETE FROM items WHERE id = 10",
            "TRUNCATE items",
        )
        records = worker.poll_count(7)
    finally:
        worker.stop()
    assert [(op(r), r.key and r.key.get("id")) for r in records] == [
        ("u", 1), ("d", 1), (None, 1), ("c", 10), ("d", 10), (None, 10), ("t", None),
    ]
    assert before(records[6]) is None and after(records[6]) is None and records[6].value.get("source").get("table") == "items"
    assert before(records[0]) == {"id": 1, "name": "nut", "qty": 5} and after(records[0]) == {"id": 1, "name": "nut", "qty": 6}
    assert before(records[1]) == {"id": 1, "name": "nut", "qty": 6}
    assert after(records[3]) == {"id": 10, "name": "nut", "qty": 6}
    assert before(records[4]) == {"id": 10, "name": "nut", "qty": 6}


def test_unchanged_toasted_values_get_the_placeholder(db: Database) -> None:
    db.sql("CREATE TABLE docs (id int PRIMARY KEY, body text, views int)")
    # Incompressible and far above the TOAST threshold: stored out of line.
    db.sql("INSERT INTO docs SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 400) g")
    worker = Worker(db.props(snapshot_mode="never"), MemoryOffsets())
    try:
        db.sql("UPDATE docs SET views = 1 WHERE id = 1")
        (record,) = worker.poll_count(1)
    finally:
        worker.stop()
    assert after(record) == {"id": 1, "body": "__debezium_unavailable_value", "views": 1}


def test_a_column_added_while_streaming(db: Database) -> None:
    db.sql("CREATE TABLE t (id int PRIMARY KEY, a text)")
    worker = Worker(db.props(snapshot_mode="never"), MemoryOffsets())
    try:
        db.sql(
            "INSERT INTO t VALUES (1, 'x')",
            "ALTER TABLE t ADD COLUMN b int NOT NULL DEFAULT 7",
            "INSERT INTO t VALUES (2, 'y', 8)",
            "UPDATE t SET a = 'z' WHERE id = 1",
        )
        records = worker.poll_count(3)
    finally:
        worker.stop()
    assert [f.name for f in records[0].value_schema.field("after").schema.fields] == ["id", "a"]
    assert after(records[0]) == {"id": 1, "a": "x"}
    assert [f.name for f in records[1].value_schema.field("after").schema.fields] == ["id", "a", "b"]
    assert after(records[1]) == {"id": 2, "a": "y", "b": 8}
    assert after(records[2]) == {"id": 1, "a": "z", "b": 7}


def test_restart_resumes_from_the_committed_offset(db: Database) -> None:
    db.sql("CREATE TABLE t (id int PRIMARY KEY)")
    offsets = MemoryOffsets()
    worker = Worker(db.props(snapshot_mode="never"), offsets)
    try:
        start_flush = db.confirmed_flush_lsn()
        db.sql("INSERT INTO t VALUES (1)", "BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3); INSERT INTO t VALUES (4); COMMIT")
        records = worker.poll_count(4)
        # Kafka acknowledged 1, 2 and 3 (the middle of the second transaction); 4 is in flight.
        worker.ack(records[:3])
        worker.task.poll()  # feedback goes out on the poll thread
        second_txn_commit = records[1].source_offset["lsn_commit"]
        deadline = time.monotonic() + 10
        while db.confirmed_flush_lsn() != second_txn_commit:
            assert time.monotonic() < deadline, (db.confirmed_flush_lsn(), second_txn_commit)
            worker.task.poll()
        assert db.confirmed_flush_lsn() > start_flush
    finally:
        worker.stop()  # a crash: record 4 was never acknowledged
    db.sql("INSERT INTO t VALUES (5)")
    worker = Worker(db.props(snapshot_mode="never"), offsets)
    try:
        again = worker.poll_count(2)
    finally:
        worker.stop()
    assert [r.key.get("id") for r in again] == [4, 5]


def test_a_dropped_slot_is_reported_and_when_needed_snapshots_again(db: Database) -> None:
    db.sql("CREATE TABLE t (id int PRIMARY KEY)")
    offsets = MemoryOffsets()
    worker = Worker(db.props(snapshot_mode="never"), offsets)
    try:
        db.sql("INSERT INTO t VALUES (1)")
        worker.ack(worker.poll_count(1))
    finally:
        worker.stop()
    db.drop_slot()
    with pytest.raises(ConnectException, match=f"replication slot '{db.slot}' does not exist.*lost"):
        Worker(db.props(snapshot_mode="initial"), offsets)
    worker = Worker(db.props(snapshot_mode="when_needed"), offsets)
    try:
        records = worker.poll_count(1)
    finally:
        worker.stop()
    assert op(records[0]) == "r" and records[0].key.get("id") == 1


def test_heartbeats_and_filters_move_the_slot_past_uncaptured_changes(db: Database) -> None:
    db.sql("CREATE TABLE captured (id int PRIMARY KEY)", "CREATE TABLE noise (id int PRIMARY KEY)")
    props = db.props(snapshot_mode="never", heartbeat_interval_ms="50", table_include_list="public.captured")
    worker = Worker(props, MemoryOffsets())
    try:
        before_flush = db.confirmed_flush_lsn()
        db.sql("INSERT INTO noise VALUES (1)", "INSERT INTO noise VALUES (2)")
        end = db.one("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
        records = worker.poll_until(
            lambda rs: any(r.topic.startswith("__debezium") and r.source_offset["lsn_commit"] >= int(end) for r in rs)
        )
        assert all(r.topic == "__debezium-heartbeat.shop" for r in records)
        beat = records[-1]
        assert beat.key.get("serverName") == "shop" and beat.value.get("ts_ms") > 0
        worker.ack(records)
        deadline = time.monotonic() + 10
        while db.confirmed_flush_lsn() < int(end):
            assert time.monotonic() < deadline
            worker.task.poll()
        assert db.confirmed_flush_lsn() > before_flush
    finally:
        worker.stop()


def test_postgres_going_away_and_coming_back(tmp_path: Any) -> None:
    with TemporaryPostgres() as server:
        db = Database(server, "postgres")
        db.sql("CREATE TABLE t (id int PRIMARY KEY)")
        worker = Worker(db.props(snapshot_mode="never", retriable_restart_connector_wait_ms="50"), MemoryOffsets())
        try:
            db.sql("INSERT INTO t VALUES (1)")
            first = worker.poll_count(1)
            db.conn.close()
            server.stop(immediate=True)
            for _ in range(3):
                assert worker.task.poll() == []  # no failure while the server is away
            server.start()
            db = Database(server, "postgres")
            db.sql("INSERT INTO t VALUES (2)")
            rest = worker.poll_until(lambda rs: any(r.key.get("id") == 2 for r in rs), timeout=30)
        finally:
            worker.stop()
            db.conn.close()
    assert [r.key.get("id") for r in first + rest] == [1, 2]


def test_initial_only_and_a_filtered_publication(db: Database) -> None:
    db.sql(
        "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)",
        "INSERT INTO a VALUES (1)", "INSERT INTO b VALUES (2)",
    )
    props = db.props(snapshot_mode="initial_only")
    props.update({"table.include.list": "public\\.a", "publication.autocreate.mode": "filtered"})
    worker = Worker(props, MemoryOffsets())
    try:
        records = worker.poll_count(1)
        db.sql("INSERT INTO a VALUES (3)")
        later = [r for _ in range(5) for r in worker.task.poll() or []]
    finally:
        worker.stop()
    assert records[0].topic == "shop.public.a" and op(records[0]) == "r" and later == []
    assert db.one("SELECT string_agg(tablename, ',') FROM pg_publication_tables WHERE pubname = 'cdc_pub'") == "a"
    assert db.one("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", db.slot) == 0


def test_the_decoder_reads_the_servers_own_messages(db: Database) -> None:
    db.sql(
        "CREATE TABLE m (id int PRIMARY KEY, note text)",
        "ALTER TABLE m REPLICA IDENTITY FULL",
        "CREATE PUBLICATION raw_pub FOR TABLE m",
    )
    repl = psycopg2.connect(
        host=db.server.host, port=db.server.port, user=db.server.user, dbname=db.name,
        connection_factory=psycopg2.extras.LogicalReplicationConnection,
    )
    try:
        cur = repl.cursor()
        cur.create_replication_slot(db.slot, output_plugin="pgoutput")
        db.sql(
            "INSERT INTO m VALUES (1, NULL)",
            "BEGIN; UPDATE m SET note = 'n' WHERE id = 1; SELECT pg_logical_emit_message(true, 'zurau', 'hello'); COMMIT",
            "DELETE FROM m WHERE id = 1",
            "TRUNCATE m",
        )
        cur.start_replication(
            slot_name=db.slot, decode=False,
            options={"proto_version": "1", "publication_names": "raw_pub", "messages": "true"},
        )
        messages: list[Any] = []
        deadline = time.monotonic() + 10
        while not (any(isinstance(m, Truncate) for m in messages) and isinstance(messages[-1], Commit)):
            assert time.monotonic() < deadline, messages
            msg = cur.read_message()
            if msg is None:
                select.select([repl], [], [], 0.2)
                continue
            messages.append(decode_message(msg.payload))
    finally:
        repl.close()
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "Begin", "Relation", "Insert", "Commit",
        "Begin", "Update", "Message", "Commit",
        "Begin", "Delete", "Commit",
        "Begin", "Relation", "Truncate", "Commit",  # TRUNCATE invalidates the relation: sent again
    ]
    relation = next(m for m in messages if isinstance(m, Relation))
    assert (relation.namespace, relation.name, relation.replica_identity) == ("public", "m", "f")
    assert [c.name for c in relation.columns] == ["id", "note"]
    insert = next(m for m in messages if isinstance(m, Insert))
    update = next(m for m in messages if isinstance(m, Update))
    delete = next(m for m in messages if isinstance(m, Delete))
    message = next(m for m in messages if isinstance(m, Message))
    assert insert.new == ("1", None)
    assert (update.old_kind, update.old, update.new) == ("O", ("1", None), ("1", "n"))
    assert (delete.old_kind, delete.old) == ("O", ("1", "n"))
    assert (message.transactional, message.prefix, message.content) == (True, "zurau", b"hello")
    begins = [m for m in messages if isinstance(m, Begin)]
    commits = [m for m in messages if isinstance(m, Commit)]
    assert [b.final_lsn for b in begins] == [c.commit_lsn for c in commits]
    assert all(c.end_lsn > c.commit_lsn for c in commits) and len({b.xid for b in begins}) == 4


def test_a_missing_publication_with_autocreate_disabled_is_refused(db: Database) -> None:
    db.sql("CREATE TABLE t (id int PRIMARY KEY)")
    props = db.props(publication_name="absent_pub")
    props["publication.autocreate.mode"] = "disabled"
    with pytest.raises(ConnectException, match="publication 'absent_pub' does not exist and publication.autocreate.mode=disabled"):
        Worker(props, MemoryOffsets())
    assert db.one("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", db.slot) == 0
