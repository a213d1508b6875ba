"""Single message transforms and predicates with Kafka's and Debezium's settings, and the
transform chain built from a connector config."""

from __future__ import annotations

from typing import Any

import pytest

from zurau.connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
)
from zurau.connect.connector_config import build_transforms
from zurau.connect.plugins import PluginRegistry
from zurau.connect.transforms import ExtractNewRecordState, InsertFieldValue, RegexRouter, ReplaceFieldValue

ROW = SchemaBuilder.struct().name("srv.public.orders.Value").field("id", INT32_SCHEMA).field(
    "note", OPTIONAL_STRING_SCHEMA).build()
OPTIONAL_ROW = Schema(**{**ROW.__dict__, "optional": True})
SOURCE = SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source").field(
    "table", STRING_SCHEMA).field("lsn", INT64_SCHEMA).field("ts_ms", INT64_SCHEMA).build()
ENVELOPE = (SchemaBuilder.struct().name("srv.public.orders.Envelope")
            .field("before", OPTIONAL_ROW).field("after", OPTIONAL_ROW).field("source", SOURCE)
            .field("op", STRING_SCHEMA).field("ts_ms", INT64_SCHEMA).build())


def row(i: int, note: str | None = None) -> Struct:
    return Struct(OPTIONAL_ROW).put("id", i).put("note", note)


def event(op: str, before: Struct | None, after: Struct | None) -> SourceRecord:
    source = Struct(SOURCE).put("table", "orders").put("lsn", 99).put("ts_ms", 1000)
    value = (Struct(ENVELOPE).put("before", before).put("after", after).put("source", source)
             .put("op", op).put("ts_ms", 2000))
    return SourceRecord(topic="srv.public.orders", value_schema=ENVELOPE, value=value)


TOMBSTONE = SourceRecord(topic="srv.public.orders", value=None)


def unwrap(**config: str) -> ExtractNewRecordState:
    t = ExtractNewRecordState()
    t.configure(config)
    return t


def test_unwrap_replaces_the_envelope_by_the_after_state() -> None:
    out = unwrap().apply(event("u", row(1, "old"), row(1, "new")))
    assert out is not None and out.value == row(1, "new") and out.value_schema == OPTIONAL_ROW


def test_unwrap_default_keeps_only_the_tombstone_of_a_delete() -> None:
    t = unwrap()
    assert t.apply(event("d", row(1), None)) is None
    assert t.apply(TOMBSTONE) is TOMBSTONE


def test_unwrap_rewrite_marks_deletes_and_drops_tombstones() -> None:
    t = unwrap(**{"delete.tombstone.handling.mode": "rewrite", "add.fields": "op,table,source.ts_ms,lsn:pos"})
    deleted = t.apply(event("d", row(7, "x"), None))
    assert deleted is not None
    v = deleted.value
    assert [f.name for f in v.schema.fields] == ["id", "note", "__op", "__table", "__source_ts_ms", "__pos", "__deleted"]
    assert (v.get("id"), v.get("__deleted"), v.get("__op"), v.get("__table"), v.get("__source_ts_ms"), v.get("__pos")) == (
        7, "true", "d", "orders", 1000, 99)
    created = t.apply(event("c", None, row(8)))
    assert created is not None and created.value.get("__deleted") == "false"
    assert t.apply(TOMBSTONE) is None


def test_unwrap_legacy_settings() -> None:
    legacy = unwrap(**{"drop.tombstones": "false", "delete.handling.mode": "rewrite"})
    assert legacy.apply(TOMBSTONE) is TOMBSTONE
    out = legacy.apply(event("d", row(2), None))
    assert out is not None and out.value.get("__deleted") == "true"
    none_mode = unwrap(**{"delete.handling.mode": "none"})
    tomb = none_mode.apply(event("d", row(2), None))
    assert tomb is not None and tomb.value is None
    assert unwrap(**{"delete.handling.mode": "drop"}).apply(event("d", row(2), None)) is None


def test_unwrap_delete_to_tombstone_and_truncate_and_non_envelopes() -> None:
    t = unwrap(**{"delete.tombstone.handling.mode": "delete-to-tombstone"})
    out = t.apply(event("d", row(3), None))
    assert out is not None and out.value is None and out.value_schema is None
    assert t.apply(TOMBSTONE) is None
    assert t.apply(event("t", None, None)) is None
    heartbeat = SourceRecord(topic="__debezium-heartbeat", value_schema=STRING_SCHEMA, value="beat")
    assert t.apply(heartbeat) is heartbeat
    with pytest.raises(ConfigException):
        unwrap(**{"delete.tombstone.handling.mode": "explode"})


