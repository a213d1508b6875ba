"""The log cleaner: what compaction costs produce latency, and what it saves at start-up.

    .venv/bin/python -m bench.cleaner [--only latency,replay] [--seconds 15] [--rounds 2] [--commits 20000]

* ``latency``: one Zurau broker process; a background confluent-kafka producer rewrites 5,000
  keys of a compacted topic (``segment.ms=200``, ``min.cleanable.dirty.ratio=0.01``, so the
  cleaner compacts it non-stop) at about 10,000 records/s of 200 B, while a second producer
  sends 1 KiB records with ``acks=all`` to an ordinary topic at 500 records/s; produce latency
  is ``produce()`` to delivery report, the first second ignored. The same run with
  ``log.cleaner.enable=false`` (same background load) is the baseline. Runs alternate, ``--rounds``
  each, the run with the lower p99 kept.
* ``replay``: a group commits offsets of 8 partitions ``--commits`` times (back to back, not every
  50 ms: the log holds the same records either way, the run is only shorter) to
  ``__consumer_offsets`` (1 partition, 1 MiB segments, the smallest Kafka allows). With the cleaner
  the run waits until the partition is compacted; then the broker is stopped (SIGTERM) and
  started again over its data, and the time until it listens is measured: on one node the
  coordinators replay ``__consumer_offsets`` before the listener opens. The group's committed
  offsets are checked after the restart. The baseline has ``log.cleaner.enable=false``.

Reported as ratios (with / without the cleaner); no assertions. Brokers are processes on
127.0.0.1 stopped by their pid; the machine has 2 cores shared by broker and clients.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench._provenance import provenance_line
from zurau.testing.broker_process import BrokerProcess

SECTIONS = ("latency", "replay")
CHURN_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "200", "min.cleanable.dirty.ratio": "0.01"}


def broker(data: Path, cleaner: bool, **extra: str) -> BrokerProcess:
    return BrokerProcess(
        data,
        log_level="INFO",
        **{"log.cleaner.enable": "true" if cleaner else "false", "log.cleaner.backoff.ms": "100", **extra},
    )


def create(bootstrap: str, name: str, configs: dict[str, str] | None = None, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})])[name].result(30)


# ------------------------------------------------------------------------------ latency


def churn(bootstrap: str, topic: str, stop: threading.Event, rate: int = 10_000) -> None:
    """Rewrite 5,000 keys at about ``rate`` records/s until ``stop``."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    rnd = random.Random(1)
    value = b"v" * 200
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        for _ in range(100):
            try:
                p.produce(topic, key=b"key-%05d" % rnd.randrange(5000), value=value)
                sent += 1
            except BufferError:
                p.poll(0.01)
        p.poll(0)
        ahead = sent / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    p.flush(30)


def produce_latencies(bootstrap: str, topic: str, seconds: float, rate: int = 500) -> list[float]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    out: list[float] = []
    warm = time.monotonic() + 1.0
    value = b"x" * 1024

    def report(sent_at: float, err: object, _msg: object) -> None:
        if err is None and sent_at >= warm:
            out.append((time.monotonic() - sent_at) * 1000)

    start = time.monotonic()
    n = 0
    while time.monotonic() - start < seconds + 1.0:
        due = start + n / rate
        now = time.monotonic()
        if due > now:
            p.poll(due - now)
            continue
        t = time.monotonic()
        p.produce(topic, value=value, on_delivery=lambda e, m, t=t: report(t, e, m))
        n += 1
        p.poll(0)
    p.flush(30)
    return out


def latency_run(cleaner: bool, seconds: float) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="zurau-bench-cleaner-"))
    b = broker(tmp / "data", cleaner)
    try:
        b.start()
        create(b.bootstrap_servers, "churn", CHURN_TOPIC_CONFIGS)
        create(b.bootstrap_servers, "lat")
        stop = threading.Event()
        t = threading.Thread(target=churn, args=(b.bootstrap_servers, "churn", stop))
        t.start()
        time.sleep(2.0)  # let segments roll and the cleaner start working
        lat = produce_latencies(b.bootstrap_servers, "lat", seconds)
        stop.set()
        t.join(60)
        passes = b.log_text().count("cleaned churn-0")
        q = statistics.quantiles(lat, n=100)
        return {"p50": q[49], "p99": q[98], "max": max(lat), "n": len(lat), "passes": passes}
    finally:
        b.stop()
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------ replay


