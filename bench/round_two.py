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

import sys

from bench._steps import Step, main_for

BEGIN = "<!-- round-two:begin (written by bench/round_two.py; edits inside are overwritten) -->"
END = "<!-- round-two:end -->"
#: Steps whose figures ``bench.run`` (all sections, 3 repeats) already produces; ``make bench``
#: runs it first and passes ``--after-bench-run``.
AFTER_BENCH_RUN = ("partitions", "produce-consume")


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



def main(argv: list[str] | None = None) -> int:
    return main_for(
        "bench.round_two", STEPS, description=__doc__.split("\n")[0], begin=BEGIN, end=END,
        heading="## Round two, all figures from one run (`bench/round_two.py`)",
        after_bench_run=AFTER_BENCH_RUN, argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
