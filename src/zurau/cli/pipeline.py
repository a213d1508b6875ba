"""``zurau pipeline``: end-to-end demo pipelines.

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
from pathlib import Path

import typer

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
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print_error("pyspark is missing: pip install 'zurau[spark]' (and Java 17)")
        raise typer.Exit(1) from None
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
    t0 = time.monotonic()

    def progress(msg: str) -> None:
        notice(f"[{time.monotonic() - t0:5.1f}s] {msg}")

    from zurau.spark.register import is_local_master

    if bootstrap_server is None and not is_local_master(master):
        notice(
            "note: the embedded broker listens on 127.0.0.1, so only executors on this machine reach "
            "it; give --bootstrap-server for a cluster elsewhere"
        )
    try:
        summary = run(bootstrap_server, cfg, output, progress=progress, master=master, registry_url=registry_url)
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
