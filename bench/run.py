"""Zurau versus Tansu, side by side, in one run: ``.venv/bin/python -m bench.run [--quick]``.

Starts each broker in its own process on 127.0.0.1 (Zurau with its log on disk, Tansu with
``memory://tansu/``), a fresh one for every case, and drives both with the same confluent-kafka
settings from this process (the client). Prints a table of Zurau/Tansu ratios against the goals
and writes it, with the command that reproduces it, between the markers of BENCHMARKS.md.

Sections (``--only`` picks some): ``produce`` (record size x acks x compression x partitions),
``consume`` (from offset 0), ``latency`` (produce and end-to-end at a fixed rate), ``partitions``
(1, 8, 100, 1,000 partitions, acks=all; ``--partition-counts`` picks others), ``logsize`` (throughput as a topic grows, and Zurau's storage
alone: append and fetch-by-offset cost against the log's size).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bench._brokers import BrokerUnderTest, TansuBroker, ZurauBroker, tansu_version
from bench._provenance import provenance_line
from bench._storage import LogSizePoint, log_size_scaling
from bench._workloads import (
    CONSUMER_BASE,
    PRODUCER_BASE,
    Measurement,
    consume_throughput,
    create_topic,
    fill,
    latency,
    produce_throughput,
)

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- bench:begin (written by bench/run.py; edits inside are overwritten) -->"
END = "<!-- bench:end -->"
NOISE_LIMIT = 0.15  # share of a core used by other processes above which a run is flagged
SECTIONS = ("produce", "consume", "latency", "partitions", "logsize")
BROKER_TYPES: tuple[type[BrokerUnderTest], ...] = (ZurauBroker, TansuBroker)
CLIENTS_USED = ("confluent_kafka",)  # every workload in bench._workloads drives confluent-kafka


@dataclass(frozen=True)
class Scale:
    """How long and how much: ``--quick`` for a smoke run, the default for numbers to quote."""

    produce_seconds: float
    produce_max_records_1k: int
    consume_mb: int
    latency_seconds: float
    latency_rate: int
    partition_counts: tuple[int, ...]
    partition_seconds: float
    partition_latency_seconds: float
    growth_rounds: int
    growth_round_mb: int
    storage_mb: int
    repeat: int


FULL = Scale(
    produce_seconds=5.0,
    produce_max_records_1k=3_000_000,
    consume_mb=500,
    latency_seconds=20.0,
    latency_rate=2000,
    partition_counts=(1, 8, 100, 1000),
    partition_seconds=4.0,
    partition_latency_seconds=8.0,
    growth_rounds=4,
    growth_round_mb=500,
    storage_mb=2000,
    repeat=3,
)
QUICK = Scale(
    produce_seconds=1.5,
    produce_max_records_1k=500_000,
    consume_mb=100,
    latency_seconds=5.0,
    latency_rate=2000,
    partition_counts=(1, 8, 100, 1000),
    partition_seconds=1.5,
    partition_latency_seconds=3.0,
    growth_rounds=3,
    growth_round_mb=100,
    storage_mb=256,
    repeat=1,
)


@dataclass
class Row:
    """One measured quantity for both brokers."""

    section: str
    case: str
    metric: str
    unit: str
    higher_is_better: bool
    values: dict[str, float] = field(default_factory=dict)

    def ratio(self) -> float:
        z, t = self.values.get("Zurau"), self.values.get("Tansu")
        if z is None or t is None or t == 0 or math.isnan(z) or math.isnan(t):
            return float("nan")
        return z / t


@dataclass(frozen=True)
class Goal:
    """A goal on the geometric mean of the Zurau/Tansu ratios of the rows it selects."""

    title: str
    select: Callable[[Row], bool]
    bound: float
    at_least: bool  # True: ratio >= bound; False: ratio <= bound

    def evaluate(self, rows: Iterable[Row]) -> tuple[float, float, int]:
        """(geometric mean, worst case, number of rows) of the selected rows' ratios."""
        ratios = [r.ratio() for r in rows if self.select(r) and not math.isnan(r.ratio()) and r.ratio() > 0]
        if not ratios:
            return float("nan"), float("nan"), 0
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        worst = min(ratios) if self.at_least else max(ratios)
        return gm, worst, len(ratios)


