"""Change data capture: how fast committed PostgreSQL changes reach Kafka and a Spark result.

    .venv/bin/python -m bench.cdc [--transactions 3000] [--brokers zurau,tansu] [--no-spark]

Per broker (Zurau and Tansu, each a process on 127.0.0.1), with one temporary PostgreSQL
(``wal_level=logical``) and an embedded Connect worker in this process:

1. a fresh schema with the CDC pipeline's ``orders`` table (:mod:`zurau.pipelines.cdc`) holding
   one warm-up order, the PostgreSQL source connector started on it (it snapshots that order),
   and a Spark query (local[2], one session for all brokers) that reads the change topic with the
   ``zurau`` source and, in ``foreachBatch``, notes for every event the time from its commit to
   the end of the batch that processed it; measuring starts once that query has processed the
   warm-up order (its start-up is not a change's latency);
2. the pipeline's workload, unthrottled: ``--transactions`` transactions of 1-4 statements
   (none rolled back), then the ``final`` order.

Reported per broker: changes per second from the first commit until the ``final`` event is in
Kafka (throughput of the connector and broker; the workload's own commit rate beside it), the
latency from commit (Debezium's ``source.ts_ms``, the transaction's commit time) to the record's
Kafka timestamp (the connector's produce time), and from commit to the Spark batch that processed
it, p50 and p99; then Zurau against Tansu as ratios. Commit times are PostgreSQL's clock and the
others this machine's: the same clock here.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench._brokers import BROKERS
from bench._provenance import provenance_line
from zurau.pipelines.cdc import (
    TOPIC_PREFIX,
    CdcConfig,
    connector_config,
    create_tables,
    create_topic,
    delete_connector,
    drop_schema,
    run_workload,
    seed_orders,
    start_connector,
)
from zurau.pipelines.telemetry import end_offsets


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class SparkLatencyProbe:
    """A streaming query noting, per change event, ms from its commit to the end of its batch."""

    def __init__(self, spark: Any, bootstrap: str, topic: str, start: dict[str, Any], checkpoint: Path) -> None:
        from pyspark.sql import functions as F

        self.latencies_ms: list[float] = []
        self._lock = threading.Lock()
        events = (
            spark.readStream.format("zurau")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", json.dumps(start))
            .load()
            .where(F.col("value").isNotNull())
            .select(F.get_json_object(F.col("value").cast("string"), "$.source.ts_ms").cast("long").alias("ts"))
        )

        def note(batch: Any, _batch_id: int) -> None:
            commits = [r.ts for r in batch.collect() if r.ts is not None]
            done = time.time() * 1000
            with self._lock:
                self.latencies_ms.extend(done - ts for ts in commits)

        self.query = (
            events.writeStream.foreachBatch(note)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )

    def count(self) -> int:
        with self._lock:
            return len(self.latencies_ms)

    def reset(self) -> None:
        with self._lock:
            self.latencies_ms.clear()


def read_until_final(bootstrap: str, topic: str, start: dict[str, dict[str, int]], timeout_s: float) -> tuple[
    list[float], float, int
]:
    """(commit-to-Kafka latencies in ms, wall time the final event was read, events read)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-cdc-{uuid.uuid4().hex[:6]}", "log_level": 3})
    latencies: list[float] = []
    seen = 0
    try:
        c.assign([TopicPartition(topic, int(p), o) for p, o in start[topic].items()])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for m in c.consume(1000, 0.2):
                if m.error() is not None or m.value() is None:
                    continue
                event = json.loads(m.value())
                if event.get("op") == "r":  # the warm-up order's snapshot read
                    continue
                seen += 1
                latencies.append(m.timestamp()[1] - event["source"]["ts_ms"])
                if (event.get("after") or {}).get("status") == "final":
                    return latencies, time.time(), seen
        raise TimeoutError(f"the final event did not arrive within {timeout_s:.0f} s ({seen} events read)")
    finally:
        c.close()


