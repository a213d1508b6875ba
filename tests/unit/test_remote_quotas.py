"""KIP-956's remote copy and fetch quotas on an injected clock: the windowed byte rate they share
with the replication throttles (:mod:`zurau.replication.byte_rate_quota`), the copy task waiting
for the copy quota before each segment, the fetch path skipping a remote read while the fetch
quota is exceeded, and both rates being dynamic broker configs."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.support.partition_logs import make_batch
from tests.unit.test_replica_manager import make_rm
from tests.unit.tiered_fakes import TIP, FakeRLMM, FakeRSM, build_log
from zurau.clock import ManualClock
from zurau.config.dynamic_broker_configs import applied_dynamically, kafka_dynamic
from zurau.config.remote_log_views import RemoteLogManagerConfig
from zurau.replication.byte_rate_quota import UNLIMITED_RATE, ByteRateQuota
from zurau.replication.delayed_fetch import FetchResult
from zurau.replication.fetch_params import FetchParams, FetchTopic
from zurau.replication.tiered.remote_log_manager import RemoteLogManager
from zurau.replication.tiered.remote_log_reader import RemoteFetchData

CONFIG = RemoteLogManagerConfig.defaults(
    task_interval_ms=1000, copier_thread_pool_size=1, expiration_thread_pool_size=1, reader_threads=1
)


async def until(cond: Callable[[], bool]) -> None:
    """Let the loop (and the copier thread) run until ``cond`` holds (fails after ~5 s)."""
    for _ in range(500):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


# ------------------------------------------------------------------------ the shared rate


def test_throttle_time_is_zero_until_the_quota_is_exceeded_then_the_time_back_to_the_bound() -> None:
    clock = ManualClock()
    rate = [1000]
    q = ByteRateQuota(clock, lambda: rate[0], window_num=2, window_ms=1000)
    assert q.throttle_time_ms() == 0
    clock.advance(900)
    q.record(1000)  # 1000 B over (at least) one window: at the bound, not above
    assert not q.is_quota_exceeded() and q.throttle_time_ms() == 0
    q.record(500)
    assert q.is_quota_exceeded() and q.throttle_time_ms() == 1500  # 1500 B need 1.5 s at 1000 B/s
    clock.advance(1000)
    assert q.throttle_time_ms() == 500
    rate[0] = 3000  # the bound is read at each use (a dynamic config)
    assert q.throttle_time_ms() == 0
    rate[0] = 1000
    clock.advance(1000)  # the window is older than window_num windows: forgotten
    assert q.byte_rate() == 0.0 and q.throttle_time_ms() == 0
    rate[0] = UNLIMITED_RATE
    q.record(10**12)
    assert q.throttle_time_ms() == 0 and q.recorded_bytes == 1500 + 10**12


# ------------------------------------------------------------------------ copy quota


async def test_copies_wait_for_the_copy_quota_before_each_segment(tmp_path: Path) -> None:
    clock = ManualClock()
    rsm, rlmm = FakeRSM(), FakeRLMM()
    log = build_log(tmp_path, 3)
    size = len(log.segments[0].data)
    rate = [size // 2]  # one segment's bytes need two windows
    quota = ByteRateQuota(clock, lambda: rate[0], window_num=2, window_ms=1000)
    rlm = RemoteLogManager(broker_id=1, rsm=rsm, rlmm=rlmm, config=CONFIG, clock=clock, copy_quota=quota)
    try:
        rlm.on_became_leader(log, 0)
        task = asyncio.create_task(rlm.copy_once(TIP))
        await until(lambda: len(rsm.copies) == 1 and rlm.stats.copy_throttles == 1)
        await asyncio.sleep(0.05)
        assert len(rsm.copies) == 1  # the second waits: the first's bytes are over the rate
        assert quota.recorded_bytes == size
        clock.advance(1000)
        await asyncio.sleep(0.05)
        assert len(rsm.copies) == 1  # still above the bound after one window
        clock.advance(1000)  # the first segment's window is forgotten
        await until(lambda: len(rsm.copies) == 2)
        assert rlm.stats.copy_throttle_time_ms == 2000
        await until(lambda: rlm.stats.copy_throttles == 2)  # the third waits in turn
        rate[0] = UNLIMITED_RATE  # raised dynamically: applies at the next check (within a window)
        clock.advance(1000)
        assert await asyncio.wait_for(task, 5) == 3
        assert [m.start_offset for m in rsm.copies] == [0, 6, 12]
        assert rlm.stats.copy_throttle_time_ms == 3000
    finally:
        await rlm.close()


async def test_a_copy_waiting_for_the_quota_stops_when_the_leadership_is_lost(tmp_path: Path) -> None:
    clock = ManualClock()
    rsm, rlmm = FakeRSM(), FakeRLMM()
    log = build_log(tmp_path, 2)
    quota = ByteRateQuota(clock, lambda: 1, window_num=2, window_ms=1000)
    rlm = RemoteLogManager(broker_id=1, rsm=rsm, rlmm=rlmm, config=CONFIG, clock=clock, copy_quota=quota)
    try:
        rlm.on_became_leader(log, 0)
        task = asyncio.create_task(rlm.copy_once(TIP))
        await until(lambda: rlm.stats.copy_throttles == 1)
        rlm.on_stopped_leading(TIP)
        clock.advance(1000)
        assert await asyncio.wait_for(task, 5) == 1  # the first copy only; nothing after the wait
        assert len(rsm.copies) == 1 and len(rlmm.events) == 2
    finally:
        await rlm.close()


# ------------------------------------------------------------------------ fetch quota


async def test_the_fetch_quota_counts_remote_reads_and_throttles_once_exceeded() -> None:
    clock = ManualClock()
    quota = ByteRateQuota(clock, lambda: 1000, window_num=11, window_ms=1000)
    rlm = RemoteLogManager(
        broker_id=1, rsm=FakeRSM(), rlmm=FakeRLMM(), config=CONFIG, clock=clock, fetch_quota=quota
    )
    try:
        assert rlm.fetch_throttle_time_ms() == 0
        rlm.record_remote_fetch(3000)
        assert rlm.fetch_throttle_time_ms() == 3000
        assert rlm.stats.fetch_throttles == 1 and rlm.stats.fetch_throttle_time_ms == 3000
        clock.advance(3000)
        assert rlm.fetch_throttle_time_ms() == 0 and rlm.stats.fetch_throttles == 1
    finally:
        await rlm.close()


class FakeTiered:
    """What the fetch path asks of ``ReplicaManager.tiered``: the fetch quota and remote reads."""

    def __init__(self, throttle_ms: int) -> None:
        self.throttle_ms = throttle_ms
        self.fetch_max_wait_ms = 500
        self.fetch_timeouts = 0
        self.reads: list[int] = []

    def fetch_throttle_time_ms(self) -> int:
        return self.throttle_ms

    async def read(
        self, topic: str, partition: int, plog: Any, fetch_offset: int, max_bytes: int, **kw: Any
    ) -> RemoteFetchData:
        self.reads.append(fetch_offset)
        return RemoteFetchData(make_batch(1, base_offset=fetch_offset), None, None)


def _consumer_fetch(offset: int) -> tuple[FetchParams, list[FetchTopic]]:
    params = FetchParams(
        version=12,
        replica_id=-1,
        replica_epoch=-1,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        client_metadata=None,
        sessionless=False,
    )
    part: Any = {
        "partition": 0,
        "fetch_offset": offset,
        "partition_max_bytes": 1 << 20,
        "current_leader_epoch": -1,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
    }
    topic: Any = SimpleNamespace(name="t", num_partitions=1)
    return params, [FetchTopic("t", None, None, topic, [part])]


async def test_a_fetch_skips_its_remote_read_while_the_fetch_quota_is_exceeded(tmp_path: Path) -> None:
    rm = make_rm(
        tmp_path, segment_bytes=500, retention_ms=-1, remote_storage_enable=True, local_retention_bytes=500
    )
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1], isr=[1])
    for _ in range(30):
        rm.append_as_leader("t", 0, make_batch(1), required_acks=1)
    plog = rm.partition("t", 0).log
    bases = plog.segment_base_offsets()
    plog.update_highest_offset_in_remote(bases[3] - 1)
    plog.apply_retention(0)
    assert plog.local_log_start_offset == bases[3] and plog.log_start_offset == 0

    async def fetch() -> dict[str, Any]:
        result = rm.fetch(*_consumer_fetch(1))
        if inspect.isawaitable(result):
            result = await result
        assert isinstance(result, FetchResult)
        entry: dict[str, Any] = result.responses[0]["partitions"][0]  # type: ignore[assignment]
        return entry

    tiered = FakeTiered(throttle_ms=250)
    rm.tiered = tiered  # type: ignore[assignment]
    entry = await fetch()  # over the quota: answered without records and without an error
    assert tiered.reads == [] and entry["error_code"] == 0 and len(entry["records"]) == 0
    assert entry["log_start_offset"] == 0 and entry["high_watermark"] == 30
    tiered.throttle_ms = 0
    entry = await fetch()
    assert tiered.reads == [1] and entry["error_code"] == 0 and len(entry["records"]) > 0


def test_the_quota_rates_are_dynamic_and_their_windows_are_not() -> None:
    for name in (
        "remote.log.manager.copy.max.bytes.per.second",
        "remote.log.manager.fetch.max.bytes.per.second",
    ):
        assert kafka_dynamic(name) and applied_dynamically(name)
    for name in (
        "remote.log.manager.copy.quota.window.num",
        "remote.log.manager.fetch.quota.window.size.seconds",
    ):
        assert not kafka_dynamic(name) and not applied_dynamically(name)
