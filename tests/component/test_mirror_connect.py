"""MirrorMaker 2's connectors on a Zurau Connect worker between two embedded brokers: records copied
to ``<alias>.<topic>`` byte for byte (keys, values, headers, timestamps, partitions), a worker
restart that resumes from the stored source offsets without copying anything twice, offset syncs
and checkpoints in MM2's binary formats, a consumer group's source offsets translated and
committed on the target, and bad configs refused by ``/config/validate``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.embedded_connect import EmbeddedConnect
from zurau.connect.mirror.formats import Checkpoint, OffsetSync

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def read_all(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list[Record]:
    """``count`` records of ``topic`` as (partition, key, value, headers, timestamp), then a short
    wait to see that no more arrive."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    out: list[Record] = []
    try:
        partitions = wait_for(lambda: consumer.list_topics(topic, timeout=5).topics[topic].partitions, timeout)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(partitions)])
        deadline = time.monotonic() + timeout
        quiet_until = None
        while quiet_until is None or time.monotonic() < quiet_until:
            assert time.monotonic() < deadline, f"{len(out)} of {count} records of {topic}"
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                out.append((msg.partition(), msg.key(), msg.value(), list(msg.headers() or []), msg.timestamp()[1]))
            if len(out) >= count and quiet_until is None:
                quiet_until = time.monotonic() + 1.0
    finally:
        consumer.close()
    return out


def produce(bootstrap: str, first: int, last: int) -> list[Record]:
    producer = Producer({"bootstrap.servers": bootstrap})
    sent: list[Record] = []
    for i in range(first, last):
        headers: list[tuple[str, bytes | None]] = [("trace", bytes([i, 0, 255])), ("empty", None)]
        key = None if i % 5 == 0 else f"k{i}".encode()
        value = b"\x00binary\xff" + i.to_bytes(2, "big")
        ts = 1_600_000_000_000 + i * 1000
        producer.produce("orders", key=key, value=value, partition=i % 3, headers=headers, timestamp=ts)
        sent.append((i % 3, key, value, headers, ts))
    producer.flush(10)
    return sent


def by_partition(records: list[Record]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for r in records:
        out.setdefault(r[0], []).append(r)
    return out


def offset_syncs(bootstrap: str) -> list[OffsetSync]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "syncs-reader", "enable.auto.commit": False})
    topic = "mm2-offset-syncs.target.internal"
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out = []
    try:
        while (msg := consumer.poll(1.0)) is not None:
            if not msg.error():
                out.append(OffsetSync.decode(msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def test_mirror_source_and_checkpoints_between_two_clusters(tmp_path: Path) -> None:
    with EmbeddedBroker() as source, EmbeddedBroker() as target:
        source.create_topic("orders", 3)
        source.create_topic("ignored", 1)
        # The remote topic exists already with 2 records in partition 0: downstream offsets there
        # run 2 ahead of upstream, so translation has something to do.
        target.create_topic("src.orders", 3)
        shift = Producer({"bootstrap.servers": target.bootstrap_servers})
        for _ in range(2):
            shift.produce("src.orders", value=b"pre-existing", partition=0)
        shift.flush(10)
        sent = produce(source.bootstrap_servers, 0, 30)
        config = {
            "connector.class": SOURCE, "tasks.max": "2", "source.cluster.alias": "src",
            "source.cluster.bootstrap.servers": source.bootstrap_servers,
            "target.cluster.bootstrap.servers": target.bootstrap_servers,
            "topics": "orders", "key.converter": BYTES, "value.converter": BYTES,
        }
        offsets_file = tmp_path / "connect.offsets"
        worker_props = {"offset_flush_interval_ms": 200, "offset.storage.file.filename": str(offsets_file)}
        with EmbeddedConnect(target.bootstrap_servers, **worker_props) as connect, \
                httpx.Client(base_url=connect.url, timeout=20) as http:
            bad = http.put(f"/connector-plugins/{SOURCE}/config/validate", json={
                **config, "name": "bad", "source.cluster.alias": None, "topics": "orders,(",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
            assert bad.status_code == 200, bad.text
            errors = {c["value"]["name"] for c in bad.json()["configs"] if c["value"]["errors"]}
            assert {"source.cluster.alias", "topics", "value.converter"} <= errors, errors
            assert http.post("/connectors", json={"name": "mirror", "config": config}).status_code == 201
            copied = read_all(target.bootstrap_servers, "src.orders", 32)
        copied = [r for r in copied if r[2] != b"pre-existing"]
        assert by_partition(copied) == by_partition(sent)
        # A clean stop flushed the source offsets: the restarted worker copies only what is new.
        sent += produce(source.bootstrap_servers, 30, 45)
        with EmbeddedConnect(target.bootstrap_servers, **worker_props) as connect, \
                httpx.Client(base_url=connect.url, timeout=20) as http:
            assert http.post("/connectors", json={"name": "mirror", "config": config}).status_code == 201
            copied = [r for r in read_all(target.bootstrap_servers, "src.orders", 47) if r[2] != b"pre-existing"]
            assert by_partition(copied) == by_partition(sent)  # nothing twice, nothing lost
            lister = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": "x"})
            assert "src.ignored" not in lister.list_topics(timeout=5).topics
            lister.close()

            syncs = offset_syncs(source.bootstrap_servers)
            assert syncs and all(s.topic == "orders" for s in syncs)
            assert all(s.downstream_offset - s.upstream_offset == (2 if s.partition == 0 else 0) for s in syncs)

            # A group on the source has read 6 records of partition 0 and all of partition 1.
            group = Consumer({"bootstrap.servers": source.bootstrap_servers, "group.id": "app",
                              "enable.auto.commit": False})
            group.commit(offsets=[TopicPartition("orders", 0, 6), TopicPartition("orders", 1, 15)], asynchronous=False)
            group.close()
            checkpoint_config = {
                "connector.class": CHECKPOINT, "tasks.max": "1", "source.cluster.alias": "src",
                "source.cluster.bootstrap.servers": source.bootstrap_servers,
                "target.cluster.bootstrap.servers": target.bootstrap_servers, "key.converter": BYTES,
                "value.converter": BYTES, "emit.checkpoints.interval.seconds": "1",
                "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
                "refresh.groups.interval.seconds": "1",
            }
            assert http.post("/connectors", json={"name": "checkpoints", "config": checkpoint_config}).status_code == 201

            on_target = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": "app",
                                  "enable.auto.commit": False})
            wanted = [TopicPartition("src.orders", 0), TopicPartition("src.orders", 1)]

            def translated() -> Any:
                got = {tp.partition: tp.offset for tp in on_target.committed(wanted, timeout=5)}
                return got if got == {0: 8, 1: 15} else None
            try:
                wait_for(translated)
            finally:
                on_target.close()
            checkpoints = read_all(target.bootstrap_servers, "src.checkpoints.internal", 2)
            decoded = {Checkpoint.decode(key, value) for _, key, value, _, _ in checkpoints}
            assert decoded == {Checkpoint("app", "src.orders", 0, 6, 8), Checkpoint("app", "src.orders", 1, 15, 15)}
