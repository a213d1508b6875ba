"""Client metrics subscriptions (KIP-714) are kept in the metadata log: after a ``kill -9`` of
the broker process they are still described, listed and served, and a confluent-kafka producer
that was pushing before the kill goes on pushing to the restarted broker (its client instance,
unknown to the new process, is recreated from its push with the same subscription id)."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.broker_process import BrokerProcess, free_port
from zurau.client.admin import AdminClient, AlterConfigOp, ConfigResource, ResourceType
from zurau.client.config import ClientConfig

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

SUBSCRIPTION = ConfigResource(ResourceType.CLIENT_METRICS, "producers")


@pytest.fixture
def bp(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(
        tmp_path / "data",
        log_level="INFO",
        **{"metrics.http.listener": f"http://127.0.0.1:{free_port()}", "num.partitions": "1"},
    )
    b.start()
    try:
        yield b
    finally:
        b.kill()


def metrics(b: BrokerProcess) -> str:
    url = b.overrides["metrics.http.listener"] + "/metrics"
    return urllib.request.urlopen(url, timeout=10).read().decode()


def pushed_by(text: str, client_id: str) -> float:
    m = re.search(
        rf'zurau_client_telemetry_pushes_total\{{[^}}]*client_id="{client_id}"[^}}]*\}} (\S+)', text
    )
    return float(m.group(1)) if m else 0.0


async def admin_call(bootstrap: str, fn):  # type: ignore[no-untyped-def]
    async with AdminClient(ClientConfig.load(bootstrap_servers=bootstrap)) as admin:
        return await fn(admin)


def wait_for_pushes(b: BrokerProcess, producer: Producer, client_id: str, within: float = 60) -> str:
    deadline = time.monotonic() + within
    while True:
        producer.produce("restart-t", b"v")
        producer.poll(0.2)
        try:
            text = metrics(b)
        except OSError:
            text = ""
        if pushed_by(text, client_id) >= 1:
            return text
        assert time.monotonic() < deadline, f"{client_id} never pushed to the broker"


def test_a_subscription_survives_a_kill_9_and_is_still_served(bp: BrokerProcess) -> None:
    bootstrap = bp.bootstrap_servers
    errors = asyncio.run(
        admin_call(
            bootstrap,
            lambda a: a.incremental_alter_configs(
                {
                    SUBSCRIPTION: [
                        AlterConfigOp("metrics", value="org.apache.kafka.producer."),
                        AlterConfigOp("interval.ms", value="500"),
                        AlterConfigOp("match", value="client_id=restart-.*"),
                    ]
                }
            ),
        )
    )
    assert errors == {SUBSCRIPTION: None}
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "restart-producer"})
    try:
        wait_for_pushes(bp, producer, "restart-producer")

        bp.kill()
        bp.start()

        listed = asyncio.run(
            admin_call(bootstrap, lambda a: a.list_config_resources([ResourceType.CLIENT_METRICS]))
        )
        assert listed == [SUBSCRIPTION]
        described = asyncio.run(admin_call(bootstrap, lambda a: a.describe_configs([SUBSCRIPTION])))
        assert {e.name: e.value for e in described[SUBSCRIPTION]} == {
            "metrics": "org.apache.kafka.producer.",
            "interval.ms": "500",
            "match": "client_id=restart-.*",
        }
        # The producer made before the kill pushes to the new process: the subscription is served.
        text = wait_for_pushes(bp, producer, "restart-producer")
        names = {
            m.group(1)
            for m in re.finditer(r'^(org_apache_kafka_\w+)\{[^}]*client_id="restart-producer"', text, re.M)
        }
        assert names and all(n.startswith("org_apache_kafka_producer_") for n in names)
    finally:
        producer.flush(10)
