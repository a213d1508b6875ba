"""Finding PostgreSQL's server binaries for the throwaway test server, and the error without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from zurau.testing.postgres import PostgresNotFoundError, find_postgres_bindir


def test_a_directory_without_the_binaries_is_named_with_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "initdb").write_text("")
    with pytest.raises(PostgresNotFoundError, match=r"lacks the PostgreSQL server binaries postgres, pg_isready"):
        find_postgres_bindir(tmp_path)


def test_the_environment_variable_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("initdb", "postgres", "pg_isready"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("ZURAU_POSTGRES_BINDIR", str(tmp_path))
    assert find_postgres_bindir() == tmp_path


def test_without_any_installation_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZURAU_POSTGRES_BINDIR", raising=False)
    monkeypatch.setattr("zurau.testing.postgres.POSTGRES_ROOT", Path("/nonexistent"))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PostgresNotFoundError, match="apt-get install postgresql"):
        find_postgres_bindir()
