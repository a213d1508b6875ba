"""The change-data-capture pipeline: PostgreSQL -> Debezium change events in Kafka -> Spark ->
per-customer totals in PostgreSQL and Parquet, checked against PostgreSQL itself.

1. **PostgreSQL**: a temporary instance with ``wal_level=logical`` started from the installed
   binaries (:class:`zurau.testing.postgres.TemporaryPostgres`), or any server given by DSN that
   has logical replication on. The run owns one schema, ``zurau_cdc_<run>``: a table ``orders
   (id bigint primary key, customer_id int, amount numeric(12,2), status text)`` with REPLICA
   IDENTITY FULL (updates and deletes carry their whole before-image) and ``customer_totals``,
   Spark's output. ``seed`` orders exist before the connector starts: they arrive as snapshot
   reads (``op: r``).
2. **CDC**: the PostgreSQL source connector, configured exactly as Debezium's
   (``connector.class=io.debezium.connector.postgresql.PostgresConnector``, pgoutput, a slot and
   a filtered publication of its own, ``decimal.handling.mode=string``, JSON without schemas),
   posted to a Connect worker's REST API (an embedded worker unless a URL is given). Its topic is
   ``<prefix>.<schema>.orders``; every delete is followed by a tombstone.
3. **Workload**: ``transactions`` transactions of 1-4 statements each (inserts, amount updates,
   customer moves, deletes) while the Spark query runs, at ``rate`` transactions/s; every ``abort_every``-th is
   rolled back (its rows carry ``status='aborted'``, and no event of it may appear). A last
   transaction inserts the ``status='final'`` order that marks the end.
4. **Spark**: the ``zurau`` source reads the topic; each change becomes signed deltas per customer
   (minus the before-image, plus the after-image: ``u`` and ``d`` take back, ``c``, ``u`` and ``r``
   add), summed per customer in a streaming aggregation. Every micro-batch writes the complete
   totals with ``foreachBatch``: upserted into ``customer_totals`` in one PostgreSQL transaction
   (customers left without orders deleted) and over the Parquet table. Deltas commute, so the
   totals do not depend on the order events arrive in across partitions, and rewriting whole
   totals makes a replayed batch harmless.
5. **End and checks**: once the ``final`` event is in Kafka and Spark's progress has passed the
   topic's end, the run compares ``customer_totals`` and the Parquet table with ``SELECT
   customer_id, sum(amount), count(*) FROM orders GROUP BY customer_id``, and the events in Kafka
   with what the workload committed: one ``c``/``u``/``d`` per committed statement, one ``r`` per
   seeded order, a tombstone per delete, nothing from aborted transactions.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from zurau.pipelines.telemetry import create_topics, end_offsets, wait_for_queries

log = logging.getLogger("zurau.pipelines.cdc")

TOPIC_PREFIX = "zurau-cdc"


@dataclass
class CdcConfig:
    """Knobs of one run (the CLI's options)."""

    transactions: int = 400
    customers: int = 20
    seed: int = 50
    rate: float = 200.0  # transactions per second (0: as fast as PostgreSQL takes them)
    abort_every: int = 10
    partitions: int = 3
    trigger_seconds: float = 1.0
    timeout_s: float = 300.0
    random_seed: int = 7


@dataclass
class Workload:
    """What the workload committed, to check the change events against."""

    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    aborted_transactions: int = 0
    committed_transactions: int = 0
    seconds: float = 0.0


@dataclass
class Summary:
    schema: str
    topic: str
    seeded: int
    workload: Workload
    events: Counter[str] = field(default_factory=Counter)
    tombstones: int = 0
    aborted_seen: int = 0
    customers_in_postgres: int = 0
    totals_rows: int = 0
    parquet_rows: int = 0
    totals_match: bool = False
    parquet_matches: bool = False
    seconds: float = 0.0
    parquet_path: str = ""
    kept: bool = False

    @property
    def checks(self) -> dict[str, bool]:
        w = self.workload
        return {
            "every committed change captured once": (
                self.events["c"] == w.inserts and self.events["u"] == w.updates and self.events["d"] == w.deletes
            ),
            "one snapshot read per seeded order": self.events["r"] == self.seeded,
            "a tombstone after every delete": self.tombstones == w.deletes,
            "nothing from rolled-back transactions": self.aborted_seen == 0,
            "customer_totals equals SQL over orders": self.totals_match,
            "Parquet table equals SQL over orders": self.parquet_matches,
        }

    @property
    def ok(self) -> bool:
        return all(self.checks.values())


# --------------------------------------------------------------------------- PostgreSQL
def _connect(dsn: str) -> Any:
    import psycopg2

    conn = psycopg2.connect(dsn)
    conn.autocommit = False
    return conn


def check_logical_replication(dsn: str) -> None:
    """RuntimeError with the fix when the server cannot stream logical replication."""
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW wal_level")
            level = cur.fetchone()[0]
        conn.rollback()
    finally:
        conn.close()
    if level != "logical":
        raise RuntimeError(
            f"PostgreSQL has wal_level={level}; change data capture needs wal_level=logical "
            "(ALTER SYSTEM SET wal_level = logical, then restart the server)"
        )


def create_tables(dsn: str, schema: str) -> None:
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE SCHEMA {schema}")
            cur.execute(
                f"CREATE TABLE {schema}.orders (id bigint PRIMARY KEY, customer_id int NOT NULL, "
                "amount numeric(12,2) NOT NULL, status text NOT NULL)"
            )
            cur.execute(f"ALTER TABLE {schema}.orders REPLICA IDENTITY FULL")
            cur.execute(
                f"CREATE TABLE {schema}.customer_totals (customer_id int PRIMARY KEY, "
                "total numeric(14,2) NOT NULL, orders bigint NOT NULL)"
            )
        conn.commit()
    finally:
        conn.close()


def drop_schema(dsn: str, schema: str) -> None:
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.commit()
    finally:
        conn.close()


def sql_totals(dsn: str, schema: str) -> dict[int, tuple[Decimal, int]]:
    """The truth: per-customer sum and count over the source table."""
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT customer_id, sum(amount), count(*) FROM {schema}.orders GROUP BY customer_id")
            rows = {int(c): (Decimal(t), int(n)) for c, t, n in cur.fetchall()}
        conn.rollback()
        return rows
    finally:
        conn.close()


def table_totals(dsn: str, schema: str) -> dict[int, tuple[Decimal, int]]:
    """What Spark wrote to ``customer_totals``."""
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT customer_id, total, orders FROM {schema}.customer_totals")
            rows = {int(c): (Decimal(t), int(n)) for c, t, n in cur.fetchall()}
        conn.rollback()
        return rows
    finally:
        conn.close()


def write_totals(dsn: str, schema: str, rows: list[tuple[int, Decimal, int]]) -> None:
    """Make ``customer_totals`` hold ``rows`` (complete totals) in one transaction: upsert those
    with orders, delete customers left without any."""
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            live = [(c, t, n) for c, t, n in rows if n > 0]
            gone = [c for c, _t, n in rows if n <= 0]
            if live:
                cur.executemany(
                    f"INSERT INTO {schema}.customer_totals (customer_id, total, orders) VALUES (%s, %s, %s) "
                    "ON CONFLICT (customer_id) DO UPDATE SET total = EXCLUDED.total, orders = EXCLUDED.orders",
                    live,
                )
            if gone:
                cur.execute(f"DELETE FROM {schema}.customer_totals WHERE customer_id = ANY(%s)", (gone,))
        conn.commit()
    finally:
        conn.close()


def seed_orders(dsn: str, schema: str, cfg: CdcConfig, rng: random.Random) -> list[int]:
    """``cfg.seed`` orders written before the connector starts (they arrive as snapshot reads)."""
    ids = list(range(1, cfg.seed + 1))
    conn = _connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {schema}.orders (id, customer_id, amount, status) VALUES (%s, %s, %s, 'new')",
                [(i, rng.randrange(cfg.customers), _amount(rng)) for i in ids],
            )
        conn.commit()
    finally:
        conn.close()
    return ids


