"""Client quotas against real clients (librdkafka through confluent-kafka).

* A producer whose client id is limited to 1 MiB/s (``producer_byte_rate``) produces as fast as
  it can for 33 s: the bytes the broker acknowledges in 30 s (from 2 s after the first
  acknowledgement, past the first window's allowance) come to 1 MiB/s within 10 %,
  librdkafka reports being throttled (its throttle callback and ``throttle`` statistics, from
  the broker's ``throttle_time_ms``) and never loses its connection.
* A consumer limited by ``consumer_byte_rate`` reads a backlog at about its quota, and is
  throttled, not disconnected (a throttled fetch is answered empty, as Kafka does).

kafka-python (3.0.x) and confluent-kafka's AdminClient have no client-quota admin calls; the
APIs are covered through Zurau's own client and CLI in tests/component/test_client_quotas.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.client.config import ClientConfig
from zurau.client.quota_admin import QuotaAdmin, QuotaAlteration
from zurau.embedded import EmbeddedBroker

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _set_quota(broker: EmbeddedBroker, entity: dict[str, str | None], ops: dict[str, float | None]) -> None:
    async def main() -> None:
        async with QuotaAdmin(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as admin:
            [(_entity, error)] = await admin.alter([QuotaAlteration(entity, ops)])
            assert error is None

    asyncio.run(main())


def _create_topic(broker: EmbeddedBroker, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(10)


class _Stats:
    """librdkafka's view: throttle callbacks, broker throttle/disconnect statistics, errors."""

    def __init__(self) -> None:
        self.throttle_events: list[float] = []
        self.max_throttle_ms = 0
        self.disconnects = 0
        self.errors: list[str] = []

    def config(self) -> dict[str, Any]:
        return {"throttle_cb": self.on_throttle, "stats_cb": self.on_stats, "statistics.interval.ms": 500,
                "error_cb": lambda e: self.errors.append(str(e))}

    def on_throttle(self, event: Any) -> None:
        self.throttle_events.append(event.throttle_time)

    def on_stats(self, doc: str) -> None:
        for b in json.loads(doc)["brokers"].values():
            if b.get("nodeid", -1) >= 0:
                self.max_throttle_ms = max(self.max_throttle_ms, b["throttle"]["max"])
                self.disconnects = max(self.disconnects, b["disconnects"])


@pytest.mark.slow
def test_producer_is_held_to_1_mib_per_s_over_30_s_and_throttled_not_disconnected(broker: EmbeddedBroker) -> None:
    _create_topic(broker, "quota-produce")
    _set_quota(broker, {"client-id": "quota-producer"}, {"producer_byte_rate": MIB})
    stats = _Stats()
    acked: list[tuple[float, int]] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.append((time.monotonic(), len(msg.value())))

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "quota-producer",
                         "linger.ms": 5, "queue.buffering.max.kbytes": 2048, **stats.config()})
    value = b"q" * 10_000
    start = time.monotonic()
    while time.monotonic() - start < 33:
        try:
            producer.produce("quota-produce", value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge()
    producer.flush(10)
    first = acked[0][0] + 2
    in_30_s = sum(n for at, n in acked if first <= at < first + 30)
    rate = in_30_s / 30
    print(f"held to {rate / MIB:.3f} MiB/s; throttles {len(stats.throttle_events)}, max {stats.max_throttle_ms} ms")
    assert rate == pytest.approx(MIB, rel=0.10), f"{rate / MIB:.3f} MiB/s"
    assert stats.throttle_events and max(stats.throttle_events) > 0
    assert stats.max_throttle_ms > 0
    assert stats.disconnects == 0 and not stats.errors, stats.errors


def test_consumer_is_held_to_its_fetch_quota_and_throttled(broker: EmbeddedBroker) -> None:
    _create_topic(broker, "quota-fetch")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "batch.size": 16384, "linger.ms": 1})
    for _ in range(300):  # 3 MB of backlog, in small batches
        producer.produce("quota-fetch", b"f" * 10_000)
        producer.poll(0)
    assert producer.flush(30) == 0
    quota = 200_000
    _set_quota(broker, {"client-id": "quota-consumer"}, {"consumer_byte_rate": quota})
    stats = _Stats()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "quota-fetch",
                         "client.id": "quota-consumer", "enable.auto.commit": False, **stats.config()})
    consumer.assign([TopicPartition("quota-fetch", 0, 0)])
    got = 0
    first = None
    try:
        while first is None or time.monotonic() - first < 6:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                first = first or time.monotonic()
                got += len(msg.value())
            if first is None:
                assert got == 0
        consumer.poll(0.6)  # one more statistics report
    finally:
        consumer.close()
    # 6 s at 200 kB/s, plus what the first window lets through at once
    assert quota * 6 * 0.5 <= got <= quota * 8, got
    assert stats.throttle_events or stats.max_throttle_ms > 0
    assert stats.disconnects == 0 and not stats.errors, stats.errors
