"""The benchmark report's header: the exact commit measured, the clients' full versions, one repeat count."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

import confluent_kafka
import pytest
from bench import _provenance, run
from bench._provenance import client_version, clients_used, provenance_line, zurau_revision


def _git(repo: Path, *args: str) -> str:
    cmd = [
        "git",
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "commit.gpgsign=false",
        *args,
    ]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_revision_is_the_full_commit_and_dirty_when_the_tree_changed(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    assert len(head) == 40
    assert zurau_revision(repo) == head
    (repo / "a.py").write_text("x = 2\n")  # a modified file
    assert zurau_revision(repo) == head + "+dirty"
    _git(repo, "checkout", "-q", "--", "a.py")
    assert zurau_revision(repo) == head
    (repo / "new.py").write_text("")  # an untracked file may be code that ran too
    assert zurau_revision(repo) == head + "+dirty"
    (repo / "new.py").unlink()
    (repo / "a.py").write_text("x = 3\n")
    _git(repo, "commit", "-q", "-am", "two")
    assert zurau_revision(repo) == _git(repo, "rev-parse", "HEAD") != head


def test_revision_outside_a_checkout_says_unknown(tmp_path: Path) -> None:
    assert zurau_revision(tmp_path).startswith("unknown (")


def test_client_versions_are_full() -> None:
    ck = confluent_kafka.version()
    ck_text = ck[0] if isinstance(ck, tuple) else ck
    lib_text, lib_num = confluent_kafka.libversion()
    assert (
        client_version("confluent_kafka")
        == f"confluent-kafka {ck_text} (librdkafka {lib_text} (0x{lib_num:08x}))"
    )
    assert ck_text.count(".") >= 2  # e.g. 2.16.1, not "2"
    assert client_version("kafka") == f"kafka-python {importlib.metadata.version('kafka-python')}"
    assert client_version("aiokafka") == f"aiokafka {importlib.metadata.version('aiokafka')}"
    with pytest.raises(ValueError, match="unknown client"):
        client_version("pykafka")
    assert clients_used(["aiokafka", "kafka"]) == [client_version("aiokafka"), client_version("kafka")]


def test_provenance_line_names_commit_and_clients(repo: Path) -> None:
    line = provenance_line(repo, ["confluent_kafka"])
    assert (
        line == f"Zurau at {_git(repo, 'rev-parse', 'HEAD')}; clients: {client_version('confluent_kafka')}."
    )
    assert provenance_line(repo, []).endswith("clients: none.")


def test_report_header_of_bench_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repo: Path) -> None:
    monkeypatch.setattr(run, "ROOT", repo)
    monkeypatch.setattr(run, "tansu_version", lambda: "tansu 0.6.0")
    runner = run.Runner(run.Scale(**{**run.asdict(run.QUICK), "repeat": 2}), tmp_path, verbose=False)
    text = run.report(runner, ".venv/bin/python -m bench.run --quick --repeat 2", 60.0)
    head = _git(repo, "rev-parse", "HEAD")
    assert f"Zurau at {head}; clients: {client_version('confluent_kafka')}." in text
    assert "the working tree" not in text and "tansu 0.6.0" in text
    assert "Every case ran 2 times per broker" in text
    assert _provenance.ROOT == Path(run.__file__).resolve().parent.parent


def test_every_case_runs_the_scale_repeat_count(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """each_broker takes no per-case repeat: throughput and latency cases all run scale.repeat times."""
    runner = run.Runner(run.Scale(**{**run.asdict(run.QUICK), "repeat": 3}), tmp_path, verbose=False)
    calls: list[str] = []

    def broker(name: str) -> type:
        class Fake:
            def __init__(self, workdir: Path) -> None:
                self.name = name

            def __enter__(self) -> Fake:
                return self

            def __exit__(self, *exc: object) -> None:
                pass

        return Fake

    def measure(b: object) -> run.Measurement:
        calls.append(b.name)  # type: ignore[attr-defined]
        return run.Measurement(records=1, payload_bytes=1, seconds=1.0)

    monkeypatch.setattr(run, "BROKER_TYPES", (broker("Zurau"), broker("Tansu")))
    assert set(runner.each_broker(measure)) == {"Zurau", "Tansu"}
    runner.each_broker(measure, quietest=True)
    assert calls == ["Zurau", "Tansu"] * 6


def test_best_points_keeps_the_best_of_each_checkpoint() -> None:
    from bench._storage import LogSizePoint

    a = [LogSizePoint(10, 1, 5.0, 100.0, 2.0, 9.0), LogSizePoint(20, 2, 6.0, 90.0, 3.0, 8.0)]
    b = [LogSizePoint(10, 1, 4.0, 120.0, 2.5, 7.0), LogSizePoint(20, 2, 7.0, 80.0, 1.0, 9.0)]
    assert run.best_points([a, b]) == [
        LogSizePoint(10, 1, 4.0, 120.0, 2.0, 7.0),
        LogSizePoint(20, 2, 6.0, 90.0, 1.0, 8.0),
    ]
