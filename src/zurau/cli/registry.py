"""``zurau registry start``: a Confluent-compatible schema registry (:mod:`zurau.schema_registry`).

Configured with Confluent's property names, from ``--config schema-registry.properties`` and
``-o key=value`` overrides (``listeners``, ``kafkastore.bootstrap.servers``, ``kafkastore.topic``,
``schema.compatibility.level`` ...); with neither it listens on http://127.0.0.1:8081 and stores
schemas in ``_schemas`` on 127.0.0.1:9092.
"""

from __future__ import annotations

from pathlib import Path

import typer

from zurau.cli.common import CommandError, run_until_signalled, service_properties, setup_service_logging
from zurau.cli.extras import needs_extra
from zurau.cli.output import print_error

app = typer.Typer(help="Run a Confluent-compatible schema registry.", no_args_is_help=True)


@app.command("start")
def registry_start(
    config: Path | None = typer.Option(None, "--config", "-c", help="schema-registry.properties file"),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Start the registry in the foreground (Ctrl-C or SIGTERM stops it)."""
    with needs_extra("zurau registry", "registry"):
        from zurau.client.errors import ClientError
        from zurau.schema_registry.errors import RegistryError
        from zurau.schema_registry.registry_config import RegistryConfig, RegistryConfigError
        from zurau.schema_registry.server import RegistryServer

        setup_service_logging(log_level)
        try:
            props = service_properties(config, override)
            cfg = RegistryConfig.from_props(props)
        except (CommandError, RegistryConfigError) as e:
            print_error(str(e))
            raise typer.Exit(1) from None

        try:
            run_until_signalled(lambda: RegistryServer(cfg).serve_forever())
        except (OSError, RegistryError, ClientError) as e:
            print_error(f"cannot start the schema registry: {e}")
            raise typer.Exit(1) from None
