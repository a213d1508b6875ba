"""Debezium's signals against a real PostgreSQL (the session's temporary server): incremental
snapshots started through the signaling table while updates, deletes and inserts stream
concurrently, through a Kafka topic, of one chosen table, stopped, paused and resumed, resumed after
a task restart from the offsets; a blocking snapshot; and the outbox event router on a real outbox
row compared with Debezium's documented message.

The tests drive the task as the Connect worker does (the :class:`Worker` of test_postgres_cdc).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.component.test_postgres_cdc import Database, MemoryOffsets, Worker, after, db, op  # noqa: F401
from zurau.connect.api import SourceRecord
from zurau.connect.converters import JsonConverter
from zurau.connect.outbox_event_router import EventRouter
from zurau.connect.postgres.incremental_snapshot import COLLECTIONS, PRIMARY_KEY, decode_key
from zurau.connect.postgres.signals import CHANNEL_OFFSET

SIGNAL_TABLE = "CREATE TABLE debezium_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)"


def send_signal(database: Database, type_: str, data: dict[str, Any] | None = None) -> None:
    with database.conn.cursor() as cur:
        cur.execute(
            "INSERT INTO debezium_signal VALUES (%s, %s, %s)",
            (str(uuid.uuid4()), type_, None if data is None else json.dumps(data)),
        )


def signal_props(database: Database, **overrides: str) -> dict[str, str]:
    settings = {
        "snapshot_mode": "no_data",
        "signal_data_collection": "public.debezium_signal",
        "incremental_snapshot_chunk_size": "25",
        **overrides,
    }
    return database.props(**settings)


def key_of(r: SourceRecord) -> int:
    return int(r.key.get("id"))


def reads(records: list[SourceRecord], topic: str) -> list[SourceRecord]:
    return [r for r in records if r.topic == topic and op(r) == "r"]


def table_state(database: Database, table: str) -> dict[int, dict[str, Any]]:
    with database.conn.cursor() as cur:
        cur.execute(f"SELECT id, v, note FROM {table}")
        return {row[0]: {"id": row[0], "v": row[1], "note": row[2]} for row in cur.fetchall()}


@pytest.fixture
def items(db: Database) -> Iterator[Database]:  # noqa: F811
    db.sql(
        SIGNAL_TABLE,
        "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL, note text)",
        "INSERT INTO items SELECT g, 0, 'row ' || g FROM generate_series(1, 300) g",
    )
    yield db


def test_incremental_snapshot_interleaves_with_concurrent_changes(items: Database) -> None:
    worker = Worker(signal_props(items), MemoryOffsets())
    writer_conn = psycopg2.connect(
        host=items.server.host, port=items.server.port, user=items.server.user, dbname=items.name
    )
    writer_conn.autocommit = True
    done = threading.Event()

    def write() -> None:  # one transaction per change, interleaved with the snapshot's chunks
        import random

        rng = random.Random(7)
        next_id = 1000
        with writer_conn.cursor() as cur:
            for _ in range(150):
                action = rng.random()
                if action < 0.65:
                    cur.execute("UPDATE items SET v = v + 1 WHERE id = %s", (rng.randint(1, 300),))
                elif action < 0.85:
                    cur.execute("DELETE FROM items WHERE id = %s", (rng.randint(1, 300),))
                else:
                    cur.execute("INSERT INTO items VALUES (%s, 0, 'new')", (next_id,))
                    next_id += 1
                time.sleep(0.004)
        done.set()

    try:
        send_signal(items, "execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"})
        writer = threading.Thread(target=write)
        writer.start()
        records = worker.poll_until(lambda rs: len(reads(rs, "shop.public.items")) > 0)
        writer.join()
        # Drain: the snapshot is over when a record's offset no longer carries its progress, and
        # everything written is streamed when the marker row's insert arrives.
        items.sql("CREATE TABLE marker (id int PRIMARY KEY)", "INSERT INTO marker VALUES (1)")
        records += worker.poll_until(
            lambda rs: (
                any(r.topic == "shop.public.marker" for r in rs)
                and COLLECTIONS not in (rs[-1].source_offset or {})
            ),
            timeout=60,
        )
    finally:
        worker.stop()
        writer_conn.close()
    topic = [r for r in records if r.topic == "shop.public.items"]
    snapshot_reads = reads(records, "shop.public.items")
    assert {r.value.get("source").get("snapshot") for r in snapshot_reads} == {"incremental"}
    assert all(r.value.get("before") is None for r in snapshot_reads)
    # Per key: the final state equals the table, and no snapshot read follows a newer change.
    state: dict[int, dict[str, Any]] = {}
    last_v: dict[int, int] = {}
    deleted: set[int] = set()
    for r in topic:
        if r.value is None:
            continue  # the tombstone after a delete
        key = key_of(r)
        if op(r) == "d":
            state.pop(key, None)
            deleted.add(key)
            continue
        row = after(r)
        if op(r) == "r":
            assert key not in deleted, f"snapshot read of {key} after its delete"
            assert row["v"] >= last_v.get(key, -1), (
                f"stale snapshot read of {key}: {row} after v={last_v[key]}"
            )
        state[key] = row
        last_v[key] = row["v"]
    assert state == table_state(items, "items")
    # Every row the writer did not touch came from the snapshot, once.
    untouched = [k for k in range(1, 301) if k not in {key_of(r) for r in topic if op(r) != "r"}]
    read_keys = [key_of(r) for r in snapshot_reads]
    assert set(untouched) <= set(read_keys) and len(read_keys) == len(set(read_keys))
    # The window markers went through the signaling table (captured too: no include list here).
    assert items.one("SELECT count(*) FROM debezium_signal WHERE type = 'snapshot-window-open'") >= 12


def test_ad_hoc_snapshots_of_chosen_tables_incremental_and_blocking(db: Database) -> None:  # noqa: F811
    db.sql(
        SIGNAL_TABLE,
        "CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL, note text)",
        "CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL, note text)",
        "INSERT INTO a SELECT g, 0, 'a' FROM generate_series(1, 40) g",
        "INSERT INTO b SELECT g, 0, 'b' FROM generate_series(1, 60) g",
    )
    worker = Worker(signal_props(db, table_include_list="public.a,public.b"), MemoryOffsets())
    try:
        send_signal(db, "log", {"message": "Signal message at offset {}"})
        send_signal(db, "execute-snapshot", {"data-collections": ["public.b"]})
        records = worker.poll_until(lambda rs: len({key_of(r) for r in reads(rs, "shop.public.b")}) == 60)
        assert reads(records, "shop.public.a") == []
        # A blocking snapshot of a with Debezium's additional condition (a whole SELECT).
        send_signal(
            db,
            "execute-snapshot",
            {
                "type": "blocking",
                "data-collections": ["public.a"],
                "additional-conditions": [
                    {"data-collection": "public.a", "filter": "SELECT * FROM public.a WHERE id > 30"}
                ],
            },
        )
        db.sql("UPDATE b SET v = 1 WHERE id = 1")
        blocking = worker.poll_until(lambda rs: any(r.topic == "shop.public.b" and op(r) == "u" for r in rs))
    finally:
        worker.stop()
    a_reads = reads(blocking, "shop.public.a")
    assert sorted(key_of(r) for r in a_reads) == list(range(31, 41))
    markers = [r.value.get("source").get("snapshot") for r in a_reads]
    assert markers[0] == "first" and markers[-1] == "last" and set(markers[1:-1]) <= {"true"}
    # Streaming paused for it: the update committed after the signal comes after the snapshot rows.
    assert blocking.index(a_reads[-1]) < next(i for i, r in enumerate(blocking) if op(r) == "u")
    assert a_reads[-1].source_offset["event_part"] == -1 and a_reads[0].source_offset["event_part"] == -2


def test_stop_pause_and_resume(db: Database) -> None:  # noqa: F811
    db.sql(
        SIGNAL_TABLE,
        "CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL, note text)",
        "CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL, note text)",
        "INSERT INTO a SELECT g, 0, 'a' FROM generate_series(1, 200) g",
        "INSERT INTO b SELECT g, 0, 'b' FROM generate_series(1, 30) g",
    )
    worker = Worker(signal_props(db, incremental_snapshot_chunk_size="10"), MemoryOffsets())
    try:
        send_signal(db, "execute-snapshot", {"data-collections": ["public.a", "public.b"]})
        records = worker.poll_until(lambda rs: len(reads(rs, "shop.public.a")) > 0)
        send_signal(db, "stop-snapshot", {"type": "INCREMENTAL", "data-collections": ["public.a"]})
        records += worker.poll_until(lambda rs: len({key_of(r) for r in reads(rs, "shop.public.b")}) == 30)
        stopped_a = len(reads(records, "shop.public.a"))
        assert 0 < stopped_a < 200  # a was stopped part way, b went on
        # Pause: at most the chunk in flight is emitted, then nothing until resume.
        send_signal(db, "execute-snapshot", {"data-collections": ["public.a"]})
        records = worker.poll_until(lambda rs: len(reads(rs, "shop.public.a")) > 0)
        send_signal(db, "pause-snapshot")
        db.sql("CREATE TABLE marker (id int PRIMARY KEY)", "INSERT INTO marker VALUES (1)")
        records += worker.poll_until(lambda rs: any(r.topic == "shop.public.marker" for r in rs))
        paused_at = len(reads(records, "shop.public.a"))
        counts = []
        for _ in range(2):  # the chunk read before the pause was seen may still close, then nothing
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                records += worker.task.poll() or []
            counts.append(len(reads(records, "shop.public.a")))
        assert counts[0] == counts[1] <= paused_at + 10 and counts[1] < 200
        send_signal(db, "resume-snapshot")
        records += worker.poll_until(
            lambda rs: len({key_of(r) for r in reads(records + rs, "shop.public.a")}) == 200
        )
    finally:
        worker.stop()


def test_restart_mid_snapshot_resumes_from_the_offsets(items: Database) -> None:
    offsets = MemoryOffsets()
    worker = Worker(signal_props(items, incremental_snapshot_chunk_size="20"), offsets)
    try:
        send_signal(items, "execute-snapshot", {"data-collections": ["public.items"]})
        first = worker.poll_until(lambda rs: len(reads(rs, "shop.public.items")) >= 60)
        worker.ack(first)  # Kafka has these, the worker flushed the last one's offset
    finally:
        worker.stop()
    stored = offsets.stored
    assert stored is not None and stored[COLLECTIONS] and stored[PRIMARY_KEY]
    resumed_after = int(decode_key(stored[PRIMARY_KEY])[0])
    first_keys = {key_of(r) for r in reads(first, "shop.public.items")}
    assert max(first_keys) >= resumed_after
    items.sql("UPDATE items SET v = 5 WHERE id = 300")
    worker = Worker(signal_props(items, incremental_snapshot_chunk_size="20"), offsets)
    try:
        second = worker.poll_until(
            lambda rs: (
                bool(reads(rs, "shop.public.items")) and COLLECTIONS not in (rs[-1].source_offset or {})
            )
        )
    finally:
        worker.stop()
    second_keys = [key_of(r) for r in reads(second, "shop.public.items")]
    # Resumed after the stored key, not from scratch; together the two runs cover every row.
    assert min(second_keys) == resumed_after + 1
    assert {k for k in first_keys if k <= resumed_after} | set(second_keys) == set(range(1, 301))
    assert after(reads(second, "shop.public.items")[-1]) == {"id": 300, "v": 5, "note": "row 300"}


def test_kafka_signal_channel(zurau_broker: Any, items: Database) -> None:
    topic = f"sig-{uuid.uuid4().hex[:6]}"
    bootstrap = zurau_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        topic,
        key=b"someone-else",
        value=b'{"type":"execute-snapshot","data":{"data-collections":["public.items"]}}',
    )
    producer.produce(
        topic,
        key=b"shop",
        value=json.dumps(
            {
                "type": "execute-snapshot",
                "data": {
                    "data-collections": ["public.items"],
                    "type": "INCREMENTAL",
                    "additional-conditions": [{"data-collection": "public.items", "filter": "id <= 100"}],
                },
            }
        ).encode(),
    )
    producer.flush(10)
    offsets = MemoryOffsets()
    props = signal_props(
        items,
        signal_enabled_channels="source,kafka",
        signal_kafka_topic=topic,
        signal_kafka_bootstrap_servers=bootstrap,
    )
    worker = Worker(props, offsets)
    try:
        records = worker.poll_until(
            lambda rs: len({key_of(r) for r in reads(rs, "shop.public.items")}) == 100, timeout=30
        )
        worker.ack(records)
    finally:
        worker.stop()
    assert sorted(key_of(r) for r in reads(records, "shop.public.items")) == list(range(1, 101))
    assert offsets.stored is not None and offsets.stored[CHANNEL_OFFSET] == 1
    # After a restart the signal already handled is not run again.
    worker = Worker(props, offsets)
    try:
        items.sql("UPDATE items SET v = 9 WHERE id = 7")
        again = worker.poll_until(lambda rs: any(op(r) == "u" for r in rs))
    finally:
        worker.stop()
    assert reads(again, "shop.public.items") == []


def test_outbox_router_on_a_real_outbox_row(db: Database) -> None:  # noqa: F811
    """The outbox table of Debezium's documentation ("Basic outbox table") and its example event."""
    db.sql(
        "CREATE TABLE outboxevent (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL, "
        "aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb)"
    )
    payload = {
        "id": 1,
        "lineItems": [
            {"id": 1, "item": "Debezium in Action", "status": "ENTERED", "quantity": 2, "totalPrice": 39.98},
            {
                "id": 2,
                "item": "Debezium for Dummies",
                "status": "ENTERED",
                "quantity": 1,
                "totalPrice": 29.99,
            },
        ],
        "orderDate": "2019-01-31T12:13:01",
        "customerId": 123,
    }
    worker = Worker(
        db.props(snapshot_mode="no_data", table_include_list="public.outboxevent"), MemoryOffsets()
    )
    try:
        with db.conn.cursor() as cur:
            cur.execute(
                "INSERT INTO outboxevent VALUES ('406c07f3-26f0-4eea-a50c-109940064b8f', 'Order', '1', "
                "'OrderCreated', %s)",
                (json.dumps(payload),),
            )
            cur.execute("UPDATE outboxevent SET type = 'x'")
            cur.execute("DELETE FROM outboxevent")
        raw = worker.poll_until(lambda rs: any(r.value is None for r in rs))
    finally:
        worker.stop()
    plain, expanding = EventRouter(), EventRouter()
    plain.configure({})
    expanding.configure(
        {"table.expand.json.payload": "true", "table.fields.additional.placement": "type:header:eventType"}
    )
    routed = [out for r in raw if (out := plain.apply(r)) is not None]
    assert len(routed) == 1  # the update, the delete and its tombstone are not routed
    message = routed[0]
    assert message.topic == "outbox.event.Order"
    assert message.key == "1"
    assert message.headers == (("id", "406c07f3-26f0-4eea-a50c-109940064b8f"),)
    assert message.timestamp == raw[0].value.get("ts_ms")
    assert json.loads(message.value) == payload  # jsonb's text, the JSON of the documented example
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key=False)
    expanded = expanding.apply(raw[0])
    assert expanded is not None and expanded.headers[-1] == ("eventType", "OrderCreated")
    assert (
        json.loads(converter.from_connect_data(expanded.topic, expanded.value_schema, expanded.value))
        == payload
    )
