"""Consuming through the REST proxy against an embedded broker and schema registry: records
written by confluent-kafka's producer (raw bytes, JSON, and Avro/JSON Schema through
confluent-kafka's serializers) read back exactly over Confluent's v2 consumer API and over
Zurau's NDJSON stream; v2 group commits seen by the group admin; instance expiry leaving the
group; the stream's backpressure (a reader that stops reading stops the fetching) and its
cleanup when a client goes away (the member leaves, no task is left); v2 metadata; and bad
input answered with Confluent's 4xx codes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.component.test_console_api import generate_proto
from tests.support.waiting import wait_for
from zurau import EmbeddedBroker, EmbeddedRegistry
from zurau.client.admin import AdminClient
from zurau.client.config import ClientConfig
from zurau.client.groups_admin import GroupAdmin, GroupDescription
from zurau.client.types import TopicPartition
from zurau.rest_proxy.embedded_rest_proxy import EmbeddedRestProxy

V2 = {"Content-Type": "application/vnd.kafka.v2+json"}
BINARY = {"Accept": "application/vnd.kafka.binary.v2+json"}
JSON_ACCEPT = {"Accept": "application/vnd.kafka.json.v2+json"}
AVRO_ACCEPT = {"Accept": "application/vnd.kafka.avro.v2+json"}
JSONSCHEMA_ACCEPT = {"Accept": "application/vnd.kafka.jsonschema.v2+json"}
FAST = {"auto.offset.reset": "earliest", "fetch.min.bytes": 1}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


@pytest.fixture(scope="module")
def registry(broker: EmbeddedBroker) -> Iterator[EmbeddedRegistry]:
    with EmbeddedRegistry(broker.bootstrap_servers) as r:
        yield r


@pytest.fixture(scope="module")
def proxy(broker: EmbeddedBroker, registry: EmbeddedRegistry) -> Iterator[EmbeddedRestProxy]:
    with EmbeddedRestProxy(broker.bootstrap_servers, **{"schema.registry.url": registry.url}) as p:
        yield p


@pytest.fixture
def http(proxy: EmbeddedRestProxy) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.url, timeout=60) as c:
        yield c


# ---------------------------------------------------------------------------- helpers
def new_topic(broker: EmbeddedBroker, partitions: int = 1) -> str:
    return broker.create_topic(f"t-{uuid.uuid4().hex[:8]}", partitions)


def produce(
    broker: EmbeddedBroker, topic: str, records: list[tuple[int, bytes | None, bytes | None]], timestamps: list[int] | None = None
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Produce ``(partition, key, value)``; returns ``(partition, offset, key, value)`` as delivered."""
    delivered: list[tuple[int, int, bytes | None, bytes | None]] = []

    def report(err: Any, msg: Any) -> None:
        assert err is None, err
        delivered.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i, (partition, key, value) in enumerate(records):
        extra = {"timestamp": timestamps[i]} if timestamps else {}
        p.produce(topic, key=key, value=value, partition=partition, on_delivery=report, **extra)
        p.poll(0)
    assert p.flush(30) == 0
    assert len(delivered) == len(records)
    return delivered


def run_admin(broker: EmbeddedBroker, fn: Any) -> Any:
    async def go() -> Any:
        async with AdminClient(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as admin:
            return await fn(GroupAdmin(admin))

    return asyncio.run(go())


def committed(broker: EmbeddedBroker, group: str) -> dict[tuple[int, int], int] | dict[TopicPartition, int]:
    return run_admin(broker, lambda ga: ga.committed_offsets(group))  # type: ignore[no-any-return]


def described(broker: EmbeddedBroker, group: str) -> GroupDescription:
    found = run_admin(broker, lambda ga: ga.describe_groups([group]))[group]
    assert isinstance(found, GroupDescription), found
    return found


def create(http: httpx.Client, group: str, **body: Any) -> str:
    r = http.post(f"/consumers/{group}", json=body, headers=V2)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/vnd.kafka.v2+json")
    return str(r.json()["base_uri"])


def read_until(http: httpx.Client, base: str, accept: dict[str, str], count: int, **params: Any) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} records"
        r = http.get(f"{base}/records", headers=accept, params={"timeout": 500, **params})
        assert r.status_code == 200, r.text
        got.extend(r.json())
    assert len(got) == count, got[count:]
    return got


