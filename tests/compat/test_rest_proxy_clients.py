"""Records through the REST proxy, checked with every real client: produced over HTTP (v3 with
keys, headers and timestamps; v2 batches) they read back byte-exact with kafka-python, aiokafka and
kcat; produced with those clients they read back exact over v2 and over the record stream."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import time
import uuid
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from zurau.embedded import EmbeddedBroker

KCAT = shutil.which("kcat") or "kcat"  # make test installs it; missing, the test fails
V2 = {"Content-Type": "application/vnd.kafka.v2+json"}
B64 = base64.b64encode


def _b64(data: bytes) -> str:
    return B64(data).decode()


def _cluster(http: httpx.Client) -> str:
    return str(http.get("/v3/clusters").json()["data"][0]["cluster_id"])


def _topic(http: httpx.Client, cid: str) -> str:
    name = f"rest-clients-{uuid.uuid4().hex[:8]}"
    r = http.post(f"/v3/clusters/{cid}/topics", json={"topic_name": name, "partitions_count": 1})
    assert r.status_code == 201, r.text
    return name


def _expected() -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    # Recent, explicit timestamps: records dated years back are deleted by time retention (the
    # embedded broker checks every second), as Kafka would delete them.
    base = (int(time.time()) - 60) * 1000 + 123
    return [(b"key-%d" % i, b"value-%d-" % i + bytes(range(32, 127)), [("h", b"x%d" % i), ("trace", b"t")], base + i)
            for i in range(5)]


def test_records_produced_over_http_read_back_with_every_client(zurau_broker: EmbeddedBroker,
                                                                 zurau_rest_proxy: Any) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    expected = _expected()
    with httpx.Client(base_url=zurau_rest_proxy.url, timeout=30) as http:
        cid = _cluster(http)
        topic = _topic(http, cid)
        for key, value, headers, ts in expected[:3]:
            r = http.post(f"/v3/clusters/{cid}/topics/{topic}/records", json={
                "partition_id": 0, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts // 1000))
                + f".{ts % 1000:03d}Z",
                "key": {"type": "BINARY", "data": _b64(key)}, "value": {"type": "BINARY", "data": _b64(value)},
                "headers": [{"name": n, "value": _b64(v)} for n, v in headers],
            })
            assert r.status_code == 200 and r.json()["error_code"] == 200, r.text
        r = http.post(f"/topics/{topic}/partitions/0", headers={"Content-Type": "application/vnd.kafka.binary.v2+json"},
                      json={"records": [{"key": _b64(k), "value": _b64(v)} for k, v, _, _ in expected[3:]]})
        assert r.status_code == 200 and all(o["error"] is None for o in r.json()["offsets"]), r.text

    want = [(k, v) for k, v, _, _ in expected]
    kp = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    kp.assign([TopicPartition(topic, 0)])
    kp.seek_to_beginning()
    got = [m for _, m in zip(range(5), kp, strict=False)]
    kp.close()
    assert [(m.key, m.value) for m in got] == want
    assert [m.timestamp for m in got[:3]] == [ts for *_, ts in expected[:3]]
    assert [[(n, v) for n, v in m.headers] for m in got[:3]] == [h for _, _, h, _ in expected[:3]]

    async def aio() -> list[Any]:
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            out: list[Any] = []
            while len(out) < 5:
                batch = await c.getmany(timeout_ms=10_000)
                assert batch, "aiokafka read nothing"
                for msgs in batch.values():
                    out += msgs
            return out
        finally:
            await c.stop()

    got_aio = asyncio.run(aio())
    assert [(m.key, m.value) for m in got_aio] == want
    assert [list(m.headers) for m in got_aio[:3]] == [h for _, _, h, _ in expected[:3]]

    out = subprocess.run([KCAT, "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J"],
                         capture_output=True, timeout=60, check=True).stdout
    docs = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert [(d["key"].encode(), d["payload"].encode()) for d in docs] == want
    assert [d["ts"] for d in docs[:3]] == [ts for *_, ts in expected[:3]]


def test_records_produced_with_every_client_read_back_over_http(zurau_broker: EmbeddedBroker,
                                                                zurau_rest_proxy: Any) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    with httpx.Client(base_url=zurau_rest_proxy.url, timeout=30) as http:
        cid = _cluster(http)
        topic = _topic(http, cid)
        sent: list[tuple[bytes, bytes]] = []
        kp = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(3):
            kp.send(topic, key=b"kp-%d" % i, value=b"kafka-python %d" % i, partition=0).get(10)
            sent.append((b"kp-%d" % i, b"kafka-python %d" % i))
        kp.close()

        async def aio() -> None:
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
            await p.start()
            try:
                for i in range(3):
                    await p.send_and_wait(topic, key=b"aio-%d" % i, value=b"aiokafka %d" % i, partition=0)
            finally:
                await p.stop()

        asyncio.run(aio())
        sent += [(b"aio-%d" % i, b"aiokafka %d" % i) for i in range(3)]
        lines = b"".join(b"kcat-%d:kcat %d\n" % (i, i) for i in range(3))
        subprocess.run([KCAT, "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-K", ":"], input=lines,
                       capture_output=True, timeout=60, check=True)
        sent += [(b"kcat-%d" % i, b"kcat %d" % i) for i in range(3)]

        group = f"rest-clients-{uuid.uuid4().hex[:8]}"
        r = http.post(f"/consumers/{group}", json={"name": "c", "format": "binary", "auto.offset.reset": "earliest"},
                      headers=V2)
        assert r.status_code == 200, r.text
        base = f"/consumers/{group}/instances/c"
        assert http.post(f"{base}/subscription", json={"topics": [topic]}, headers=V2).status_code == 204
        v2: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while len(v2) < len(sent) and time.monotonic() < deadline:
            r = http.get(f"{base}/records", params={"timeout": 500}, headers={"Accept": "application/vnd.kafka.binary.v2+json"})
            assert r.status_code == 200, r.text
            v2 += [(base64.b64decode(x["key"]), base64.b64decode(x["value"])) for x in r.json()]
        assert v2 == sent
        http.delete(base, headers=V2)

        streamed: list[tuple[bytes, bytes]] = []
        with http.stream("GET", f"/v3/clusters/{cid}/topics/{topic}/records:stream",
                         params={"from": "beginning", "limit": len(sent)}) as s:
            assert s.status_code == 200
            for line in s.iter_lines():
                if line:
                    doc = json.loads(line)
                    streamed.append((base64.b64decode(doc["key"]), base64.b64decode(doc["value"])))
        assert streamed == sent
