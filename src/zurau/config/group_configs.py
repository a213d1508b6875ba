"""Group configs (Kafka's ``GroupConfig``): per-group settings of KIP-848 consumer groups, KIP-932
share groups and KIP-1071 streams groups, set with IncrementalAlterConfigs / AlterConfigs on a
GROUP (32) config resource and listed by DescribeConfigs, as Apache Kafka 4.2 serves them.

The definitions (:data:`GROUP_CONFIGS`): ``consumer.session.timeout.ms``,
``consumer.heartbeat.interval.ms``, ``share.session.timeout.ms``, ``share.heartbeat.interval.ms``,
``share.record.lock.duration.ms``, ``share.auto.offset.reset`` (``latest``, ``earliest`` or
``by_duration:<ISO-8601 duration>``), ``share.isolation.level`` (``read_uncommitted``,
``read_committed``), ``streams.session.timeout.ms``, ``streams.heartbeat.interval.ms``,
``streams.num.standby.replicas`` and ``streams.initial.rebalance.delay.ms``.

Where a group's values come from:

* the overrides stored for the group in the metadata image (Kafka's ``ConfigRecord`` with
  resource type GROUP, name = group id; strings as the client sent them), read with
  ``MetadataImage.group_config(group_id) -> Mapping[str, str]``;
* else the broker config behind it (Kafka's ``extractGroupConfigMap``): ``consumer.session.timeout.ms``
  defaults to ``group.consumer.session.timeout.ms``, ``share.record.lock.duration.ms`` to
  ``group.share.record.lock.duration.ms`` and so on (:data:`BROKER_DEFAULTS`);
* else (``share.auto.offset.reset``, ``share.isolation.level``) the definition's own default.

How to read a group's effective value (what the share-partition manager and the coordinators
use)::

    from zurau.config.group_configs import effective_group_config, parse_share_auto_offset_reset

    overrides = image.group_config(group_id)  # only what was set for the group
    lock_ms = effective_group_config(broker_cfg, overrides, "share.record.lock.duration.ms")  # int
    isolation = effective_group_config(broker_cfg, overrides, "share.isolation.level")  # str
    reset = parse_share_auto_offset_reset(
        effective_group_config(broker_cfg, overrides, "share.auto.offset.reset")
    )  # ShareAutoOffsetReset("by_duration", 3_600_000) for "by_duration:PT1H"

``broker_cfg`` is a :class:`~zurau.config.broker_config.BrokerConfig` (or any object whose
``get(name)`` gives a broker config's typed value, such as a dict of typed values).

Invariants:

* :func:`validate_group_configs` is what IncrementalAlterConfigs / AlterConfigs check, on the
  group's whole resulting set merged with the broker defaults: unknown names ("Unknown group config
  name: ..."), null values, malformed values, and Kafka's bounds from the broker
  (``group.consumer.min.session.timeout.ms`` .. ``group.consumer.max.session.timeout.ms``, the
  share, record-lock and streams bounds) and session timeout > heartbeat interval, with Kafka's
  messages. Every failure is a :class:`ConfigError` (INVALID_CONFIG on the wire).
* :func:`effective_group_config` never fails on a stored value: one that no longer lies within
  the broker's bounds (they changed since it was set) is capped to them, as Kafka's
  ``GroupConfig.evaluate`` does; one that no longer parses (never written by this broker) is
  ignored with a warning and the default applies. Types are the definitions' (INT -> ``int``,
  STRING -> ``str``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from zurau.config.config_def import ConfigKey, key_table
from zurau.config.shorthand import B, I, M, S, at_least, between
from zurau.config.types import ConfigError
from zurau.config.validators import Validator, ValidString

__all__ = [
    "BROKER_DEFAULTS",
    "GROUP_CONFIGS",
    "BrokerValues",
    "ShareAutoOffsetReset",
    "effective_group_config",
    "effective_group_overrides",
    "group_config_defaults",
    "parse_iso8601_duration_ms",
    "parse_share_auto_offset_reset",
    "resolve_group_config",
    "validate_group_configs",
]

log = logging.getLogger(__name__)


class BrokerValues(Protocol):
    """What the group configs read from the broker: a broker config's typed value by name
    (:class:`~zurau.config.broker_config.BrokerConfig` and ``dict`` satisfy it)."""

    def get(self, name: str, /) -> Any: ...


# --------------------------------------------------------------------------------------------
# share.auto.offset.reset (Kafka's ShareGroupAutoOffsetResetStrategy)
# --------------------------------------------------------------------------------------------

# Java's Duration.parse grammar: [-+]P[nD][T[nH][nM][n[.f]S]], case-insensitive.
_DURATION_RE = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?\Z",
    re.IGNORECASE,
)
_BY_DURATION = "by_duration"


def parse_iso8601_duration_ms(text: str) -> int:
    """An ISO-8601 duration as Java's ``Duration.parse`` reads it (``PT1H``, ``P1DT2H30M``,
    ``PT0.5S``), in whole milliseconds; raises ValueError for anything else."""
    m = _DURATION_RE.match(text)
    if m is None:
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, t_part, hours, minutes, seconds, fraction = m.groups()
    if days is None and t_part is None:
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    if t_part is not None and hours is None and minutes is None and seconds is None:
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    secs = int(days or 0) * 86_400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    nanos = secs * 1_000_000_000
    if fraction:
        frac = int(fraction.ljust(9, "0"))
        nanos += -frac if (seconds or "").startswith("-") else frac
    if sign == "-":
        nanos = -nanos
    return nanos // 1_000_000 if nanos >= 0 else -((-nanos) // 1_000_000)


@dataclass(frozen=True)
class ShareAutoOffsetReset:
    """A parsed ``share.auto.offset.reset``: ``strategy`` is ``"earliest"``, ``"latest"`` or
    ``"by_duration"``; ``duration_ms`` (by_duration only) how far before now the share-partition
    starts (the ListOffsets timestamp is ``now_ms - duration_ms``)."""

    strategy: str
    duration_ms: int | None = None


def parse_share_auto_offset_reset(value: str) -> ShareAutoOffsetReset:
    """Kafka's ``ShareGroupAutoOffsetResetStrategy.fromString`` (case-sensitive, as Kafka):
    ``earliest``, ``latest`` or ``by_duration:<non-negative ISO-8601 duration>``; raises
    ValueError for anything else."""
    if value in ("earliest", "latest"):
        return ShareAutoOffsetReset(value)
    if value == _BY_DURATION:
        raise ValueError("<:duration> part is missing in by_duration auto offset reset strategy.")
    if value.startswith(_BY_DURATION + ":"):
        try:
            ms = parse_iso8601_duration_ms(value[len(_BY_DURATION) + 1 :])
        except ValueError:
            raise ValueError(
                "Unable to parse duration string in by_duration offset reset strategy."
            ) from None
        if ms < 0:
            raise ValueError("Negative duration is not supported in by_duration offset reset strategy.")
        return ShareAutoOffsetReset(_BY_DURATION, ms)
    raise ValueError(f"Unknown auto offset reset strategy: {value}")


class _ShareAutoOffsetResetValidator(Validator):
    def validate(self, name: str, value: Any) -> None:
        if value is None:
            return
        try:
            parse_share_auto_offset_reset(value)
        except ValueError:
            raise ConfigError.invalid(
                name,
                value,
                f"Invalid value `{value}` for configuration {name}. The value must be either 'earliest', "
                "'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.",
            ) from None

    def __str__(self) -> str:
        return "[latest, earliest, by_duration:PnDTnHnMn.nS]"


# --------------------------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------------------------

# fmt: off
_DEFINITIONS: tuple[ConfigKey, ...] = (
    ConfigKey("errors.deadletterqueue.copy.record.enable", B, False, None, M,
              "Whether a share group's dead letters copy the original record (key, value, headers, "
              "timestamp) or carry only the context headers (KIP-1191)."),
    ConfigKey("errors.deadletterqueue.topic.name", S, "", None, M,
              "The share group's dead-letter topic: records rejected or archived at the delivery "
              "limit are written there. Must start with the broker's "
              "errors.deadletterqueue.topic.name.prefix; blank (the default): none (KIP-1191)."),
    ConfigKey("share.redelivery.delay.ms", I, 0, between(0, 3_600_000), M,
              "Zurau extension: how long a record released by a share-group member (or by a lock "
              "expiry) waits before it is delivered again; 0 (the default): at once."),
    ConfigKey("consumer.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "The heartbeat interval given to the members of a consumer group."),
    ConfigKey("consumer.session.timeout.ms", I, 45_000, at_least(1), M,
              "The timeout to detect client failures when using the consumer group protocol."),
    ConfigKey("share.auto.offset.reset", S, "latest", _ShareAutoOffsetResetValidator(), M,
              "The strategy to initialize the share-partition start offset: earliest, latest, or "
              "by_duration:<ISO-8601 duration> (that long before now; not negative)."),
    ConfigKey("share.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "The heartbeat interval given to the members of a share group."),
    ConfigKey("share.isolation.level", S, "read_uncommitted", ValidString(("read_committed", "read_uncommitted")), M,
              "How a share group reads records written transactionally: read_committed delivers only "
              "committed transactional records, read_uncommitted every record, even of aborted "
              "transactions. Non-transactional records are delivered in either mode."),
    ConfigKey("share.record.lock.duration.ms", I, 30_000, at_least(1000), M,
              "The record acquisition lock duration in milliseconds for share groups."),
    ConfigKey("share.session.timeout.ms", I, 45_000, at_least(1), M,
              "The timeout to detect client failures when using the share group protocol."),
    ConfigKey("streams.heartbeat.interval.ms", I, 5000, at_least(1), M,
              "The heartbeat interval given to the members of a streams group."),
    ConfigKey("streams.initial.rebalance.delay.ms", I, 3000, at_least(0), M,
              "The time to wait for more members before the first rebalance of a streams group."),
    ConfigKey("streams.num.standby.replicas", I, 0, at_least(0), M,
              "The number of standby replicas for each task of a streams group."),
    ConfigKey("streams.session.timeout.ms", I, 45_000, at_least(1), M,
              "The timeout to detect client failures when using the streams group protocol."),
)
# fmt: on

#: Every group config by name (Kafka 4.2's ``GroupConfig``), sorted by name.
GROUP_CONFIGS: dict[str, ConfigKey] = key_table(_DEFINITIONS)


@dataclass(frozen=True)
class _Bounds:
    default: str  # the broker config that gives the default
    min: str | None  # the broker configs that bound a group's value
    max: str | None


#: group config -> the broker configs of its default and bounds (Kafka's ``extractGroupConfigMap``
#: and ``GroupConfig.validateValues``); the others default to their definition's default.
BROKER_DEFAULTS: dict[str, _Bounds] = {
    "consumer.heartbeat.interval.ms": _Bounds(
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    "consumer.session.timeout.ms": _Bounds(
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    "share.heartbeat.interval.ms": _Bounds(
        "group.share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
    ),
    "share.session.timeout.ms": _Bounds(
        "group.share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
    ),
    "share.record.lock.duration.ms": _Bounds(
        "group.share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    "streams.heartbeat.interval.ms": _Bounds(
        "group.streams.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    "streams.session.timeout.ms": _Bounds(
        "group.streams.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
    ),
    "streams.num.standby.replicas": _Bounds(
        "group.streams.num.standby.replicas", None, "group.streams.max.standby.replicas"
    ),
    "streams.initial.rebalance.delay.ms": _Bounds("group.streams.initial.rebalance.delay.ms", None, None),
}

# The order Kafka's GroupConfig.validateValues checks the bounds in.
_BOUNDS_ORDER = (
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "share.heartbeat.interval.ms",
    "share.session.timeout.ms",
    "share.record.lock.duration.ms",
    "streams.heartbeat.interval.ms",
    "streams.session.timeout.ms",
    "streams.num.standby.replicas",
)
# (session timeout, heartbeat interval): the session must be longer.
_SESSION_OVER_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)


def _broker_value(broker: BrokerValues, name: str) -> Any:
    return broker.get(name)


def group_config_defaults(broker: BrokerValues) -> dict[str, Any]:
    """Every group config's typed default for groups of this broker (sorted by name)."""
    out: dict[str, Any] = {}
    for name, d in GROUP_CONFIGS.items():
        b = BROKER_DEFAULTS.get(name)
        value = _broker_value(broker, b.default) if b is not None else None
        out[name] = d.default if value is None else value
    return out


