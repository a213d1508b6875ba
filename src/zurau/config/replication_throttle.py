"""The replication throttle of a set of partition moves, as ``kafka-reassign-partitions --throttle``
sets it: which configs, on which resources, with which values.

A pure description shared by the two writers of a throttle, each of which sends it its own way:
``zurau reassign-partitions --throttle`` (through the admin client,
:mod:`zurau.cli.reassignment_throttle`) and the self-balancing service (through the active
controller's own IncrementalAlterConfigs, :mod:`zurau.metadata.balancer_service`). The brokers
read the same configs (:mod:`zurau.replication.replication_quota`).

:func:`throttle_of` gives, for moves ``topic -> partition -> Move(sources, destinations)``:

* for each topic with a moving partition, ``leader.replication.throttled.replicas`` = every
  ``partition:broker`` of the replicas the partition has before the move (the brokers that send)
  and ``follower.replication.throttled.replicas`` = every ``partition:broker`` of the replicas it
  gains (the brokers that receive); pairs sorted by partition, then broker, comma-separated (a
  topic config is set whole: the moves of a topic are all given at once);
* for every broker of those replicas, ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` = the rate in bytes/s.

Removing a throttle deletes the same names: :data:`THROTTLED_REPLICAS` on the topics,
:data:`THROTTLED_RATES` on the brokers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "FOLLOWER_RATE",
    "FOLLOWER_REPLICAS",
    "LEADER_RATE",
    "LEADER_REPLICAS",
    "THROTTLED_RATES",
    "THROTTLED_REPLICAS",
    "Move",
    "ReassignmentThrottle",
    "throttle_of",
    "throttled_replicas",
]

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
#: The topic configs of a throttle, leader side first.
THROTTLED_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
#: The broker configs of a throttle, leader side first.
THROTTLED_RATES = (LEADER_RATE, FOLLOWER_RATE)


@dataclass(frozen=True)
class Move:
    """One partition's move: the replicas it had (``sources``) and those it gains."""

    sources: tuple[int, ...]
    destinations: tuple[int, ...]

    @classmethod
    def between(cls, current: Sequence[int], target: Sequence[int]) -> Move:
        """The move from the replicas ``current`` to ``target``."""
        return cls(tuple(current), tuple(b for b in target if b not in current))


@dataclass(frozen=True)
class ReassignmentThrottle:
    """The throttle of some moves (see the module docstring): ``replicas`` maps each topic to its
    (leader, follower) throttled-replicas values; ``brokers`` get the ``rate``."""

    replicas: Mapping[str, tuple[str, str]]
    brokers: frozenset[int]
    rate: int

    def topic_configs(self, topic: str) -> list[tuple[str, str]]:
        """(name, value) of the topic configs to set on ``topic``."""
        leaders, followers = self.replicas[topic]
        return [(LEADER_REPLICAS, leaders), (FOLLOWER_REPLICAS, followers)]

    def broker_configs(self) -> list[tuple[str, str]]:
        """(name, value) of the broker configs to set on each of :attr:`brokers`."""
        return [(name, str(self.rate)) for name in THROTTLED_RATES]


def throttled_replicas(moves: Mapping[int, Move]) -> tuple[str, str]:
    """A topic's (leader, follower) throttled-replicas values for its moves ``partition -> Move``."""
    leaders = sorted((p, b) for p, m in moves.items() for b in m.sources)
    followers = sorted((p, b) for p, m in moves.items() for b in m.destinations)
    return ",".join(f"{p}:{b}" for p, b in leaders), ",".join(f"{p}:{b}" for p, b in followers)


def throttle_of(moves: Mapping[str, Mapping[int, Move]], rate: int) -> ReassignmentThrottle:
    """The throttle at ``rate`` bytes/s of ``moves`` (``topic -> partition -> Move``)."""
    return ReassignmentThrottle(
        replicas={topic: throttled_replicas(parts) for topic, parts in sorted(moves.items()) if parts},
        brokers=frozenset(
            b for parts in moves.values() for m in parts.values() for b in (*m.sources, *m.destinations)
        ),
        rate=rate,
    )
