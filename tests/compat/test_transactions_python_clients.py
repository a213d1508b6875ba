"""kafka-python and aiokafka transactional producers against Zurau (the session's embedded broker).

Each client commits one transaction (records plus the offsets of a consumer group, through
``send_offsets_to_transaction``) and aborts another after its records reached the broker; a
read_committed consumer sees exactly the committed records, a read_uncommitted one sees both, and
the group's committed offsets are those of the committed transaction only. A second producer
with the same transactional.id fences the first: kafka-python raises ProducerFencedError,
aiokafka ProducerFenced.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTP
from aiokafka.errors import ProducerFenced
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KpTP
from kafka.errors import ProducerFencedError

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker


def _read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[bytes]:
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level=isolation,
        consumer_timeout_ms=700,
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < expect and time.monotonic() < deadline:
            got.extend(m.value for m in c)
        got.extend(m.value for m in c)  # and nothing more arrives
    finally:
        c.close()
    return sorted(got)


def _committed(bootstrap: str, group: str, topic: str) -> int | None:
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return c.committed(KpTP(topic, 0))
    finally:
        c.close()


def test_kafka_python_commit_abort_and_offsets(zurau_broker: EmbeddedBroker) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = f"kp-txn-{uuid.uuid4().hex[:6]}"
    zurau_broker.create_topic(topic, 2)
    group = f"kp-g-{uuid.uuid4().hex[:6]}"
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:6]}")
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(10):
            p.send(topic, f"c{i}".encode(), partition=i % 2)
        p.send_offsets_to_transaction({KpTP(topic, 0): OffsetAndMetadata(42, "", -1)}, group)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(10):
            p.send(topic, f"a{i}".encode(), partition=i % 2)
        p.send_offsets_to_transaction({KpTP(topic, 0): OffsetAndMetadata(99, "", -1)}, group)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()
    committed = sorted(f"c{i}".encode() for i in range(10))
    assert _read(bootstrap, topic, "read_committed", 10) == committed
    assert _read(bootstrap, topic, "read_uncommitted", 20) == sorted(
        committed + [f"a{i}".encode() for i in range(10)]
    )
    assert _committed(bootstrap, group, topic) == 42


def test_kafka_python_zombie_is_fenced(zurau_broker: EmbeddedBroker) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = f"kp-zombie-{uuid.uuid4().hex[:6]}"
    zurau_broker.create_topic(topic, 1)
    tid = f"kp-z-{uuid.uuid4().hex[:6]}"
    old = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    new = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    try:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"zombie").get(10)
        new.init_transactions()  # aborts the zombie's transaction
        new.begin_transaction()
        new.send(topic, b"new").get(10)
        new.commit_transaction()
        with pytest.raises(ProducerFencedError):
            old.commit_transaction()
    finally:
        old.close(timeout=1)
        new.close()
    assert _read(bootstrap, topic, "read_committed", 1) == [b"new"]


async def _aio_read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[bytes]:
    c = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", isolation_level=isolation
    )
    await c.start()
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        quiet = 0
        while time.monotonic() < deadline and (len(got) < expect or quiet < 2):
            batch = await c.getmany(timeout_ms=500)
            values = [m.value for msgs in batch.values() for m in msgs]
            got.extend(values)
            quiet = 0 if values else quiet + 1
    finally:
        await c.stop()
    return sorted(got)


async def test_aiokafka_commit_abort_offsets_and_fencing(zurau_broker: EmbeddedBroker) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = f"aio-txn-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(zurau_broker.create_topic, topic, 2)
    group = f"aio-g-{uuid.uuid4().hex[:6]}"
    tid = f"aio-{uuid.uuid4().hex[:6]}"
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    await p.start()
    try:
        async with p.transaction():
            for i in range(10):
                await p.send(topic, f"c{i}".encode(), partition=i % 2)
            await p.send_offsets_to_transaction({AioTP(topic, 0): 17}, group)
        await p.begin_transaction()
        for i in range(10):
            await p.send_and_wait(topic, f"a{i}".encode(), partition=i % 2)
        await p.abort_transaction()
        # A new producer with the same id fences this one.
        await p.begin_transaction()
        await p.send_and_wait(topic, b"zombie", partition=0)
        other = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        await other.start()
        try:
            async with other.transaction():
                await other.send(topic, b"new", partition=1)
        finally:
            await other.stop()
        with pytest.raises(ProducerFenced):
            await p.commit_transaction()
    finally:
        await p.stop()
    committed = sorted([f"c{i}".encode() for i in range(10)] + [b"new"])
    assert await _aio_read(bootstrap, topic, "read_committed", 11) == committed
    uncommitted = await _aio_read(bootstrap, topic, "read_uncommitted", 22)
    assert uncommitted == sorted(committed + [f"a{i}".encode() for i in range(10)] + [b"zombie"])
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await c.start()
    try:
        assert await c.committed(AioTP(topic, 0)) == 17
    finally:
        await c.stop()
