"""The AvroConverter against confluent-kafka's Avro serializers and a Zurau schema registry:
records it writes are read by confluent-kafka's AvroDeserializer, records confluent-kafka's
AvroSerializer writes are read back as Connect structs, and the registered schema carries
Confluent's connect.* metadata."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from zurau import EmbeddedBroker, EmbeddedConnect, EmbeddedRegistry
from zurau.connect.api import (
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    DataException,
    Decimal,
    SchemaBuilder,
    Struct,
    Timestamp,
)
from zurau.connect.avro_converter import AvroConverter


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


@pytest.fixture(scope="module")
def registry_url(broker: EmbeddedBroker) -> Iterator[str]:
    with EmbeddedRegistry(broker.bootstrap_servers) as registry:
        yield registry.url


def converter(url: str, **extra: str) -> AvroConverter:
    c = AvroConverter()
    c.configure({"schema.registry.url": url, **extra}, is_key=False)
    return c


ORDER = (SchemaBuilder.struct().name("shop.orders.Value")
         .field("id", INT64_SCHEMA).field("note", OPTIONAL_STRING_SCHEMA)
         .field("amount", Decimal.schema(2)).field("at", Timestamp.schema())
         .field("tags", SchemaBuilder.map(STRING_SCHEMA, SchemaBuilder.int16().build()).build())
         .build())


def test_confluent_deserializer_reads_what_the_converter_writes(registry_url: str) -> None:
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    value = (Struct(ORDER).put("id", 7).put("note", None).put("amount", decimal.Decimal("12.30"))
             .put("at", at).put("tags", {"x": 3}))
    data = converter(registry_url).from_connect_data("orders", ORDER, value)
    assert data is not None and data[0] == 0
    client = SchemaRegistryClient({"url": registry_url})
    decoded = AvroDeserializer(client)(data, SerializationContext("orders", MessageField.VALUE))
    assert decoded == {"id": 7, "note": None, "amount": decimal.Decimal("12.30"), "at": at, "tags": {"x": 3}}
    registered = json.loads(httpx.get(f"{registry_url}/subjects/orders-value/versions/latest").json()["schema"])
    assert (registered["type"], registered["name"], registered["namespace"], registered["connect.name"]) == (
        "record", "Value", "shop.orders", "shop.orders.Value")
    fields = {f["name"]: f for f in registered["fields"]}
    assert fields["note"] == {"name": "note", "type": ["null", "string"], "default": None}
    assert fields["tags"]["type"] == {"type": "map", "values": {"type": "int", "connect.type": "int16"}}
    assert fields["amount"]["type"]["logicalType"] == "decimal"
    assert fields["amount"]["type"]["connect.name"] == "org.apache.kafka.connect.data.Decimal"
    # and back through our own reader, schema included
    back = converter(registry_url).to_connect_data("orders", data)
    assert back.value.get("amount") == decimal.Decimal("12.30") and back.value.get("at") == at
    assert back.value.get("tags") == {"x": 3} and back.schema.field("tags").schema.value_schema.type.value == "int16"


def test_converter_reads_what_confluent_serializer_writes(registry_url: str) -> None:
    schema = {"type": "record", "name": "User", "namespace": "app", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": ["null", "int"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "scores", "type": {"type": "array", "items": "double"}}]}
    client = SchemaRegistryClient({"url": registry_url})
    data = AvroSerializer(client, json.dumps(schema))({"name": "ann", "age": None, "kind": "B", "scores": [1.5]},
                                                    SerializationContext("users", MessageField.VALUE))
    out = converter(registry_url).to_connect_data("users", data)
    assert out.schema is not None and out.schema.name == "app.User"
    assert out.value.get("name") == "ann" and out.value.get("age") is None
    assert out.value.get("kind") == "B" and out.value.get("scores") == [1.5]
    assert out.schema.field("age").schema.optional


def test_bad_input(registry_url: str) -> None:
    c = converter(registry_url)
    with pytest.raises(DataException, match="magic byte"):
        c.to_connect_data("t", b"plain")
    with pytest.raises(DataException):
        converter(registry_url, **{"auto.register.schemas": "false"}).from_connect_data(
            "never-registered", ORDER, Struct(ORDER))
    assert c.from_connect_data("t", None, None) is None


def test_a_worker_writes_avro_that_confluent_clients_read(broker: EmbeddedBroker, registry_url: str,
                                                          tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("alpha\nbeta\n")
    with EmbeddedConnect(broker.bootstrap_servers) as connect:
        r = httpx.post(f"{connect.url}/connectors", timeout=20, json={"name": "avro-src", "config": {
            "connector.class": "FileStreamSource", "file": str(src), "topic": "avro-lines",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry_url}})
        assert r.status_code == 201, r.text
        deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "avro-check",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["avro-lines"])
        seen: list[str] = []
        deadline = time.monotonic() + 30
        try:
            while len(seen) < 2 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen.append(deserialize(msg.value(), SerializationContext("avro-lines", MessageField.VALUE)))
        finally:
            consumer.close()
        assert seen == ["alpha", "beta"]
        assert json.loads(httpx.get(f"{registry_url}/subjects/avro-lines-value/versions/1").json()["schema"]) == "string"
