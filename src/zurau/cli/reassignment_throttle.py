"""The replication throttle of ``zurau reassign-partitions --throttle`` (kafka-reassign-partitions.sh's).

A throttled reassignment sets, before the reassignment starts, the throttle
:func:`zurau.config.replication_throttle.throttle_of` describes (the one the balancer sets too)
for the partitions of the new reassignment and of those still in progress (their throttle is
kept: a topic config is set whole):

* on each topic with a moving partition, ``leader.replication.throttled.replicas`` (the replicas
  before the move, which send) and ``follower.replication.throttled.replicas`` (those it gains);
* on every broker of those replicas, ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` = the throttle in bytes/s (IncrementalAlterConfigs on the
  BROKER resource).

``--verify`` of a reassignment that is no longer in progress removes them: both topic configs of
the reassignment's topics, and both rates on every broker of the cluster (as Kafka does, so a
throttle set by an earlier run goes too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from zurau.client.admin import (
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigResource,
    PartitionReassignment,
    ResourceType,
)
from zurau.client.errors import describe_error
from zurau.client.types import TopicPartition
from zurau.config.replication_throttle import (
    FOLLOWER_RATE,
    LEADER_RATE,
    THROTTLED_REPLICAS,
    Move,
    throttle_of,
)

#: The broker configs --verify removes (Kafka's list, the log-dir one included).
BROKER_THROTTLES = (LEADER_RATE, FOLLOWER_RATE, "replica.alter.log.dirs.io.max.bytes.per.second")

YOU_MUST_VERIFY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed."
)


@dataclass
class MoveMap:
    """topic -> partition -> :class:`Move`."""

    moves: dict[str, dict[int, Move]] = field(default_factory=dict)


def move_map(
    ongoing: Mapping[TopicPartition, PartitionReassignment],
    proposed: Mapping[TopicPartition, list[int]],
    current: Mapping[TopicPartition, list[int]],
) -> MoveMap:
    """The moves of the ongoing reassignments and of ``proposed`` (which replaces an ongoing one
    of the same partition). A partition being reassigned moves from its original replicas (the
    current ones without those being added)."""
    out = MoveMap()
    originals: dict[TopicPartition, list[int]] = {}
    for tp, r in ongoing.items():
        originals[tp] = [b for b in r.replicas if b not in r.adding_replicas]
        out.moves.setdefault(tp.topic, {})[tp.partition] = Move.between(originals[tp], r.adding_replicas)
    for tp, target in proposed.items():
        sources = originals.get(tp) or list(current.get(tp, []))
        out.moves.setdefault(tp.topic, {})[tp.partition] = Move.between(sources, target)
    return out


def _errors(results: Mapping[ConfigResource, Exception | None]) -> list[str]:
    return [f"{r.name}: {describe_error(e)}" for r, e in sorted(results.items(), key=lambda x: x[0].name) if e is not None]


async def set_throttles(admin: AdminClient, moves: MoveMap, throttle: int) -> list[str]:
    """Set the topic and broker throttles of ``moves`` at ``throttle`` bytes/s. Returns the
    output lines; the topic configs or a broker's rate failing raises (as Kafka's tool fails)."""
    from zurau.cli.common import CommandError

    plan = throttle_of(moves.moves, throttle)
    topic_ops = {
        ConfigResource(ResourceType.TOPIC, topic): [
            AlterConfigOp(name, AlterOp.SET, value) for name, value in plan.topic_configs(topic)
        ]
        for topic in plan.replicas
    }
    failed = _errors(await admin.incremental_alter_configs(topic_ops))
    if failed:
        raise CommandError(f"cannot set the throttled replicas: {'; '.join(failed)}")
    broker_ops = {
        ConfigResource(ResourceType.BROKER, str(b)): [
            AlterConfigOp(name, AlterOp.SET, value) for name, value in plan.broker_configs()
        ]
        for b in sorted(plan.brokers)
    }
    failed = _errors(await admin.incremental_alter_configs(broker_ops))
    if failed:
        raise CommandError(f"cannot set the throttle rate on broker(s) {'; '.join(failed)}")
    return [f"The inter-broker throttle limit was set to {plan.rate} B/s"]


async def clear_throttles(admin: AdminClient, topics: Iterable[str]) -> list[str]:
    """Remove the broker rates on every broker of the cluster and the throttled replicas of
    ``topics``. Returns the output lines (a broker refusing is reported, not raised)."""
    metadata = await admin.cluster.refresh_metadata([])
    brokers = sorted(metadata.brokers)
    names = sorted(set(topics))
    lines = [
        f"Clearing broker-level throttles on broker{'s' if len(brokers) != 1 else ''} {','.join(map(str, brokers))}",
        f"Clearing topic-level throttles on topic{'s' if len(names) != 1 else ''} {','.join(names)}",
    ]
    broker_ops = {
        ConfigResource(ResourceType.BROKER, str(b)): [AlterConfigOp(k, AlterOp.DELETE) for k in BROKER_THROTTLES]
        for b in brokers
    }
    failed = _errors(await admin.incremental_alter_configs(broker_ops))
    if failed:
        lines.append(f"Warning: cannot clear the throttle rate on broker(s) {'; '.join(failed)}")
    topic_ops = {
        ConfigResource(ResourceType.TOPIC, t): [AlterConfigOp(name, AlterOp.DELETE) for name in THROTTLED_REPLICAS]
        for t in names
    }
    failed = _errors(await admin.incremental_alter_configs(topic_ops))
    if failed:
        lines.append(f"Warning: cannot clear the throttled replicas of {'; '.join(failed)}")
    return lines
