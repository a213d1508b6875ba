"""The local metadata log: replay after restart, torn tails, meta.properties, and the migration of
the pre-KRaft ``topics.json`` / ``producer_id_block`` files."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from zurau.metadata.features import bootstrap_feature_records
from zurau.metadata.metadata_log import METADATA_TOPIC, MetadataLog, open_metadata
from zurau.metadata.records import ConfigRecord, PartitionRecord, TopicRecord
from zurau.protocol.errors import KafkaStorageError

NOW = 1_700_000_000_000


def test_records_survive_a_restart(tmp_path: Path) -> None:
    log, image = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    base = log.end_offset  # the bootstrap batch (feature levels) comes first
    assert base == len(bootstrap_feature_records()) and image.offset == base - 1
    tid = uuid.uuid4()
    recs = [TopicRecord("a", tid), PartitionRecord(0, tid, (1,), (1,), 1)]
    assert log.append(recs, NOW) == base + 1
    log.append([ConfigRecord(2, "a", "retention.ms", "9")], NOW)
    log.close()
    log2, image2 = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    try:
        t = image2.get("a")
        assert t is not None and t.topic_id == tid and dict(t.configs) == {"retention.ms": "9"}
        assert image2.cluster_id == image.cluster_id and image2.offset == base + 2
    finally:
        log2.close()


def test_a_torn_batch_is_dropped_whole(tmp_path: Path) -> None:
    log, _ = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    base = log.end_offset
    tid = uuid.uuid4()
    log.append([TopicRecord("kept", tid)], NOW)
    t2 = uuid.uuid4()
    log.append([TopicRecord("torn", t2), PartitionRecord(0, t2, (1,), (1,), 1)], NOW)
    log.close()
    seg = next((tmp_path / f"{METADATA_TOPIC}-0").glob("*.log"))
    seg.write_bytes(seg.read_bytes()[:-7])
    log2, image = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    try:
        assert image.names() == ["kept"], "a half-written controller result is not applied at all"
        assert log2.end_offset == base + 1
    finally:
        log2.close()


def test_another_cluster_or_node_is_refused(tmp_path: Path) -> None:
    log, image = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    log.close()
    with pytest.raises(KafkaStorageError, match="cluster"):
        open_metadata([tmp_path], tmp_path, 1, "another-cluster-id0000", NOW)
    with pytest.raises(KafkaStorageError, match="node.id"):
        open_metadata([tmp_path], tmp_path, 2, None, NOW)
    assert "cluster.id=" + image.cluster_id in (tmp_path / "meta.properties").read_text()


def test_topics_json_is_migrated_without_loss(tmp_path: Path) -> None:
    legacy = tmp_path / "__cluster_metadata"
    legacy.mkdir()
    tid = uuid.uuid4()
    (legacy / "topics.json").write_text(
        json.dumps(
            {
                "version": 1,
                "cluster_id": "AAAAAAAAAAAAAAAAAAAAAA",
                "topics": {"orders": {"topic_id": str(tid), "partitions": 3, "configs": {"retention.ms": "1000"}}},
            }
        )
    )
    (legacy / "producer_id_block").write_text("4000\n")
    log, image = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    log.close()
    t = image.get("orders")
    assert image.cluster_id == "AAAAAAAAAAAAAAAAAAAAAA"
    assert t is not None and t.topic_id == tid and t.num_partitions == 3 and dict(t.configs) == {"retention.ms": "1000"}
    assert image.next_producer_id == 4000
    assert not (legacy / "topics.json").exists() and (legacy / "topics.json.migrated").exists()
    # A second start replays the log, not the (renamed) legacy file.
    log, again = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    log.close()
    assert again.get("orders") == t and again.next_producer_id == 4000


def test_a_crash_between_migration_and_rename_does_not_migrate_twice(tmp_path: Path) -> None:
    legacy = tmp_path / "__cluster_metadata"
    legacy.mkdir()
    doc = {"version": 1, "cluster_id": "BBBBBBBBBBBBBBBBBBBBBB",
           "topics": {"a": {"topic_id": str(uuid.uuid4()), "partitions": 1, "configs": {}}}}
    (legacy / "topics.json").write_text(json.dumps(doc))
    log, _ = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    log.close()
    (legacy / "topics.json.migrated").rename(legacy / "topics.json")  # as if the rename never happened
    log, image = open_metadata([tmp_path], tmp_path, 1, None, NOW)
    log.close()
    # One batch: the feature levels, then the topic and its partition.
    assert image.names() == ["a"] and image.offset == len(bootstrap_feature_records()) + 1


def test_metadata_log_is_kafkas_layout(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, NOW)
    log.append([TopicRecord("x", uuid.uuid4())], NOW)
    log.close()
    assert (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").stat().st_size > 61
