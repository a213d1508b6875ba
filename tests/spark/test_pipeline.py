"""The telemetry pipeline end to end on the session broker and SparkSession (a small run)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zurau.pipelines.telemetry import ReadableRecords, TelemetryConfig, end_offsets, format_summary, run

pytestmark = pytest.mark.slow


def test_telemetry_pipeline_counts_every_reading_once(
    spark: Any, zurau_broker: Any, zurau_registry: Any, tmp_path: Path
) -> None:
    """Halfway through, the readings' Avro schema gains a field (v2) while the queries run; the
    registry refuses an incompatible v3. Both versions' readings are counted."""
    cfg = TelemetryConfig(events=3000, devices=20, rate=0, span_minutes=4, trigger_seconds=1.0, timeout_s=180)
    summary = run(zurau_broker.bootstrap_servers, cfg, output=tmp_path, spark=spark, registry_url=zurau_registry.url)
    g = summary.generated
    assert g.events == 3000 and len(g.per_device) == 20 and g.spikes > 0
    assert g.per_version == {1: 1500, 2: 1500} and g.refused_change.startswith("HTTP 409")
    lowest, highest = spark.read.parquet(summary.parquet_path).selectExpr("min(min_battery)", "max(min_battery)").first()
    assert lowest < 100 and highest == 100, (lowest, highest)  # v2 values, and v1's default
    assert summary.checks == dict.fromkeys(summary.checks, True), summary.checks
    assert summary.aggregates_in_kafka == len(g.windows) == summary.parquet_rows
    assert summary.readings_in_aggregates == 3000 and summary.alerts_in_kafka == g.spikes
    top = summary.top_devices
    assert len(top) == 10 and [d.max_temperature for d in top] == sorted(
        (d.max_temperature for d in top), reverse=True
    )
    assert all(d.max_temperature > cfg.threshold for d in top if d.alerts)
    text = format_summary(summary)
    assert "readings produced to 'telemetry'" in text and "FAILED" not in text


def test_cli_is_mounted() -> None:
    from zurau.cli.main import app

    result = CliRunner().invoke(app, ["pipeline", "telemetry", "--help"])
    assert result.exit_code == 0
    assert "--bootstrap-server" in result.output


def test_progress_counts_readable_records_not_offsets(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    """The run is finished when its outputs hold enough *readable* records. Transactions (the
    exactly-once sink's) end with a marker that takes an offset in each partition they wrote, and
    aborted records take offsets too: counting log-end offsets would stop the run early."""
    from confluent_kafka import Producer

    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(2)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"progress-{topic}", "log_level": 3})
    p.init_transactions(30)
    with ReadableRecords(bootstrap, end_offsets(bootstrap, topic)) as progress:
        assert progress.count() == 0
        for n in range(3):  # three committed transactions of one record per partition
            p.begin_transaction()
            for part in (0, 1):
                p.produce(topic, f"v{n}-{part}".encode(), partition=part)
            p.commit_transaction(30)
        p.begin_transaction()  # and one aborted
        p.produce(topic, b"gone", partition=0)
        p.flush(30)
        p.abort_transaction(30)
        assert sum(end_offsets(bootstrap, topic)[topic].values()) == 6 + 6 + 2  # records, markers, aborted
        assert _count_until(progress, 6) == 6
        p.begin_transaction()  # an open transaction is not readable yet
        p.produce(topic, b"later", partition=1)
        p.flush(30)
        assert progress.count() == 6
        p.commit_transaction(30)
        assert _count_until(progress, 7) == 7


def _count_until(progress: ReadableRecords, expect: int, timeout_s: float = 30.0) -> int:
    """progress.count() once it reaches ``expect`` (commit markers are written after EndTxn returns)."""
    deadline = time.monotonic() + timeout_s
    while (n := progress.count()) < expect and time.monotonic() < deadline:
        time.sleep(0.05)
    return n
