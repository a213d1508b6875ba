"""Batch reads of known data through ``format("zurau")``, option by option."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient

from tests.spark.conftest import produce

pytestmark = pytest.mark.slow

PARTS = 3
PER_PART = 40
T0 = 1_700_000_000_000  # ms


def _record(p: int, i: int) -> dict[str, Any]:
    """Record i of partition p: keys null every 7th, headers every 3rd, one tombstone."""
    return {
        "partition": p,
        "key": None if i % 7 == 0 else f"k{p}-{i}".encode(),
        "value": None if (p, i) == (1, 5) else f"v{p}-{i}".encode() * (1 + i % 4),
        "timestamp": T0 + i * 1000 + p,
        "headers": [("h", f"{i}".encode()), ("n", None)] if i % 3 == 0 else None,
    }


@pytest.fixture(scope="module")
def known(zurau_broker: Any, spark: Any) -> tuple[str, str]:
    """A 3-partition topic of 40 known records per partition; returns (bootstrap, topic)."""
    import uuid

    topic = f"known-{uuid.uuid4().hex[:8]}"
    zurau_broker.create_topic(topic, PARTS)
    produce(
        zurau_broker.bootstrap_servers, topic, [_record(p, i) for p in range(PARTS) for i in range(PER_PART)]
    )
    return zurau_broker.bootstrap_servers, topic


def _load(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("zurau").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _rows(df: Any) -> list[tuple[Any, ...]]:
    """(partition, offset, key, value, epoch ms, timestampType) sorted by partition and offset."""
    cols = ("partition", "offset", "key", "value", "unix_millis(timestamp)", "timestampType")
    return sorted(tuple(r) for r in df.selectExpr(*cols).collect())


def _expected(parts: range = range(PARTS), lo: int = 0, hi: int = PER_PART) -> list[tuple[Any, ...]]:
    return [
        (p, i, r["key"], r["value"], r["timestamp"], 0)
        for p in parts
        for i in range(lo, hi)
        for r in [_record(p, i)]
    ]


def test_reads_every_record_with_sparks_schema_and_headers(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    df = _load(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    rows = df.collect()
    assert len(rows) == PARTS * PER_PART
    for row in rows:
        want = _record(row.partition, row.offset)
        assert row.topic == topic
        assert (row.key, row.value) == (want["key"], want["value"])
        assert row.timestampType == 0
        headers = [(h.key, h.value) for h in row.headers] if row.headers is not None else None
        assert headers == want["headers"]
    assert _rows(df) == _expected()


def test_without_include_headers_there_is_no_headers_column(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    df = _load(spark, bootstrap, subscribe=topic)
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert df.count() == PARTS * PER_PART


def test_assign_with_starting_and_ending_offsets(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    df = _load(
        spark,
        bootstrap,
        assign=json.dumps({topic: [0, 2]}),
        startingOffsets=json.dumps({topic: {"0": 5, "2": -2}}),
        endingOffsets=json.dumps({topic: {"0": 12, "2": -1}}),
    )
    assert _rows(df) == _expected(range(0, 1), 5, 12) + _expected(range(2, 3))


def test_subscribe_pattern_matches_whole_topic_names(
    spark: Any, zurau_broker: Any, known: tuple[str, str]
) -> None:
    bootstrap, topic = known
    import uuid

    stem = f"pat{uuid.uuid4().hex[:6]}"
    for name, n in ((f"{stem}-a", 3), (f"{stem}-b", 4), (f"x{stem}-c", 5)):
        zurau_broker.create_topic(name, 1)
        produce(bootstrap, name, [{"value": b"v"} for _ in range(n)])
    df = _load(spark, bootstrap, subscribePattern=f"{stem}-.*")
    counts = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {f"{stem}-a": 3, f"{stem}-b": 4}


def test_starting_timestamp_and_offsets_by_timestamp(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    # Global: the first record of each partition with timestamp >= T0 + 30 s is offset 30.
    df = _load(spark, bootstrap, subscribe=topic, startingTimestamp=str(T0 + 30_000))
    assert _rows(df) == _expected(range(PARTS), 30)
    # Per partition, with an ending timestamp (exclusive: the first record at or after it).
    starts = {str(p): T0 + 10_000 * (p + 1) for p in range(PARTS)}
    ends = {str(p): T0 + 10_000 * (p + 1) + 5_000 for p in range(PARTS)}
    df = _load(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsetsByTimestamp=json.dumps({topic: starts}),
        endingOffsetsByTimestamp=json.dumps({topic: ends}),
    )
    # Partition p's record i has timestamp T0 + i s + p ms.
    want = [r for p in range(PARTS) for r in _expected(range(p, p + 1), *_ts_bounds(p))]
    assert _rows(df) == want


def _ts_bounds(p: int) -> tuple[int, int]:
    start_ms = 10_000 * (p + 1)
    end_ms = start_ms + 5_000
    first = next(i for i in range(PER_PART) if i * 1000 + p >= start_ms)
    until = next(i for i in range(PER_PART) if i * 1000 + p >= end_ms)
    return first, until


def test_timestamp_without_a_match(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    future = str(T0 + 10**9)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        _load(spark, bootstrap, subscribe=topic, startingTimestamp=future).count()
    df = _load(
        spark,
        bootstrap,
        subscribe=topic,
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert df.count() == 0


def test_read_committed_and_range_splitting(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    df = _load(spark, bootstrap, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
    assert _rows(df) == _expected()
    split = _load(spark, bootstrap, subscribe=topic, minPartitions="9")
    assert split.rdd.getNumPartitions() == 9
    assert _rows(split) == _expected()
    capped = _load(spark, bootstrap, subscribe=topic, maxRecordsPerPartition="15")
    assert capped.rdd.getNumPartitions() == PARTS * 3
    assert _rows(capped) == _expected()


def test_invalid_options_fail_when_the_query_is_defined(spark: Any, known: tuple[str, str]) -> None:
    bootstrap, topic = known
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries"):
        _load(spark, bootstrap, subscribe=topic, startingOffsets="latest").collect()
    with pytest.raises(Exception, match="Kafka option 'auto.offset.reset' is not supported"):
        _load(spark, bootstrap, subscribe=topic, **{"kafka.auto.offset.reset": "earliest"}).collect()
    with pytest.raises(Exception, match="you must specify all TopicPartitions"):
        _load(spark, bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 1}})).collect()


def test_data_loss_is_reported_or_skipped(spark: Any, zurau_broker: Any) -> None:
    """Offsets below the log start (after DeleteRecords) are data loss: an error naming the
    topic-partition and the lost range under failOnDataLoss=true, skipped under false."""
    import uuid

    bootstrap = zurau_broker.bootstrap_servers
    topic = f"loss-{uuid.uuid4().hex[:8]}"
    zurau_broker.create_topic(topic, 1)
    produce(bootstrap, topic, [{"value": f"{i}".encode()} for i in range(100)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = admin.delete_records([CKTopicPartition(topic, 0, 60)])
    assert list(res.values())[0].result(30).low_watermark == 60
    start = json.dumps({topic: {"0": 10}})
    with pytest.raises(Exception, match=rf"records in \[10, 60\) of {topic}-0 are lost") as ei:
        _load(spark, bootstrap, subscribe=topic, startingOffsets=start).collect()
    assert "failOnDataLoss" in str(ei.value)
    rows = _load(spark, bootstrap, subscribe=topic, startingOffsets=start, failOnDataLoss="false").collect()
    assert sorted(r.offset for r in rows) == list(range(60, 100))
    assert sorted(int(r.value) for r in rows) == list(range(60, 100))


def test_isolation_level_with_committed_and_aborted_transactions(spark: Any, zurau_broker: Any) -> None:
    """read_committed hides aborted records, read_uncommitted (Spark's default) shows them; the
    control records never appear and the range still ends (its last offset is a commit marker)."""
    import uuid

    from confluent_kafka import Producer

    bootstrap = zurau_broker.bootstrap_servers
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    zurau_broker.create_topic(topic, 1)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    p.init_transactions(20)
    for prefix, n, commit in (("c", 5, True), ("a", 5, False), ("d", 3, True)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, f"{prefix}{i}".encode())
        p.flush(20)
        if commit:
            p.commit_transaction(20)
        else:
            p.abort_transaction(20)
    committed = _load(spark, bootstrap, subscribe=topic, **{"kafka.isolation.level": "read_committed"})
    values = [bytes(r.value) for r in committed.orderBy("offset").collect()]
    assert values == [b"c0", b"c1", b"c2", b"c3", b"c4", b"d0", b"d1", b"d2"]
    everything = _load(spark, bootstrap, subscribe=topic).orderBy("offset").collect()
    assert [bytes(r.value)[:1] for r in everything] == [b"c"] * 5 + [b"a"] * 5 + [b"d"] * 3
    # Each transaction ends with one control record (offsets 5, 11 and 15).
    assert [r.offset for r in everything] == [*range(0, 5), *range(6, 11), *range(12, 15)]
