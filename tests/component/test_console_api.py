"""The console's JSON API against an embedded broker and schema registry, checked with the real
clients (confluent-kafka's producer, consumer, admin client and Avro serializer): overview,
topics and configs, the message browser and its bounds, produce, consumer-group lag and resets,
Avro decoding and schema diffs, and bad input that gets a clear error while the console keeps
serving."""

from __future__ import annotations

import importlib
import json
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from zurau import EmbeddedBroker, EmbeddedRegistry
from zurau.console.embedded_console import EmbeddedConsole


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        yield b


@pytest.fixture(scope="module")
def registry(broker: EmbeddedBroker) -> Iterator[EmbeddedRegistry]:
    with EmbeddedRegistry(broker.bootstrap_servers) as r:
        yield r


@pytest.fixture(scope="module")
def console(broker: EmbeddedBroker, registry: EmbeddedRegistry) -> Iterator[EmbeddedConsole]:
    with EmbeddedConsole(broker.bootstrap_servers, registry_url=registry.url, lag_sample_interval=0.2) as c:
        yield c


@pytest.fixture
def http(console: EmbeddedConsole) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=console.url, timeout=60) as c:
        yield c


def new_topic(http: httpx.Client, partitions: int = 3, **configs: str) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    r = http.post("/api/topics", json={"name": name, "partitions": partitions, "replication_factor": 1, "configs": configs})
    assert r.status_code == 200, r.text
    return name


def produce(broker: EmbeddedBroker, topic: str, records: list[tuple[int, bytes | None, bytes | None, list]]) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for partition, key, value, headers in records:
        p.produce(topic, key=key, value=value, partition=partition, headers=headers)
    assert p.flush(30) == 0


