"""Resizing the follower's fetcher pool (a dynamic ``num.replica.fetchers``,
replication/replica_fetcher_manager.py): partitions move to the fetcher their new fetcher id
names, with their fetch state; emptied fetchers close; and a follower that is copying a leader
while its pool is resized ends with exactly the leader's log (nothing skipped or appended twice)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.test_replica_fetcher import TID, Clock, InProcessConnection, batch, log_bytes, make_rm
from zurau.replication.replica_fetcher import FetcherConfig
from zurau.replication.replica_fetcher_manager import ReplicaFetcherManager, fetcher_id


class _YieldingConnection(InProcessConnection):
    """An in-process leader that, like a socket, lets the event loop run during a request."""

    async def request(self, api_key: int, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        await asyncio.sleep(0.001)
        return await super().request(api_key, body, **kw)


class _Logs:
    """Follower logs that are empty (the fetchers never get to fetch here)."""

    def follower_log_state(self, topic: str, partition: int) -> tuple[int, int, int]:
        return 0, -1, 0


async def _never(_leader: int) -> Any:
    """A connect that waits until its fetcher is closed."""
    await asyncio.Event().wait()


def _manager(num_fetchers: int, logs: Any = None, connect: Any = _never, node_id: int = 9) -> ReplicaFetcherManager:
    m = ReplicaFetcherManager(
        node_id=node_id,
        logs=logs or _Logs(),
        endpoint=lambda b: ("127.0.0.1", 1),
        topic_id=lambda t: TID if t == "t" else uuid.UUID(int=7),
        broker_epoch=lambda: 1,
        config=FetcherConfig(wait_max_ms=0, backoff_ms=10),
        num_fetchers=num_fetchers,
    )
    m._connect = connect  # type: ignore[method-assign]
    return m


def _partition(topic: str, index: int, leader: int, epoch: int = 4) -> Any:
    return SimpleNamespace(topic=topic, index=index, leader_id=leader, leader_epoch=epoch)


def _placement(m: ReplicaFetcherManager) -> dict[tuple[str, int], tuple[int, int]]:
    """Which fetcher has each partition; every partition is in exactly one."""
    out: dict[tuple[str, int], tuple[int, int]] = {}
    for target, f in m.fetchers.items():
        assert (f.source_id, f.fetcher_id) == target
        for key in f.partitions:
            assert key not in out, f"{key} in two fetchers"
            out[key] = target
    return out


async def test_resize_moves_partitions_to_their_new_fetcher_ids_with_their_state() -> None:
    m = _manager(1)
    parts = [_partition(t, i, leader) for t in ("t", "u") for i in range(6) for leader in (1,)]
    parts += [_partition("v", i, 2, epoch=7) for i in range(4)]
    for p in parts:
        m.add_partition(p)
    assert set(m.fetchers) == {(1, 0), (2, 0)}
    m.fetchers[(1, 0)].partitions[("t", 3)].truncating = True  # a pending truncation travels along
    old_fetchers = dict(m.fetchers)

    moved = m.resize(3)
    placement = _placement(m)
    assert placement == {(p.topic, p.index): (p.leader_id, fetcher_id(p.topic, p.index, 3)) for p in parts}
    assert moved == sum(1 for p in parts if fetcher_id(p.topic, p.index, 3) != 0) > 0
    assert {fid for _leader, fid in m.fetchers} == {0, 1, 2}
    for p in parts:
        state = m.fetchers[placement[(p.topic, p.index)]].partitions[(p.topic, p.index)]
        assert (state.leader_epoch, state.topic_id) == (p.leader_epoch, m._topic_id(p.topic))
    assert m.fetchers[placement[("t", 3)]].partitions[("t", 3)].truncating
    assert all(m.fetchers.get(k) is f for k, f in old_fetchers.items()), "fetcher 0 kept its partitions"

    moved_back = m.resize(1)
    assert moved_back == moved and set(m.fetchers) == {(1, 0), (2, 0)}
    assert _placement(m) == {(p.topic, p.index): (p.leader_id, 0) for p in parts}
    await asyncio.gather(*m._closing)  # the fetchers left without partitions are closed
    assert m.resize(1) == 0 and m.resize(0) == 0 and m.num_fetchers == 1, "0 fetchers refused"
    # partitions added after a resize go to the fetcher of the new size
    m.resize(3)
    m.add_partition(_partition("w", 5, 1))
    assert _placement(m)[("w", 5)] == (1, fetcher_id("w", 5, 3))
    await m.close()


@pytest.mark.parametrize("sizes", [(1, 3, 5, 1), (2, 3, 1, 3)])
async def test_a_follower_resized_while_copying_ends_with_exactly_the_leaders_log(
    tmp_path: Path, sizes: tuple[int, ...]
) -> None:
    clock = Clock()
    leader, follower = make_rm(tmp_path / "l", 1, clock), make_rm(tmp_path / "f", 2, clock)
    lp = leader.make_leader("t", 0, leader_epoch=3, replicas=[1, 2], isr=[1, 2])
    fp = follower.make_follower("t", 0, leader_id=1, leader_epoch=3)
    conn = _YieldingConnection(leader)

    async def connect(_leader: int) -> _YieldingConnection:
        return conn

    m = _manager(sizes[0], follower, connect, node_id=2)
    m.add_partition(fp)
    ids = []
    for round_ in range(12):
        leader.append_as_leader("t", 0, batch(1 + round_ % 3), required_acks=1)
        if round_ % 3 == 2:
            m.resize(sizes[(round_ // 3) % len(sizes)])
            ids.append(_placement(m)[("t", 0)])
        await asyncio.sleep(0.01)
    async with asyncio.timeout(10):
        while fp.log_end_offset < lp.log_end_offset or lp.high_watermark < lp.log_end_offset:
            await asyncio.sleep(0.01)
    await m.close()
    assert {fid for _l, fid in ids} == {0, 2}, "the partition changed fetchers"
    assert fp.log_end_offset == lp.log_end_offset == sum(1 + r % 3 for r in range(12))
    assert log_bytes(follower) == log_bytes(leader), "no batch skipped or appended twice"
