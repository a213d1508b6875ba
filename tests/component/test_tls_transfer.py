"""Bulk transfer over TLS, with real confluent-kafka clients against an in-process broker on an SSL
listener: every byte produced comes back, in order, whatever way it crossed the TLS transport.

* Large batches (1 MiB ``batch.size``, values up to 300 KB): produce frames are received straight
  into their own buffers through the TLS transport, and fetches send file regions far larger than
  ``TLS_WRITE_BYTES``, which go out in pieces.
* Many small requests (``linger.ms=0``, values of 0-60 bytes): many small frames per TLS read and
  fetch answers made of small slices read into the response, each answer one TLS write.

Values are derived from their partition and index, so a lost, duplicated, reordered or corrupted
byte fails the comparison (with the first differing offset in the message).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import EmbeddedBroker
from zurau.testing.certificates import TestCA

PARTITIONS = 3


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An embedded broker with one SSL listener; yields the confluent-kafka connection settings."""
    tmp = tmp_path_factory.mktemp("tls-transfer")
    ca = TestCA(tmp)
    server = ca.issue("server", "localhost", server=True)
    configs: dict[str, Any] = {
        "listeners": "SSL://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL",
        "inter.broker.listener.name": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
    }
    with EmbeddedBroker(**configs) as broker:
        yield {
            "bootstrap.servers": broker.listener_address("SSL"),
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca.cert_path),
        }


def _value(partition: int, index: int, size: int) -> bytes:
    """``size`` bytes that depend on the partition and the index (a SHA-256 stream)."""
    seed = hashlib.sha256(f"{partition}/{index}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def _create(props: dict[str, Any], topic: str) -> None:
    admin = AdminClient(props)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def _produce(props: dict[str, Any], topic: str, sizes: list[int], overrides: dict[str, Any]) -> list[list[bytes]]:
    """Produce ``sizes[i]``-byte values round-robin over the partitions; the values per partition."""
    errors: list[Any] = []
    p = Producer({**props, **overrides, "acks": "all", "error_cb": errors.append})
    sent: list[list[bytes]] = [[] for _ in range(PARTITIONS)]
    failed: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    for i, size in enumerate(sizes):
        part = i % PARTITIONS
        value = _value(part, len(sent[part]), size)
        sent[part].append(value)
        while True:
            try:
                p.produce(topic, value, partition=part, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0
    assert not failed and not errors, (failed[:3], errors[:3])
    return sent


def _consume(props: dict[str, Any], topic: str, expected: list[list[bytes]]) -> list[list[bytes]]:
    """Every value of every partition from offset 0, in offset order."""
    got: list[list[bytes]] = [[] for _ in range(PARTITIONS)]
    want = sum(len(v) for v in expected)
    c = Consumer({**props, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 90
        n = 0
        while n < want and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                assert m.error() is None, m.error()
                part, offset, value = m.partition(), m.offset(), m.value()
                assert part is not None and value is not None
                assert offset == len(got[part]), f"partition {part}: offset {offset} after {len(got[part])} values"
                got[part].append(value)
                n += 1
    finally:
        c.close()
    return got


def _assert_same(sent: list[list[bytes]], got: list[list[bytes]]) -> None:
    for part, (s, g) in enumerate(zip(sent, got, strict=True)):
        assert len(g) == len(s), f"partition {part}: {len(g)} values back of {len(s)}"
        for i, (a, b) in enumerate(zip(s, g, strict=True)):
            assert a == b, f"partition {part}, offset {i}: {len(b)} bytes back differ from the {len(a)} sent"


def test_large_batches_over_tls(tls_broker: dict[str, Any]) -> None:
    topic = f"tls-large-{uuid.uuid4().hex[:6]}"
    _create(tls_broker, topic)
    cycle = [1, 100, 1024, 5_000, 70_000, 300_000, 20_000, 1024]
    sizes = [cycle[i % len(cycle)] for i in range(240)]  # ~16 MB
    sent = _produce(tls_broker, topic, sizes, {"linger.ms": 50, "batch.size": 1 << 20, "enable.idempotence": False})
    _assert_same(sent, _consume(tls_broker, topic, sent))


def test_many_small_requests_over_tls(tls_broker: dict[str, Any]) -> None:
    topic = f"tls-small-{uuid.uuid4().hex[:6]}"
    _create(tls_broker, topic)
    sizes = [i % 61 for i in range(6_000)]
    sent = _produce(tls_broker, topic, sizes, {"linger.ms": 0, "max.in.flight.requests.per.connection": 5})
    _assert_same(sent, _consume(tls_broker, topic, sent))
