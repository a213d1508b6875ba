"""A broker killed (SIGKILL) in the middle of open transactions: each ends committed or aborted.

Four confluent-kafka transactional producers write to every partition of a topic; one committed
before the crash, three leave their transactions open, records flushed to the broker. The broker
is killed with SIGKILL and restarted on the same data dir; the producers survive the outage. Then
one commits, one aborts and one is abandoned (its transaction times out and the restarted
coordinator aborts it). A read_committed consumer sees exactly the records of the two committed
transactions and nothing of the others: no transaction is half visible. The last stable offset
of every partition reaches the high watermark (no transaction is left hanging).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient as CkAdmin
from confluent_kafka.admin import NewTopic

from tests.support.broker_process import BrokerProcess
from zurau.client.admin import LATEST, AdminClient
from zurau.client.config import ClientConfig
from zurau.client.types import TopicPartition

pytestmark = pytest.mark.slow

PARTITIONS = 3
PER_PARTITION = 50


def _producer(bootstrap: str, tid: str, timeout_ms: int = 60_000) -> Any:
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": timeout_ms,
            "log_level": 0,
        }
    )
    p.init_transactions(30)
    return p


def _write(p: Any, topic: str, name: str) -> None:
    p.begin_transaction()
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(topic, value=f"{name}-{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def _read_committed(bootstrap: str, topic: str, expect: int) -> list[str]:
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
    deadline = time.monotonic() + 30
    quiet = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msgs = [m for m in c.consume(500, 0.2) if m.error() is None]
            got.extend(m.value().decode() for m in msgs)
            if msgs:
                quiet = time.monotonic()
            elif len(got) >= expect and time.monotonic() - quiet > 1.0:
                break
    finally:
        c.close()
    return got


def _end_offsets(bootstrap: str, topic: str) -> tuple[dict[int, int], dict[int, int]]:
    """(last stable offsets, high watermarks) per partition."""

    async def run() -> tuple[dict[int, int], dict[int, int]]:
        async with AdminClient(ClientConfig.load(None, bootstrap)) as admin:
            tps = {TopicPartition(topic, p): LATEST for p in range(PARTITIONS)}
            lso = await admin.list_offsets(tps, isolation_level=1)
            hw = await admin.list_offsets(tps, isolation_level=0)
        return (
            {tp.partition: o.offset for tp, o in lso.items()},  # type: ignore[union-attr]
            {tp.partition: o.offset for tp, o in hw.items()},  # type: ignore[union-attr]
        )

    return asyncio.run(run())


def test_broker_sigkill_mid_transactions(tmp_path: Path) -> None:
    bp = BrokerProcess(
        tmp_path / "data",
        **{"transaction.state.log.num.partitions": "4", "offsets.topic.num.partitions": "4"},
    )
    bp.start()
    producers: list[Any] = []
    try:
        bootstrap = bp.bootstrap_servers
        topic = f"crash-{uuid.uuid4().hex[:6]}"
        admin = CkAdmin({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)

        before = _producer(bootstrap, "before")
        _write(before, topic, "before")
        before.commit_transaction(30)
        committer = _producer(bootstrap, "committer")
        aborter = _producer(bootstrap, "aborter")
        abandoned = _producer(bootstrap, "abandoned", timeout_ms=4_000)
        producers += [before, committer, aborter, abandoned]
        for name, p in (("committer", committer), ("aborter", aborter), ("abandoned", abandoned)):
            _write(p, topic, name)
        lso, hw = _end_offsets(bootstrap, topic)
        assert all(lso[p] == PER_PARTITION + 1 for p in range(PARTITIONS)), lso  # held by the open ones
        assert all(hw[p] == 4 * PER_PARTITION + 1 for p in range(PARTITIONS)), hw  # + one commit marker

        bp.kill()
        bp.start()

        committer.commit_transaction(60)
        aborter.abort_transaction(60)
        # "abandoned" never comes back: its 4 s timeout aborts it.
        expected = sorted(
            f"{n}-{p}-{i}"
            for n in ("before", "committer")
            for p in range(PARTITIONS)
            for i in range(PER_PARTITION)
        )
        deadline = time.monotonic() + 30
        while True:
            lso, hw = _end_offsets(bootstrap, topic)
            if lso == hw or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert lso == hw, f"a transaction is still open: LSO {lso}, HW {hw}"
        assert sorted(_read_committed(bootstrap, topic, len(expected))) == expected
    finally:
        for p in producers:
            p.flush(0)
        bp.stop()
    log = bp.log_text()
    assert "aborting the transaction of abandoned" in log
