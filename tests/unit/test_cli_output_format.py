"""The CLI's one output flag: ``--format table|json`` on every command that prints a table or a JSON
document, with ``--json`` as an alias for ``--format json`` (zurau/cli/output.py). No broker: the
commands' admin clients are replaced by canned answers."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from zurau.cli import transactions
from zurau.cli.main import app
from zurau.cli.output import FormatOption, JsonOption, OutputFormat, resolve_format
from zurau.protocol.sasl.scram import ScramMechanism

runner = CliRunner()


def commands(typer_app: typer.Typer, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every command of ``typer_app`` and of its sub-apps, as (``"group command"``, function)."""
    for cmd in typer_app.registered_commands:
        assert cmd.callback is not None
        yield " ".join((*path, cmd.name or cmd.callback.__name__)), cmd.callback
    for group in typer_app.registered_groups:
        assert group.typer_instance is not None and group.name
        yield from commands(group.typer_instance, (*path, group.name))


def test_every_table_or_json_command_takes_both_flags() -> None:
    defaults = {
        name: {p.default for p in inspect.signature(fn).parameters.values()} for name, fn in commands(app)
    }
    with_format = {name for name, d in defaults.items() if any(v is FormatOption for v in d)}
    with_json = {name for name, d in defaults.items() if any(v is JsonOption for v in d)}
    assert with_format == with_json
    assert {"topics describe", "configs describe", "groups list", "groups describe",
            "transactions describe-producers", "user-scram describe", "client-quotas describe"} <= with_format


def test_json_wins_over_the_format_it_aliases() -> None:
    assert resolve_format(OutputFormat.table, True) is OutputFormat.json
    assert resolve_format(OutputFormat.json, False) is OutputFormat.json
    assert resolve_format(OutputFormat.table, False) is OutputFormat.table


def invoke(*args: str) -> str:
    result = runner.invoke(app, [*args, "--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.stderr} {result.exception!r}"
    return result.stdout


@pytest.fixture
def producers(monkeypatch: pytest.MonkeyPatch) -> None:
    states = [
        SimpleNamespace(producer_id=7, producer_epoch=1, coordinator_epoch=-1, last_sequence=41,
                        last_timestamp=1_700_000_000_000, current_txn_start_offset=12),
        SimpleNamespace(producer_id=9, producer_epoch=0, coordinator_epoch=3, last_sequence=0,
                        last_timestamp=1_700_000_000_500, current_txn_start_offset=-1),
    ]  # fmt: skip
    monkeypatch.setattr(transactions, "_run", lambda *_a: states)


def test_describe_producers_prints_the_same_json_for_both_flags(producers: None) -> None:
    base = ["transactions", "describe-producers", "--topic", "t", "--partition", "0"]
    by_format = invoke(*base, "--format", "json")
    assert invoke(*base, "--json") == by_format
    assert invoke(*base, "--format", "table", "--json") == by_format
    doc = json.loads(by_format)
    assert [(p["ProducerId"], p["LatestCoordinatorEpoch"], p["CurrentTransactionStartOffset"]) for p in doc] == [
        (7, None, 12), (9, 3, None),
    ]  # fmt: skip
    assert invoke(*base) == invoke(*base, "--format", "table") != by_format


class _FakeScramAdmin:
    def __init__(self, _config: Any) -> None:
        pass

    async def __aenter__(self) -> _FakeScramAdmin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    async def describe(self, users: Any = None) -> dict[str, dict[ScramMechanism, int]]:
        return {"alice": {ScramMechanism.SCRAM_SHA_512: 8192, ScramMechanism.SCRAM_SHA_256: 4096}}


def test_user_scram_describe_prints_the_same_json_for_both_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    import zurau.client.scram_admin

    monkeypatch.setattr(zurau.client.scram_admin, "ScramAdmin", _FakeScramAdmin)
    by_format = invoke("user-scram", "describe", "--format", "json")
    assert invoke("user-scram", "describe", "--json") == by_format
    assert json.loads(by_format) == [
        {"user": "alice", "mechanism": "SCRAM-SHA-256", "iterations": 4096},
        {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 8192},
    ]
    assert "ITERATIONS" in invoke("user-scram", "describe")