def _amount(rng: random.Random) -> Decimal:
    return Decimal(rng.randrange(100, 100_000)) / 100


def run_workload(dsn: str, schema: str, cfg: CdcConfig, existing: list[int], rng: random.Random) -> Workload:
    """The transactions of step 3, then the ``final`` marker order."""
    w = Workload()
    live = list(existing)
    next_id = max(existing, default=0) + 1
    conn = _connect(dsn)
    t0 = time.monotonic()
    try:
        with conn.cursor() as cur:
            for n in range(1, cfg.transactions + 1):
                abort = cfg.abort_every > 0 and n % cfg.abort_every == 0
                counts = Counter[str]()
                added: list[int] = []
                removed: list[int] = []
                for _ in range(rng.randint(1, 4)):
                    kind = rng.choices(("insert", "update", "move", "delete"), (4, 3, 1, 2))[0]
                    candidates = [i for i in live if i not in removed]
                    if kind != "insert" and not candidates:
                        kind = "insert"
                    if kind == "insert":
                        status = "aborted" if abort else "new"
                        cur.execute(
                            f"INSERT INTO {schema}.orders (id, customer_id, amount, status) VALUES (%s, %s, %s, %s)",
                            (next_id, rng.randrange(cfg.customers), _amount(rng), status),
                        )
                        added.append(next_id)
                        next_id += 1
                        counts["c"] += 1
                    elif kind == "update":
                        cur.execute(
                            f"UPDATE {schema}.orders SET amount = %s, status = %s WHERE id = %s",
                            (_amount(rng), "aborted" if abort else "paid", rng.choice(candidates)),
                        )
                        counts["u"] += 1
                    elif kind == "move":
                        cur.execute(
                            f"UPDATE {schema}.orders SET customer_id = %s, status = %s WHERE id = %s",
                            (rng.randrange(cfg.customers), "aborted" if abort else "moved", rng.choice(candidates)),
                        )
                        counts["u"] += 1
                    else:
                        victim = rng.choice(candidates)
                        if abort:  # so that an event of it, were one to leak, would show
                            cur.execute(f"UPDATE {schema}.orders SET status = 'aborted' WHERE id = %s", (victim,))
                        cur.execute(f"DELETE FROM {schema}.orders WHERE id = %s", (victim,))
                        removed.append(victim)
                        counts["d"] += 1
                if abort:
                    conn.rollback()  # its ids stay used: no later insert reuses them
                    w.aborted_transactions += 1
                else:
                    conn.commit()
                    live = [i for i in live if i not in removed] + [i for i in added if i not in removed]
                    w.inserts += counts["c"]
                    w.updates += counts["u"]
                    w.deletes += counts["d"]
                    w.committed_transactions += 1
                if cfg.rate > 0:
                    behind = n / cfg.rate - (time.monotonic() - t0)
                    if behind > 0:
                        time.sleep(behind)
            cur.execute(
                f"INSERT INTO {schema}.orders (id, customer_id, amount, status) VALUES (%s, 0, 0, 'final')",
                (next_id,),
            )
            conn.commit()
            w.inserts += 1
            w.committed_transactions += 1
    finally:
        conn.close()
    w.seconds = time.monotonic() - t0
    return w