def error(r: httpx.Response, status: int, code: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error_code"] == code, body
    return str(body["message"])


def b64(data: str | None) -> bytes | None:
    return None if data is None else base64.b64decode(data)


def on_loop(proxy: EmbeddedRestProxy, coro: Any) -> Any:
    loop = proxy._loop
    assert loop is not None
    return asyncio.run_coroutine_threadsafe(coro, loop).result(10)


def task_count(proxy: EmbeddedRestProxy) -> int:
    async def count() -> int:
        return len(asyncio.all_tasks()) - 1  # this coroutine's own task

    return int(on_loop(proxy, count()))


def cluster_id(proxy: EmbeddedRestProxy) -> str:
    assert proxy.server is not None and proxy.server.api is not None
    return str(on_loop(proxy, proxy.server.api.cluster_id()))


def ndjson(lines: Iterator[str], count: int) -> list[dict[str, Any]]:
    """The next ``count`` documents of a stream (an error line is a document too: callers check)."""
    out = []
    for line in lines:
        if line:
            out.append(json.loads(line))
        if len(out) == count:
            break
    return out


# ---------------------------------------------------------------------------- v2 consumers
def test_v2_binary_group_reads_exactly_and_commits(http: httpx.Client, broker: EmbeddedBroker, proxy: EmbeddedRestProxy) -> None:
    topic = new_topic(broker, partitions=2)
    records = [(i % 2, None if i == 0 else f"key-{i}".encode(), os.urandom(i * 7)) for i in range(20)]
    records.append((1, b"tombstone", None))
    sent = produce(broker, topic, records)
    group = f"g-{uuid.uuid4().hex[:8]}"
    base = create(http, group, name="c1", format="binary", **{**FAST, "auto.commit.enable": "false"})
    assert base == f"{proxy.url}/consumers/{group}/instances/c1"
    assert http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2).status_code == 204
    assert http.get(f"{base}/subscription").json() == {"topics": [topic]}

    got = read_until(http, base, BINARY, len(sent))
    assert {(r["partition"], r["offset"]): (b64(r["key"]), b64(r["value"])) for r in got} == {
        (p, o): (k, v) for p, o, k, v in sent
    }
    assert {r["topic"] for r in got} == {topic}
    for p in (0, 1):  # each partition in offset order
        offsets = [r["offset"] for r in got if r["partition"] == p]
        assert offsets == sorted(offsets)
    assigned = http.get(f"{base}/assignments").json()["partitions"]
    assert sorted((a["topic"], a["partition"]) for a in assigned) == [(topic, 0), (topic, 1)]

    ends = {p: max(o for q, o, _, _ in sent if q == p) + 1 for p in (0, 1)}
    assert committed(broker, group) == {}  # auto-commit is off
    r = http.post(f"{base}/offsets", headers=V2)  # everything read so far
    assert r.status_code == 200 and r.json() == [], r.text
    assert committed(broker, group) == {TopicPartition(topic, p): end for p, end in ends.items()}
    r = http.request("GET", f"{base}/offsets", json={"partitions": [{"topic": topic, "partition": 0}]}, headers=V2)
    assert r.json() == {"offsets": [{"topic": topic, "partition": 0, "offset": ends[0], "metadata": ""}]}

    # An explicit commit names the last record processed: offset + 1 is committed.
    r = http.post(f"{base}/offsets", json={"offsets": [{"topic": topic, "partition": 0, "offset": 2}]}, headers=V2)
    assert r.status_code == 200, r.text
    assert committed(broker, group)[TopicPartition(topic, 0)] == 3

    assert len(described(broker, group).members) == 1
    assert http.delete(base, headers=V2).status_code == 204
    assert described(broker, group).members == ()
    error(http.get(f"{base}/records", headers=BINARY), 404, 40403)


