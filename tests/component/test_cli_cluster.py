"""``zurau cluster start --nodes 3`` as a user runs it: three processes that form a cluster, serve
clients on the documented ports, answer ``zurau metadata-quorum describe``, keep their data for
the next start, and all stop on SIGTERM."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zurau.cli.cluster import node_properties
from zurau.testing import wait_for_port

pytestmark = pytest.mark.timeout(120)


def _free_block(count: int) -> int:
    """A base port with ``count`` consecutive ports free a moment ago, above the kernel's
    ephemeral range: the block must stay free between the two starts of a cluster, and a port in
    that range may be handed to any outgoing connection of the suite meanwhile (a CI run failed
    with a node unable to listen on its port)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[1]) + 1
    rng = random.Random()
    for _ in range(50):
        base = rng.randrange(max(low, 1024), 65000 - count)
        try:
            socks = []
            for p in range(base, base + count):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError("no block of free ports")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zurau.cli.main", *args], capture_output=True, text=True, timeout=60)


def test_node_properties_follow_the_documented_layout(tmp_path: Path) -> None:
    props = node_properties(2, 3, tmp_path, 9092)
    assert props["node.id"] == "2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9095"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097"


def _wait_nodes(proc: subprocess.Popen[bytes], data: Path, base: int) -> None:
    """Every node's client port listens; if not, the failure carries each node's log tail."""
    try:
        for i in range(3):
            wait_for_port(base + 2 * i, timeout=60, proc=proc)
    except (TimeoutError, RuntimeError) as e:
        tails = []
        for i in (1, 2, 3):
            log = data / f"node-{i}" / "broker.log"
            text = log.read_text("utf-8", "replace") if log.exists() else "(no log)"
            tails.append(f"--- node-{i}/broker.log ---\n" + "\n".join(text.splitlines()[-25:]))
        raise AssertionError(f"{e}\n" + "\n".join(tails)) from None


def test_cluster_start_runs_three_nodes_and_stops_them(tmp_path: Path) -> None:
    base = _free_block(6)
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "zurau.cli.main", "cluster", "start", "--nodes", "3", "--data-dir", str(data),
         "--base-port", str(base)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_nodes(proc, data, base)
        out = _cli("metadata-quorum", "describe", "--status", "--bootstrap-server", f"127.0.0.1:{base + 2}")
        assert out.returncode == 0, out.stderr
        lines = dict(line.split(":", 1) for line in out.stdout.splitlines())
        assert int(lines["LeaderId"]) in (1, 2, 3)
        assert '"id": 1' in lines["CurrentVoters"] and '"id": 3' in lines["CurrentVoters"]
        out = _cli("metadata-quorum", "describe", "--replication", "--bootstrap-server", f"127.0.0.1:{base}")
        assert out.returncode == 0, out.stderr
        assert sum(1 for line in out.stdout.splitlines() if "Leader" in line or "Follower" in line) == 3
        out = _cli("topics", "create", "demo", "--partitions", "3", "--bootstrap-server", f"127.0.0.1:{base + 4}")
        assert out.returncode == 0, out.stderr
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(60)
    assert proc.returncode == 0
    for i in (1, 2, 3):
        assert (data / f"node-{i}" / "meta.properties").exists()
        assert (data / f"node-{i}" / "server.properties").exists()
    # A second start reuses the directories: same cluster, the topic is still there.
    proc = subprocess.Popen(
        [sys.executable, "-m", "zurau.cli.main", "cluster", "start", "--nodes", "3", "--data-dir", str(data),
         "--base-port", str(base)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_nodes(proc, data, base)
        deadline = time.monotonic() + 30
        while True:
            out = _cli("topics", "list", "--bootstrap-server", f"127.0.0.1:{base}")
            if "demo" in out.stdout.split():
                break
            assert time.monotonic() < deadline, out.stdout + out.stderr
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(60)


def test_metadata_quorum_describe_on_a_single_node() -> None:
    """A single node is its own one-voter quorum: it leads, with its log end as high watermark."""
    from zurau import EmbeddedBroker

    with EmbeddedBroker() as b:
        b.create_topic("one")
        out = _cli("metadata-quorum", "describe", "--status", "--bootstrap-server", b.bootstrap_servers)
        assert out.returncode == 0, out.stderr
        lines = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.stdout.splitlines())}
        assert lines["LeaderId"] == str(b.broker.node_id)
        assert int(lines["HighWatermark"]) > 0
        assert lines["CurrentObservers"] == "[]"
        out = _cli("metadata-quorum", "describe", "--bootstrap-server", b.bootstrap_servers)
        assert out.returncode != 0 and "exactly one of --status and --replication" in out.stderr
