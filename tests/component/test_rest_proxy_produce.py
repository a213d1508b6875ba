"""Producing over HTTP through the REST proxy (v3 records, records:batch and streaming; v2
topics/partitions), checked against real sockets: records are read back byte-exact with
confluent-kafka's Consumer, schema'd values decoded with confluent-kafka's deserializers over a
Zurau schema registry; bad inputs get Confluent's status and codes and the proxy goes on serving."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from zurau import EmbeddedBroker
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy
from zurau.schema_registry.embedded_registry import EmbeddedRegistry

TOPIC = "produce-topic"
STREAM_TOPIC = "stream-topic"
AVRO_TOPIC = "avro-topic"
JS_TOPIC = "jsonschema-topic"
PB_TOPIC = "protobuf-topic"
MAX_REQUEST_SIZE = 50_000

USER_AVRO = json.dumps({
    "type": "record", "name": "User", "namespace": "com.example",
    "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
               {"name": "email", "type": ["null", "string"], "default": None}],
})
PROTO = 'syntax = "proto3";\npackage demo;\nmessage Order {\n  string id = 1;\n  int64 amount = 2;\n  repeated string tags = 3;\n}\n'
JSON_SCHEMA = json.dumps({"type": "object", "title": "Point", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                          "required": ["x", "y"], "additionalProperties": False})


class Env:
    def __init__(self, broker: EmbeddedBroker, registry: EmbeddedRegistry, proxy: EmbeddedRestProxy, cluster_id: str) -> None:
        self.broker, self.registry, self.proxy, self.cluster_id = broker, registry, proxy, cluster_id
        self.http = httpx.Client(base_url=proxy.url, timeout=30)

    def records_url(self, topic: str) -> str:
        return f"/v3/clusters/{self.cluster_id}/topics/{topic}/records"

    def produce(self, topic: str, record: dict[str, Any], **kw: Any) -> httpx.Response:
        return self.http.post(self.records_url(topic), json=record, **kw)

    def read(self, topic: str, partition: int, offset: int, n: int = 1) -> list[Any]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.broker.bootstrap_servers, "group.id": "checker", "enable.auto.commit": False})
        try:
            c.assign([TopicPartition(topic, partition, offset)])
            got: list[Any] = []
            deadline = time.monotonic() + 15
            while len(got) < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append(m)
            assert len(got) == n, f"read {len(got)} of {n} records"
            return got
        finally:
            c.close()


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    from confluent_kafka.admin import AdminClient, NewTopic

    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as broker, \
            EmbeddedRegistry(broker.bootstrap_servers) as registry, \
            EmbeddedRestProxy(broker.bootstrap_servers, **{"schema.registry.url": registry.url,
                                                          "producer.max.request.size": MAX_REQUEST_SIZE}) as proxy:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for fut in admin.create_topics([NewTopic(t, 3 if t == TOPIC else 1, 1) for t in (TOPIC, STREAM_TOPIC, AVRO_TOPIC, JS_TOPIC, PB_TOPIC)]).values():
            fut.result(15)
        cluster_id = httpx.get(f"{proxy.url}/v3/clusters", timeout=10).json()["data"][0]["cluster_id"]
        e = Env(broker, registry, proxy, cluster_id)
        yield e
        e.http.close()


def _registry_client(env: Env) -> Any:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": env.registry.url})


def _ctx(topic: str, key: bool = False) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.KEY if key else MessageField.VALUE)


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _split_reports(raw: bytes) -> list[dict[str, Any]]:
    text, out, pos, dec = raw.decode(), [], 0, json.JSONDecoder()
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos < len(text):
            obj, pos = dec.raw_decode(text, pos)
            out.append(obj)
    return out


# ------------------------------------------------------------------ v3, formats without schema


def test_v3_binary_json_string_headers_timestamp_partition_read_back_byte_exact(env: Env) -> None:
    raw_key = bytes(range(256))
    r = env.produce(TOPIC, {
        "partition_id": 2,
        "headers": [{"name": "h1", "value": _b64(b"\x00\xffhv")}, {"name": "h-null", "value": None}, {"name": "h1", "value": _b64(b"again")}],
        "key": {"type": "BINARY", "data": _b64(raw_key)},
        "value": {"type": "JSON", "data": {"n": 1, "s": "é\u2028", "l": [True, None, 1.5]}},
        "timestamp": "2021-02-05T19:14:42.123Z",
    })
    assert r.status_code == 200, r.text
    rep = r.json()
    assert rep["error_code"] == 200 and rep["cluster_id"] == env.cluster_id and rep["topic_name"] == TOPIC
    assert rep["partition_id"] == 2 and rep["timestamp"] == "2021-02-05T19:14:42.123Z"
    value_bytes = '{"n":1,"s":"é\u2028","l":[true,null,1.5]}'.encode()
    assert rep["key"] == {"type": "BINARY", "size": 256} and rep["value"] == {"type": "JSON", "size": len(value_bytes)}
    (m,) = env.read(TOPIC, 2, rep["offset"])
    assert m.key() == raw_key and m.value() == value_bytes
    assert m.headers() == [("h1", b"\x00\xffhv"), ("h-null", None), ("h1", b"again")]
    assert m.timestamp() == (1, 1612552482123)

    r = env.produce(TOPIC, {"partition_id": 0, "key": {"type": "STRING", "data": "clé"}, "value": {"type": "STRING", "data": "💡 text"}})
    assert r.status_code == 200, r.text
    rep = r.json()
    (m,) = env.read(TOPIC, 0, rep["offset"])
    assert m.key() == "clé".encode() and m.value() == "💡 text".encode()
    assert abs(m.timestamp()[1] - time.time() * 1000) < 60_000

    # no key, null value: a tombstone-like record with neither
    r = env.produce(TOPIC, {"partition_id": 1, "value": {"type": "BINARY", "data": None}})
    assert r.status_code == 200, r.text
    (m,) = env.read(TOPIC, 1, r.json()["offset"])
    assert m.key() is None and m.value() is None and "key" not in r.json()


def test_v3_keyed_records_go_where_java_clients_put_them(env: Env) -> None:
    from confluent_kafka import Producer

    keys = [b"alpha", b"beta", b"gamma", b"delta", b"epsilon"]
    via_proxy = []
    for k in keys:
        r = env.produce(TOPIC, {"key": {"type": "BINARY", "data": _b64(k)}, "value": {"type": "STRING", "data": "v"}})
        assert r.status_code == 200
        via_proxy.append(r.json()["partition_id"])
    direct: dict[bytes, int] = {}
    p = Producer({"bootstrap.servers": env.broker.bootstrap_servers, "partitioner": "murmur2_random"})
    for k in keys:
        p.produce(TOPIC, key=k, value=b"v", on_delivery=lambda err, m: direct.__setitem__(m.key(), m.partition()))
    assert p.flush(15) == 0
    assert via_proxy == [direct[k] for k in keys]


# ------------------------------------------------------------------ v3 with the schema registry


def test_v3_avro_inline_then_by_id_version_latest_and_record_name(env: Env) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    r = env.produce(AVRO_TOPIC, {"value": {"type": "AVRO", "schema": USER_AVRO,
                                           "data": {"name": "ann", "age": 31, "email": {"string": "a@x"}}}})
    assert r.status_code == 200, r.text
    v = r.json()["value"]
    assert v["type"] == "AVRO" and v["subject"] == f"{AVRO_TOPIC}-value" and v["schema_version"] == 1
    schema_id = v["schema_id"]
    r2 = env.produce(AVRO_TOPIC, {"value": {"schema_id": schema_id, "data": {"name": "bob", "age": 7, "email": None}}})
    r3 = env.produce(AVRO_TOPIC, {"value": {"schema_version": 1, "data": {"name": "cy", "age": 1}}})
    r4 = env.produce(AVRO_TOPIC, {"value": {"data": {"name": "di", "age": 2}}})  # latest of <topic>-value
    for rr in (r2, r3, r4):
        assert rr.status_code == 200, rr.text
        assert rr.json()["value"]["schema_id"] == schema_id and rr.json()["value"]["schema_version"] == 1
    deser = AvroDeserializer(_registry_client(env))
    msgs = env.read(AVRO_TOPIC, 0, r.json()["offset"], 4)
    assert msgs[0].value()[:5] == b"\x00" + schema_id.to_bytes(4, "big")
    assert [deser(m.value(), _ctx(AVRO_TOPIC)) for m in msgs] == [
        {"name": "ann", "age": 31, "email": "a@x"}, {"name": "bob", "age": 7, "email": None},
        {"name": "cy", "age": 1, "email": None}, {"name": "di", "age": 2, "email": None},
    ]
    # RECORD_NAME strategy: subject is the record's full name; key side too
    r = env.produce(AVRO_TOPIC, {"key": {"type": "AVRO", "schema": '"string"', "data": "k1"},
                                 "value": {"type": "AVRO", "schema": USER_AVRO, "subject_name_strategy": "RECORD_NAME",
                                           "data": {"name": "eve", "age": 5}}})
    assert r.status_code == 200, r.text
    assert r.json()["value"]["subject"] == "com.example.User" and r.json()["key"]["subject"] == f"{AVRO_TOPIC}-key"
    (m,) = env.read(AVRO_TOPIC, 0, r.json()["offset"])
    assert AvroDeserializer(_registry_client(env))(m.key(), _ctx(AVRO_TOPIC, True)) == "k1"


def test_v3_protobuf_and_json_schema_values_decode_with_confluent_deserializers(env: Env) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from google.protobuf import message_factory

    from zurau.schema_formats.protobuf_schema import parse_protobuf

    r = env.produce(PB_TOPIC, {"partition_id": 0, "value": {"type": "PROTOBUF", "schema": PROTO,
                                                        "data": {"id": "o-1", "amount": "12345678901", "tags": ["a", "b"]}}})
    assert r.status_code == 200, r.text
    assert r.json()["value"]["type"] == "PROTOBUF"
    compiled = parse_protobuf(PROTO, [])
    order_cls = message_factory.GetMessageClass(compiled.pool().FindMessageTypeByName("demo.Order"))
    (m,) = env.read(PB_TOPIC, 0, r.json()["offset"])
    assert m.value()[5:6] == b"\x00"  # message index [0]
    order = ProtobufDeserializer(order_cls, {"use.deprecated.format": False})(m.value(), _ctx(PB_TOPIC))
    assert order.id == "o-1" and order.amount == 12345678901 and list(order.tags) == ["a", "b"]

    r = env.produce(JS_TOPIC, {"value": {"type": "JSONSCHEMA", "schema": JSON_SCHEMA, "data": {"x": 1, "y": -2}}})
    assert r.status_code == 200, r.text
    assert r.json()["value"]["subject"] == f"{JS_TOPIC}-value"
    (m,) = env.read(JS_TOPIC, 0, r.json()["offset"])
    assert JSONDeserializer(JSON_SCHEMA, schema_registry_client=_registry_client(env))(m.value(), _ctx(JS_TOPIC)) == {"x": 1, "y": -2}

    # data that does not match its schema: 422 with Confluent's JSON conversion code
    for topic, bad in (
        (AVRO_TOPIC, {"type": "AVRO", "schema": USER_AVRO, "data": {"name": "x", "age": "old"}}),
        (AVRO_TOPIC, {"type": "AVRO", "schema": USER_AVRO, "data": {"name": "x"}}),
        (AVRO_TOPIC, {"schema_version": 1, "data": {"name": "x", "age": 2**40}}),
        (PB_TOPIC, {"type": "PROTOBUF", "schema": PROTO, "data": {"id": 5, "nope": 1}}),
        (JS_TOPIC, {"type": "JSONSCHEMA", "schema": JSON_SCHEMA, "data": {"x": "1", "y": 2}}),
        (JS_TOPIC, {"data": {"x": 1}}),  # latest schema of jsonschema-topic-value
    ):
        r = env.produce(topic, {"value": bad})
        assert r.status_code == 422 and r.json()["error_code"] == 42203, r.text
    # a schema of another type than the subject's is refused by the registry: 42207
    r = env.produce(JS_TOPIC, {"value": {"type": "AVRO", "schema": '"string"', "data": "s"}})
    assert r.status_code == 422 and r.json()["error_code"] == 42207, r.text
    r = env.produce(AVRO_TOPIC, {"value": {"type": "AVRO", "schema": '{"type": "record", "name": "X", "fields": [{"name": 1}]}', "data": {}}})
    assert r.status_code == 422 and r.json()["error_code"] == 42205, r.text
    r = env.produce(AVRO_TOPIC, {"value": {"schema_id": 987654, "data": {}}})
    assert r.status_code == 422 and r.json()["error_code"] == 42207, r.text
    r = env.produce(TOPIC, {"value": {"subject": "no-such-subject", "data": 1}})
    assert r.status_code == 422 and r.json()["error_code"] == 42207, r.text


# ------------------------------------------------------------------ streaming


def test_streaming_many_records_in_one_chunked_request_reports_in_order(env: Env) -> None:
    n = 400
    bad_at = {57: {"value": {"type": "NOPE", "data": "x"}},
              58: {"value": {"type": "AVRO", "schema": USER_AVRO, "data": {"name": 1}}},
              300: {"partition_id": 9, "value": {"type": "STRING", "data": "x"}},
              301: {"value": {"type": "STRING", "data": "y" * (MAX_REQUEST_SIZE + 10)}}}

    def body() -> Iterator[bytes]:
        for i in range(n):
            rec = bad_at.get(i, {"partition_id": 0, "key": {"type": "STRING", "data": f"k{i}"}, "value": {"type": "JSON", "data": {"i": i}}})
            yield json.dumps(rec).encode() + (b"\n" if i % 2 else b"")

    r = env.http.post(env.records_url(STREAM_TOPIC), content=body(), headers={"Content-Type": "application/json"})
    assert r.status_code == 200
    reports = _split_reports(r.content)
    assert len(reports) == n
    assert reports[57]["error_code"] == 400 and reports[58]["error_code"] == 42203
    assert reports[300]["error_code"] == 40402 and reports[301]["error_code"] == 413
    good = [(i, rep) for i, rep in enumerate(reports) if i not in bad_at]
    assert all(rep["error_code"] == 200 and rep["partition_id"] == 0 for _, rep in good)
    offsets = [rep["offset"] for _, rep in good]
    assert offsets == list(range(offsets[0], offsets[0] + len(good)))  # in request order, nothing lost
    msgs = env.read(STREAM_TOPIC, 0, offsets[0], len(good))
    assert [(m.key(), json.loads(m.value())["i"]) for m in msgs] == [(f"k{i}".encode(), i) for i, _ in good]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class _ChunkedReader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.raw, self.body = sock, b"", b""

    def _more(self) -> None:
        data = self.sock.recv(65536)
        assert data, "connection closed"
        self.raw += data

    def headers(self) -> bytes:
        while b"\r\n\r\n" not in self.raw:
            self._more()
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        return head

    def next_chunk(self) -> bytes:
        while b"\r\n" not in self.raw:
            self._more()
        size_line, rest = self.raw.split(b"\r\n", 1)
        size = int(size_line, 16)
        while len(rest) < size + 2:
            self._more()
            size_line, rest = self.raw.split(b"\r\n", 1)
        self.raw = rest[size + 2:]
        return rest[:size]


def test_streaming_reports_arrive_while_the_request_is_still_open(env: Env) -> None:
    """One record sent, its report read, then the next: only a real stream can do that."""
    host, port = env.proxy.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(
            f"POST {env.records_url(STREAM_TOPIC)} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        reader = _ChunkedReader(sock)
        offsets = []
        for i in range(5):
            rec = json.dumps({"value": {"type": "STRING", "data": f"live-{i}"}}).encode()
            sock.sendall(_chunk(rec[:7]) + _chunk(rec[7:]))  # a record split across chunks
            if i == 0:
                assert reader.headers().startswith(b"HTTP/1.1 200")
            rep = json.loads(reader.next_chunk())
            assert rep["error_code"] == 200
            offsets.append(rep["offset"])
        sock.sendall(_chunk(b'{"value": {"type": "STRING", "data": "x"}} {"value": ') + _chunk(b"nul}"))  # malformed
        assert json.loads(reader.next_chunk())["error_code"] == 200
        assert json.loads(reader.next_chunk())["error_code"] == 400
        assert reader.next_chunk() == b""  # the stream ends after text that is not JSON
    assert offsets == list(range(offsets[0], offsets[0] + 5))
    assert [m.value() for m in env.read(STREAM_TOPIC, 0, offsets[0], 5)] == [f"live-{i}".encode() for i in range(5)]


def test_non_streamed_body_with_several_records_gets_several_reports(env: Env) -> None:
    body = b"".join(json.dumps({"partition_id": 0, "value": {"type": "STRING", "data": s}}).encode() for s in ("a", "b", "c"))
    r = env.http.post(env.records_url(TOPIC), content=body, headers={"Content-Type": "application/json"})
    reports = _split_reports(r.content)
    assert r.status_code == 200 and [x["error_code"] for x in reports] == [200, 200, 200]
    assert [x["offset"] for x in reports] == [reports[0]["offset"] + i for i in range(3)]


# ------------------------------------------------------------------ bad inputs and batch


def test_v3_bad_inputs_get_confluent_statuses_and_the_proxy_keeps_serving(env: Env) -> None:
    url = env.records_url(TOPIC)
    cases: list[tuple[Any, int, int]] = [
        (env.http.post(url, content=b'{"value": {"type": "STRING", "data": "x"', headers={"Content-Type": "application/json"}), 400, 400),
        (env.http.post(url, content=b"{not json}", headers={"Content-Type": "application/json"}), 400, 400),
        (env.produce(TOPIC, {"value": {"type": "XML", "data": "x"}}), 400, 400),
        (env.produce(TOPIC, {"value": {"type": "BINARY", "data": "@@@"}}), 400, 400),
        (env.produce(TOPIC, {"value": {"type": "BINARY", "data": "eA==", "schema_id": 1}}), 400, 400),
        (env.produce(TOPIC, {"headers": [{"name": "h", "value": "%%%"}], "value": {"type": "STRING", "data": "x"}}), 400, 400),
        (env.produce(TOPIC, {"timestamp": "last tuesday", "value": {"type": "STRING", "data": "x"}}), 400, 400),
        (env.produce(TOPIC, {"timestamp": "4794-12-12T19:20:52Z", "value": {"type": "STRING", "data": "x"}}), 400, 400),
        (env.produce(TOPIC, {"partition_id": 3, "value": {"type": "STRING", "data": "x"}}), 404, 40402),
        (env.produce(TOPIC, {"partition_id": -1, "value": {"type": "STRING", "data": "x"}}), 404, 40402),
        (env.produce("no-such-topic", {"value": {"type": "STRING", "data": "x"}}), 404, 40401),
        (env.http.post(f"/v3/clusters/not-this-one/topics/{TOPIC}/records", json={}), 404, 404),
        (env.produce(TOPIC, {"value": {"type": "STRING", "data": "y" * (MAX_REQUEST_SIZE + 1)}}), 413, 413),
        (env.http.post(url, content=b'{"value": {"type": "STRING", "data": "x"}}', headers={"Content-Type": "text/plain"}), 415, 415),
        (env.http.post(url, content=b"", headers={"Content-Type": "application/json"}), 422, 42206),
        (env.http.post(url, content=b"[1, 2]", headers={"Content-Type": "application/json"}), 400, 400),
    ]
    for i, (r, status, code) in enumerate(cases):
        assert (r.status_code, r.json()["error_code"]) == (status, code), (i, r.text)
        assert isinstance(r.json()["message"], str)
    r = env.produce(TOPIC, {"partition_id": 0, "value": {"type": "STRING", "data": "still here"}})
    assert r.status_code == 200
    assert env.read(TOPIC, 0, r.json()["offset"])[0].value() == b"still here"


def test_records_batch(env: Env) -> None:
    url = env.records_url(TOPIC) + ":batch"
    r = env.http.post(url, json={"entries": [
        {"id": "a1", "partition_id": 1, "value": {"type": "STRING", "data": "one"}},
        {"id": "b-2", "value": {"type": "NOPE", "data": "x"}},
        {"id": "c_3", "partition_id": 1, "key": {"type": "BINARY", "data": _b64(b"\x01")}, "value": {"type": "JSON", "data": [1]}},
    ]})
    assert r.status_code == 207, r.text
    body = r.json()
    assert [s["id"] for s in body["successes"]] == ["a1", "c_3"] and "error_code" not in body["successes"][0]
    assert body["failures"] == [{"id": "b-2", "error_code": 400, "message": body["failures"][0]["message"]}]
    first = body["successes"][0]["offset"]
    msgs = env.read(TOPIC, 1, first, 2)
    assert [(m.key(), m.value()) for m in msgs] == [(None, b"one"), (b"\x01", b"[1]")]
    for entries, code in (([{"id": "x", "value": None}, {"id": "x"}], 42208), ([], 42208), ([{"id": 5}], 42208),
                          ([{"id": str(i)} for i in range(11)], 42208), ([{"id": "bad id!"}], 42208)):
        r = env.http.post(url, json={"entries": entries})
        assert (r.status_code, r.json()["error_code"]) == (422, code), r.text


# ------------------------------------------------------------------ v2


V2 = "application/vnd.kafka.{}.v2+json"


def test_v2_binary_json_and_partition_path(env: Env) -> None:
    r = env.http.post(f"/topics/{TOPIC}", content=json.dumps({"records": [
        {"key": _b64(b"\x00k"), "value": _b64(b"\xffv"), "partition": 2}, {"value": _b64(b"plain"), "partition": 2}]}),
        headers={"Content-Type": V2.format("binary"), "Accept": "application/vnd.kafka.v2+json"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/vnd.kafka.v2+json"), r.text
    body = r.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    assert [(o["partition"], o["error_code"], o["error"]) for o in body["offsets"]] == [(2, None, None)] * 2
    msgs = env.read(TOPIC, 2, body["offsets"][0]["offset"], 2)
    assert [(m.key(), m.value()) for m in msgs] == [(b"\x00k", b"\xffv"), (None, b"plain")]

    r = env.http.post(f"/topics/{TOPIC}/partitions/1", content=json.dumps({"records": [{"key": "k", "value": {"a": [1, None]}, "partition": 0}]}),
                      headers={"Content-Type": V2.format("json"), "Accept": "application/json"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json"), r.text
    (o,) = r.json()["offsets"]
    assert o["partition"] == 1
    (m,) = env.read(TOPIC, 1, o["offset"])
    assert (m.key(), m.value()) == (b'"k"', b'{"a":[1,null]}')


def test_v2_schema_formats(env: Env) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    headers = {"Content-Type": V2.format("avro")}
    r = env.http.post(f"/topics/{AVRO_TOPIC}", headers=headers, content=json.dumps({
        "key_schema": '"string"', "value_schema": USER_AVRO,
        "records": [{"key": "k1", "value": {"name": "v2", "age": 2}}, {"key": "k2", "value": {"name": "v2b", "age": 3, "email": {"string": "e"}}}]}))
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body["key_schema_id"], int) and isinstance(body["value_schema_id"], int)
    r2 = env.http.post(f"/topics/{AVRO_TOPIC}", headers=headers, content=json.dumps({
        "value_schema_id": body["value_schema_id"], "records": [{"value": {"name": "by-id", "age": 4}}]}))
    assert r2.status_code == 200 and r2.json()["value_schema_id"] == body["value_schema_id"], r2.text
    msgs = env.read(AVRO_TOPIC, 0, body["offsets"][0]["offset"], 3)
    deser = AvroDeserializer(_registry_client(env))
    assert [deser(m.value(), _ctx(AVRO_TOPIC)) for m in msgs] == [
        {"name": "v2", "age": 2, "email": None}, {"name": "v2b", "age": 3, "email": "e"}, {"name": "by-id", "age": 4, "email": None}]
    assert AvroDeserializer(_registry_client(env))(msgs[0].key(), _ctx(AVRO_TOPIC, True)) == "k1"

    r = env.http.post(f"/topics/{JS_TOPIC}/partitions/0", headers={"Content-Type": V2.format("jsonschema")},
                      content=json.dumps({"value_schema": JSON_SCHEMA, "records": [{"value": {"x": 3, "y": 4}}]}))
    assert r.status_code == 200 and r.json()["offsets"][0]["error_code"] is None, r.text
    (m,) = env.read(JS_TOPIC, 0, r.json()["offsets"][0]["offset"])
    assert json.loads(m.value()[5:]) == {"x": 3, "y": 4} and m.value()[1:5] == r.json()["value_schema_id"].to_bytes(4, "big")
    r = env.http.post(f"/topics/{PB_TOPIC}/partitions/0", headers={"Content-Type": V2.format("protobuf")},
                      content=json.dumps({"value_schema": PROTO, "records": [{"value": {"id": "p", "amount": 3}}]}))
    assert r.status_code == 200 and r.json()["offsets"][0]["error_code"] is None, r.text

    # a value without schema, data against its schema, a wrong schema: the whole request is refused
    bad = [
        ({"records": [{"value": {"name": "n", "age": 1}}]}, 42202),
        ({"value_schema_id": body["value_schema_id"], "records": [{"key": "k", "value": {"name": "n", "age": 1}}]}, 42201),
        ({"value_schema": USER_AVRO, "records": [{"value": {"name": "ok", "age": 1}}, {"value": {"name": "n", "age": "x"}}]}, 42203),
        ({"value_schema": "{not a schema", "records": [{"value": 1}]}, 42205),
        ({"records": []}, 422),
    ]
    for payload, code in bad:
        r = env.http.post(f"/topics/{AVRO_TOPIC}", headers=headers, content=json.dumps(payload))
        assert (r.status_code, r.json()["error_code"]) == (422, code), r.text


def test_v2_bad_requests(env: Env) -> None:
    ok = json.dumps({"records": [{"value": _b64(b"x")}]})
    for kwargs, status, code in (
        ({"headers": {"Content-Type": "application/json"}}, 415, 415),
        ({"headers": {}}, 415, 415),
        ({"headers": {"Content-Type": V2.format("binary"), "Accept": "text/html"}}, 406, 406),
    ):
        r = env.http.post(f"/topics/{TOPIC}", content=ok, **kwargs)
        assert (r.status_code, r.json()["error_code"]) == (status, code), r.text
    h = {"Content-Type": V2.format("binary")}
    assert env.http.post("/topics/nope-topic", content=ok, headers=h).json()["error_code"] == 40401
    assert env.http.post(f"/topics/{TOPIC}/partitions/7", content=ok, headers=h).json()["error_code"] == 40402
    r = env.http.post(f"/topics/{TOPIC}", content=b"{oops", headers=h)
    assert (r.status_code, r.json()["error_code"]) == (400, 400)
    r = env.http.post(f"/topics/{TOPIC}", content=json.dumps({"records": [{"value": "**"}]}), headers=h)
    assert r.status_code == 400
    # a record too large for the producer is reported in its offset, as Confluent's v2 does
    r = env.http.post(f"/topics/{TOPIC}", headers=h, content=json.dumps({"records": [
        {"value": _b64(b"z" * (MAX_REQUEST_SIZE + 5))}, {"value": _b64(b"small")}]}))
    assert r.status_code == 200
    big, small = r.json()["offsets"]
    assert big["error_code"] == 50002 and big["partition"] is None and small["error_code"] is None
    assert env.http.post(f"/topics/{TOPIC}", content=ok, headers=h).status_code == 200


# ------------------------------------------------------------------ registry configuration


def test_schemas_without_a_registry_or_with_one_that_is_down(env: Env) -> None:
    with EmbeddedRestProxy(env.broker.bootstrap_servers) as bare, \
            EmbeddedRestProxy(env.broker.bootstrap_servers, **{"schema.registry.url": "http://127.0.0.1:9"}) as down:
        value = {"value": {"type": "AVRO", "schema": USER_AVRO, "data": {"name": "x", "age": 1}}}
        r = httpx.post(f"{bare.url}{env.records_url(TOPIC)}", json=value, timeout=30)
        assert (r.status_code, r.json()["error_code"]) == (422, 42206), r.text
        r = httpx.post(f"{down.url}{env.records_url(TOPIC)}", json=value, timeout=30)
        assert r.status_code == 503 and "not reachable" in r.json()["message"], r.text
        r = httpx.post(f"{bare.url}{env.records_url(TOPIC)}", json={"value": {"type": "STRING", "data": "fine"}}, timeout=30)
        assert r.status_code == 200
