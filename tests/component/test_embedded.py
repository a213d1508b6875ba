"""EmbeddedBroker: both modes, data dirs, config overrides, and a shutdown that leaves nothing behind."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest

from zurau.config import ConfigError
from zurau.embedded import EmbeddedBroker


def open_fds() -> dict[str, str]:
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            out[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass  # the directory's own fd, already closed
    return out


@pytest.fixture(scope="module", autouse=True)
def warm_process_state() -> None:
    """uvloop/libuv create process-wide pipes with the first loop; keep them out of fd diffs."""
    with EmbeddedBroker():
        pass


def produce_and_consume(bootstrap: str, topic: str, n: int = 50) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), partition=0)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    from confluent_kafka import TopicPartition

    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(got) < n and time.monotonic() < deadline:
        for m in c.consume(100, 0.5):
            if not m.error():
                got.append(m.value())
    c.close()
    return got


def test_sync_mode_serves_clients_and_stops_without_leftovers() -> None:
    threads_before = set(threading.enumerate())
    fds_before = open_fds()
    with EmbeddedBroker(num_partitions=1) as b:
        host, port = b.bootstrap_servers.split(":")
        assert host == "127.0.0.1" and int(port) == b.port > 0
        assert b.running
        data_dir = b.data_dir
        assert produce_and_consume(b.bootstrap_servers, "sync-topic") == [f"v{i}".encode() for i in range(50)]
        time.sleep(1.2)  # let a maintenance pass (flush on an executor thread) run
        assert any(t.name == "zurau-embedded-broker" for t in threading.enumerate())
        assert any(str(data_dir) in target for target in open_fds().values())
    import gc

    gc.collect()
    assert set(threading.enumerate()) == threads_before
    leftover = {fd: t for fd, t in open_fds().items() if fds_before.get(fd) != t}
    assert leftover == {}, leftover
    assert not data_dir.exists(), "the temporary data dir must be removed"


async def test_async_mode_runs_on_the_callers_loop_and_leaves_no_task() -> None:
    fds_before = open_fds()
    tasks_before = asyncio.all_tasks()
    threads_before = {t.ident for t in threading.enumerate()}
    async with EmbeddedBroker() as b:
        data_dir = b.data_dir
        assert b.running
        assert {t.ident for t in threading.enumerate()} <= threads_before | _executor_idents()
        # A client in the same loop, with a long poll in flight when the broker stops.
        from zurau.client import ClientConfig, Consumer, Producer, TopicPartition

        cfg = ClientConfig.load(bootstrap_servers=b.bootstrap_servers)
        async with Producer(cfg, linger_ms=0) as p:
            md = await (await p.send("async-topic", b"hello"))
        assert md.offset == 0
        consumer = Consumer(cfg, fetch_max_wait_ms=5000)
        await consumer.start()
        consumer.assign([TopicPartition("async-topic", 0)])
        consumer.seek(TopicPartition("async-topic", 0), 1)
        poll = asyncio.create_task(consumer.getmany(timeout_ms=3000))
        await asyncio.sleep(0.2)  # the fetch now waits in the broker's purgatory
    leftover_tasks = {
        t
        for t in asyncio.all_tasks() - tasks_before
        if t is not poll and not t.done() and not _is_client_task(t)
    }
    assert leftover_tasks == set(), leftover_tasks
    # The consumer sees its connection drop; no broker file or socket stays open.
    poll.cancel()
    await asyncio.gather(poll, return_exceptions=True)
    await consumer.close()
    leftover = {fd: t for fd, t in open_fds().items() if fds_before.get(fd) != t}
    assert leftover == {}, leftover
    assert not data_dir.exists()


def _is_client_task(task: asyncio.Task[object]) -> bool:
    """A task of the test's own client (its fetch is still waiting when the broker goes)."""
    frame = getattr(task.get_coro(), "cr_frame", None)
    return frame is not None and frame.f_globals.get("__name__", "").startswith("zurau.client")


def _executor_idents() -> set[int | None]:
    """Worker threads of the running loop's default executor (they belong to the caller's loop)."""
    loop = asyncio.get_running_loop()
    executor = getattr(loop, "_default_executor", None)
    return {t.ident for t in getattr(executor, "_threads", ())}


def test_a_given_data_dir_is_kept_and_reused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with EmbeddedBroker(data) as b:
        b.create_topic("kept", partitions=2)
        produce_and_consume(b.bootstrap_servers, "kept", n=5)
    assert (data / "kept-0").is_dir() and (data / "kept-1").is_dir()
    with EmbeddedBroker(data) as b:  # restarts on the same data, on a new ephemeral port
        assert produce_and_consume(b.bootstrap_servers, "kept", n=0) == []
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "x"})
        try:
            assert c.get_watermark_offsets(TopicPartition("kept", 0), timeout=10)[1] == 5
        finally:
            c.close()
    assert data.is_dir()


def test_keyword_overrides_become_kafka_config_names() -> None:
    b = EmbeddedBroker(log_segment_bytes=1_048_576, auto_create_topics_enable=False, **{"num.partitions": 4})
    try:
        assert b.config.get("log.segment.bytes") == 1_048_576
        assert b.config.get("auto.create.topics.enable") is False
        assert b.config.get("num.partitions") == 4
    finally:
        b._cleanup_dir()


def test_a_bad_config_raises_and_leaves_no_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(ConfigError, match="log.segment.bytes"):
        EmbeddedBroker(log_segment_bytes=1024)  # Kafka's minimum is 1 MiB
    assert list(tmp_path.iterdir()) == []


def test_a_port_in_use_fails_start_cleanly(tmp_path: Path) -> None:
    with EmbeddedBroker() as first:
        threads = set(threading.enumerate())
        b = EmbeddedBroker(listeners=f"PLAINTEXT://127.0.0.1:{first.port}")
        with pytest.raises(OSError):
            b.start()
        assert not b.data_dir.exists()
        assert set(threading.enumerate()) == threads


def test_topic_helpers_and_double_start() -> None:
    with EmbeddedBroker() as b:
        assert b.create_topic("helper", partitions=3, configs={"retention.ms": "1000"}) == "helper"
        assert b.broker.image.get("helper").num_partitions == 3
        with pytest.raises(RuntimeError, match="already running"):
            b.start()
        b.delete_topic("helper")
        assert b.broker.image.get("helper") is None
    b.stop()  # idempotent
