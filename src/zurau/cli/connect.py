"""``zurau connect start``: a Kafka Connect worker (:mod:`zurau.connect`).

Configured with Kafka Connect's worker property names, from ``--config worker.properties`` and
``-o key=value`` overrides (``bootstrap.servers``, ``group.id``, ``config.storage.topic``,
``offset.storage.topic``, ``status.storage.topic``, ``key.converter``, ``value.converter``,
``value.converter.schemas.enable``, ``listeners``, ``rest.port`` ...). Without ``group.id`` the
worker runs standalone (offsets in ``offset.storage.file.filename``); with it, distributed.
Connector files given after the options (``.properties`` with ``name`` and ``connector.class``,
or ``.json`` as posted to ``/connectors``) are created at start, as ``connect-standalone.sh``
does. The REST API listens on http://127.0.0.1:8083 unless ``listeners`` says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from zurau.cli.common import CommandError, run_until_signalled, service_properties, setup_service_logging
from zurau.cli.extras import needs_extra
from zurau.cli.output import print_error

app = typer.Typer(help="Run a Kafka Connect worker.", no_args_is_help=True)


def load_connector_file(path: Path) -> tuple[str, dict[str, Any]]:
    """``(name, config)`` from a connector ``.properties`` or ``.json`` file."""
    from zurau.config import load_properties

    if not path.exists():
        raise CommandError(f"connector file {path} does not exist")
    if path.suffix == ".json":
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise CommandError(f"connector file {path} is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise CommandError(f"connector file {path} must hold a JSON object")
        config = body.get("config", body)
        name = body.get("name", config.get("name") if isinstance(config, dict) else None)
    else:
        config = dict(load_properties(path))
        name = config.get("name")
    if not isinstance(config, dict) or not isinstance(name, str) or not name:
        raise CommandError(f"connector file {path} must give a connector name and config")
    return name, config


@app.command("start")
def connect_start(
    connectors: list[Path] = typer.Argument(None, help="connector .properties or .json files to create"),
    config: Path | None = typer.Option(None, "--config", "-c", help="worker .properties file"),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Start a worker in the foreground (Ctrl-C or SIGTERM stops it)."""
    with needs_extra("zurau connect", "connect"):
        from zurau.client.errors import ClientError
        from zurau.connect.server import ConnectServer
        from zurau.connect.worker import ConnectError
        from zurau.connect.worker_config import WorkerConfig, WorkerConfigError

        setup_service_logging(log_level)
        try:
            cfg = WorkerConfig.from_props(service_properties(config, override))
            files = [load_connector_file(p) for p in connectors or []]
        except (CommandError, WorkerConfigError) as e:
            print_error(str(e))
            raise typer.Exit(1) from None

        async def serve() -> None:
            server = ConnectServer(cfg)
            await server.start()
            try:
                for name, connector_config in files:
                    await server.worker.put_connector_config(name, connector_config)
                assert server.listener is not None and server.listener.task is not None
                await server.listener.task
            finally:
                await server.stop()

        try:
            run_until_signalled(serve)
        except ConnectError as e:
            print_error(f"cannot create the connector: {e.message}")
            raise typer.Exit(1) from None
        except (OSError, ClientError, RuntimeError) as e:
            print_error(f"cannot start the Connect worker: {e}")
            raise typer.Exit(1) from None
