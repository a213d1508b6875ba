"""Streaming reads: checkpoint restart, new partitions, data loss, admission control."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.spark.conftest import produce

pytestmark = pytest.mark.slow


def _stream(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _values(n0: int, n1: int, partitions: int = 2) -> list[dict[str, Any]]:
    return [{"value": str(i).encode(), "partition": i % partitions} for i in range(n0, n1)]


def _wait(cond: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.1)


def test_query_stopped_and_restarted_resumes_exactly_where_it_stopped(
    spark: Any, zurau_broker: Any, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(2)
    produce(bootstrap, topic, _values(0, 400))
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def start(trigger: dict[str, Any]) -> Any:
        df = _stream(spark, bootstrap, topic, maxOffsetsPerTrigger="100").selectExpr(
            "cast(value as string) as v", "partition", "offset"
        )
        return (
            df.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(**trigger)
            .start()
        )

    # Run 1: stop while data is still waiting (4 micro-batches of 100 are needed).
    q1 = start({"processingTime": "500 milliseconds"})
    _wait(lambda: q1.lastProgress is not None and q1.lastProgress["batchId"] >= 1)
    q1.stop()
    ends1 = [p["sources"][0]["endOffset"] for p in q1.recentProgress if p["numInputRows"] > 0]
    assert ends1, "run 1 processed nothing"

    # Meanwhile more data arrives; run 2 starts from the checkpoint and reads everything left.
    produce(bootstrap, topic, _values(400, 500))
    q2 = start({"availableNow": True})
    q2.awaitTermination(120)
    assert q2.exception() is None
    progress2 = [p for p in q2.recentProgress if p["numInputRows"] > 0]
    first_start = json.loads(progress2[0]["sources"][0]["startOffset"])
    assert first_start in [json.loads(e) for e in ends1], (first_start, ends1)
    assert json.loads(progress2[-1]["sources"][0]["endOffset"]) == {topic: {"0": 250, "1": 250}}
    assert all(p["numInputRows"] <= 100 for p in progress2)

    # Exactly the 500 records, each once, across both runs.
    rows = spark.read.parquet(str(out)).collect()
    assert sorted(int(r.v) for r in rows) == list(range(500))
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (p, o) for p in range(2) for o in range(250)
    )

    # The checkpoint holds Spark's Kafka offset JSON.
    last = max((p for p in (ckpt / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    assert json.loads(last.read_text().splitlines()[-1]) == {topic: {"0": 250, "1": 250}}


def test_new_partitions_are_picked_up(spark: Any, zurau_broker: Any, new_topic: Callable[..., str]) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    produce(bootstrap, topic, _values(0, 10, partitions=1))
    name = f"np_{topic.replace('-', '_')}"
    q = (
        _stream(spark, bootstrap, topic)
        .selectExpr("cast(value as string) as v", "partition")
        .writeStream.format("memory")
        .queryName(name)
        .start()
    )
    try:
        q.processAllAvailable()
        assert spark.sql(f"select count(*) from {name}").first()[0] == 10
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
        produce(bootstrap, topic, [{"value": f"n{i}".encode(), "partition": 1 + i % 2} for i in range(6)])
        _wait(lambda: spark.sql(f"select count(*) from {name}").first()[0] >= 16)
        by_part = {
            r.partition: r.c
            for r in spark.sql(f"select partition, count(*) c from {name} group by 1").collect()
        }
        assert by_part == {0: 10, 1: 3, 2: 3}
    finally:
        q.stop()


def test_data_loss_after_restart_fails_the_query(
    spark: Any, zurau_broker: Any, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    produce(bootstrap, topic, _values(0, 50, partitions=1))

    def run() -> None:
        q = (
            _stream(spark, bootstrap, topic)
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)  # re-raises the query's failure

    run()
    # While the query is down, records 50..99 arrive and 50..79 are deleted before it reads them.
    produce(bootstrap, topic, _values(50, 100, partitions=1))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    list(admin.delete_records([CKTopicPartition(topic, 0, 80)]).values())[0].result(30)
    with pytest.raises(Exception, match=rf"records in \[50, 80\) of {topic}-0 are lost") as ei:
        run()
    assert 'set the source option "failOnDataLoss" to "false"' in str(ei.value)


def test_data_loss_is_skipped_without_fail_on_data_loss(
    spark: Any, zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    produce(bootstrap, topic, _values(0, 100, partitions=1))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    list(admin.delete_records([CKTopicPartition(topic, 0, 30)]).values())[0].result(30)
    name = f"skip_{topic.replace('-', '_')}"
    q = (
        _stream(
            spark, bootstrap, topic, failOnDataLoss="false", startingOffsets=json.dumps({topic: {"0": 5}})
        )
        .selectExpr("offset")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None
    assert sorted(r.offset for r in spark.sql(f"select offset from {name}").collect()) == list(range(30, 100))


def test_available_now_respects_max_offsets_per_trigger(
    spark: Any, zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(2)
    produce(bootstrap, topic, _values(0, 250))
    q = (
        _stream(spark, bootstrap, topic, maxOffsetsPerTrigger="100")
        .writeStream.format("noop")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert q.exception() is None
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"] > 0]
    assert sizes == [100, 100, 50]
    assert json.loads(q.recentProgress[-1]["sources"][0]["endOffset"]) == {topic: {"0": 125, "1": 125}}
