"""The executor-side range reader on its own (no Spark): Arrow batches, range ends, data loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient

from tests.spark.conftest import produce
from zurau.spark.errors import DataLossError
from zurau.spark.offsets import OffsetRange, TopicPartition
from zurau.spark.options import parse_source_options
from zurau.spark.partition_reader import POOL, read_range
from zurau.spark.schema import arrow_schema

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _close_pooled_consumers() -> Any:
    """read_range pools consumers in this process: close them before the broker stops."""
    yield
    POOL.close_all()


def _read(bootstrap: str, topic: str, lo: int, hi: int, fail: bool = True, headers: bool = False) -> pa.Table:
    opts = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False)
    batches = list(
        read_range(
            opts.consumer_config(),
            OffsetRange(TopicPartition(topic, 0), lo, hi),
            include_headers=headers,
            fail_on_data_loss=fail,
            poll_timeout_ms=10_000,
        )
    )
    assert all(b.schema.equals(arrow_schema(headers)) for b in batches)
    return pa.Table.from_batches(batches, schema=arrow_schema(headers))


def test_reads_exactly_the_range_as_arrow(zurau_broker: Any, new_topic: Callable[..., str]) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    produce(
        bootstrap,
        topic,
        [
            {"key": b"k%d" % i, "value": b"v%d" % i, "timestamp": 1_000 + i, "headers": [("i", b"%d" % i)]}
            for i in range(50)
        ],
    )
    t = _read(bootstrap, topic, 10, 35, headers=True)
    assert t.column("offset").to_pylist() == list(range(10, 35))
    assert t.column("value").to_pylist() == [b"v%d" % i for i in range(10, 35)]
    assert t.column("key").to_pylist() == [b"k%d" % i for i in range(10, 35)]
    assert t.column("timestamp").cast(pa.int64()).to_pylist() == [(1_000 + i) * 1000 for i in range(10, 35)]
    assert set(t.column("timestampType").to_pylist()) == {0} and set(t.column("topic").to_pylist()) == {topic}
    assert t.column("headers").to_pylist()[0] == [{"key": "i", "value": b"10"}]
    assert _read(bootstrap, topic, 49, 50).column("offset").to_pylist() == [
        49
    ]  # the range ends at the log end
    assert _read(bootstrap, topic, 7, 7).num_rows == 0


def test_offsets_missing_at_either_end_are_data_loss(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    produce(bootstrap, topic, [{"value": b"%d" % i} for i in range(40)])
    # Past the log end (as after a topic was recreated).
    with pytest.raises(DataLossError, match=rf"records in \[40, 60\) of {topic}-0 are lost"):
        _read(bootstrap, topic, 30, 60)
    assert _read(bootstrap, topic, 30, 60, fail=False).column("offset").to_pylist() == list(range(30, 40))
    # Below the log start (after DeleteRecords).
    admin = AdminClient({"bootstrap.servers": bootstrap})
    list(admin.delete_records([CKTopicPartition(topic, 0, 25)]).values())[0].result(30)
    with pytest.raises(DataLossError, match=rf"records in \[5, 25\) of {topic}-0 are lost"):
        _read(bootstrap, topic, 5, 30)
    assert _read(bootstrap, topic, 5, 30, fail=False).column("offset").to_pylist() == list(range(25, 30))
    assert _read(bootstrap, topic, 5, 20, fail=False).num_rows == 0


def test_batches_are_sized_by_bytes_and_lose_nothing_at_their_edges(
    zurau_broker: Any, new_topic: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import zurau.spark.partition_reader as reader

    monkeypatch.setattr(reader, "BATCH_BYTES", 64 << 10)
    monkeypatch.setattr(reader, "MIN_CONSUME_BATCH", 1)
    monkeypatch.setattr(reader, "CONSUME_BATCH", 50)
    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    produce(bootstrap, topic, [{"value": b"%06d" % i + b"x" * 4090} for i in range(300)])
    opts = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False)
    batches = list(
        read_range(
            opts.consumer_config(),
            OffsetRange(TopicPartition(topic, 0), 3, 297),
            include_headers=False,
            fail_on_data_loss=True,
            poll_timeout_ms=10_000,
        )
    )
    # After the first batch (at most CONSUME_BATCH) shows the record size, each asks for ~64 KiB:
    # 15 records of 4 KiB.
    assert batches[0].num_rows <= 50 and all(b.num_rows <= 16 for b in batches[1:])
    assert len(batches) >= 1 + (294 - 50) // 16
    t = pa.Table.from_batches(batches)
    assert t.column("offset").to_pylist() == list(range(3, 297))
    assert [v[:6] for v in t.column("value").to_pylist()] == [b"%06d" % i for i in range(3, 297)]
