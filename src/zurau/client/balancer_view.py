"""The self-balancing cluster as an admin client sees it, and the operator's three actions on it.

``zurau balancer`` (:mod:`zurau.cli.balancer`) and the console's Balancer page both read and act
through this module, so both show and do the same; it uses Kafka's admin APIs only.

Reading (:func:`read_cluster`): Metadata (brokers, replicas, leaders), DescribeLogDirs asked of
every live broker (bytes per replica, disk capacity: the sum of its log dirs' ``total_bytes``, -1
when unknown), DescribeConfigs of every broker (``zurau.balancer.removing``) and of every topic
(``min.insync.replicas``), and ListPartitionReassignments. A broker that still holds replicas but
is not in the Metadata answer (fenced, or shut down) is neither *live* nor *reachable*, and whether
it is being removed is unknown (``removing`` None: as in Kafka, a broker's own configs are
described only by that broker); a live one whose log dirs cannot be read is not *reachable*. ``configs`` are the effective configs of the first broker that answered: the
``confluent.balancer.*`` settings and the cluster-wide rebalance mark.

:func:`status_of` turns a view into the status document (JSON-able)::

    {"enabled": "true" | "false" | None,   # confluent.balancer.enable; None: not reported
     "rebalancing": bool,                  # zurau.balancer.rebalance.requested is true
     "brokers": [{"id", "rack", "replicas", "leaders", "disk_bytes", "capacity_bytes",
                  "removing", "reachable", "live"}, ...],  # by id
     "moves": [{"topic", "partition", "adding", "removing", "copied_bytes", "total_bytes"}, ...]}

A move's ``total_bytes`` is its leader's replica size, ``copied_bytes`` the smallest size among
the replicas being added (capped at nothing: a new replica may briefly hold more than the leader
read a moment earlier).

Acting: :func:`request_rebalance` sets ``zurau.balancer.rebalance.requested=true`` as the
cluster-wide default (the active controller clears it once its plan proposes nothing);
:func:`remove_broker` sets ``zurau.balancer.removing=true`` on one broker, after checking that
the broker is part of the cluster (:class:`UnknownBrokerError`) and that the brokers left can
still hold every partition's replicas (:class:`InsufficientBrokersError`); :func:`cancel` deletes
the rebalance mark and the removal mark of every broker known to be removing and of every broker
that is not live (whose mark cannot be read; deleting an absent config changes nothing), and
cancels the reassignments in flight. A change the
cluster refuses raises the broker's :class:`~zurau.protocol.errors.KafkaError` (the first, when
several resources fail).

The dry-run plan is not here: the planner belongs to the controller (``zurau.metadata``), which
the client layer and the edge apps may not import. A :data:`Planner` is a function from a view to
the plan document that a caller allowed to import it (the command line) hands over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zurau.client.admin import (
    AdminClient,
    AlterConfigOp,
    AlterOp,
    ConfigResource,
    PartitionReassignment,
    ResourceType,
    raise_first,
)
from zurau.client.types import TopicPartition
from zurau.protocol.errors import NoReassignmentInProgressError

REMOVING = "zurau.balancer.removing"
REBALANCE_REQUESTED = "zurau.balancer.rebalance.requested"
ENABLE = "confluent.balancer.enable"


class UnknownBrokerError(ValueError):
    """A broker id that names no broker of the cluster (neither live nor holding replicas)."""


class InsufficientBrokersError(ValueError):
    """Removing the broker would leave fewer brokers than some partition's replication factor."""


@dataclass
class BrokerLoad:
    id: int
    rack: str | None = None
    replicas: int = 0
    leaders: int = 0
    disk_bytes: int = 0
    capacity_bytes: int = -1
    removing: bool | None = False
    reachable: bool = True
    live: bool = True


