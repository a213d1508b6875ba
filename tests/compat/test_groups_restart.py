"""A broker restart keeps every committed offset and every group's state.

A broker runs as its own process. Live librdkafka consumers form a classic group (two members)
and a KIP-848 group (one member), commit, and keep running; a standalone commit makes a simple
group. The broker is killed with SIGKILL and restarted on the same port and data dir: the
committed offsets, the classic group (Stable, same members, assignments) and the consumer group
(epochs, members, assignments) are exactly as before, the consumers carry on without a rebalance
and consume what is produced afterwards. A clean stop and start keeps everything again.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.component.kafka_wire import KafkaWireClient
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.slow

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "200",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",  # Kafka refuses an interval below the minimum
}


def _snapshot(port: int, groups: list[str], classic: str, consumer: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        c = await KafkaWireClient.connect("127.0.0.1", port)
        try:
            offsets = await c.request(
                9, 8, {"groups": [{"group_id": g, "topics": None} for g in groups], "require_stable": False}
            )
            described = await c.request(15, 5, {"groups": [classic], "include_authorized_operations": False})
            cg = await c.request(69, 1, {"group_ids": [consumer], "include_authorized_operations": False})
            return {"offsets": offsets, "classic": described, "consumer": cg}
        finally:
            await c.close()

    return asyncio.run(run())


def _consume(
    consumers: list[tuple[str, Any]], count: int, timeout: float = 30.0, settle: float = 0.5
) -> list[tuple[str, int, int]]:
    """Poll every (group, consumer) until ``count`` records arrived, then ``settle`` more seconds."""
    got = []
    deadline = time.monotonic() + timeout
    settle_until = None
    while time.monotonic() < (settle_until or deadline):
        for g, c in consumers:
            for m in c.consume(200, 0.05):
                if m.error() is None:
                    got.append((g, m.partition(), m.offset()))
        if settle_until is None and len(got) >= count:
            settle_until = time.monotonic() + settle
    return got


def test_restart_keeps_offsets_and_group_state(tmp_path: Path) -> None:
    bp = BrokerProcess(tmp_path / "data", **OVERRIDES)
    bp.start()
    bootstrap = bp.bootstrap_servers
    topic = f"rs-{uuid.uuid4().hex[:6]}"
    classic, consumer, simple = "g-classic", "g-consumer", "g-simple"
    consumers: list[tuple[str, Any]] = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, 6, 1)])[topic].result(30)
        p = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
        for i in range(600):
            p.produce(topic, f"a{i}".encode(), partition=i % 6)
        assert p.flush(30) == 0

        base = {
            "bootstrap.servers": bootstrap,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 3,
        }
        for _ in range(2):
            conf = {**base, "group.id": classic, "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000}
            consumers.append((classic, Consumer(conf)))
        consumers.append((consumer, Consumer({**base, "group.id": consumer, "group.protocol": "consumer"})))
        for _g, c in consumers:
            c.subscribe([topic])
        everything = {(p, o) for p in range(6) for o in range(100)}
        got = _consume(consumers, 1200)
        for g in (classic, consumer):
            assert {(p, o) for gg, p, o in got if gg == g} == everything, f"{g} read the whole topic"
        for _g, c in consumers:
            c.commit(asynchronous=False)
        standalone = Consumer({**base, "group.id": simple})
        standalone.commit(offsets=[TopicPartition(topic, 3, 42)], asynchronous=False)
        standalone.close()

        before = _snapshot(bp.port, [classic, consumer, simple], classic, consumer)
        committed = {g["group_id"]: g for g in before["offsets"]["groups"]}
        assert (
            sum(p["committed_offset"] for t in committed[classic]["topics"] for p in t["partitions"]) == 600
        )
        assert (
            sum(p["committed_offset"] for t in committed[consumer]["topics"] for p in t["partitions"]) == 600
        )
        assert before["classic"]["groups"][0]["group_state"] == "Stable"
        assert before["consumer"]["groups"][0]["group_state"] == "Stable"

        for restart in (bp.kill, bp.stop):
            restart()
            bp.start()
            after = _snapshot(bp.port, [classic, consumer, simple], classic, consumer)
            assert after == before, f"state changed across {restart.__name__}"

        # The consumers carry on in the same generation / epoch and read what comes next.
        for i in range(60):
            p.produce(topic, f"b{i}".encode(), partition=i % 6)
        assert p.flush(30) == 0
        got = _consume(consumers, 120)
        # Each group reads each new record once, from its committed offsets (no re-reads).
        fresh = sorted((i % 6, 100 + i // 6) for i in range(60))
        for g in (classic, consumer):
            assert sorted((p, o) for gg, p, o in got if gg == g) == fresh, (g, got[:10])
        later = _snapshot(bp.port, [classic], classic, consumer)
        assert later["classic"] == before["classic"], "no rebalance after the restarts"
        assert later["consumer"]["groups"][0]["group_epoch"] == before["consumer"]["groups"][0]["group_epoch"]
    finally:
        for _g, c in consumers:
            c.close()
        bp.stop()
