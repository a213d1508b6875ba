"""MirrorMaker 2's connector settings (the names of ``MirrorSourceConfig``/``MirrorCheckpointConfig``)
and its replication policies.

Common: ``source.cluster.alias`` (required), ``target.cluster.alias`` (default ``target``),
``source.cluster.bootstrap.servers`` and ``target.cluster.bootstrap.servers`` (required; the target
must be the worker's cluster, it is used for topic creation and group offsets), other
``source.cluster.*``/``target.cluster.*`` client settings, ``replication.policy.class``
(``org.apache.kafka.connect.mirror.DefaultReplicationPolicy`` or ``IdentityReplicationPolicy``),
``replication.policy.separator`` (``.``), ``offset-syncs.topic.location`` (``source`` or ``target``),
``topics``/``topics.exclude`` (comma-separated regexes, whole-name matches), ``enabled`` (the
source and checkpoint connectors do nothing when false; dedicated mode sets it from
``A->B.enabled``), ``heartbeats.replication.enabled`` (copy heartbeat topics whatever ``topics``
says).

A source topic is replicated (:meth:`MirrorSettings.replicates`, MM2's ``shouldReplicateTopic``)
when it matches ``topics`` and not ``topics.exclude`` (or is a heartbeats topic:
``heartbeats``, ``A.heartbeats`` ...), is not internal (``__*``, ``.*``, ``*.internal``,
``*-internal``) and is no cycle: following its sources upstream (``B.A.orders`` came from ``B``,
which had it from ``A``) never reaches the target cluster.

Differences from MM2: replication factors default to -1 (the broker's default) instead of 2/3,
so that a one-broker cluster works.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zurau.client.config import ClientConfig
from zurau.config import ConfigDef, ConfigException, ConfigType, Importance, valid_string

DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
_POLICIES = (DEFAULT_POLICY, "DefaultReplicationPolicy", IDENTITY_POLICY, "IdentityReplicationPolicy")
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal,.*\.replica,__.*"
GROUPS_EXCLUDE_DEFAULT = r"console-consumer-.*,connect-.*,__.*"


def regex_list(name: str, value: Any) -> None:
    for pattern in value or []:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigException(f"Invalid value {pattern} for configuration {name}: {e}") from None


def _policy(name: str, value: Any) -> None:
    if value not in _POLICIES:
        raise ConfigException(f"Invalid value {value} for configuration {name}: supported policies are "
                              f"{DEFAULT_POLICY} and {IDENTITY_POLICY}")


def _bootstrap(name: str, value: Any) -> None:
    if value is None:
        return
    try:
        ClientConfig.from_props({"bootstrap.servers": str(value)})
    except Exception as e:
        raise ConfigException(f"Invalid value {value} for configuration {name}: {e}") from None


COMMON = (
    ConfigDef()
    .define("source.cluster.alias", ConfigType.STRING, importance=Importance.HIGH,
            documentation="Alias of the source cluster (the prefix of remote topics).")
    .define("target.cluster.alias", ConfigType.STRING, "target", importance=Importance.HIGH,
            documentation="Alias of the target cluster.")
    .define("source.cluster.bootstrap.servers", ConfigType.STRING, validator=_bootstrap, importance=Importance.HIGH,
            documentation="The source cluster's brokers.")
    .define("target.cluster.bootstrap.servers", ConfigType.STRING, validator=_bootstrap, importance=Importance.HIGH,
            documentation="The target cluster's brokers (the worker's cluster).")
    .define("replication.policy.class", ConfigType.STRING, DEFAULT_POLICY, validator=_policy,
            importance=Importance.LOW, documentation="How remote topics are named.")
    .define("replication.policy.separator", ConfigType.STRING, ".", importance=Importance.LOW,
            documentation="Separator between the source alias and the topic name.")
    .define("offset-syncs.topic.location", ConfigType.STRING, "source", validator=valid_string("source", "target"),
            importance=Importance.LOW, documentation="Cluster holding the offset-syncs topic.")
    .define("topics", ConfigType.LIST, ".*", validator=regex_list, importance=Importance.HIGH,
            documentation="Topics to replicate (regexes).")
    .define("topics.exclude", ConfigType.LIST, TOPICS_EXCLUDE_DEFAULT, validator=regex_list,
            importance=Importance.HIGH, documentation="Topics not to replicate (regexes).")
    .define("enabled", ConfigType.BOOLEAN, True, importance=Importance.LOW,
            documentation="Whether this replication flow is enabled.")
    .define("heartbeats.replication.enabled", ConfigType.BOOLEAN, True, importance=Importance.LOW,
            documentation="Replicate heartbeats topics whatever the topic filter says.")
)


HEARTBEATS_TOPIC = "heartbeats"


@dataclass(frozen=True)
class ReplicationPolicy:
    """MM2's DefaultReplicationPolicy (``<alias><separator><topic>``) or IdentityReplicationPolicy
    (names unchanged, except heartbeats topics, which are renamed as by the default policy so
    that heartbeats still show where they came from)."""

    separator: str = "."
    identity: bool = False

    def _looks_like_heartbeats(self, topic: str) -> bool:
        return topic.endswith(HEARTBEATS_TOPIC)

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self.identity and not self._looks_like_heartbeats(topic):
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The cluster a remote topic came from (None for a local topic)."""
        if self.identity and not self._looks_like_heartbeats(topic):
            return None
        source, sep, rest = topic.partition(self.separator)
        return source if sep and rest else None

    def upstream_topic(self, topic: str) -> str | None:
        """The topic's name on the cluster it came from (None for a local topic)."""
        if self.identity and not self._looks_like_heartbeats(topic):
            return None
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]

    def original_topic(self, topic: str) -> str:
        """The name at the first cluster, however many hops the topic travelled."""
        while (upstream := self.upstream_topic(topic)) is not None and upstream != topic:
            topic = upstream
        return topic

    @property
    def heartbeats_topic(self) -> str:
        return HEARTBEATS_TOPIC

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == HEARTBEATS_TOPIC

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self.separator}checkpoints{self.separator}internal")

    def is_internal_topic(self, topic: str) -> bool:
        """Never replicated: Kafka's (``__*``, ``.*``), Connect's and MM2's (``*.internal``,
        ``*-internal``)."""
        return (topic.startswith(("__", ".")) or topic.endswith((".internal", "-internal"))
                or topic.endswith(f"{self.separator}internal"))

    def offset_syncs_topic(self, target_alias: str) -> str:
        return f"mm2-offset-syncs{self.separator}{target_alias}{self.separator}internal"

    def checkpoints_topic(self, source_alias: str) -> str:
        return f"{source_alias}{self.separator}checkpoints{self.separator}internal"


