"""Transactions: how long a small transaction takes, end to end, with confluent-kafka.

    .venv/bin/python -m bench.transactions [--transactions 30] [--warmup 3] [--only cluster,single,tansu]

The shape (issue 34): ``begin_transaction``, produce one record to each of 4 partitions,
``send_offsets_to_transaction`` (the offsets of a consumer group, as a consume-transform-produce
loop does), ``commit_transaction``; ``--transactions`` of them in a row with one producer (after
``--warmup`` unmeasured ones: InitProducerId, coordinator lookups, connections). Reported per
target: median / p90 / max of ``send_offsets_to_transaction`` + ``commit_transaction`` (the part
that waits for the previous transaction's markers: a broker still writing them answers
AddPartitionsToTxn / AddOffsetsToTxn with CONCURRENT_TRANSACTIONS, which librdkafka retries after
``retry.backoff.ms``) and of a whole transaction (begin to commit).

Targets: three Zurau nodes (real processes, :class:`zurau.testing.cluster_process.ClusterProcesses`,
combined mode) with a topic of replication factor 3 (``min.insync.replicas=2``) and one of
replication factor 1; Zurau on one node; Tansu on one node (if its transactions work: the row
says so otherwise). Every record is checked committed: a read_committed consumer reads all of them
at the end.

All brokers listen on 127.0.0.1 only; processes are stopped by pid.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bench import replication
from bench._brokers import TansuBroker, ZurauBroker
from bench._provenance import provenance_line
from zurau.testing.cluster_process import ClusterProcesses

SECTIONS = ("cluster", "single", "tansu")
PARTITIONS = 4
# Small coordinator topics: the bench measures a transaction, not the creation of 50 partitions.
OVERRIDES = {
    "transaction.state.log.num.partitions": "4",
    "offsets.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
}


@dataclass
class TxnTimes:
    """Seconds per measured transaction: send_offsets + commit, and the whole transaction."""

    finish: list[float]
    whole: list[float]
    error: str | None = None


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def create_topic(bootstrap: str, rf: int, extra: dict[str, str]) -> str:
    configs = {"min.insync.replicas": "2"} if rf == 3 else {}
    return replication.create_topic(bootstrap, PARTITIONS, rf, configs, prefix="txn", client=extra)


def run_transactions(bootstrap: str, topic: str, count: int, warmup: int, extra: dict[str, str]) -> TxnTimes:
    """``warmup`` + ``count`` transactions of the issue's shape; the measured ones' times."""
    group = f"txn-bench-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3, **extra})
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"txn-bench-{uuid.uuid4().hex[:8]}",
            "linger.ms": 0,
            "log_level": 3,
            **extra,
        }
    )
    times = TxnTimes([], [])
    try:
        producer.init_transactions(60)
        meta = consumer.consumer_group_metadata()
        for i in range(warmup + count):
            t0 = time.perf_counter()
            producer.begin_transaction()
            for p in range(PARTITIONS):
                producer.produce(topic, value=b"v%d" % i, key=b"k%d" % p, partition=p)
            t1 = time.perf_counter()
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, i + 1)], meta, 30)
            producer.commit_transaction(30)
            t2 = time.perf_counter()
            if i >= warmup:
                times.finish.append(t2 - t1)
                times.whole.append(t2 - t0)
    except KafkaException as e:
        times.error = str(e.args[0])
    finally:
        consumer.close()
    if times.error is None:
        committed = count_committed(bootstrap, topic, extra)
        if committed != (warmup + count) * PARTITIONS:
            times.error = f"read_committed saw {committed} of {(warmup + count) * PARTITIONS} records"
    return times


def count_committed(bootstrap: str, topic: str, extra: dict[str, str], timeout: float = 30.0) -> int:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"txn-check-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "log_level": 3,
            **extra,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    n = 0
    deadline = time.monotonic() + timeout
    quiet = time.monotonic()
    try:
        while time.monotonic() < deadline and time.monotonic() - quiet < 2.0:
            msgs = [m for m in c.consume(1000, 0.2) if m.error() is None]
            if msgs:
                n += len(msgs)
                quiet = time.monotonic()
    finally:
        c.close()
    return n


def row(name: str, t: TxnTimes) -> str:
    if t.error is not None:
        return f"| {name} | failed: {t.error} | | | | | |"

    def ms(v: float) -> str:
        return f"{v * 1000:.0f}"

    return (
        f"| {name} | {ms(statistics.median(t.finish))} | {ms(pct(t.finish, 0.9))} | {ms(max(t.finish))} | "
        f"{ms(statistics.median(t.whole))} | {ms(pct(t.whole, 0.9))} | {ms(max(t.whole))} |"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=30, help="measured transactions per target (max 500)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}")
    args = ap.parse_args(argv)
    count = max(1, min(args.transactions, 500))
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="bench-txn-"))
    rows: list[str] = []
    try:
        if "cluster" in only:
            root = Path(tempfile.mkdtemp(prefix="txn-cluster-", dir=workdir))
            cluster = ClusterProcesses(root, controllers=3, **OVERRIDES)
            try:
                cluster.start()
                for rf in (3, 1):
                    topic = create_topic(cluster.bootstrap_servers, rf, {})
                    t = run_transactions(cluster.bootstrap_servers, topic, count, args.warmup, {})
                    rows.append(row(f"Zurau x3, RF {rf}", t))
                    print(rows[-1], flush=True)
            finally:
                cluster.stop()
                cluster.kill_all()
        targets: list[tuple[str, Any]] = []
        if "single" in only:
            targets.append(("Zurau, 1 node", lambda: ZurauBroker(workdir, **OVERRIDES)))
        if "tansu" in only:
            targets.append(("Tansu, 1 node", lambda: TansuBroker(workdir)))
        for name, make in targets:
            broker = make()
            try:
                broker.start()
                try:
                    topic = create_topic(broker.bootstrap_servers, 1, {})
                    t = run_transactions(broker.bootstrap_servers, topic, count, args.warmup, {})
                except (KafkaException, TimeoutError) as e:
                    t = TxnTimes([], [], error=str(e))
                rows.append(row(name, t))
                print(rows[-1], flush=True)
            finally:
                broker.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(provenance_line())
    print(
        f"confluent-kafka, {count} transactions per target after {args.warmup} warm-up ones; each: "
        f"begin, one record to each of {PARTITIONS} partitions, send_offsets_to_transaction, commit."
    )
    print()
    print("| Target | offsets+commit p50 ms | p90 | max | whole txn p50 ms | p90 | max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
