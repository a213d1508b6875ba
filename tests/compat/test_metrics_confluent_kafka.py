"""A broker's /metrics against what confluent-kafka (librdkafka) really sent and read.

Records of a known size are produced one batch each (flush after every record, no compression),
so the v2 batch bytes the broker must count are computed here from the format; the consumer
reads them all back; the counters must move by exactly that. Parsing goes through
prometheus_client's own text parser.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from zurau.embedded import EmbeddedBroker

RECORDS = 20
VALUE = b"v" * 100
DASHBOARD = Path(__file__).resolve().parents[2] / "grafana" / "zurau-dashboard.json"
REGISTRY_PREFIXES = ("kafka_schema_registry_", "zurau_schema_registry_")


def _varint_len(n: int) -> int:
    z = (n << 1) ^ (n >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def _batch_size(value_len: int) -> int:
    """A v2 batch of one record with no key and no headers: 61-byte header + the record."""
    body = 1 + 1 + 1 + _varint_len(-1) + _varint_len(value_len) + value_len + 1  # attrs, deltas, key, value, headers
    return 61 + _varint_len(body) + body


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the endpoint, by (name, sorted labels)."""
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def served_names(text: str) -> set[str]:
    """Every series name a scrape offers: samples, and the families even when they are empty."""
    names: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
    for family in text_string_to_metric_families(text):
        names.update(s.name for s in family.samples)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return names


def dashboard_metric_names() -> set[str]:
    """The metric names the shipped Grafana dashboard queries."""
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    return {m for e in exprs for m in re.findall(r"\b(?:kafka|zurau)_[a-z0-9_]+", e)}