GOALS = (
    Goal(
        "Produce throughput, 1 KiB, acks=all",
        lambda r: (
            r.section == "produce" and r.metric == "MB/s" and "1 KiB" in r.case and "acks=all" in r.case
        ),
        1.0,
        True,
    ),
    Goal(
        "Consume throughput, 1 KiB",
        lambda r: r.section == "consume" and r.metric == "MB/s" and "1 KiB" in r.case,
        1.5,
        True,
    ),
    Goal(
        "Produce throughput, 100 B",
        lambda r: r.section == "produce" and r.metric == "MB/s" and "100 B" in r.case,
        0.9,
        True,
    ),
    Goal(
        "Produce latency p99 at 2,000 rec/s",
        lambda r: r.section == "latency" and r.metric == "produce p99",
        1.5,
        False,
    ),
    Goal(
        "Produce throughput, 1 KiB, acks=all, 1,000 partitions",
        lambda r: r.section == "partitions" and r.metric == "MB/s" and r.case.endswith(", 1000 partitions"),
        1.5,
        True,
    ),
    Goal(
        "Produce latency p99 at 2,000 rec/s, 1,000 partitions",
        lambda r: (
            r.section == "partitions" and r.metric == "produce p99" and r.case.endswith(", 1000 partitions")
        ),
        1.0,
        False,
    ),
    Goal(
        "Broker CPU per MB produced",
        lambda r: r.section == "produce" and r.metric == "CPU s/MB",
        1.0,
        False,
    ),
)


