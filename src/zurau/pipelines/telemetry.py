"""The flagship pipeline: device telemetry through Kafka and Spark Structured Streaming.

1. A generator thread produces ``events`` readings, keyed by device id, to ``telemetry`` at
   ``rate`` events/s, as Avro in the schema registry's wire format (subject ``telemetry-value``):
   ``{"device": "dev-007", "ts": <epoch ms>, "temperature": 21.4, "humidity": 40.2}``. Halfway,
   the schema evolves while the queries run: v2 adds ``battery`` (an int with default 100) and
   the rest of the readings carry it; the generator then tries an incompatible v3 (``temperature``
   as a string), which the registry refuses (HTTP 409 under the default BACKWARD level), and
   reports it. Event time is simulated: it advances evenly over ``span_minutes`` minutes
   starting at a whole minute, so a one-minute run still yields many one-minute windows. About
   ``spike_ratio`` of readings are spikes above ``threshold``. After the last reading one
   ``__eos__`` record two minutes later moves the watermark past every window so the last
   windows are emitted (it is dropped after the watermark, before any aggregation).
2. Spark reads ``telemetry`` with the ``zurau`` source, decodes the Avro with
   :func:`zurau.spark.avro.from_avro` into the v2 shape (v1 readings get ``battery`` = 100 by
   Avro's schema resolution), and runs three queries:
   per-device one-minute tumbling windows with a 30-second watermark (count, mean and max
   temperature, mean humidity, readings over the threshold) written as JSON, keyed by device,
   to ``telemetry-agg`` through the ``zurau`` sink and to a Parquet table; and every reading
   over the threshold written to ``alerts`` through the sink.
3. When the queries have processed everything (the Kafka outputs hold as many records readable
   with ``read_committed`` as expected, and the Parquet query's watermark passed the last window),
   the run reads its own results back (only offsets written during this run) and returns a
   :class:`Summary` that checks them against what was generated: every reading counted once,
   every spike alerted. Log-end offsets would overcount: the exactly-once sink's transactions
   each end with a commit marker that takes an offset in every partition they wrote.

Works on the embedded broker (``bootstrap=None``: one is started in this process with a
temporary log) or any Kafka cluster, and an embedded schema registry or any with Confluent's API.
Topics are created when missing (3 partitions).
"""

from __future__ import annotations

import io
import json
import logging
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TELEMETRY, AGGREGATES, ALERTS = "telemetry", "telemetry-agg", "alerts"
EOS_DEVICE = "__eos__"
SUBJECT = f"{TELEMETRY}-value"
READING_V1: dict[str, Any] = {
    "type": "record",
    "name": "Reading",
    "namespace": "zurau.telemetry",
    "fields": [
        {"name": "device", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "temperature", "type": "double"},
        {"name": "humidity", "type": "double"},
    ],
}
READING_V2: dict[str, Any] = {
    **READING_V1,
    "fields": [*READING_V1["fields"], {"name": "battery", "type": "int", "default": 100}],
}
READING_V3_INCOMPATIBLE: dict[str, Any] = {
    **READING_V2,
    "fields": [{**f, "type": "string"} if f["name"] == "temperature" else f for f in READING_V2["fields"]],
}
WINDOW = "1 minute"
WATERMARK = "30 seconds"


@dataclass(frozen=True)
class TelemetryConfig:
    """What one run generates and how it is processed."""

    events: int = 30_000
    devices: int = 50
    rate: float = 3_000.0
    """Events per second the generator sends (0: as fast as it can)."""
    span_minutes: int = 10
    threshold: float = 75.0
    spike_ratio: float = 0.01
    partitions: int = 3
    seed: int = 7
    trigger_seconds: float = 2.0
    timeout_s: float = 300.0


@dataclass
class Generated:
    """What the generator sent (ground truth for the summary's checks)."""

    events: int = 0
    spikes: int = 0
    per_device: dict[str, int] = field(default_factory=dict)
    windows: set[tuple[str, int]] = field(default_factory=set)  # (device, window start ms)
    seconds: float = 0.0
    per_version: dict[int, int] = field(default_factory=dict)  # schema version -> readings
    refused_change: str = ""  # the registry's answer to the incompatible v3 ("" if it was accepted)


