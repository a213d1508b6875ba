"""The ``zurau`` sink: batch and streaming writes, optional columns, the topic option, errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import produce, read_all

pytestmark = pytest.mark.slow


def _save(df: Any, bootstrap: str, **options: str) -> None:
    w = df.write.format("zurau").mode("append").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def test_batch_write_with_every_column(spark: Any, zurau_broker: Any, new_topic: Callable[..., str]) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(3)
    rows = [
        (
            f"k{i}" if i % 4 else None,
            f"value-{i}".encode(),
            topic,
            i % 3,
            [("h", str(i).encode())] if i % 2 else None,
        )
        for i in range(60)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, topic string, partition int, headers array<struct<key:string,value:binary>>",
    )
    _save(df, bootstrap)
    got = read_all(bootstrap, topic, 3)
    for p in range(3):  # two write tasks: each keeps its order, together they interleave
        want = [(k.encode() if k else None, v, h) for k, v, _, part, h in rows if part == p]
        assert sorted([(m.key() or b"", m.value(), m.headers()) for m in got[p]], key=repr) == sorted(
            [(k or b"", v, h) for k, v, h in want], key=repr
        )


def test_topic_option_overrides_the_topic_column_and_timestamps_are_kept(
    spark: Any, zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    df = spark.createDataFrame(
        [("nowhere", f"v{i}", 1_600_000_000 + i) for i in range(5)], "topic string, value string, ts long"
    ).selectExpr("topic", "value", "timestamp_seconds(ts) as timestamp")
    _save(df, bootstrap, topic=topic)
    got = read_all(bootstrap, topic, 1)[0]
    assert sorted((m.value(), m.timestamp()[1]) for m in got) == [
        (f"v{i}".encode(), (1_600_000_000 + i) * 1000) for i in range(5)
    ]


def test_bad_input_is_refused(spark: Any, zurau_broker: Any, new_topic: Callable[..., str]) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        _save(spark.createDataFrame([("k",)], "key string"), bootstrap, topic=topic)
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute is present"):
        _save(spark.createDataFrame([("v",)], "value string"), bootstrap)
    with pytest.raises(Exception, match="value attribute unsupported type int"):
        _save(spark.createDataFrame([(1,)], "value int"), bootstrap, topic=topic)
    with pytest.raises(Exception, match="null topic present in the data"):
        _save(spark.createDataFrame([(None, "v")], "topic string, value string"), bootstrap)
    with pytest.raises(Exception, match="Save mode Overwrite not allowed"):
        spark.createDataFrame([("v",)], "value string").write.format("zurau").mode("overwrite").option(
            "kafka.bootstrap.servers", bootstrap
        ).option("topic", topic).save()


def test_streaming_write_from_one_topic_to_another(
    spark: Any, zurau_broker: Any, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    src, dst = new_topic(2), new_topic(2)
    produce(bootstrap, src, [{"key": f"k{i % 5}".encode(), "value": f"v{i}".encode()} for i in range(200)])
    q = (
        spark.readStream.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", src)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "80")
        .load()
        .selectExpr("key", "upper(cast(value as string)) as value", "partition")
        .writeStream.format("zurau")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", dst)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    assert [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]] == [80, 80, 40]
    src_recs = read_all(bootstrap, src, 2)
    dst_recs = read_all(bootstrap, dst, 2)
    for p in range(2):  # same partition, same order, transformed value
        assert [(m.key(), m.value().upper()) for m in src_recs[p]] == [
            (m.key(), m.value()) for m in dst_recs[p]
        ]
