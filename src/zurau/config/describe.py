"""DescribeConfigs: entries with Kafka's sources, synonyms, sensitivity and value formatting.

Invariants: entries are sorted by name; a sensitive value (a password) is never shown, in the
entry or its synonyms (``value_str=None``); synonyms are listed in Kafka's priority order
(topic override, dynamic per-broker, dynamic cluster default, static, default) and the entry's
source is the first synonym's (DEFAULT_CONFIG when there is none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from zurau.config.config_def import ConfigKey, format_value
from zurau.config.definitions import BROKER_CONFIGS, TOPIC_CONFIGS
from zurau.config.group_configs import GROUP_CONFIGS, BrokerValues, group_config_defaults
from zurau.config.topic_validation import validate_topic_configs

if TYPE_CHECKING:
    from zurau.config.broker_config import BrokerConfig

__all__ = [
    "ConfigEntry",
    "ConfigSource",
    "ConfigSynonym",
    "describe_broker_config",
    "describe_group_config",
    "describe_topic_config",
    "layered_synonyms",
]


class ConfigSource(IntEnum):
    """DescribeConfigs ``ConfigSource`` codes (Kafka ``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8  # the Admin API's DYNAMIC_GROUP_CONFIG


class ConfigSynonym(NamedTuple):
    """A DescribeConfigs synonym: where a value could come from, in priority order."""

    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs result entry.

    ``value_str`` is formatted as Kafka formats it (booleans ``true``/``false``, lists
    comma-joined, doubles like Java's ``Double.toString``) and is ``None`` for sensitive values
    or unset configs. ``source`` is a :class:`ConfigSource` code; ``config_type`` the type code.
    """

    name: str
    value_str: str | None
    source: int
    is_default: bool
    read_only: bool
    sensitive: bool
    synonyms: list[ConfigSynonym]
    type_name: str
    config_type: int
    doc: str


_BROKER_DEFAULT_STRINGS: dict[str, str] = {
    n: s for n, d in BROKER_CONFIGS.items() if (s := format_value(d, d.default)) is not None
}


def layered_synonyms(cfg: BrokerConfig, names: Iterable[str], sensitive: bool) -> list[ConfigSynonym]:
    """The synonyms of ``names`` found in ``cfg``'s layers, highest priority first."""
    names = tuple(names)
    out: list[ConfigSynonym] = []
    layers: tuple[tuple[Mapping[str, str], ConfigSource], ...] = (
        (cfg._dyn_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (cfg._dyn_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (cfg._static, ConfigSource.STATIC_BROKER_CONFIG),
        (_BROKER_DEFAULT_STRINGS, ConfigSource.DEFAULT_CONFIG),
    )
    for mapping, source in layers:
        for n in names:
            if n in mapping:
                out.append(ConfigSynonym(n, None if sensitive else mapping[n], int(source)))
    return out


def _entry(d: ConfigKey, value: Any, synonyms: list[ConfigSynonym], read_only: bool) -> ConfigEntry:
    source = synonyms[0].source if synonyms else int(ConfigSource.DEFAULT_CONFIG)
    return ConfigEntry(
        name=d.name,
        value_str=None if d.sensitive else format_value(d, value),
        source=source,
        is_default=source == ConfigSource.DEFAULT_CONFIG,
        read_only=read_only,
        sensitive=d.sensitive,
        synonyms=synonyms,
        type_name=d.type.name,
        config_type=d.type.code,
        doc=d.documentation,
    )


def describe_topic_config(
    broker: BrokerConfig,
    overrides: Mapping[str, Any] | None = None,
    names: Iterable[str] | None = None,
) -> list[ConfigEntry]:
    """DescribeConfigs entries for a topic with these stored overrides, sorted by name.

    Synonyms are listed in Kafka's order: the topic override (DYNAMIC_TOPIC_CONFIG), then each
    broker synonym found in the dynamic per-broker, dynamic default, static and default layers.
    The entry's source is the first synonym's (DEFAULT_CONFIG when none). Unlike Kafka, which
    drops lower-priority broker synonyms (e.g. ``log.retention.hours``) when the primary one
    (``log.retention.ms``) is unset, Zurau lists them, so the source names where the value
    really comes from. ``names`` restricts the result (unknown names are ignored, as Kafka does).
    """
    overrides = dict(overrides or {})
    typed = validate_topic_configs(overrides)
    wanted = None if names is None else set(names)
    defaults = broker.topic_defaults()
    out: list[ConfigEntry] = []
    for name in sorted(TOPIC_CONFIGS):
        if wanted is not None and name not in wanted:
            continue
        d = TOPIC_CONFIGS[name]
        value = typed[name] if name in typed else defaults[name]
        synonyms: list[ConfigSynonym] = []
        if name in typed:
            synonyms.append(
                ConfigSynonym(
                    name,
                    None if d.sensitive else format_value(d, value),
                    int(ConfigSource.DYNAMIC_TOPIC_CONFIG),
                )
            )
        synonyms += layered_synonyms(broker, (s.name for s in d.synonyms), d.sensitive)
        out.append(_entry(d, value, synonyms, read_only=False))
    return out


def describe_broker_config(
    cfg: BrokerConfig,
    names: Iterable[str] | None = None,
    per_broker: bool = True,
    dynamic: Callable[[str], bool] | None = None,
) -> list[ConfigEntry]:
    """DescribeConfigs entries for a broker, sorted by name.

    ``per_broker=False`` describes the cluster-wide default resource (empty resource name): as
    in Kafka only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms are reported then. Passwords have
    ``value_str=None`` and ``sensitive=True``; ``read_only`` is true for configs that cannot be
    changed dynamically (``dynamic(name)`` False; default: the definition's ``dynamic`` flag).
    """
    wanted = None if names is None else set(names)
    out: list[ConfigEntry] = []
    for name in sorted(BROKER_CONFIGS):
        if wanted is not None and name not in wanted:
            continue
        d = BROKER_CONFIGS[name]
        synonyms = layered_synonyms(cfg, (name,), d.sensitive)
        if not per_broker:
            synonyms = [s for s in synonyms if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        can_change = d.dynamic if dynamic is None else dynamic(name)
        out.append(_entry(d, cfg.get(name), synonyms, read_only=not can_change))
    return out


def describe_group_config(
    broker: BrokerValues, overrides: Mapping[str, str] | None = None, names: Iterable[str] | None = None
) -> list[ConfigEntry]:
    """DescribeConfigs entries of a group with these stored overrides, sorted by name (Kafka's
    ``ConfigHelper.createGroupConfigEntry``).

    Every group config is listed (``names`` restricts them; unknown names are ignored), never
    read-only. An override has source GROUP_CONFIG (8; the Admin API's DYNAMIC_GROUP_CONFIG) and
    shows the stored value; any other config DEFAULT_CONFIG (5) with the broker's default for it
    (``group.consumer.session.timeout.ms`` for ``consumer.session.timeout.ms`` ...). The one
    synonym is the entry itself with its source, as Kafka lists it. A stored value that no longer
    parses (never written by this broker) is shown as stored.
    """
    overrides = dict(overrides or {})
    wanted = None if names is None else set(names)
    defaults = group_config_defaults(broker)
    out: list[ConfigEntry] = []
    for name in sorted(GROUP_CONFIGS):
        if wanted is not None and name not in wanted:
            continue
        d = GROUP_CONFIGS[name]
        if name in overrides:
            raw = overrides[name]
            try:
                value_str = format_value(d, d.parse(raw))
            except ValueError:
                value_str = raw
            source = ConfigSource.GROUP_CONFIG
        else:
            value_str, source = format_value(d, defaults[name]), ConfigSource.DEFAULT_CONFIG
        out.append(
            ConfigEntry(
                name=name,
                value_str=value_str,
                source=int(source),
                is_default=source == ConfigSource.DEFAULT_CONFIG,
                read_only=False,
                sensitive=False,
                synonyms=[ConfigSynonym(name, value_str, int(source))],
                type_name=d.type.name,
                config_type=d.type.code,
                doc=d.documentation,
            )
        )
    return out
