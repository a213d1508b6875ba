"""Replication throttles end to end through a leader's real Fetch handler (in process, as
tests/unit/test_replica_fetcher.py wires it): the leader leaves a throttled partition's records
out of a lagging follower's answer while its quota is exceeded, never an in-sync follower's nor
an unthrottled partition's; the follower leaves a lagging throttled partition out of its fetch."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_replica_fetcher import TID, Clock, InProcessConnection, batch, make_fetcher, make_rm
from zurau.replication.replica_fetcher import FetcherConfig
from zurau.replication.replica_manager import ReplicaManager
from zurau.replication.replication_quota import FOLLOWER_REPLICAS, LEADER_REPLICAS, ReplicationQuota

RATE = 200  # bytes/s (a batch of 20 records is ~270 bytes)


def quota(clock: Clock, broker_id: int, name: str, configs: dict[str, str]) -> ReplicationQuota:
    return ReplicationQuota(
        clock, broker_id=broker_id, config_name=name, configs=lambda t: configs if t == "t" else None,
        rate=lambda: RATE, window_num=11, window_ms=1000,
    )


def setup(tmp_path: Path, isr: list[int], configs: dict[str, str]) -> tuple[Clock, ReplicaManager, ReplicaManager]:
    clock = Clock()
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    leader.leader_quota = quota(clock, 1, LEADER_REPLICAS, configs)
    leader.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=isr)
    follower.make_follower("t", 0, leader_id=1, leader_epoch=0)
    for _ in range(4):
        leader.append_as_leader("t", 0, batch(20), required_acks=1)
    return clock, leader, follower


async def fetch_rounds(leader: ReplicaManager, follower: ReplicaManager, rounds: int) -> list[int]:
    """The follower's log end offset after each of ``rounds`` fetches of one batch at most."""
    fetcher = make_fetcher(follower, InProcessConnection(leader))
    fetcher.config = FetcherConfig(max_bytes=1, wait_max_ms=0, backoff_ms=10)
    fp = follower.get("t", 0)
    assert fp is not None
    fetcher.add_partition("t", 0, TID, 0)
    state = fetcher.partitions[("t", 0)]
    ends = []
    for _ in range(rounds):
        state.delayed_until = 0
        await fetcher.run_once([state])
        ends.append(fp.log_end_offset)
    return ends


async def test_the_leader_throttles_a_lagging_follower_of_a_throttled_partition(tmp_path: Path) -> None:
    clock, leader, follower = setup(tmp_path, [1], {LEADER_REPLICAS: "0:1"})
    assert await fetch_rounds(leader, follower, 3) == [20, 20, 20]  # one batch, then over the quota
    lp = leader.get("t", 0)
    assert lp is not None and lp.followers[2].log_end_offset == 20, "the throttled fetch still counts"
    q = leader.leader_quota
    assert q is not None and q.throttled_bytes > RATE and q.is_quota_exceeded()
    clock.ms += q.delay_ms()
    assert await fetch_rounds(leader, follower, 2) == [40, 40]  # the quota allows one more batch


async def test_an_in_sync_follower_and_an_unthrottled_partition_are_never_throttled(tmp_path: Path) -> None:
    _clock, leader, follower = setup(tmp_path, [1, 2], {LEADER_REPLICAS: "0:1"})
    assert await fetch_rounds(leader, follower, 4) == [20, 40, 60, 80]
    q = leader.leader_quota
    assert q is not None and q.is_quota_exceeded(), "recorded, but an ISR member is not held back"
    _clock, leader, follower = setup(tmp_path / "b", [1], {LEADER_REPLICAS: "0:3"})  # another broker's entry
    assert await fetch_rounds(leader, follower, 4) == [20, 40, 60, 80]
    assert leader.leader_quota is not None and leader.leader_quota.throttled_bytes == 0


async def test_the_follower_leaves_a_lagging_throttled_partition_out_of_its_fetch(tmp_path: Path) -> None:
    clock, leader, follower = setup(tmp_path, [1], {})
    fq = quota(clock, 2, FOLLOWER_REPLICAS, {FOLLOWER_REPLICAS: "0:2"})
    conn = InProcessConnection(leader)
    fetcher = make_fetcher(follower, conn)
    fetcher.quota = fq
    fetcher.add_partition("t", 0, TID, 0)
    state = fetcher.partitions[("t", 0)]
    await fetcher.run_once([state])  # nothing recorded yet: fetches all 4 batches
    fp = follower.get("t", 0)
    assert fp is not None and fp.log_end_offset == 80 and fq.throttled_bytes > 4 * RATE
    assert state.in_sync and fetcher._throttled([state]) == [], "caught up: never held back"
    state.in_sync = False
    assert fetcher._throttled([state]) == [state]
    clock.ms += fq.delay_ms()
    assert fetcher._throttled([state]) == []