def commit_many(bootstrap: str, group: str, topic: str, partitions: int, commits: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        last: dict[int, int] = {}
        for i in range(1, commits + 1):
            offsets = [TopicPartition(topic, p, i * 10 + p) for p in range(partitions)]
            c.commit(offsets=offsets, asynchronous=False)
            last = {p: i * 10 + p for p in range(partitions)}
        return last
    finally:
        c.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def offsets_partition_bytes(data: Path) -> int:
    return sum(f.stat().st_size for f in (data / "__consumer_offsets-0").glob("*.log"))


def replay_run(cleaner: bool, commits: int, partitions: int = 8) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="zurau-bench-replay-"))
    data = tmp / "data"
    extra = {"offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": str(1 << 20)}
    b = broker(data, cleaner, **extra)
    try:
        b.start()
        create(b.bootstrap_servers, "orders", None, partitions)
        t0 = time.monotonic()
        want = commit_many(b.bootstrap_servers, "g", "orders", partitions, commits)
        commit_s = time.monotonic() - t0
        if cleaner:  # wait until the partition is compacted below its active segment
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                before = b.log_text().count("cleaned __consumer_offsets-0")
                time.sleep(1.0)
                if before and b.log_text().count("cleaned __consumer_offsets-0") == before:
                    break
        b.stop()
        size = offsets_partition_bytes(data)
        t0 = time.monotonic()
        b.start()
        start_s = time.monotonic() - t0
        got = committed(b.bootstrap_servers, "g", "orders", partitions)
        assert got == want, f"committed offsets after the restart: {got} != {want}"
        return {"start_s": start_s, "bytes": size, "commit_s": commit_s}
    finally:
        b.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--commits", type=int, default=20_000)
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(provenance_line(clients=["confluent_kafka"]))
    if "latency" in only:
        runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        for _ in range(args.rounds):
            for cleaner in (True, False):
                r = latency_run(cleaner, args.seconds)
                print(f"  latency cleaner={cleaner}: {r}")
                runs[cleaner].append(r)
        best = {c: min(rs, key=lambda r: r["p99"]) for c, rs in runs.items()}
        med = {c: statistics.median(r["p99"] for r in rs) for c, rs in runs.items()}
        w, wo = best[True], best[False]
        print(
            f"\n| produce latency, 1 KiB acks=all at 500/s (ms; best of {args.rounds}) | p50 | p99 | max | median p99 | cleaner passes |"
        )
        print("|---|---|---|---|---|---|")
        for name, c in (("cleaner on", True), ("cleaner off", False)):
            r = best[c]
            print(
                f"| {name} | {r['p50']:.2f} | {r['p99']:.2f} | {r['max']:.1f} | {med[c]:.2f} | {int(r['passes'])} |"
            )
        print(
            f"| ratio on/off | {w['p50'] / wo['p50']:.2f}x | {w['p99'] / wo['p99']:.2f}x | | "
            f"{med[True] / med[False]:.2f}x | |"
        )
    if "replay" in only:
        rows = {}
        for cleaner in (True, False):
            r = replay_run(cleaner, args.commits)
            print(f"  replay cleaner={cleaner}: {r}")
            rows[cleaner] = r
        w, wo = rows[True], rows[False]
        print(
            f"\n| start-up after {args.commits} commits of 8 partitions | __consumer_offsets-0 on disk | start to listening (s) |"
        )
        print("|---|---|---|")
        for name, r in (("cleaner on", w), ("cleaner off", wo)):
            print(f"| {name} | {r['bytes'] / 1e6:.2f} MB | {r['start_s']:.2f} |")
        print(f"| ratio on/off | {w['bytes'] / wo['bytes']:.3f}x | {w['start_s'] / wo['start_s']:.2f}x |")


if __name__ == "__main__":
    main()
