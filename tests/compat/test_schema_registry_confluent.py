"""confluent-kafka's SchemaRegistryClient (sync and async) and its Avro and JSON Schema
serializers against Zurau's registry, with records round-tripped through a Zurau broker,
schema references, and Confluent's errors where Confluent returns them."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import (
    AsyncSchemaRegistryClient,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

ADDRESS = {
    "type": "record",
    "name": "Address",
    "namespace": "acme",
    "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "int"}],
}
CUSTOMER_V1 = {
    "type": "record",
    "name": "Customer",
    "namespace": "acme",
    "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "acme.Address"}],
}
CUSTOMER_V2 = {
    **CUSTOMER_V1,
    "fields": [*CUSTOMER_V1["fields"], {"name": "tier", "type": "string", "default": "basic"}],
}


def round_trip(bootstrap: str, topic: str, payloads: list[bytes]) -> list[bytes]:
    p = Producer({"bootstrap.servers": bootstrap})
    for value in payloads:
        p.produce(topic, value=value)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(300):
            if len(got) == len(payloads):
                break
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        c.close()
    return got


@pytest.fixture
def client(zurau_registry: object) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": zurau_registry.url})  # type: ignore[attr-defined]


def test_avro_with_references_through_zurau(zurau_broker: object, zurau_registry: object, zurau_topic: str, client: SchemaRegistryClient) -> None:
    bootstrap = zurau_broker.bootstrap_servers  # type: ignore[attr-defined]
    addr_subject = f"acme.Address-{uuid.uuid4().hex[:6]}"
    addr_id = client.register_schema(addr_subject, Schema(json.dumps(ADDRESS), "AVRO"))
    assert client.get_latest_version(addr_subject).schema_id == addr_id
    refs = [SchemaReference("acme.Address", addr_subject, 1)]
    subject = f"{zurau_topic}-value"
    schema_v1 = Schema(json.dumps(CUSTOMER_V1), "AVRO", refs)
    client.register_schema(subject, schema_v1)

    ser = AvroSerializer(client, schema_v1, conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(zurau_topic, MessageField.VALUE)
    records = [{"name": f"n{i}", "home": {"city": "Oslo", "zip": i}} for i in range(5)]
    payloads = [ser(r, ctx) for r in records]
    assert all(p[0] == 0 for p in payloads)  # Confluent wire format: magic byte 0, then the id
    got = round_trip(bootstrap, zurau_topic, payloads)
    de = AvroDeserializer(client)
    assert [de(v, ctx) for v in got] == records

    # a compatible v2 (field with a default) registers; old data reads through it
    v2_id = client.register_schema(subject, Schema(json.dumps(CUSTOMER_V2), "AVRO", refs))
    assert client.get_version(subject, 2).schema_id == v2_id  # (the client caches "latest")
    assert client.get_schema(v2_id).references[0].name == "acme.Address"
    reader = AvroDeserializer(client, schema_str=Schema(json.dumps(CUSTOMER_V2), "AVRO", refs))
    assert reader(got[0], ctx) == {**records[0], "tier": "basic"}

    # an incompatible change: Confluent's 409
    broken = {**CUSTOMER_V1, "fields": [*CUSTOMER_V1["fields"], {"name": "age", "type": "int"}]}
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, Schema(json.dumps(broken), "AVRO", refs))
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    assert client.test_compatibility(subject, Schema(json.dumps(broken), "AVRO", refs)) is False


def test_auto_registering_avro_serializer(zurau_broker: object, zurau_topic: str, client: SchemaRegistryClient) -> None:
    schema = json.dumps({"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "long"}]})
    ser = AvroSerializer(client, schema)
    ctx = SerializationContext(zurau_topic, MessageField.VALUE)
    got = round_trip(zurau_broker.bootstrap_servers, zurau_topic, [ser({"n": i}, ctx) for i in range(3)])  # type: ignore[attr-defined]
    assert [AvroDeserializer(client)(v, ctx) for v in got] == [{"n": i} for i in range(3)]
    registered = client.get_latest_version(f"{zurau_topic}-value")
    assert json.loads(registered.schema.schema_str)["name"] == "Ping"
    assert client.get_subjects().count(f"{zurau_topic}-value") == 1


def test_json_schema_serializer(zurau_broker: object, zurau_topic: str, client: SchemaRegistryClient) -> None:
    schema = json.dumps(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Reading",
            "type": "object",
            "properties": {"sensor": {"type": "string"}, "value": {"type": "number"}},
            "required": ["sensor", "value"],
        }
    )
    ser = JSONSerializer(schema, client)
    ctx = SerializationContext(zurau_topic, MessageField.VALUE)
    records = [{"sensor": "t1", "value": 20.5}, {"sensor": "t2", "value": 3}]
    got = round_trip(zurau_broker.bootstrap_servers, zurau_topic, [ser(r, ctx) for r in records])  # type: ignore[attr-defined]
    de = JSONDeserializer(None, schema_registry_client=client)
    assert [de(v, ctx) for v in got] == records
    assert client.get_latest_version(f"{zurau_topic}-value").schema.schema_type == "JSON"


def test_client_sees_confluent_errors(client: SchemaRegistryClient) -> None:
    missing = f"missing-{uuid.uuid4().hex[:6]}"
    with pytest.raises(SchemaRegistryError) as e:
        client.get_latest_version(missing)
    assert e.value.error_code == 40401
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(missing, Schema('{"type": "nope"}', "AVRO"))
    assert e.value.error_code == 42201
    with pytest.raises(SchemaRegistryError) as e:
        client.get_schema(99_999_999)
    assert e.value.error_code == 40403


def test_config_mode_and_deletes_through_the_client(client: SchemaRegistryClient) -> None:
    subject = f"cfg-{uuid.uuid4().hex[:6]}"
    client.register_schema(subject, Schema('"string"', "AVRO"))
    client.set_compatibility(subject, "FULL")
    assert client.get_compatibility(subject) == "FULL"
    assert client.delete_subject(subject) == [1]
    assert client.delete_subject(subject, permanent=True) == [1]
    assert subject not in client.get_subjects()


def test_async_client(zurau_registry: object) -> None:
    async def main() -> None:
        client = AsyncSchemaRegistryClient({"url": zurau_registry.url})  # type: ignore[attr-defined]
        subject = f"async-{uuid.uuid4().hex[:6]}"
        sid = await client.register_schema(subject, Schema('"int"', "AVRO"))
        latest = await client.get_latest_version(subject)
        assert (latest.schema_id, latest.version) == (sid, 1)
        assert (await client.get_schema(sid)).schema_str == '"int"'

    asyncio.run(main())
