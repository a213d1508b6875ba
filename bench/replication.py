"""Replication: what replication factor 3 costs, and how fast a partition serves again after its
leader is killed.

    .venv/bin/python -m bench.replication [--only throughput,failover] [--seconds 15] [--rounds 20]

* ``throughput``: confluent-kafka produces 1 KiB records with acks=all (the shared settings of
  :mod:`bench._workloads`: linger 5 ms, 1 MiB batches) for ``--seconds`` to ``--partitions``
  partitions of: Tansu on one node (in-memory storage), Zurau on one node, and three Zurau brokers
  (real processes, :class:`zurau.testing.cluster_process.ClusterProcesses`, combined mode) with a
  topic of replication factor 1 and then one of replication factor 3 with
  ``min.insync.replicas=2``. Every record is checked landed (end offsets, delivery reports).
  Reported: MB/s, the ratios, and broker CPU seconds per MB produced (for the cluster: every
  node's CPU summed; with RF 3 each MB is written three times and crosses two follower fetches).
* ``failover``: three combined nodes, a topic of one partition with replication factor 3 and
  ``min.insync.replicas=2``; per round, ``kill -9`` the partition's leader (found with Metadata),
  then produce with a fresh acks=all idempotent producer to a survivor until a record is
  acknowledged; the time from the kill to that acknowledgement is the round's figure. Then the
  killed node is restarted over its data and the next round waits until it is back in the ISR.

All brokers listen on 127.0.0.1 only; processes are stopped by pid. The machine has two cores
shared by every broker and the client: three brokers on it measure the software's cost, not what
three machines would do.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench._brokers import TansuBroker, ZurauBroker, process_cpu_split
from bench._provenance import provenance_line
from bench._workloads import Measurement, produce_throughput
from zurau.testing.cluster_process import ClusterProcesses

SECTIONS = ("throughput", "failover")


class ClusterUnderTest:
    """A :class:`ClusterProcesses` in the shape :func:`bench._workloads.produce_throughput` uses
    (its CPU is the sum over every node)."""

    name = "Zurau x3"
    verifiable_offsets = True

    def __init__(self, cluster: ClusterProcesses) -> None:
        self.cluster = cluster

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    def cpu_split(self) -> tuple[float, float]:
        user = system = 0.0
        for node in self.cluster.nodes.values():
            if node.running and node.pid is not None:
                u, s = process_cpu_split(node.pid)
                user += u
                system += s
        return user, system


def create_topic(bootstrap: str, partitions: int, rf: int, configs: dict[str, str] | None = None) -> str:
    name = f"repl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf, config=configs or {})], operation_timeout=30)[name].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        t = admin.list_topics(name, timeout=10).topics.get(name)
        if (
            t is not None
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 and len(p.isrs) == rf for p in t.partitions.values())
        ):
            return name
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} did not get {partitions} partitions with {rf} in-sync replicas")


def measure(target: Any, topic: str, args: argparse.Namespace) -> Measurement:
    return produce_throughput(
        target,
        topic=topic,
        partitions=args.partitions,
        size=args.size,
        acks="all",
        compression="none",
        max_records=10_000_000,
        max_seconds=args.seconds,
    )


def section_throughput(args: argparse.Namespace, workdir: Path) -> list[str]:
    results: dict[str, Measurement] = {}
    for cls in (TansuBroker, ZurauBroker):
        broker = cls(workdir)
        try:
            broker.start()
            topic = create_topic(broker.bootstrap_servers, args.partitions, 1)
            results[f"{cls.name}, 1 node"] = measure(broker, topic, args)
        finally:
            broker.stop()
    root = Path(tempfile.mkdtemp(prefix="repl-cluster-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3)
    try:
        cluster.start()
        target = ClusterUnderTest(cluster)
        topic = create_topic(cluster.bootstrap_servers, args.partitions, 1)
        results["Zurau x3, RF 1"] = measure(target, topic, args)
        topic = create_topic(cluster.bootstrap_servers, args.partitions, 3, {"min.insync.replicas": "2"})
        results["Zurau x3, RF 3"] = measure(target, topic, args)
    finally:
        cluster.stop()
        cluster.kill_all()
        shutil.rmtree(root, ignore_errors=True)
    tansu = results["Tansu, 1 node"].mb_per_s
    rf1 = results["Zurau x3, RF 1"].mb_per_s
    lines = [
        f"Produce {args.size} B records, acks=all, {args.partitions} partitions, {args.seconds:.0f} s each",
        "",
        "| Target | MB/s | records/s | vs Tansu | vs Zurau x3 RF 1 | broker CPU s/MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in results.items():
        lines.append(
            f"| {name} | {m.mb_per_s:.1f} | {m.records_per_s:,.0f} | {m.mb_per_s / tansu:.2f}x | "
            f"{m.mb_per_s / rf1:.2f}x | {m.cpu_s_per_mb:.3f} |"
        )
    return lines


def leader_of(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    p = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return p.leader, list(p.isrs)


def produce_until_acked(bootstrap: str, topic: str, limit_s: float) -> float:
    """The ``time.monotonic()`` at which one acks=all record was acknowledged (a fresh idempotent
    producer)."""
    acked: list[float] = []
    t0 = time.monotonic()

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            acked.append(time.monotonic())

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": int(limit_s * 1000),
            "retry.backoff.ms": 20,
            "on_delivery": on_delivery,
        }
    )
    try:
        p.produce(topic, b"after-failover")
        while not acked and time.monotonic() - t0 < limit_s:
            p.poll(0.005)
        p.flush(5)
    finally:
        del p
    if not acked:
        raise TimeoutError(f"no record acknowledged within {limit_s} s")
    return acked[0]


def section_failover(args: argparse.Namespace, workdir: Path) -> list[str]:
    root = Path(tempfile.mkdtemp(prefix="repl-failover-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3)
    times: list[float] = []
    try:
        cluster.start()
        topic = create_topic(cluster.bootstrap_servers, 1, 3, {"min.insync.replicas": "2"})
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        for rnd in range(args.rounds):
            leader, isr = leader_of(admin, topic)
            survivors = ",".join(f"127.0.0.1:{n.port}" for i, n in cluster.nodes.items() if i != leader)
            t0 = time.monotonic()
            cluster.kill(leader)
            took = produce_until_acked(survivors, topic, 60.0) - t0
            times.append(took)
            new_leader, _ = leader_of(AdminClient({"bootstrap.servers": survivors}), topic)
            print(f"round {rnd + 1}: killed leader {leader} (ISR {isr}); new leader {new_leader}; "
                  f"first acks=all record after {took * 1000:.0f} ms", flush=True)
            node = cluster.nodes[leader]
            node.launch()
            node.wait_ready(60.0)
            deadline = time.monotonic() + 60
            while len(leader_of(admin, topic)[1]) < 3:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"node {leader} did not rejoin the ISR")
                time.sleep(0.1)
    except KafkaException as e:
        raise RuntimeError(f"failover round failed: {e}") from None
    finally:
        cluster.stop()
        cluster.kill_all()
        shutil.rmtree(root, ignore_errors=True)
    ordered = sorted(times)
    return [
        f"Leader kill -9 to the first acknowledged acks=all record (RF 3, min.insync.replicas=2), "
        f"{len(times)} rounds: median {statistics.median(times) * 1000:,.0f} ms, "
        f"worst {ordered[-1] * 1000:,.0f} ms, best {ordered[0] * 1000:,.0f} ms",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    only = set(args.only.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="bench-replication-"))
    lines: list[str] = []
    try:
        if "throughput" in only:
            lines += section_throughput(args, workdir) + [""]
        if "failover" in only:
            lines += section_failover(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(provenance_line(clients=["confluent_kafka"]) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
