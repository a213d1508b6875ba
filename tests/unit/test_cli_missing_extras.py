"""An edge command whose optional dependencies are missing names the extra to install and exits 1
(zurau.cli.extras), instead of dying with a ModuleNotFoundError traceback."""

from __future__ import annotations

import builtins
from typing import Any

import pytest
from typer.testing import CliRunner

from zurau.cli.main import app

runner = CliRunner()


def _without(monkeypatch: pytest.MonkeyPatch, importing: str, missing: str) -> None:
    """Importing ``importing`` (even when already loaded) fails as if ``missing`` were not installed."""
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == importing or name.startswith(importing + "."):
            raise ModuleNotFoundError(f"No module named '{missing}'", name=missing)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)


@pytest.mark.parametrize(
    ("args", "importing", "missing", "extra"),
    [
        (["registry", "start"], "zurau.schema_registry.server", "starlette", "registry"),
        (["connect", "start"], "zurau.connect.server", "starlette", "connect"),
        (["console"], "zurau.console.server", "httpx", "console"),
        (["pipeline", "telemetry"], "pyspark", "pyspark", "spark"),
        (["pipeline", "cdc"], "psycopg2", "psycopg2", "spark,connect"),
    ],
)
def test_a_missing_extra_is_named_and_the_command_exits_1(
    monkeypatch: pytest.MonkeyPatch, args: list[str], importing: str, missing: str, extra: str
) -> None:
    _without(monkeypatch, importing, missing)
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    command = "zurau " + (" ".join(args[:2]) if args[0] == "pipeline" else args[0])
    assert (
        f"error: {command} needs the '{extra}' extra: pip install 'zurau[{extra}]' (missing module {missing})"
        in result.stderr
    )
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_a_missing_zurau_module_is_a_bug_and_not_blamed_on_an_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "zurau.schema_registry.server", "zurau.schema_registry.gone")
    result = runner.invoke(app, ["registry", "start"])
    assert isinstance(result.exception, ModuleNotFoundError)
    assert "extra" not in result.stderr
