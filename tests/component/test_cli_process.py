"""The ``zurau`` executable, as a user runs it, against a broker in a separate process.

Every client command runs once in a subprocess (exit status, stdout, one-line stderr), including
the error paths: unknown topic, bad config name, unreachable broker. Ctrl-C ends ``consume``
cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess, free_port

ZURAU = [sys.executable, "-m", "zurau.cli.main"]


@pytest.fixture(scope="module")
def bp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp_path_factory.mktemp("cli-process") / "data")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def zurau(
    bp: BrokerProcess | str, *args: str, stdin: bytes | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    bootstrap = bp if isinstance(bp, str) else bp.bootstrap_servers
    return subprocess.run(
        [*ZURAU, *args, "--bootstrap-server", bootstrap],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def ok(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr}"
    return p.stdout


def one_error_line(p: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert p.returncode == 1, f"exit {p.returncode}: {p.stdout} {p.stderr}"
    lines = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("Processed a total")]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_every_command_against_a_broker_process(bp: BrokerProcess) -> None:
    t = "proc-topic"
    assert (
        ok(zurau(bp, "topics", "create", t, "--partitions", "2", "--config", "retention.ms=86400000"))
        == f"Created topic {t}.\n"
    )
    assert t in ok(zurau(bp, "topics", "list")).splitlines()
    ok(zurau(bp, "produce", t, "--key-separator", "=", "--header", "via=process", stdin=b"a=1\nb=2\nc=3\n"))
    doc = json.loads(ok(zurau(bp, "topics", "describe", t, "--json")))[0]
    assert doc["configs"] == {"retention.ms": "86400000"}
    assert sum(p["log_end_offset"] for p in doc["partitions"]) == 3
    assert all(p["leader"] == 1 and p["isr"] == [1] for p in doc["partitions"])
    printed = ok(zurau(bp, "consume", t, "--from-beginning", "-e", "--format", r"%k=%s %h\n"))
    assert sorted(printed.splitlines()) == ["a=1 via=process", "b=2 via=process", "c=3 via=process"]
    ok(zurau(bp, "topics", "alter", t, "--partitions", "3"))
    ok(zurau(bp, "configs", "alter", "--topic", t, "--add-config", "retention.ms=1000"))
    assert "retention.ms=1000 sensitive=false source=DYNAMIC_TOPIC_CONFIG" in ok(
        zurau(bp, "configs", "describe", "--topic", t)
    )
    assert "log.segment.bytes=" in ok(zurau(bp, "configs", "describe", "--broker", "1", "--all"))
    assert ok(zurau(bp, "topics", "delete", t)) == f"Deleted topic {t}.\n"


def test_error_paths_exit_1_with_one_line(bp: BrokerProcess) -> None:
    one_error_line(
        zurau(bp, "topics", "describe", "nope"), "Topic 'nope' does not exist", "[UNKNOWN_TOPIC_OR_PARTITION]"
    )
    one_error_line(zurau(bp, "consume", "nope", "-e"), "[UNKNOWN_TOPIC_OR_PARTITION]")
    ok(zurau(bp, "topics", "create", "errs"))
    one_error_line(zurau(bp, "configs", "alter", "--topic", "errs", "--add-config", "bad.name=1"),
                   "Unknown topic config name: bad.name", "[INVALID_CONFIG]")  # fmt: skip
    one_error_line(zurau(bp, "topics", "create", "errs"), "[TOPIC_ALREADY_EXISTS]")
    dead = f"127.0.0.1:{free_port()}"
    for args in (
        ("topics", "list"),
        ("produce", "errs"),
        ("consume", "errs"),
        ("configs", "describe", "--topic", "errs"),
    ):
        one_error_line(zurau(dead, *args, stdin=b"x\n"), f"no broker reachable at {dead}")


def test_ctrl_c_stops_consume_cleanly(bp: BrokerProcess, tmp_path: Path) -> None:
    ok(zurau(bp, "topics", "create", "sigint"))
    ok(zurau(bp, "produce", "sigint", stdin=b"one\ntwo\n"))
    proc = subprocess.Popen(
        [*ZURAU, "consume", "sigint", "--from-beginning", "--bootstrap-server", bp.bootstrap_servers],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "one\n"
        assert proc.stdout.readline() == "two\n"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert err.strip().splitlines()[-1] == "Processed a total of 2 messages"
