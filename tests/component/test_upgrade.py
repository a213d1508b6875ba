"""Upgrade: a data directory written by the single-node Zurau before the controller (topics in
``__cluster_metadata/topics.json``) starts under today's code with every topic, config, record and
committed group offset.

``tests/fixtures/pre_kraft_data.tgz`` was written by Zurau at commit 09fce28 (the last release
with ``topics.json``): topic ``orders`` (3 partitions, ``retention.ms=86400000``), 300 records from
an idempotent producer, and group ``billing`` with offsets committed after 120 records
(partition 0: 102, partition 1: 18, partition 2: none); ``offsets.topic.num.partitions=2``.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from zurau import EmbeddedBroker

FIXTURE = Path(__file__).parent.parent / "fixtures" / "pre_kraft_data.tgz"


def _check(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10)
    assert set(md.topics) == {"orders", "__consumer_offsets"}
    assert len(md.topics["orders"].partitions) == 3 and len(md.topics["__consumer_offsets"].partitions) == 2
    (described,) = admin.describe_configs([ConfigResource("topic", "orders")]).values()
    entry = described.result()["retention.ms"]
    assert entry.value == "86400000" and entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False})
    try:
        committed = c.committed([TopicPartition("orders", i) for i in range(3)], timeout=10)
        assert [tp.offset for tp in committed] == [102, 18, -1001]
        ends = [c.get_watermark_offsets(TopicPartition("orders", i), timeout=10) for i in range(3)]
        assert sum(hi - lo for lo, hi in ends) == 300
    finally:
        c.close()


def test_pre_controller_data_dir_starts_with_nothing_lost(tmp_path: Path) -> None:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    with EmbeddedBroker(data) as b:
        _check(b.bootstrap_servers)
    legacy = data / "__cluster_metadata"
    assert (legacy / "topics.json.migrated").exists() and not (legacy / "topics.json").exists()
    assert (data / "__cluster_metadata-0").is_dir() and (data / "meta.properties").exists()
    with EmbeddedBroker(data) as b:  # the second start replays the metadata log
        _check(b.bootstrap_servers)
