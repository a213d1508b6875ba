"""The telemetry pipeline end to end on the session broker and SparkSession (a small run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zurau.pipelines.telemetry import TelemetryConfig, format_summary, run

pytestmark = pytest.mark.slow


def test_telemetry_pipeline_counts_every_reading_once(spark: Any, zurau_broker: Any, tmp_path: Path) -> None:
    cfg = TelemetryConfig(events=3000, devices=20, rate=0, span_minutes=4, trigger_seconds=1.0, timeout_s=180)
    summary = run(zurau_broker.bootstrap_servers, cfg, output=tmp_path, spark=spark)
    g = summary.generated
    assert g.events == 3000 and len(g.per_device) == 20 and g.spikes > 0
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
