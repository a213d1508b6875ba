"""A follower's fetch must not miss an append made while it is being read (issue 34).

Recording a follower's fetch offset can move the high watermark; a high-watermark listener (the
coordinator runtime completing a ``__transaction_state`` write) may then append the next record
to the same partition, synchronously, before the fetch waits in the purgatory. That append
notifies nobody, so without a re-check the follower waits its whole ``max_wait_ms``
(``replica.fetch.wait.max.ms``, 500 ms) and every coordinator write behind it takes as long.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.support.partition_logs import make_batch
from tests.unit.test_replica_manager import make_rm
from zurau.replication.delayed_fetch import FetchResult
from zurau.replication.fetch_params import FetchParams, FetchTopic


def _follower_fetch(offset: int) -> tuple[FetchParams, list[FetchTopic]]:
    params = FetchParams(
        version=12, replica_id=2, replica_epoch=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, client_metadata=None, sessionless=False,
    )
    part: Any = {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                 "current_leader_epoch": -1, "last_fetched_epoch": -1, "log_start_offset": -1}
    topic: Any = SimpleNamespace(name="t", num_partitions=1)
    return params, [FetchTopic("t", None, None, topic, [part])]


async def test_an_append_made_by_a_high_watermark_listener_during_the_read_answers_the_fetch(tmp_path: Path) -> None:
    rm = make_rm(tmp_path)
    rm.make_leader("t", 0, leader_epoch=0, replicas=[1, 2], isr=[1, 2])
    rm.append_as_leader("t", 0, make_batch(1), required_acks=-1)  # offset 0, not yet replicated

    def coordinator(topic: str, partition: int, hw: int) -> None:
        if hw == 1:  # the write at offset 0 committed: the next one follows at once
            rm.append_as_leader("t", 0, make_batch(1), required_acks=-1)

    rm.add_high_watermark_listener(coordinator)
    params, topics = _follower_fetch(1)  # the follower holds offset 0
    result = rm.fetch(params, topics)
    assert rm.high_watermark("t", 0) == 1 and rm.partition("t", 0).log.log_end_offset == 2
    if inspect.isawaitable(result):
        result = await asyncio.wait_for(result, 0.2)  # not replica.fetch.wait.max.ms later
    assert isinstance(result, FetchResult) and result.bytes_read > 0