@dataclass
class DeviceRow:
    device: str
    readings: int
    windows: int
    mean_temperature: float
    max_temperature: float
    alerts: int


@dataclass
class Summary:
    """A run's results, read back from Kafka and the Parquet table."""

    bootstrap: str
    generated: Generated
    aggregates_in_kafka: int
    readings_in_aggregates: int
    alerts_in_kafka: int
    parquet_rows: int
    parquet_path: str
    top_devices: list[DeviceRow]
    seconds: float
    kept: bool = False
    """Whether the Parquet table outlives the run (``output`` given)."""

    @property
    def checks(self) -> dict[str, bool]:
        g = self.generated
        return {
            "every reading counted once in the aggregates": self.readings_in_aggregates == g.events,
            "one aggregate per device and minute": self.aggregates_in_kafka == len(g.windows),
            "Parquet table matches telemetry-agg": self.parquet_rows == self.aggregates_in_kafka,
            "every spike alerted once": self.alerts_in_kafka == g.spikes,
            "readings of schema v1 and v2 both counted": len(g.per_version) == 2
            and self.readings_in_aggregates == sum(g.per_version.values()),
            "incompatible schema v3 refused by the registry": bool(g.refused_change),
        }

    @property
    def ok(self) -> bool:
        return all(self.checks.values())


# --------------------------------------------------------------------------- generator
def reading(rng: random.Random, device_no: int, spike_ratio: float, threshold: float) -> tuple[float, float]:
    """(temperature, humidity) of one reading: a per-device baseline plus noise, rarely a spike."""
    base = 18.0 + (device_no * 7919 % 100) / 10.0
    if rng.random() < spike_ratio:
        return round(threshold + 1.0 + rng.random() * 20.0, 2), round(30 + rng.random() * 40, 1)
    return round(min(base + rng.gauss(0, 1.5), threshold - 1.0), 2), round(30 + rng.random() * 40, 1)


class ReadingEncoder:
    """Avro readings in the registry's wire format, in the schema version of the moment."""

    def __init__(self, registry_url: str) -> None:
        from zurau.client.schema_registry import SchemaRegistryClient

        self.registry = SchemaRegistryClient(registry_url)
        self.use(1, READING_V1)

    def use(self, version: int, schema: dict[str, Any]) -> None:
        """Register ``schema`` (the existing id if it is there) and encode with it from now on."""
        from fastavro import parse_schema

        self.schema_id = self.registry.register(SUBJECT, json.dumps(schema))
        self.version = version
        self._parsed = parse_schema(schema)

    def try_incompatible(self) -> str:
        """Try to register v3; the registry's refusal, or "" if it accepted it."""
        from zurau.client.schema_registry import SchemaRegistryError

        try:
            self.registry.register(SUBJECT, json.dumps(READING_V3_INCOMPATIBLE))
        except SchemaRegistryError as e:
            log.info("schema v3 refused as expected: %s", e)
            return f"HTTP {e.status}: {e}"
        log.warning("the registry accepted an incompatible schema for %s (compatibility NONE?)", SUBJECT)
        return ""

    def encode(self, reading: dict[str, Any]) -> bytes:
        from fastavro import schemaless_writer

        from zurau.client.schema_registry import frame

        if self.version >= 2:
            reading = {**reading, "battery": reading.get("battery", 100)}
        buf = io.BytesIO()
        schemaless_writer(buf, self._parsed, reading)
        return frame(self.schema_id, buf.getvalue())


