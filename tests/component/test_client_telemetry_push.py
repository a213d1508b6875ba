"""confluent-kafka (librdkafka, ``enable.metrics.push=true`` by default) pushes its metrics to an
EmbeddedBroker when a client metrics subscription asks for them, and they appear on the broker's
/metrics with the client's client.id; the subscription's prefix filter and interval are honoured;
with no subscription nothing is pushed. kafka-python and aiokafka, which do not push, keep
working against a broker that advertises the telemetry APIs."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer

from zurau.client.admin import AdminClient, AlterConfigOp, AlterOp, ConfigResource, ResourceType
from zurau.client.config import ClientConfig
from zurau.embedded import EmbeddedBroker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(metrics_http_listener="http://127.0.0.1:0") as b:
        b.create_topic("telemetry-t", 2)
        yield b


def subscribe(b: EmbeddedBroker, name: str, **configs: str | None) -> None:
    async def main() -> None:
        async with AdminClient(ClientConfig.load(bootstrap_servers=b.bootstrap_servers)) as admin:
            r = ConfigResource(ResourceType.CLIENT_METRICS, name)
            ops = [
                AlterConfigOp(k.replace("_", "."), AlterOp.SET if v is not None else AlterOp.DELETE, v)
                for k, v in configs.items()
            ]
            assert (await admin.incremental_alter_configs({r: ops}))[r] is None

    asyncio.run(main())


def scrape(b: EmbeddedBroker) -> str:
    assert b.metrics_url is not None
    return urllib.request.urlopen(b.metrics_url, timeout=10).read().decode()


def samples(text: str, prefix: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if line.startswith(prefix):
            m = re.match(r"([^{ ]+)(?:\{(.*)\})? (\S+)$", line)
            assert m is not None, line
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out.append((m.group(1), labels, float(m.group(3))))
    return out


def value(text: str, name: str) -> float:
    found = [v for n, _, v in samples(text, name) if n == name]
    return found[0] if found else 0.0


def wait_for(
    b: EmbeddedBroker, check: Callable[[str], bool], work: Callable[[], None], within: float = 30
) -> str:
    deadline = time.monotonic() + within
    while True:
        work()
        text = scrape(b)
        if check(text):
            return text
        assert time.monotonic() < deadline, "the clients' metrics never appeared on /metrics"
        time.sleep(0.2)


def test_producer_and_consumer_push_their_metrics_with_their_client_id(broker: EmbeddedBroker) -> None:
    subscribe(broker, "all", metrics="*", interval_ms="500")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "telemetry-producer"})
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "client.id": "telemetry-consumer",
            "group.id": "telemetry-group",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["telemetry-t"])
    started = time.monotonic()
    try:

        def work() -> None:
            for _ in range(20):
                producer.produce("telemetry-t", b"v" * 100)
            producer.poll(0)
            consumer.poll(0.1)

        def both(text: str) -> bool:
            ids = {labels.get("client_id") for _, labels, _ in samples(text, "org_apache_kafka_")}
            return {"telemetry-producer", "telemetry-consumer"} <= ids

        text = wait_for(broker, both, work)
        elapsed_ms = (time.monotonic() - started) * 1000
    finally:
        producer.flush(10)
        consumer.close()
    producer_series = [
        s for s in samples(text, "org_apache_kafka_producer_") if s[1]["client_id"] == "telemetry-producer"
    ]
    consumer_series = [
        s for s in samples(text, "org_apache_kafka_consumer_") if s[1]["client_id"] == "telemetry-consumer"
    ]
    assert producer_series and consumer_series
    assert all(re.fullmatch(r"[0-9a-f-]{36}", s[1]["client_instance_id"]) for s in producer_series)
    info = {labels["client_id"]: labels for _, labels, _ in samples(text, "zurau_client_telemetry_info")}
    assert info["telemetry-producer"]["client_software_name"] == "confluent-kafka-python"
    # The interval is honoured: no push came early (none throttled), none faster than 500 ms.
    assert value(text, "kafka_server_client_metrics_throttle_total") == 0
    for _, labels, pushes in samples(text, "zurau_client_telemetry_pushes_total"):
        assert pushes <= elapsed_ms / 500 + 2, labels


def test_the_prefix_filter_is_honoured(broker: EmbeddedBroker) -> None:
    subscribe(broker, "queue-only", metrics="org.apache.kafka.producer.record.queue", interval_ms="500")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "filtered-producer"})
    try:

        def work() -> None:
            producer.produce("telemetry-t", b"v")
            producer.poll(0.05)

        text = wait_for(broker, lambda t: bool(samples(t, "org_apache_kafka_producer_record_queue")), work)
    finally:
        producer.flush(10)
    names = {
        n for n, labels, _ in samples(text, "org_apache_kafka_") if labels["client_id"] == "filtered-producer"
    }
    assert names and all(n.startswith("org_apache_kafka_producer_record_queue") for n in names), names


def test_with_no_subscription_nothing_is_pushed(broker: EmbeddedBroker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "unsubscribed"})
    try:

        def work() -> None:
            producer.produce("telemetry-t", b"v")
            producer.poll(0.05)

        # The client asked (it was told: no metrics) ...
        text = wait_for(
            broker,
            lambda t: any(
                labels.get("request") == "GetTelemetrySubscriptions"
                for _, labels, _ in samples(t, "kafka_network_requestmetrics_requests_total")
            ),
            work,
        )
        for _ in range(10):
            work()
        producer.flush(10)
        text = scrape(broker)
    finally:
        producer.flush(10)
    # ... and pushed nothing.
    assert value(text, "kafka_server_client_metrics_push_total") == 0
    assert not samples(text, "org_apache_kafka_")
    assert not [
        labels
        for _, labels, _ in samples(text, "kafka_network_requestmetrics_requests_total")
        if labels.get("request") == "PushTelemetry"
    ]


def test_kafka_python_and_aiokafka_keep_working(broker: EmbeddedBroker) -> None:
    """They do not push; ApiVersions just lists the telemetry APIs to them."""
    subscribe(broker, "all", metrics="*", interval_ms="500")
    from kafka import KafkaConsumer, KafkaProducer

    kp = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    kp.send("telemetry-t", b"from kafka-python", partition=0).get(timeout=30)
    kp.close()
    kc = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    from kafka import TopicPartition

    kc.assign([TopicPartition("telemetry-t", 0)])
    assert any(m.value == b"from kafka-python" for m in kc)
    kc.close()

    async def with_aiokafka() -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
        from aiokafka.structs import TopicPartition as ATp

        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await p.start()
        try:
            await p.send_and_wait("telemetry-t", b"from aiokafka", partition=1)
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest")
        await c.start()
        try:
            c.assign([ATp("telemetry-t", 1)])
            msg = await asyncio.wait_for(c.getone(), 30)
            assert msg.value == b"from aiokafka"
        finally:
            await c.stop()

    asyncio.run(with_aiokafka())
    assert value(scrape(broker), "kafka_server_client_metrics_push_total") == 0


def test_the_console_shows_each_pushing_client(broker: EmbeddedBroker) -> None:
    """GET /api/clients of a console whose --metrics-url is the broker's: the producer with its
    software, push interval, headline latency and every series it pushed."""
    import httpx

    from zurau.console.embedded_console import EmbeddedConsole

    subscribe(broker, "all", metrics="*", interval_ms="500")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "console-producer"})
    try:

        def work() -> None:
            producer.produce("telemetry-t", b"v")
            producer.poll(0.05)

        wait_for(broker, lambda t: bool(samples(t, "org_apache_kafka_producer_request_latency_avg")), work)
    finally:
        producer.flush(10)
    with EmbeddedConsole(broker.bootstrap_servers, metrics_url=broker.metrics_url) as console:
        body = httpx.get(console.url + "/api/clients", timeout=30).json()
    (client,) = [c for c in body["clients"] if c["client_id"] == "console-producer"]
    assert client["software_name"] == "confluent-kafka-python"
    assert client["push_interval_ms"] == 500 and client["pushes"] >= 1
    assert "request_latency_avg_ms" in client["main"]
    assert any(m["name"] == "org_apache_kafka_producer_record_queue_time_avg" for m in client["metrics"])
