"""Spark source throughput against a plain confluent-kafka consumer loop, same topic, same run.

``.venv/bin/python -m bench.spark_source [--records N] [--partitions P] [--sizes 100,1024] [--repeat R]``

For each value size: start a Zurau broker in its own process (log on disk), fill a fresh topic
of ``P`` partitions (default 4) with ``N`` records (a quarter of them above 256 B), then read all
of it

* with a plain confluent-kafka loop: one consumer (librdkafka's default settings unless
  ``--loop-config key=value`` says otherwise) assigned to
  every partition from offset 0, ``consume(10000)`` until it has ``N`` records, touching each
  record's value (``len``), and
* with Spark: ``spark.read.format("zurau")...load()`` into the ``noop`` sink (every row
  materialised, nothing written), on ``local[2]``, after a warm-up read so Python workers exist.

The two readers alternate, ``--repeat`` times each (default 3), so that load from other work on
the machine falls on both alike. Reported per reader: the median and the worst (slowest) run in
records/s and MB/s of values; the Spark/loop ratio of the medians (goal: >= 1.2 for 1 KiB, >= 1.4
for 100 B) and a worst-case ratio (slowest Spark run over fastest loop run). Machine load: CPU
seconds per second used meanwhile by processes outside this benchmark (its own process, the
Spark JVM and Python workers it started and the broker are excluded), so a reader can tell a
margin from noise on a shared machine. Needs the ``spark`` extra and Java 17.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from bench._brokers import ZurauBroker, process_cpu_seconds, system_busy_seconds
from bench._provenance import provenance_line
from bench._workloads import create_topic, fill


def _tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by process ``root`` and every live descendant of it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        parents[int(entry)] = int(raw[raw.rindex(b")") + 2 :].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    total = 0.0
    for pid in tree:
        try:
            total += process_cpu_seconds(pid)
        except OSError:
            pass
    return total


class LoadMeter:
    """CPU used by other processes on the machine over a stretch (cores: CPU seconds per second)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.busy0 = system_busy_seconds()
        self.own0 = _tree_cpu_seconds(os.getpid())

    def cores(self) -> float:
        seconds = time.monotonic() - self.t0
        busy = system_busy_seconds() - self.busy0
        own = _tree_cpu_seconds(os.getpid()) - self.own0
        return max(busy - own, 0.0) / seconds if seconds > 0 else 0.0


@dataclass
class Result:
    size: int
    records: int
    loop_s: list[float] = field(default_factory=list)
    spark_s: list[float] = field(default_factory=list)
    other_cores: float = 0.0

    def rate(self, seconds: float) -> float:
        return self.records / seconds

    def _cell(self, seconds: float) -> str:
        r = self.rate(seconds)
        return f"{r:>10,.0f} ({r * self.size / 1e6:5.1f} MB/s)"

    def row(self) -> str:
        loop_med, spark_med = statistics.median(self.loop_s), statistics.median(self.spark_s)
        ratio = loop_med / spark_med
        worst = min(self.loop_s) / max(self.spark_s)
        return (
            f"| {self.size:>6} B | {self.records:>9,} | {self._cell(loop_med)} | {self._cell(max(self.loop_s))} "
            f"| {self._cell(spark_med)} | {self._cell(max(self.spark_s))} | {ratio:5.2f} | {worst:5.2f} "
            f"| {self.other_cores:4.2f} |"
        )


HEADER = (
    "| value  |   records | loop median              | loop worst               "
    "| Spark median             | Spark worst              | ratio | worst ratio | other cores |\n"
    "|--------|-----------|--------------------------|--------------------------"
    "|--------------------------|--------------------------|-------|-------------|-------------|"
)


def plain_loop(
    bootstrap: str, topic: str, partitions: int, records: int, config: dict[str, str] | None = None
) -> float:
    """Seconds for one consumer to read every record of ``topic`` from offset 0."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}", **(config or {})}
    )
    try:
        c.list_topics(topic, timeout=10)
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got = 0
        nbytes = 0
        consume = c.consume
        while got < records:
            for m in consume(min(10000, records - got), 1.0):
                if m.error() is not None:
                    raise KafkaException(m.error())
                nbytes += len(m.value())
                got += 1
        return time.perf_counter() - t0
    finally:
        c.close()


def spark_read(spark: object, bootstrap: str, topic: str, records: int) -> float:
    """Seconds for Spark to read every record of ``topic`` into the noop sink."""
    t0 = time.perf_counter()
    df = (
        spark.read.format("zurau")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def spark_count(spark: object, bootstrap: str, topic: str) -> int:
    return (
        spark.read.format("zurau")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .count()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=2_000_000, help="records per size (default 2,000,000)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--sizes", default="100,1024", help="value sizes in bytes, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--loop-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka setting for the plain loop's consumer (repeatable), e.g. "
        "fetch.queue.backoff.ms=10 to compare with a loop tuned like the source's consumers",
    )
    args = ap.parse_args()
    loop_config = dict(kv.split("=", 1) for kv in args.loop_config)

    from zurau.spark import local_session

    spark = local_session("zurau-bench", cores=2)
    results: list[Result] = []
    # One broker for every size: executor workers pool their consumers, and pooled consumers of
    # a stopped broker would keep reconnecting (CPU and log noise) through the next case.
    with tempfile.TemporaryDirectory(prefix="zurau-bench-spark-") as tmp, ZurauBroker(Path(tmp)) as broker:
        bs = broker.bootstrap_servers
        for size in (int(s) for s in args.sizes.split(",")):
            records = args.records if size <= 256 else max(args.records // 4, 1)
            topic = create_topic(broker, args.partitions, prefix="spark-bench")
            fill(broker, topic, args.partitions, size, records)
            # Warm-up: Python workers, consumers, page cache; also checks the count.
            got = spark_count(spark, bs, topic)
            if got != records:
                raise RuntimeError(f"Spark counted {got} records, expected {records}")
            plain_loop(bs, topic, args.partitions, records, loop_config)
            result = Result(size, records)
            meter = LoadMeter()
            for _ in range(args.repeat):
                result.loop_s.append(plain_loop(bs, topic, args.partitions, records, loop_config))
                result.spark_s.append(spark_read(spark, bs, topic, records))
            result.other_cores = meter.cores()
            results.append(result)
            print(result.row(), flush=True)
            print(
                f"  runs (s): loop {', '.join(f'{t:.2f}' for t in result.loop_s)}; "
                f"Spark {', '.join(f'{t:.2f}' for t in result.spark_s)}",
                flush=True,
            )
        spark.stop()
    print()
    print(
        f"Spark source ({args.partitions} partitions, local[2]) vs plain confluent-kafka loop, "
        f"records/s, {args.repeat} runs each (other cores: CPU used by other work meanwhile, of 2):"
    )
    if loop_config:
        print(f"Plain loop consumer settings: {loop_config}")
    print(HEADER)
    for r in results:
        print(r.row())
    print(provenance_line(clients=("confluent_kafka",)))


if __name__ == "__main__":
    main()