def generate(
    bootstrap: str, cfg: TelemetryConfig, start_ms: int, stop: threading.Event, registry_url: str
) -> Generated:
    """Produce ``cfg.events`` readings (and the end-of-stream record) to ``telemetry``, evolving
    the schema halfway (see the module docstring)."""
    from confluent_kafka import Producer

    rng = random.Random(cfg.seed)
    out = Generated()
    encoder = ReadingEncoder(registry_url)
    errors: list[Any] = []
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "acks": "all",
            "on_delivery": lambda err, _m: errors.append(err) if err else None,
            "delivery.report.only.error": True,
        }
    )
    step_ms = cfg.span_minutes * 60_000 / max(cfg.events, 1)
    t0 = time.monotonic()
    last_ts = start_ms
    for i in range(cfg.events):
        if stop.is_set():
            break
        if i == cfg.events // 2:  # the schema evolves while the queries run
            encoder.use(2, READING_V2)
            out.refused_change = encoder.try_incompatible()
        device_no = rng.randrange(cfg.devices)
        device = f"dev-{device_no:03d}"
        ts = start_ms + int(i * step_ms)
        temperature, humidity = reading(rng, device_no, cfg.spike_ratio, cfg.threshold)
        value = {"device": device, "ts": ts, "temperature": temperature, "humidity": humidity}
        if encoder.version >= 2:
            value["battery"] = 100 - device_no % 50 - i * 30 // max(cfg.events, 1)
        _produce(p, device.encode(), encoder.encode(value))
        out.events += 1
        out.per_version[encoder.version] = out.per_version.get(encoder.version, 0) + 1
        out.spikes += temperature > cfg.threshold
        out.per_device[device] = out.per_device.get(device, 0) + 1
        out.windows.add((device, ts - ts % 60_000))
        last_ts = ts
        if cfg.rate > 0 and i % 100 == 99:
            ahead = (i + 1) / cfg.rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
    eos = {"device": EOS_DEVICE, "ts": last_ts + 120_000, "temperature": 0.0, "humidity": 0.0}
    _produce(p, EOS_DEVICE.encode(), encoder.encode(eos))
    if p.flush(60) != 0 or errors:
        raise RuntimeError(f"telemetry generator: {len(errors)} records failed: {errors[:3]}")
    out.seconds = time.monotonic() - t0
    return out


def _produce(p: Any, key: bytes, value: bytes) -> None:
    while True:
        try:
            p.produce(TELEMETRY, value, key)
            p.poll(0)
            return
        except BufferError:
            p.poll(0.05)


# --------------------------------------------------------------------------- Kafka helpers
def ensure_topics(bootstrap: str, partitions: int) -> None:
    """Create the pipeline's topics where missing."""
    create_topics(bootstrap, (TELEMETRY, AGGREGATES, ALERTS), partitions, 1)


def create_topics(bootstrap: str, topics: Iterable[str], partitions: int, replication_factor: int = -1) -> None:
    """Create ``topics`` where missing (an existing topic is fine), through zurau.client."""
    import asyncio

    from zurau.client.admin import AdminClient, NewTopic
    from zurau.client.config import ClientConfig
    from zurau.client.topic_admin import ensure_topic

    async def main() -> None:
        async with AdminClient(ClientConfig.from_props({"bootstrap.servers": bootstrap})) as admin:
            for topic in topics:
                if not (await ensure_topic(admin, NewTopic(topic, partitions, replication_factor))).created:
                    log.info("topic %s already exists", topic)

    asyncio.run(main())


