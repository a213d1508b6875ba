"""``zurau pipeline``: end-to-end demo pipelines.

``zurau pipeline cdc [--bootstrap-server ...] [--postgres-dsn DSN] [--connect-url URL] ...`` runs the
change-data-capture pipeline of :mod:`zurau.pipelines.cdc` (PostgreSQL -> Debezium-format events ->
Kafka -> Spark totals -> PostgreSQL and Parquet, checked against SQL).

``zurau pipeline telemetry [--bootstrap-server HOST:PORT] [--events N] [--devices N] ...`` runs
the device-telemetry pipeline of :mod:`zurau.pipelines.telemetry` (generator -> Kafka -> Spark
Structured Streaming -> Kafka and Parquet) and prints a summary table. Without
``--bootstrap-server`` it starts an embedded broker in this process. Needs the ``spark`` extra
and Java 17. Exit status 1 when a check of the summary fails or the pipeline errors.

Spark runs on ``--master`` (any Spark master URL; default ``local[2]``), and the same command runs
unchanged under ``spark-submit``, which then decides the master and resources::

    spark-submit --master spark://host:7077 "$(zurau pipeline script)" telemetry -b host:9092

(``zurau pipeline script`` prints the path of :mod:`zurau.cli.pipeline_submit`, the file
spark-submit runs.)
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from zurau.cli.extras import needs_extra
from zurau.cli.output import notice, print_error

app = typer.Typer(
    help="Run end-to-end demo pipelines (need the 'spark' extra and Java 17).", no_args_is_help=True
)


@app.callback()
def pipeline() -> None:
    """End-to-end demo pipelines (a group, so ``telemetry`` stays a subcommand)."""


@app.command("telemetry")
def telemetry(
    bootstrap_server: str | None = typer.Option(
        None, "--bootstrap-server", "-b", help="Kafka cluster to use (default: an embedded broker)"
    ),
    events: int = typer.Option(30_000, "--events", "-n", min=1, help="readings to generate"),
    devices: int = typer.Option(50, "--devices", min=1, help="distinct devices"),
    rate: float = typer.Option(3_000.0, "--rate", min=0, help="readings per second (0: unthrottled)"),
    span_minutes: int = typer.Option(10, "--span-minutes", min=1, help="simulated event-time span"),
    threshold: float = typer.Option(
        75.0, "--threshold", help="temperature (°C) above which a reading alerts"
    ),
    partitions: int = typer.Option(3, "--partitions", min=1, help="partitions of topics it creates"),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="keep the Parquet table and checkpoints here"
    ),
    timeout: float = typer.Option(300.0, "--timeout", help="give up after this many seconds"),
    master: str | None = typer.Option(
        None,
        "--master",
        help="Spark master URL (local[N], spark://host:7077, yarn, k8s://...); "
        "default: spark-submit's, else local[2]",
    ),
    registry_url: str | None = typer.Option(
        None, "--registry-url", help="schema registry for the Avro readings (default: an embedded one)"
    ),
) -> None:
    """Device telemetry: generator -> Kafka -> Spark windows/alerts -> Kafka + Parquet; prints a summary."""
    with needs_extra("zurau pipeline telemetry", "spark"):
        import pyspark  # noqa: F401  - first: the pipeline needs PySpark (and Java 17)

        from zurau.pipelines.telemetry import TelemetryConfig, format_summary, run

        logging.basicConfig(
            level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
        cfg = TelemetryConfig(
            events=events,
            devices=devices,
            rate=rate,
            span_minutes=span_minutes,
            threshold=threshold,
            partitions=partitions,
            timeout_s=timeout,
        )
        from zurau.spark.register import is_local_master

        if bootstrap_server is None and not is_local_master(master):
            notice(
                "note: the embedded broker listens on 127.0.0.1, so only executors on this machine reach "
                "it; give --bootstrap-server for a cluster elsewhere"
            )
        _run_and_report(
            lambda progress: run(bootstrap_server, cfg, output, progress=progress, master=master, registry_url=registry_url),
            format_summary,
        )


@app.command("cdc")
def cdc(
    bootstrap_server: str | None = typer.Option(
        None, "--bootstrap-server", "-b", help="Kafka cluster to use (default: an embedded broker)"
    ),
    postgres_dsn: str | None = typer.Option(
        None,
        "--postgres-dsn",
        help="PostgreSQL with wal_level=logical (default: a temporary instance from the installed binaries)",
    ),
    connect_url: str | None = typer.Option(
        None, "--connect-url", help="Kafka Connect REST URL (default: an embedded Connect worker)"
    ),
    transactions: int = typer.Option(400, "--transactions", "-n", min=1, help="workload transactions"),
    customers: int = typer.Option(20, "--customers", min=1, help="distinct customers"),
    seed: int = typer.Option(50, "--seed", min=0, help="orders written before the connector starts"),
    rate: float = typer.Option(200.0, "--rate", min=0, help="transactions per second (0: unthrottled)"),
    abort_every: int = typer.Option(10, "--abort-every", min=0, help="roll back every N-th transaction (0: never)"),
    partitions: int = typer.Option(3, "--partitions", min=1, help="partitions of the change topic"),
    output: Path | None = typer.Option(None, "--output", "-o", help="keep the Parquet table and checkpoint here"),
    timeout: float = typer.Option(300.0, "--timeout", help="give up after this many seconds"),
    master: str | None = typer.Option(
        None, "--master", help="Spark master URL; default: spark-submit's, else local[2]"
    ),
) -> None:
    """PostgreSQL orders -> CDC (Debezium format) -> Kafka -> Spark per-customer totals -> PostgreSQL + Parquet, checked against SQL."""
    with needs_extra("zurau pipeline cdc", "spark,connect"):
        import psycopg2  # noqa: F401  - first: the pipeline needs psycopg2 and PySpark (and Java 17)
        import pyspark  # noqa: F401

        from zurau.pipelines.cdc import CdcConfig, format_summary, run

        logging.basicConfig(
            level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
        )
        cfg = CdcConfig(
            transactions=transactions,
            customers=customers,
            seed=seed,
            rate=rate,
            abort_every=abort_every,
            partitions=partitions,
            timeout_s=timeout,
        )
        _run_and_report(
            lambda progress: run(bootstrap_server, cfg, output, postgres_dsn, connect_url, master=master, progress=progress),
            format_summary,
        )


def _run_and_report(run: Callable[[Callable[[str], None]], Any], format_summary: Callable[[Any], str]) -> None:
    """Run a pipeline with timestamped progress on stderr, print its summary, exit 1 unless it
    is ok (a failure is one line on stderr)."""
    t0 = time.monotonic()

    def progress(msg: str) -> None:
        notice(f"[{time.monotonic() - t0:5.1f}s] {msg}")

    try:
        summary = run(progress)
    except ModuleNotFoundError:
        raise  # a missing extra: needs_extra says which
    except Exception as e:  # noqa: BLE001 - one line on stderr, exit status 1
        print_error(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        raise typer.Exit(1) from None
    typer.echo(format_summary(summary))
    if not summary.ok:
        raise typer.Exit(1)


@app.command("script")
def script() -> None:
    """Print the path of the file to give spark-submit: ``spark-submit [options] PATH telemetry ...``."""
    from zurau.cli import pipeline_submit

    typer.echo(pipeline_submit.__file__)
