"""What serving metrics costs a broker's produce path: the same workloads with and without
``metrics.http.listener``, interleaved.

    .venv/bin/python -m bench.metrics_overhead [--runs 5] [--seconds 4] [--scrape-every 5]

Each case runs ``--runs`` times per mode, alternating ``off``/``on``, each on a fresh broker
process (``zurau broker start``). With metrics on, a thread scrapes /metrics every
``--scrape-every`` seconds meanwhile (Prometheus is commonly set to 15-60 s: this is harsher).
Prints the best throughput of each mode and the median broker CPU per MB, and their ratios
on/off: the overhead is ``1 - throughput ratio`` (and ``CPU ratio - 1`` of broker CPU per MB).
On a shared machine the throughput of one run varies by ±10%: trust the CPU per MB and more runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path

from bench._brokers import ZurauBroker
from bench._workloads import Measurement, create_topic, produce_throughput
from zurau.embedded import free_ports


def _produce(size: int, acks: str, partitions: int) -> Callable[[ZurauBroker, float], Measurement]:
    def run(b: ZurauBroker, seconds: float) -> Measurement:
        topic = create_topic(b, partitions)
        return produce_throughput(
            b,
            topic=topic,
            partitions=partitions,
            size=size,
            acks=acks,
            compression="none",
            max_records=3_000_000 * 1024 // size,
            max_seconds=seconds,
        )

    return run


CASES: dict[str, Callable[[ZurauBroker, float], Measurement]] = {
    "produce 1 KiB acks=all 1p": _produce(1024, "all", 1),
    "produce 100 B acks=1 1p": _produce(100, "1", 1),
    "produce 1 KiB acks=1 8p": _produce(1024, "1", 8),
}


class _Scraper(threading.Thread):
    """Scrapes ``url`` every ``every`` seconds until stopped; counts scrapes and bytes."""

    def __init__(self, url: str, every: float) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.every = every
        self.stopped = threading.Event()
        self.scrapes = 0
        self.bytes = 0

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            with urllib.request.urlopen(self.url, timeout=10) as r:
                self.bytes += len(r.read())
            self.scrapes += 1


def _once(workdir: Path, case: Callable[[ZurauBroker, float], Measurement], metrics: bool, args: argparse.Namespace) -> Measurement:
    listener = f"http://127.0.0.1:{free_ports(1)[0]}" if metrics else ""
    broker = ZurauBroker(workdir, **{"metrics.http.listener": listener})
    broker.start()
    scraper = _Scraper(f"{listener}/metrics", args.scrape_every) if metrics else None
    try:
        if scraper is not None:
            scraper.start()
        m = case(broker, args.seconds)
    finally:
        if scraper is not None:
            scraper.stopped.set()
            scraper.join()
        broker.stop()
    if scraper is not None:
        m.extra["scrapes"] = scraper.scrapes
        m.extra["scrape_kb"] = scraper.bytes / 1024 / max(scraper.scrapes, 1)
    return m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--scrape-every", type=float, default=5.0)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these cases")
    args = parser.parse_args()
    names = args.case or list(CASES)
    print(f"{'case':28} {'off MB/s':>9} {'on MB/s':>9} {'ratio':>6} {'off CPU s/MB':>13} {'on CPU s/MB':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="zurau-metrics-bench-") as tmp:
        workdir = Path(tmp)
        for name in names:
            runs: dict[bool, list[Measurement]] = {False: [], True: []}
            for _ in range(args.runs):
                for metrics in (False, True):
                    runs[metrics].append(_once(workdir, CASES[name], metrics, args))
            best = {k: max(m.mb_per_s for m in v) for k, v in runs.items()}
            cpu = {k: statistics.median(m.cpu_s_per_mb for m in v) for k, v in runs.items()}
            print(
                f"{name:28} {best[False]:9.1f} {best[True]:9.1f} {best[True] / best[False]:6.3f} "
                f"{cpu[False]:13.5f} {cpu[True]:12.5f} {cpu[True] / cpu[False]:6.3f}"
            )
            scrapes = sum(m.extra.get("scrapes", 0) for m in runs[True])
            kb = statistics.median(m.extra.get("scrape_kb", 0) for m in runs[True])
            print(f"{'':28} ({scrapes} scrapes while metrics were on, {kb:.0f} KiB each)")


if __name__ == "__main__":
    main()
