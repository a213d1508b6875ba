"""Share groups (KIP-932) against a classic consumer group on the same broker: consume throughput
of ONE partition with 1, 4 and 16 share consumers, and the broker's CPU per acknowledged record.

    .venv/bin/python -m bench.share_groups [--records 50000] [--sizes 100,1024] [--runs 2] [--quick]

Each case starts a fresh broker process (``zurau broker start``, 127.0.0.1) and fills a topic of
one partition with ``--records`` records of each size. Then, reading every record once:

* classic: one confluent-kafka ``Consumer`` (group protocol classic, from the earliest offset):
  the ceiling, since one partition has one reader and nothing to acknowledge;
* share xN: N ``ShareConsumer`` threads of one group (``share.auto.offset.reset=earliest``, set as
  a group config before they join; implicit acknowledgement, ``max.poll.records`` 500), until every
  offset was delivered; a record delivered twice is counted (there should be none).

The table gives records/s and MB/s (MB = 10**6 bytes of values) from the first record to the last,
the broker's CPU microseconds per record, and the share/classic ratio. No other broker serves
share groups (Tansu, Redpanda have none; Apache Kafka needs a JVM this machine does not run), so
the classic group on the same broker is the peer.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from bench._brokers import ZurauBroker, process_cpu_seconds
from bench._provenance import provenance_line
from bench._workloads import CONSUMER_BASE, create_topic, fill

BROKER = {"group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "100"}


@dataclass
class Result:
    case: str
    size: int
    records: int
    seconds: float
    cpu_s: float
    duplicates: int = 0

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def mb_s(self) -> float:
        return self.rate * self.size / 1e6

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / self.records * 1e6 if self.records else 0.0


def _classic(broker: ZurauBroker, topic: str, records: int, size: int) -> Result:
    c = Consumer(
        {
            **CONSUMER_BASE,
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"classic-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got = 0
    first = None
    cpu0 = process_cpu_seconds(broker.pid)
    deadline = time.monotonic() + 300
    while got < records and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error() is None:
                if first is None:
                    first = time.perf_counter()
                got += 1
    elapsed = time.perf_counter() - (first or time.perf_counter())
    cpu = process_cpu_seconds(broker.pid) - cpu0
    c.close()
    return Result("classic x1", size, got, elapsed, cpu)


def _share(broker: ZurauBroker, topic: str, records: int, size: int, n: int) -> Result:
    group = f"share{n}-{topic}"
    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([res])[res].result(15)
    offsets: Counter[int] = Counter()
    lock = threading.Lock()
    first: list[float] = []
    stop = threading.Event()
    cpu0 = process_cpu_seconds(broker.pid)

    def run() -> None:
        c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "max.poll.records": 500})
        c.subscribe([topic])
        try:
            while not stop.is_set():
                batch = [m.offset() for m in c.poll(0.2) if m.error() is None]
                if batch:
                    with lock:
                        if not first:
                            first.append(time.perf_counter())
                        offsets.update(batch)
        finally:
            c.close()

    threads = [threading.Thread(target=run, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with lock:
            if len(offsets) >= records:
                break
        time.sleep(0.01)
    end = time.perf_counter()
    cpu = process_cpu_seconds(broker.pid) - cpu0
    stop.set()
    for t in threads:
        t.join(30)
    with lock:
        distinct = len(offsets)
        dups = sum(v - 1 for v in offsets.values())
    return Result(f"share x{n}", size, distinct, end - (first[0] if first else end), cpu, dups)


def run_case(workdir: Path, size: int, records: int, consumers: list[int]) -> list[Result]:
    out: list[Result] = []
    with ZurauBroker(workdir, **BROKER) as broker:
        topic = create_topic(broker, 1, prefix="share")
        fill(broker, topic, 1, size, records)
        out.append(_classic(broker, topic, records, size))
        for n in consumers:
            out.append(_share(broker, topic, records, size, n))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--consumers", default="1,4,16")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="5,000 records, one run, 1 and 4 consumers")
    args = ap.parse_args()
    records, runs = (5_000, 1) if args.quick else (args.records, args.runs)
    consumers = [1, 4] if args.quick else [int(x) for x in args.consumers.split(",")]
    sizes = [int(x) for x in args.sizes.split(",")]
    print(provenance_line())
    print(f"one partition, {records} records per case, {runs} run(s); median of runs")
    print(
        f"{'size':>6} {'case':<11} {'records/s':>10} {'MB/s':>7} {'broker us/rec':>14} {'vs classic':>10} {'dups':>5}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmp:
        for size in sizes:
            per_case: dict[str, list[Result]] = {}
            for _ in range(runs):
                for r in run_case(Path(tmp), size, records, consumers):
                    per_case.setdefault(r.case, []).append(r)
            classic = statistics.median(r.rate for r in per_case["classic x1"])
            for case, rs in per_case.items():
                rate = statistics.median(r.rate for r in rs)
                mb = statistics.median(r.mb_s for r in rs)
                cpu = statistics.median(r.cpu_us for r in rs)
                dups = max(r.duplicates for r in rs)
                print(
                    f"{size:>6} {case:<11} {rate:>10,.0f} {mb:>7.1f} {cpu:>14.1f} {rate / classic:>9.2f}x {dups:>5}"
                )


if __name__ == "__main__":
    main()
