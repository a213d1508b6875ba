"""The ``zurau`` sink with ``exactlyOnce=true``: no duplicates after driver crashes and re-runs.

The protocol is described in :mod:`zurau.spark.eos`: tasks write inside transactions they leave
open, together with a per-(query, task) batch marker; the driver's ``commit`` ends them with EndTxn.
Concurrent attempts of one task and re-runs after group offsets expire are driven here by calling
the task and driver code paths directly (no Spark session), the driver crash through Spark.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.spark.conftest import produce

pytestmark = pytest.mark.slow

DRIVER = Path(__file__).with_name("eos_driver.py")


def committed_values(bootstrap: str, topic: str, expect: int, partitions: int) -> list[str]:
    """Every value a read_committed consumer sees: until ``expect`` came, then 1 s more (or 30 s)."""
    return [v for v, _, _ in committed_records(bootstrap, topic, expect, partitions)]


def committed_records(bootstrap: str, topic: str, expect: int, partitions: int) -> list[tuple[str, int, int]]:
    """(value, partition, offset) of every record a read_committed consumer sees (see committed_values)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "log_level": 3,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[tuple[str, int, int]] = []
    deadline = time.monotonic() + 30
    settle: float | None = None
    try:
        while time.monotonic() < (settle or deadline):
            got.extend(
                (m.value().decode(), m.partition(), m.offset())
                for m in c.consume(500, 0.1)
                if m.error() is None
            )
            if settle is None and len(got) >= expect:
                settle = time.monotonic() + 1.0
    finally:
        c.close()
    return got


def _batch(values: list[str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"value": pa.array(values, pa.string())})