def test_v2_json_avro_and_jsonschema_read_back_exactly(
    http: httpx.Client, broker: EmbeddedBroker, registry: EmbeddedRegistry, proxy: EmbeddedRestProxy
) -> None:
    topic = new_topic(broker)
    docs: list[Any] = [{"id": 1, "name": "ünïcode ✓", "tags": ["a", "b"], "nested": {"x": None, "y": 1.5}}, [1, 2, 3], "text", 42]
    produce(broker, topic, [(0, json.dumps(i).encode(), json.dumps(d).encode()) for i, d in enumerate(docs)])
    base = create(http, f"g-{uuid.uuid4().hex[:8]}", format="json", **FAST)
    http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2)
    got = read_until(http, base, JSON_ACCEPT, len(docs))
    assert [(r["key"], r["value"]) for r in got] == list(enumerate(docs))

    sr = SchemaRegistryClient({"url": registry.url})
    user = {"type": "record", "name": "User", "namespace": "test", "fields": [
        {"name": "name", "type": "string"}, {"name": "nick", "type": ["null", "string"], "default": None},
        {"name": "blob", "type": "bytes"}, {"name": "score", "type": "double"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]}
    avro_topic = new_topic(broker)
    value_ser = AvroSerializer(sr, json.dumps(user))
    key_ser = AvroSerializer(sr, '"string"')
    users = [{"name": "ada", "nick": "a", "blob": b"\x00\xff", "score": 1.5, "kind": "A"},
             {"name": "bob", "nick": None, "blob": b"", "score": -2.0, "kind": "B"}]
    produce(broker, avro_topic, [
        (0, key_ser(u["name"], SerializationContext(avro_topic, MessageField.KEY)),
         value_ser(u, SerializationContext(avro_topic, MessageField.VALUE))) for u in users
    ] + [(0, None, None)])
    base = create(http, f"g-{uuid.uuid4().hex[:8]}", format="avro", **FAST)
    http.post(f"{base}/subscription", json={"topic_pattern": avro_topic.replace("-", "[-]")}, headers=V2)
    got = read_until(http, base, AVRO_ACCEPT, 3)
    # Avro's JSON encoding, as Confluent's proxy answers: union branches named, bytes as code points.
    expected = [{"name": "ada", "nick": {"string": "a"}, "blob": "\u0000\u00ff", "score": 1.5, "kind": "A"},
                {"name": "bob", "nick": None, "blob": "", "score": -2.0, "kind": "B"}]
    assert [(r["key"], r["value"]) for r in got] == [("ada", expected[0]), ("bob", expected[1]), (None, None)]
    assert http.get(f"{base}/subscription").json() == {"topics": [avro_topic]}

    # The same records over the stream, from the beginning.
    url = f"/v3/clusters/{cluster_id(proxy)}/topics/{avro_topic}/records:stream"
    with http.stream("GET", url, params={"format": "avro", "from": "beginning", "limit": 3}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
        lines = ndjson(r.iter_lines(), 3)
    assert [(x["key"], x["value"], x["offset"]) for x in lines] == [("ada", expected[0], 0), ("bob", expected[1], 1), (None, None, 2)]

    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}}}
    js_topic = new_topic(broker)
    js_ser = JSONSerializer(json.dumps(schema), sr)
    values = [{"id": 1, "tags": ["x"]}, {"id": 2, "tags": []}]
    produce(broker, js_topic, [(0, None, js_ser(v, SerializationContext(js_topic, MessageField.VALUE))) for v in values])
    base = create(http, f"g-{uuid.uuid4().hex[:8]}", format="jsonschema", **FAST)
    http.post(f"{base}/subscription", json={"topics": [js_topic]}, headers=V2)
    assert [r["value"] for r in read_until(http, base, JSONSCHEMA_ACCEPT, 2)] == values

    # A binary record read by an Avro instance: 408/40801 (Confluent's code), the record stays.
    produce(broker, js_topic, [(0, None, b"not avro")])
    base = create(http, f"g-{uuid.uuid4().hex[:8]}", format="avro", **FAST)
    http.post(f"{base}/assignments", json={"partitions": [{"topic": js_topic, "partition": 0}]}, headers=V2)
    http.post(f"{base}/positions", json={"offsets": [{"topic": js_topic, "partition": 0, "offset": 2}]}, headers=V2)
    for _ in range(2):
        assert "the value of" in error(http.get(f"{base}/records", headers=AVRO_ACCEPT, params={"timeout": 2000}), 408, 40801)


