"""The REST proxy's consume-side pure parts, without sockets: record fields to JSON in the v2
formats (the registry faked in-process), the Accept negotiation of v2 reads, and the checks of
``POST /consumers/{group}`` bodies and seek timestamps."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import struct
from types import SimpleNamespace
from typing import Any

import fastavro
import pytest
from starlette.requests import Request

from zurau.rest_proxy.errors import RestProxyError
from zurau.rest_proxy.record_deserialization import RecordDeserializer, RecordFormatError, parse_format
from zurau.rest_proxy.v2_consumers import _timestamp_ms, accepted_format, instance_settings
from zurau.schema_formats.registry_http import ServiceError

USER = {
    "type": "record",
    "name": "User",
    "namespace": "ns",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "nick", "type": ["null", "string"]},
        {"name": "blob", "type": "bytes"},
        {"name": "born", "type": {"type": "int", "logicalType": "date"}},
    ],
}


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + body


def avro_bytes(schema: Any, datum: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), datum)
    return buf.getvalue()


class FakeRegistry:
    """Answers ``/schemas/ids/{id}`` from a dict; ``down`` makes it unreachable (502)."""

    def __init__(self, schemas: dict[int, dict[str, Any]]) -> None:
        self.schemas = schemas
        self.down = False
        self.calls = 0

    async def get_json(self, path: str, **_: Any) -> Any:
        self.calls += 1
        if self.down:
            raise ServiceError(502, "schema registry at http://x is unreachable")
        sid = int(path.rsplit("/", 1)[1])
        if sid not in self.schemas:
            raise ServiceError(404, "Schema not found")
        return self.schemas[sid]


def deserializer_with(registry: FakeRegistry) -> RecordDeserializer:
    d = RecordDeserializer("http://registry.invalid:1")
    asyncio.run(d.close())
    d._decoder.registry = registry  # type: ignore[assignment]
    return d


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_binary_is_base64_and_null_stays_null() -> None:
    d = RecordDeserializer(None)
    data = bytes(range(256))
    assert run(d.to_json(data, "binary")) == (base64.b64encode(data).decode(), 256)
    assert run(d.to_json(None, "binary")) == (None, 0)
    assert run(d.to_json(b"", "binary")) == ("", 0)


def test_json_parses_and_refuses_what_is_not_json() -> None:
    d = RecordDeserializer(None)
    doc = {"a": [1, 2.5, None, "é"], "b": {"c": True}}
    raw = json.dumps(doc, ensure_ascii=False).encode()
    assert run(d.to_json(raw, "json")) == (doc, len(raw))
    with pytest.raises(RecordFormatError) as e:
        run(d.to_json(b"\xff\xfe not json", "json", "the value of t-0@3"))
    assert (e.value.status, e.value.error_code) == (408, 40801)
    assert "the value of t-0@3" in e.value.message


def test_avro_is_avros_json_encoding() -> None:
    registry = FakeRegistry({7: {"schema": json.dumps(USER)}})
    d = deserializer_with(registry)
    datum = {"name": "ada", "nick": "a", "blob": b"\x00\xff", "born": 3}
    out, size = run(d.to_json(framed(7, avro_bytes(USER, datum)), "avro"))
    # Confluent's AvroConverter: unions wrapped with the branch's name, bytes as code points.
    assert out == {"name": "ada", "nick": {"string": "a"}, "blob": "\x00\xff", "born": 3}
    assert size == 5 + len(avro_bytes(USER, datum))
    null_nick = {"name": "bo", "nick": None, "blob": b"", "born": 0}
    assert run(d.to_json(framed(7, avro_bytes(USER, null_nick)), "avro"))[0]["nick"] is None
    assert registry.calls == 1  # schemas are cached by id


def test_avro_mistakes_are_record_format_errors() -> None:
    registry = FakeRegistry({7: {"schema": json.dumps(USER)}, 8: {"schemaType": "JSON", "schema": "{}"}})
    d = deserializer_with(registry)
    cases = [
        (b"plain bytes", "wire format"),
        (framed(99, b"x"), "Schema not found"),
        (framed(8, b"{}"), "JSON schema 8, not AVRO"),
        (framed(7, avro_bytes(USER, {"name": "x", "nick": None, "blob": b"", "born": 1}) + b"junk"), "bytes left"),
        (framed(7, b"\x02"), "cannot be decoded"),
    ]
    for data, words in cases:
        with pytest.raises(RecordFormatError) as e:
            run(d.to_json(data, "avro"))
        assert words in e.value.message, e.value.message


def test_an_unreachable_registry_is_asked_again() -> None:
    registry = FakeRegistry({7: {"schema": json.dumps(USER)}})
    registry.down = True
    d = deserializer_with(registry)
    data = framed(7, avro_bytes(USER, {"name": "x", "nick": None, "blob": b"", "born": 1}))
    with pytest.raises(RecordFormatError) as e:
        run(d.to_json(data, "avro"))
    assert "unreachable" in e.value.message
    registry.down = False
    assert run(d.to_json(data, "avro"))[0]["name"] == "x"


def test_jsonschema_payload_is_the_document() -> None:
    registry = FakeRegistry({3: {"schemaType": "JSON", "schema": '{"type": "object"}'}})
    d = deserializer_with(registry)
    assert run(d.to_json(framed(3, b'{"id": 1, "tags": ["x"]}'), "jsonschema"))[0] == {"id": 1, "tags": ["x"]}


def test_schema_formats_need_a_registry_and_formats_are_checked() -> None:
    with pytest.raises(RestProxyError) as e:
        RecordDeserializer(None).check_format("avro")
    assert (e.value.status, e.value.error_code) == (422, 42206)
    RecordDeserializer(None).check_format("binary")
    assert parse_format("JSONSCHEMA") == "jsonschema"
    for bad in ("xml", 3, None):
        with pytest.raises(RestProxyError) as e:
            parse_format(bad)
        assert e.value.status == 422


def request_with(accept: str | None) -> Request:
    headers = [] if accept is None else [(b"accept", accept.encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers, "query_string": b""})


def test_accept_must_name_the_instances_format() -> None:
    json_instance: Any = SimpleNamespace(format="json")
    binary_instance: Any = SimpleNamespace(format="binary")
    for ok in (None, "*/*", "application/vnd.kafka.json.v2+json", "text/html, application/vnd.kafka.json.v2+json; q=0.5"):
        accepted_format(request_with(ok), json_instance)
    accepted_format(request_with("application/vnd.kafka.v2+json"), binary_instance)
    with pytest.raises(RestProxyError) as e:
        accepted_format(request_with("application/vnd.kafka.binary.v2+json"), json_instance)
    assert (e.value.status, e.value.error_code) == (406, 40601)
    with pytest.raises(RestProxyError) as e:
        accepted_format(request_with("application/vnd.kafka.v2+json"), json_instance)  # v2+json is binary
    assert (e.value.status, e.value.error_code) == (406, 40601)
    with pytest.raises(RestProxyError) as e:
        accepted_format(request_with("text/plain"), json_instance)
    assert (e.value.status, e.value.error_code) == (406, 406)


def test_instance_settings_are_checked_as_confluent_does() -> None:
    s = instance_settings({"format": "AVRO", "auto.offset.reset": "Earliest", "auto.commit.enable": "false",
                           "fetch.min.bytes": "10", "consumer.request.timeout.ms": 200})
    assert (s.format, s.auto_offset_reset, s.auto_commit, s.fetch_min_bytes, s.request_timeout_ms) == (
        "avro", "earliest", False, 10, 200)
    assert instance_settings({}).format == "binary" and instance_settings({}).auto_commit
    bad = [
        ({"format": "xml"}, 422, 42200),
        ({"auto.offset.reset": "smallest"}, 422, 42204),
        ({"auto.commit.enable": "yes"}, 422, 42204),
        ({"fetch.min.bytes": -2}, 400, 40001),
        ({"fetch.min.bytes": "many"}, 422, 42200),
        ({"consumer.request.timeout.ms": -1}, 422, 42200),
    ]
    for body, status, code in bad:
        with pytest.raises(RestProxyError) as e:
            instance_settings(body)
        assert (e.value.status, e.value.error_code) == (status, code), body
    with pytest.raises(Exception) as big:
        instance_settings({"fetch.min.bytes": 2**40})
    assert getattr(big.value, "status", None) == 400


def test_seek_timestamps() -> None:
    assert _timestamp_ms("2024-01-31T12:00:00Z", "t") == 1706702400000
    assert _timestamp_ms("2024-01-31T13:00:00.250+01:00", "t") == 1706702400250
    assert _timestamp_ms(1706702400, "t") == 1706702400000  # a number is epoch seconds (Jackson)
    for bad in ("2024-01-31T12:00:00", "yesterday", True, -5, None):
        with pytest.raises(RestProxyError) as e:
            _timestamp_ms(bad, "t")
        assert e.value.status == 422


def test_protobuf_is_the_canonical_json_mapping_with_defaults() -> None:
    from google.protobuf import descriptor_pb2, message_factory
    from google.protobuf.descriptor_pool import DescriptorPool

    fdp = descriptor_pb2.FileDescriptorProto(name="order.proto", package="shop", syntax="proto3")
    msg = fdp.message_type.add(name="Order")
    f = descriptor_pb2.FieldDescriptorProto
    msg.field.add(name="order_id", number=1, type=f.TYPE_INT64, label=f.LABEL_OPTIONAL)
    msg.field.add(name="customer_name", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    msg.field.add(name="paid", number=3, type=f.TYPE_BOOL, label=f.LABEL_OPTIONAL)
    pool = DescriptorPool()
    pool.Add(fdp)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    payload = order(order_id=2**40, customer_name="ada").SerializeToString()
    registry = FakeRegistry({5: {"schemaType": "PROTOBUF", "schema": base64.b64encode(fdp.SerializeToString()).decode()}})
    d = deserializer_with(registry)
    out, _ = run(d.to_json(framed(5, b"\x00" + payload), "protobuf"))
    # As Confluent's ProtobufSchemaUtils.toJson: lowerCamelCase, defaults printed, int64 as a string.
    assert out == {"orderId": str(2**40), "customerName": "ada", "paid": False}
    with pytest.raises(RecordFormatError):
        run(d.to_json(framed(5, b"\x00" + payload), "avro"))  # a Protobuf schema is not Avro
