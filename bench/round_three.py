"""Every figure of performance round three (issue 34: the cluster's costs) in one run:
``.venv/bin/python -m bench.round_three``.

``make bench`` runs it after :mod:`bench.run` and :mod:`bench.round_two`. Each step is one of the
project's benchmark scripts, run as its own process, one after another, its report copied into
BENCHMARKS.md between the round-three markers with its command, wall time and load average
(:mod:`bench._steps`). ``--only`` picks steps by name; ``--quick`` shrinks every one.

Steps:

* ``replication``: RF 3 against RF 1 on three broker processes: MB/s and broker CPU per produced
  MB summed over the nodes (goal: RF 3 <= 2.2 ms/MB, RF 3 / RF 1 throughput >= 0.6x, RF 3 CPU per
  MB <= 2x RF 1's) (``bench.replication --only throughput``);
* ``failover``: leader ``kill -9`` to the next acknowledged acks=all record, for a running
  producer and a fresh one, split by whether the leader was also the active controller, and the
  killed node's time to serve again (goal: median <= 2 s, worst <= 4 s)
  (``bench.replication --only failover``);
* ``topic-creation``: CreateTopics of 1,000 partitions on one node, and of 1,000 and 9,999 (RF 1;
  the most one request may create, as in Kafka)
  on three (goal: <= 0.5 s; <= 0.25 s and <= 2 s) (``bench.topic_creation``);
* ``tls``: produce and consume over TLS against plaintext (goal: >= 0.5x and >= 0.8x)
  (``bench.tls``);
* ``transactions``: ``send_offsets_to_transaction`` + ``commit_transaction`` on three nodes
  (goal: median <= 50 ms) (``bench.transactions``);
* ``cdc``: PostgreSQL commit to Kafka, p50/p99, against Tansu with the same connector (goal:
  p99 <= Tansu's) (``bench.cdc``).
"""

from __future__ import annotations

import sys

from bench._steps import Step, main_for

BEGIN = "<!-- round-three:begin (written by bench/round_three.py; edits inside are overwritten) -->"
END = "<!-- round-three:end -->"

STEPS = (
    Step(
        "replication",
        "Replication: RF 3 broker CPU <= 2.2 ms per MB (summed over the nodes), <= 2x RF 1's, throughput >= 0.6x RF 1",
        ("bench.replication", "--only", "throughput", "--seconds", "10", "--repeats", "3"),
        ("bench.replication", "--only", "throughput", "--seconds", "3", "--repeats", "1"),
    ),
    Step(
        "failover",
        "Failover: leader kill -9 to the next acknowledged acks=all record, median <= 2 s, worst <= 4 s",
        ("bench.replication", "--only", "failover", "--rounds", "20"),
        ("bench.replication", "--only", "failover", "--rounds", "3"),
    ),
    Step(
        "topic-creation",
        "Topic creation: 1,000 partitions <= 0.5 s on one node; on three (RF 1) 1,000 <= 0.25 s, 9,999 (the most one request may create) <= 2 s",
        ("bench.topic_creation",),
        ("bench.topic_creation", "--quick"),
    ),
    Step(
        "tls",
        "TLS: produce >= 0.5x plaintext, consume >= 0.8x",
        ("bench.tls", "--runs", "3"),
        ("bench.tls", "--runs", "1", "--seconds", "2", "--consume-records", "50000"),
    ),
    Step(
        "transactions",
        "Transactions on three nodes: send_offsets_to_transaction + commit_transaction median <= 50 ms",
        ("bench.transactions",),
        ("bench.transactions", "--quick"),
    ),
    Step(
        "cdc",
        "CDC: PostgreSQL commit to Kafka p99 <= Tansu's with the same connector",
        ("bench.cdc", "--no-spark"),
        ("bench.cdc", "--no-spark", "--transactions", "300"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    return main_for(
        "bench.round_three", STEPS, description=__doc__.split("\n")[0], begin=BEGIN, end=END,
        heading="## Round three, all figures from one run (`bench/round_three.py`)", argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