def test_v2_protobuf_reads_as_confluents_json_mapping(
    tmp_path: Path, http: httpx.Client, broker: EmbeddedBroker, registry: EmbeddedRegistry
) -> None:
    pkg = f"p{uuid.uuid4().hex[:6]}"
    files = {f"{pkg}/order.proto": (
        f'syntax = "proto3";\npackage {pkg};\nimport "google/protobuf/timestamp.proto";\n'
        "message Order { string full_name = 1; int64 order_id = 2; bool paid = 3;\n"
        "  google.protobuf.Timestamp placed = 4; repeated string item_codes = 5;\n"
        "  message Line { string sku = 1; int32 qty = 2; } }\n"
    )}
    mod = generate_proto(tmp_path, files, f"{pkg}.order_pb2")
    topic = new_topic(broker)
    sr = SchemaRegistryClient({"url": registry.url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    order = mod.Order(full_name="ada", order_id=2**40, item_codes=["a", "b"])
    order.placed.seconds = 1_700_000_000
    payloads = [
        ProtobufSerializer(mod.Order, sr, {"use.deprecated.format": False})(order, ctx),
        ProtobufSerializer(mod.Order.Line, sr, {"use.deprecated.format": False})(mod.Order.Line(sku="x"), ctx),
    ]
    produce(broker, topic, [(0, None, v) for v in payloads])
    base = create(http, f"g-{uuid.uuid4().hex[:8]}", format="protobuf", **FAST)
    http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2)
    got = read_until(http, base, {"Accept": "application/vnd.kafka.protobuf.v2+json"}, 2)
    # Protobuf's JSON mapping with every field, as Confluent's proxy prints it: lowerCamelCase
    # names, fields at their default value included, 64-bit integers as strings.
    assert [r["value"] for r in got] == [
        {"fullName": "ada", "orderId": str(2**40), "paid": False, "placed": "2023-11-14T22:13:20Z", "itemCodes": ["a", "b"]},
        {"sku": "x", "qty": 0},
    ]
    http.delete(base)


def test_v2_assign_seek_positions_and_byte_budget(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(broker, partitions=2)
    t0 = 1_700_000_000_000
    sent = produce(broker, topic, [(0, None, bytes([i]) * 100) for i in range(10)], [t0 + i * 1000 for i in range(10)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    base = create(http, group, **{**FAST, "fetch.min.bytes": 250})  # a read returns past 250 bytes
    assert http.post(f"{base}/assignments", json={"partitions": [{"topic": topic, "partition": 0}]}, headers=V2).status_code == 204
    assert http.get(f"{base}/assignments").json() == {"partitions": [{"topic": topic, "partition": 0}]}
    assert http.get(f"{base}/subscription").json() == {"topics": []}

    # max_bytes: records are 100 bytes; a read stops before the record reaching the budget, which comes next.
    first = http.get(f"{base}/records", headers=BINARY, params={"max_bytes": 250, "timeout": 3000}).json()
    assert [r["offset"] for r in first] == [0, 1]
    nxt = http.get(f"{base}/records", headers=BINARY, params={"max_bytes": 150, "timeout": 3000}).json()
    assert [r["offset"] for r in nxt] == [2]

    seek = {"offsets": [{"topic": topic, "partition": 0, "offset": 7}]}
    assert http.post(f"{base}/positions", json=seek, headers=V2).status_code == 204
    got = read_until(http, base, BINARY, 3)
    assert [(r["offset"], b64(r["value"])) for r in got] == [(o, v) for _, o, _, v in sent[7:]]

    assert http.post(f"{base}/positions/beginning", json={"partitions": [{"topic": topic, "partition": 0}]}, headers=V2).status_code == 204
    assert read_until(http, base, BINARY, 10)[0]["offset"] == 0
    assert http.post(f"{base}/positions/end", json={"partitions": []}, headers=V2).status_code == 204
    assert http.get(f"{base}/records", headers=BINARY, params={"timeout": 300}).json() == []

    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((t0 + 4000) / 1000)) + ".000Z"
    ts = {"timestamps": [{"topic": topic, "partition": 0, "timestamp": when}]}
    assert http.post(f"{base}/positions", json=ts, headers=V2).status_code == 204
    assert read_until(http, base, BINARY, 6)[0]["offset"] == 4

    # Commits of an assigned (group-less member) instance land in the group too.
    http.post(f"{base}/offsets", json={"offsets": [{"topic": topic, "partition": 0, "offset": 5}]}, headers=V2)
    assert committed(broker, group) == {TopicPartition(topic, 0): 6}

    # Subscribing while assigned, or seeking a partition not assigned: 409/40903.
    error(http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2), 409, 40903)
    unassigned = {"offsets": [{"topic": topic, "partition": 1, "offset": 0}]}
    assert "No current assignment" in error(http.post(f"{base}/positions", json=unassigned, headers=V2), 409, 40903)
    http.delete(base)


def test_v2_bad_inputs_get_confluents_4xx(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    base = create(http, group, name="dup", format="json")
    assert "already exists" in error(http.post(f"/consumers/{group}", json={"name": "dup"}, headers=V2), 409, 40902)
    missing = f"/consumers/{group}/instances/nope"
    for method, path in [("GET", "/records"), ("GET", "/subscription"), ("POST", "/offsets"), ("GET", "/assignments"),
                         ("DELETE", "/subscription"), ("DELETE", "")]:
        error(http.request(method, missing + path, headers=V2), 404, 40403)
    error(http.get("/consumers/other-group/instances/dup/records", headers=JSON_ACCEPT), 404, 40403)

    # Accept: another Kafka format than the instance's, or nothing the records come in.
    error(http.get(f"{base}/records", headers=BINARY), 406, 40601)
    error(http.get(f"{base}/records", headers={"Accept": "application/vnd.kafka.v2+json"}), 406, 40601)
    error(http.get(f"{base}/records", headers={"Accept": "text/plain"}), 406, 406)
    # A wildcard takes the instance's format; reading before subscribing is Kafka's illegal state.
    assert "not subscribed" in error(http.get(f"{base}/records", headers={"Accept": "*/*"}), 409, 40903)

    # Instance settings and bodies.
    error(http.post(f"/consumers/{group}", json={"format": "xml"}, headers=V2), 422, 42200)
    error(http.post(f"/consumers/{group}", json={"name": "a/b"}, headers=V2), 422, 42200)
    error(http.post(f"/consumers/{group}", json={"name": 7}, headers=V2), 422, 42200)
    error(http.post(f"/consumers/{group}", json={"auto.offset.reset": "smallest"}, headers=V2), 422, 42204)
    error(http.post(f"/consumers/{group}", json={"fetch.min.bytes": -5}, headers=V2), 400, 40001)
    error(http.post(f"/consumers/{group}", content=b"{not json", headers=V2), 400, 400)
    error(http.post(f"/consumers/{group}", content=b"[]", headers=V2), 422, 42200)
    error(http.post(f"/consumers/{group}", content=b"{}", headers={"Content-Type": "text/plain"}), 415, 415)
    error(http.post(f"{base}/subscription", json={}, headers=V2), 422, 42200)
    error(http.post(f"{base}/subscription", json={"topics": "t"}, headers=V2), 422, 42200)
    error(http.post(f"{base}/subscription", json={"topic_pattern": "("}, headers=V2), 422, 42200)
    error(http.post(f"{base}/assignments", json={"partitions": [{"topic": topic, "partition": -1}]}, headers=V2), 400, 400)
    error(http.post(f"{base}/assignments", json={"partitions": [{"topic": topic}]}, headers=V2), 422, 42200)
    http.post(f"{base}/assignments", json={"partitions": [{"topic": topic, "partition": 0}]}, headers=V2)
    error(http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2), 409, 40903)

    # Offsets: negative, not numbers, beyond int64; the committed offsets need partitions.
    for offsets in ([{"topic": topic, "partition": 0, "offset": -1}], [{"topic": topic, "partition": 0, "offset": 2**63}]):
        error(http.post(f"{base}/positions", json={"offsets": offsets}, headers=V2), 400, 400)
        error(http.post(f"{base}/offsets", json={"offsets": offsets}, headers=V2), 400, 400)
    error(http.post(f"{base}/offsets", json={"offsets": [{"topic": topic, "partition": 0, "offset": "x"}]}, headers=V2), 400, 400)
    error(http.post(f"{base}/positions", json={"timestamps": [{"topic": topic, "partition": 0, "timestamp": "soon"}]}, headers=V2), 422, 42200)
    error(http.request("GET", f"{base}/offsets", headers=V2), 404, 40402)
    error(http.get(f"{base}/records", headers=JSON_ACCEPT, params={"timeout": "abc"}), 400, 400)
    assert committed(broker, group) == {}  # nothing refused reached the group
    assert http.get(f"{base}/assignments").json() == {"partitions": [{"topic": topic, "partition": 0}]}  # still serving
    http.delete(base)


def test_v2_instances_expire_and_leave_their_group(broker: EmbeddedBroker) -> None:
    topic = new_topic(broker)
    produce(broker, topic, [(0, None, b"x")])
    with EmbeddedRestProxy(broker.bootstrap_servers, consumer_instance_timeout_ms=1000, host_name="proxy.test") as proxy, \
            httpx.Client(base_url=proxy.url, timeout=30) as http:
        group = f"g-{uuid.uuid4().hex[:8]}"
        uri = create(http, group, **FAST)
        port = proxy.url.rsplit(":", 1)[1]
        assert uri.startswith(f"http://proxy.test:{port}/consumers/{group}/instances/rest-consumer-"), uri  # host.name
        base = uri.replace("proxy.test", "127.0.0.1")
        http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2)
        assert len(read_until(http, base, BINARY, 1)) == 1
        assert len(described(broker, group).members) == 1
        for _ in range(4):  # being used keeps it alive past the timeout
            time.sleep(0.4)
            assert http.get(f"{base}/assignments").status_code == 200
        wait_for(lambda: described(broker, group).members == (), 15, "the expired instance leaving its group")
        error(http.get(f"{base}/records", headers=BINARY), 404, 40403)
        assert proxy.server is not None and proxy.server.api is not None
        assert not proxy.server.api.services["v2_consumer_instances"].instances

        # Stopping the proxy closes the instances it still has: they leave their group.
        other = f"g-{uuid.uuid4().hex[:8]}"
        base = create(http, other, **FAST).replace("proxy.test", "127.0.0.1")
        http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2)
        read_until(http, base, BINARY, 1)
        assert len(described(broker, other).members) == 1
    assert described(broker, other).members == ()


