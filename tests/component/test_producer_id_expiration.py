"""producer.id.expiration.ms on a running broker: the maintenance loop forgets idle producers.

Every ``producer.id.expiration.check.interval.ms`` the broker drops, in every partition it hosts,
the producers whose last batch is older than ``producer.id.expiration.ms`` and that have no
ongoing transaction (Kafka's rule). DescribeProducers (API 61) then no longer lists them, the
next producer snapshot omits them, and a produce from such a producer id continues as Kafka
3.x/4.x answers it: the partition does not know the producer, so any sequence is accepted (no
UNKNOWN_PRODUCER_ID since KIP-360, no OUT_OF_ORDER_SEQUENCE_NUMBER); the producer is known
again from that batch on.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tests.component.test_transactions import DESCRIBE_PRODUCERS, TOPIC, Env
from zurau.protocol import errors as E


async def producers(env: Env) -> dict[int, dict[str, Any]]:
    r = await env.c.request(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": TOPIC, "partition_indexes": [0]}]})
    part = r["topics"][0]["partitions"][0]
    assert part["error_code"] == 0, part
    return {p["producer_id"]: p for p in part["active_producers"]}


async def test_an_idle_idempotent_producer_is_forgotten(tmp_path: Path) -> None:
    env = Env(
        tmp_path,
        **{"producer.id.expiration.ms": "1000", "producer.id.expiration.check.interval.ms": "50"},
    )
    await env.start()
    try:
        await env.create(TOPIC, 1)
        r = await env.init(None)
        pid, epoch = r["producer_id"], r["producer_epoch"]
        assert r["error_code"] == 0 and pid >= 0
        assert await env.produce(pid, epoch, 0, [b"a", b"b"], tid=None, txn=False) == 0
        assert (await producers(env))[pid]["last_sequence"] == 1
        deadline = time.monotonic() + 20  # a liveness bound, far above 1 s + 50 ms
        while pid in await producers(env):
            assert time.monotonic() < deadline, "the idle producer was never expired"
            await asyncio.sleep(0.05)

        await env.restart()  # the close-time producer snapshot no longer holds it
        assert pid not in await producers(env)

        # The expired producer sends its next batch (sequence 2): accepted as Kafka does.
        assert await env.produce(pid, epoch, 2, [b"c"], tid=None, txn=False) == 0
        assert (await producers(env))[pid]["last_sequence"] == 2
        # Known again: its sequences are checked from here on.
        code = await env.produce(pid, epoch, 7, [b"d"], tid=None, txn=False)
        assert code == E.OutOfOrderSequenceNumberError.code
        assert await env.produce(pid, epoch, 3, [b"d"], tid=None, txn=False) == 0
    finally:
        await env.stop()
