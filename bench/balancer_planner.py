"""The self-balancing planner's cost (:func:`zurau.metadata.controller.balancer.plan`) on random
clusters of a few sizes.

    PYTHONPATH=src .venv/bin/python -m bench.balancer_planner [--sizes 1000x12,2000x24,10000x50]
        [--scenarios shuffled,added,removed] [--seed 1] [--runs 1] [--check]

Pure CPU in this process: no broker is started. Each case builds one cluster (seeded, so every run
and every checkout plans the same input), plans it ``--runs`` times and reports the fastest wall
time and the least CPU time of this process (on a shared machine the CPU time is the steadier
figure), with what the plan proposes. ``--check`` also plans again on
:func:`~zurau.metadata.controller.balancer.apply_plan` of the result and reports whether that
proposes nothing (convergence; it doubles the time).

The clusters: ``P x B`` is P partitions of replication factor 3 on B brokers in 3 racks
(``r0``..``r2``, round-robin), 20 topics, known disk capacities (every broker 2x the mean load,
so ``disk.max.load`` never binds), and per partition a size, bytes in and bytes out drawn from
log-normal distributions (a few big partitions among many small ones, as on real clusters). The
scenarios:

* ``shuffled``: replicas placed uniformly at random (racks ignored), leaders the first replica:
  rack fixes, then every soft goal;
* ``added``: placed rack-aware on all but the last ``max(1, B // 12)`` brokers, which are empty
  (brokers just added): replica, leader and resource balance onto the new brokers;
* ``removed``: placed rack-aware on every broker, then one broker (the first) is being removed:
  a drain, then rebalance;
* ``bounded``: placed rack-aware but skewed (each broker weighted 0.5-1.5), disks 80% full on
  average with capacities varying +-30% (so ``disk.max.load`` 85% binds on some) and
  ``max_replicas_per_broker`` 5% above the mean: the hard capacity goals, some left unresolved.

To compare two checkouts, run the same command with ``PYTHONPATH`` at each one's ``src``
(``git archive <commit> src | tar -x -C /tmp/base``); the cluster generator is here, not in src.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass

from bench._provenance import zurau_revision
from zurau.metadata.controller.balancer import (
    BalancerOptions,
    BrokerModel,
    ClusterModel,
    PartitionLoad,
    PartitionModel,
    apply_plan,
    plan,
)

RACKS = 3
RF = 3
TOPICS = 20
SCENARIOS = ("shuffled", "added", "removed", "bounded")


@dataclass(frozen=True, slots=True)
class Result:
    scenario: str
    partitions: int
    brokers: int
    seconds: float
    cpu_seconds: float
    reassignments: int
    leadership_moves: int
    unresolved: int
    truncated: bool
    gb_to_move: float
    converges: bool | None


def _load(rng: random.Random) -> PartitionLoad:
    # Median 1 GB / 1 MB/s in / 2 MB/s out, heavy-tailed.
    return PartitionLoad(
        int(rng.lognormvariate(20.7, 1.0)),
        int(rng.lognormvariate(13.8, 1.0)),
        int(rng.lognormvariate(14.5, 1.0)),
    )


def options_for(scenario: str, partitions: int, brokers: int) -> BalancerOptions:
    """The planner options of ``scenario``: the defaults, but for ``bounded``'s replica bound."""
    if scenario == "bounded":
        return BalancerOptions(max_replicas_per_broker=-(-partitions * RF * 105 // (100 * brokers)))
    return BalancerOptions()


def build(scenario: str, partitions: int, brokers: int, seed: int) -> ClusterModel:
    """The cluster of ``scenario`` (module docstring), the same for the same arguments."""
    rng = random.Random(f"{scenario}/{partitions}/{brokers}/{seed}")
    ids = list(range(1, brokers + 1))
    rack = {b: f"r{b % RACKS}" for b in ids}
    loads = [_load(rng) for _ in range(partitions)]
    mean_disk = sum(ld.size_bytes for ld in loads) * RF // brokers
    capacity = dict.fromkeys(ids, 2 * sum(ld.size_bytes for ld in loads) * RF // brokers)
    weight = dict.fromkeys(ids, 1.0)
    if scenario == "bounded":
        capacity = {b: int(mean_disk / 0.8 * rng.uniform(0.7, 1.3)) for b in ids}
        weight = {b: rng.uniform(0.5, 1.5) for b in ids}
    new = set(ids[-max(1, brokers // 12) :]) if scenario == "added" else set()
    placeable = [b for b in ids if b not in new]
    by_rack: dict[str, list[int]] = {}
    for b in placeable:
        by_rack.setdefault(rack[b], []).append(b)
    parts = []
    per_topic = -(-partitions // TOPICS)
    for n, load in enumerate(loads):
        if scenario == "shuffled":
            replicas = tuple(rng.sample(ids, RF))
        else:
            racks = rng.sample(sorted(by_rack), min(RF, len(by_rack)))
            if scenario == "bounded":
                chosen = [rng.choices(by_rack[r], [weight[b] for b in by_rack[r]])[0] for r in racks]
            else:
                chosen = [rng.choice(by_rack[r]) for r in racks]
            rest = [b for b in placeable if b not in chosen]
            replicas = tuple(chosen + rng.sample(rest, RF - len(chosen)))
        parts.append(
            PartitionModel(
                f"topic-{n // per_topic:02d}", n % per_topic, replicas, replicas, replicas[0], 2, load=load
            )
        )
    models = [
        BrokerModel(
            b, rack[b], removing=scenario == "removed" and b == ids[0], disk_capacity_bytes=capacity[b]
        )
        for b in ids
    ]
    return ClusterModel.of(models, parts)


def run_case(scenario: str, partitions: int, brokers: int, seed: int, runs: int, check: bool) -> Result:
    model = build(scenario, partitions, brokers, seed)
    options = options_for(scenario, partitions, brokers)
    best = best_cpu = float("inf")
    result = None
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = plan(model, options)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    assert result is not None
    converges = plan(apply_plan(model, result), options).empty if check else None
    return Result(
        scenario,
        partitions,
        brokers,
        best,
        best_cpu,
        len(result.reassignments),
        len(result.leadership_moves),
        len(result.unresolved),
        result.truncated,
        result.bytes_to_move / 1e9,
        converges,
    )


def _sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        p, b = item.lower().split("x")
        out.append((int(p), int(b)))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000x12,2000x24,10000x50", help="PARTITIONSxBROKERS,...")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="also check that replanning proposes nothing")
    args = ap.parse_args(argv)
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s!r} (one of {', '.join(SCENARIOS)})")
    print(
        f"Zurau at {zurau_revision()}; Python {sys.version.split()[0]}; seed {args.seed}; best of {args.runs}"
    )
    print()
    print(
        "| scenario | partitions x RF 3 | brokers | plan s | CPU s | reassignments | leadership moves | GB to move "
        "| unresolved | truncated | replan empty |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for partitions, brokers in _sizes(args.sizes):
        for scenario in scenarios:
            r = run_case(scenario, partitions, brokers, args.seed, args.runs, args.check)
            conv = "-" if r.converges is None else ("yes" if r.converges else "NO")
            print(
                f"| {r.scenario} | {r.partitions:,} | {r.brokers} | {r.seconds:.2f} | {r.cpu_seconds:.2f} | {r.reassignments:,} "
                f"| {r.leadership_moves:,} | {r.gb_to_move:,.0f} | {r.unresolved} | {'yes' if r.truncated else 'no'} "
                f"| {conv} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
