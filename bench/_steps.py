"""Running a round's benchmark steps one after another and writing their reports into BENCHMARKS.md.

A *step* is one of the project's benchmark scripts, run as its own process (never two at once:
they share the machine) with fixed arguments (``full``, or ``quick`` for a smoke run). Its printed
report is copied verbatim under a heading naming the goal it measures, with the step's wall time
and the machine's load average before and after it, so a reader can tell a margin from noise. A
step that fails is reported as failed (its last output lines) and the run goes on.

The reports of one run replace what lies between a round's two markers in the markdown file
(:func:`write_markdown`); the rest of the file is left as it was.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench._provenance import provenance_line

ROOT = Path(__file__).resolve().parent.parent
TAIL_LINES = 25


@dataclass(frozen=True)
class Step:
    name: str
    goal: str
    full: tuple[str, ...]
    quick: tuple[str, ...]


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min) / {five:.2f} (5 min)"


def run_step(step: Step, quick: bool, timeout_s: float) -> str:
    """One step's report section (markdown)."""
    args = step.quick if quick else step.full
    command = " ".join([".venv/bin/python -m", *map(shlex.quote, args)])
    print(f"== {step.name}: {command}", file=sys.stderr, flush=True)
    before = load_average()
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
        f"`{command}` -- {elapsed:.0f} s; load average before {before}, after {load_average()}",
        "",
        output,
        "",
    ])


def write_markdown(path: Path, body: str, begin: str, end: str, heading: str) -> None:
    """Put ``body`` between the markers ``begin`` and ``end`` of ``path`` (appended under
    ``heading`` when the file has no such markers yet)."""
    text = path.read_text() if path.exists() else ""
    block = f"{begin}\n{body}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + f"\n\n{heading}\n\n" + block + "\n"
    path.write_text(text)


def main_for(
    module: str,
    steps: Sequence[Step],
    *,
    description: str,
    begin: str,
    end: str,
    heading: str,
    after_bench_run: Sequence[str] = (),
    argv: list[str] | None = None,
) -> int:
    """The command line of a round's script (``python -m <module>``): run the chosen steps, print
    the report and write it between the round's markers."""
    ap = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    ap.add_argument("--quick", action="store_true", help="short steps (a smoke run, not numbers to quote)")
    ap.add_argument("--only", default=",".join(s.name for s in steps), help="comma-separated step names")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="markdown file to update ('-': none)")
    ap.add_argument("--step-timeout", type=float, default=3600.0, help="seconds before a step is given up")
    ap.add_argument(
        "--after-bench-run", action="store_true",
        help=f"skip the steps bench.run (as make bench runs it first) reported: {', '.join(after_bench_run) or 'none'}",
    )
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if args.after_bench_run:
        names = [n for n in names if n not in after_bench_run]
    unknown = set(names) - {s.name for s in steps}
    if unknown:
        ap.error(f"unknown steps: {', '.join(sorted(unknown))}")
    t0 = time.monotonic()
    sections = [run_step(s, args.quick, args.step_timeout) for s in steps if s.name in names]
    shown = " ".join(["--quick"] * args.quick + ([f"--only {args.only}"] if len(names) < len(steps) else []))
    if args.after_bench_run:
        shown += " --after-bench-run"
    header = [
        f"`.venv/bin/python -m {module} {shown}`".replace(" `", "`") + f" on {time.strftime('%Y-%m-%d')}, "
        f"{time.monotonic() - t0:.0f} s in all, {os.cpu_count()} cores.",
        "",
        provenance_line(clients=["confluent_kafka"]),
        "",
    ]
    body = "\n".join(header + sections)
    print(body)
    if args.out != "-":
        write_markdown(Path(args.out), body, begin, end, heading)
        print(f"written to {args.out}", file=sys.stderr)
    return 0
