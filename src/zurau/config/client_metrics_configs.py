"""Client metrics subscriptions (KIP-714, Kafka's ``ClientMetricsConfigs``): CLIENT_METRICS (16)
config resources, named by the subscription, set with IncrementalAlterConfigs / AlterConfigs
and listed by DescribeConfigs and ListConfigResources.

A subscription has three configs (:data:`CLIENT_METRICS_CONFIGS`):

* ``metrics``: a comma-separated list of metric name prefixes the matching clients should push
  (``org.apache.kafka.producer.``); ``*`` (or an empty prefix) is every metric; empty or unset,
  none.
* ``interval.ms``: how often the matching clients push, 100 ..= 3,600,000 (default 300,000).
* ``match``: a comma-separated list of ``selector=regex`` (selectors ``client_instance_id``,
  ``client_id``, ``client_software_name``, ``client_software_version``,
  ``client_source_address``, ``client_source_port``); a client matches when every regex matches
  its whole attribute (a client without that attribute does not match). Empty or unset: every
  client.

Stored as Kafka stores them: ``ConfigRecord``\\ s of resource type 16 named by the subscription,
one per config set, strings as the client sent them (``MetadataImage.client_metrics``). A
subscription with no config left does not exist (Kafka drops it when its last config is
deleted).

Invariants: :func:`validate_client_metrics_configs` is what the controller checks, on the
subscription's whole resulting set, with Kafka's errors: an empty name, an unknown config or an
interval out of range is INVALID_REQUEST, an unparsable value or match pattern INVALID_CONFIG.
:func:`subscription_of` never fails on stored configs (they were validated when written).
"""

from __future__ import annotations

import re
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zurau.config.config_def import ConfigKey, ConfigType, format_value, key_table
from zurau.config.shorthand import I, M
from zurau.config.types import ConfigError
from zurau.protocol.errors import InvalidConfigError, InvalidRequestError

__all__ = [
    "ALL_METRICS",
    "CLIENT_METRICS_CONFIGS",
    "CLIENT_METRICS_RESOURCE",
    "INTERVAL_MS_DEFAULT",
    "MATCH_SELECTORS",
    "ClientAttributes",
    "Subscription",
    "parse_match_patterns",
    "subscription_id",
    "subscription_of",
    "validate_client_metrics_configs",
]

CLIENT_METRICS_RESOURCE = 16
"""Kafka's ``ConfigResource.Type.CLIENT_METRICS``."""

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
ALL_METRICS = "*"
INTERVAL_MS_DEFAULT = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000

MATCH_SELECTORS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)

CLIENT_METRICS_CONFIGS: dict[str, ConfigKey] = key_table(
    (
        ConfigKey(METRICS, ConfigType.LIST, (), None, M, "Telemetry metric name prefix list"),
        ConfigKey(INTERVAL_MS, I, INTERVAL_MS_DEFAULT, None, M, "Metrics push interval in milliseconds"),
        ConfigKey(MATCH, ConfigType.LIST, (), None, M, "Client match criteria"),
    )
)


def _items(value: str | None) -> tuple[str, ...]:
    """A LIST config's items as Kafka parses them: split on commas, trimmed; an empty value is
    the empty list."""
    if value is None or not value.strip():
        return ()
    return tuple(p.strip() for p in value.split(","))


def parse_match_patterns(patterns: Iterable[str]) -> dict[str, re.Pattern[str]]:
    """``selector=regex`` items as a selector -> compiled regex map; INVALID_CONFIG "Illegal
    client matching pattern: ..." for an item without exactly one ``=`` (an empty regex
    included), an unknown selector or a regex that does not compile."""
    out: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        while parts and parts[-1] == "":  # as Java's String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 2 or parts[0].strip() not in MATCH_SELECTORS:
            raise InvalidConfigError(f"Illegal client matching pattern: {pattern}")
        try:
            out[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise InvalidConfigError(f"Illegal client matching pattern: {pattern}") from None
    return out


def validate_client_metrics_configs(name: str, configs: Mapping[str, str | None]) -> None:
    """Check a subscription's whole resulting set of configs (null values are removals and are
    not checked), as Kafka's ``ClientMetricsConfigs.validate``."""
    if not name:
        raise InvalidRequestError("Subscription name can't be empty")
    wanted = {k: v for k, v in configs.items() if v is not None}
    for key in wanted:
        if key not in CLIENT_METRICS_CONFIGS:
            raise InvalidRequestError(f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS in wanted:
        try:
            interval = CLIENT_METRICS_CONFIGS[INTERVAL_MS].parse(wanted[INTERVAL_MS])
        except ConfigError as e:
            raise InvalidConfigError(str(e)) from None
        if interval < MIN_INTERVAL_MS or interval > MAX_INTERVAL_MS:
            raise InvalidRequestError(
                f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 and 3600000 (1 hour)"
            )
    if MATCH in wanted:
        parse_match_patterns(_items(wanted[MATCH]))


@dataclass(frozen=True)
class Subscription:
    """One subscription as the broker applies it: its name, metric prefixes, push interval and
    match patterns (selector -> regex; empty matches every client)."""

    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]] = field(default_factory=dict)

    def matches(self, client: ClientAttributes) -> bool:
        for selector, regex in self.match.items():
            value = client.get(selector)
            if value is None or regex.fullmatch(value) is None:
                return False
        return True


