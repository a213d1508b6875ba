"""Which topic configs MirrorMaker 2 copies to the remote topics: MM2's ``DefaultConfigPropertyFilter``
and the source connector's ``syncTopicConfigs``.

Settings (MM2's names and defaults): ``config.properties.exclude`` (comma-separated regexes, whole
names; the deprecated ``config.properties.blacklist`` is read when the new name is not given),
default :data:`CONFIG_PROPERTIES_EXCLUDE_DEFAULT` (replication throttles, timestamp settings,
unclean leader election, ``min.insync.replicas``: they describe the source cluster, not the
data); ``use.defaults.from`` (``target``, or ``source``).

Of a source topic's described configs only these are ever copied: not read-only, not sensitive,
not from the broker's static ``server.properties`` (STATIC_BROKER_CONFIG: that is a broker's
setting, not the topic's), not excluded. Then:

* a remote topic is created with those that are not defaults (DEFAULT_CONFIG), and with the
  defaults too when ``use.defaults.from=source``;
* every ``sync.topic.configs.interval.seconds`` each remote topic gets one IncrementalAlterConfigs:
  SET for each non-default value, and for each default DELETE (the target's own default applies)
  or, with ``use.defaults.from=source``, SET to the source's default. A value changed on the
  source thus reaches the target, and one reset on the source is reset on the target.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zurau.client.admin import (
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from zurau.config import ConfigDef, ConfigType, Importance, Range, valid_string
from zurau.connect.mirror.config import regex_list
from zurau.protocol.errors import KafkaError

log = logging.getLogger("zurau.connect.mirror")

CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas,leader\.replication\.throttled\.replicas,"
    r"message\.timestamp\.difference\.max\.ms,message\.timestamp\.type,unclean\.leader\.election\.enable,"
    r"min\.insync\.replicas"
)

SYNC_DEF = (
    ConfigDef()
    .define(
        "config.properties.exclude",
        ConfigType.LIST,
        CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
        validator=regex_list,
        importance=Importance.HIGH,
        documentation="Topic configs not to replicate (regexes).",
    )
    .define(
        "config.properties.blacklist",
        ConfigType.LIST,
        None,
        validator=regex_list,
        importance=Importance.LOW,
        documentation="Deprecated. Use config.properties.exclude instead.",
    )
    .define(
        "use.defaults.from",
        ConfigType.STRING,
        "target",
        validator=valid_string("source", "target"),
        importance=Importance.MEDIUM,
        documentation="Which cluster's defaults (source or target) a topic config at its default gets.",
    )
    .define(
        "sync.topic.configs.enabled",
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Keep the remote topics' configs in step with their source topics.",
    )
    .define(
        "sync.topic.configs.interval.seconds",
        ConfigType.LONG,
        600,
        validator=Range.at_least(1),
        importance=Importance.LOW,
        documentation="How often to sync topic configs.",
    )
    .define(
        "sync.topic.acls.enabled",
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Copy the source topics' ACLs to the remote topics.",
    )
    .define(
        "sync.topic.acls.interval.seconds",
        ConfigType.LONG,
        600,
        validator=Range.at_least(1),
        importance=Importance.LOW,
        documentation="How often to sync topic ACLs.",
    )
)


@dataclass(frozen=True)
class ConfigPropertyFilter:
    """MM2's ``DefaultConfigPropertyFilter``."""

    exclude: tuple[re.Pattern[str], ...] = tuple(
        re.compile(p) for p in CONFIG_PROPERTIES_EXCLUDE_DEFAULT.split(",")
    )
    use_defaults_from: str = "target"

    @staticmethod
    def from_parsed(parsed: Mapping[str, Any], given: Mapping[str, Any]) -> ConfigPropertyFilter:
        """From parsed :data:`SYNC_DEF` values; ``given`` tells whether the new name was set."""
        patterns = parsed["config.properties.exclude"]
        if "config.properties.exclude" not in given and parsed.get("config.properties.blacklist") is not None:
            patterns = parsed["config.properties.blacklist"]
        return ConfigPropertyFilter(
            tuple(re.compile(p.strip()) for p in patterns if p.strip()), parsed["use.defaults.from"]
        )

    def should_replicate_config_property(self, name: str) -> bool:
        return not any(p.fullmatch(name) for p in self.exclude)

    def should_replicate_source_default(self, name: str) -> bool:
        return self.use_defaults_from == "source"

    def replicable(self, entry: ConfigEntry) -> bool:
        """Whether a described source config may be copied at all."""
        return (
            not entry.read_only
            and not entry.is_sensitive
            and entry.source != ConfigSource.STATIC_BROKER_CONFIG
            and self.should_replicate_config_property(entry.name)
        )

    def creation_configs(self, entries: Iterable[ConfigEntry]) -> dict[str, str]:
        """The configs a new remote topic is created with."""
        return {
            e.name: e.value
            for e in entries
            if e.value is not None
            and self.replicable(e)
            and (not e.is_default or self.should_replicate_source_default(e.name))
        }

    def alter_ops(self, entries: Iterable[ConfigEntry]) -> list[AlterConfigOp]:
        """The IncrementalAlterConfigs operations that bring a remote topic in step."""
        ops = []
        for e in entries:
            if not self.replicable(e):
                continue
            if e.is_default and not self.should_replicate_source_default(e.name):
                ops.append(AlterConfigOp(e.name, AlterOp.DELETE))
            elif e.value is not None:
                ops.append(AlterConfigOp(e.name, AlterOp.SET, e.value))
        return ops


async def describe_topic_configs(admin: AdminClient, topics: Iterable[str]) -> dict[str, list[ConfigEntry]]:
    """The configs of ``topics`` (those the cluster could describe; errors are logged)."""
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    if not resources:
        return {}
    out: dict[str, list[ConfigEntry]] = {}
    for resource, entries in (await admin.describe_configs(resources)).items():
        if isinstance(entries, KafkaError):
            log.warning("mirror: cannot describe the configs of topic %s: %s", resource.name, entries)
        else:
            out[resource.name] = entries
    return out


async def sync_topic_configs(
    source: AdminClient,
    target: AdminClient,
    remote_names: Mapping[str, str],
    config_filter: ConfigPropertyFilter,
) -> dict[str, KafkaError | None]:
    """Bring each remote topic's configs in step with its source topic's (``remote_names``: source
    topic -> remote topic). Per remote topic, None or the target's error."""
    described = await describe_topic_configs(source, remote_names)
    changes = {
        ConfigResource(ResourceType.TOPIC, remote_names[topic]): config_filter.alter_ops(entries)
        for topic, entries in described.items()
    }
    changes = {r: ops for r, ops in changes.items() if ops}
    if not changes:
        return {}
    results = await target.incremental_alter_configs(changes)
    for resource, error in results.items():
        if error is not None:
            log.warning("mirror: cannot sync the configs of topic %s: %s", resource.name, error)
    return {r.name: e for r, e in results.items()}
