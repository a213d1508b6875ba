"""The fields every v3 config resource has (Confluent's ``AbstractConfigData``: broker, cluster
and topic configs), from a config described with its synonyms
(:meth:`~zurau.client.admin.AdminClient.describe_configs` with ``include_synonyms``).

Invariants: a sensitive value is null (the broker never sends it); ``is_default`` is true
exactly when the source is ``DEFAULT_CONFIG`` (as Kafka's Java client says); sources the v3 API
does not name (``CLIENT_METRICS_CONFIG``, ``GROUP_CONFIG``, ids unknown to the client) are
``UNKNOWN``; synonyms keep the broker's order of priority.
"""

from __future__ import annotations

from typing import Any

from zurau.client.admin import ConfigEntry, ConfigSource

V3_SOURCES = frozenset(
    {
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    }
)
"""The ``ConfigSource`` values the v3 API names; every other source is ``UNKNOWN``."""


def source_name(source: ConfigSource) -> str:
    """A config source as the v3 API names it."""
    return source.name if source in V3_SOURCES else "UNKNOWN"


def config_fields(entry: ConfigEntry) -> dict[str, Any]:
    """The fields of a v3 config resource that come from the config itself (module docstring)."""
    return {
        "name": entry.name,
        "value": entry.value,
        "is_default": entry.source == ConfigSource.DEFAULT_CONFIG,
        "is_read_only": entry.read_only,
        "is_sensitive": entry.is_sensitive,
        "source": source_name(entry.source),
        "synonyms": [{"name": n, "value": v, "source": source_name(s)} for n, v, s in entry.synonyms],
    }
