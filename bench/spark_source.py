"""Spark source throughput against a plain confluent-kafka consumer loop, same topic, same run.

``.venv/bin/python -m bench.spark_source [--records N] [--partitions P] [--sizes 100,1024]``

For each value size: start a Zurau broker in its own process (log on disk), fill a fresh topic
of ``P`` partitions with ``N`` records, then read all of it

* with a plain confluent-kafka loop: one consumer assigned to every partition from offset 0,
  ``consume(10000)`` until it has ``N`` records, touching each record's value (``len``), and
* with Spark: ``spark.read.format("zurau")...load()`` into the ``noop`` sink (every row
  materialised, nothing written), on ``local[2]``, after a warm-up read so Python workers exist.

Each reader runs ``--repeat`` times (best kept). Prints records/s and MB/s of values for both and
the Spark/loop ratio (goal: >= 1.0). Needs the ``spark`` extra and Java 17.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from bench._brokers import ZurauBroker
from bench._workloads import create_topic, fill


@dataclass
class Result:
    size: int
    records: int
    loop_s: float
    spark_s: float

    def rate(self, seconds: float) -> float:
        return self.records / seconds

    def row(self) -> str:
        loop, spark = self.rate(self.loop_s), self.rate(self.spark_s)
        mb = self.size / 1e6
        return (
            f"| {self.size:>6} B | {self.records:>9,} | {loop:>12,.0f} ({loop * mb:6.1f} MB/s) "
            f"| {spark:>12,.0f} ({spark * mb:6.1f} MB/s) | {spark / loop:5.2f} |"
        )


def plain_loop(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    """Seconds for one consumer to read every record of ``topic`` from offset 0."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}"})
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
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    from zurau.spark import local_session

    spark = local_session("zurau-bench", cores=2)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="zurau-bench-spark-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            records = args.records if size <= 256 else max(args.records // 4, 1)
            with ZurauBroker(Path(tmp)) as broker:
                bs = broker.bootstrap_servers
                topic = create_topic(broker, args.partitions, prefix="spark-bench")
                fill(broker, topic, args.partitions, size, records)
                # Warm-up: Python workers, consumers, page cache; also checks the count.
                got = spark_count(spark, bs, topic)
                if got != records:
                    raise RuntimeError(f"Spark counted {got} records, expected {records}")
                plain_loop(bs, topic, args.partitions, records)
                loop_s = min(plain_loop(bs, topic, args.partitions, records) for _ in range(args.repeat))
                spark_s = min(spark_read(spark, bs, topic, records) for _ in range(args.repeat))
                results.append(Result(size, records, loop_s, spark_s))
                print(results[-1].row(), flush=True)
    spark.stop()
    print()
    print(f"Spark source ({args.partitions} partitions, local[2]) vs plain confluent-kafka loop, records/s:")
    print("| value  |   records | plain loop                  | Spark zurau source          | ratio |")
    print("|--------|-----------|-----------------------------|-----------------------------|-------|")
    for r in results:
        print(r.row())


if __name__ == "__main__":
    main()