def end_offsets(bootstrap: str, topic: str) -> dict[str, dict[str, int]]:
    """Spark offset JSON of the topic's current end (where this run's records will start)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "zurau-pipeline-offsets"})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        return {
            topic: {str(p): c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
        }
    finally:
        c.close()


# --------------------------------------------------------------------------- Spark
def build_queries(
    spark: Any, bootstrap: str, cfg: TelemetryConfig, start: dict[str, Any], workdir: Path, registry_url: str
) -> list[Any]:
    """Start the three streaming queries; returns them (aggregates to Kafka, alerts, Parquet)."""
    from pyspark.sql import functions as F

    from zurau.spark.avro import from_avro

    raw = (
        spark.readStream.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TELEMETRY)
        .option("startingOffsets", json.dumps(start))
        .load()
    )
    readings = (
        raw.select(from_avro("value", registry_url, reader_schema=json.dumps(READING_V2)).alias("r"))
        .select("r.*")
        .withColumn("event_time", F.timestamp_millis("ts"))
    )
    aggregates = (
        readings.where(F.col("event_time").isNotNull())
        .withWatermark("event_time", WATERMARK)
        # The end-of-stream record must reach the watermark before it is dropped: Spark pushes a
        # filter below the watermark unless it references the event-time column, so this one does
        # (event_time is never null here).
        .where((F.col("device") != EOS_DEVICE) | F.col("event_time").isNull())
        .groupBy(F.window("event_time", WINDOW).alias("w"), "device")
        .agg(
            F.count("*").alias("readings"),
            F.round(F.avg("temperature"), 3).alias("mean_temperature"),
            F.max("temperature").alias("max_temperature"),
            F.round(F.avg("humidity"), 3).alias("mean_humidity"),
            F.sum((F.col("temperature") > cfg.threshold).cast("int")).alias("over_threshold"),
            F.min("battery").alias("min_battery"),
        )
        .select(
            "device",
            F.col("w.start").alias("window_start"),
            F.col("w.end").alias("window_end"),
            "readings",
            "mean_temperature",
            "max_temperature",
            "mean_humidity",
            "over_threshold",
            "min_battery",
        )
    )
    alerts = readings.where((F.col("device") != EOS_DEVICE) & (F.col("temperature") > cfg.threshold)).select(
        F.col("device").alias("key"),
        F.to_json(
            F.struct(
                "device",
                F.date_format("event_time", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("time"),
                "temperature",
                F.lit(cfg.threshold).alias("threshold"),
            )
        ).alias("value"),
    )
    trigger = {"processingTime": f"{cfg.trigger_seconds} seconds"}

    def to_kafka(df: Any, topic: str, name: str) -> Any:
        return (
            df.writeStream.format("zurau")
            .queryName(name)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .option("exactlyOnce", "true")  # transactions committed by the driver per micro-batch
            .option("checkpointLocation", str(workdir / "checkpoints" / name))
            .outputMode("append")
            .trigger(**trigger)
            .start()
        )

    agg_json = aggregates.select(F.col("device").alias("key"), F.to_json(F.struct("*")).alias("value"))
    return [
        to_kafka(agg_json, AGGREGATES, "telemetry_aggregates"),
        to_kafka(alerts, ALERTS, "telemetry_alerts"),
        aggregates.writeStream.format("parquet")
        .queryName("telemetry_parquet")
        .option("path", str(workdir / "aggregates.parquet"))
        .option("checkpointLocation", str(workdir / "checkpoints" / "telemetry_parquet"))
        .outputMode("append")
        .trigger(**trigger)
        .start(),
    ]


def _read_back(spark: Any, bootstrap: str, topic: str, start: dict[str, Any]) -> Any:
    return (
        spark.read.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps(start))
        .option("kafka.isolation.level", "read_committed")
        .load()
    )


def summarize(
    spark: Any,
    bootstrap: str,
    generated: Generated,
    agg_start: dict[str, Any],
    alerts_start: dict[str, Any],
    parquet: Path,
    seconds: float,
    top: int = 10,
) -> Summary:
    """Read this run's results back and compare them with what was generated."""
    from pyspark.sql import functions as F

    schema = (
        "device string, readings long, mean_temperature double, max_temperature double, over_threshold long"
    )
    aggs = (
        _read_back(spark, bootstrap, AGGREGATES, agg_start)
        .select(F.from_json(F.col("value").cast("string"), schema).alias("a"))
        .select("a.*")
    )
    totals = aggs.agg(F.count("*").alias("n"), F.sum("readings").alias("readings")).first()
    per_device = (
        aggs.groupBy("device")
        .agg(
            F.sum("readings").alias("readings"),
            F.count("*").alias("windows"),
            (F.sum(F.col("mean_temperature") * F.col("readings")) / F.sum("readings")).alias("mean"),
            F.max("max_temperature").alias("max"),
            F.sum("over_threshold").alias("alerts"),
        )
        .orderBy(F.desc("max"), "device")
        .limit(top)
        .collect()
    )
    alerts = _read_back(spark, bootstrap, ALERTS, alerts_start).count()
    parquet_rows = spark.read.parquet(str(parquet)).count() if parquet.exists() else 0
    return Summary(
        bootstrap=bootstrap,
        generated=generated,
        aggregates_in_kafka=int(totals["n"] or 0),
        readings_in_aggregates=int(totals["readings"] or 0),
        alerts_in_kafka=alerts,
        parquet_rows=parquet_rows,
        parquet_path=str(parquet),
        top_devices=[
            DeviceRow(
                r["device"],
                int(r["readings"]),
                int(r["windows"]),
                float(r["mean"]),
                float(r["max"]),
                int(r["alerts"]),
            )
            for r in per_device
        ],
        seconds=seconds,
    )


