"""Profile the Zurau broker process under one bench workload with py-spy.

    .venv/bin/python -m bench.profile produce --size 1024 --acks all --partitions 1
    .venv/bin/python -m bench.profile consume --size 1024 --partitions 1
    .venv/bin/python -m bench.profile latency --partitions 1000 --cprofile   # without py-spy

Starts Zurau as the bench does, attaches ``py-spy record`` to its pid (as root, or with
ptrace permitted), runs the workload, and prints the functions with the most samples: self time
(where the CPU is spent) and inclusive time (which call paths lead there). ``--out`` keeps the
folded stacks (flamegraph input: ``flamegraph.pl`` or speedscope.app read them).

``--cprofile`` (the fallback when py-spy is not installed) runs the broker under ``cProfile``
instead and prints its top functions by own and cumulative time when the broker stops (SIGTERM
ends it cleanly). cProfile times are wall-clock and inflate call-heavy code several times, so read
its shares as a ranking, and take CPU figures from a run without it.
"""

from __future__ import annotations

import argparse
import collections
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._brokers import BrokerUnderTest, TansuBroker, ZurauBroker
from bench._workloads import consume_throughput, create_topic, fill, latency, produce_throughput


def summarize(folded: Path, top: int = 30) -> str:
    """Self and inclusive sample counts per function from py-spy's raw (folded) output."""
    self_counts: collections.Counter[str] = collections.Counter()
    incl_counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in folded.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        count = int(n)
        total += count
        frames = stack.split(";")
        self_counts[frames[-1]] += count
        for f in set(frames):
            incl_counts[f] += count
    if total == 0:
        return "no samples"
    lines = [f"{total} samples", "", "self %   function"]
    lines += [f"{100 * c / total:6.1f}  {f}" for f, c in self_counts.most_common(top)]
    lines += ["", "incl %   function"]
    lines += [f"{100 * c / total:6.1f}  {f}" for f, c in incl_counts.most_common(top)]
    return "\n".join(lines)


class _CProfiledZurau(ZurauBroker):
    """Zurau run as ``python -m cProfile -o <stats> -m zurau.cli.main ...``."""

    stats_path = ""

    def command(self) -> list[str]:
        cmd = super().command()
        return [cmd[0], "-m", "cProfile", "-o", self.stats_path, *cmd[1:]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n")[0])
    ap.add_argument("workload", choices=("produce", "consume", "latency"))
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--acks", default="all")
    ap.add_argument("--compression", default="none")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--mb", type=int, default=300, help="MB to consume (consume workload)")
    ap.add_argument("--rate", type=int, default=2000, help="records/s (latency workload)")
    ap.add_argument("--broker", choices=("zurau", "tansu"), default="zurau")
    ap.add_argument("--no-spy", action="store_true", help="just run the workload (numbers without py-spy)")
    ap.add_argument("--native", action="store_true", help="py-spy --native (C frames too)")
    ap.add_argument(
        "--gil", action="store_true",
        help="py-spy --gil: only samples holding the GIL (the interpreter's CPU, without waits in select or I/O)",
    )
    ap.add_argument("--cprofile", action="store_true", help="profile with cProfile instead of py-spy")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", default=None, help="keep the folded stacks here")
    args = ap.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    cprofile = args.cprofile or (not args.no_spy and not Path(spy).exists())
    with tempfile.TemporaryDirectory(prefix="zurau-profile-") as tmp:
        stats = Path(tmp) / "broker.pstats"
        b: BrokerUnderTest
        if cprofile and args.broker == "zurau" and not args.no_spy:
            b = _CProfiledZurau(Path(tmp))
            b.stats_path = str(stats)
        else:
            cprofile = False
            b = (ZurauBroker if args.broker == "zurau" else TansuBroker)(Path(tmp))
        with b:
            topic = create_topic(b, args.partitions)
            if args.workload == "consume":
                records = args.mb * 1_000_000 // args.size
                fill(b, topic, args.partitions, args.size, records)
            folded = Path(args.out) if args.out else Path(tmp) / "stacks.txt"
            rec = None
            if not args.no_spy and not cprofile and args.broker == "zurau":
                cmd = [
                    spy,
                    "record",
                    "--pid",
                    str(b.pid),
                    "--rate",
                    "250",
                    "--format",
                    "raw",
                    "-o",
                    str(folded),
                ]
                if args.native:
                    cmd.append("--native")
                if args.gil:
                    cmd.append("--gil")
                rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                time.sleep(1.0)
            if args.workload == "produce":
                m = produce_throughput(
                    b,
                    topic=topic,
                    partitions=args.partitions,
                    size=args.size,
                    acks=args.acks,
                    compression=args.compression,
                    max_records=10_000_000,
                    max_seconds=args.seconds,
                )
            elif args.workload == "consume":
                m = consume_throughput(
                    b,
                    topic=topic,
                    partitions=args.partitions,
                    size=args.size,
                    records=records,
                    max_seconds=120,
                )
            else:
                m = latency(
                    b,
                    topic=topic,
                    partitions=args.partitions,
                    size=args.size,
                    acks=args.acks,
                    rate=args.rate,
                    seconds=args.seconds,
                )
            print(
                f"{b.name} {args.workload}: {m.mb_per_s:.1f} MB/s, {m.records_per_s:,.0f} rec/s, broker CPU "
                f"{m.cpu_s_per_mb * 1000:.2f} ms/MB ({100 * m.broker_cpu_s / m.seconds:.0f}% core), client CPU "
                f"{100 * m.client_cpu_s / m.seconds:.0f}% core {m.extra or ''}"
            )
            if rec is not None:
                rec.send_signal(2)  # SIGINT: py-spy writes its output and exits
                rec.wait(30)
        if rec is not None:
            print(summarize(folded, args.top))
        if cprofile and stats.exists():
            st = pstats.Stats(str(stats))
            st.sort_stats("tottime").print_stats(args.top)
            st.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