# --------------------------------------------------------------------------- Connect
def _http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw) if raw else None
        except ValueError:
            return e.code, raw.decode(errors="replace")


def connector_config(dsn: str, schema: str, name: str) -> dict[str, str]:
    """Debezium's own PostgreSQL connector configuration for the run's ``orders`` table."""
    from psycopg2.extensions import parse_dsn

    p = parse_dsn(dsn)
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": p.get("host", "127.0.0.1"),
        "database.port": str(p.get("port", 5432)),
        "database.user": p.get("user", "postgres"),
        "database.password": p.get("password", ""),
        "database.dbname": p.get("dbname", "postgres"),
        "topic.prefix": TOPIC_PREFIX,
        "plugin.name": "pgoutput",
        "slot.name": name.replace("-", "_"),
        "slot.drop.on.stop": "true",
        "publication.name": f"{name.replace('-', '_')}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": f"{schema}.orders",
        "snapshot.mode": "initial",
        "decimal.handling.mode": "string",
        "tombstones.on.delete": "true",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "tasks.max": "1",
    }


def start_connector(connect_url: str, name: str, config: dict[str, str], timeout_s: float = 60) -> None:
    """Create the connector and wait until its task is RUNNING (RuntimeError with the trace if it
    FAILED)."""
    status, body = _http("POST", f"{connect_url}/connectors", {"name": name, "config": config})
    if status not in (200, 201):
        raise RuntimeError(f"Connect refused the CDC connector ({status}): {body}")
    deadline = time.monotonic() + timeout_s
    while True:
        status, body = _http("GET", f"{connect_url}/connectors/{name}/status")
        if status == 200 and isinstance(body, dict):
            states = [body["connector"]["state"]] + [t["state"] for t in body.get("tasks", [])]
            failed = [t for t in body.get("tasks", []) if t["state"] == "FAILED"]
            if failed or body["connector"]["state"] == "FAILED":
                trace = (failed[0] if failed else body["connector"]).get("trace", "")
                raise RuntimeError(f"the CDC connector failed: {trace.strip().splitlines()[-1] if trace else body}")
            if body.get("tasks") and all(s == "RUNNING" for s in states):
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the CDC connector is not RUNNING after {timeout_s:.0f} s: {body}")
        time.sleep(0.3)