def subscription_of(name: str, configs: Mapping[str, str]) -> Subscription:
    """The subscription stored under ``name`` (its configs from the metadata image). A stored
    value that no longer parses falls back to the default (never written by this broker)."""
    try:
        interval = int(configs.get(INTERVAL_MS, INTERVAL_MS_DEFAULT))
    except ValueError:
        interval = INTERVAL_MS_DEFAULT
    try:
        match = parse_match_patterns(_items(configs.get(MATCH)))
    except InvalidConfigError:
        match = {"client_instance_id": re.compile(r"(?!)")}  # an unreadable filter matches no client
    return Subscription(name, _items(configs.get(METRICS)), interval, match)


class ClientAttributes(dict[str, str]):
    """A client instance's attributes the ``match`` selectors read (selector -> value; absent
    when the client did not say, e.g. software name from an ApiVersions v0-2 client)."""

    @classmethod
    def of(
        cls,
        client_instance_id: uuid.UUID,
        client_id: str | None,
        software_name: str | None,
        software_version: str | None,
        source_address: str | None,
        source_port: int | None,
    ) -> ClientAttributes:
        values: dict[str, Any] = {
            "client_instance_id": str(client_instance_id),
            "client_id": client_id,
            "client_software_name": software_name,
            "client_software_version": software_version,
            "client_source_address": source_address,
            "client_source_port": None if source_port is None else str(source_port),
        }
        return cls({k: v for k, v in values.items() if v is not None})


def subscription_id(metrics: Iterable[str], interval_ms: int, client_instance_id: uuid.UUID) -> int:
    """A client instance's subscription id: a CRC-32 of its sorted metric prefixes and push
    interval, XORed with a hash of its instance id, as a signed int32 (Kafka computes a CRC-32C
    of the same inputs). Equal inputs give equal ids on every broker and across restarts, so a
    push to another broker or after a restart is still recognised; any change of the prefixes or
    the interval changes it."""
    text = "[" + ", ".join(sorted(metrics)) + "]" + str(interval_ms)
    crc = zlib.crc32(text.encode())
    msb, lsb = client_instance_id.int >> 64, client_instance_id.int & (2**64 - 1)
    h = msb ^ lsb
    id_hash = ((h >> 32) ^ h) & 0xFFFFFFFF
    value = crc ^ id_hash
    return value - 2**32 if value >= 2**31 else value


def describe_entries(configs: Mapping[str, str], names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """DescribeConfigs entries of a subscription, by name (Kafka's
    ``createClientMetricsConfigEntry``): every config, a set one with source CLIENT_METRICS_CONFIG
    (7) and itself as its one synonym, the others with their defaults and source DEFAULT_CONFIG
    (5) and no synonym; never read-only or sensitive."""
    wanted = None if names is None else set(names)
    out: list[dict[str, Any]] = []
    for name in sorted(CLIENT_METRICS_CONFIGS):
        if wanted is not None and name not in wanted:
            continue
        d = CLIENT_METRICS_CONFIGS[name]
        if name in configs:
            try:
                value = format_value(d, d.parse(configs[name]))
            except ConfigError:
                value = configs[name]
            source, synonyms = 7, [(name, value, 7)]
        else:
            value, source, synonyms = format_value(d, d.default), 5, []
        out.append(
            {
                "name": name,
                "value": value,
                "source": source,
                "synonyms": synonyms,
                "config_type": d.type.code,
                "doc": d.doc,
            }
        )
    return out
