"""The replication throttle of ``zurau reassign-partitions --throttle`` (kafka-reassign-partitions.sh's).

A throttled reassignment sets, before the reassignment starts:

* on each topic with a moving partition, ``leader.replication.throttled.replicas`` = every
  ``partition:broker`` of the replicas the partition has before the move (the brokers that send)
  and ``follower.replication.throttled.replicas`` = every ``partition:broker`` of the replicas it
  gains (the brokers that receive), for the partitions of the new reassignment and of those still
  in progress (their throttle is kept: a topic config is set whole);
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

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
#: The broker configs --verify removes (Kafka's list, the log-dir one included).
BROKER_THROTTLES = (LEADER_RATE, FOLLOWER_RATE, "replica.alter.log.dirs.io.max.bytes.per.second")

YOU_MUST_VERIFY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed."
)


@dataclass(frozen=True)
class Move:
    """One partition's move: the replicas it had (``sources``) and those it gains."""

    sources: tuple[int, ...]
    destinations: tuple[int, ...]


@dataclass
class MoveMap:
    """topic -> partition -> :class:`Move`."""

    moves: dict[str, dict[int, Move]] = field(default_factory=dict)

    def brokers(self) -> set[int]:
        return {b for parts in self.moves.values() for m in parts.values() for b in (*m.sources, *m.destinations)}


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
        out.moves.setdefault(tp.topic, {})[tp.partition] = Move(
            tuple(originals[tp]), tuple(b for b in r.adding_replicas if b not in originals[tp])
        )
    for tp, target in proposed.items():
        sources = originals.get(tp) or list(current.get(tp, []))
        out.moves.setdefault(tp.topic, {})[tp.partition] = Move(
            tuple(sources), tuple(b for b in target if b not in sources)
        )
    return out


def throttled_replicas(moves: Mapping[int, Move]) -> tuple[str, str]:
    """A topic's (leader, follower) throttled-replicas values: ``partition:broker`` pairs of the
    sources and of the destinations, sorted."""
    leaders = sorted((p, b) for p, m in moves.items() for b in m.sources)
    followers = sorted((p, b) for p, m in moves.items() for b in m.destinations)
    return ",".join(f"{p}:{b}" for p, b in leaders), ",".join(f"{p}:{b}" for p, b in followers)


def _errors(results: Mapping[ConfigResource, Exception | None]) -> list[str]:
    return [f"{r.name}: {describe_error(e)}" for r, e in sorted(results.items(), key=lambda x: x[0].name) if e is not None]


async def set_throttles(admin: AdminClient, moves: MoveMap, throttle: int) -> list[str]:
    """Set the topic and broker throttles of ``moves`` at ``throttle`` bytes/s. Returns the
    output lines; the topic configs or a broker's rate failing raises (as Kafka's tool fails)."""
    from zurau.cli.common import CommandError

    topic_ops: dict[ConfigResource, list[AlterConfigOp]] = {}
    for topic, parts in sorted(moves.moves.items()):
        leaders, followers = throttled_replicas(parts)
        topic_ops[ConfigResource(ResourceType.TOPIC, topic)] = [
            AlterConfigOp(LEADER_REPLICAS, AlterOp.SET, leaders),
            AlterConfigOp(FOLLOWER_REPLICAS, AlterOp.SET, followers),
        ]
    failed = _errors(await admin.incremental_alter_configs(topic_ops))
    if failed:
        raise CommandError(f"cannot set the throttled replicas: {'; '.join(failed)}")
    broker_ops = {
        ConfigResource(ResourceType.BROKER, str(b)): [
            AlterConfigOp(LEADER_RATE, AlterOp.SET, str(throttle)),
            AlterConfigOp(FOLLOWER_RATE, AlterOp.SET, str(throttle)),
        ]
        for b in sorted(moves.brokers())
    }
    failed = _errors(await admin.incremental_alter_configs(broker_ops))
    if failed:
        raise CommandError(f"cannot set the throttle rate on broker(s) {'; '.join(failed)}")
    return [f"The inter-broker throttle limit was set to {throttle} B/s"]


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
        ConfigResource(ResourceType.TOPIC, t): [
            AlterConfigOp(LEADER_REPLICAS, AlterOp.DELETE),
            AlterConfigOp(FOLLOWER_REPLICAS, AlterOp.DELETE),
        ]
        for t in names
    }
    failed = _errors(await admin.incremental_alter_configs(topic_ops))
    if failed:
        lines.append(f"Warning: cannot clear the throttled replicas of {'; '.join(failed)}")
    return lines