def test_regex_router() -> None:
    t = RegexRouter()
    t.configure({"regex": r"srv\.public\.(.*)", "replacement": "cdc_$1"})
    out = t.apply(event("c", None, row(1)))
    assert out is not None and out.topic == "cdc_orders"
    other = SourceRecord(topic="elsewhere.orders", value=None)
    assert t.apply(other) is other  # the whole topic name must match


def test_insert_field_with_schema_and_schemaless() -> None:
    t = InsertFieldValue()
    t.configure({"topic.field": "src_topic!", "offset.field": "off", "static.field": "origin", "static.value": "pg"})
    rec = SinkRecord(topic="t", kafka_partition=0, kafka_offset=41, value_schema=OPTIONAL_ROW, value=row(1))
    out = t.apply(rec)
    assert out is not None
    assert [(f.name, f.schema.optional) for f in out.value_schema.fields][2:] == [
        ("src_topic", False), ("off", True), ("origin", True)]
    assert (out.value.get("src_topic"), out.value.get("off"), out.value.get("origin")) == ("t", 41, "pg")
    schemaless = t.apply(SinkRecord(topic="t", kafka_partition=0, kafka_offset=5, value={"a": 1}))
    assert schemaless is not None and schemaless.value == {"a": 1, "src_topic": "t", "off": 5, "origin": "pg"}
    with pytest.raises(ConfigException):
        InsertFieldValue().configure({})


def test_replace_field_include_exclude_renames() -> None:
    t = ReplaceFieldValue()
    t.configure({"exclude": "note", "renames": "id:order_id"})
    out = t.apply(SourceRecord(topic="t", value_schema=OPTIONAL_ROW, value=row(5, "n")))
    assert out is not None and [f.name for f in out.value_schema.fields] == ["order_id"]
    assert out.value.get("order_id") == 5 and out.value_schema.name == ROW.name
    keep = ReplaceFieldValue()
    keep.configure({"include": "note"})
    out2 = keep.apply(SourceRecord(topic="t", value={"id": 1, "note": "x"}))
    assert out2 is not None and out2.value == {"note": "x"}
    with pytest.raises(ConfigException):
        ReplaceFieldValue().configure({"renames": "broken"})


def chain(config: dict[str, Any]) -> Any:
    return build_transforms(config, PluginRegistry())


def test_filter_with_predicates_and_negate() -> None:
    drop_tombstones = chain({
        "transforms": "dropTombstones", "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.dropTombstones.predicate": "isTombstone",
        "predicates": "isTombstone",
        "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"})
    kept = SourceRecord(topic="t", value="x")
    assert drop_tombstones.apply(TOMBSTONE) is None and drop_tombstones.apply(kept) is kept
    only_orders = chain({
        "transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.f.predicate": "orders", "transforms.f.negate": "true",
        "predicates": "orders",
        "predicates.orders.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.orders.pattern": ".*orders"})
    orders = SourceRecord(topic="srv.public.orders", value="x")
    assert only_orders.apply(orders) is orders
    assert only_orders.apply(SourceRecord(topic="other", value="x")) is None
    has_header = chain({
        "transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.f.predicate": "m", "predicates": "m",
        "predicates.m.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey", "predicates.m.name": "skip"})
    assert has_header.apply(kept.with_header("skip", b"1")) is None and has_header.apply(kept) is kept


def test_chain_applies_in_order_and_reports_bad_config() -> None:
    c = chain({"transforms": "unwrap,route",
               "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
               "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
               "transforms.route.regex": "srv\\.public\\.(.*)", "transforms.route.replacement": "$1"})
    out = c.apply(event("c", None, row(1)))
    assert out is not None and out.topic == "orders" and out.value == row(1)
    with pytest.raises(ConfigException, match="transforms.x.type"):
        chain({"transforms": "x"})
    with pytest.raises(ConfigException, match="transforms.x.type"):
        chain({"transforms": "x", "transforms.x.type": "no.such.Transform"})
    with pytest.raises(ConfigException, match="predicate"):
        chain({"transforms": "x", "transforms.x.type": "org.apache.kafka.connect.transforms.Filter",
               "transforms.x.predicate": "missing"})