def test_v2_metadata(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(broker, partitions=3)
    assert topic in http.get("/topics").json()
    t = http.get(f"/topics/{topic}").json()
    assert t["name"] == topic and t["configs"]["cleanup.policy"] == "delete"
    assert [p["partition"] for p in t["partitions"]] == [0, 1, 2]
    assert t["partitions"][0]["replicas"] == [{"broker": 1, "leader": True, "in_sync": True}]
    assert http.get(f"/topics/{topic}/partitions").json() == t["partitions"]
    assert http.get(f"/topics/{topic}/partitions/2").json() == t["partitions"][2]
    produce(broker, topic, [(1, None, b"a"), (1, None, b"b")])
    assert http.get(f"/topics/{topic}/partitions/1/offsets").json() == {"beginning_offset": 0, "end_offset": 2}
    assert http.get("/brokers").json() == {"brokers": [1]}
    error(http.get("/topics/no-such-topic"), 404, 40401)
    error(http.get("/topics/no-such-topic/partitions"), 404, 40401)
    error(http.get(f"/topics/{topic}/partitions/3"), 404, 40402)
    error(http.get(f"/topics/{topic}/partitions/x"), 404, 40402)


# ---------------------------------------------------------------------------- streaming
def test_stream_with_a_group_reads_exactly_and_commits_as_it_goes(
    http: httpx.Client, broker: EmbeddedBroker, proxy: EmbeddedRestProxy
) -> None:
    topic = new_topic(broker, partitions=3)
    sent = produce(broker, topic, [(i % 3, json.dumps(f"k{i}").encode(), json.dumps({"i": i}).encode()) for i in range(30)])
    group = f"s-{uuid.uuid4().hex[:8]}"
    url = f"/v3/clusters/{cluster_id(proxy)}/topics/{topic}/records:stream"
    params = {"group": group, "auto.offset.reset": "earliest", "format": "json", "limit": 30}
    with http.stream("GET", url, params=params) as r:
        assert r.status_code == 200, r.read()
        lines = ndjson(r.iter_lines(), 30)
    assert {(x["partition"], x["offset"]): (x["key"], x["value"]) for x in lines} == {
        (p, o): (json.loads(k or b""), json.loads(v or b"")) for p, o, k, v in sent
    }
    assert all(x["topic"] == topic and x["timestamp_type"] == "CREATE_TIME" and x["headers"] == [] for x in lines)
    ends = {TopicPartition(topic, p): max(o for q, o, _, _ in sent if q == p) + 1 for p in range(3)}
    wait_for(lambda: committed(broker, group) == ends, 10, "the stream's commits")
    wait_for(lambda: described(broker, group).members == (), 10, "the finished stream leaving its group")

    more = produce(broker, topic, [(0, None, b'"late"'), (2, None, b'"later"')])
    with http.stream("GET", url, params={**params, "limit": 2}) as r:
        again = ndjson(r.iter_lines(), 2)
    assert sorted((x["partition"], x["offset"], x["value"]) for x in again) == sorted(
        (p, o, json.loads(v or b"")) for p, o, _, v in more
    )


def test_stream_from_explicit_positions_and_bad_queries(
    http: httpx.Client, broker: EmbeddedBroker, proxy: EmbeddedRestProxy
) -> None:
    topic = new_topic(broker, partitions=2)
    t0 = 1_700_000_000_000
    sent = produce(broker, topic, [(0, None, f"v{i}".encode()) for i in range(10)], [t0 + i for i in range(10)])
    url = f"/v3/clusters/{cluster_id(proxy)}/topics/{topic}/records:stream"

    def offsets(**params: Any) -> list[tuple[int, bytes | None]]:
        with http.stream("GET", url, params=params) as r:
            assert r.status_code == 200, r.read()
            return [(x["offset"], b64(x["value"])) for x in ndjson(r.iter_lines(), int(params["limit"]))]

    assert offsets(partition=0, offset=5, limit=3) == [(o, v) for _, o, _, v in sent[5:8]]
    assert offsets(**{"from": "beginning", "limit": 2}) == [(0, b"v0"), (1, b"v1")]
    assert offsets(**{"from": "timestamp", "timestamp": t0 + 8, "limit": 2}) == [(8, b"v8"), (9, b"v9")]

    cid = cluster_id(proxy)
    bad = [
        ({"offset": 3}, 400, 400),
        ({"partition": 0, "offset": 11}, 400, 400),
        ({"partition": 0, "offset": -1}, 400, 400),
        ({"partition": 9}, 404, 40402),
        ({"from": "yesterday"}, 400, 400),
        ({"from": "timestamp"}, 400, 400),
        ({"group": "g", "partition": 0}, 400, 400),
        ({"format": "xml"}, 422, 42200),
        ({"limit": 0}, 400, 400),
    ]
    for params, status, code in bad:
        error(http.get(url, params=params), status, code)
    error(http.get(f"/v3/clusters/{cid}/topics/no-such-topic/records:stream"), 404, 40401)
    error(http.get(f"/v3/clusters/not-{cid}/topics/{topic}/records:stream"), 404, 404)


@pytest.fixture(scope="module")
def stream_proxy(broker: EmbeddedBroker) -> Iterator[EmbeddedRestProxy]:
    """A proxy of their own for the tests that count the proxy's tasks and streams."""
    with EmbeddedRestProxy(broker.bootstrap_servers) as p:
        yield p


def streams_of(proxy: EmbeddedRestProxy) -> Any:
    assert proxy.server is not None and proxy.server.api is not None
    return proxy.server.api.services["record_streams"]


def test_stream_backpressure_stops_the_fetching(broker: EmbeddedBroker, stream_proxy: EmbeddedRestProxy) -> None:
    topic = new_topic(broker)
    value = os.urandom(8192)
    total = 2500  # about 27 MB of NDJSON: far more than the socket buffers hold
    produce(broker, topic, [(0, None, value)] * total)
    path = f"/v3/clusters/{cluster_id(stream_proxy)}/topics/{topic}/records:stream?from=beginning"
    assert stream_proxy.server is not None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16_384)
    sock.connect(("127.0.0.1", stream_proxy.server.port))
    try:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: proxy\r\n\r\n".encode())
        head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 200") and b"application/x-ndjson" in head, head[:300]
        stream = wait_for(lambda: next(iter(streams_of(stream_proxy).active), None), 10, "the open stream")
        # The reader stops reading: the stream stalls once the socket buffers are full.
        samples = [(-1, -1)]
        while True:
            time.sleep(0.5)
            samples.append((stream.records_fetched, stream.records_sent))
            if samples[-1] == samples[-2]:
                break
            assert len(samples) < 40, samples
        time.sleep(1.0)
        assert (stream.records_fetched, stream.records_sent) == samples[-1], "the stream kept fetching"
        fetched, written = samples[-1]
        assert 0 < written < total // 2, samples
        # Read ahead at most one fetch (1 MiB) and one chunk of lines beyond what was written.
        assert fetched - written <= (1_048_576 + 65_536) // len(value) + 2, samples
    finally:
        sock.close()
    wait_for(lambda: not streams_of(stream_proxy).active, 10, "the stream closing after the client went away")
    assert stream.consumer._closed


