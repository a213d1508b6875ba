"""Servers in their own OS process on 127.0.0.1: ``zurau broker start`` for tests and benchmarks.

* :class:`ServerProcess`: any server command, on a port that was free a moment ago, with its
  output appended to a log file. :meth:`~ServerProcess.start` returns once the port accepts
  connections (or raises, with the process killed and its log's last lines in the message, if it
  exited or never listened);
  :meth:`~ServerProcess.stop` sends SIGTERM and waits (SIGKILL after a grace period);
  :meth:`~ServerProcess.kill` is ``kill -9``. The same object can be started again after either,
  on the same port. Signals go only to the process the object started, by its process id.
* :class:`BrokerProcess`: a Zurau broker (``python -m zurau.cli.main broker start``) with a
  fixed data directory, so it can be killed and restarted over the same log, and Kafka broker
  configs as ``--override`` values.

Only the standard library is imported here (an import-linter contract keeps the broker stack out):
the broker runs in the child process, from whatever ``zurau`` that interpreter imports.
"""

from __future__ import annotations

import abc
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self

HOST = "127.0.0.1"
LOG_TAIL_LINES = 20  # of the server's log, in the error when it does not come up


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 20.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Return once 127.0.0.1:``port`` accepts connections; RuntimeError if ``proc`` exits first,
    TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before listening")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {HOST}:{port} after {timeout}s")


def zurau_broker_command(
    port: int, data_dir: Path, overrides: Mapping[str, str] | None = None, *, log_level: str | None = None
) -> list[str]:
    """``python -m zurau.cli.main broker start`` on 127.0.0.1:``port`` with its log in ``data_dir``."""
    args = [sys.executable, "-m", "zurau.cli.main", "broker", "start"]
    if log_level is not None:
        args += ["--log-level", log_level]
    settings = {"listeners": f"PLAINTEXT://{HOST}:{port}", "log.dirs": str(data_dir), **(overrides or {})}
    for k, v in settings.items():
        args += ["--override", f"{k}={v}"]
    return args


class ServerProcess(abc.ABC):
    """A server in its own process on 127.0.0.1:``port``; subclasses give :meth:`command`."""

    #: Seconds :meth:`start` waits for the port to accept connections.
    start_timeout = 20.0
    #: Start the process in a session of its own (a Ctrl-C at the terminal does not reach it).
    new_session = False

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "server not started"
        return self.proc.pid

    @abc.abstractmethod
    def command(self) -> list[str]:
        """The command line that starts the server."""

    def env(self) -> dict[str, str] | None:
        """The process's environment (None: this process's)."""
        return None

    def launch(self) -> None:
        """Start the process without waiting for its port (the nodes of a cluster wait for each
        other, so they are all launched before any is waited for)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env(),
                start_new_session=self.new_session,
            )

    def wait_ready(self, timeout: float) -> None:
        """Until the port accepts connections; the error names the end of the server's log."""
        try:
            wait_for_port(self.port, timeout, self.proc)
        except (RuntimeError, TimeoutError) as e:
            tail = "\n".join(self.log_text().splitlines()[-LOG_TAIL_LINES:])
            raise type(e)(f"{e}; the end of {self.log_path}:\n{tail}") from None

    def start(self) -> Self:
        self.launch()
        try:
            self.wait_ready(self.start_timeout)
        except BaseException:
            self.kill()
            raise
        return self

    def kill(self) -> None:
        """kill -9: no flush, no checkpoint, no clean-shutdown marker."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait for the exit status (None: not running, or killed after ``timeout``)."""
        proc, code = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None
        return code

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BrokerProcess(ServerProcess):
    """A Zurau broker with a fixed data dir, so it can be killed and restarted over its log.

    ``overrides`` are Kafka broker configs (``BrokerProcess(d, **{"num.partitions": "3"})``); the
    log goes to ``broker-<port>.log`` next to ``data_dir`` unless ``log_path`` says otherwise.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        log_path: Path | None = None,
        log_level: str | None = None,
        **overrides: str,
    ) -> None:
        port = port or free_port()
        super().__init__(port, log_path or data_dir.parent / f"broker-{port}.log")
        self.data_dir = data_dir
        self.log_level = log_level
        self.overrides = overrides

    def command(self) -> list[str]:
        return zurau_broker_command(self.port, self.data_dir, self.overrides, log_level=self.log_level)


__all__ = [
    "BrokerProcess",
    "ServerProcess",
    "free_port",
    "wait_for_port",
    "zurau_broker_command",
]
