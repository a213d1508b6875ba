"""Debezium's outbox event router SMT against the example of Debezium's documentation
(``transformations/outbox-event-router.adoc``: the raw change event of an ``outboxevent`` row and
the message it becomes), and its settings one by one: routing, key, id header, additional fields
(header, envelope, partition), JSON expansion, tombstones, deletes, updates, non-events."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from zurau.config import ConfigException
from zurau.connect.api import ConnectException
from zurau.connect.converters import JsonConverter
from zurau.connect.data import (
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaBuilder,
    Struct,
    Type,
)
from zurau.connect.outbox_event_router import EventRouter, expand_json, java_regex, java_replacement
from zurau.connect.plugins import BUILTIN
from zurau.connect.records import SourceRecord
from zurau.connect.transforms import TRANSFORM_ALIASES

# The documented example, value for value.
DOC_EVENT_ID = "406c07f3-26f0-4eea-a50c-109940064b8f"
DOC_PAYLOAD = (
    '{"id": 1, "lineItems": [{"id": 1, "item": "Debezium in Action", "status": "ENTERED", "quantity": 2, '
    '"totalPrice": 39.98}, {"id": 2, "item": "Debezium for Dummies", "status": "ENTERED", "quantity": 1, '
    '"totalPrice": 29.99}], "orderDate": "2019-01-31T12:13:01", "customerId": 123}'
)
DOC_TS_MS = 1556890294484

ROW_SCHEMA = (
    SchemaBuilder.struct()
    .name("dbserver1-bare.inventory.outboxevent.Value")
    .optional()
    .field("id", SchemaBuilder.string().name("io.debezium.data.Uuid").version(1).build())
    .field("aggregateid", STRING_SCHEMA)
    .field("aggregatetype", STRING_SCHEMA)
    .field("payload", SchemaBuilder.string().name("io.debezium.data.Json").version(1).optional().build())
    .field("timestamp", INT64_SCHEMA)
    .field("type", STRING_SCHEMA)
    .field("eventType", OPTIONAL_STRING_SCHEMA)
    .field("part", SchemaBuilder.int32().optional().build())
    .build()
)
SOURCE_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.postgresql.Source")
    .field("table", STRING_SCHEMA)
    .build()
)
ENVELOPE_SCHEMA = (
    SchemaBuilder.struct()
    .name("dbserver1-bare.inventory.outboxevent.Envelope")
    .field("before", ROW_SCHEMA)
    .field("after", ROW_SCHEMA)
    .field("source", SOURCE_SCHEMA)
    .field("op", STRING_SCHEMA)
    .field("ts_ms", SchemaBuilder.int64().optional().build())
    .build()
)


def row(**overrides: Any) -> Struct:
    values: dict[str, Any] = {
        "id": DOC_EVENT_ID,
        "aggregateid": "1",
        "aggregatetype": "Order",
        "payload": DOC_PAYLOAD,
        "timestamp": 1556890294344,
        "type": "OrderCreated",
        "eventType": "order-created",
        "part": 2,
    }
    values.update(overrides)
    s = Struct(ROW_SCHEMA)
    for k, v in values.items():
        s.put(k, v)
    return s


def event(op: str = "c", after: Struct | None = None, before: Struct | None = None) -> SourceRecord:
    envelope = (
        Struct(ENVELOPE_SCHEMA)
        .put("before", before)
        .put("after", row() if after is None and op in "cr" else after)
        .put("source", Struct(SOURCE_SCHEMA).put("table", "outboxevent"))
        .put("op", op)
        .put("ts_ms", DOC_TS_MS)
    )
    return SourceRecord(
        topic="dbserver1-bare.inventory.outboxevent",
        key_schema=STRING_SCHEMA,
        key=DOC_EVENT_ID,
        value_schema=ENVELOPE_SCHEMA,
        value=envelope,
        source_partition={"server": "x"},
        source_offset={"lsn": 24064704},
    )


def router(**settings: str) -> EventRouter:
    smt = EventRouter()
    smt.configure({k.replace("_", "."): v for k, v in settings.items()})
    return smt


def test_registered_under_debeziums_class_name() -> None:
    assert TRANSFORM_ALIASES["io.debezium.transforms.outbox.EventRouter"] is EventRouter
    assert (
        BUILTIN["io.debezium.transforms.outbox.EventRouter"]
        == "zurau.connect.outbox_event_router:EventRouter"
    )


def test_documented_example_with_the_default_configuration() -> None:
    out = router().apply(event())
    assert out is not None
    # "# Kafka Topic: outbox.event.order" in the documentation: the topic is outbox.event.
    # followed by the aggregatetype value as stored ("the default topic name is outbox.event.
    # followed by the aggregatetype column value"); the example's lower case is not something the
    # router does (Debezium's RegexRouter keeps the case), so the value "Order" gives "...Order".
    assert out.topic == "outbox.event.Order"
    # "# Kafka Message key: "1"" -- the aggregateid, a string.
    assert out.key == "1" and out.key_schema == STRING_SCHEMA
    # "# Kafka Message Headers: "id=..."" -- the event id. (The documentation's header shows another
    # uuid than its raw event's id column; the router copies the row's id, which is what it documents:
    # "This ID will be stored in the emitted event's headers under the id key".)
    assert out.headers == (("id", DOC_EVENT_ID),)
    # "# Kafka Message Timestamp: 1556890294484" -- the change event's ts_ms.
    assert out.timestamp == DOC_TS_MS
    # The value is the payload string, unchanged, with the payload column's schema.
    assert out.value == DOC_PAYLOAD and out.value_schema == ROW_SCHEMA.field("payload").schema
    # Serialized by the JsonConverter without schemas as in the documentation: the escaped string.
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, is_key=False)
    assert json.loads(conv.from_connect_data(out.topic, out.value_schema, out.value)) == DOC_PAYLOAD
    key_conv = JsonConverter()
    key_conv.configure({"schemas.enable": "false"}, is_key=True)
    assert key_conv.from_connect_data(out.topic, out.key_schema, out.key) == b'"1"'
    assert out.source_offset == {"lsn": 24064704}  # the source position is kept


def test_documented_expanded_json_payload() -> None:
    out = router(table_expand_json_payload="true").apply(event())
    assert out is not None and isinstance(out.value, Struct)
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, is_key=False)
    # "the result in Kafka message looks like: {"id": 1, "lineItems": [...], ...}"
    assert json.loads(conv.from_connect_data(out.topic, out.value_schema, out.value)) == json.loads(
        DOC_PAYLOAD
    )
    schema = out.value_schema
    assert schema is not None and schema.type is Type.STRUCT and schema.optional
    assert [f.name for f in schema.fields] == ["id", "lineItems", "orderDate", "customerId"]
    assert schema.field("id").schema == Schema.OPTIONAL_INT32_SCHEMA
    items = schema.field("lineItems").schema
    assert items.type is Type.ARRAY and items.value_schema is not None
    assert items.value_schema.field("totalPrice").schema == Schema.OPTIONAL_FLOAT64_SCHEMA
    assert items.value_schema.field("item").schema == OPTIONAL_STRING_SCHEMA


def test_expand_json_rules() -> None:
    assert (
        expand_json("not json") is None
        and expand_json('"a string"') is None
        and expand_json("{broken") is None
    )
    schema, value = expand_json(
        '{"big": 3000000000, "n": null, "flag": true, "xs": [], "mixed": [{"a": 1}, {"b": "x"}]}'
    )
    assert [f.name for f in schema.fields] == ["big", "flag", "xs", "mixed"]  # null-valued fields left out
    assert schema.field("big").schema == Schema.OPTIONAL_INT64_SCHEMA
    assert schema.field("xs").schema.value_schema == OPTIONAL_STRING_SCHEMA
    mixed = schema.field("mixed").schema.value_schema
    assert [f.name for f in mixed.fields] == ["a", "b"]
    assert [m.as_dict() for m in value.get("mixed")] == [{"a": 1, "b": None}, {"a": None, "b": "x"}]
    with pytest.raises(ConnectException):
        expand_json('{"xs": [1, "a"]}')
    # A payload that is not JSON stays a string.
    out = router(table_expand_json_payload="true").apply(event(after=row(payload="plain text")))
    assert out is not None and out.value == "plain text"


def test_routing_settings_and_java_regex_syntax() -> None:
    assert java_regex("(?<routedByValue>.*)").fullmatch("x").group("routedByValue") == "x"
    assert java_replacement("a.${v}.$1") == r"a.\g<v>.\g<1>"
    out = router(route_by_field="type", route_topic_replacement="events.${routedByValue}").apply(event())
    assert out is not None and out.topic == "events.OrderCreated"
    out = router(route_topic_regex="(?<kind>Ord)(er)", route_topic_replacement="$2.${kind}").apply(event())
    assert out is not None and out.topic == "er.Ord"
    # A value the regex does not match keeps the routed value as the topic.
    out = router(route_topic_regex="Customer", route_topic_replacement="x").apply(event())
    assert out is not None and out.topic == "Order"


def test_key_id_and_timestamp_columns() -> None:
    out = router(table_field_event_key="type", table_field_event_id="aggregateid").apply(event())
    assert out is not None and out.key == "OrderCreated" and out.headers == (("id", "1"),)
    with pytest.raises(ConnectException, match="Unsupported field type"):
        router(table_field_event_timestamp="timestamp").apply(event())  # a plain int64 has no logical name
    out = router(table_field_event_key="nosuch").apply(event())
    assert out is not None and out.key is None and out.key_schema == STRING_SCHEMA
    with pytest.raises(ConnectException, match="payload field"):
        router(table_field_event_payload="nosuch").apply(event())


def test_additional_fields_in_header_envelope_and_partition() -> None:
    out = router(
        table_fields_additional_placement="eventType:header:type,aggregatetype:envelope,type:envelope:kind,"
        "part:partition"
    ).apply(event())
    assert out is not None
    assert out.headers == (("id", DOC_EVENT_ID), ("type", "order-created"))
    assert out.kafka_partition == 2
    assert out.value_schema.name == "dbserver1-bare.inventory.outboxevent.Order.Value"
    assert [f.name for f in out.value_schema.fields] == ["payload", "aggregatetype", "kind"]
    assert out.value.as_dict() == {"payload": DOC_PAYLOAD, "aggregatetype": "Order", "kind": "OrderCreated"}
    with pytest.raises(ConfigException):
        router(table_fields_additional_placement="eventType:somewhere")
    with pytest.raises(ConfigException):
        router(table_fields_additional_placement="a:b:c:d")


def test_tombstones_deletes_updates_and_other_records(caplog: pytest.LogCaptureFixture) -> None:
    smt = router()
    tombstone = event().new_record(value=None, value_schema=None)
    assert smt.apply(tombstone) is None
    with caplog.at_level(logging.INFO, logger="zurau.connect.outbox"):
        assert smt.apply(event("d", before=row())) is None
        assert smt.apply(event("u", after=row(), before=row())) is None
    assert any("Delete message" in r.message for r in caplog.records)
    assert any(r.levelno == logging.WARNING and "Unexpected update" in r.message for r in caplog.records)
    with pytest.raises(ConnectException, match="Unexpected update"):
        router(table_op_invalid_behavior="fatal").apply(event("u", after=row()))
    heartbeat = SourceRecord(topic="__debezium-heartbeat.x", value_schema=STRING_SCHEMA, value="beat")
    assert smt.apply(heartbeat) is heartbeat
    # A snapshot read of the outbox table is routed like an insert.
    out = smt.apply(event("r"))
    assert out is not None and out.topic == "outbox.event.Order"
    # An empty payload: kept by default, a tombstone with route.tombstone.on.empty.payload.
    out = smt.apply(event(after=row(payload=None)))
    assert out is not None and out.value is None and out.value_schema is not None
    out = router(route_tombstone_on_empty_payload="true").apply(event(after=row(payload=" ")))
    assert out is not None and out.value is None and out.value_schema is None and out.key == "1"
