"""The replication throttle's quota (:mod:`zurau.replication.replication_quota`) on a manual
clock: which partitions a throttled-replicas config names for a broker, the windowed byte rate
against a bound read at each use, and how long a throttled fetcher waits."""

from __future__ import annotations

from zurau.clock import ManualClock
from zurau.replication.replication_quota import (
    ALL_PARTITIONS,
    LEADER_REPLICAS,
    UNLIMITED_RATE,
    ReplicationQuota,
    throttled_partitions,
)


def test_throttled_partitions_keep_this_brokers_entries() -> None:
    assert throttled_partitions("0:1,1:2, 2:1 ,3:3", 1) == frozenset({0, 2})
    assert throttled_partitions("0:1,1:2", 4) == frozenset()
    assert throttled_partitions(" * ", 7) is ALL_PARTITIONS and 12 in ALL_PARTITIONS
    assert throttled_partitions("", 1) == frozenset() and throttled_partitions(None, 1) == frozenset()


def make_quota(clock: ManualClock, rate: list[int], configs: dict[str, dict[str, str]]) -> ReplicationQuota:
    return ReplicationQuota(
        clock, broker_id=1, config_name=LEADER_REPLICAS, configs=configs.get, rate=lambda: rate[0],
        window_num=3, window_ms=1000,
    )


def test_is_throttled_follows_the_topic_config() -> None:
    configs = {"t": {LEADER_REPLICAS: "0:1,1:2"}}
    q = make_quota(ManualClock(), [1000], configs)
    assert q.is_throttled("t", 0) and not q.is_throttled("t", 1) and not q.is_throttled("other", 0)
    configs["t"] = {LEADER_REPLICAS: "*"}  # a new config mapping (a new image): parsed again
    assert q.is_throttled("t", 1)
    configs["t"] = {}
    assert not q.is_throttled("t", 0)


def test_the_rate_is_measured_over_the_windows_against_the_current_bound() -> None:
    clock = ManualClock()
    rate = [1000]
    q = make_quota(clock, rate, {})
    assert not q.is_quota_exceeded() and q.delay_ms() == 0
    q.record(600)
    assert not q.is_quota_exceeded()  # 600 B over one window
    q.record(600)
    assert q.is_quota_exceeded() and q.byte_rate() == 1200.0
    assert q.delay_ms() == 1200  # 1200 B need 1.2 s at 1000 B/s
    clock.advance(1000)
    assert q.is_quota_exceeded() and q.delay_ms() == 200
    clock.advance(200)
    assert not q.is_quota_exceeded() and q.delay_ms() == 0
    rate[0] = 500  # the bound is read at each use
    assert q.is_quota_exceeded() and q.delay_ms() == 1200
    rate[0] = UNLIMITED_RATE
    assert not q.is_quota_exceeded() and q.delay_ms() == 0
    assert q.throttled_bytes == 1200


def test_windows_older_than_the_sample_span_are_forgotten() -> None:
    clock = ManualClock()
    q = make_quota(clock, [100], {})
    q.record(1000)
    clock.advance(1000)
    q.record(100)  # a second window
    assert q.is_quota_exceeded()
    clock.advance(2000)  # the first window is 3 s old: gone
    assert q.byte_rate() == 100 * 1000 / 2000
    clock.advance(1000)
    assert q.byte_rate() == 0.0 and not q.is_quota_exceeded()


def test_a_steady_sender_is_held_to_the_rate() -> None:
    """A sender that sends 100 B whenever the quota allows (checking every 10 ms) moves, over
    30 s, the rate's worth plus at most about one window's burst."""
    clock = ManualClock()
    q = make_quota(clock, [5000], {})
    sent = 0
    for _ in range(3000):
        if not q.is_quota_exceeded():
            q.record(100)
            sent += 100
        clock.advance(10)
    assert 5000 * 30 <= sent <= 5000 * 31 + 100
