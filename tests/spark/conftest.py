"""Spark fixtures: ONE local[2] SparkSession for the whole test session (it takes ~10 s to start
and ~1.5 GiB), with the ``zurau`` format registered, reading from the session's embedded broker.

Every test module here marks itself ``slow``. They need Java 17 on the PATH (PySpark's JVM); without
it the session fixture fails with that message rather than skipping.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator

import pytest


@pytest.fixture(scope="session")
def spark(zurau_broker: object) -> Iterator[object]:
    """Depends on the broker so that it stops first (its workers' pooled consumers go with it)."""
    assert shutil.which("java") is not None, "the Spark tests need Java 17 on the PATH"
    from zurau.spark import local_session

    session = local_session("zurau-tests", cores=2, shuffle_partitions=2)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def zurau_secure_broker_configs() -> dict[str, object]:
    """The secured broker allows delegation tokens (test_security.py reads with one)."""
    return {"delegation.token.secret.key": "spark-token-secret"}


@pytest.fixture
def new_topic(zurau_broker: object) -> Callable[..., str]:
    """Create a fresh topic on the session broker: ``new_topic(partitions=1, **configs)``."""

    def make(partitions: int = 1, prefix: str = "sp", **configs: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        zurau_broker.create_topic(name, partitions, {k.replace("_", "."): v for k, v in configs.items()})  # type: ignore[attr-defined]
        return name

    return make


def produce(bootstrap: str, topic: str, records: list[dict[str, object]], **config: object) -> None:
    """Produce ``records`` (dicts of produce() keyword arguments) and wait for every ack."""
    from confluent_kafka import Producer

    errors: list[object] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for r in records:
        p.produce(topic, on_delivery=lambda err, _m: errors.append(err) if err else None, **r)
    assert p.flush(30) == 0
    assert not errors, errors[:3]


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[object]]:
    """Every record of ``topic`` per partition, read with a plain confluent-kafka consumer."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
        }
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, list[object]] = {p: [] for p in range(partitions)}
        eof: set[int] = set()
        import time

        deadline = time.monotonic() + 30
        while len(eof) < partitions and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise AssertionError(m.error())
                out[m.partition()].append(m)
        return out
    finally:
        c.close()
