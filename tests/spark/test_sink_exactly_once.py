"""The ``zurau`` sink with ``exactlyOnce=true``: no duplicates after driver crashes and re-runs.

The protocol is described in :mod:`zurau.spark.eos`: tasks write inside transactions they leave
open, together with a per-(query, task) batch marker; the driver's ``commit`` ends them with EndTxn.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
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
    assert first.records == 10 and first.transactional_id is not None and not first.already_committed
    rerun = write(0, "b")  # the batch is re-run: the first attempt is fenced and aborted
    assert rerun.producer_epoch is not None and first.producer_epoch is not None
    assert rerun.producer_epoch > first.producer_epoch
    with pytest.raises(ProducerFencedError):
        writer.commit([first], 0)
    writer.commit([rerun], 0)
    writer.commit([rerun], 0)  # Spark may call commit twice for one batch: harmless
    again = write(0, "c")  # re-run after the commit (Spark had not recorded it): a no-op
    assert again.already_committed and again.records == 0 and again.transactional_id is None
    writer.commit([again], 0)
    nxt = write(1, "d")
    assert nxt.records == 10 and not nxt.already_committed
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
    assert not m1.already_committed  # an aborted batch left no marker
    writer.commit([m1], 0)
    assert committed_values(bootstrap, topic, 1, 1) == ["y"]


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
    assert eo.exactly_once and eo.marker_topic == "t"
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
    with pytest.raises(KafkaOptionError, match="marker topic"):
        parse_sink_options({**base, "exactlyOnce": "true"})
    with pytest.raises(KafkaOptionError, match="transactional.id"):
        parse_sink_options({**base, "topic": "t", "exactlyOnce": "true", "kafka.transactional.id": "x"})


def test_batch_writes_refuse_exactly_once() -> None:
    from pyspark.sql.types import StringType, StructType

    from zurau.spark.errors import KafkaOptionError
    from zurau.spark.sink import ZurauBatchWriter

    opts = {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "t", "exactlyOnce": "true"}
    with pytest.raises(KafkaOptionError, match="streaming writes"):
        ZurauBatchWriter(opts, StructType().add("value", StringType()))
