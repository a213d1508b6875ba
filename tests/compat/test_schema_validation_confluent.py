"""Broker-side schema ID validation seen by confluent-kafka: a broker with
``confluent.schema.registry.url`` (a dead URL first, then Zurau's registry: the broker fails over)
accepts records serialized against a schema registered under the topic's subject and refuses,
with INVALID_RECORD, records without the wire format or with an id the registry does not have
under that subject."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.broker_process import free_port
from zurau import EmbeddedBroker
from zurau.broker.schema_validation import RegistryLookup, RegistryUnavailable
from zurau.client.connection import BrokerConnection
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.records.builder import build_batch


@pytest.fixture(scope="module")
def validating_broker(zurau_registry: object) -> Iterator[EmbeddedBroker]:
    urls = f"http://127.0.0.1:{free_port()},{zurau_registry.url}"  # type: ignore[attr-defined]
    with EmbeddedBroker(**{"confluent.schema.registry.url": urls}) as b:
        yield b


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> list[KafkaError | None]:
    """Produce each record (one request each) and return its delivery error (None: delivered)."""
    outcomes: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    for key, value in records:
        p.produce(topic, key=key, value=value, on_delivery=lambda err, _msg: outcomes.append(err))
        p.flush(30)
    assert len(outcomes) == len(records)
    return outcomes


def raw_produce(bootstrap: str, topic: str, values: list[bytes]) -> dict[str, Any]:
    """One batch of ``values`` in one Produce request; the partition's response."""

    async def main() -> dict[str, Any]:
        host, port = bootstrap.rsplit(":", 1)
        conn = await BrokerConnection(host, int(port), client_id="validation-test").connect()
        try:
            batch = build_batch([(None, v, [], 1_700_000_000_000) for v in values])
            body = {"transactional_id": None, "acks": -1, "timeout_ms": 10_000,
                    "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
            resp = await conn.request(ApiKey.PRODUCE, body, max_version=12)
        finally:
            await conn.close()
        part: dict[str, Any] = resp["responses"][0]["partition_responses"][0]
        return part

    return asyncio.run(main())


def test_validation_accepts_registered_ids_and_refuses_the_rest(
    validating_broker: EmbeddedBroker, zurau_registry: object
) -> None:
    topic = f"validated-{uuid.uuid4().hex[:6]}"
    validating_broker.create_topic(topic, 1, {"confluent.value.schema.validation": "true"})
    client = SchemaRegistryClient({"url": zurau_registry.url})  # type: ignore[attr-defined]
    schema = json.dumps({"type": "record", "name": "Ping", "fields": [{"name": "n", "type": "long"}]})
    ser = AvroSerializer(client, schema)
    good = ser({"n": 1}, SerializationContext(topic, MessageField.VALUE))
    other_id = client.register_schema(f"elsewhere-{uuid.uuid4().hex[:6]}", Schema('"string"', "AVRO"))
    other = b"\x00" + other_id.to_bytes(4, "big") + b"\x02x"
    unknown = b"\x00" + (2**31 - 7).to_bytes(4, "big") + b"\x02"

    outcomes = produce(
        validating_broker.bootstrap_servers,
        topic,
        [(b"raw key", good), (None, b"plain bytes"), (None, unknown), (None, other), (None, None), (None, good)],
    )
    assert outcomes[0] is None and outcomes[4] is None and outcomes[5] is None  # keys and tombstones pass
    for refused in outcomes[1:4]:
        assert refused is not None and refused.code() == KafkaError.INVALID_RECORD, refused

    # key validation is independent: switched on, a raw key is refused, a framed one passes
    keyed = f"validated-keys-{uuid.uuid4().hex[:6]}"
    validating_broker.create_topic(keyed, 1, {"confluent.key.schema.validation": "true"})
    key_ser = AvroSerializer(client, schema)
    framed_key = key_ser({"n": 2}, SerializationContext(keyed, MessageField.KEY))
    first, second = produce(validating_broker.bootstrap_servers, keyed, [(b"raw", b"v"), (framed_key, b"anything")])
    assert first is not None and first.code() == KafkaError.INVALID_RECORD
    assert second is None

    # one batch with good and bad records: refused whole, each bad record named (Produce v8+)
    part = raw_produce(validating_broker.bootstrap_servers, topic, [good, b"plain", unknown, other])
    assert part["error_code"] == 87 and part["base_offset"] == -1
    assert [e["batch_index"] for e in part["record_errors"]] == [1, 2, 3]
    messages = [e["batch_index_error_message"] for e in part["record_errors"]]
    assert "wire format" in messages[0] and "not registered in the schema registry" in messages[1]
    assert f"not registered under subject {topic}-value" in messages[2]
    assert part["error_message"].startswith("3 record(s) rejected by schema validation")


def test_registry_down_is_a_clear_error(zurau_broker: object) -> None:
    client = RegistryLookup(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(RegistryUnavailable, match="127.0.0.1"):
        asyncio.run(client.subjects_of(1))
    # a topic asking for validation on a broker without a registry URL is refused, with the reason
    topic = f"no-registry-{uuid.uuid4().hex[:6]}"
    zurau_broker.create_topic(topic, 1, {"confluent.value.schema.validation": "true"})  # type: ignore[attr-defined]
    (err,) = produce(zurau_broker.bootstrap_servers, topic, [(None, b"\x00\x00\x00\x00\x01x")])  # type: ignore[attr-defined]
    assert err is not None and err.code() == KafkaError.INVALID_RECORD
    part = raw_produce(zurau_broker.bootstrap_servers, topic, [b"\x00\x00\x00\x00\x01x"])  # type: ignore[attr-defined]
    assert part["error_code"] == 87 and "no confluent.schema.registry.url" in part["error_message"]
