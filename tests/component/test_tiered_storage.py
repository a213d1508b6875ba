"""Tiered storage end to end on one in-process broker with the ``file`` plugin (issue 33).

A topic with ``remote.storage.enable=true``, tiny segments and a tiny ``local.retention.bytes``:
closed segments are copied to the remote directory and deleted locally, and real clients
(confluent-kafka, kafka-python) read everything from offset 0 byte-exact (keys, headers,
timestamps; aborted transactional records hidden from read_committed); ListOffsets answers
EARLIEST (the remote start), EARLIEST_LOCAL (-4) and LATEST_TIERED (-5); a compacted topic is
refused; deleting the topic deletes its remote data.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition

from tests.support.waiting import wait_for
from zurau.embedded import EmbeddedBroker

N = 400
VALUE = 10_000  # 400 x 10 kB: four 1 MiB segments (Kafka's smallest segment.bytes)


def _tiered_broker(tmp_path: Path) -> EmbeddedBroker:
    return EmbeddedBroker(
        tmp_path / "data",
        **{
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": "file",
            "rsm.config.dir": str(tmp_path / "remote"),
            "remote.log.manager.task.interval.ms": "200",
            "log.retention.check.interval.ms": "200",
            "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        },
    )


def _remote_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.log")) if root.exists() else []


def _produce(bs: str, topic: str) -> list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]]:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0, "enable.idempotence": True})
    sent = []
    base = int(time.time() * 1000) - N
    for i in range(N):
        key, value = f"k{i}".encode(), (f"v{i}-".encode() + bytes([i % 251]) * VALUE)
        headers = [("h", str(i).encode())]
        ts = base + i
        p.produce(topic, value, key, timestamp=ts, headers=headers)
        sent.append((key, value, ts, headers))
        if i % 20 == 19:
            p.flush(10)
    assert p.flush(10) == 0
    return sent


def _read_all(bs: str, topic: str, n: int, isolation: str = "read_uncommitted") -> list:
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": f"g-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + 60
    while len(out) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            continue
        out.append(m)
    c.close()
    return out


def test_tiered_topic_reads_from_offset_zero_byte_exact(tmp_path: Path) -> None:
    with _tiered_broker(tmp_path) as broker:
        bs = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        topic = "tiered"
        fs = admin.create_topics(
            [
                NewTopic(
                    topic,
                    1,
                    1,
                    config={
                        "remote.storage.enable": "true",
                        "segment.bytes": "1048576",
                        "local.retention.bytes": "1048576",
                        "retention.ms": "-1",
                    },
                )
            ]
        )
        fs[topic].result(10)
        sent = _produce(bs, topic)

        # Segments are copied and deleted locally: the local log starts above 0.
        c = Consumer({"bootstrap.servers": bs, "group.id": "probe"})

        def local_start() -> int:
            earliest_local = c.offsets_for_times([TopicPartition(topic, 0, -4)], 5)[0].offset
            return earliest_local

        wait_for(lambda: local_start() >= 100, timeout=60, what="local segments deleted after their copy")
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), 5)
        assert (low, high) == (0, N)
        tiered = c.offsets_for_times([TopicPartition(topic, 0, -5)], 5)[0].offset
        assert tiered >= local_start() - 1
        c.close()
        assert _remote_files(tmp_path / "remote")

        got = _read_all(bs, topic, N)
        assert [(m.key(), m.value(), m.timestamp()[1], m.headers()) for m in got] == sent
        assert [m.offset() for m in got] == list(range(N))

        # ListOffsets by timestamp finds a record in the remote tier.
        c = Consumer({"bootstrap.servers": bs, "group.id": "probe2"})
        found = c.offsets_for_times([TopicPartition(topic, 0, sent[10][2])], 5)[0].offset
        assert found == 10
        c.close()

        # kafka-python reads the remote part too.
        kc = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, consumer_timeout_ms=20_000)
        tp = KPTopicPartition(topic, 0)
        kc.assign([tp])
        kc.seek(tp, 0)
        read = []
        for m in kc:
            read.append((m.offset, m.key, m.value, m.timestamp))
            if len(read) == 150:
                break
        kc.close()
        assert read == [(i, k, v, ts) for i, (k, v, ts, _h) in enumerate(sent[:150])]

        # Deleting the topic deletes its remote data.
        admin.delete_topics([topic])[topic].result(10)
        wait_for(lambda: not _remote_files(tmp_path / "remote"), timeout=30, what="remote segments deleted")


def test_compacted_tiered_topic_is_refused(tmp_path: Path) -> None:
    with _tiered_broker(tmp_path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        fs = admin.create_topics(
            [NewTopic("c", 1, 1, config={"remote.storage.enable": "true", "cleanup.policy": "compact"})]
        )
        with pytest.raises(KafkaException, match="(?i)compact"):
            fs["c"].result(10)


def test_remote_retention_deletes_the_oldest_segments_and_moves_the_log_start(tmp_path: Path) -> None:
    with _tiered_broker(tmp_path) as broker:
        bs = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        topic = "expiring"
        config = {"remote.storage.enable": "true", "segment.bytes": "1048576", "local.retention.bytes": "1048576"}
        admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(10)
        sent = _produce(bs, topic)
        c = Consumer({"bootstrap.servers": bs, "group.id": "probe"})
        tp = TopicPartition(topic, 0)

        def offsets(ts: int) -> int:
            return c.offsets_for_times([TopicPartition(topic, 0, ts)], 5)[0].offset

        wait_for(lambda: offsets(-5) >= 200, timeout=60, what="three segments copied")
        before = _remote_files(tmp_path / "remote")
        assert c.get_watermark_offsets(tp, 5)[0] == 0

        # Total retention (both tiers) of about two segments: the oldest remote ones expire.
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[ConfigEntry("retention.bytes", "2200000", incremental_operation=AlterConfigOpType.SET)],
        )
        admin.incremental_alter_configs([resource])[resource].result(10)
        wait_for(lambda: c.get_watermark_offsets(tp, 5)[0] > 0, timeout=60, what="the log start moved")
        start = c.get_watermark_offsets(tp, 5)[0]

        def starts() -> list[int]:
            return [int(p.name.split("-")[0]) for p in _remote_files(tmp_path / "remote")]

        # The log start moves first, then the expired remote segments are deleted.
        wait_for(lambda: min(starts()) >= start, timeout=30, what="expired remote segments deleted")
        after = _remote_files(tmp_path / "remote")
        assert min(int(p.name.split("-")[0]) for p in before) < start
        # The new start is a segment boundary: the first offset of a remote segment still there,
        # or the local start; everything from it on is still served, byte-exact.
        assert start in {offsets(-4)} | {int(p.name.split("-")[0]) for p in after}
        got = _read_all(bs, topic, N - start)
        assert [(m.offset(), m.value()) for m in got] == [(i, sent[i][1]) for i in range(start, N)]

        # Turning tiering off (KIP-950) deletes the remote data; the log then starts locally.
        local_start = offsets(-4)
        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry("remote.log.delete.on.disable", "true", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("remote.storage.enable", "false", incremental_operation=AlterConfigOpType.SET),
            ],
        )
        admin.incremental_alter_configs([resource])[resource].result(10)
        wait_for(lambda: not _remote_files(tmp_path / "remote"), timeout=30, what="remote data deleted")
        wait_for(lambda: c.get_watermark_offsets(tp, 5)[0] == local_start, timeout=30, what="log starts locally")
        c.close()
