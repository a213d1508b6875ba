"""Self-balancing cluster configuration definitions (Confluent Server's ``confluent.balancer.*``):
whether the cluster balances itself, when, how far it may fill a disk or a broker, what it leaves
alone and how fast it moves data.

The planner they configure is :mod:`zurau.metadata.controller.balancer` (read by
:func:`~zurau.metadata.controller.balancer.options.options_from_config`). All are dynamic, as in
Confluent Server. ``confluent.balancer.max.concurrent.moves`` is Zurau's own.
"""

from __future__ import annotations

from zurau.config.config_def import ConfigKey
from zurau.config.shorthand import LI, B, D, H, I, L, M, S, at_least
from zurau.config.types import INT_MAX
from zurau.config.validators import Range, ValidString

BALANCER_TRIGGERS = ("EMPTY_BROKER", "ANY_UNEVEN_LOAD")

# fmt: off
BALANCER_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("confluent.balancer.enable", B, True, None, H,
              "Balance a cluster by itself: drain removed and dead brokers, keep racks and bounds, "
              "even out replicas, leaders, disk, network.",
              dynamic=True),
    ConfigKey("confluent.balancer.heal.uneven.load.trigger", S, "EMPTY_BROKER",
              ValidString(BALANCER_TRIGGERS, case_insensitive=True), H,
              "When uneven load starts a rebalance: EMPTY_BROKER when an empty broker joins; "
              "ANY_UNEVEN_LOAD also when a broker's load is 10% off the mean.",
              dynamic=True),
    ConfigKey("confluent.balancer.heal.broker.failure.threshold.ms", L, 3_600_000, Range(0, None, extra=(-1,)), H,
              "How long a broker stays fenced before it counts as dead and its replicas move away; "
              "-1: never.",
              dynamic=True),
    ConfigKey("confluent.balancer.throttle.bytes.per.second", L, 10_485_760, Range(1, None, extra=(-1,)), H,
              "Replication throttle of the data a rebalance moves, in bytes per second; -1: none.",
              dynamic=True),
    ConfigKey("confluent.balancer.disk.max.load", D, 0.85, Range(0.01, 1.0), H,
              "Fraction of a broker's disk a rebalance never fills beyond (and moves data off a "
              "broker above).",
              dynamic=True),
    ConfigKey("confluent.balancer.max.replicas", I, INT_MAX, at_least(1), M,
              "Most replicas a rebalance lets a broker host.",
              dynamic=True),
    ConfigKey("confluent.balancer.exclude.topic.names", LI, (), None, M,
              "Topics a rebalance never moves (their replicas on removed or dead brokers still move).",
              dynamic=True),
    ConfigKey("confluent.balancer.exclude.topic.prefixes", LI, (), None, M,
              "Name prefixes of topics a rebalance never moves (replicas on removed or dead brokers "
              "still move).",
              dynamic=True),
    ConfigKey("confluent.balancer.max.concurrent.moves", I, 0, at_least(0), M,
              "Zurau's own: most partitions one rebalance plan reassigns at once; 0: no bound.",
              dynamic=True),
    # Zurau's own state of the balancer, kept as dynamic broker configs in the metadata log (so
    # that it outlives a controller failover) and set by `zurau balancer`.
    ConfigKey("zurau.balancer.removing", B, False, None, M,
              "Zurau's own, per broker (zurau balancer remove-broker): drain every replica off it.",
              dynamic=True),
    ConfigKey("zurau.balancer.rebalance.requested", B, False, None, M,
              "Zurau's own, cluster default: a rebalance is under way until a plan proposes nothing.",
              dynamic=True),
    ConfigKey("zurau.balancer.throttled.topics", LI, (), None, M,
              "Zurau's own, cluster default: topics whose throttled replicas the balancer set (it "
              "removes them, and the brokers' throttled rates, once no move is left).",
              dynamic=True),
)

#: Read by the active controller's balancer at every tick: a dynamic change needs no restart.
BALANCER_CONFIG_NAMES = frozenset(k.name for k in BALANCER_CONFIGS)
# fmt: on
