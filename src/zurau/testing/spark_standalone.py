"""A Spark standalone cluster on 127.0.0.1 from PySpark's own classes, for tests of pipelines that
must run on a real cluster (executors in JVMs of their own, on workers of their own).

``SparkStandaloneCluster(workdir, workers=2)`` starts ``org.apache.spark.deploy.master.Master`` and
``workers`` ``org.apache.spark.deploy.worker.Worker`` processes with the ``spark-class`` script that
the ``pyspark`` package ships (no separate Spark download), waits until the master's JSON status
page lists every worker ALIVE, and on exit stops each process it started by its own pid. Each
worker's work directory is ``workdir/worker-<i>``: Spark writes one ``<app-id>/<executor-id>/``
directory there per executor it launched, which :meth:`executor_dirs` lists.

Only the standard library is imported; ``pyspark`` is located with ``importlib.util.find_spec``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from zurau.testing.broker_process import HOST, free_port, wait_for_port


def spark_home() -> Path:
    """The directory of the installed ``pyspark`` package (bin/, jars/): a complete SPARK_HOME."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise RuntimeError("pyspark is not installed: pip install 'zurau[spark]'")
    return Path(spec.origin).parent


class SparkStandaloneCluster:
    """A master and ``workers`` workers (``cores`` and ``memory`` each) on 127.0.0.1."""

    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workdir = workdir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.home = spark_home()
        self.port = free_port()
        self.ui_port = free_port()
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment the cluster's processes (and a spark-submit against it) run with."""
        return {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
            "SPARK_NO_DAEMONIZE": "1",
        }

    def _start(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - owned by the process
        try:
            proc = subprocess.Popen(
                [str(self.home / "bin" / "spark-class"), *args],
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )
        finally:
            log.close()
        self._procs.append(proc)
        return proc

    def status(self) -> dict[str, object]:
        """The master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=5) as r:
            result: dict[str, object] = json.load(r)
            return result

    def alive_workers(self) -> int:
        workers = self.status().get("workers", [])
        assert isinstance(workers, list)
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def worker_dir(self, i: int) -> Path:
        return self.workdir / f"worker-{i}"

    def executor_dirs(self, i: int) -> list[Path]:
        """``<app-id>/<executor-id>`` directories worker ``i`` made for the executors it launched."""
        return sorted(p for p in self.worker_dir(i).glob("app-*/*") if p.is_dir())

    def __enter__(self) -> SparkStandaloneCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            master = self._start(
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host", HOST,
                    "--port", str(self.port),
                    "--webui-port", str(self.ui_port),
                ],
            )  # fmt: skip
            wait_for_port(self.ui_port, 60, master)
            for i in range(self.workers):
                self.worker_dir(i).mkdir(exist_ok=True)
                self._start(
                    f"worker-{i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        "--host", HOST,
                        "--cores", str(self.cores),
                        "--memory", self.memory,
                        "--webui-port", str(free_port()),
                        "--work-dir", str(self.worker_dir(i)),
                        self.master_url,
                    ],
                )  # fmt: skip
            deadline = time.monotonic() + 90
            alive = 0
            while alive < self.workers:
                dead = [p.args for p in self._procs if p.poll() is not None]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{alive} of {self.workers} Spark workers registered"
                        f"{'; exited: ' + str(dead) if dead else ''}; logs in {self.workdir}"
                    )
                time.sleep(0.3)
                try:
                    alive = self.alive_workers()
                except (OSError, ValueError):
                    # The web UI listens before its pages are mounted: a 404, or the HTML page
                    # in place of /json/ (not JSON yet). Either way, ask again.
                    alive = 0
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM each process this cluster started (workers first), SIGKILL after 20 s."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self._procs):
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self._procs.clear()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
