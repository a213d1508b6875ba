"""The CDC pipeline end to end: PostgreSQL (wal_level=logical, a temporary instance) -> the
PostgreSQL source connector on a Connect worker -> Kafka -> Spark totals -> PostgreSQL + Parquet,
on the session's broker, Connect worker and SparkSession (a small run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zurau.pipelines.cdc import CdcConfig, format_summary, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_cdc_pipeline_totals_equal_sql_over_the_source_table(
    spark: Any, zurau_broker: Any, zurau_connect: Any, zurau_postgres: Any, tmp_path: Path
) -> None:
    cfg = CdcConfig(transactions=120, customers=8, seed=30, rate=0, abort_every=5, partitions=2, timeout_s=180)
    summary = run(
        zurau_broker.bootstrap_servers,
        cfg,
        output=tmp_path,
        postgres_dsn=zurau_postgres.dsn,
        connect_url=zurau_connect.url,
        spark=spark,
    )
    w = summary.workload
    assert w.aborted_transactions == 24 and w.deletes > 0 and w.updates > 0
    assert summary.checks == dict.fromkeys(summary.checks, True), (summary.checks, summary.events, w)
    assert summary.events["r"] == 30 and summary.tombstones == w.deletes
    assert summary.totals_rows == summary.customers_in_postgres > 0
    text = format_summary(summary)
    assert "FAILED" not in text and "customer_totals equals SQL over orders" in text


def test_cdc_cli_reports_a_missing_wal_level_clearly(zurau_broker: Any) -> None:
    """A server with PostgreSQL's default wal_level=replica: the pipeline says what to change
    instead of failing inside the connector."""
    from zurau.cli.main import app
    from zurau.testing.postgres import TemporaryPostgres

    with TemporaryPostgres(settings={"wal_level": "replica"}) as pg:
        result = CliRunner().invoke(
            app, ["pipeline", "cdc", "-b", zurau_broker.bootstrap_servers, "--postgres-dsn", pg.dsn]
        )
    assert result.exit_code == 1
    assert "wal_level=logical" in result.output, result.output
