"""Every figure of performance round two (issue 18) in one run: ``.venv/bin/python -m bench.round_two``.

``make bench`` runs it after :mod:`bench.run`. Each step below is one of the project's benchmark
scripts, run as its own process, one after another (never two at once: they share the machine),
with the arguments shown; its printed report is copied verbatim into BENCHMARKS.md between the
round-two markers, under a heading naming the goal it measures, with the step's wall time and
the machine's load average before and after it, so a reader can tell a margin from noise.

Steps (``--only`` picks some by name; ``--quick`` shrinks every one, for a smoke run):

* ``partitions``: produce throughput and p99 at 2,000 records/s with 8 and 1,000 partitions,
  1 KiB, acks=all, against Tansu (``bench.run --only partitions``);
* ``produce-consume``: 1 KiB produce and consume at 1 and 8 partitions, 3 repeats per broker,
  median and worst (``bench.run --only produce,consume``);
* ``small-records``: consume 100 B with librdkafka's default consumer settings, and the
  low-rate case (2,000 records/s of 100 B, linger 0): broker CPU against Tansu's
  (``bench.small_records``);
* ``lowrate-profile``: where the broker's CPU goes at the low rate (``bench.profile latency``
  with py-spy), the profile that explains that miss;
* ``partitions-profile`` and ``consume-profile``: the same py-spy profile of produce at 1,000
  partitions and of consume 1 KiB from one partition, with the broker's and the client's CPU:
  what explains those two misses;
* ``scale``: 10,000 partitions (start-up clean and after kill -9, Metadata for all topics, memory
  per partition) and 1,000 idle connections next to 100 active ones (``bench.scale``);
* ``fetch-sessions``: 1,000 partitions with a few hot ones, with and without KIP-227 sessions
  (``bench.fetch_sessions``);
* ``spark-source``: the Spark source against a plain confluent-kafka loop, 100 B and 1 KiB
  (``bench.spark_source``);
* ``replication``: RF 3 against RF 1 on three broker processes, broker CPU per MB
  (``bench.replication --only throughput``).

``make bench`` runs ``bench.run`` (every section, 3 repeats: the first two steps' figures are its
partitions, produce and consume tables) and then this script with ``--after-bench-run``.

A step that fails is reported as failed (its last output lines) and the run goes on.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench._provenance import provenance_line

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- round-two:begin (written by bench/round_two.py; edits inside are overwritten) -->"
END = "<!-- round-two:end -->"
TAIL_LINES = 25
#: Steps whose figures ``bench.run`` (all sections, 3 repeats) already produces; ``make bench``
#: runs it first and passes ``--after-bench-run``.
AFTER_BENCH_RUN = ("partitions", "produce-consume")


@dataclass(frozen=True)
class Step:
    name: str
    goal: str
    full: tuple[str, ...]
    quick: tuple[str, ...]


STEPS = (
    Step(
        "partitions",
        "1,000 partitions: produce >= 1.5x Tansu, p99 at 2,000/s <= 1.0x Tansu, >= 0.7x Zurau's own 8-partition throughput",
        ("bench.run", "--only", "partitions", "--partition-counts", "8,1000", "--repeat", "3", "--out", "-"),
        ("bench.run", "--quick", "--only", "partitions", "--partition-counts", "8,100", "--out", "-"),
    ),
    Step(
        "produce-consume",
        "Produce 1 KiB acks=all >= 2.0x Tansu and consume 1 KiB >= 2.5x Tansu (1 and 8 partitions)",
        ("bench.run", "--only", "produce,consume", "--repeat", "3", "--out", "-"),
        ("bench.run", "--quick", "--only", "produce,consume", "--out", "-"),
    ),
    Step(
        "small-records",
        "Consume 100 B (librdkafka defaults) >= 1.5x Tansu; low rate broker CPU <= 0.6x Tansu",
        ("bench.small_records", "--runs", "3"),
        ("bench.small_records", "--runs", "1", "--records", "200000", "--seconds", "3"),
    ),
    Step(
        "lowrate-profile",
        "Where the broker's CPU goes at 2,000 records/s of 100 B, linger 0 (py-spy)",
        ("bench.profile", "latency", "--size", "100", "--rate", "2000", "--seconds", "10", "--top", "25", "--gil"),
        ("bench.profile", "latency", "--size", "100", "--rate", "2000", "--seconds", "3", "--top", "10", "--gil"),
    ),
    Step(
        "partitions-profile",
        "Why 1,000 partitions reach less than 8: the broker's and the client's CPU, and where the broker's goes (py-spy)",
        ("bench.profile", "produce", "--size", "1024", "--acks", "all", "--partitions", "1000", "--seconds", "8", "--top", "20"),
        ("bench.profile", "produce", "--size", "1024", "--acks", "all", "--partitions", "100", "--seconds", "3", "--top", "10"),
    ),
    Step(
        "consume-profile",
        "Why consume 1 KiB does not reach 2.5x Tansu: the broker's and the client's CPU, and where the broker's goes (py-spy)",
        ("bench.profile", "consume", "--size", "1024", "--mb", "500", "--top", "20"),
        ("bench.profile", "consume", "--size", "1024", "--mb", "50", "--top", "10"),
    ),
    Step(
        "scale",
        "10,000 partitions (start-up, kill -9 start-up, Metadata, memory per partition); 1,000 idle + 100 active connections",
        ("bench.scale",),
        ("bench.scale", "--quick"),
    ),
    Step(
        "fetch-sessions",
        "Fetch sessions (KIP-227): 1,000 partitions, a few hot",
        ("bench.fetch_sessions", "--repeats", "3"),
        ("bench.fetch_sessions", "--seconds", "2"),
    ),
    Step(
        "spark-source",
        "Spark source, 4 partitions, local[2]: >= 1.2x a plain confluent-kafka loop at 1 KiB, >= 1.4x at 100 B",
        ("bench.spark_source",),
        ("bench.spark_source", "--records", "200000", "--repeat", "1"),
    ),
    Step(
        "replication",
        "RF 3 acks=all >= 0.5x RF 1 on the same machine; broker CPU per replicated MB",
        ("bench.replication", "--only", "throughput", "--seconds", "10", "--repeats", "3"),
        ("bench.replication", "--only", "throughput", "--seconds", "3", "--repeats", "1"),
    ),
)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min) / {five:.2f} (5 min)"


def run_step(step: Step, quick: bool, timeout_s: float) -> str:
    """One step's report section (markdown)."""
    args = step.quick if quick else step.full
    command = " ".join([".venv/bin/python -m", *map(shlex.quote, args)])
    print(f"== {step.name}: {command}", file=sys.stderr, flush=True)
    before = _load()
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s
        )
        output, failed = done.stdout.strip(), done.returncode != 0
        if failed:
            tail = "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-TAIL_LINES:])
            output = f"FAILED (exit {done.returncode}); the end of its output:\n\n```\n{tail}\n```"
    except subprocess.TimeoutExpired:
        output, failed = f"FAILED: no result within {timeout_s:.0f} s", True
    elapsed = time.monotonic() - t0
    print(f"   {'failed' if failed else 'done'} in {elapsed:.0f} s", file=sys.stderr, flush=True)
    return "\n".join([
        f"### {step.goal}",
        "",
        f"`{command}` -- {elapsed:.0f} s; load average before {before}, after {_load()}",
        "",
        output,
        "",
    ])


