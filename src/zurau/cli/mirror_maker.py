"""``zurau mirror-maker mm2.properties [--clusters B ...]``: MirrorMaker 2 in dedicated mode, as
Kafka's ``connect-mirror-maker.sh`` (:mod:`zurau.connect.mirror.maker` describes the file).

Runs in the foreground until Ctrl-C or SIGTERM, which stop every worker cleanly (tasks commit
their offsets, workers leave their groups). ``--clusters`` names the target clusters this
process drives (every cluster by default). A bad file, or a cluster that cannot be reached at
start, is one line on stderr and exit status 1.
"""

from __future__ import annotations

from pathlib import Path

import typer

from zurau.cli.common import CommandError, run_until_signalled, service_properties, setup_service_logging
from zurau.cli.extras import needs_extra
from zurau.cli.output import print_error


def mirror_maker(
    args: list[str] = typer.Argument(..., metavar="MM2_PROPERTIES", help="mm2.properties"),
    clusters: list[str] = typer.Option(
        [],
        "--clusters",
        help="target clusters this process drives (as Kafka's "
        "--clusters B C; repeatable, comma-separated too); default: every cluster",
    ),
    override: list[str] = typer.Option([], "--override", "-o", help="key=value, overriding the file"),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR"),
) -> None:
    """Run MirrorMaker 2's replication flows (connect-mirror-maker.sh)."""
    with needs_extra("zurau mirror-maker", "connect"):
        from zurau.client.errors import ClientError
        from zurau.connect.mirror.maker import MirrorMaker, MirrorMakerConfig, MirrorMakerConfigError
        from zurau.connect.worker import ConnectError
        from zurau.connect.worker_config import WorkerConfigError
        from zurau.protocol.errors import KafkaError

        setup_service_logging(log_level)
        config, extra = Path(args[0]), args[1:]
        if extra and not clusters:
            print_error(f"unexpected arguments: {' '.join(extra)}")
            raise typer.Exit(1)
        # `--clusters B C` (Kafka's form): click takes B as the option's value and C as an argument
        targets = [c.strip() for item in (*clusters, *extra) for c in item.split(",") if c.strip()]
        try:
            maker = MirrorMaker(MirrorMakerConfig(service_properties(config, override)), targets)
        except (CommandError, MirrorMakerConfigError) as e:
            print_error(str(e))
            raise typer.Exit(1) from None

        async def serve() -> None:
            import asyncio

            await maker.start()
            try:
                await asyncio.Event().wait()
            finally:
                await maker.stop()

        try:
            run_until_signalled(serve)
        except ConnectError as e:
            print_error(f"cannot configure the mirror connectors: {e.message}")
            raise typer.Exit(1) from None
        except (OSError, ClientError, KafkaError, RuntimeError, WorkerConfigError) as e:
            print_error(f"cannot start MirrorMaker: {e}")
            raise typer.Exit(1) from None
