"""Seeded deterministic simulation of the share-partition manager (see ``share_harness.py``).

Each seed runs members fetching, acknowledging and closing sessions against the real
share-partition manager, with lock expiry, leadership changes, share-coordinator write failures
and delays, DeleteRecords, transactions and a share-coordinator failover, then drains; the
properties of the harness docstring are checked after every step. A failure names its seed;
replay one with::

    ZURAU_SHARE_SIM_SEED=1234 .venv/bin/pytest tests/sim/test_share_sim.py

``ZURAU_SHARE_SIM_SEEDS`` sets how many seeds run (default 200).
"""

from __future__ import annotations

import os

from tests.sim.share_harness import ShareSimParams, run_share_seed


def _seeds(default: int) -> list[int]:
    one = os.environ.get("ZURAU_SHARE_SIM_SEED")
    if one is not None:
        return [int(one)]
    return list(range(int(os.environ.get("ZURAU_SHARE_SIM_SEEDS", default))))


def test_share_partition_manager_sim() -> None:
    delivered = 0
    for seed in _seeds(200):
        sim = run_share_seed(seed)
        delivered += sim.delivered_total
    assert delivered > 0


def test_share_partition_manager_sim_without_faults() -> None:
    # Without share-coordinator failures and delays every acknowledgement of records the member
    # holds succeeds (leadership still moves, locks still expire).
    params = ShareSimParams(write_failure=0.0, read_failure=0.0, delay=0.0)
    for seed in _seeds(30):
        sim = run_share_seed(10_000 + seed, params)
        failed = {k: n for k, n in sim.stats.items() if k.startswith("ack_held_") and k != "ack_held_ok"}
        assert not failed, f"seed {10_000 + seed}: acknowledgements of held records failed: {failed}"