@dataclass(frozen=True)
class MirrorSettings:
    source_alias: str
    target_alias: str
    source: ClientConfig
    target: ClientConfig
    policy: ReplicationPolicy
    offset_syncs_on_source: bool
    topics: tuple[re.Pattern[str], ...]
    topics_exclude: tuple[re.Pattern[str], ...]
    enabled: bool = True
    heartbeats_replication: bool = True

    @staticmethod
    def from_props(props: Mapping[str, Any], definition: ConfigDef = COMMON) -> tuple[MirrorSettings, dict[str, Any]]:
        """The common settings and every parsed value of ``definition``."""
        c = definition.parse(props)
        policy = ReplicationPolicy(c["replication.policy.separator"], "Identity" in c["replication.policy.class"])
        return MirrorSettings(
            source_alias=c["source.cluster.alias"], target_alias=c["target.cluster.alias"],
            source=cluster_client(props, "source.cluster."), target=cluster_client(props, "target.cluster."),
            policy=policy, offset_syncs_on_source=c["offset-syncs.topic.location"] == "source",
            topics=tuple(re.compile(p) for p in c["topics"] if p),
            topics_exclude=tuple(re.compile(p) for p in c["topics.exclude"] if p),
            enabled=c["enabled"], heartbeats_replication=c["heartbeats.replication.enabled"],
        ), c

    def topic_filter(self, topic: str) -> bool:
        """MM2's DefaultTopicFilter: matches ``topics`` and not ``topics.exclude``."""
        included = any(p.fullmatch(topic) for p in self.topics)
        return included and not any(p.fullmatch(topic) for p in self.topics_exclude)

    def replicates(self, topic: str) -> bool:
        """Whether ``topic`` of the source is mirrored (see the module docstring)."""
        wanted = self.topic_filter(topic) or (self.heartbeats_replication and self.policy.is_heartbeats_topic(topic))
        return wanted and not self.policy.is_internal_topic(topic) and not self.is_cycle(topic)

    def is_cycle(self, topic: str) -> bool:
        """Whether ``topic`` came from the target cluster, directly or over several hops."""
        while True:
            source = self.policy.topic_source(topic)
            if source is None:
                return False
            if source == self.target_alias:
                return True
            upstream = self.policy.upstream_topic(topic)
            if upstream is None or upstream == topic:
                return False
            topic = upstream

    def remote_topic(self, topic: str) -> str:
        """The name of a replicated source topic on the target."""
        return self.policy.format_remote_topic(self.source_alias, topic)

    @property
    def offset_syncs_topic(self) -> str:
        return self.policy.offset_syncs_topic(self.target_alias)

    @property
    def offset_syncs_cluster(self) -> ClientConfig:
        return self.source if self.offset_syncs_on_source else self.target


def cluster_client(props: Mapping[str, Any], prefix: str) -> ClientConfig:
    """Client settings under ``prefix`` (``source.cluster.bootstrap.servers`` ...)."""
    picked = {k[len(prefix):]: str(v) for k, v in props.items()
              if k.startswith(prefix) and v is not None and k != prefix + "alias"}
    picked.setdefault("client.id", f"zurau-mirror-{prefix.split('.')[0]}")
    return ClientConfig.from_props(picked)