def test_commit_twice_and_rerun_of_a_committed_batch(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    from pyspark.sql.types import StringType, StructType

    from zurau.protocol.errors import ProducerFencedError
    from zurau.spark.sink import EosCommitMessage, ZurauStreamWriter

    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    opts = {"kafka.bootstrap.servers": bootstrap, "topic": topic, "exactlyOnce": "true"}
    writer = ZurauStreamWriter(opts, StructType().add("value", StringType()))
    query = uuid.uuid4().hex

    def write(batch_id: int, prefix: str) -> EosCommitMessage:
        from zurau.spark.sink import write_exactly_once

        return write_exactly_once(
            writer.options,
            writer.layout,
            [_batch([f"{prefix}{i}" for i in range(10)])],
            query_id=query,
            partition_id=0,
            batch_id=batch_id,
        )

    first = write(0, "a")  # the driver dies before committing it
    assert first.records == 10 and first.transactional_id is not None
    rerun = write(0, "b")  # the batch is re-run: the first attempt is fenced and aborted
    assert rerun.producer_epoch is not None and first.producer_epoch is not None
    assert rerun.producer_epoch > first.producer_epoch
    with pytest.raises(ProducerFencedError):
        writer.commit([first], 0)
    writer.commit([rerun], 0)
    writer.commit([rerun], 0)  # Spark may call commit twice for one batch: harmless
    again = write(0, "c")  # re-run after the commit (Spark had not recorded it)
    writer.commit([again], 0)  # the marker shows batch 0 committed: its transaction is aborted
    nxt = write(1, "d")
    assert nxt.records == 10
    writer.commit([nxt], 1)
    got = committed_values(bootstrap, topic, 20, 1)
    assert sorted(got) == sorted([f"b{i}" for i in range(10)] + [f"d{i}" for i in range(10)])


def test_abort_discards_the_batch(zurau_broker: Any, new_topic: Callable[..., str]) -> None:
    from pyspark.sql.types import StringType, StructType

    from zurau.spark.sink import ZurauStreamWriter, write_exactly_once

    bootstrap = zurau_broker.bootstrap_servers
    topic = new_topic(1)
    opts = {"kafka.bootstrap.servers": bootstrap, "topic": topic, "exactlyOnce": "true"}
    writer = ZurauStreamWriter(opts, StructType().add("value", StringType()))
    query = uuid.uuid4().hex
    m0 = write_exactly_once(
        writer.options, writer.layout, [_batch(["x"])], query_id=query, partition_id=0, batch_id=0
    )
    writer.abort([m0, None], 0)
    writer.abort([m0], 0)  # already decided: only logged
    m1 = write_exactly_once(
        writer.options, writer.layout, [_batch(["y"])], query_id=query, partition_id=0, batch_id=0
    )
    writer.commit([m1], 0)  # an aborted batch left no marker: this one commits
    assert committed_values(bootstrap, topic, 1, 1) == ["y"]


def _eos_writer(bootstrap: str, topic: str, markers: str) -> Any:
    from pyspark.sql.types import StringType, StructType

    from zurau.spark.sink import ZurauStreamWriter

    opts = {
        "kafka.bootstrap.servers": bootstrap,
        "topic": topic,
        "exactlyOnce": "true",
        "exactlyOnce.markerTopic": markers,
    }
    return ZurauStreamWriter(opts, StructType().add("value", StringType()))


def _describe(bootstrap: str, tid: str) -> Any:
    from zurau.client.config import ClientConfig
    from zurau.client.transactions_admin import TransactionsAdmin

    async def run() -> Any:
        async with TransactionsAdmin(ClientConfig.from_props({"bootstrap.servers": bootstrap})) as admin:
            return (await admin.describe_transactions([tid]))[tid]

    return asyncio.run(run())


def test_concurrent_attempts_of_one_partition_commit_exactly_one(
    zurau_broker: Any, new_topic: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A speculative/zombie attempt of the task starts while the first attempt finishes its write.

    The second attempt's init_transactions fences the first and aborts its transaction. Whatever
    the first attempt then reports must not let the driver commit the second attempt's transaction
    while that one is still writing (that committed half a batch and lost the rest).
    """
    from confluent_kafka import KafkaException

    from zurau.protocol.errors import KafkaError
    from zurau.spark import sink
    from zurau.spark.sink import write_exactly_once

    bootstrap = zurau_broker.bootstrap_servers
    topic, markers = new_topic(1), new_topic(1, cleanup_policy="compact")
    writer = _eos_writer(bootstrap, topic, markers)
    query = uuid.uuid4().hex
    tid = f"zurau-sink-{query}-0"
    rows = [f"r{i}" for i in range(10)]
    second_mid, release = threading.Event(), threading.Event()
    second: dict[str, Any] = {}

    def second_batches() -> Any:
        yield _batch(rows[:5])
        second_mid.set()
        release.wait(60)
        yield _batch(rows[5:])

    def run_second() -> None:
        try:
            second["msg"] = write_exactly_once(
                writer.options,
                writer.layout,
                second_batches(),
                query_id=query,
                partition_id=0,
                batch_id=0,
                attempt=1,
            )
        except BaseException as e:  # reported to the test thread
            second["error"] = e

    other = threading.Thread(target=run_second, daemon=True)
    test_thread = threading.get_ident()
    real_flush = sink._TaskWrite.flush

    def flush_then_let_the_second_attempt_start(self: Any) -> None:
        real_flush(self)
        if threading.get_ident() == test_thread and not other.is_alive() and "msg" not in second:
            other.start()
            assert second_mid.wait(60), second
            deadline = time.monotonic() + 30
            while True:  # the second attempt's transaction is open and holds its first rows
                d = _describe(bootstrap, tid)
                if getattr(d, "state", None) == "Ongoing" and any(tp.topic == topic for tp in d.partitions):
                    break
                assert time.monotonic() < deadline, d
                time.sleep(0.05)

    monkeypatch.setattr(sink._TaskWrite, "flush", flush_then_let_the_second_attempt_start)
    try:
        first = write_exactly_once(
            writer.options, writer.layout, [_batch(rows)], query_id=query, partition_id=0, batch_id=0
        )
    except (KafkaException, KafkaError):
        first = None  # fenced by the second attempt: this attempt fails, Spark takes the other one
    if first is not None:
        writer.commit([first], 0)  # Spark commits the attempt that finished first
    release.set()
    other.join(90)
    assert not other.is_alive()
    if first is None:
        assert "msg" in second, second.get("error")
        writer.commit([second["msg"]], 0)
    elif "msg" in second:
        writer.abort([second["msg"]], 0)  # Spark discards the slower attempt's result
    assert sorted(committed_values(bootstrap, topic, 10, 1)) == sorted(rows)


def test_two_attempts_report_their_own_transactions_and_one_commits(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    from zurau.protocol.errors import ProducerFencedError
    from zurau.spark.sink import write_exactly_once

    bootstrap = zurau_broker.bootstrap_servers
    topic, markers = new_topic(1), new_topic(1, cleanup_policy="compact")
    writer = _eos_writer(bootstrap, topic, markers)
    query = uuid.uuid4().hex
    rows = [f"r{i}" for i in range(10)]

    def attempt(n: int) -> Any:
        return write_exactly_once(
            writer.options,
            writer.layout,
            [_batch(rows)],
            query_id=query,
            partition_id=0,
            batch_id=0,
            attempt=n,
        )

    first = attempt(0)
    d = _describe(bootstrap, first.transactional_id)
    assert (d.producer_id, d.producer_epoch, d.state) == (first.producer_id, first.producer_epoch, "Ongoing")
    second = attempt(1)  # fences the first attempt and aborts its transaction
    d = _describe(bootstrap, second.transactional_id)
    assert (d.producer_id, d.producer_epoch, d.state) == (
        second.producer_id,
        second.producer_epoch,
        "Ongoing",
    )
    assert second.producer_epoch > first.producer_epoch
    with pytest.raises(ProducerFencedError):
        writer.commit([first], 0)  # the fenced attempt's transaction cannot be committed
    writer.commit([first, second], 0)  # one per partition: the live one commits, the other is aborted
    writer.commit([second], 0)
    assert sorted(committed_values(bootstrap, topic, 10, 1)) == sorted(rows)


def test_rerun_after_group_offsets_expired_writes_nothing(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    """A batch's marker must outlive consumer-group offsets (offsets.retention.minutes).

    Expiry is simulated by deleting every consumer group named after the query through the admin
    API, which is what the offsets' expiry does to an empty group.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from zurau.spark.sink import write_exactly_once

    bootstrap = zurau_broker.bootstrap_servers
    topic, markers = new_topic(2), new_topic(1, cleanup_policy="compact")
    writer = _eos_writer(bootstrap, topic, markers)
    query = uuid.uuid4().hex

    def write(batch_id: int, part: int, prefix: str) -> Any:
        rows = [{"value": f"{prefix}{part}-{i}", "partition": part} for i in range(5)]
        schema = pa.schema([("value", pa.string()), ("partition", pa.int32())])
        from pyspark.sql.types import IntegerType, StringType, StructType

        from zurau.spark.sink import validate_schema

        layout = validate_schema(
            StructType().add("value", StringType()).add("partition", IntegerType()), topic
        )
        return write_exactly_once(
            writer.options,
            layout,
            [pa.RecordBatch.from_pylist(rows, schema)],
            query_id=query,
            partition_id=part,
            batch_id=batch_id,
        )

    writer.commit([write(0, 0, "a"), write(0, 1, "a")], 0)
    writer.commit([write(1, 0, "b"), write(1, 1, "b")], 1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    groups = [g.group_id for g in admin.list_consumer_groups().result(30).valid if query in g.group_id]
    for fut in admin.delete_consumer_groups(groups).values() if groups else []:
        try:
            fut.result(30)
        except KafkaException:
            pass
    # The driver died after committing batch 1 but before Spark recorded it: batch 1 runs again.
    writer.commit([write(1, 0, "c"), write(1, 1, "c")], 1)
    writer.commit([write(2, 0, "d"), write(2, 1, "d")], 2)
    got = committed_values(bootstrap, topic, 30, 2)
    assert sorted(got) == sorted(f"{p}{n}-{i}" for p in "abd" for n in range(2) for i in range(5))


def test_an_open_transaction_of_another_writer_in_the_marker_topic_does_not_hold_commits(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    """Queries share the marker topic: one's open transaction (its tasks wrote, its driver has not
    committed yet) sits between another query's markers. The other's commit must not wait for it."""
    from confluent_kafka import Producer

    from zurau.spark.sink import write_exactly_once

    bootstrap = zurau_broker.bootstrap_servers
    topic, markers = new_topic(1), new_topic(1, cleanup_policy="compact")
    writer = _eos_writer(bootstrap, topic, markers)
    query = uuid.uuid4().hex

    def write(batch_id: int, prefix: str) -> Any:
        return write_exactly_once(
            writer.options, writer.layout, [_batch([f"{prefix}{i}" for i in range(3)])],
            query_id=query, partition_id=0, batch_id=batch_id,
        )  # fmt: skip

    writer.commit([write(0, "a")], 0)
    other = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"other-{query}", "log_level": 3})
    other.init_transactions(30)
    other.begin_transaction()
    other.produce(markers, b'{"batchId": 0, "attempt": "x"}', b"other-query/0", 0)
    assert other.flush(30) == 0
    try:
        rerun = write(0, "b")  # batch 0 again: its marker lies below the open transaction
        writer.commit([rerun], 0)
        writer.commit([write(1, "c")], 1)
        got = committed_values(bootstrap, topic, 6, 1)
    finally:
        other.abort_transaction(30)
    assert sorted(got) == sorted(f"{p}{i}" for p in "ac" for i in range(3))


def test_marker_topic_is_created_compacted_and_a_deleting_one_refused(
    zurau_broker: Any, new_topic: Callable[..., str]
) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    from zurau.spark.errors import KafkaOptionError

    bootstrap = zurau_broker.bootstrap_servers
    topic, markers = new_topic(1), f"markers-{uuid.uuid4().hex[:8]}"
    _eos_writer(bootstrap, topic, markers)  # the driver creates the missing marker topic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (cfg,) = admin.describe_configs([ConfigResource("topic", markers)]).values()
    assert cfg.result(30)["cleanup.policy"].value == "compact"
    _eos_writer(bootstrap, topic, markers)  # and takes it as it is the next time
    with pytest.raises(KafkaOptionError, match="cleanup.policy=delete"):
        _eos_writer(bootstrap, topic, new_topic(1))  # retention would delete its markers


def _start_driver(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")
    try:  # its own session: the driver, its JVM and Python workers can be killed as one group
        return subprocess.Popen(
            [sys.executable, str(DRIVER), *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    finally:
        out.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group this test started (its id is the driver's pid)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def _wait_for(path: Path, proc: subprocess.Popen[bytes], log: Path, timeout: float = 150.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"driver exited ({proc.returncode}) early:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            _kill_group(proc)
            raise AssertionError(
                f"{path.name} did not appear within {timeout:.0f} s:\n{log.read_text()[-3000:]}"
            )
        time.sleep(0.2)


def test_driver_killed_mid_batch_and_restarted_writes_each_record_once(
    zurau_broker: Any, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    bootstrap = zurau_broker.bootstrap_servers
    src, dst = new_topic(2), new_topic(2)
    n = 2000
    produce(bootstrap, src, [{"key": f"k{i % 7}".encode(), "value": f"v{i}".encode()} for i in range(n)])
    ckpt, hooks, log = tmp_path / "ckpt", tmp_path / "hooks", tmp_path / "driver.log"
    hooks.mkdir()
    base = [bootstrap, src, dst, str(ckpt)]
    # 1: killed while batch 2's transactions are open (written, not committed): the restart re-runs
    #    batch 2 and its new attempt fences and aborts them.
    # 2: killed after batch 5's transactions were committed but before Spark recorded the batch:
    #    the restart re-runs batch 5, whose markers make it a no-op.
    for mode, batch in (("crash-before", 2), ("crash-after", 5)):
        proc = _start_driver([*base, mode, str(batch), str(hooks)], log)
        try:
            _wait_for(hooks / f"{mode.split('-')[1]}-{batch}", proc, log)
        finally:
            _kill_group(proc)
    # Batches 0-5 (up to 200 rows each: admission control rounds per partition) are committed, once each.
    partial = committed_records(bootstrap, dst, 1100, 2)
    counts = Counter(v for v, _, _ in partial)
    dups = sorted((v, p, o) for v, p, o in partial if counts[v] > 1)
    assert len(partial) == len(counts), dups[:20]
    assert 1100 <= len(partial) <= 1200
    proc = _start_driver([*base, "finish"], log)
    try:
        assert proc.wait(150) == 0, log.read_text()[-3000:]
    finally:
        _kill_group(proc)
    got = committed_values(bootstrap, dst, n, 2)
    counts = Counter(got)
    assert len(got) == n, (len(got), [v for v, c in counts.items() if c > 1][:5])
    assert set(counts) == {f"v{i}" for i in range(n)}


def test_exactly_once_options() -> None:
    from zurau.spark.errors import KafkaOptionError
    from zurau.spark.options import parse_sink_options

    base = {"kafka.bootstrap.servers": "127.0.0.1:9092"}
    plain = parse_sink_options({**base, "topic": "t"})
    assert not plain.exactly_once and "transaction.timeout.ms" not in plain.producer_config()
    eo = parse_sink_options({**base, "topic": "t", "exactlyOnce": "true"})
    assert eo.exactly_once and eo.marker_topic == "zurau-sink-markers"
    assert eo.producer_config()["transaction.timeout.ms"] == 60_000
    longer = parse_sink_options(
        {
            **base,
            "exactlyOnce": "true",
            "exactlyOnce.markerTopic": "m",
            "kafka.transaction.timeout.ms": "300000",
        }
    )
    assert longer.marker_topic == "m" and longer.producer_config()["transaction.timeout.ms"] == "300000"
    assert parse_sink_options({**base, "exactlyOnce": "true"}).marker_topic == "zurau-sink-markers"
    with pytest.raises(KafkaOptionError, match="marker topic must not be the topic"):
        parse_sink_options({**base, "topic": "t", "exactlyOnce": "true", "exactlyOnce.markerTopic": "t"})
    with pytest.raises(KafkaOptionError, match="transactional.id"):
        parse_sink_options({**base, "topic": "t", "exactlyOnce": "true", "kafka.transactional.id": "x"})


def test_batch_writes_refuse_exactly_once() -> None:
    from pyspark.sql.types import StringType, StructType

    from zurau.spark.errors import KafkaOptionError
    from zurau.spark.sink import ZurauBatchWriter

    opts = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "t", "exactlyOnce": "true"}
    with pytest.raises(KafkaOptionError, match="streaming writes"):
        ZurauBatchWriter(opts, StructType().add("value", StringType()))
