"""``zurau rest-proxy start``: a Kafka REST proxy compatible with Confluent's (:mod:`zurau.rest_proxy`).

Configured with Confluent kafka-rest's property names, from ``--config kafka-rest.properties`` and
``-o key=value`` overrides (``listeners``, ``bootstrap.servers``, ``schema.registry.url``,
``client.*`` ...); with neither it listens on http://127.0.0.1:8082 against 127.0.0.1:9092.
"""

from __future__ import annotations

from pathlib import Path

import typer

from zurau.cli.common import CommandError, run_until_signalled, service_properties, setup_service_logging
from zurau.cli.extras import needs_extra
from zurau.cli.output import print_error

app = typer.Typer(help="Run a Kafka REST proxy (Confluent's v3 and v2 APIs).", no_args_is_help=True)


@app.command("start")
def rest_proxy_start(
    config: Path | None = typer.Option(None, "--config", "-c", help="kafka-rest.properties file"),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Start the REST proxy in the foreground (Ctrl-C or SIGTERM stops it)."""
    with needs_extra("zurau rest-proxy", "rest-proxy"):
        from zurau.client.errors import ClientError
        from zurau.rest_proxy.proxy_config import RestProxyConfig, RestProxyConfigError
        from zurau.rest_proxy.server import RestProxyServer

        setup_service_logging(log_level)
        try:
            props = service_properties(config, override)
            cfg = RestProxyConfig.from_props(props)
        except (CommandError, RestProxyConfigError) as e:
            print_error(str(e))
            raise typer.Exit(1) from None

        try:
            run_until_signalled(lambda: RestProxyServer(cfg).serve_forever())
        except (OSError, ClientError, RestProxyConfigError) as e:  # a users file that cannot be used
            print_error(f"cannot start the REST proxy: {e}")
            raise typer.Exit(1) from None