def _api_versions_v0(sock: socket.socket, correlation_id: int) -> None:
    client_id = b"metrics-test"
    header = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    sock.sendall(struct.pack(">i", len(header)) + header)
    (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    body = sock.recv(size, socket.MSG_WAITALL)
    assert struct.unpack_from(">i", body)[0] == correlation_id


@pytest.fixture(scope="module")
def broker():
    with EmbeddedBroker(metrics_http_listener="http://127.0.0.1:0", group_initial_rebalance_delay_ms=300) as b:
        yield b


def test_bytes_and_messages_in_and_out_match_what_the_clients_did(broker: EmbeddedBroker) -> None:
    topic = broker.create_topic("metered", 1)
    url = broker.metrics_url
    assert url is not None
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": "none"})
    for _ in range(RECORDS):
        producer.produce(topic, value=VALUE, partition=0)
        producer.flush(10)  # one record per batch: sizes known exactly
    after_produce = scrape(url)
    label = (("topic", topic),)
    expected_bytes = RECORDS * _batch_size(len(VALUE))
    assert after_produce[("kafka_server_brokertopicmetrics_messagesin_total", label)] == RECORDS
    assert after_produce[("kafka_server_brokertopicmetrics_bytesin_total", label)] == expected_bytes
    assert after_produce[("kafka_server_brokertopicmetrics_totalproducerequests_total", label)] == RECORDS
    assert after_produce[("kafka_server_brokertopicmetrics_bytesout_total", label)] == 0
    partition = (("partition", "0"), ("topic", topic))
    assert after_produce[("kafka_log_log_logendoffset", partition)] == RECORDS
    assert after_produce[("kafka_log_log_size", partition)] == expected_bytes
    produce_ok = after_produce[("kafka_network_requestmetrics_errors_total", (("error", "NONE"), ("request", "Produce")))]
    assert produce_ok >= RECORDS  # one produce request per flushed record, at least
    assert after_produce[("kafka_network_requestmetrics_totaltime_seconds_count", (("request", "Produce"),))] >= RECORDS

    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "metered-reader", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = 0
        deadline = time.monotonic() + 30
        while got < RECORDS and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        assert got == RECORDS
        consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    finally:
        consumer.close()
    after_consume = scrape(url)
    assert after_consume[("kafka_server_brokertopicmetrics_bytesout_total", label)] == expected_bytes
    # Kafka's finer name for a consumer's fetches: every Fetch so far was one.
    fetches = {
        name: sum(v for (n, labels), v in after_consume.items() if n == "kafka_network_requestmetrics_requests_total"
                  and dict(labels)["request"] == name)
        for name in ("Fetch", "FetchConsumer", "FetchFollower")
    }
    assert fetches["Fetch"] == fetches["FetchConsumer"] > 0 and fetches["FetchFollower"] == 0
    assert after_consume[("kafka_server_brokertopicmetrics_messagesin_total", label)] == RECORDS
    # The group's lag is what the test left: 20 records, committed at 5.
    group = (("consumergroup", "metered-reader"), ("partition", "0"), ("topic", topic))
    assert after_consume[("kafka_consumergroup_current_offset", group)] == 5
    assert after_consume[("kafka_consumergroup_lag", group)] == RECORDS - 5


def test_request_counters_count_each_request_once(broker: EmbeddedBroker) -> None:
    url = broker.metrics_url
    assert url is not None
    key = ("kafka_network_requestmetrics_requests_total", (("request", "ApiVersions"), ("version", "0")))
    before = scrape(url).get(key, 0.0)
    host, port = broker.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for correlation_id in range(3):
            _api_versions_v0(sock, correlation_id)
    assert scrape(url)[key] == before + 3


def test_other_paths_are_404_and_the_broker_keeps_serving(broker: EmbeddedBroker) -> None:
    url = broker.metrics_url
    assert url is not None
    base = url.removesuffix("/metrics")
    for path in ("/", "/metricsx", "/metrics/../admin", "/favicon.ico"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + path, timeout=10)
        assert e.value.code == 404
    post = urllib.request.Request(url, data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(post, timeout=10)
    assert e.value.code == 405
    samples = scrape(url)
    assert samples[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce("after-bad-scrapes", value=b"still serving")
    assert producer.flush(10) == 0


def test_the_grafana_dashboard_queries_only_served_metrics(broker: EmbeddedBroker) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert {v["type"] for v in dashboard["templating"]["list"]} >= {"datasource"}
    url = broker.metrics_url
    assert url is not None
    with urllib.request.urlopen(url, timeout=10) as r:
        served = served_names(r.read().decode())
    wanted = {m for m in dashboard_metric_names() if not m.startswith(REGISTRY_PREFIXES)}
    assert len(wanted) > 30
    assert wanted - served == set()


def test_a_join_waiting_for_the_rebalance_is_remote_time(broker: EmbeddedBroker) -> None:
    topic = broker.create_topic("joined", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "joiner"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment()
    finally:
        consumer.close()
    samples = scrape(broker.metrics_url or "")
    join = (("request", "JoinGroup"),)
    # The first join waits group.initial.rebalance.delay.ms (300 ms) for more members: in the
    # coordinator, not in the handler. The event loop may fire that timer up to its clock
    # resolution early, and the remote time starts once the handler parked the request, so the
    # bound has a few milliseconds of slack (0.2996 s was seen).
    remote = samples[("kafka_network_requestmetrics_remotetime_seconds_sum", join)]
    assert remote >= 0.28
    assert samples[("kafka_network_requestmetrics_localtime_seconds_sum", join)] < remote
    group = (("protocol", "classic"), ("state", "Empty"))
    assert samples[("kafka_server_group_coordinator_metrics_group_count", group)] >= 1


def test_fetches_answering_idle_partitions_precomputed_are_counted(broker: EmbeddedBroker) -> None:
    """A sessionless consumer of several partitions, most of them idle: their entries in the Fetch
    answer are pre-encoded bytes (the idle-partition fast path), which the error counter must
    count as NONE instead of failing the connection (it once did, with metrics on)."""
    topic = "metrics-idle"
    broker.create_topic(topic, partitions=8)
    url = broker.metrics_url
    assert url is not None
    before = scrape(url)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for _ in range(RECORDS):
        p.produce(topic, VALUE, partition=3)
        p.flush(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "metrics-idle",
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, i, 0) for i in range(8)])
    got = 0
    deadline = time.monotonic() + 30
    try:
        while got < RECORDS and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got += 1
        for _ in range(10):  # more fetches in which every partition is idle
            c.poll(0.1)
    finally:
        c.close()
    assert got == RECORDS
    after = scrape(url)
    key = ("kafka_network_requestmetrics_errors_total", (("error", "NONE"), ("request", "Fetch")))
    assert after.get(key, 0.0) - before.get(key, 0.0) >= 8 * 3  # several fetches of 8 partitions each
