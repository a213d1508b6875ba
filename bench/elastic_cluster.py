"""A broker joins a loaded cluster: how long until it holds its share, at a given throttle, against
the throttle's ideal; and the producer's p99 latency while the data moves, against without.

    .venv/bin/python -m bench.elastic_cluster [--mb 256] [--throttle-mb 16] [--partitions 8] [--quick]

Three combined (controller + broker) node processes and a fourth broker-only node configured but
not started (``ClusterProcesses(combined=True, brokers=1, deferred=(4,))``, all on 127.0.0.1).
A topic of ``--partitions`` partitions, replication factor 3, is filled with ``--mb`` MB (the
issue's "10 GB", scaled to a run of minutes on this machine's disk). The balancer's throttle is
``--throttle-mb`` MB/s (``confluent.balancer.throttle.bytes.per.second``, a dynamic cluster
default). Then:

1. **Baseline**: an acks=all producer sends 1 KB records at a fixed rate for ``--seconds``;
   the delivery latency of each record is kept (p50 / p99 / max).
2. **Join**: node 4 starts; the producer runs again at the same rate while the balancer moves
   replicas to it, until no reassignment is in flight and node 4 holds replicas (the balancer's
   rebalance mark cleared). The time from node 4 serving to the end is the *move time*; the
   bytes node 4 then holds divided by the throttle is the *ideal* (every byte copied at the
   throttle, nothing else in the way).

The report gives the move time, the ideal, their ratio, and the p99 during the moves against the
baseline p99. No peer broker balances itself (Apache Kafka needs Cruise Control, a JVM service this
machine does not run; Tansu and Redpanda's community edition have no balancer), so the throttle's
ideal and the same cluster without moves are the references.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from bench._provenance import provenance_line
from zurau.testing.cluster_process import ClusterProcesses

TOPIC = "elastic"
RATE = 200  # records per second during the latency phases
SIZE = 1024


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    s = sorted(samples)
    return {"p50": s[len(s) // 2], "p99": s[min(len(s) - 1, int(0.99 * len(s)))], "max": s[-1]}


def _fill(bootstrap: str, mb: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "batch.size": 262144,
                  "compression.type": "none"})
    value = os.urandom(16_384)
    for _ in range(mb * 1_000_000 // len(value)):
        while True:
            try:
                p.produce(TOPIC, value)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(300) == 0, "fill: records not delivered"


class LatencyRun:
    """An acks=all producer at RATE records/s on its own thread until :meth:`stop`."""

    def __init__(self, bootstrap: str) -> None:
        self.samples: list[float] = []
        self.errors = 0
        self._stop = threading.Event()
        self._p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True})
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        value = os.urandom(SIZE)
        interval = 1.0 / RATE
        nxt = time.monotonic()
        while not self._stop.is_set():
            sent = time.monotonic()

            def done(err: Any, _msg: Any, sent: float = sent) -> None:
                if err is not None:
                    self.errors += 1
                else:
                    self.samples.append((time.monotonic() - sent) * 1000)

            self._p.produce(TOPIC, value, on_delivery=done)
            self._p.poll(0)
            nxt += interval
            time.sleep(max(0.0, nxt - time.monotonic()))

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._t.join(10)
        self._p.flush(30)
        return _percentiles(self.samples)


def _replicas_on(admin: AdminClient, broker: int) -> int:
    md = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return sum(broker in p.replicas for p in md.partitions.values())


def _settled(admin: AdminClient) -> bool:
    res = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([res])[res].result(10)
    return entries["zurau.balancer.rebalance.requested"].value == "false" and _replicas_on(admin, 4) > 0


def _bytes_on(root: Path, broker: int) -> int:
    return sum(f.stat().st_size for f in (root / f"node-{broker}").glob(f"{TOPIC}-*/*.log"))


def run(mb: int, throttle_mb: int, partitions: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="zurau-elastic-") as tmp:
        root = Path(tmp)
        overrides: dict[str, Any] = {"auto.leader.rebalance.enable": "false"}
        with ClusterProcesses(root, 3, brokers=1, combined=True, deferred=(4,), **overrides) as cluster:
            bs = cluster.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bs})
            admin.create_topics([NewTopic(TOPIC, partitions, 3)])[TOPIC].result(60)
            # the cluster default (confluent-kafka cannot name the default broker resource)
            subprocess.run([sys.executable, "-m", "zurau.cli.main", "configs", "alter", "--entity-type", "brokers",
                            "--entity-default", "--add-config",
                            f"confluent.balancer.throttle.bytes.per.second={throttle_mb * 1_000_000}",
                            "--bootstrap-server", bs], check=True, capture_output=True)
            _fill(bs, mb)
            base = LatencyRun(bs)
            time.sleep(seconds)
            baseline = base.stop()

            during = LatencyRun(bs)
            node4 = cluster.nodes[4]
            node4.launch()
            node4.wait_ready(120)
            t0 = time.monotonic()
            deadline = t0 + 1800
            while not _settled(admin):
                assert time.monotonic() < deadline, "node 4 did not take its share within 30 minutes"
                time.sleep(0.5)
            moved_s = time.monotonic() - t0
            moving = during.stop()
            moved_bytes = _bytes_on(root, 4)
            ideal_s = moved_bytes / (throttle_mb * 1_000_000)
            return {"mb": mb, "throttle_mb": throttle_mb, "partitions": partitions,
                    "replicas_on_4": _replicas_on(admin, 4), "moved_mb": moved_bytes / 1e6,
                    "moved_s": moved_s, "ideal_s": ideal_s, "baseline": baseline, "moving": moving,
                    "errors": base.errors + during.errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--throttle-mb", type=int, default=16)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=15.0, help="baseline latency phase")
    ap.add_argument("--quick", action="store_true", help="64 MB at 8 MB/s, a 5 s baseline")
    a = ap.parse_args()
    if a.quick:
        a.mb, a.throttle_mb, a.seconds = 64, 8, 5.0
    print(provenance_line())
    r = run(a.mb, a.throttle_mb, a.partitions, a.seconds)
    print(f"{r['mb']} MB in {r['partitions']} partitions (RF 3); throttle {r['throttle_mb']} MB/s; "
          f"node 4 took {r['replicas_on_4']} replicas, {r['moved_mb']:.0f} MB")
    print(f"move time {r['moved_s']:.1f} s, ideal at the throttle {r['ideal_s']:.1f} s: "
          f"ratio {r['moved_s'] / max(r['ideal_s'], 1e-9):.2f}x")
    b, m = r["baseline"], r["moving"]
    print(f"producer acks=all at {RATE}/s, 1 KB: p50 {b['p50']:.1f} ms, p99 {b['p99']:.1f} ms without moves; "
          f"p50 {m['p50']:.1f} ms, p99 {m['p99']:.1f} ms during the moves "
          f"(p99 ratio {m['p99'] / max(b['p99'], 1e-9):.2f}x); delivery errors {r['errors']}")


if __name__ == "__main__":
    main()
