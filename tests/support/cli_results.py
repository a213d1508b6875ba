"""Checks on the result of a ``zurau`` command run in-process with typer's ``CliRunner``.

The CLI's contract (zurau/cli/output.py): the answer on stdout and exit status 0, or exit status 1
with exactly one ``error: <message>`` line on stderr.
"""

from __future__ import annotations

from typer.testing import Result


def ok(result: Result) -> str:
    """Assert exit 0; return stdout."""
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.stdout} {result.stderr} {result.exception!r}"
    return result.stdout


def failed(result: Result, *fragments: str, ignoring: str | None = None) -> str:
    """Assert exit 1 with exactly one error line on stderr containing ``fragments`` (lines that
    start with ``ignoring``, e.g. a progress summary, are not counted); return that line."""
    assert result.exit_code == 1, f"exit {result.exit_code}: {result.stdout} {result.stderr}"
    lines = result.stderr.strip().splitlines()
    if ignoring is not None:
        lines = [ln for ln in lines if not ln.startswith(ignoring)]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]
