"""Avro with the schema registry in Spark (zurau.spark.avro): records written by confluent-kafka's
AvroSerializer under two compatible schema versions are decoded into one struct column, and
to_avro writes records confluent-kafka's AvroDeserializer reads back."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from zurau.client.schema_registry import SchemaRegistryError
from zurau.spark.avro import from_avro, to_avro

pytestmark = pytest.mark.slow

V1 = {
    "type": "record",
    "name": "Reading",
    "namespace": "demo",
    "fields": [{"name": "device", "type": "string"}, {"name": "temperature", "type": "double"}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "battery", "type": "int", "default": 100}]}


def _produce(bootstrap: str, registry_url: str, topic: str, schema: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    ser = AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(schema))
    p = Producer({"bootstrap.servers": bootstrap})
    for row in rows:
        p.produce(topic, value=ser(row, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(30) == 0


def _read(spark: Any, bootstrap: str, topic: str) -> Any:
    return (
        spark.read.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )


def test_old_and_new_versions_decode_into_the_reader_schema(
    spark: Any, zurau_broker: Any, zurau_registry: Any, new_topic: Callable[..., str]
) -> None:
    topic, url, bootstrap = new_topic(1), zurau_registry.url, zurau_broker.bootstrap_servers
    _produce(bootstrap, url, topic, V1, [{"device": "a", "temperature": 20.5}])
    _produce(bootstrap, url, topic, V2, [{"device": "b", "temperature": 30.0, "battery": 7}])
    df = _read(spark, bootstrap, topic)

    latest = df.select(from_avro("value", url, subject=f"{topic}-value").alias("r")).select("r.*")
    assert latest.columns == ["device", "temperature", "battery"]
    assert sorted(tuple(r) for r in latest.collect()) == [("a", 20.5, 100), ("b", 30.0, 7)]

    as_v1 = df.select(from_avro("value", url, reader_schema=json.dumps(V1)).alias("r")).select("r.*")
    assert sorted(tuple(r) for r in as_v1.collect()) == [("a", 20.5), ("b", 30.0)]


def test_values_that_are_not_framed_avro_fail_fast_or_become_null(
    spark: Any, zurau_broker: Any, zurau_registry: Any, new_topic: Callable[..., str]
) -> None:
    topic, url, bootstrap = new_topic(1), zurau_registry.url, zurau_broker.bootstrap_servers
    _produce(bootstrap, url, topic, V1, [{"device": "a", "temperature": 1.0}])
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, value=b"plain text")
    p.produce(topic, value=b"\x00\x7f\xff\xff\xf0payload")  # framed, with an id the registry lacks
    assert p.flush(30) == 0
    df = _read(spark, bootstrap, topic)
    subject = f"{topic}-value"
    rows = df.select(from_avro("value", url, subject=subject, mode="PERMISSIVE").alias("r")).collect()
    assert [r.r.device if r.r else None for r in rows] == ["a", None, None]
    with pytest.raises(Exception, match="magic byte"):
        df.select(from_avro("value", url, subject=subject)).collect()
    with pytest.raises(ValueError, match="mode must be one of"):
        from_avro("value", url, subject=subject, mode="LENIENT")


def test_to_avro_writes_what_confluent_kafka_reads_and_an_incompatible_schema_is_refused(
    spark: Any, zurau_broker: Any, zurau_registry: Any, new_topic: Callable[..., str]
) -> None:
    from pyspark.sql import functions as F

    topic, url, bootstrap = new_topic(1), zurau_registry.url, zurau_broker.bootstrap_servers
    subject = f"{topic}-value"
    rows = spark.createDataFrame([("x", 1.5), ("y", 2.5)], "device string, temperature double")
    (
        rows.select(to_avro(F.struct("device", "temperature"), url, subject, json.dumps(V1)).alias("value"))
        .write.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    deser = AvroDeserializer(SchemaRegistryClient({"url": url}))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[dict[str, Any]] = []
    try:
        for _ in range(100):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(deser(m.value(), SerializationContext(topic, MessageField.VALUE)))
            if len(got) == 2:
                break
    finally:
        c.close()
    assert sorted(got, key=lambda r: r["device"]) == [
        {"device": "x", "temperature": 1.5},
        {"device": "y", "temperature": 2.5},
    ]
    incompatible = {**V1, "fields": [{"name": "device", "type": "int"}]}
    with pytest.raises(SchemaRegistryError) as refused:
        to_avro(F.struct("device"), url, subject, json.dumps(incompatible))
    assert refused.value.status == 409