def wait_for_queries(queries: list[Any], done: Callable[[], bool], timeout_s: float) -> None:
    """Return once ``done()``; RuntimeError as soon as a query failed, TimeoutError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        for q in queries:
            if q.exception() is not None:
                raise RuntimeError(f"query {q.name} failed: {q.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the pipeline did not finish within {timeout_s:.0f} s")
        time.sleep(0.5)


def run(
    bootstrap: str | None = None,
    cfg: TelemetryConfig | None = None,
    output: Path | None = None,
    spark: Any = None,
    progress: Callable[[str], None] = lambda _msg: None,
    master: str | None = None,
    registry_url: str | None = None,
) -> Summary:
    """Run the whole pipeline once and return its summary (see the module docstring).

    ``bootstrap=None`` starts an embedded broker; ``output`` keeps the Parquet table and
    checkpoints (a temporary directory otherwise, removed afterwards unless ``output`` is set);
    ``registry_url`` names a schema registry (an embedded one by default, storing its schemas
    on the same cluster);
    ``spark`` reuses a session that has the ``zurau`` format registered; otherwise one starts on
    ``master`` (any Spark master URL; by default spark-submit's when run under it, else
    ``local[2]``). On a cluster, ``output`` (and so the checkpoints) must be storage every
    executor reaches, and an embedded broker is reachable only from executors on this machine.
    """
    cfg = cfg or TelemetryConfig()
    t_start = time.monotonic()
    with ExitStack() as stack:
        if bootstrap is None:
            from zurau.embedded import EmbeddedBroker

            broker = stack.enter_context(EmbeddedBroker(num_partitions=cfg.partitions))
            bootstrap = broker.bootstrap_servers
            progress(f"embedded broker on {bootstrap}")
        if registry_url is None:
            from zurau.schema_registry.embedded_registry import EmbeddedRegistry

            registry_url = stack.enter_context(EmbeddedRegistry(bootstrap)).url
            progress(f"embedded schema registry on {registry_url}")
        workdir = output if output is not None else Path(tempfile.mkdtemp(prefix="zurau-telemetry-"))
        if output is None:
            stack.callback(shutil.rmtree, workdir, True)
        run_dir = workdir / f"run-{int(time.time())}"
        run_dir.mkdir(parents=True, exist_ok=True)

        ensure_topics(bootstrap, cfg.partitions)
        starts = {t: end_offsets(bootstrap, t) for t in (TELEMETRY, AGGREGATES, ALERTS)}
        if spark is None:
            from zurau.spark import spark_session

            spark = spark_session("zurau-telemetry", master)
            progress(f"Spark on {spark.sparkContext.master}")
            stack.callback(spark.stop)

        progress("starting the streaming queries")
        queries = build_queries(spark, bootstrap, cfg, starts[TELEMETRY], run_dir, registry_url)
        stop = threading.Event()
        try:
            start_ms = int(time.time() * 1000) // 60_000 * 60_000
            progress(f"producing {cfg.events:,} readings of {cfg.devices} devices to '{TELEMETRY}'")
            generated = generate(bootstrap, cfg, start_ms, stop, registry_url)
            progress(
                f"produced {generated.events:,} readings in {generated.seconds:.1f} s; waiting for Spark"
            )
            last_window_end = max(w for _, w in generated.windows) + 60_000 if generated.windows else 0

            aggregates_out = stack.enter_context(ReadableRecords(bootstrap, starts[AGGREGATES]))
            alerts_out = stack.enter_context(ReadableRecords(bootstrap, starts[ALERTS]))

            def finished() -> bool:
                # Kafka outputs are counted by the records a read_committed consumer reads; the
                # Parquet query by the watermark its last micro-batch ran with (past the last
                # window: everything was emitted).
                return (
                    aggregates_out.count() >= len(generated.windows)
                    and alerts_out.count() >= generated.spikes
                    and _watermark_ms(queries[2]) >= last_window_end
                )

            wait_for_queries(queries, finished, cfg.timeout_s)
        finally:
            stop.set()
            for q in queries:
                q.stop()
        progress("reading the results back")
        summary = summarize(
            spark,
            bootstrap,
            generated,
            starts[AGGREGATES],
            starts[ALERTS],
            run_dir / "aggregates.parquet",
            time.monotonic() - t_start,
        )
        summary.kept = output is not None
        return summary


class ReadableRecords:
    """Counts the records of one topic a ``read_committed`` consumer reads from ``start`` on.

    ``start`` is Spark offset JSON of one topic (partitions missing from it are read from their
    beginning). :meth:`count` reads what has become readable since the last call and returns the
    running total: committed records only, never transaction markers or aborted records, which
    log-end offsets would count. Use as a context manager (it owns a consumer).
    """

    def __init__(self, bootstrap: str, start: dict[str, dict[str, int]]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        [(topic, parts)] = start.items()
        self.topic = topic
        self.total = 0
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "zurau-pipeline-progress",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        partitions = self._consumer.list_topics(topic, timeout=30).topics[topic].partitions
        self._consumer.assign(
            [TopicPartition(topic, p, parts.get(str(p), OFFSET_BEGINNING)) for p in sorted(partitions)]
        )

    def count(self, wait_s: float = 0.2) -> int:
        """The running total, after reading until a read waits ``wait_s`` without a new record."""
        while True:
            messages = self._consumer.consume(10_000, wait_s)
            for m in messages:
                if m.error() is not None:
                    raise RuntimeError(f"reading {self.topic}: {m.error()}")
            self.total += len(messages)
            if not messages:
                return self.total

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> ReadableRecords:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _watermark_ms(query: Any) -> int:
    """The watermark a query's last micro-batch ran with (epoch ms; 0 before the first)."""
    from datetime import datetime

    p = query.lastProgress
    wm = (p or {}).get("eventTime", {}).get("watermark")
    return int(datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp() * 1000) if wm else 0


