"""Shared pieces of the client commands: connection options, running, option parsing.

Every client command takes ``--bootstrap-server`` (``-b``) and ``--command-config`` (a Kafka
client properties file, as Kafka's tools do) and runs one coroutine with :func:`run`, which turns
any failure into one line on stderr (``error: <message> [<KAFKA_ERROR_NAME>]``) and exit status 1.
What commands print, and how, is :mod:`zurau.cli.output`.

This module and the command modules it serves talk to brokers only through :mod:`zurau.client`;
they never import the broker stack (an import-linter contract checks it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

import typer

from zurau.cli.output import fail, notice
from zurau.client.config import ClientConfig
from zurau.client.errors import ClientError, describe_error
from zurau.protocol.errors import KafkaError

T = TypeVar("T")

BOOTSTRAP_HELP = "Kafka broker(s) to connect to, host:port[,host:port] (default 127.0.0.1:9092)"
COMMAND_CONFIG_HELP = "Client properties file (bootstrap.servers, client.id, request.timeout.ms, ...)"

BootstrapOption = typer.Option(None, "--bootstrap-server", "-b", help=BOOTSTRAP_HELP, show_default=False)
CommandConfigOption = typer.Option(None, "--command-config", help=COMMAND_CONFIG_HELP, show_default=False)


class CommandError(Exception):
    """A failure the command reports as is (already a complete one-line message)."""


def client_config(bootstrap_server: str | None, command_config: Path | None, **extra: str) -> ClientConfig:
    """Load ``--command-config`` and apply ``--bootstrap-server``; exits 1 on a bad config."""
    try:
        cfg = ClientConfig.load(command_config, bootstrap_server)
    except ClientError as e:
        fail(str(e))
    return cfg.with_extra(**extra) if extra else cfg


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover - uvloop is a dependency where it exists
        return asyncio.new_event_loop()


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main()`` on a fresh event loop; any failure becomes one error line and exit 1."""
    loop = new_loop()
    try:
        return loop.run_until_complete(main())
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        notice("interrupted")
        raise typer.Exit(130) from None
    except (KafkaError, ClientError, CommandError, OSError, ValueError) as e:
        if os.environ.get("ZURAU_DEBUG"):
            raise
        fail(describe_error(e))
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


# ---------------------------------------------------------------------------- names and lists
def names_of(positional: Sequence[str] | None, options: Sequence[str]) -> list[str]:
    """Names given as arguments and as repeatable options, in order, each once."""
    return list(dict.fromkeys([*(positional or []), *options]))


def split_values(values: Iterable[str]) -> list[str]:
    """Repeatable options that also take comma lists: ``--state a,b --state c`` -> [a, b, c]."""
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


# ---------------------------------------------------------------------------- service commands
def setup_service_logging(level: str) -> None:
    """Log lines of a foreground service (``broker start``, ``registry start`` ...) to stderr."""
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def run_until_signalled(serve: Callable[[], Awaitable[None]]) -> None:
    """Run ``serve()`` (a service in the foreground) on a new event loop until it returns or
    SIGINT/SIGTERM cancels it; its errors reach the caller."""

    async def main() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, lambda: task.cancel() if task else None)
        try:
            await serve()
        except asyncio.CancelledError:
            pass

    asyncio.run(main())


def service_properties(config: Path | None, overrides: Iterable[str]) -> dict[str, str]:
    """A service's properties: those of the ``--config`` file, then each ``-o key=value`` over
    them. CommandError (one line) for a missing file or an override without ``=``."""
    from zurau.config import load_properties

    props: dict[str, str] = {}
    if config is not None:
        if not config.exists():
            raise CommandError(f"config file {config} does not exist")
        props.update(load_properties(config))
    props.update((key, value or "") for key, value in parse_kv(overrides, "--override"))
    return props


# ---------------------------------------------------------------------------- key=value options
def parse_kv(
    items: Iterable[str], what: str, *, allow_missing_value: bool = False
) -> list[tuple[str, str | None]]:
    """``["k=v", ...]`` -> pairs. CommandError (one line) for an item without ``=``."""
    out: list[tuple[str, str | None]] = []
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not key or (not sep and not allow_missing_value):
            raise CommandError(f"{what} expects key=value, got {item!r}")
        out.append((key, value if sep else None))
    return out


def split_config_list(text: str) -> list[str]:
    """Kafka's ``--add-config`` syntax: ``k1=v1,k2=[a,b],k3=v3`` -> ``["k1=v1", "k2=a,b", "k3=v3"]``."""
    items: list[str] = []
    buf: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
            continue
        if ch == "]":
            depth = max(0, depth - 1)
            continue
        if ch == "," and depth == 0:
            items.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    items.append("".join(buf))
    return [i.strip() for i in items if i.strip()]


def config_pairs(values: Iterable[str]) -> dict[str, str]:
    """Repeatable ``--config k=v`` options (each may hold a comma list in Kafka's syntax)."""
    out: dict[str, str] = {}
    for v in values:
        for item in split_config_list(v):
            for key, value in parse_kv([item], "--config"):
                out[key] = value or ""
    return out
