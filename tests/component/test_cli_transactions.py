"""``zurau transactions ...`` in-process (typer's CliRunner) against an embedded broker.

The broker runs without partition verification, so that a producer the coordinator has never
heard of can open a *hanging* transaction, as zombies could before KIP-890. A live
confluent-kafka transaction sits next to it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from typer.testing import CliRunner, Result

from tests.component.kafka_wire import KafkaWireClient
from tests.support.cli_results import ok
from zurau.cli.main import app
from zurau.client.admin import LATEST, AdminClient
from zurau.client.config import ClientConfig
from zurau.client.types import TopicPartition
from zurau.embedded import EmbeddedBroker
from zurau.protocol.records.builder import build_batch

runner = CliRunner()
HANGING_PID = 777_777


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(
        **{"transaction.partition.verification.enable": "false", "transaction.state.log.num.partitions": "2"}
    ) as b:
        yield b


def cli(broker: EmbeddedBroker, *args: str) -> Result:
    return runner.invoke(app, ["transactions", *args, "--bootstrap-server", broker.bootstrap_servers])


def as_json(result: Result) -> Any:
    return json.loads(ok(result))


def _hanging_write(broker: EmbeddedBroker, topic: str) -> None:
    batch = build_batch(
        [(None, b"hanging", (), int(time.time() * 1000))],
        producer_id=HANGING_PID,
        producer_epoch=4,
        base_sequence=0,
        is_transactional=True,
    )
    host, port = broker.bootstrap_servers.split(":")
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }

    async def run() -> int:
        async with await KafkaWireClient.connect(host, int(port)) as c:
            r = await c.request(0, 9, body)
            return r["responses"][0]["partition_responses"][0]["error_code"]

    assert asyncio.run(run()) == 0


def _stable(broker: EmbeddedBroker, topic: str) -> tuple[int, int]:
    async def run() -> tuple[int, int]:
        async with AdminClient(ClientConfig.load(None, broker.bootstrap_servers)) as admin:
            tp = TopicPartition(topic, 0)
            lso = (await admin.list_offsets({tp: LATEST}, isolation_level=1))[tp]
            hw = (await admin.list_offsets({tp: LATEST}))[tp]
            return lso.offset, hw.offset  # type: ignore[union-attr]

    return asyncio.run(run())


def test_list_describe_find_hanging_and_abort(broker: EmbeddedBroker) -> None:
    topic = f"cli-txn-{uuid.uuid4().hex[:6]}"
    tid = f"cli-live-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, 1)
    live = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid, "log_level": 0})
    live.init_transactions(10)
    live.begin_transaction()
    live.produce(topic, value=b"live", partition=0)
    assert live.flush(10) == 0
    _hanging_write(broker, topic)

    listed = as_json(cli(broker, "list", "--format", "json"))
    mine = [t for t in listed if t["transactional_id"] == tid]
    assert mine == [
        {
            "transactional_id": tid,
            "coordinator": broker.broker.node_id,
            "producer_id": mine[0]["producer_id"],
            "state": "Ongoing",
        }
    ]
    table = ok(cli(broker, "list", "--state", "Ongoing,PrepareCommit"))
    assert "TransactionalId" in table.splitlines()[0] and tid in table
    assert tid not in ok(cli(broker, "list", "--state", "Empty"))
    assert tid in ok(cli(broker, "list", "--pattern", "cli-live-.*", "--duration-ms", "0"))

    desc = as_json(cli(broker, "describe", tid, "--format", "json"))
    assert desc["state"] == "Ongoing" and desc["partitions"] == [{"topic": topic, "partition": 0}]
    assert desc["producer_epoch"] == 0 and desc["duration_ms"] >= 0
    assert "Ongoing" in ok(cli(broker, "describe", tid))
    missing = cli(broker, "describe", "no-such-id")
    assert missing.exit_code == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr

    producers = as_json(
        cli(broker, "describe-producers", "--topic", topic, "--partition", "0", "--format", "json")
    )
    starts = {p["ProducerId"]: p["CurrentTransactionStartOffset"] for p in producers}
    assert starts == {desc["producer_id"]: 0, HANGING_PID: 1}

    hanging = as_json(cli(broker, "find-hanging", "--topic", topic, "--format", "json"))
    assert [(h["Partition"], h["ProducerId"], h["CurrentTransactionStartOffset"]) for h in hanging] == [
        (0, HANGING_PID, 1)
    ]
    assert _stable(broker, topic) == (0, 2)

    out = ok(cli(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "1"))
    assert f"producer id {HANGING_PID} (epoch 4)" in out
    assert as_json(cli(broker, "find-hanging", "--topic", topic, "--format", "json")) == []
    assert _stable(broker, topic) == (0, 3)  # the live transaction still holds the LSO

    out = ok(cli(broker, "abort", "--transactional-id", tid))
    assert "its ongoing transaction was aborted" in out and "epoch 2" in out
    assert as_json(cli(broker, "describe", tid, "--format", "json"))["state"] == "Empty"
    assert _stable(broker, topic) == (4, 4)
    with pytest.raises(KafkaException):
        live.commit_transaction(10)  # fenced


def test_abort_argument_errors(broker: EmbeddedBroker) -> None:
    assert cli(broker, "abort").exit_code == 2
    assert cli(broker, "abort", "--transactional-id", "x", "--topic", "t", "--partition", "0").exit_code == 2
    assert cli(broker, "abort", "--topic", "t", "--partition", "0").exit_code == 2
    r = cli(
        broker, "abort", "--topic", "nope", "--partition", "0", "--producer-id", "1", "--producer-epoch", "0"
    )
    assert r.exit_code == 1 and r.stderr.startswith("error: ")
    topic = f"cli-txn-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, 1)
    r = cli(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "5")
    assert r.exit_code == 1 and "no open transaction starts at offset 5" in r.stderr
