"""What the self-balancing planner is asked to do: :class:`BalancerOptions` and :class:`Trigger`.

The options mirror Confluent's Self-Balancing Clusters broker configs (defined in
:mod:`zurau.config.balancer_configs`); :func:`options_from_config` reads them, by their Kafka
names, from any ``get(name) -> typed value`` (``BrokerConfig.get``). Invariants: options are
immutable and validated on construction (a bad value raises ValueError), so the planner never
sees a nonsensical threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "DEFAULT_BALANCE_THRESHOLD",
    "ENABLE",
    "EXCLUDE_TOPIC_NAMES",
    "EXCLUDE_TOPIC_PREFIXES",
    "DISK_MAX_LOAD",
    "FAILURE_THRESHOLD_MS",
    "MAX_CONCURRENT_MOVES",
    "MAX_REPLICAS",
    "THROTTLE_BYTES_PER_SECOND",
    "TRIGGER",
    "BalancerOptions",
    "Trigger",
    "options_from_config",
]

# The broker configs (zurau.config.balancer_configs), by Kafka name.
ENABLE = "confluent.balancer.enable"
TRIGGER = "confluent.balancer.heal.uneven.load.trigger"
FAILURE_THRESHOLD_MS = "confluent.balancer.heal.broker.failure.threshold.ms"
THROTTLE_BYTES_PER_SECOND = "confluent.balancer.throttle.bytes.per.second"
DISK_MAX_LOAD = "confluent.balancer.disk.max.load"
MAX_REPLICAS = "confluent.balancer.max.replicas"
EXCLUDE_TOPIC_NAMES = "confluent.balancer.exclude.topic.names"
EXCLUDE_TOPIC_PREFIXES = "confluent.balancer.exclude.topic.prefixes"
MAX_CONCURRENT_MOVES = "confluent.balancer.max.concurrent.moves"

#: A broker is balanced on a goal when its load lies within ``mean * (1 -/+ threshold)`` (Cruise
#: Control's default balance percentage, 110%).
DEFAULT_BALANCE_THRESHOLD = 0.10

_INT_MAX = 2**31 - 1


class Trigger(StrEnum):
    """When the cluster heals uneven load by itself (``confluent.balancer.heal.uneven.load.trigger``).

    * ``EMPTY_BROKER``: only when a live broker holds no replica at all (a broker just added);
    * ``ANY_UNEVEN_LOAD``: also whenever a goal sees a broker outside its balance band
      (:func:`~zurau.metadata.controller.balancer.planner.should_rebalance`).
    """

    EMPTY_BROKER = "EMPTY_BROKER"
    ANY_UNEVEN_LOAD = "ANY_UNEVEN_LOAD"


@dataclass(frozen=True, slots=True)
class BalancerOptions:
    """The planner's knobs.

    * ``heal_broker_failure_threshold_ms``: a broker fenced for at least this long is *dead* and
      is drained like a removed one; -1 never drains a fenced broker.
    * ``disk_max_load``: fraction (0, 1] of a broker's disk capacity the plan never fills it
      beyond (brokers with an unknown capacity are not limited).
    * ``max_replicas_per_broker``: most replicas a broker may host (None: no bound).
    * ``exclude_topic_names`` / ``exclude_topic_prefixes``: topics never moved, except their
      replicas on removed or dead brokers (which are still drained, as Confluent does).
    * ``max_moves``: most partitions one plan reassigns (the bound of concurrent moves; None: no
      bound). Leadership moves, which copy no data, are not counted.
    * ``balance_threshold``: the width of the soft goals' balance band (see
      :data:`DEFAULT_BALANCE_THRESHOLD`); also what ``ANY_UNEVEN_LOAD`` calls uneven.
    * ``throttle_bytes_per_second``: the replication throttle of the moves (-1: none); the plan
      only uses it to estimate its duration.
    """

    heal_broker_failure_threshold_ms: int = 3_600_000
    disk_max_load: float = 0.85
    max_replicas_per_broker: int | None = None
    exclude_topic_names: frozenset[str] = field(default_factory=frozenset)
    exclude_topic_prefixes: tuple[str, ...] = ()
    max_moves: int | None = None
    balance_threshold: float = DEFAULT_BALANCE_THRESHOLD
    throttle_bytes_per_second: int = 10_485_760
    trigger: Trigger = Trigger.EMPTY_BROKER

    def __post_init__(self) -> None:
        if self.heal_broker_failure_threshold_ms < -1:
            raise ValueError("heal_broker_failure_threshold_ms must be -1 or at least 0")
        if not 0.0 < self.disk_max_load <= 1.0:
            raise ValueError("disk_max_load must lie in (0, 1]")
        if self.max_replicas_per_broker is not None and self.max_replicas_per_broker < 1:
            raise ValueError("max_replicas_per_broker must be at least 1")
        if self.max_moves is not None and self.max_moves < 1:
            raise ValueError("max_moves must be at least 1")
        if not 0.0 <= self.balance_threshold < 1.0:
            raise ValueError("balance_threshold must lie in [0, 1)")
        if self.throttle_bytes_per_second < -1 or self.throttle_bytes_per_second == 0:
            raise ValueError("throttle_bytes_per_second must be -1 or positive")
        object.__setattr__(self, "exclude_topic_names", frozenset(self.exclude_topic_names))
        object.__setattr__(self, "exclude_topic_prefixes", tuple(self.exclude_topic_prefixes))

    def excluded(self, topic: str) -> bool:
        """True when ``topic`` is excluded from balancing (by name or prefix)."""
        return topic in self.exclude_topic_names or any(
            p and topic.startswith(p) for p in self.exclude_topic_prefixes
        )


def _names(value: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(v for v in (value or ()) if v)


def options_from_config(get: Callable[[str], Any]) -> BalancerOptions:
    """The options given by the ``confluent.balancer.*`` broker configs, read through ``get``
    (``BrokerConfig.get``: typed values). ``confluent.balancer.max.replicas`` at its default
    (2^31 - 1) means no bound; so does ``max.concurrent.moves`` at 0."""
    max_replicas = int(get(MAX_REPLICAS))
    max_moves = int(get(MAX_CONCURRENT_MOVES))
    return BalancerOptions(
        heal_broker_failure_threshold_ms=int(get(FAILURE_THRESHOLD_MS)),
        disk_max_load=float(get(DISK_MAX_LOAD)),
        max_replicas_per_broker=None if max_replicas >= _INT_MAX else max_replicas,
        exclude_topic_names=frozenset(_names(get(EXCLUDE_TOPIC_NAMES))),
        exclude_topic_prefixes=_names(get(EXCLUDE_TOPIC_PREFIXES)),
        max_moves=max_moves if max_moves > 0 else None,
        throttle_bytes_per_second=int(get(THROTTLE_BYTES_PER_SECOND)),
        trigger=Trigger(str(get(TRIGGER)).upper()),
    )