def measure(broker_name: str, args: argparse.Namespace, pg_dsn: str, spark: Any, workdir: Path) -> dict[str, float]:
    from zurau.connect.embedded_connect import EmbeddedConnect

    broker = BROKERS[broker_name](workdir)
    broker.start()
    schema = f"bench_cdc_{uuid.uuid4().hex[:8]}"
    topic = f"{TOPIC_PREFIX}.{schema}.orders"
    name = f"bench-cdc-{uuid.uuid4().hex[:6]}"
    cfg = CdcConfig(transactions=args.transactions, customers=50, seed=1, rate=0, abort_every=0)
    probe: SparkLatencyProbe | None = None
    try:
        with EmbeddedConnect(broker.bootstrap_servers, offset_flush_interval_ms=1000) as connect:
            create_tables(pg_dsn, schema)
            seeded = seed_orders(pg_dsn, schema, cfg, random.Random(0))  # one warm-up order
            create_topic(broker.bootstrap_servers, topic, args.partitions)
            start = end_offsets(broker.bootstrap_servers, topic)
            start_connector(connect.url, name, connector_config(pg_dsn, schema, name))
            if spark is not None:
                probe = SparkLatencyProbe(spark, broker.bootstrap_servers, topic, start, workdir / f"ckpt-{name}")
                # Its first batch (query start-up, Python workers) runs on the warm-up order's
                # snapshot read, before any measured change.
                deadline = time.monotonic() + 120
                while probe.count() < 1:
                    if probe.query.exception() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the Spark probe did not start: {probe.query.exception()}")
                    time.sleep(0.1)
                probe.reset()
            t0 = time.time()
            workload = run_workload(pg_dsn, schema, cfg, seeded, random.Random(1))
            kafka_latencies, final_at, events = read_until_final(broker.bootstrap_servers, topic, start, 600)
            changes = workload.inserts + workload.updates + workload.deletes
            result = {
                "changes": float(changes),
                "events": float(events),
                "pg_changes_per_s": changes / workload.seconds,
                "changes_per_s": changes / (final_at - t0),
                "kafka_p50": _quantile(kafka_latencies, 0.5),
                "kafka_p99": _quantile(kafka_latencies, 0.99),
            }
            if probe is not None:
                deadline = time.monotonic() + 300
                while probe.count() < events and time.monotonic() < deadline:
                    if probe.query.exception() is not None:
                        raise RuntimeError(f"the Spark probe failed: {probe.query.exception()}")
                    time.sleep(0.2)
                result["spark_p50"] = _quantile(probe.latencies_ms, 0.5)
                result["spark_p99"] = _quantile(probe.latencies_ms, 0.99)
            delete_connector(connect.url, name)
    finally:
        if probe is not None:
            probe.query.stop()
        drop_schema(pg_dsn, schema)
        broker.stop()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transactions", type=int, default=3000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--brokers", default="zurau,tansu")
    ap.add_argument("--no-spark", action="store_true", help="skip the commit-to-Spark latency")
    args = ap.parse_args()

    from zurau.testing.postgres import TemporaryPostgres

    workdir = Path(tempfile.mkdtemp(prefix="bench-cdc-"))
    spark = None
    results: dict[str, dict[str, float]] = {}
    try:
        with TemporaryPostgres() as pg:
            if not args.no_spark:
                from zurau.spark import local_session

                spark = local_session("bench-cdc")
            for name in args.brokers.split(","):
                print(f"measuring {name} ...", flush=True)
                results[name] = measure(name, args, pg.dsn, spark, workdir)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\nCDC, {args.transactions} transactions of 1-4 statements, unthrottled; {args.partitions} partitions")
    import psycopg2
    import pyspark

    print(f"{provenance_line(clients=['confluent_kafka'])} PySpark {pyspark.__version__}, psycopg2 {psycopg2.__version__.split()[0]}.")
    print()
    cols = "| Broker | changes | PostgreSQL changes/s | CDC changes/s | commit->Kafka p50 / p99 ms | commit->Spark p50 / p99 ms |"
    print(cols)
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        spark_col = f"{r['spark_p50']:.0f} / {r['spark_p99']:.0f}" if "spark_p50" in r else "-"
        print(
            f"| {name} | {r['changes']:.0f} | {r['pg_changes_per_s']:,.0f} | {r['changes_per_s']:,.0f} | "
            f"{r['kafka_p50']:.0f} / {r['kafka_p99']:.0f} | {spark_col} |"
        )
    if "zurau" in results and "tansu" in results:
        z, t = results["zurau"], results["tansu"]
        print(
            f"\nZurau / Tansu: throughput {z['changes_per_s'] / t['changes_per_s']:.2f}x, "
            f"commit->Kafka p99 {z['kafka_p99'] / max(t['kafka_p99'], 1e-9):.2f}x"
            + (f", commit->Spark p99 {z['spark_p99'] / max(t['spark_p99'], 1e-9):.2f}x" if "spark_p99" in z else "")
        )


if __name__ == "__main__":
    main()