@dataclass
class ClusterView:
    """What the cluster reported (see the module docstring). ``partitions`` maps (topic,
    partition) to (replicas, isr, leader); ``sizes`` maps (topic, partition, broker) to the bytes
    of that replica; ``moves`` are the reassignments in flight."""

    brokers: dict[int, BrokerLoad]
    partitions: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], int]]
    sizes: dict[tuple[str, int, int], int]
    moves: dict[tuple[str, int], PartitionReassignment]
    configs: dict[str, str | None] = field(default_factory=dict)
    topic_min_isr: dict[str, int] = field(default_factory=dict)


#: The dry-run plan of a view, as a JSON-able document (see :mod:`zurau.cli.balancer`).
Planner = Callable[[ClusterView], dict[str, Any]]


def _true(value: str | None) -> bool:
    return str(value).lower() == "true"


async def read_cluster(admin: AdminClient) -> ClusterView:
    """Everything the status and the planner need, read from the cluster (module docstring)."""
    md = await admin.cluster.refresh_metadata(None)
    brokers = {b: BrokerLoad(b, n.rack) for b, n in md.brokers.items()}
    partitions: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], int]] = {}
    for name, t in md.topics.items():
        for p in t.partitions:
            partitions[(name, p.partition)] = (tuple(p.replicas), tuple(p.isr), p.leader)
            for r in p.replicas:
                brokers.setdefault(r, BrokerLoad(r, removing=None, reachable=False, live=False)).replicas += 1
            if p.leader in brokers:
                brokers[p.leader].leaders += 1
    dirs = await admin.describe_log_dirs(sorted(md.brokers))
    sizes: dict[tuple[str, int, int], int] = {}
    for b, result in dirs.items():
        if isinstance(result, Exception):
            brokers[b].reachable = False
            continue
        capacity = 0
        for d in result:
            capacity += max(0, d.total_bytes)
            for tp, n in d.replica_sizes.items():
                sizes[(tp.topic, tp.partition, b)] = n
                brokers[b].disk_bytes += n
        brokers[b].capacity_bytes = capacity or -1
    resources = [ConfigResource(ResourceType.BROKER, str(b)) for b in sorted(md.brokers)]
    configs: dict[str, str | None] = {}
    for res, entries in (await admin.describe_configs(resources)).items():
        if isinstance(entries, Exception):
            continue
        values = {e.name: e.value for e in entries}
        brokers[int(res.name)].removing = _true(values.get(REMOVING, "false"))
        if not configs:
            configs = values
    topics = [ConfigResource(ResourceType.TOPIC, t) for t in md.topics]
    topic_min_isr: dict[str, int] = {}
    if topics:
        for res, entries in (await admin.describe_configs(topics, ["min.insync.replicas"])).items():
            if not isinstance(entries, Exception):
                for e in entries:
                    if e.value is not None:
                        topic_min_isr[res.name] = int(e.value)
    moves = await admin.list_partition_reassignments()
    return ClusterView(
        brokers,
        partitions,
        sizes,
        {(tp.topic, tp.partition): m for tp, m in moves.items()},
        configs,
        topic_min_isr,
    )


def status_of(view: ClusterView) -> dict[str, Any]:
    """The status document of a view (see the module docstring for its fields)."""
    moves: list[dict[str, Any]] = []
    for (topic, index), m in sorted(view.moves.items()):
        leader = view.partitions.get((topic, index), ((), (), -1))[2]
        total = view.sizes.get((topic, index, leader), 0)
        copied = min((view.sizes.get((topic, index, b), 0) for b in m.adding_replicas), default=total)
        moves.append(
            {
                "topic": topic,
                "partition": index,
                "adding": list(m.adding_replicas),
                "removing": list(m.removing_replicas),
                "copied_bytes": copied,
                "total_bytes": total,
            }
        )
    return {
        "enabled": view.configs.get(ENABLE),
        "rebalancing": _true(view.configs.get(REBALANCE_REQUESTED, "false")),
        "brokers": [vars(b).copy() for b in sorted(view.brokers.values(), key=lambda b: b.id)],
        "moves": moves,
    }