def write_markdown(path: Path, body: str) -> None:
    text = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{body}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n## Round two, all figures from one run (`bench/round_two.py`)\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.round_two", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short steps (a smoke run, not numbers to quote)")
    ap.add_argument("--only", default=",".join(s.name for s in STEPS), help="comma-separated step names")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="markdown file to update ('-': none)")
    ap.add_argument("--step-timeout", type=float, default=3600.0, help="seconds before a step is given up")
    ap.add_argument(
        "--after-bench-run", action="store_true",
        help=f"skip {', '.join(AFTER_BENCH_RUN)}: bench.run (as make bench runs it first) reported them",
    )
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if args.after_bench_run:
        names = [n for n in names if n not in AFTER_BENCH_RUN]
    unknown = set(names) - {s.name for s in STEPS}
    if unknown:
        ap.error(f"unknown steps: {', '.join(sorted(unknown))}")
    t0 = time.monotonic()
    sections = [run_step(s, args.quick, args.step_timeout) for s in STEPS if s.name in names]
    shown = " ".join(["--quick"] * args.quick + ([f"--only {args.only}"] if len(names) < len(STEPS) else []))
    if args.after_bench_run:
        shown += " --after-bench-run"
    header = [
        f"`.venv/bin/python -m bench.round_two {shown}`".replace(" `", "`") + f" on {time.strftime('%Y-%m-%d')}, "
        f"{time.monotonic() - t0:.0f} s in all, {os.cpu_count()} cores.",
        "",
        provenance_line(clients=["confluent_kafka"]),
        "",
    ]
    body = "\n".join(header + sections)
    print(body)
    if args.out != "-":
        write_markdown(Path(args.out), body)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