def format_summary(summary: Summary) -> str:
    """The summary as text tables (rich), for the CLI."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buf = StringIO()
    console = Console(file=buf, width=100, force_terminal=False)
    g = summary.generated
    t = Table(title=f"Telemetry pipeline on {summary.bootstrap} ({summary.seconds:.0f} s)")
    t.add_column("")
    t.add_column("value", justify="right")
    t.add_row(f"readings produced to '{TELEMETRY}'", f"{g.events:,}")
    t.add_row("devices", f"{len(g.per_device):,}")
    t.add_row("one-minute windows (device x minute)", f"{len(g.windows):,}")
    t.add_row(f"aggregates in '{AGGREGATES}'", f"{summary.aggregates_in_kafka:,}")
    t.add_row("readings counted in aggregates", f"{summary.readings_in_aggregates:,}")
    t.add_row(f"alerts in '{ALERTS}' (spikes generated)", f"{summary.alerts_in_kafka:,} ({g.spikes:,})")
    t.add_row("rows in the Parquet table", f"{summary.parquet_rows:,}")
    versions = " / ".join(f"v{v}: {n:,}" for v, n in sorted(g.per_version.items()))
    t.add_row(f"readings by schema version ('{SUBJECT}')", versions or "-")
    t.add_row("incompatible v3", g.refused_change[:60] + ("..." if len(g.refused_change) > 60 else "") or "ACCEPTED")
    console.print(t)
    d = Table(title=f"Top {len(summary.top_devices)} devices by max temperature")
    for col in ("device", "readings", "windows", "mean °C", "max °C", "alerts"):
        d.add_column(col, justify="left" if col == "device" else "right")
    for r in summary.top_devices:
        d.add_row(
            r.device,
            f"{r.readings:,}",
            str(r.windows),
            f"{r.mean_temperature:.2f}",
            f"{r.max_temperature:.2f}",
            str(r.alerts),
        )
    console.print(d)
    for name, ok in summary.checks.items():
        console.print(f"{'ok    ' if ok else 'FAILED'}  {name}", markup=False)
    if summary.kept:
        console.print(f"Parquet table: {summary.parquet_path}", markup=False)
    else:
        console.print("Parquet table: removed with the run's temporary directory (keep it with --output DIR)")
    return buf.getvalue()
