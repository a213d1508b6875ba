"""MirrorMaker 2's record formats (the bytes Kafka's Java classes write), offset translation from
offset syncs, the replication policy's naming and topic filter."""

from __future__ import annotations

import pytest

from zurau.config import ConfigException
from zurau.connect.mirror.checkpoint import OffsetTranslator
from zurau.connect.mirror.config import MirrorSettings
from zurau.connect.mirror.formats import Checkpoint, FormatError, OffsetSync
from zurau.connect.mirror.topics import decode_partitions, encode_partitions
from zurau.types import TopicPartition


def test_offset_sync_bytes() -> None:
    sync = OffsetSync("orders", 2, 10, 12)
    # Kafka protocol STRING (int16 length + UTF-8), INT32, then INT64 INT64.
    assert sync.key() == b"\x00\x06orders\x00\x00\x00\x02"
    assert sync.value() == (10).to_bytes(8, "big") + (12).to_bytes(8, "big")
    assert OffsetSync.decode(sync.key(), sync.value()) == sync
    with pytest.raises(FormatError):
        OffsetSync.decode(b"\x00\x09short", sync.value())


def test_checkpoint_bytes() -> None:
    cp = Checkpoint("app", "src.orders", 1, 6, 8, "meta")
    assert cp.key() == b"\x00\x03app\x00\x0asrc.orders\x00\x00\x00\x01"
    assert cp.value() == b"\x00\x00" + (6).to_bytes(8, "big") + (8).to_bytes(8, "big") + b"\x00\x04meta"
    assert Checkpoint.decode(cp.key(), cp.value()) == cp
    assert cp.connect_partition() == {"group": "app", "topic": "src.orders", "partition": 1}
    with pytest.raises(FormatError, match="version"):
        Checkpoint.decode(cp.key(), b"\x00\x01" + cp.value()[2:])


def test_offset_translation() -> None:
    t = OffsetTranslator()
    tp = TopicPartition("orders", 0)
    assert t.translate(tp, 5) is None
    t.add(OffsetSync("orders", 0, 3, 13))
    t.add(OffsetSync("orders", 0, 10, 25))  # a gap downstream between 3 and 10
    assert t.translate(tp, 2) is None  # before the first sync: unknown
    assert t.translate(tp, 3) == 13
    assert t.translate(tp, 7) == 17  # between two syncs offsets advance together
    assert t.translate(tp, 10) == 25
    assert t.translate(tp, 11) == 26 and t.translate(tp, 40) == 26  # past the last sync: the next record
    # A restarted copy re-synced at upstream 5: later syncs of the old copy no longer count.
    t.add(OffsetSync("orders", 0, 5, 40))
    assert t.translate(tp, 10) == 41
    assert t.translate(tp, 4) == 14


def test_replication_policy_and_topic_filter() -> None:
    base = {"source.cluster.alias": "east", "source.cluster.bootstrap.servers": "a:9092",
            "target.cluster.bootstrap.servers": "b:9092", "target.cluster.alias": "west"}
    settings, _ = MirrorSettings.from_props({**base, "topics": "orders.*,pay"})
    assert settings.policy.format_remote_topic("east", "orders") == "east.orders"
    assert settings.offset_syncs_topic == "mm2-offset-syncs.west.internal"
    assert settings.policy.checkpoints_topic("east") == "east.checkpoints.internal"
    assert settings.replicates("orders-v2") and settings.replicates("pay") and not settings.replicates("payments")
    assert not settings.replicates("orders.internal")  # topics.exclude default
    settings, _ = MirrorSettings.from_props({**base, "replication.policy.separator": "_"})
    assert settings.policy.format_remote_topic("east", "t") == "east_t"
    assert not settings.replicates("west_t")  # the target's own data coming back: a cycle
    assert settings.replicates("north_t")
    identity, _ = MirrorSettings.from_props(
        {**base, "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"})
    assert identity.policy.format_remote_topic("east", "t") == "t"
    with pytest.raises(ConfigException):
        MirrorSettings.from_props({**base, "replication.policy.class": "com.example.Custom"})


def test_task_partition_assignment_text() -> None:
    tps = [TopicPartition("my-topic", 0), TopicPartition("a-b-c", 12)]
    assert encode_partitions(tps) == "my-topic-0,a-b-c-12"
    assert decode_partitions(encode_partitions(tps)) == tps
