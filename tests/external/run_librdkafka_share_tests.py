#!/usr/bin/env python3
"""Run librdkafka's own KIP-932 share-consumer tests (``tests/0170``..``0186``) against Zurau.

Not part of the CI suite: it documents, reproducibly, how those tests were run (see
``docs/testing/librdkafka-share-tests.md`` for the results). Steps:

1. librdkafka's source goes to ``--build-dir`` (default ``/tmp/librdkafka``), from a git directory
   (``--librdkafka-git``, ``git archive HEAD``) unless it is already there; it is configured
   without SSL, SASL, GSSAPI and curl (zstd too when ``zstd.h`` is missing), and ``make libs``
   and ``make -C tests build`` build ``tests/test-runner``. Nothing of it enters this repository.
2. For each test number a fresh Zurau (``python -m zurau.cli.main broker start`` from
   ``--zurau-src``; ``--nodes 3``: three combined KRaft nodes, as librdkafka's CI cluster) is
   started on free 127.0.0.1 ports with share groups on and the configs of :data:`BROKER_CONFIGS`,
   in a temp dir; ``test.conf`` points the test at it.
3. ``TESTS=<n> TEST_KAFKA_VERSION=4.2.0 ./test-runner -L`` runs the test's broker sub-tests
   (``-L``: not the ``_local`` ones, which run on librdkafka's mock cluster); ``--local`` runs
   those with ``-l``. The test's output goes to ``<out>/<n>.log``, the broker's log to
   ``<out>/<n>-broker.log`` (``<n>-node-<id>.log`` for a cluster). A test stops at its first
   failing sub-test.

Usage (``nice``: the machine is shared)::

    nice -n 19 /work/main/.venv/bin/python tests/external/run_librdkafka_share_tests.py \
        [--tests 0170,0171] [--nodes 3] [--zurau-src src] [--out /tmp/rdk-share-results]

Exit status 0 when every test passed. Only the standard library and Zurau's stdlib-only
``zurau.testing`` process helpers are used.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_GIT = Path("/work/.mirror/confluentinc+librdkafka/repo")
SHARE_TESTS = [f"{n:04d}" for n in range(170, 187)]  # 0170..0186: the share-consumer tests
CONFIGURE = [
    "--disable-ssl",
    "--disable-gssapi",
    "--disable-zstd",
    "--disable-curl",
    "--disable-sasl",
    "--disable-lz4-ext",
]
# Like the brokers librdkafka's CI runs these tests on (trivup's KafkaCluster, tests/cluster_testing.py):
# auto-created topics get 3 partitions (trivup's num_partitions; 0184's producer keeps writing to
# partition 1 of a topic that is deleted and auto-created again), record locks may be as short as
# 1 s (several tests set the group config share.record.lock.duration.ms to a few seconds).
# Shorter share-group heartbeats than Kafka's 5 s only make assignments come sooner.
BROKER_CONFIGS = {
    "group.share.enable": "true",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.min.record.lock.duration.ms": "1000",
    "auto.create.topics.enable": "true",
    "num.partitions": "3",
    "metrics.http.listener": "",
}


def replication_configs(nodes: int) -> dict[str, str]:
    """Internal topics' replication as trivup sets it for ``nodes`` brokers."""
    rf, isr = str(min(nodes, 3)), str(min(nodes, 2))
    return {
        "default.replication.factor": rf,
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": isr,
    }


def nice(cmd: list[str]) -> list[str]:
    return ["nice", "-n", "19", *cmd]


def build(build_dir: Path, git_dir: Path) -> Path:
    """librdkafka and its test-runner under ``build_dir``; returns the tests directory."""
    if not (build_dir / "configure").exists():
        build_dir.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(git_dir), "archive", "HEAD"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(build_dir)], input=archive.stdout, check=True)
    stamp = build_dir / ".zurau-configure-args"
    if (
        not (build_dir / "Makefile.config").exists()
        or not stamp.exists()
        or stamp.read_text() != " ".join(CONFIGURE)
    ):
        subprocess.run(nice(["./configure", *CONFIGURE]), cwd=build_dir, check=True)
        stamp.write_text(" ".join(CONFIGURE))
    subprocess.run(nice(["make", "-j2", "libs"]), cwd=build_dir, check=True)
    subprocess.run(nice(["make", "-j2", "-C", "tests", "build"]), cwd=build_dir, check=True)
    return build_dir / "tests"