def error_of(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    return r.json()["error"]


def test_overview_counts_partitions_and_disk(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(http, partitions=4)
    produce(broker, topic, [(p, None, b"x" * 100, []) for p in range(4)])
    o = http.get("/api/overview").json()
    assert [b["id"] for b in o["brokers"]] == [1] and o["controller"] == 1 and o["brokers"][0]["controller"]
    assert o["under_replicated"] == 0 and o["offline"] == 0
    every = http.get("/api/topics").json()["topics"]
    assert o["partitions"] == sum(t["partitions"] for t in every)
    (d,) = o["disk"]
    assert d["error"] is None and d["replicas"] >= 4 and d["size_bytes"] >= 400
    assert d["total_bytes"] >= d["usable_bytes"] > 0


def test_topics_search_detail_configs_and_delete(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(http, partitions=2, **{"cleanup.policy": "delete"})
    produce(broker, topic, [(0, None, b"a", [])] * 3 + [(1, None, b"b", [])] * 5)
    found = http.get("/api/topics", params={"search": topic[2:].upper()}).json()["topics"]
    assert [t["name"] for t in found] == [topic] and found[0]["messages"] == 8
    assert http.get("/api/topics", params={"search": "no-such-" + topic}).json()["topics"] == []

    t = http.get(f"/api/topics/{topic}").json()
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"], p["log_start_offset"], p["log_end_offset"]) for p in t["partitions"]] == [
        (0, 1, [1], [1], 0, 3),
        (1, 1, [1], [1], 0, 5),
    ]
    # Not tiered: no tiers asked (a tiered topic's are in test_tiered_storage_ops.py).
    assert t["remote_storage"] is False
    assert {(p["local_log_start_offset"], p["highest_offset_in_remote"], p["local_size"]) for p in t["partitions"]} == {
        (None, None, None)
    }

    r = http.patch(f"/api/topics/{topic}/configs", json={"set": {"retention.ms": "3600000"}})
    assert r.status_code == 200, r.text
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([res])[res].result(30)
    assert described["retention.ms"].value == "3600000"
    assert described["cleanup.policy"].value == "delete"

    assert "retention.ms" in error_of(http.patch(f"/api/topics/{topic}/configs", json={"set": {"retention.ms": "soon"}}), 400)
    assert http.patch(f"/api/topics/{topic}/configs", json={"delete": ["retention.ms"]}).status_code == 200
    described = admin.describe_configs([res])[res].result(30)
    assert described["retention.ms"].value == "604800000" and described["retention.ms"].is_default

    assert "already exists" in error_of(http.post("/api/topics", json={"name": topic, "partitions": 1}), 409)
    assert "not a valid topic name" in error_of(http.post("/api/topics", json={"name": "bad/name"}), 400)
    assert http.delete(f"/api/topics/{topic}").json() == {"deleted": topic}
    deadline = time.monotonic() + 10
    while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "does not exist" in error_of(http.get(f"/api/topics/{topic}"), 404)
    assert "does not exist" in error_of(http.get(f"/api/topics/{topic}/messages", params={"start": "beginning"}), 404)
    assert http.get("/api/overview").status_code == 200  # still serving


def test_browse_filters_positions_and_bounds(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(http, partitions=3)
    records = []
    for i in range(300):
        kind = b"heartbeat" if i % 10 else b"change"
        value = json.dumps({"n": i, "op": "c" if i % 3 == 0 else "u"}).encode()
        records.append((i % 3, f"k{i}".encode(), value, [("kind", kind)]))
    produce(broker, topic, records)

    def browse(**params: object) -> dict:
        r = http.get(f"/api/topics/{topic}/messages", params={"start": "beginning", **params})
        assert r.status_code == 200, r.text
        return r.json()

    r = browse(filter='headers.kind != "heartbeat" and value.n >= 100', limit=500)
    assert sorted(m["value"]["data"]["n"] for m in r["records"]) == list(range(100, 300, 10))
    assert r["scanned"] == 300 and r["stopped"] == "end"
    first = r["records"][0]
    assert first["key"] == {"encoding": "string", "data": f"k{first['value']['data']['n']}"}
    assert first["headers"] == [{"key": "kind", "value": "change"}] and first["value"]["encoding"] == "json"

    r = browse(partition=1, limit=5)
    assert [(m["partition"], m["offset"]) for m in r["records"]] == [(1, o) for o in range(5)]
    assert r["stopped"] == "limit"
    r = browse(partition=2, start="end", limit=3)
    assert [m["offset"] for m in r["records"]] == [97, 98, 99]
    r = browse(partition=0, start="offset", offset=95)
    assert [m["offset"] for m in r["records"]] == [95, 96, 97, 98, 99]
    later = r["records"][0]["timestamp"]
    r = browse(start="timestamp", timestamp=later + 10**9)
    assert r["records"] == [] and r["scanned"] == 0
    r = browse(start="timestamp", timestamp=0, partition=0, limit=1)
    assert r["records"][0]["offset"] == 0

    r = browse(filter="offset < 0", max_scan=120)  # bounded: stops after max_scan records
    assert r["stopped"] == "max_scan" and r["scanned"] == 120 and r["records"] == []
    resume = {p["partition"]: p["resume_at"] for p in r["partitions"]}
    assert sum(resume.values()) == 120

    r = browse(filter='value.n / 0 == 1', limit=10)
    assert r["records"] == [] and r["filter_errors"] == 300 and "ZeroDivisionError" in r["filter_first_error"]
    r = browse(value_format="hex", partition=0, limit=1)
    assert r["records"][0]["value"] == {"encoding": "hex", "data": records[0][2].hex()}

    assert "syntax error" in error_of(http.get(f"/api/topics/{topic}/messages", params={"filter": "value.n >"}), 400)
    assert "not allowed" in error_of(http.get(f"/api/topics/{topic}/messages", params={"filter": "key.__class__"}), 400)
    msg = error_of(
        http.get(f"/api/topics/{topic}/messages", params={"start": "offset", "offset": 5000, "partition": 0}), 400
    )
    assert "offset 5000 is beyond the log" in msg and "0 to 99" in msg
    assert "beyond the log of every partition" in error_of(
        http.get(f"/api/topics/{topic}/messages", params={"start": "offset", "offset": 100}), 400
    )
    assert "has no partition 7" in error_of(http.get(f"/api/topics/{topic}/messages", params={"partition": 7}), 404)
    assert "max_scan must be between" in error_of(http.get(f"/api/topics/{topic}/messages", params={"max_scan": 0}), 400)
    assert "whole number" in error_of(http.get(f"/api/topics/{topic}/messages", params={"offset": "x"}), 400)


def test_produce_from_the_api(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(http, partitions=2)
    r = http.post(
        f"/api/topics/{topic}/messages",
        json={"key": "user-1", "value": {"a": 1}, "encoding": "json", "partition": 1, "headers": [{"key": "src", "value": "console"}]},
    )
    assert r.status_code == 200, r.text
    assert r.json()["partition"] == 1 and r.json()["offset"] == 0
    assert http.post(f"/api/topics/{topic}/messages", json={"value": "00ff", "encoding": "hex", "partition": 0}).status_code == 200
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g-" + topic, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 1, 0)])
        m = c.poll(20)
        assert m is not None and m.error() is None
        assert (m.key(), json.loads(m.value()), m.headers()) == (b"user-1", {"a": 1}, [("src", b"console")])
        c.assign([TopicPartition(topic, 0, 0)])
        m = c.poll(20)
        assert m is not None and m.value() == b"\x00\xff"
    finally:
        c.close()
    assert "not hex" in error_of(http.post(f"/api/topics/{topic}/messages", json={"value": "zz", "encoding": "hex"}), 400)
    assert "has no partition 9" in error_of(http.post(f"/api/topics/{topic}/messages", json={"value": "v", "partition": 9}), 404)
    assert "not JSON" in error_of(http.post(f"/api/topics/{topic}/messages", content=b"{nope"), 400)


def test_group_lag_history_and_reset(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(http, partitions=2)
    produce(broker, topic, [(i % 2, None, b"v%d" % i, []) for i in range(100)])
    group = "g-" + topic
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 20), TopicPartition(topic, 1, 10)], asynchronous=False)
    finally:
        c.close()
    listed = {g["group"]: g for g in http.get("/api/groups").json()["groups"]}
    assert listed[group]["state"] == "Empty"
    g = http.get(f"/api/groups/{group}").json()
    assert [(r["partition"], r["committed"], r["log_end"], r["lag"]) for r in g["offsets"]] == [(0, 20, 50, 30), (1, 10, 50, 40)]
    assert g["total_lag"] == 70

    http.get(f"/api/groups/{group}/lag-history")
    deadline = time.monotonic() + 10
    points: list = []
    while len(points) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        points = http.get(f"/api/groups/{group}/lag-history").json()["points"]
    assert len(points) >= 2 and points[-1]["total"] == 70
    assert points[-1]["partitions"] == {f"{topic}-0": 30, f"{topic}-1": 40}

    plan = http.post(f"/api/groups/{group}/reset-offsets", json={"topics": [topic], "mode": "earliest"}).json()
    assert plan["dry_run"] and not plan["applied"]
    assert [(p["partition"], p["current"], p["new"]) for p in plan["plan"]] == [(0, 20, 0), (1, 10, 0)]
    assert http.get(f"/api/groups/{group}").json()["total_lag"] == 70  # a dry run changes nothing
    plan = http.post(f"/api/groups/{group}/reset-offsets", json={"topics": [topic], "mode": "offset", "value": 500}).json()
    assert [p["new"] for p in plan["plan"]] == [50, 50] and all(p["clamped"] for p in plan["plan"])

    r = http.post(f"/api/groups/{group}/reset-offsets", json={"topics": [topic], "mode": "offset", "value": 45, "dry_run": False})
    assert r.status_code == 200 and r.json()["applied"]
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=20)
        assert [tp.offset for tp in committed] == [45, 45]
    finally:
        c.close()
    assert "mode must be one of" in error_of(http.post(f"/api/groups/{group}/reset-offsets", json={"mode": "sideways"}), 400)
    assert "does not exist" in error_of(http.get("/api/groups/no-such-group-" + topic), 404)


def test_reset_refused_while_the_group_has_members(http: httpx.Client, broker: EmbeddedBroker) -> None:
    topic = new_topic(http, partitions=1)
    produce(broker, topic, [(0, None, b"x", [])])
    group = "live-" + topic
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 20
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        g = http.get(f"/api/groups/{group}").json()
        assert g["state"] == "Stable" and g["members"][0]["assignment"] == [{"topic": topic, "partition": 0}]
        msg = error_of(
            http.post(f"/api/groups/{group}/reset-offsets", json={"topics": [topic], "mode": "earliest", "dry_run": False}), 409
        )
        assert "can only be reset if the group" in msg and "Stable" in msg
    finally:
        c.close()


def test_avro_records_decode_through_the_registry_and_versions_diff(
    http: httpx.Client, broker: EmbeddedBroker, registry: EmbeddedRegistry
) -> None:
    topic = new_topic(http, partitions=1)
    sr = SchemaRegistryClient({"url": registry.url})
    v1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
    v2 = {"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}]}
    subject = f"{topic}-value"
    sr.register_schema(subject, Schema(json.dumps(v1), "AVRO"))
    ser = AvroSerializer(sr, json.dumps(v2), conf={"auto.register.schemas": True})
    payload = ser({"name": "ada", "age": 36}, SerializationContext(topic, MessageField.VALUE))
    produce(broker, topic, [(0, b"u1", payload, [])])

    r = http.get(f"/api/topics/{topic}/messages", params={"start": "beginning", "filter": 'value.name == "ada" and value.age > 30'})
    (m,) = r.json()["records"]
    assert m["value"]["encoding"] == "avro" and m["value"]["data"] == {"name": "ada", "age": 36}
    assert m["value"]["schema_id"] == sr.get_latest_version(subject).schema_id

    subjects = {s["subject"]: s for s in http.get("/api/schemas/subjects").json()["subjects"]}
    assert subjects[subject]["versions"] == [1, 2]
    d = http.get(f"/api/schemas/subjects/{subject}/diff", params={"from": 1, "to": 2}).json()
    assert d["added"] >= 1 and any('"age"' in ln and ln.startswith("+") for ln in d["diff"])
    assert http.get(f"/api/schemas/subjects/{subject}").json()["latest"]["version"] == 2
    assert "not found" in error_of(http.get("/api/schemas/subjects/nope-subject"), 404).lower()


def generate_proto(tmp_path: Path, files: dict[str, str], module: str) -> ModuleType:
    """Compile .proto files with protoc (grpcio-tools) into Python modules and import ``module``."""
    import grpc_tools
    from grpc_tools import protoc

    root = tmp_path / f"gen_{uuid.uuid4().hex[:8]}"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    assert protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={root}", *files]) == 0
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(root))


def test_protobuf_records_decode_with_references_and_nested_types(
    tmp_path: Path, http: httpx.Client, broker: EmbeddedBroker, registry: EmbeddedRegistry
) -> None:
    topic = new_topic(http, partitions=1)
    pkg = f"p{uuid.uuid4().hex[:6]}"
    files = {
        f"{pkg}/address.proto": f'syntax = "proto3";\npackage {pkg};\nmessage Address {{ string city = 1; }}\n',
        f"{pkg}/customer.proto": (
            f'syntax = "proto3";\npackage {pkg};\nimport "{pkg}/address.proto";\n'
            'import "google/protobuf/timestamp.proto";\n'
            "message Customer { string name = 1; Address home = 2; google.protobuf.Timestamp since = 3;\n"
            "  message Note { string text = 1; int64 stars = 2; } }\n"
        ),
    }
    mod = generate_proto(tmp_path, files, f"{pkg}.customer_pb2")
    sr = SchemaRegistryClient({"url": registry.url})
    customer = mod.Customer(name="ada")
    customer.home.city = "Oslo"
    customer.since.seconds = 1_700_000_000
    note = mod.Customer.Note(text="hi", stars=5)
    ctx = SerializationContext(topic, MessageField.VALUE)
    payloads = [
        ProtobufSerializer(mod.Customer, sr, {"use.deprecated.format": False})(customer, ctx),
        ProtobufSerializer(mod.Customer.Note, sr, {"use.deprecated.format": False})(note, ctx),
    ]
    produce(broker, topic, [(0, None, p, []) for p in payloads])
    r = http.get(f"/api/topics/{topic}/messages", params={"start": "beginning", "value_format": "registry"}).json()
    values = [m["value"] for m in r["records"]]
    assert [v["encoding"] for v in values] == ["protobuf", "protobuf"], values
    assert values[0]["data"] == {"name": "ada", "home": {"city": "Oslo"}, "since": "2023-11-14T22:13:20Z"}
    assert values[1]["data"] == {"text": "hi", "stars": "5"}
    r = http.get(f"/api/topics/{topic}/messages", params={"start": "beginning", "filter": 'value.home.city == "Oslo"'}).json()
    assert [m["offset"] for m in r["records"]] == [0]


def test_connect_pages_say_when_connect_is_not_configured(http: httpx.Client) -> None:
    assert "--connect-url" in error_of(http.get("/api/connect/connectors"), 404)
    assert "--metrics-url" in error_of(http.get("/api/metrics"), 404)
    assert http.get("/api/nope").status_code == 404


def test_a_broker_that_goes_away_gets_a_clear_error_and_the_console_keeps_serving() -> None:
    broker = EmbeddedBroker().start()
    try:
        with EmbeddedConsole(broker.bootstrap_servers) as console, httpx.Client(base_url=console.url, timeout=60) as http:
            assert http.get("/api/overview").status_code == 200
            broker.stop()
            r = http.get("/api/overview")
            assert r.status_code == 503 and "cannot reach the cluster" in r.json()["error"]
            assert http.get("/api/topics").status_code == 503
            assert http.get("/").status_code == 200
            assert http.get("/api/info").status_code == 200
    finally:
        broker.stop()