# --------------------------------------------------------------------------------------------
# Validation (IncrementalAlterConfigs, AlterConfigs)
# --------------------------------------------------------------------------------------------


def validate_group_configs(broker: BrokerValues, configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Check a group's whole set of overrides as Kafka's ``GroupConfig.validate`` does and return
    them typed; raises :class:`ConfigError` (INVALID_CONFIG) with Kafka's message."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise ConfigError(f"Unknown group config name: {name}", name=name, value=configs[name])
    nulls = [n for n, v in configs.items() if v is None]
    if nulls:
        raise ConfigError(
            f"Null value not supported for group configs: {','.join(nulls)}",
            name=nulls[0],
            reason="null value",
        )
    typed = {n: GROUP_CONFIGS[n].parse(v) for n, v in configs.items()}
    merged = {**group_config_defaults(broker), **typed}
    for name in _BOUNDS_ORDER:
        b = BROKER_DEFAULTS[name]
        value = merged[name]
        if b.min is not None and value < _broker_value(broker, b.min):
            raise ConfigError(f"{name} must be greater than or equal to {b.min}", name=name, value=value)
        if b.max is not None and value > _broker_value(broker, b.max):
            raise ConfigError(f"{name} must be less than or equal to {b.max}", name=name, value=value)
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if merged[session] <= merged[heartbeat]:
            raise ConfigError(
                f"{session} must be greater than {heartbeat}", name=session, value=merged[session]
            )
    dlq = typed.get("errors.deadletterqueue.topic.name")
    if dlq:
        prefix = str(_broker_value(broker, "errors.deadletterqueue.topic.name.prefix") or "")
        if not dlq.startswith(prefix):
            raise ConfigError(
                f"errors.deadletterqueue.topic.name must start with {prefix!r} "
                "(errors.deadletterqueue.topic.name.prefix)",
                name="errors.deadletterqueue.topic.name",
                value=dlq,
            )
    return typed


# --------------------------------------------------------------------------------------------
# Effective values (the coordinators, the share-partition manager)
# --------------------------------------------------------------------------------------------


def _capped(broker: BrokerValues, group_id: str | None, name: str, value: Any) -> Any:
    b = BROKER_DEFAULTS.get(name)
    if b is None:
        return value
    lo = _broker_value(broker, b.min) if b.min is not None else None
    hi = _broker_value(broker, b.max) if b.max is not None else None
    capped = max(value, lo) if lo is not None else value
    capped = min(capped, hi) if hi is not None else capped
    if capped != value:
        log.warning(
            "group config %s=%s of group %s lies outside the broker's bounds; %s applies",
            name, value, group_id or "?", capped,
        )  # fmt: skip
    return capped


def effective_group_overrides(
    broker: BrokerValues, overrides: Mapping[str, str], group_id: str | None = None
) -> dict[str, Any]:
    """The group's stored overrides (``MetadataImage.group_config``), typed and capped to the
    broker's current bounds; a stored value that no longer parses is left out (with a warning).
    ``group_id`` only names the group in warnings."""
    out: dict[str, Any] = {}
    for name, raw in overrides.items():
        d = GROUP_CONFIGS.get(name)
        if d is None or raw is None:
            continue
        try:
            value = d.parse(raw)
        except ConfigError as e:
            log.warning("ignoring group config of group %s: %s", group_id or "?", e)
            continue
        out[name] = _capped(broker, group_id, name, value)
    return out


def effective_group_config(
    broker: BrokerValues, overrides: Mapping[str, str], name: str, group_id: str | None = None
) -> Any:
    """The value of group config ``name`` for a group with these stored overrides: the override
    (capped to the broker's bounds), else the broker's default for it (see the module docstring).
    Raises KeyError for a name that is no group config."""
    if name not in GROUP_CONFIGS:
        raise KeyError(f"{name} is not a group config")
    raw = overrides.get(name)
    if raw is not None:
        got = effective_group_overrides(broker, {name: raw}, group_id)
        if name in got:
            return got[name]
    d = GROUP_CONFIGS[name]
    b = BROKER_DEFAULTS.get(name)
    value = _broker_value(broker, b.default) if b is not None else None
    return d.default if value is None else value


def resolve_group_config(
    broker: BrokerValues, overrides: Mapping[str, str], group_id: str | None = None
) -> dict[str, Any]:
    """Every group config's effective value for a group with these stored overrides."""
    return {**group_config_defaults(broker), **effective_group_overrides(broker, overrides, group_id)}