def run_one(
    test: str, tests_dir: Path, nodes: int, out: Path, local: bool, timeout: float
) -> tuple[str, str]:
    """Run test ``test`` against a fresh Zurau (one broker, or ``nodes`` combined KRaft nodes);
    returns (result, first failure line)."""
    from zurau.testing.broker_process import BrokerProcess  # stdlib-only modules
    from zurau.testing.cluster_process import ClusterProcesses

    configs = {**BROKER_CONFIGS, **replication_configs(nodes)}
    with tempfile.TemporaryDirectory(prefix=f"zurau-rdk-{test}-") as tmp:
        server: BrokerProcess | ClusterProcesses
        if nodes == 1:
            (out / f"{test}-broker.log").unlink(missing_ok=True)
            server = BrokerProcess(Path(tmp) / "data", log_path=out / f"{test}-broker.log", **configs)
        else:
            server = ClusterProcesses(Path(tmp) / "cluster", nodes, **configs)
        conf = Path(tmp) / "test.conf"
        env = {
            **os.environ,
            "TESTS": test,
            "TEST_KAFKA_VERSION": "4.2.0",
            "RDKAFKA_TEST_CONF": str(conf),
            "LD_LIBRARY_PATH": f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}",
        }
        log_path = out / f"{test}.log"
        with server:
            conf.write_text(f"bootstrap.servers={server.bootstrap_servers}\ntest.timeout.multiplier=2\n")
            started = time.monotonic()
            with open(log_path, "wb") as log:
                try:
                    rc = subprocess.run(
                        nice(["./test-runner", "-l" if local else "-L"]),
                        cwd=tests_dir,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        timeout=timeout,
                    ).returncode
                except subprocess.TimeoutExpired:
                    rc = -1
            took = time.monotonic() - started
        if nodes > 1:
            for node_log in sorted((Path(tmp) / "cluster").glob("node-*.log")):
                shutil.copy(node_log, out / f"{test}-{node_log.name}")
    text = log_path.read_text(errors="replace")
    lines = text.splitlines()
    fails = [
        lines[i + 1] if "failed at" in ln and i + 1 < len(lines) else ln
        for i, ln in enumerate(lines)
        if "### Test" in ln
    ]
    if rc == -1:
        return "TIMEOUT", f"killed after {timeout:.0f}s"
    if "0 tests" in text and rc == 0:
        return "NONE", ""
    return ("PASS" if rc == 0 else "FAIL"), (fails[0].strip() if fails else f"rc={rc}") + f" ({took:.0f}s)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", default=",".join(SHARE_TESTS), help="comma-separated test numbers")
    ap.add_argument("--librdkafka-git", type=Path, default=DEFAULT_GIT)
    ap.add_argument("--build-dir", type=Path, default=Path("/tmp/librdkafka"))
    ap.add_argument("--zurau-src", type=Path, default=ROOT / "src")
    ap.add_argument("--out", type=Path, default=Path("/tmp/rdk-share-results"))
    ap.add_argument("--nodes", type=int, default=1, help="Zurau nodes: 1 broker, or n combined KRaft nodes")
    ap.add_argument("--local", action="store_true", help="run the _local (no broker) sub-tests instead")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per test number")
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    if shutil.which("gcc") is None:
        print("gcc is needed to build librdkafka", file=sys.stderr)
        return 2
    # The broker processes (and zurau.testing, imported here) come from --zurau-src.
    zurau_src = str(args.zurau_src.resolve())
    os.environ["PYTHONPATH"] = zurau_src
    sys.path.insert(0, zurau_src)
    tests_dir = args.build_dir / "tests" if args.no_build else build(args.build_dir, args.librdkafka_git)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for test in args.tests.split(","):
        result, why = run_one(test, tests_dir, args.nodes, args.out, args.local, args.timeout)
        failed += result not in ("PASS", "NONE")
        print(f"{test}\t{result}\t{why}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
