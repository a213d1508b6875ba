"""aiokafka consumer groups against Zurau (FindCoordinator v1, JoinGroup v5, SyncGroup v3,
Heartbeat v1, LeaveGroup v1, OffsetCommit/Fetch v3) through the kill / join scenario of
:mod:`tests.compat.group_scenario`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.group_scenario import SESSION_MS, run_group_scenario

pytestmark = pytest.mark.slow


def test_group_kill_and_join(tmp_path: Path) -> None:
    t = run_group_scenario("aiokafka", tmp_path)
    print(t)
    assert t["takeover_after_kill"] < SESSION_MS / 1000 + 6, t
