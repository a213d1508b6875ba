"""Topic configs: CreateTopics / AlterConfigs validation and the typed per-topic view.

Invariants: an accepted override set has only known names, no null values, valid values,
defaults for ``unsupported`` configs, and ``min.compaction.lag.ms`` <= ``max.compaction.lag.ms``
(on the overrides merged with the broker's topic defaults). The typed view has snake_case keys
that match ``zurau.storage.log_config.LogConfig`` field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from zurau.config.definitions import TOPIC_CONFIGS
from zurau.config.support import is_default, not_supported
from zurau.config.types import ConfigError, ConfigType

if TYPE_CHECKING:
    from zurau.config.broker_config import BrokerConfig

__all__ = [
    "check_compaction_lags",
    "check_remote_storage",
    "resolve_topic_config",
    "topic_config_values",
    "validate_topic_configs",
]


def check_compaction_lags(values: Mapping[str, Any]) -> None:
    lo, hi = values.get("min.compaction.lag.ms"), values.get("max.compaction.lag.ms")
    if lo is not None and hi is not None and lo > hi:
        raise ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})",
            name="min.compaction.lag.ms",
            value=lo,
            reason="must not exceed max.compaction.lag.ms",
        )


def check_remote_storage(values: Mapping[str, Any], *, system_enabled: bool) -> None:
    """Kafka's tiered storage rules of a topic (``LogConfig.validateTopicLogConfigValues`` when
    ``remote.storage.enable`` is true), on its full typed config (overrides over the broker's
    topic defaults, topic config names), with Kafka's messages:

    * the broker must have ``remote.log.storage.system.enable=true``;
    * ``cleanup.policy`` must not include ``compact`` (Kafka does not tier compacted topics);
    * ``local.retention.bytes`` (unless -2, "same as retention.bytes") must not be -1 when
      ``retention.bytes`` is limited, nor above it; the same for ``local.retention.ms`` and
      ``retention.ms``;
    * with ``remote.log.copy.disable=true`` (KIP-950), local and total retention must be equal
      (or the local ones -2): nothing more is copied, so the local log is the whole retention.

    Turning the tier off (true -> false) needs the old config: the controller checks it
    (zurau.metadata.controller.config_control). Only the controller calls this: a broker
    resolving an existing topic's config never refuses it (a broker without the remote tier
    keeps such a topic's logs local).
    """
    if not values.get("remote.storage.enable"):
        return
    if not system_enabled:
        raise ConfigError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.",
            name="remote.storage.enable",
            value=True,
            reason="remote.log.storage.system.enable=false",
        )
    policy = values.get("cleanup.policy", ("delete",))
    policies = [policy] if isinstance(policy, str) else list(policy)
    if any("compact" in p.lower() for p in policies):
        raise ConfigError(
            "Remote log storage is unsupported for the compacted topics",
            name="cleanup.policy",
            value=",".join(policies),
            reason="compacted topics are not tiered",
        )
    for local_name, total_name in (
        ("local.retention.bytes", "retention.bytes"),
        ("local.retention.ms", "retention.ms"),
    ):
        local, total = values.get(local_name, -2), values.get(total_name, -1)
        if total == -1 or local == -2 or (total_name == "retention.bytes" and total < -1):
            continue
        if local == -1:
            raise ConfigError.invalid(
                local_name, local, f"Value must not be -1 as {total_name} value is set as {total}."
            )
        if local > total:
            raise ConfigError.invalid(
                local_name, local, f"Value must not be more than {total_name} property value: {total}"
            )
    if values.get("remote.log.copy.disable"):
        for local_name, total_name in (
            ("local.retention.bytes", "retention.bytes"),
            ("local.retention.ms", "retention.ms"),
        ):
            local, total = values.get(local_name, -2), values.get(total_name, -1)
            if local != -2 and local != total:
                raise ConfigError(
                    f"When `remote.log.copy.disable` is set to true, the `{local_name}` and `{total_name}` "
                    "must be set to the identical value because there will be no more logs copied to the "
                    "remote storage.",
                    name=local_name,
                    value=local,
                    reason=f"must equal {total_name}",
                )


def validate_topic_configs(configs: Mapping[str, Any], broker: BrokerConfig | None = None) -> dict[str, Any]:
    """Validate topic config overrides (CreateTopics / AlterConfigs) and return typed values.

     Unknown names, ``None`` values and invalid values raise :class:`ConfigError` (the broker
     answers INVALID_CONFIG). A non-default value of an ``unsupported`` topic config is rejected
    . Cross-field rules (``min.compaction.lag.ms`` <= ``max.compaction.lag.ms``) are
     checked on the overrides merged with ``broker``'s topic defaults when given.
    """
    unknown = [n for n in configs if n not in TOPIC_CONFIGS]
    if unknown:
        raise ConfigError(
            f"Unknown topic config name: {unknown[0]}", name=unknown[0], value=configs[unknown[0]]
        )
    nulls = sorted(n for n, v in configs.items() if v is None)
    if nulls:
        raise ConfigError(
            f"Null value not supported for topic configs: {','.join(nulls)}",
            name=nulls[0],
            reason="null value",
        )
    typed = {n: TOPIC_CONFIGS[n].parse(v) for n, v in configs.items()}
    for n, v in typed.items():
        d = TOPIC_CONFIGS[n]
        if d.unsupported and not is_default(d, v):
            raise not_supported(n, v, d.unsupported)
    base = broker.topic_defaults() if broker is not None else {}
    check_compaction_lags({**base, **typed})
    return typed


def topic_config_values(
    overrides: Mapping[str, Any] | None = None, broker: BrokerConfig | None = None
) -> dict[str, Any]:
    """All topic configs typed, with snake_case keys (``segment_bytes``, ``retention_ms`` ...).

    Values come from ``overrides`` (topic config names, raw strings or typed values), else from
    ``broker``'s derived topic defaults, else Kafka's topic defaults. The keys match
    ``zurau.storage.log_config.LogConfig`` fields, so a caller can build one with
    ``LogConfig(**{k: v for k, v in values.items() if k in field_names})``; for that reason LIST
    values are given in Kafka's string form (``cleanup_policy="compact,delete"``), unlike
    :func:`validate_topic_configs` and :class:`BrokerConfig`, which give tuples.
    """
    base = broker.topic_defaults() if broker is not None else {n: d.default for n, d in TOPIC_CONFIGS.items()}
    typed = validate_topic_configs(overrides or {}, broker)
    merged = {**base, **typed}
    check_compaction_lags(merged)
    out: dict[str, Any] = {}
    for n, d in TOPIC_CONFIGS.items():
        v = merged[n]
        out[d.snake_name] = ",".join(v) if d.type is ConfigType.LIST else v
    return out


def resolve_topic_config(broker: BrokerConfig, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The effective typed config of a topic: overrides over broker-derived defaults
    (snake_case keys; see :func:`topic_config_values`)."""
    return topic_config_values(overrides, broker)
