"""Zurau against an earlier Zurau: the same workloads on two source trees, interleaved.

    .venv/bin/python -m bench.ab --before /tmp/zurau-baseline/src [--after src] [--runs 3]

Each case runs ``--runs`` times on each tree, alternating, with a fresh broker per run. Prints
best throughput and median broker CPU per MB for both, so an optimisation's effect can be told
apart from a neighbour's load (this machine is shared; see the "other" column).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench._brokers import ZurauBroker
from bench._workloads import Measurement, consume_throughput, create_topic, fill, latency, produce_throughput

CASES: dict[str, Callable[[ZurauBroker], Measurement]] = {}


def case(name: str) -> Callable[[Callable[[ZurauBroker], Measurement]], Callable[[ZurauBroker], Measurement]]:
    def register(fn: Callable[[ZurauBroker], Measurement]) -> Callable[[ZurauBroker], Measurement]:
        CASES[name] = fn
        return fn

    return register


def _produce(b: ZurauBroker, size: int, acks: str, compression: str, partitions: int) -> Measurement:
    topic = create_topic(b, partitions)
    return produce_throughput(
        b,
        topic=topic,
        partitions=partitions,
        size=size,
        acks=acks,
        compression=compression,
        max_records=3_000_000 * 1024 // size,
        max_seconds=4.0,
    )


@case("produce 1 KiB acks=all 1p")
def _p1(b: ZurauBroker) -> Measurement:
    return _produce(b, 1024, "all", "none", 1)


@case("produce 1 KiB acks=all lz4 8p")
def _p2(b: ZurauBroker) -> Measurement:
    return _produce(b, 1024, "all", "lz4", 8)


@case("produce 100 B acks=1 1p")
def _p3(b: ZurauBroker) -> Measurement:
    return _produce(b, 100, "1", "none", 1)


def _consume(b: ZurauBroker, partitions: int, size: int = 1024, records: int = 1_000_000) -> Measurement:
    topic = create_topic(b, partitions)
    fill(b, topic, partitions, size, records)
    return consume_throughput(
        b, topic=topic, partitions=partitions, size=size, records=records, max_seconds=120
    )


@case("consume 1 KiB 1p")
def _c1(b: ZurauBroker) -> Measurement:
    return _consume(b, 1)


@case("consume 1 KiB 8p")
def _c8(b: ZurauBroker) -> Measurement:
    return _consume(b, 8)


@case("latency 1 KiB acks=all 2000/s")
def _lat(b: ZurauBroker) -> Measurement:
    topic = create_topic(b, 1)
    return latency(b, topic=topic, partitions=1, size=1024, acks="all", rate=2000, seconds=8.0)


@case("produce 1 KiB acks=all 8p")
def _p8(b: ZurauBroker) -> Measurement:
    return _produce(b, 1024, "all", "none", 8)


@case("produce 1 KiB acks=all 1000p")
def _p1000(b: ZurauBroker) -> Measurement:
    return _produce(b, 1024, "all", "none", 1000)


@case("latency 1 KiB acks=all 2000/s 1000p")
def _lat1000(b: ZurauBroker) -> Measurement:
    topic = create_topic(b, 1000)
    return latency(b, topic=topic, partitions=1000, size=1024, acks="all", rate=2000, seconds=8.0)


@case("latency 100 B acks=all linger 0 2000/s")
def _lat_low(b: ZurauBroker) -> Measurement:
    """The low-rate case: a produce request and a fetch per record or two; CPU per request."""
    topic = create_topic(b, 1)
    return latency(
        b, topic=topic, partitions=1, size=100, acks="all", rate=2000, seconds=8.0,
        producer_overrides={"linger.ms": 0},
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, type=Path, help="src/ of the earlier tree")
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parent.parent / "src")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of: " + ", ".join(CASES))
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    print(
        "| Case | Tree | Best MB/s | Median broker CPU ms/MB | Median produce p99 ms | Median broker CPU % core "
        "| Other CPU (cores) | Runs (MB/s @ ms/MB) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="zurau-ab-") as tmp:
        for name in names:
            results: dict[str, list[Measurement]] = {k: [] for k in trees}
            for _ in range(args.runs):
                for label, src in trees.items():
                    with ZurauBroker(Path(tmp), src=src) as b:
                        results[label].append(CASES[name](b))
            for label, ms in results.items():
                cpu = statistics.median(m.cpu_s_per_mb * 1000 for m in ms)
                p99 = [m.extra["produce_p99"] for m in ms if "produce_p99" in m.extra]
                other = statistics.median(m.other_cpu_s / m.seconds for m in ms)
                core = statistics.median(100 * m.broker_cpu_s / m.seconds for m in ms)
                print(
                    f"| {name} | {label} | {max(m.mb_per_s for m in ms):.1f} | {cpu:.2f} | "
                    f"{statistics.median(p99) if p99 else float('nan'):.1f} | {core:.1f} | {other:.2f} | "
                    + ", ".join(f"{m.mb_per_s:.0f} @ {m.cpu_s_per_mb * 1000:.2f}" for m in ms)
                    + " |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
