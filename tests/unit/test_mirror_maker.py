"""MirrorMaker 2's heartbeat record (the bytes Kafka's ``Heartbeat`` writes), the topic config filter
(``DefaultConfigPropertyFilter`` and the config sync operations), the ACL mapping of the ACL sync,
the replication policy's heartbeat/internal/cycle rules, ``MirrorClient``'s hop counting, and an
mm2.properties turned into worker and connector configs (dedicated mode)."""

from __future__ import annotations

import re

import pytest

from zurau.client.admin import AlterConfigOp, AlterOp, ConfigEntry, ConfigSource
from zurau.connect.mirror.client import replication_hops, upstream_clusters
from zurau.connect.mirror.config import MirrorSettings, ReplicationPolicy
from zurau.connect.mirror.formats import FormatError, Heartbeat
from zurau.connect.mirror.maker import MirrorMaker, MirrorMakerConfig, MirrorMakerConfigError, SourceAndTarget
from zurau.connect.mirror.source import SOURCE_DEF
from zurau.connect.mirror.topic_acls import bindings_to_sync
from zurau.connect.mirror.topic_configs import ConfigPropertyFilter
from zurau.protocol.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

BASE = {
    "source.cluster.alias": "A",
    "target.cluster.alias": "B",
    "source.cluster.bootstrap.servers": "a:9092",
    "target.cluster.bootstrap.servers": "b:9092",
}


def test_heartbeat_bytes() -> None:
    beat = Heartbeat("A", "B", 1_700_000_000_123)
    # Kafka's Heartbeat: key STRING sourceClusterAlias, STRING targetClusterAlias; value the
    # INT16 version header (0) then INT64 timestamp.
    assert beat.key() == b"\x00\x01A\x00\x01B"
    assert beat.value() == b"\x00\x00" + (1_700_000_000_123).to_bytes(8, "big")
    assert Heartbeat.decode(
        b"\x00\x04east\x00\x04west", b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x2a"
    ) == Heartbeat("east", "west", 42)
    assert Heartbeat.decode(beat.key(), beat.value()) == beat
    assert beat.connect_partition() == {"sourceClusterAlias": "A", "targetClusterAlias": "B"}
    with pytest.raises(FormatError, match="version"):
        Heartbeat.decode(beat.key(), b"\x00\x01" + beat.value()[2:])
    with pytest.raises(FormatError):
        Heartbeat.decode(beat.key(), b"\x00\x00\x01")
    with pytest.raises(FormatError):
        Heartbeat.decode(b"\x00\x05A", beat.value())


def entry(
    name: str,
    value: str | None,
    source: ConfigSource = ConfigSource.DYNAMIC_TOPIC_CONFIG,
    read_only: bool = False,
    sensitive: bool = False,
) -> ConfigEntry:
    return ConfigEntry(name, value, source, read_only, sensitive)


