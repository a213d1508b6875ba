"""Topic creation for source connectors (Kafka's KIP-158 ``topic.creation.*`` settings).

When a source connector's config has ``topic.creation.default.replication.factor`` and
``topic.creation.default.partitions`` (Debezium configs often do), the worker creates each topic
the connector writes to before the first record goes there, unless it exists already:

* ``topic.creation.groups=g1,g2`` lists further groups, tried in order; a group matches a topic
  that matches one of its ``topic.creation.<g>.include`` regexes (comma-separated, whole name) and
  none of its ``topic.creation.<g>.exclude``; the ``default`` group takes every other topic;
* ``topic.creation.<g>.replication.factor`` / ``.partitions`` (-1: the broker's default; a group
  without them inherits the default group's);
* any other ``topic.creation.<g>.<setting>`` is a topic config (``cleanup.policy=compact``,
  ``compression.type=lz4`` ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from zurau.client.admin import AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.topic_admin import ensure_topic
from zurau.config import ConfigException

PREFIX = "topic.creation."


class TopicCreationError(ConfigException):
    """A bad ``topic.creation.*`` setting; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass
class TopicCreationGroup:
    name: str
    include: list[re.Pattern[str]]
    exclude: list[re.Pattern[str]]
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        return (any(p.fullmatch(topic) for p in self.include)
                and not any(p.fullmatch(topic) for p in self.exclude))


def _int(config: Mapping[str, str], key: str, fallback: int | None) -> int:
    raw = config.get(key)
    if raw is None:
        if fallback is None:
            raise TopicCreationError(key, f'Missing required configuration "{key}" which has no default value.')
        return fallback
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise TopicCreationError(key, f"Invalid value {raw} for configuration {key}: Not a number") from None
    if value == 0 or value < -1:
        raise TopicCreationError(key, f"Invalid value {raw} for configuration {key}: must be -1 or at least 1")
    return value


def _patterns(config: Mapping[str, str], key: str) -> list[re.Pattern[str]]:
    out = []
    for item in str(config.get(key, "")).split(","):
        if item.strip():
            try:
                out.append(re.compile(item.strip()))
            except re.error as e:
                raise TopicCreationError(key, f"Invalid value {item} for configuration {key}: {e}") from None
    return out


def topic_creation_groups(config: Mapping[str, str]) -> list[TopicCreationGroup] | None:
    """The groups a connector config defines, default last; None when it asks for no creation.
    Raises :class:`TopicCreationError` for a bad setting."""
    if not any(k.startswith(PREFIX + "default.") for k in config):
        return None
    default_rf = _int(config, PREFIX + "default.replication.factor", None)
    default_partitions = _int(config, PREFIX + "default.partitions", None)
    names = [n.strip() for n in str(config.get(PREFIX + "groups", "")).split(",") if n.strip()]
    groups = []
    for name in [*names, "default"]:
        prefix = f"{PREFIX}{name}."
        own = {k[len(prefix):]: str(v) for k, v in config.items() if k.startswith(prefix)}
        configs = {k: v for k, v in own.items() if k not in ("include", "exclude", "partitions", "replication.factor")}
        groups.append(TopicCreationGroup(
            name, [re.compile(".*")] if name == "default" else _patterns(config, prefix + "include"),
            [] if name == "default" else _patterns(config, prefix + "exclude"),
            _int(config, prefix + "partitions", default_partitions),
            _int(config, prefix + "replication.factor", default_rf), configs))
    return groups


class TopicCreator:
    """Creates a source connector's topics on first use, as its groups say."""

    def __init__(self, cluster: Cluster, groups: list[TopicCreationGroup]) -> None:
        self.admin = AdminClient(cluster)
        self.groups = groups
        self.known: set[str] = set()

    async def ensure(self, topic: str) -> None:
        if topic in self.known:
            return
        group = next(g for g in self.groups if g.matches(topic))
        await ensure_topic(self.admin, NewTopic(topic, group.partitions, group.replication_factor, group.configs))
        self.known.add(topic)