def delete_connector(connect_url: str, name: str) -> None:
    _http("DELETE", f"{connect_url}/connectors/{name}")


# --------------------------------------------------------------------------- Kafka
def read_events(bootstrap: str, topic: str, start: dict[str, dict[str, int]], stop_at_final: bool = True,
                timeout_s: float = 120.0) -> tuple[list[dict[str, Any] | None], bool]:
    """Every change event of ``topic`` from ``start`` on, in partition order (``None`` for a
    tombstone), until the ``final`` order's event arrived and the topic's end was reached; the
    second value says whether ``final`` was seen."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"zurau-cdc-check-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "log_level": 3})
    events: list[dict[str, Any] | None] = []
    final = False
    try:
        c.assign([TopicPartition(topic, int(p), o) for p, o in start[topic].items()])
        deadline = time.monotonic() + timeout_s
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            msgs = c.consume(500, 0.5)
            for m in msgs:
                if m.error() is not None:
                    continue
                value = m.value()
                event = json.loads(value) if value is not None else None
                events.append(event)
                if event is not None and (event.get("after") or {}).get("status") == "final":
                    final = True
            if msgs:
                quiet_since = time.monotonic()
            elif (final or not stop_at_final) and time.monotonic() - quiet_since > 1.0:
                break
    finally:
        c.close()
    return events, final


# --------------------------------------------------------------------------- Spark
def build_query(spark: Any, bootstrap: str, topic: str, start: dict[str, Any], dsn: str, schema: str,
                parquet: Path, checkpoint: Path, trigger_seconds: float) -> Any:
    """The streaming query of step 4."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    row = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("customer_id", T.IntegerType()),
            T.StructField("amount", T.StringType()),  # decimal.handling.mode=string: exact
            T.StructField("status", T.StringType()),
        ]
    )
    envelope = T.StructType(
        [T.StructField("before", row), T.StructField("after", row), T.StructField("op", T.StringType())]
    )
    money = T.DecimalType(14, 2)
    events = (
        spark.readStream.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps(start))
        .load()
        .where(F.col("value").isNotNull())  # tombstones
        .select(F.from_json(F.col("value").cast("string"), envelope).alias("e"))
        .select("e.*")
    )
    take_back = F.when(
        F.col("op").isin("u", "d") & F.col("before").isNotNull(),
        F.struct(
            F.col("before.customer_id").alias("customer_id"),
            (-F.col("before.amount").cast(money)).alias("amount"),
            F.lit(-1).alias("orders"),
        ),
    )
    add = F.when(
        F.col("op").isin("c", "u", "r") & F.col("after").isNotNull(),
        F.struct(
            F.col("after.customer_id").alias("customer_id"),
            F.col("after.amount").cast(money).alias("amount"),
            F.lit(1).alias("orders"),
        ),
    )
    totals = (
        events.select(F.explode(F.array(take_back, add)).alias("d"))
        .where(F.col("d").isNotNull())
        .select("d.*")
        .groupBy("customer_id")
        .agg(F.sum("amount").cast(money).alias("total"), F.sum("orders").alias("orders"))
    )

    def write(batch: Any, _batch_id: int) -> None:
        rows = [(int(r.customer_id), Decimal(r.total), int(r.orders)) for r in batch.collect()]
        write_totals(dsn, schema, rows)
        batch.where(F.col("orders") > 0).coalesce(1).write.mode("overwrite").parquet(str(parquet))

    return (
        totals.writeStream.queryName("cdc_customer_totals")
        .outputMode("complete")
        .foreachBatch(write)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=f"{trigger_seconds} seconds")
        .start()
    )