ENTRIES = [
    entry("retention.ms", "3600000"),
    entry("cleanup.policy", "compact"),
    entry("segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    entry("min.insync.replicas", "2"),  # excluded by default
    entry("message.timestamp.type", "LogAppendTime"),  # excluded by default
    entry("max.message.bytes", "2000000", ConfigSource.STATIC_BROKER_CONFIG),  # a broker's setting
    entry("compression.type", "zstd", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    entry("some.secret", None, sensitive=True),
    entry("read.only.thing", "1", read_only=True),
]


def test_config_property_filter() -> None:
    filt = ConfigPropertyFilter()
    assert not filt.should_replicate_config_property("min.insync.replicas")
    assert not filt.should_replicate_config_property("leader.replication.throttled.replicas")
    assert filt.should_replicate_config_property("retention.ms")
    assert filt.creation_configs(ENTRIES) == {
        "retention.ms": "3600000",
        "cleanup.policy": "compact",
        "compression.type": "zstd",
    }
    assert filt.alter_ops(ENTRIES) == [
        AlterConfigOp("retention.ms", AlterOp.SET, "3600000"),
        AlterConfigOp("cleanup.policy", AlterOp.SET, "compact"),
        AlterConfigOp("segment.bytes", AlterOp.DELETE),
        AlterConfigOp("compression.type", AlterOp.SET, "zstd"),
    ]
    # use.defaults.from=source: the source's defaults are copied too.
    source_defaults = ConfigPropertyFilter(use_defaults_from="source")
    assert source_defaults.creation_configs(ENTRIES)["segment.bytes"] == "1073741824"
    assert AlterConfigOp("segment.bytes", AlterOp.SET, "1073741824") in source_defaults.alter_ops(ENTRIES)


def test_config_property_filter_settings() -> None:
    _, parsed = MirrorSettings.from_props(
        {**BASE, "config.properties.exclude": r"retention\..*, cleanup\.policy"}, SOURCE_DEF
    )
    filt = ConfigPropertyFilter.from_parsed(parsed, {"config.properties.exclude": "x"})
    # The list replaces the default one: min.insync.replicas and the timestamp type are copied now.
    assert filt.creation_configs(ENTRIES) == {
        "compression.type": "zstd",
        "min.insync.replicas": "2",
        "message.timestamp.type": "LogAppendTime",
    }
    # The deprecated name is honoured when the new one is not given.
    given = {**BASE, "config.properties.blacklist": "compression.type", "use.defaults.from": "source"}
    _, parsed = MirrorSettings.from_props(given, SOURCE_DEF)
    filt = ConfigPropertyFilter.from_parsed(parsed, given)
    assert filt.exclude == (re.compile("compression.type"),) and filt.use_defaults_from == "source"
    errors = {v.name for v in SOURCE_DEF.validate({**BASE, "use.defaults.from": "both"}) if v.errors}
    assert errors == {"use.defaults.from"}


def acl(
    name: str,
    op: AclOperation,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    resource: ResourceType = ResourceType.TOPIC,
    principal: str = "User:alice",
) -> AclBinding:
    return AclBinding(resource, name, pattern, principal, "*", op, permission)


def test_acl_mapping() -> None:
    settings, _ = MirrorSettings.from_props({**BASE, "topics": "orders,payments"})
    source = [
        acl("orders", AclOperation.READ),
        acl("orders", AclOperation.ALL),  # ALLOW ALL -> ALLOW READ
        acl("orders", AclOperation.WRITE),  # only MirrorMaker writes remote topics
        acl("orders", AclOperation.WRITE, AclPermissionType.DENY, principal="User:eve"),  # DENY stays
        acl("orders", AclOperation.ALL, AclPermissionType.DENY, principal="User:eve"),
        acl("payments", AclOperation.DESCRIBE, principal="User:bob"),
        acl("pay", AclOperation.READ, pattern=PatternType.PREFIXED),  # prefixes are not copied
        acl("ignored", AclOperation.READ),  # not replicated
        acl("B.orders", AclOperation.READ),  # came from the target: a cycle
        acl("app", AclOperation.READ, resource=ResourceType.GROUP),
    ]
    assert bindings_to_sync(source, settings.replicates, settings.remote_topic) == [
        acl("A.orders", AclOperation.READ),
        acl("A.orders", AclOperation.WRITE, AclPermissionType.DENY, principal="User:eve"),
        acl("A.orders", AclOperation.ALL, AclPermissionType.DENY, principal="User:eve"),
        acl("A.payments", AclOperation.DESCRIBE, principal="User:bob"),
    ]


def test_policy_heartbeats_internal_topics_and_cycles() -> None:
    settings, _ = MirrorSettings.from_props({**BASE, "topics": "orders"})
    policy = settings.policy
    assert (
        policy.upstream_topic("C.A.orders") == "A.orders" and policy.original_topic("C.A.orders") == "orders"
    )
    assert policy.is_heartbeats_topic("heartbeats") and policy.is_heartbeats_topic("C.heartbeats")
    # Heartbeats travel whatever `topics` says; internal topics and cycles never do.
    assert settings.replicates("heartbeats") and settings.replicates("C.heartbeats")
    assert not settings.replicates("B.heartbeats") and not settings.replicates("C.B.heartbeats")
    assert not settings.replicates("B.orders") and settings.replicates("orders")
    for internal in (
        "mm2-offset-syncs.B.internal",
        "A.checkpoints.internal",
        "connect-offsets-internal",
        "__consumer_offsets",
        ".hidden",
    ):
        assert policy.is_internal_topic(internal) and not settings.replicates(internal)
    off, _ = MirrorSettings.from_props(
        {**BASE, "topics": "orders", "heartbeats.replication.enabled": "false"}
    )
    assert not off.replicates("heartbeats")
    identity = ReplicationPolicy(identity=True)
    assert identity.format_remote_topic("A", "orders") == "orders"
    assert identity.format_remote_topic("A", "heartbeats") == "A.heartbeats"  # still says where from
    assert identity.topic_source("A.heartbeats") == "A" and identity.topic_source("x.orders") is None


def test_upstream_clusters_and_hops() -> None:
    policy = ReplicationPolicy()
    topics = [
        "heartbeats",
        "A.heartbeats",
        "C.A.heartbeats",
        "C.heartbeats",
        "A.orders",
        "B.checkpoints.internal",
    ]
    assert upstream_clusters(policy, topics) == {"A", "C"}
    assert replication_hops(policy, topics, "A") == 1
    assert replication_hops(policy, ["C.A.heartbeats"], "A") == 2
    assert replication_hops(policy, topics, "D") == -1


MM2 = {
    "clusters": "A, B, C",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "C.bootstrap.servers": "c:9092",
    "security.protocol": "PLAINTEXT",  # top-level client setting: every cluster
    "C.security.protocol": "SSL",
    "A->B.enabled": "true",
    "A->B.topics": "orders.*",
    "A->B.producer.override.linger.ms": "5",
    "B->A.enabled": "true",
    "C->A.emit.heartbeats.enabled": "false",
    "A->C.emit.heartbeats.enabled": "false",
    "B->C.emit.heartbeats.enabled": "false",
    "C->B.emit.heartbeats.enabled": "false",
    "replication.factor": "1",
    "sync.topic.acls.enabled": "false",
    "tasks.max": "4",
    "offset.storage.replication.factor": "1",
    "B.offset.flush.interval.ms": "500",
    "not.a.connector.setting": "x",
}


def test_mm2_properties_into_flows() -> None:
    config = MirrorMakerConfig(MM2)
    pairs = config.cluster_pairs()
    assert pairs == [SourceAndTarget("A", "B"), SourceAndTarget("B", "A")]
    ab = config.connector_config(
        SourceAndTarget("A", "B"),
        "MirrorSourceConnector",
        "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    )
    assert ab["enabled"] == "true" and ab["topics"] == "orders.*" and ab["tasks.max"] == "4"
    assert ab["source.cluster.alias"] == "A" and ab["target.cluster.alias"] == "B"
    assert (
        ab["source.cluster.bootstrap.servers"] == "a:9092"
        and ab["target.cluster.bootstrap.servers"] == "b:9092"
    )
    assert ab["source.cluster.security.protocol"] == "PLAINTEXT"
    assert ab["source.consumer.bootstrap.servers"] == "a:9092"
    assert ab["replication.factor"] == "1" and ab["sync.topic.acls.enabled"] == "false"
    assert ab["producer.override.linger.ms"] == "5" and "not.a.connector.setting" not in ab
    assert ab["name"] == "MirrorSourceConnector"
    ba = config.connector_config(SourceAndTarget("B", "A"), "MirrorSourceConnector", "x")
    assert "orders.*" not in ba.values()  # A->B's settings stay on A->B
    worker = config.worker_props(SourceAndTarget("A", "B"))
    assert worker["bootstrap.servers"] == "b:9092" and worker["group.id"] == "A-mm2"
    assert worker["offset.storage.topic"] == "mm2-offsets.A.internal"
    assert worker["config.storage.topic"] == "mm2-configs.A.internal"
    assert worker["status.storage.topic"] == "mm2-status.A.internal"
    assert worker["offset.storage.replication.factor"] == "1" and worker["offset.flush.interval.ms"] == "500"
    assert worker["value.converter"] == "org.apache.kafka.connect.converters.ByteArrayConverter"
    # C's own security.protocol wins over the top-level one.
    assert config.cluster_props("C")["security.protocol"] == "SSL"
    assert config.cluster_props("C")["admin.security.protocol"] == "SSL"


def test_mm2_heartbeat_only_pairs_and_clusters_option() -> None:
    # Only A->B is enabled, but heartbeats are on: B->A runs too, for the heartbeat connector,
    # with the flow itself disabled.
    config = MirrorMakerConfig(
        {
            "clusters": "A,B",
            "A.bootstrap.servers": "a:1",
            "B.bootstrap.servers": "b:1",
            "A->B.enabled": "true",
        }
    )
    assert config.cluster_pairs() == [SourceAndTarget("A", "B"), SourceAndTarget("B", "A")]
    assert config.connector_config(SourceAndTarget("B", "A"), "n", "c")["enabled"] == "false"
    assert [str(p) for p in MirrorMaker(config, ["B"]).pairs] == ["A->B"]
    off = MirrorMakerConfig(
        {
            "clusters": "A,B",
            "A.bootstrap.servers": "a:1",
            "B.bootstrap.servers": "b:1",
            "A->B.enabled": "true",
            "emit.heartbeats.enabled": "false",
        }
    )
    assert off.cluster_pairs() == [SourceAndTarget("A", "B")]
    with pytest.raises(MirrorMakerConfigError, match="No source->target"):
        MirrorMaker(off, ["A"])
    with pytest.raises(MirrorMakerConfigError, match="not in clusters"):
        MirrorMaker(off, ["Z"])
    with pytest.raises(MirrorMakerConfigError, match="clusters"):
        MirrorMakerConfig({"A.bootstrap.servers": "a:1"})
    with pytest.raises(MirrorMakerConfigError, match="B.bootstrap.servers"):
        MirrorMakerConfig({"clusters": "A,B", "A.bootstrap.servers": "a:1"})
