"""The ``zurau`` data source and sink against a SASL_SSL broker, configured with the options a Spark
Kafka user gives (Java client names): ``kafka.security.protocol``, ``kafka.sasl.mechanism``,
``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location`` with ``kafka.ssl.truststore.type=PEM``.
A batch read, a batch write, and a streaming copy through the exactly-once sink (its executors'
transactional producers, the marker topic and the driver's EndTxn commits all over SASL_SSL), and a
batch read authenticated with a delegation token, as Spark's documentation configures one
(``ScramLoginModule required tokenauth=true username="<token id>" password="<HMAC>"``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def spark_kafka_options(broker: Any, user: str = "alice") -> dict[str, str]:
    """``kafka.*`` options as in a Spark job reading a secured Kafka cluster."""
    password = broker.users[user]
    return {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";',
        "kafka.ssl.truststore.location": broker.ca_location,
        "kafka.ssl.truststore.type": "PEM",
    }


@pytest.fixture
def secure_topic(zurau_secure_broker: Any) -> Callable[[int], str]:
    def make(partitions: int = 1) -> str:
        return zurau_secure_broker.create_topic(f"sec-{uuid.uuid4().hex[:10]}", partitions)  # type: ignore[no-any-return]

    return make


def produce(broker: Any, topic: str, values: list[str]) -> None:
    from confluent_kafka import Producer

    p = Producer({**broker.client_config(), "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), f"k{i}".encode())
    assert p.flush(30) == 0


def read_values(broker: Any, topic: str, expect: int, read_committed: bool = False) -> list[str]:
    """Values of ``topic`` as a (read_committed) consumer sees them: until ``expect`` came, then 1 s more."""
    from confluent_kafka import Consumer

    c = Consumer({**broker.client_config(), "group.id": f"check-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    c.subscribe([topic])
    got: list[str] = []
    deadline, settle = time.monotonic() + 30, None
    try:
        while time.monotonic() < (settle or deadline):
            got.extend(m.value().decode() for m in c.consume(500, 0.2) if m.error() is None)
            if settle is None and len(got) >= expect:
                settle = time.monotonic() + 1.0
    finally:
        c.close()
    return got


def test_batch_read_and_write_over_sasl_ssl(
    spark: Any, zurau_secure_broker: Any, secure_topic: Callable[[int], str]
) -> None:
    src, dst = secure_topic(2), secure_topic(2)
    values = [f"v{i}" for i in range(50)]
    produce(zurau_secure_broker, src, values)
    options = spark_kafka_options(zurau_secure_broker)
    df = spark.read.format("zurau").options(**options).option("subscribe", src).load()
    rows = df.selectExpr("cast(value as string) as value").collect()
    assert sorted(r.value for r in rows) == sorted(values)
    (df.selectExpr("key", "upper(cast(value as string)) as value")
       .write.format("zurau").mode("append").options(**options).option("topic", dst).save())
    assert sorted(read_values(zurau_secure_broker, dst, 50)) == sorted(v.upper() for v in values)


def test_exactly_once_stream_over_sasl_ssl(
    spark: Any, zurau_secure_broker: Any, secure_topic: Callable[[int], str], tmp_path: Path
) -> None:
    src, dst = secure_topic(2), secure_topic(2)
    values = [f"e{i}" for i in range(120)]
    produce(zurau_secure_broker, src, values)
    options = spark_kafka_options(zurau_secure_broker)
    q = (
        spark.readStream.format("zurau").options(**options)
        .option("subscribe", src).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "50")
        .load()
        .selectExpr("key", "value")
        .writeStream.format("zurau").options(**options)
        .option("topic", dst).option("exactlyOnce", "true")
        .option("exactlyOnce.markerTopic", f"{dst}-markers")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(180)
    assert q.exception() is None
    batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(batches) == len(values) and len(batches) >= 3 and max(batches) <= 50
    got = read_values(zurau_secure_broker, dst, len(values), read_committed=True)
    assert sorted(got) == sorted(values)  # committed by the driver, each once


def test_batch_read_with_a_delegation_token(
    spark: Any, zurau_secure_broker: Any, secure_topic: Callable[[int], str]
) -> None:
    import asyncio

    from zurau.client import ClientConfig
    from zurau.client.delegation_token_admin import DelegationTokenAdmin

    async def create() -> Any:
        async with DelegationTokenAdmin(ClientConfig.from_props(zurau_secure_broker.client_config())) as admin:
            return await admin.create()

    token = asyncio.run(create())
    src = secure_topic(1)
    produce(zurau_secure_broker, src, ["t0", "t1", "t2"])
    options = {
        **spark_kafka_options(zurau_secure_broker),
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required tokenauth=true "
        f'username="{token.token_id}" password="{token.hmac_base64}";',
    }
    rows = spark.read.format("zurau").options(**options).option("subscribe", src).load().collect()
    assert sorted(bytes(r.value).decode() for r in rows) == ["t0", "t1", "t2"]