async def _alter(admin: AdminClient, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]]) -> None:
    raise_first(await admin.incremental_alter_configs(changes))


async def request_rebalance(admin: AdminClient) -> None:
    """Ask the active controller to rebalance now, whatever its trigger config says."""
    mark = AlterConfigOp(REBALANCE_REQUESTED, AlterOp.SET, "true")
    await _alter(admin, {ConfigResource(ResourceType.BROKER, ""): [mark]})


def check_removal(view: ClusterView, broker_id: int) -> None:
    """Raise when ``broker_id`` may not be removed: :class:`UnknownBrokerError` when it is no
    broker of the view, :class:`InsufficientBrokersError` when the brokers neither removed nor
    being removed are fewer than the largest replication factor (the drain could never end); live
brokers count, even one whose log dirs did not answer this time."""
    if broker_id not in view.brokers:
        known = ", ".join(map(str, sorted(view.brokers))) or "none"
        raise UnknownBrokerError(f"broker {broker_id} is not part of the cluster (its brokers: {known})")
    staying = [b for b in view.brokers.values() if b.id != broker_id and not b.removing and b.live]
    widest = max((len(replicas) for replicas, _, _ in view.partitions.values()), default=0)
    if len(staying) < widest:
        raise InsufficientBrokersError(
            f"cannot remove broker {broker_id}: {len(staying)} broker(s) would be left to hold partitions "
            f"with {widest} replicas"
        )


async def remove_broker(admin: AdminClient, broker_id: int) -> None:
    """Mark ``broker_id`` for removal once :func:`check_removal` allows it; the active controller
    then drains its replicas and leaderships."""
    check_removal(await read_cluster(admin), broker_id)
    mark = AlterConfigOp(REMOVING, AlterOp.SET, "true")
    await _alter(admin, {ConfigResource(ResourceType.BROKER, str(broker_id)): [mark]})


async def hosted_replicas(admin: AdminClient, broker_id: int) -> int:
    """How many replicas ``broker_id`` holds now (Metadata)."""
    md = await admin.cluster.refresh_metadata(None)
    return sum(broker_id in p.replicas for t in md.topics.values() for p in t.partitions)


async def cancel(admin: AdminClient) -> tuple[list[int], int]:
    """End the rebalance and every removal, and cancel the reassignments in flight; returns the
    brokers known to be removing whose removal ended (offline brokers' marks are deleted too, not
    listed) and how many reassignments were cancelled (one that completed meanwhile is not
    counted)."""
    view = await read_cluster(admin)
    removing = sorted(b.id for b in view.brokers.values() if b.removing)
    unknown = sorted(b.id for b in view.brokers.values() if b.removing is None)
    changes: dict[ConfigResource, list[AlterConfigOp]] = {
        ConfigResource(ResourceType.BROKER, ""): [AlterConfigOp(REBALANCE_REQUESTED, AlterOp.DELETE)]
    }
    for b in removing + unknown:
        changes[ConfigResource(ResourceType.BROKER, str(b))] = [AlterConfigOp(REMOVING, AlterOp.DELETE)]
    await _alter(admin, changes)
    cancelled = 0
    if view.moves:
        results = await admin.alter_partition_reassignments({TopicPartition(t, p): None for t, p in view.moves})
        # a move that completed since it was listed has nothing left to cancel
        raise_first({tp: e for tp, e in results.items() if not isinstance(e, NoReassignmentInProgressError)})
        cancelled = sum(e is None for e in results.values())
    return removing, cancelled


__all__ = [
    "ENABLE",
    "REBALANCE_REQUESTED",
    "REMOVING",
    "BrokerLoad",
    "ClusterView",
    "InsufficientBrokersError",
    "Planner",
    "UnknownBrokerError",
    "cancel",
    "check_removal",
    "hosted_replicas",
    "read_cluster",
    "remove_broker",
    "request_rebalance",
    "status_of",
]