def _progressed_past(query: Any, end: dict[str, dict[str, int]]) -> bool:
    """Whether a completed micro-batch of ``query`` read up to ``end`` in every partition."""
    progress = query.lastProgress
    if not progress or not progress.get("sources"):
        return False
    reached = progress["sources"][0].get("endOffset")
    if isinstance(reached, str):
        reached = json.loads(reached)
    if not isinstance(reached, dict):
        return False
    for topic, parts in end.items():
        for p, offset in parts.items():
            if int((reached.get(topic) or {}).get(p, -1)) < offset:
                return False
    return True


# --------------------------------------------------------------------------- the run
def run(
    bootstrap: str | None = None,
    cfg: CdcConfig | None = None,
    output: Path | None = None,
    postgres_dsn: str | None = None,
    connect_url: str | None = None,
    spark: Any = None,
    master: str | None = None,
    progress: Callable[[str], None] = lambda _msg: None,
) -> Summary:
    """Run the whole pipeline once (see the module docstring) and return its checked summary.

    ``bootstrap``, ``postgres_dsn`` and ``connect_url`` default to an embedded broker, a temporary
    PostgreSQL and an embedded Connect worker; ``spark`` reuses a session with ``zurau``
    registered, else one starts on ``master`` (default spark-submit's, else ``local[2]``).
    ``output`` keeps the Parquet table and checkpoint.
    """
    cfg = cfg or CdcConfig()
    rng = random.Random(cfg.random_seed)
    t_start = time.monotonic()
    run_id = uuid.uuid4().hex[:8]
    schema = f"zurau_cdc_{run_id}"
    topic = f"{TOPIC_PREFIX}.{schema}.orders"
    name = f"zurau-cdc-{run_id}"
    with ExitStack() as stack:
        if postgres_dsn is None:
            from zurau.testing.postgres import TemporaryPostgres

            pg = stack.enter_context(TemporaryPostgres())
            postgres_dsn = pg.dsn
            progress(f"temporary PostgreSQL (wal_level=logical) on {pg.host}:{pg.port}")
        check_logical_replication(postgres_dsn)
        if bootstrap is None:
            from zurau.embedded import EmbeddedBroker

            broker = stack.enter_context(EmbeddedBroker(num_partitions=cfg.partitions))
            bootstrap = broker.bootstrap_servers
            progress(f"embedded broker on {bootstrap}")
        if connect_url is None:
            from zurau.connect.embedded_connect import EmbeddedConnect

            connect = stack.enter_context(EmbeddedConnect(bootstrap, offset_flush_interval_ms=1000))
            connect_url = connect.url
            progress(f"embedded Connect worker on {connect_url}")
        workdir = output if output is not None else Path(tempfile.mkdtemp(prefix="zurau-cdc-"))
        if output is None:
            stack.callback(shutil.rmtree, workdir, True)
        run_dir = workdir / f"run-{run_id}"
        run_dir.mkdir(parents=True, exist_ok=True)

        create_tables(postgres_dsn, schema)
        stack.callback(drop_schema, postgres_dsn, schema)
        seeded = seed_orders(postgres_dsn, schema, cfg, rng)
        create_topic(bootstrap, topic, cfg.partitions)
        start = end_offsets(bootstrap, topic)
        start_connector(connect_url, name, connector_config(postgres_dsn, schema, name))
        stack.callback(delete_connector, connect_url, name)
        progress(f"CDC connector {name} running: {schema}.orders -> {topic}")

        if spark is None:
            from zurau.spark import spark_session

            spark = spark_session("zurau-cdc", master)
            stack.callback(spark.stop)
        progress(f"Spark on {spark.sparkContext.master}")
        parquet = run_dir / "customer_totals.parquet"
        query = build_query(
            spark, bootstrap, topic, start, postgres_dsn, schema, parquet, run_dir / "checkpoint", cfg.trigger_seconds
        )
        try:
            progress(f"workload: {cfg.transactions} transactions over {cfg.customers} customers")
            workload = run_workload(postgres_dsn, schema, cfg, seeded, rng)
            progress(
                f"workload committed {workload.committed_transactions} and rolled back "
                f"{workload.aborted_transactions} transactions in {workload.seconds:.1f} s; waiting for CDC and Spark"
            )
            events, final = read_events(bootstrap, topic, start, timeout_s=cfg.timeout_s)
            if not final:
                raise TimeoutError("the final order's change event did not reach Kafka")
            end = end_offsets(bootstrap, topic)
            wait_for_queries([query], lambda: _progressed_past(query, end), cfg.timeout_s)
        finally:
            query.stop()

        summary = Summary(schema=schema, topic=topic, seeded=len(seeded), workload=workload)
        for e in events:
            if e is None:
                summary.tombstones += 1
                continue
            summary.events[e.get("op", "?")] += 1
            images = (e.get("before") or {}, e.get("after") or {})
            if any(img.get("status") == "aborted" for img in images):
                summary.aborted_seen += 1
        truth = sql_totals(postgres_dsn, schema)
        written = table_totals(postgres_dsn, schema)
        summary.customers_in_postgres = len(truth)
        summary.totals_rows = len(written)
        summary.totals_match = written == truth
        if parquet.exists():
            from_parquet = {
                int(r.customer_id): (Decimal(r.total), int(r.orders)) for r in spark.read.parquet(str(parquet)).collect()
            }
            summary.parquet_rows = len(from_parquet)
            summary.parquet_matches = from_parquet == truth
        summary.parquet_path = str(parquet)
        summary.kept = output is not None
        summary.seconds = time.monotonic() - t_start
        return summary


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` (an existing one is fine)."""
    create_topics(bootstrap, [topic], partitions)


def format_summary(summary: Summary) -> str:
    """The run's summary as text (a table, then one line per check)."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    console = Console(file=buf, width=110, force_terminal=False)
    w = summary.workload
    t = Table(title=f"CDC pipeline: {summary.schema}.orders -> {summary.topic} ({summary.seconds:.0f} s)")
    t.add_column("")
    t.add_column("", justify="right")
    t.add_row("orders seeded before the connector (snapshot reads)", f"{summary.seeded:,}")
    t.add_row("transactions committed / rolled back", f"{w.committed_transactions:,} / {w.aborted_transactions:,}")
    t.add_row("inserts / updates / deletes committed", f"{w.inserts:,} / {w.updates:,} / {w.deletes:,}")
    ev = summary.events
    t.add_row("events r / c / u / d in Kafka", f"{ev['r']:,} / {ev['c']:,} / {ev['u']:,} / {ev['d']:,}")
    t.add_row("tombstones", f"{summary.tombstones:,}")
    t.add_row("customers with orders (SQL)", f"{summary.customers_in_postgres:,}")
    t.add_row("rows in customer_totals / Parquet", f"{summary.totals_rows:,} / {summary.parquet_rows:,}")
    console.print(t)
    for check, ok in summary.checks.items():
        console.print(f"{'ok' if ok else 'FAILED':<7} {check}", markup=False)
    if summary.kept:
        console.print(f"Parquet table: {summary.parquet_path}", markup=False)
    return buf.getvalue()
