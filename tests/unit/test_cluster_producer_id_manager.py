"""ClusterProducerIdManager: producer ids in blocks from the active controller, fetched ahead of need."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from zurau.metadata.raft_controller_channel import ClusterProducerIdManager
from zurau.protocol.errors import CoordinatorLoadInProgressError


class FakeChannel:
    """The two things the manager uses of RaftControllerChannel: allocation and background tasks."""

    def __init__(self, block: int = 10) -> None:
        self.block = block
        self.next_first = 1000
        self.requests: list[tuple[int, int]] = []
        self.fail = False
        self.tasks: list[asyncio.Task[Any]] = []

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        self.requests.append((broker_id, broker_epoch))
        if self.fail:
            raise OSError("no active controller")
        first, self.next_first = self.next_first, self.next_first + self.block
        return first, self.block

    def _spawn(self, coro: Any) -> None:
        self.tasks.append(asyncio.get_running_loop().create_task(coro))

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks)
        self.tasks.clear()


def manager(channel: FakeChannel) -> ClusterProducerIdManager:
    return ClusterProducerIdManager(channel, broker_id=4, broker_epoch=lambda: 17)  # type: ignore[arg-type]


async def test_without_a_block_the_first_id_is_retriable() -> None:
    channel = FakeChannel()
    ids = manager(channel)
    with pytest.raises(CoordinatorLoadInProgressError):
        ids.next_id()
    await channel.settle()
    assert ids.next_id() == 1000
    assert channel.requests == [(4, 17)]


async def test_a_prefetched_block_serves_the_first_id_at_once() -> None:
    channel = FakeChannel()
    ids = manager(channel)
    ids.prefetch()
    ids.prefetch()  # one request in flight at a time
    await channel.settle()
    assert [ids.next_id() for _ in range(3)] == [1000, 1001, 1002]
    assert len(channel.requests) == 1


async def test_the_next_block_is_fetched_before_the_current_one_runs_out() -> None:
    channel = FakeChannel(block=10)
    ids = manager(channel)
    ids.prefetch()
    await channel.settle()
    got = [ids.next_id() for _ in range(9)]
    assert len(channel.requests) == 1
    got.append(ids.next_id())  # the last tenth of the block: time to ask for more
    await channel.settle()
    got += [ids.next_id() for _ in range(2)]
    assert got == list(range(1000, 1012))
    assert len(channel.requests) == 2


async def test_a_failed_allocation_is_asked_again_on_the_next_call() -> None:
    channel = FakeChannel()
    channel.fail = True
    ids = manager(channel)
    ids.prefetch()
    await channel.settle()
    channel.fail = False
    with pytest.raises(CoordinatorLoadInProgressError):
        ids.next_id()
    await channel.settle()
    assert ids.next_id() == 1000
