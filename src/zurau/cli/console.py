"""``zurau console``: the web console (:mod:`zurau.console`) in the foreground.

It listens on http://127.0.0.1:8080 by default and shows the cluster at ``--bootstrap-server``
(or the ``bootstrap.servers`` of ``--command-config``); ``--registry-url``, ``--connect-url``,
``--rest-proxy-url`` and ``--metrics-url`` add the schema registry, Kafka Connect, REST proxy and
live broker metrics pages.

``--command-config`` is a Kafka client properties file as the other commands take
(``security.protocol``, ``ssl.*``, ``sasl.*``); its TLS settings also serve https service URLs.
``--login`` makes visitors log in with their own SASL user name and password (checked by the
cluster; every request then runs as that user). It is the default when the file names a SASL
protocol without ``sasl.username``; ``--no-login`` with a SASL file uses the file's user for all.
Without login the console should stay on a loopback address: elsewhere it logs a warning.
"""

from __future__ import annotations

from pathlib import Path

import typer

from zurau.cli.common import COMMAND_CONFIG_HELP, run_until_signalled, setup_service_logging
from zurau.cli.extras import needs_extra
from zurau.cli.output import print_error


def console(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on"),
    port: int = typer.Option(8080, "--port", help="Port to listen on"),
    bootstrap_server: str | None = typer.Option(
        None, "--bootstrap-server", "-b", help="Kafka cluster: host:port[,host:port] (default 127.0.0.1:9092)",
        show_default=False,
    ),
    command_config: Path | None = typer.Option(
        None, "--command-config", help=COMMAND_CONFIG_HELP + "; security.protocol, ssl.*, sasl.*", show_default=False
    ),
    login: bool | None = typer.Option(
        None, "--login/--no-login",
        help="Visitors log in with their SASL user and password (default: when --command-config has SASL "
        "but no sasl.username)",
        show_default=False,
    ),
    session_timeout: float = typer.Option(480.0, "--session-timeout", help="Minutes a login lasts"),
    registry_url: str | None = typer.Option(None, "--registry-url", help="Schema registry, e.g. http://127.0.0.1:8081"),
    connect_url: str | None = typer.Option(None, "--connect-url", help="Kafka Connect REST, e.g. http://127.0.0.1:8083"),
    rest_proxy_url: str | None = typer.Option(
        None, "--rest-proxy-url", help="Kafka REST proxy, e.g. http://127.0.0.1:8082"
    ),
    metrics_url: str | None = typer.Option(
        None, "--metrics-url", help="A broker's Prometheus endpoint, e.g. http://127.0.0.1:9404/metrics"
    ),
    lag_sample_interval: float = typer.Option(5.0, "--lag-sample-interval", help="Seconds between lag samples"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Run the web console in the foreground (Ctrl-C or SIGTERM stops it)."""
    with needs_extra("zurau console", "console"):
        from zurau.config import ConfigError, parse_properties
        from zurau.console.console_config import ConsoleConfig, ConsoleConfigError

        setup_service_logging(log_level)
        props: dict[str, str] = {}
        if command_config is not None:
            try:
                props = parse_properties(command_config.read_text(encoding="utf-8"))
            except OSError as e:
                print_error(f"cannot read {command_config}: {e.strerror or e}")
                raise typer.Exit(1) from None
            except ConfigError as e:
                print_error(f"{command_config}: {e}")
                raise typer.Exit(1) from None
        try:
            cfg = ConsoleConfig.create(
                host=host,
                port=port,
                bootstrap_servers=bootstrap_server or props.get("bootstrap.servers", "").strip() or "127.0.0.1:9092",
                registry_url=registry_url,
                connect_url=connect_url,
                metrics_url=metrics_url,
                rest_proxy_url=rest_proxy_url,
                lag_sample_interval=lag_sample_interval,
                client_properties=props,
                login=login,
                session_timeout=session_timeout * 60,
            )
            cfg.service_tls()  # load the TLS material now: a bad file is an error at start, not on a page
        except ConsoleConfigError as e:
            print_error(str(e))
            raise typer.Exit(1) from None

        from zurau.cli.balancer import plan_of
        from zurau.console.server import ConsoleServer

        try:
            # the console may not import the controller's planner: it is handed over from here
            run_until_signalled(lambda: ConsoleServer(cfg, plan_of).serve_forever())
        except OSError as e:
            print_error(f"cannot start the console on {host}:{port}: {e}")
            raise typer.Exit(1) from None
