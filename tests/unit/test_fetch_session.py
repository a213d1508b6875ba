"""The broker's fetch session cache (KIP-227): epochs, partition updates, the incremental
response rule and eviction."""

from __future__ import annotations

import random
from typing import Any

from zurau.broker.fetch_session import (
    EVICTION_MS,
    FINAL_EPOCH,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    next_epoch,
)


def fp(partition: int, offset: int = 0) -> dict[str, Any]:
    return {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1024}


def entry(hw: int = 10, lso: int = 10, start: int = 0, error: int = 0, records: Any = None) -> dict[str, Any]:
    return {"high_watermark": hw, "last_stable_offset": lso, "log_start_offset": start, "error_code": error,
            "records": records, "preferred_read_replica": -1}  # fmt: skip


def test_next_epoch() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_must_respond_follows_kafkas_rule() -> None:
    cp = CachedPartition("t", None, fp(0))
    assert cp.must_respond(entry())  # first answer: the offsets are new
    assert not cp.must_respond(entry())  # nothing changed
    assert cp.must_respond(entry(records=b"x"))  # records always go
    assert cp.must_respond(entry(hw=11, lso=11))
    assert not cp.must_respond(entry(hw=11, lso=11))
    assert cp.must_respond(entry(hw=11, lso=10))  # last stable offset moved
    assert cp.must_respond(entry(hw=11, lso=10, start=5))  # log start moved
    assert not cp.must_respond(entry(hw=11, lso=10, start=5))
    # An error always goes and resets the cached HW, so the partition returns once it is gone.
    assert cp.must_respond(entry(hw=11, lso=10, start=5, error=6))
    assert cp.must_respond(entry(hw=11, lso=10, start=5))
    assert not cp.must_respond(entry(hw=11, lso=10, start=5))
    # Without update the cache does not move.
    assert cp.must_respond(entry(hw=12, lso=10, start=5), update=False)
    assert cp.must_respond(entry(hw=12, lso=10, start=5))


def test_session_update_adds_updates_and_forgets() -> None:
    s = FetchSession(1, False, False, 0)
    assert s.epoch == 1
    named = s.update([("a", None, [fp(0), fp(1)]), ("b", None, [fp(0)])], ())
    assert len(named) == 3 and list(s.partitions) == [("a", 0), ("a", 1), ("b", 0)]
    assert sorted(s.wait_keys()) == [("a", 0), ("a", 1), ("b", 0)]
    named = s.update([("a", None, [fp(1, 42)])], [("b", None, [0]), ("c", None, [3])])
    assert [cp.fetch_offset for cp in named] == [42]
    assert list(s.partitions) == [("a", 0), ("a", 1)]
    assert sorted(s.wait_keys()) == [("a", 0), ("a", 1)]
    # Forgetting a partition the same request names: it leaves the session.
    assert s.update([("a", None, [fp(0, 5)])], [("a", None, [0])]) == []
    s.moved_to_end(s.partitions[("a", 1)])
    assert list(s.partitions) == [("a", 1)]


def test_topic_id_sessions_key_by_id() -> None:
    import uuid

    tid = uuid.uuid4()
    s = FetchSession(1, True, True, 0)
    s.update([("t", tid, [fp(0)])], ())
    assert (tid, 0) in s.partitions and s.wait_keys() == [("t", 0)]
    s.update([], [(None, tid, [0])])
    assert not s.partitions


def make(cache: FetchSessionCache, now: int, privileged: bool, size: int) -> int | None:
    s = cache.maybe_create(now, privileged, size, False)
    if s is None:
        return None
    s.update([("t", None, [fp(i) for i in range(size)])], ())
    cache.touch(s, now)
    return s.id


def test_cache_ids_and_counts() -> None:
    cache = FetchSessionCache(10, rng=random.Random(1))
    ids = {make(cache, 0, False, 3) for _ in range(10)}
    assert len(ids) == 10 and 0 not in ids and len(cache) == 10 and cache.total_partitions == 30
    sid = ids.pop()
    assert sid is not None
    cache.remove(sid)
    assert len(cache) == 9 and cache.total_partitions == 27 and cache.get(sid) is None


def test_zero_slots_keeps_no_session() -> None:
    assert FetchSessionCache(0).maybe_create(0, True, 5, False) is None


def test_eviction_of_young_sessions_by_size_and_privilege() -> None:
    cache = FetchSessionCache(2)
    a = make(cache, 0, False, 5)
    b = make(cache, 0, False, 10)
    # A consumer session may not evict a young one, even a smaller one.
    assert make(cache, 10, False, 100) is None
    # A follower may evict a consumer's young session: the smallest goes.
    f = make(cache, 10, True, 1)
    assert f is not None and cache.get(a) is None and cache.get(b) is not None
    # A follower cannot evict another follower's young session.
    assert make(cache, 20, True, 1000) is not None  # b (a consumer's) goes
    assert cache.get(b) is None
    assert make(cache, 30, True, 1000) is None
    assert cache.evictions == 2


def test_eviction_of_older_sessions_prefers_the_less_valuable() -> None:
    cache = FetchSessionCache(2)
    small = make(cache, 0, False, 5)
    big = make(cache, 0, False, 50)
    now = EVICTION_MS + 1000
    cache.touch(cache.sessions[small], now)  # both used recently, both old enough
    cache.touch(cache.sessions[big], now)
    assert make(cache, now, False, 5) is None  # no bigger than the smallest
    new = make(cache, now, False, 6)
    assert new is not None and cache.get(small) is None and cache.get(big) is not None


def test_stale_session_is_evicted_first() -> None:
    cache = FetchSessionCache(1)
    old = make(cache, 0, True, 500)
    new = make(cache, EVICTION_MS + 1, False, 1)
    assert new is not None and cache.get(old) is None
