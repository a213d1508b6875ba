"""Exactly-once hand-off: a transaction opened by one process and committed by another.

This is the protocol a distributed sink (Spark: executors write, the driver commits) can use:

1. each writer task opens a transaction with its own transactional.id (say ``<query>-<partition>``),
   writes, flushes, and reports the producer id and epoch the coordinator gives that transaction
   (DescribeTransactions), without ending it;
2. the driver commits each reported transaction with EndTxn (``TransactionsAdmin.end_transaction``);
   a second commit of the same transaction (the driver retrying after a crash) succeeds again;
3. a retried writer task with the same transactional.id fences the earlier attempt and aborts its
   records (InitProducerId), so the driver's commit of the stale attempt fails with
   PRODUCER_FENCED and only the accepted attempt's records are ever visible.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Consumer

from zurau.client.config import ClientConfig
from zurau.client.transactions_admin import ProducerIdAndEpoch, TransactionsAdmin
from zurau.protocol.errors import InvalidTxnStateError, ProducerFencedError

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

WRITER = Path(__file__).with_name("eos_handoff_writer.py")


def _write(bootstrap: str, topic: str, tid: str, prefix: str) -> ProducerIdAndEpoch:
    out = subprocess.run(
        [sys.executable, str(WRITER), bootstrap, topic, tid, prefix],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    pid, epoch = out.stdout.split()
    return ProducerIdAndEpoch(int(pid), int(epoch))


def _committed_values(bootstrap: str, topic: str, expect: int) -> list[str]:
    """What a read_committed consumer sees: until ``expect`` values came and 0.5 s more passed."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "log_level": 3,
        }
    )
    c.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 20
    settle: float | None = None
    try:
        while time.monotonic() < (settle or deadline):
            got.extend(m.value().decode() for m in c.consume(100, 0.1) if m.error() is None)
            if settle is None and len(got) >= expect:
                settle = time.monotonic() + 0.5
    finally:
        c.close()
    return sorted(got)


def test_driver_commits_what_writers_wrote(zurau_broker: EmbeddedBroker) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = f"handoff-{uuid.uuid4().hex[:6]}"
    zurau_broker.create_topic(topic, 1)
    tid = f"sink-{uuid.uuid4().hex[:6]}-p0"
    first = _write(bootstrap, topic, tid, "first")
    retry = _write(bootstrap, topic, tid, "retry")  # the task ran again: the first attempt is fenced
    assert (retry.producer_id, retry.producer_epoch) == (first.producer_id, first.producer_epoch + 2)

    async def driver() -> None:
        async with TransactionsAdmin(ClientConfig.load(None, bootstrap)) as admin:
            with pytest.raises(ProducerFencedError):
                await admin.end_transaction(tid, first, commit=True)
            await admin.end_transaction(tid, retry, commit=True)
            await admin.end_transaction(tid, retry, commit=True)  # a retried commit is fine
            with pytest.raises(InvalidTxnStateError):
                await admin.end_transaction(tid, retry, commit=False)  # decided already

    asyncio.run(driver())
    assert _committed_values(bootstrap, topic, 5) == [f"retry{i}" for i in range(5)]
