"""ShareStateChannel: routing share-partitions to their share coordinator (socket-free).

Partitions this broker's share coordinator leads (or that no broker leads yet) are answered
in-process; the others go to their leader's inter-broker listener, and a broker that cannot be
reached gives them COORDINATOR_NOT_AVAILABLE. Every requested partition gets one code. Codes
that pass (a coordinator loading or moving) are asked again a bounded number of times.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from zurau.coordinator.share.share_state_records import coordinator_key
from zurau.coordinator.share.state_initializer import RETRY_ATTEMPTS, ShareStateChannel
from zurau.protocol.errors import CoordinatorNotAvailableError

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


class LocalShares:
    """The in-process share coordinator: records what it was asked, answers 0 (or ``fail``)."""

    def __init__(self, fail: int = 0, times: int = 1_000) -> None:
        self.asked: list[tuple[str, list[Any]]] = []
        self.fail = fail
        self.times = times  # answer ``fail`` to this many requests, then 0

    async def initialize_state(self, group_id: str, topics: Sequence[Any]) -> list[Any]:
        self.asked.append((group_id, list(topics)))
        fail = self.fail if len(self.asked) <= self.times else 0
        return [
            {
                "topic_id": t["topic_id"],
                "partitions": [{"partition": p["partition"], "error_code": fail, "error_message": None} for p in t["partitions"]],
            }
            for t in topics
        ]


def _channel(local: LocalShares, owner: dict[str, int]) -> ShareStateChannel:
    return ShareStateChannel(1, local, lambda key: owner.get(key, 1), lambda b: None,  # type: ignore[arg-type]
                             retry_backoff_ms=1, retry_timeout_ms=0)


async def test_local_partitions_are_initialized_in_process_with_start_offset_minus_one() -> None:
    local = LocalShares()
    codes = await _channel(local, {}).initialize_state("g", 7, {T1: [0, 2], T2: [1]})
    assert codes == {T1: {0: 0, 2: 0}, T2: {1: 0}}
    ((group, topics),) = local.asked
    assert group == "g"
    sent = {t["topic_id"]: [(p["partition"], p["state_epoch"], p["start_offset"]) for p in t["partitions"]] for t in topics}
    assert sent == {T1: [(0, 7, -1), (2, 7, -1)], T2: [(1, 7, -1)]}


async def test_remote_partitions_of_an_unreachable_broker_are_not_available() -> None:
    local = LocalShares(fail=14)
    owner = {coordinator_key("g", T1, 0): 2, coordinator_key("g", T1, 1): -1}  # -1: nobody leads yet
    codes = await _channel(local, owner).initialize_state("g", 3, {T1: [0, 1, 2]})
    assert codes == {T1: {0: CoordinatorNotAvailableError.code, 1: 14, 2: 14}}
    # 14 (loading) passes: asked again, up to the bound, and the last answer stands
    assert [p["partition"] for _, ts in local.asked for t in ts for p in t["partitions"]] == [1, 2] * RETRY_ATTEMPTS


async def test_a_coordinator_that_finishes_loading_is_answered_on_a_retry() -> None:
    local = LocalShares(fail=14, times=2)
    codes = await _channel(local, {}).initialize_state("g", 3, {T1: [0, 1]})
    assert codes == {T1: {0: 0, 1: 0}}
    assert len(local.asked) == 3


async def test_an_error_that_does_not_pass_is_not_asked_again() -> None:
    local = LocalShares(fail=58)  # SASL_AUTHENTICATION_FAILED: not a coordinator move
    codes = await _channel(local, {}).initialize_state("g", 3, {T1: [0]})
    assert codes == {T1: {0: 58}} and len(local.asked) == 1
