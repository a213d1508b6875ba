"""Shared pieces of the client commands: connection options, error reporting, progress.

Every client command takes ``--bootstrap-server`` (``-b``) and ``--command-config`` (a Kafka
client properties file, as Kafka's tools do) and runs one coroutine with :func:`run`, which turns
any failure into one line on stderr (``error: <message> [<KAFKA_ERROR_NAME>]``) and exit status 1.
Progress bars are drawn on stderr only when stderr is a terminal, so pipes and tests see clean
output.

This module and the command modules it serves talk to brokers only through :mod:`zurau.client`;
they never import the broker stack (an import-linter contract checks it).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer

from zurau.client.config import ClientConfig
from zurau.client.errors import ClientError
from zurau.protocol.errors import KafkaError

T = TypeVar("T")

BOOTSTRAP_HELP = "Kafka broker(s) to connect to, host:port[,host:port] (default 127.0.0.1:9092)"
COMMAND_CONFIG_HELP = "Client properties file (bootstrap.servers, client.id, request.timeout.ms, ...)"

BootstrapOption = typer.Option(None, "--bootstrap-server", "-b", help=BOOTSTRAP_HELP, show_default=False)
CommandConfigOption = typer.Option(None, "--command-config", help=COMMAND_CONFIG_HELP, show_default=False)


class CommandError(Exception):
    """A failure the command reports as is (already a complete one-line message)."""


# Kafka's ``Errors`` names that do not follow from the exception class name.
_ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    2: "CORRUPT_MESSAGE",
    17: "INVALID_TOPIC_EXCEPTION",
    56: "KAFKA_STORAGE_ERROR",
}


def kafka_error_name(err: KafkaError) -> str:
    """``UnknownTopicOrPartitionError`` -> ``UNKNOWN_TOPIC_OR_PARTITION`` (Kafka's ``Errors`` name)."""
    if type(err) is KafkaError:
        return "KAFKA_ERROR"
    if err.code in _ERROR_NAMES:
        return _ERROR_NAMES[err.code]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(err).__name__.removesuffix("Error")).upper()


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {one_line(message)}", err=True)
    raise typer.Exit(code)


def describe_error(e: BaseException) -> str:
    if isinstance(e, KafkaError):
        msg = e.message or ""
        name = kafka_error_name(e)
        return f"{msg} [{name}]" if msg and msg != type(e).__name__ else name
    return str(e) or type(e).__name__


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
        typer.echo("interrupted", err=True)
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


# ---------------------------------------------------------------------------- progress
class _Progress:
    def __init__(self, progress: Any = None, task: Any = None) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: float = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def update(self, **kw: Any) -> None:
        if self._progress is not None:
            self._progress.update(self._task, **kw)


def show_progress() -> bool:
    """Progress bars go to stderr when it is a terminal, or always with ``ZURAU_PROGRESS=1``."""
    forced = os.environ.get("ZURAU_PROGRESS", "").strip().lower()
    if forced in ("0", "false", "no"):
        return False
    return forced in ("1", "true", "yes") or sys.stderr.isatty()


@contextmanager
def progress(description: str, total: float | None = None, *, unit: str = "") -> Iterator[_Progress]:
    """A rich progress bar on stderr (see :func:`show_progress`); otherwise a no-op."""
    if not show_progress():
        yield _Progress()
        return
    if len(description) > 40:  # keep room for the bar and the counts on narrow terminals
        description = description[:39] + "…"
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[Any] = [SpinnerColumn(), TextColumn("[progress.description]{task.description}")]
    if total is not None:
        columns.append(BarColumn())
    columns += [MofNCompleteColumn() if total is not None else TextColumn("{task.completed:,.0f} " + unit),
                TimeElapsedColumn()]  # fmt: skip
    console = Console(stderr=True, force_terminal=True) if not sys.stderr.isatty() else Console(stderr=True)
    with Progress(*columns, console=console, transient=True) as p:
        yield _Progress(p, p.add_task(description, total=total))
