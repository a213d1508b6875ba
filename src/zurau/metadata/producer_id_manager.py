"""Producer ids for this broker, handed out from blocks the controller allocates.

The controller records every block it gives away (``ProducerIdsRecord`` in the metadata log:
ids below ``next_producer_id`` are taken), so no id is ever handed out twice, across restarts and
across brokers. A restart starts a new block; the rest of the old one is skipped, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable

BlockAllocator = Callable[[], tuple[int, int]]  # -> (first id, count)


class ProducerIdManager:
    def __init__(self, allocate_block: BlockAllocator) -> None:
        self._allocate = allocate_block
        self._next = 0
        self._limit = 0

    def next_id(self) -> int:
        if self._next >= self._limit:
            first, count = self._allocate()
            self._next, self._limit = first, first + count
        pid = self._next
        self._next += 1
        return pid
