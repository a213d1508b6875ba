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
import concurrent.futures
import os
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

    def client_security(self) -> dict[str, str]:
        """Client properties besides the address (TLS, SASL) for a secured cluster."""
        return {k: v for k, v in self.cluster.client_config().items() if k != "bootstrap.servers"} \
            if self.cluster.security != "PLAINTEXT" else {}

    def cpu_split(self) -> tuple[float, float]:
        user = system = 0.0
        for node in self.cluster.nodes.values():
            if node.running and node.pid is not None:
                u, s = process_cpu_split(node.pid)
                user += u
                system += s
        return user, system


def create_topic(
    bootstrap: str,
    partitions: int,
    rf: int,
    configs: dict[str, str] | None = None,
    *,
    prefix: str = "repl",
    client: dict[str, str] | None = None,
) -> str:
    """A new topic ``<prefix>-<random>``, once every partition has a leader and ``rf`` in-sync
    replicas in Metadata (``client``: extra AdminClient settings, e.g. security)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client or {})})
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


def dirty_mb() -> float:
    """Dirty and under-writeback page cache, MB (/proc/meminfo)."""
    total = 0
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith(("Dirty:", "Writeback:")):
                total += int(line.split()[1])
    return total / 1024


def settle_page_cache(limit_mb: float = 64.0, timeout_s: float = 120.0) -> None:
    """``sync`` and wait until the kernel has written back what earlier cases left dirty, so that
    no case pays for the write-back of the one before it."""
    os.sync()
    deadline = time.monotonic() + timeout_s
    while dirty_mb() > limit_mb and time.monotonic() < deadline:
        time.sleep(0.2)


def disk_write_mb_per_s(directory: Path, mb: int = 1024) -> float:
    """Buffered sequential writes of ``mb`` MiB in 1 MiB blocks, then fsync: this machine's
    write ceiling (every replica's log is on the same disk)."""
    path = directory / "disk-probe"
    block = b"\0" * (1 << 20)
    settle_page_cache()
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(mb):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
        path.unlink()
    return mb * (1 << 20) / 1e6 / (time.perf_counter() - t0)


def section_throughput(args: argparse.Namespace, workdir: Path) -> list[str]:
    results: dict[str, list[Measurement]] = {}
    disk = disk_write_mb_per_s(workdir)
    for cls in (TansuBroker, ZurauBroker):
        broker = cls(workdir)
        try:
            broker.start()
            topic = create_topic(broker.bootstrap_servers, args.partitions, 1)
            settle_page_cache()
            results[f"{cls.name}, 1 node"] = [measure(broker, topic, args)]
        finally:
            broker.stop()
    root = Path(tempfile.mkdtemp(prefix="repl-cluster-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3)
    try:
        cluster.start()
        target = ClusterUnderTest(cluster)
        for _ in range(args.repeats):  # interleaved, each from a settled page cache
            for rf, name in ((1, "Zurau x3, RF 1"), (3, "Zurau x3, RF 3")):
                configs = {"min.insync.replicas": "2"} if rf == 3 else {}
                topic = create_topic(cluster.bootstrap_servers, args.partitions, rf, configs)
                settle_page_cache()
                results.setdefault(name, []).append(measure(target, topic, args))
    finally:
        cluster.stop()
        cluster.kill_all()
        shutil.rmtree(root, ignore_errors=True)

    def median(name: str) -> Measurement:
        runs = sorted(results[name], key=lambda m: m.mb_per_s)
        return runs[len(runs) // 2]

    tansu = median("Tansu, 1 node").mb_per_s
    rf1 = median("Zurau x3, RF 1").mb_per_s
    lines = [
        f"Produce {args.size} B records, acks=all, {args.partitions} partitions, {args.seconds:.0f} s each; "
        f"the cluster cases {args.repeats} times each, interleaved (median, worst in brackets), each "
        f"after the page cache was written back. This machine's disk takes {disk:,.0f} MB/s of "
        "sequential writes (1 GiB, fsync), and with RF 3 every produced MB is written three times.",
        "",
        "| Target | MB/s | records/s | vs Tansu | vs Zurau x3 RF 1 | log writes MB/s | broker CPU ms/MB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in results.items():
        m = median(name)
        worst = min(runs, key=lambda r: r.mb_per_s)
        rf = 3 if "RF 3" in name else 1
        spread = f" ({worst.mb_per_s:.1f})" if len(runs) > 1 else ""
        lines.append(
            f"| {name} | {m.mb_per_s:.1f}{spread} | {m.records_per_s:,.0f} | {m.mb_per_s / tansu:.2f}x | "
            f"{m.mb_per_s / rf1:.2f}x | {m.mb_per_s * rf:.0f} | {m.cpu_s_per_mb * 1000:.2f} |"
        )
    return lines


def leader_of(admin: AdminClient, topic: str, timeout_s: float = 30.0) -> tuple[int, list[int]]:
    """Partition 0's leader and ISR (asked again while the broker answering has not applied the
    topic yet or names no leader)."""
    deadline = time.monotonic() + timeout_s
    while True:
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        p = t.partitions.get(0) if t is not None and t.error is None else None
        if p is not None and p.leader >= 0:
            return p.leader, list(p.isrs)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}-0 has no leader in Metadata")
        time.sleep(0.05)


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


class RunningProducer:
    """One long-lived acks=all idempotent producer that sends a record every ``interval_s``
    (librdkafka's defaults otherwise): what an application sees through a failover."""

    def __init__(self, bootstrap: str, topic: str, interval_s: float = 0.01) -> None:
        self.topic = topic
        self.interval_s = interval_s
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 0, "message.timeout.ms": 60_000})
        self._acked_sent_at: list[float] = []

    def _send(self) -> None:
        sent_at = time.monotonic()

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is None:
                self._acked_sent_at.append(sent_at)

        self.producer.produce(self.topic, b"running", on_delivery=on_delivery)

    def warm(self) -> None:
        self._send()
        if self.producer.flush(30) != 0 or not self._acked_sent_at:
            raise RuntimeError("the running producer's first record was not acknowledged")

    def until_acked_after(self, t0: float, limit_s: float) -> float:
        """Send every ``interval_s`` until a record sent after ``t0`` is acknowledged; the
        ``time.monotonic()`` of that acknowledgement."""
        next_send = time.monotonic()
        while time.monotonic() - t0 < limit_s:
            if time.monotonic() >= next_send:
                self._send()
                next_send += self.interval_s
            self.producer.poll(0.002)
            if any(s >= t0 for s in self._acked_sent_at):
                return time.monotonic()
        raise TimeoutError(f"no record acknowledged within {limit_s} s of the kill")

    def close(self) -> None:
        self.producer.flush(10)


def section_failover(args: argparse.Namespace, workdir: Path) -> list[str]:
    root = Path(tempfile.mkdtemp(prefix="repl-failover-", dir=workdir))
    cluster = ClusterProcesses(root, controllers=3)
    times: list[float] = []  # a fresh producer's first acknowledged record
    running: list[float] = []  # a running producer's first acknowledged record sent after the kill
    kinds: list[bool] = []  # per round: was the killed leader also the active controller
    rejoin: list[float] = []  # per round: restart to the node's client port open
    try:
        cluster.start()
        topic = create_topic(cluster.bootstrap_servers, 1, 3, {"min.insync.replicas": "2"})
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        for rnd in range(args.rounds):
            leader, isr = leader_of(admin, topic)
            survivors = ",".join(f"127.0.0.1:{n.port}" for i, n in cluster.nodes.items() if i != leader)
            controller = int(admin.describe_cluster(request_timeout=10).result().controller.id)
            app = RunningProducer(cluster.bootstrap_servers, topic)
            app.warm()
            t0 = time.monotonic()
            cluster.kill(leader)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # both clients at once
                fresh = pool.submit(produce_until_acked, survivors, topic, 60.0)
                running.append(app.until_acked_after(t0, 60.0) - t0)
                took = fresh.result() - t0
            times.append(took)
            app.close()
            kinds.append(leader == controller)
            new_leader, _ = leader_of(AdminClient({"bootstrap.servers": survivors}), topic)
            role = "leader and active controller" if leader == controller else "leader"
            print(f"round {rnd + 1}: killed {role} {leader} (ISR {isr}); new leader {new_leader}; "
                  f"first acks=all record after {took * 1000:.0f} ms (fresh producer), "
                  f"{running[-1] * 1000:.0f} ms (running producer)", flush=True)
            node = cluster.nodes[leader]
            t1 = time.monotonic()
            node.launch()
            node.wait_ready(60.0)
            rejoin.append(time.monotonic() - t1)
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

    def summary(values: list[float]) -> str:
        if not values:
            return "no rounds"
        return (f"{len(values)} rounds: median {statistics.median(values) * 1000:,.0f} ms, "
                f"worst {max(values) * 1000:,.0f} ms, best {min(values) * 1000:,.0f} ms")

    lines = []
    for label, values in (("a running producer (a record every 10 ms)", running),
                          ("a fresh producer started at the kill", times)):
        lines += [
            f"Leader kill -9 to the next acknowledged acks=all record of {label} (RF 3, "
            f"min.insync.replicas=2, broker.session.timeout.ms 9 s): all {summary(values)}",
            f"  leader not the active controller: {summary([t for t, c in zip(values, kinds, strict=True) if not c])}",
            f"  leader also the active controller (a quorum election first): "
            f"{summary([t for t, c in zip(values, kinds, strict=True) if c])}",
        ]
    return lines + [
        f"Killed node restarted at once to its client port open (it serves): {summary(rejoin)}",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each cluster case (throughput)")
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
