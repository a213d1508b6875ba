"""Seeded simulation of dynamic quorums (KIP-853): voters live in the log and change while the
network, disks and processes misbehave (see ``harness.py``).

Five nodes, three of them bootstrapped as voters; during chaos the leader is asked to add an
observer or remove a voter (itself included) every few hundred milliseconds, on top of the faults
and snapshots of the static runs. Replay a failing seed with::

    ZURAU_SIM_SEED=1234 .venv/bin/pytest tests/sim/test_raft_sim_dynamic.py
"""

from __future__ import annotations

import os

import pytest

from tests.sim.harness import SimParams, run_seed

DYNAMIC = SimParams(voters=3, observers=2, dynamic=True)


def _seeds(default: int, env: str = "ZURAU_SIM_SEEDS") -> list[int]:
    one = os.environ.get("ZURAU_SIM_SEED")
    if one is not None:
        return [int(one)]
    return list(range(int(os.environ.get(env, default))))


def test_dynamic_voters_under_chaos() -> None:
    added = removed = committed = 0
    for seed in _seeds(200):
        sim = run_seed(seed, DYNAMIC)
        committed += sim.voter_changes_done
        for n in sim.nodes.values():
            assert n.raft is not None
        final = max((n.raft for n in sim.nodes.values() if n.raft), key=lambda r: r.high_watermark)
        added += len(final.voters - set(sim.voters))
        removed += len(set(sim.voters) - final.voters)
    if "ZURAU_SIM_SEED" not in os.environ:
        # The runs really reconfigure: changes commit, observers become voters, voters leave.
        assert committed > 100 and added > 20 and removed > 20


@pytest.mark.slow
def test_dynamic_voters_long_sweep() -> None:
    base = 2_000_000
    seeds = _seeds(300, "ZURAU_SIM_SLOW_SEEDS")  # ZURAU_SIM_SLOW_SEEDS=1000+ for a dedicated sweep
    for s in seeds:
        run_seed(base + s if "ZURAU_SIM_SEED" not in os.environ else s, DYNAMIC)


def test_a_dynamic_seed_replays_exactly() -> None:
    a = run_seed(11, DYNAMIC)
    b = run_seed(11, DYNAMIC)
    assert a.trace == b.trace and a.checker.history == b.checker.history