def test_stream_client_going_away_leaves_the_group_and_no_task(broker: EmbeddedBroker, stream_proxy: EmbeddedRestProxy) -> None:
    topic = new_topic(broker, partitions=2)
    produce(broker, topic, [(i % 2, None, b"x" * 100) for i in range(50)])
    url = f"/v3/clusters/{cluster_id(stream_proxy)}/topics/{topic}/records:stream"
    with httpx.Client(base_url=stream_proxy.url, timeout=30) as http:
        with http.stream("GET", url, params={"from": "beginning", "limit": 5}) as r:  # warm the proxy's own clients
            assert len(ndjson(r.iter_lines(), 5)) == 5
        wait_for(lambda: not streams_of(stream_proxy).active, 10, "the finished stream closing")
        baseline = task_count(stream_proxy)

        group = f"s-{uuid.uuid4().hex[:8]}"
        with http.stream("GET", url, params={"group": group, "auto.offset.reset": "earliest"}) as r:
            lines = r.iter_lines()  # kept: a dropped iterator closes the response, and the connection
            assert len(ndjson(lines, 3)) == 3  # mid-stream: 47 more records are on their way
            assert len(described(broker, group).members) == 1
            assert task_count(stream_proxy) > baseline
        # The response was closed unread: the connection is gone.
        wait_for(lambda: not streams_of(stream_proxy).active, 10, "the stream closing")
        wait_for(lambda: described(broker, group).members == (), 10, "the stream's member leaving")
        wait_for(lambda: task_count(stream_proxy) == baseline, 10, "the stream's tasks ending")

        # An idle stream (nothing to send) notices the client leaving too.
        idle = f"s-{uuid.uuid4().hex[:8]}"
        with http.stream("GET", url, params={"group": idle}) as r:
            assert r.status_code == 200
            wait_for(lambda: len(described(broker, idle).members) == 1, 10, "the idle stream joining")
        wait_for(lambda: described(broker, idle).members == (), 10, "the idle stream's member leaving")
        wait_for(lambda: task_count(stream_proxy) == baseline, 10, "the idle stream's tasks ending")