class Runner:
    """Runs each case against a fresh instance of each broker and collects rows."""

    def __init__(self, scale: Scale, workdir: Path, verbose: bool = True) -> None:
        self.scale = scale
        self.workdir = workdir
        self.rows: list[Row] = []
        self.verbose = verbose
        self.notes: list[str] = []
        self.storage_runs = []
        self.other_shares: list[float] = []
        self.noisy: list[str] = []  # kept runs during which other processes used > NOISE_LIMIT
        self.worst: dict[str, Measurement] = {}  # the slowest run per broker of the last case

    def log(self, msg: str) -> None:
        if self.verbose:
            print(msg, file=sys.stderr, flush=True)

    def _row(self, section: str, case: str, metric: str, unit: str, higher: bool) -> Row:
        for r in self.rows:
            if (r.section, r.case, r.metric) == (section, case, metric):
                return r
        r = Row(section, case, metric, unit, higher)
        self.rows.append(r)
        return r

    def each_broker(
        self, fn: Callable[[BrokerUnderTest], Measurement], *, quietest: bool = False
    ) -> dict[str, Measurement]:
        """Run ``fn`` on a fresh Zurau and a fresh Tansu, interleaved, ``scale.repeat`` times each.

        Every case of every section runs the same number of times. Returns, per broker, the
        median run by throughput (and keeps the slowest in :attr:`worst` for the report), or with
        ``quietest`` the run during which other processes used the least CPU (latency).
        """
        runs: dict[str, list[Measurement]] = {}
        for _ in range(self.scale.repeat):
            for cls in BROKER_TYPES:
                broker = cls(self.workdir)
                with broker:
                    m = fn(broker)
                runs.setdefault(broker.name, []).append(m)
        chosen: dict[str, Measurement] = {}
        self.worst = {}
        for name, ms in runs.items():
            if quietest:
                chosen[name] = min(ms, key=lambda m: m.other_cpu_s / m.seconds if m.seconds else 0.0)
            else:
                ordered = sorted(ms, key=lambda m: m.mb_per_s)
                chosen[name] = ordered[(len(ordered) - 1) // 2]  # the median (the lower one of an even count)
                self.worst[name] = ordered[0]
        return chosen

    # -------------------------------------------------------------------------------- sections
    def produce(self) -> None:
        s = self.scale
        for size in (1024, 100):
            for acks in ("all", "1"):
                for compression in ("none", "lz4"):
                    for partitions in (1, 8):
                        case = (
                            f"{'1 KiB' if size == 1024 else '100 B'}, acks={acks}, {compression}, "
                            f"{partitions} partition{'s' if partitions > 1 else ''}"
                        )
                        max_records = s.produce_max_records_1k * (1024 // size)

                        def run(
                            b: BrokerUnderTest,
                            partitions: int = partitions,
                            size: int = size,
                            acks: str = acks,
                            compression: str = compression,
                            max_records: int = max_records,
                        ) -> Measurement:
                            topic = create_topic(b, partitions)
                            return produce_throughput(
                                b,
                                topic=topic,
                                partitions=partitions,
                                size=size,
                                acks=acks,
                                compression=compression,
                                max_records=max_records,
                                max_seconds=s.produce_seconds,
                            )

                        res = self.each_broker(run)
                        self._record_throughput("produce", case, res)

    def _check_noise(self, name: str, section: str, case: str, m: Measurement) -> None:
        """Note runs during which other processes used a noticeable share of the machine."""
        share = m.other_cpu_s / m.seconds if m.seconds > 0 else 0.0
        self.other_shares.append(share)
        if share > NOISE_LIMIT:
            self.noisy.append(f"{name} {section} '{case}' ({100 * share:.0f}%)")

    def _record_throughput(self, section: str, case: str, res: dict[str, Measurement]) -> None:
        for name, m in res.items():
            self._row(section, case, "MB/s", "MB/s", True).values[name] = m.mb_per_s
            if self.scale.repeat > 1 and name in self.worst:
                self._row(section, case, f"MB/s, worst of {self.scale.repeat}", "MB/s", True).values[name] = (
                    self.worst[name].mb_per_s
                )
            self._row(section, case, "records/s", "rec/s", True).values[name] = m.records_per_s
            self._row(section, case, "CPU s/MB", "s/MB", False).values[name] = m.cpu_s_per_mb
            self._row(section, case, "user CPU s/MB", "s/MB", False).values[name] = (
                m.broker_user_s / (m.payload_bytes / 1e6) if m.payload_bytes else float("nan")
            )
            self._row(section, case, "client CPU s/MB", "s/MB", False).values[name] = (
                m.client_cpu_s / (m.payload_bytes / 1e6) if m.payload_bytes else float("nan")
            )
            if m.extra.get("incomplete"):
                self.notes.append(f"{name}: {section} '{case}' did not finish in time ({m.records} records)")
            self._check_noise(name, section, case, m)
        self.log(
            f"[{section}] {case}: "
            + ", ".join(
                f"{n} {m.mb_per_s:.1f} MB/s cpu {m.cpu_s_per_mb * 1000:.2f} ms/MB" for n, m in res.items()
            )
        )

    def consume(self) -> None:
        s = self.scale
        for size in (1024, 100):
            for partitions in (1, 8):
                records = s.consume_mb * 1_000_000 // size
                case = f"{'1 KiB' if size == 1024 else '100 B'}, {partitions} partition{'s' if partitions > 1 else ''}"

                def run(
                    b: BrokerUnderTest, partitions: int = partitions, size: int = size, records: int = records
                ) -> Measurement:
                    topic = create_topic(b, partitions)
                    fill(b, topic, partitions, size, records)
                    return consume_throughput(
                        b, topic=topic, partitions=partitions, size=size, records=records, max_seconds=120
                    )

                res = self.each_broker(run)
                self._record_throughput("consume", case, res)

    def _record_latency(self, section: str, case: str, res: dict[str, Measurement]) -> None:
        for name, m in res.items():
            for kind in ("produce", "e2e"):
                for q in ("p50", "p99", "p99.9"):
                    self._row(section, case, f"{kind} {q}", "ms", False).values[name] = m.extra[f"{kind}_{q}"]
            self._row(section, case, "broker CPU", "% core", False).values[name] = (
                100 * m.broker_cpu_s / m.seconds
            )
            self._check_noise(name, section, case, m)
            if m.extra["received"] < m.records:
                self.notes.append(
                    f"{name}: {section} '{case}' consumer saw {m.extra['received']:.0f}/{m.records}"
                )
        self.log(
            f"[{section}] {case}: "
            + ", ".join(
                f"{n} produce p50/p99 {m.extra['produce_p50']:.1f}/{m.extra['produce_p99']:.1f} ms, "
                f"e2e p50/p99 {m.extra['e2e_p50']:.1f}/{m.extra['e2e_p99']:.1f} ms"
                for n, m in res.items()
            )
        )

    def latency(self) -> None:
        s = self.scale
        case = f"1 KiB, acks=all, 1 partition, {s.latency_rate:,} rec/s"

        def run(b: BrokerUnderTest) -> Measurement:
            topic = create_topic(b, 1)
            return latency(
                b,
                topic=topic,
                partitions=1,
                size=1024,
                acks="all",
                rate=s.latency_rate,
                seconds=s.latency_seconds,
            )

        self._record_latency("latency", case, self.each_broker(run, quietest=True))

    def partitions(self) -> None:
        s = self.scale
        for n in s.partition_counts:
            case = f"{n} partition{'s' if n > 1 else ''}"

            def run_tp(b: BrokerUnderTest, n: int = n) -> Measurement:
                topic = create_topic(b, n)
                return produce_throughput(
                    b,
                    topic=topic,
                    partitions=n,
                    size=1024,
                    acks="all",
                    compression="none",
                    max_records=s.produce_max_records_1k,
                    max_seconds=s.partition_seconds,
                )

            self._record_throughput("partitions", f"produce 1 KiB acks=all, {case}", self.each_broker(run_tp))

            def run_lat(b: BrokerUnderTest, n: int = n) -> Measurement:
                topic = create_topic(b, n)
                return latency(
                    b,
                    topic=topic,
                    partitions=n,
                    size=1024,
                    acks="all",
                    rate=s.latency_rate,
                    seconds=s.partition_latency_seconds,
                )

            self._record_latency(
                "partitions",
                f"latency {s.latency_rate:,} rec/s, {case}",
                self.each_broker(run_lat, quietest=True),
            )

    def logsize(self) -> None:
        """The growth series (successive rounds on one broker) runs ``scale.repeat`` times per
        broker, like every other case; each round keeps its fastest run."""
        s = self.scale
        per_round = s.growth_round_mb * 1_000_000 // 1024
        best: dict[tuple[str, int], Measurement] = {}
        for _ in range(s.repeat):
            for cls in BROKER_TYPES:
                with cls(self.workdir) as b:
                    topic = create_topic(b, 1)
                    for i in range(s.growth_rounds):
                        m = produce_throughput(
                            b,
                            topic=topic,
                            partitions=1,
                            size=1024,
                            acks="1",
                            compression="none",
                            max_records=per_round,
                            max_seconds=600,
                        )
                        prev = best.get((b.name, i))
                        if prev is None or m.mb_per_s > prev.mb_per_s:
                            best[(b.name, i)] = m
                        self.log(
                            f"[logsize] {b.name} round {i}: {m.mb_per_s:.1f} MB/s, RSS {b.rss_mb():.0f} MB"
                        )
        for (name, i), m in sorted(best.items(), key=lambda kv: kv[0][1]):
            case = (
                f"produce 1 KiB acks=1, log at {i * s.growth_round_mb:,}-{(i + 1) * s.growth_round_mb:,} MB"
            )
            self._row("logsize", case, "MB/s", "MB/s", True).values[name] = m.mb_per_s
            self._row("logsize", case, "CPU s/MB", "s/MB", False).values[name] = m.cpu_s_per_mb
        self.log("[logsize] Zurau storage alone ...")
        # Large segments (Kafka-like) over the full size, then many small ones: fetch-by-offset
        # must stay flat while the segment count grows a hundredfold (a bisect per level).
        for segment_mb, total_mb in ((64, s.storage_mb), (1, s.storage_mb // 4)):
            runs = [
                log_size_scaling(total_mb, segment_mb=segment_mb, workdir=self.workdir)
                for _ in range(s.repeat)
            ]
            self.storage_runs.append((segment_mb, best_points(runs)))

    storage_runs: list[tuple[int, list[LogSizePoint]]]


def best_points(runs: list[list[LogSizePoint]]) -> list[LogSizePoint]:
    """Per checkpoint, the best of several identical storage runs (least CPU, most MB/s).

    The runs grow the same log in the same steps, so their checkpoints correspond one to one.
    """
    return [
        replace(
            pts[0],
            append_us_per_batch=min(p.append_us_per_batch for p in pts),
            append_mb_per_s=max(p.append_mb_per_s for p in pts),
            read_slice_us=min(p.read_slice_us for p in pts),
            read_us_per_fetch=min(p.read_us_per_fetch for p in pts),
        )
        for pts in zip(*runs, strict=True)
    ]


# ------------------------------------------------------------------------------------ reporting
def _fmt(v: float | None, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if unit == "s/MB":
        return f"{v * 1000:.2f} ms"
    if unit == "rec/s":
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def _ratio(r: Row) -> str:
    x = r.ratio()
    return "-" if math.isnan(x) else f"{x:.2f}x"


def report(runner: Runner, command: str, elapsed_s: float) -> str:
    rows = runner.rows
    out: list[str] = []
    out.append(f"Command: `{command}` ({elapsed_s / 60:.1f} min).  ")
    out.append(_environment())
    n = runner.scale.repeat
    out.append(
        f"Every case ran {n} time{'s' if n != 1 else ''} per broker, each time on a fresh broker (the growth "
        f"series as a whole; the storage-alone series {n} time{'s' if n != 1 else ''} too); kept: the fastest run "
        "for throughput and storage, the run with the least other CPU for latency.  "
    )
    if runner.other_shares:
        sh = sorted(runner.other_shares)
        out.append(
            f"Other processes on the machine used {100 * sum(sh) / len(sh):.0f}% of a core on average during the "
            f"kept runs (median {100 * sh[len(sh) // 2]:.0f}%, max {100 * sh[-1]:.0f}%; {len(runner.noisy)} of "
            f"{len(sh)} runs above {100 * NOISE_LIMIT:.0f}%): the more, the noisier the numbers.  "
        )
    out.append("")
    out.append("### Goals (Zurau/Tansu, geometric mean of the matching rows below; worst row in brackets)\n")
    out.append("| Goal | Target | Reached | Worst row | Rows | Met |")
    out.append("|---|---|---|---|---|---|")
    for g in GOALS:
        gm, worst, n = g.evaluate(rows)
        if n == 0:
            continue
        ok = gm >= g.bound if g.at_least else gm <= g.bound
        target = f"{'>=' if g.at_least else '<='} {g.bound:.1f}x"
        out.append(f"| {g.title} | {target} | {gm:.2f}x | {worst:.2f}x | {n} | {'yes' if ok else '**no**'} |")
    titles = {
        "produce": "Produce throughput (linger.ms=5, batch.size=1 MiB, records round-robin over partitions)",
        "consume": f"Consume throughput from offset 0 ({runner.scale.consume_mb} MB of record values)",
        "latency": "Latency at a fixed rate (ms; end-to-end uses the consumer's default fetch.wait.max.ms=500)",
        "partitions": "Scaling with the partition count",
        "logsize": "Throughput as one topic grows (same broker process, successive rounds)",
    }
    for section in SECTIONS:
        srows = [r for r in rows if r.section == section]
        if not srows:
            continue
        out.append(f"\n### {titles[section]}\n")
        out.append("| Case | Metric | Zurau | Tansu | Zurau/Tansu |")
        out.append("|---|---|---|---|---|")
        for r in srows:
            if r.metric == "records/s":
                continue
            unit = "" if r.unit in ("MB/s", "ms") else f" {r.unit}" if r.unit != "s/MB" else "/MB"
            out.append(
                f"| {r.case} | {r.metric} | {_fmt(r.values.get('Zurau'), r.unit)}{unit if r.values.get('Zurau') is not None else ''} "
                f"| {_fmt(r.values.get('Tansu'), r.unit)}{unit if r.values.get('Tansu') is not None else ''} | {_ratio(r)} |"
            )
    if runner.storage_runs:
        out.append(
            "\n### Zurau storage alone: cost against the log's size (PartitionLog in-process, 16 KiB batches, "
            "CPU time; fetches at uniformly random offsets, up to 1 MiB each)\n"
        )
        out.append(
            "| Segment size | Log size | Segments | Append µs/batch | Append MB/s | read_slice µs | read µs (+ bytes) |"
        )
        out.append("|---|---|---|---|---|---|---|")
        for segment_mb, points in runner.storage_runs:
            for p in points:
                out.append(
                    f"| {segment_mb} MiB | {p.log_mb:,.0f} MB | {p.segments:,} | {p.append_us_per_batch:.1f} "
                    f"| {p.append_mb_per_s:,.0f} | {p.read_slice_us:.1f} | {p.read_us_per_fetch:.1f} |"
                )
    if runner.notes:
        out.append("\nNotes from this run:\n")
        out.extend(f"- {n}" for n in runner.notes)
    return "\n".join(out) + "\n"


def _environment() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"Machine: {os.cpu_count()} cores ({cpu}), Linux {platform.release()}, Python {platform.python_version()}; "
        f"{tansu_version()}; run {time.strftime('%Y-%m-%d %H:%M')}.  \n"
        f"{provenance_line(ROOT, CLIENTS_USED)}  \n"
        f"Client settings for both brokers: producer `{json.dumps(PRODUCER_BASE)}` plus the case's acks and "
        f"compression; consumer `{json.dumps(CONSUMER_BASE)}`; librdkafka defaults otherwise."
    )


def write_markdown(path: Path, body: str) -> None:
    """Replace the text between the bench markers in ``path`` (create the file if needed)."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\n" + BEGIN + "\n" + END + "\n"
    if BEGIN not in text or END not in text:
        text = text.rstrip() + "\n\n" + BEGIN + "\n" + END + "\n"
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    path.write_text(head + BEGIN + "\n" + body + END + tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (a smoke test, not numbers to quote)")
    ap.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}"
    )
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"), help="markdown file to update ('-': none)")
    ap.add_argument("--json", default=None, help="also write the raw rows as JSON here")
    ap.add_argument(
        "--repeat", type=int, default=None,
        help="runs of every case, the same for all (the median is reported, and the worst beside it)"
    )
    ap.add_argument(
        "--partition-counts", default=None, help="comma-separated partition counts (partitions section)"
    )
    args = ap.parse_args(argv)
    scale = QUICK if args.quick else FULL
    if args.repeat:
        scale = Scale(**{**asdict(scale), "repeat": args.repeat})
    if args.partition_counts:
        counts = tuple(int(c) for c in args.partition_counts.split(",") if c.strip())
        scale = Scale(**{**asdict(scale), "partition_counts": counts})
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    # The command that reproduces the numbers (where they are written to does not matter).
    shown = ["--quick"] if args.quick else []
    if args.only != ",".join(SECTIONS):
        shown += ["--only", args.only]
    if args.repeat:
        shown += ["--repeat", str(args.repeat)]
    if args.partition_counts:
        shown += ["--partition-counts", args.partition_counts]
    command = " ".join([".venv/bin/python -m bench.run", *map(shlex.quote, shown)])
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="zurau-bench-") as tmp:
        runner = Runner(scale, Path(tmp))
        for section in SECTIONS:
            if section in sections:
                getattr(runner, section)()
    body = report(runner, command, time.monotonic() - t0)
    print(body)
    if args.out != "-":
        write_markdown(Path(args.out), body)
        print(f"written to {args.out}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in runner.rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
