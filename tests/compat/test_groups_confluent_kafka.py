"""confluent-kafka (librdkafka) consumer groups against Zurau: the classic protocol (JoinGroup v5,
SyncGroup v3, Heartbeat v3, OffsetCommit/Fetch v9) and KIP-848 ``group.protocol=consumer``
(ConsumerGroupHeartbeat v1), each through the kill / join scenario of
:mod:`tests.compat.group_scenario`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.group_scenario import SESSION_MS, run_group_scenario

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_kill_and_join(tmp_path: Path, protocol: str) -> None:
    t = run_group_scenario("confluent", tmp_path, protocol)
    print(t)
    assert t["takeover_after_kill"] < SESSION_MS / 1000 + 6, t
