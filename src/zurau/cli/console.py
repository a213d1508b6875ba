"""``zurau console``: the web console (:mod:`zurau.console`) in the foreground.

It listens on http://127.0.0.1:8080 by default (localhost only: the console has no login of its
own) and shows the cluster at ``--bootstrap-server``; ``--registry-url``, ``--connect-url`` and
``--metrics-url`` add the schema registry, Kafka Connect and live broker metrics pages.
"""

from __future__ import annotations

import typer

from zurau.cli.common import run_until_signalled, setup_service_logging
from zurau.cli.output import print_error


def console(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on"),
    port: int = typer.Option(8080, "--port", help="Port to listen on"),
    bootstrap_server: str = typer.Option(
        "127.0.0.1:9092", "--bootstrap-server", "-b", help="Kafka cluster: host:port[,host:port]"
    ),
    registry_url: str | None = typer.Option(None, "--registry-url", help="Schema registry, e.g. http://127.0.0.1:8081"),
    connect_url: str | None = typer.Option(None, "--connect-url", help="Kafka Connect REST, e.g. http://127.0.0.1:8083"),
    metrics_url: str | None = typer.Option(
        None, "--metrics-url", help="A broker's Prometheus endpoint, e.g. http://127.0.0.1:9404/metrics"
    ),
    lag_sample_interval: float = typer.Option(5.0, "--lag-sample-interval", help="Seconds between lag samples"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Run the web console in the foreground (Ctrl-C or SIGTERM stops it)."""
    from zurau.console.console_config import ConsoleConfig, ConsoleConfigError
    from zurau.console.server import ConsoleServer

    setup_service_logging(log_level)
    try:
        cfg = ConsoleConfig.create(
            host=host,
            port=port,
            bootstrap_servers=bootstrap_server,
            registry_url=registry_url,
            connect_url=connect_url,
            metrics_url=metrics_url,
            lag_sample_interval=lag_sample_interval,
        )
    except ConsoleConfigError as e:
        print_error(str(e))
        raise typer.Exit(1) from None

    try:
        run_until_signalled(lambda: ConsoleServer(cfg).serve_forever())
    except OSError as e:
        print_error(f"cannot start the console on {host}:{port}: {e}")
        raise typer.Exit(1) from None
