"""How every ``zurau`` command prints: answers on stdout, notices, errors and progress on stderr.

* stdout carries the answer only: lines (:func:`print_lines`), tables (:func:`print_table`: rich
  tables, boxed on a terminal and plain aligned columns otherwise, one row per line for
  ``grep``/``awk``), or one JSON document (:func:`print_json`); ``--format table|json``
  (:class:`OutputFormat`, :data:`FormatOption`) chooses between the last two, on every command
  that prints either, and ``--json`` (:data:`JsonOption`) is an alias for ``--format json``.
* stderr carries lines for the human (:func:`notice`), errors (``error: <message>``;
  :func:`zurau.client.errors.describe_error` words a Kafka error as
  ``<message> [<KAFKA_ERROR_NAME>]``, :func:`fail` prints one such line and exits with status 1) and progress bars (:func:`progress`), which are
  drawn only when stderr is a terminal (or ``ZURAU_PROGRESS=1``), so pipes and tests see clean
  output.

This module talks to no broker; the record formats of ``zurau consume`` are in
:mod:`zurau.cli.formatting`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, NoReturn

import typer


# ---------------------------------------------------------------------------- answers (stdout)
class OutputFormat(StrEnum):
    """How a command prints its answer."""

    table = "table"
    json = "json"


FormatOption = typer.Option(OutputFormat.table, "--format", help="table or json", case_sensitive=False)
#: ``--json``: an alias for ``--format json`` (:func:`resolve_format`), on every command with ``--format``.
JsonOption = typer.Option(False, "--json", help="Same as --format json")


def resolve_format(fmt: OutputFormat, as_json: bool) -> OutputFormat:
    """The format a command prints in: ``--json`` means ``--format json`` whatever ``--format`` says."""
    return OutputFormat.json if as_json else fmt


def print_lines(lines: Iterable[str]) -> None:
    """Each line on stdout."""
    for line in lines:
        typer.echo(line)


def print_json(doc: Any) -> None:
    """One JSON document on stdout (indented by two)."""
    typer.echo(json.dumps(doc, indent=2))


def print_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """A rich table on stdout: boxed on a terminal, plain aligned columns otherwise.

    ``None`` and empty cells print as ``-`` (Kafka's placeholder); no cell is ever wrapped or cut when
    stdout is not a terminal, and lines carry no trailing spaces.
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    rows = list(rows)
    tty = sys.stdout.isatty()
    table = Table(
        box=box.SIMPLE_HEAD if tty else None,
        header_style="bold" if tty else "",
        show_edge=tty,
        pad_edge=tty,
        highlight=False,
    )
    for h in headers:
        table.add_column(h, no_wrap=not tty, overflow="fold")
    for r in rows:
        table.add_row(*(Text("-" if v is None or v == "" else str(v)) for v in r))
    if tty:
        Console(highlight=False).print(table)
        return
    console = Console(width=1 << 16, color_system=None, highlight=False, soft_wrap=False)
    with console.capture() as capture:
        console.print(table)
    print_lines(line.rstrip() for line in capture.get().splitlines())


def print_rows(
    fmt: OutputFormat, headers: Sequence[str], rows: Iterable[Sequence[object]], keys: Sequence[str] = ()
) -> None:
    """Rows as a table, or as a JSON list of objects keyed by ``keys`` (default: the headers)."""
    rows = list(rows)
    if fmt == OutputFormat.json:
        print_json([dict(zip(keys or headers, row, strict=True)) for row in rows])
    else:
        print_table(headers, rows)


# ---------------------------------------------------------------------------- notices and errors (stderr)
def notice(message: str) -> None:
    """A line for the human on stderr (not an error)."""
    typer.echo(message, err=True)


def one_line(text: str) -> str:
    """``text`` with every run of white space (newlines too) folded into one space."""
    return " ".join(str(text).split())


def print_error(message: str) -> None:
    """``error: <message>`` on stderr, as given."""
    typer.echo(f"error: {message}", err=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``message`` as one error line and exit with ``code``."""
    print_error(one_line(message))
    raise typer.Exit(code)


# ---------------------------------------------------------------------------- progress (stderr)
class Progress:
    """A handle on a progress bar; does nothing when no bar is drawn."""

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
def progress(description: str, total: float | None = None, *, unit: str = "") -> Iterator[Progress]:
    """A rich progress bar on stderr (see :func:`show_progress`); otherwise a no-op."""
    if not show_progress():
        yield Progress()
        return
    if len(description) > 40:  # keep room for the bar and the counts on narrow terminals
        description = description[:39] + "…"
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    columns: list[Any] = [SpinnerColumn(), TextColumn("[progress.description]{task.description}")]
    if total is not None:
        columns.append(BarColumn())
    columns += [MofNCompleteColumn() if total is not None else TextColumn("{task.completed:,.0f} " + unit),
                TimeElapsedColumn()]  # fmt: skip
    console = Console(stderr=True, force_terminal=True) if not sys.stderr.isatty() else Console(stderr=True)
    with RichProgress(*columns, console=console, transient=True) as p:
        yield Progress(p, p.add_task(description, total=total))
