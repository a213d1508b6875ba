"""The share-partition simulation catches deliberately broken share-partition managers.

Each test plants one bug (``monkeypatch`` on the real classes, undone after the test; ``src`` has
no switch for any of them) and asserts that the simulation of ``share_harness.py`` reports a
violation within a bounded number of seeds.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.share_harness import ShareSimViolation, run_share_seed
from zurau.protocol.share_states import RecordState
from zurau.replication.share.share_partition import SharePartition
from zurau.replication.share.share_partition_manager import SharePartitionManager

SEEDS = 30


def _caught(*expected: str) -> None:
    """Some seed below SEEDS fails with a violation naming one of ``expected``."""
    for seed in range(SEEDS):
        try:
            run_share_seed(seed)
        except ShareSimViolation as e:
            assert any(x in str(e) for x in expected), str(e)
            return
    pytest.fail(f"no violation in {SEEDS} seeds")


def test_acknowledgement_answered_before_its_write(monkeypatch: pytest.MonkeyPatch) -> None:
    persist = SharePartitionManager._persist

    async def early(self: SharePartitionManager, h: Any) -> None:
        self._spawn(persist(self, h))  # answers at once; a failed write is then a lie

    monkeypatch.setattr(SharePartitionManager, "_persist", early)
    _caught("delivered again after its ACCEPT/REJECT was answered OK")


def test_lock_timer_never_armed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SharePartitionManager, "_arm", lambda self, h: None)
    _caught("past its lock deadline")


def test_release_loses_a_delivery(monkeypatch: pytest.MonkeyPatch) -> None:
    release = SharePartition._release

    def lossy(self: SharePartition, offset: int, rec: Any) -> None:
        rec.count = max(rec.count - 1, 0)
        release(self, offset, rec)

    monkeypatch.setattr(SharePartition, "_release", lossy)
    _caught("expected")


def test_persisted_state_forgets_acknowledged_records(monkeypatch: pytest.MonkeyPatch) -> None:
    to_state = SharePartition.to_state

    def forgetful(self: SharePartition) -> Any:
        start, batches = to_state(self)
        return start, [b for b in batches if b.delivery_state != RecordState.ACKNOWLEDGED]

    monkeypatch.setattr(SharePartition, "to_state", forgetful)
    _caught("delivered again after its ACCEPT/REJECT was answered OK")


def test_control_batches_skip_one_record_too_many(monkeypatch: pytest.MonkeyPatch) -> None:
    skip_absent = SharePartition.skip_absent
    monkeypatch.setattr(
        SharePartition,
        "skip_absent",
        lambda self, upto, fetch_offset=None: skip_absent(self, upto + 1, fetch_offset),
    )
    _caught("passed unfinished offset", "without reason")


def test_session_close_keeps_the_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SharePartition, "release_member", lambda self, member_id: 0)
    _caught("the simulation expects None")
