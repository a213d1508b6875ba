"""The planner's input: a cluster model (brokers, partitions) with its load, as plain data.

* :class:`BrokerModel` - a broker: rack, whether it is live (unfenced, not in controlled
  shutdown), how long it has been fenced, whether the operator is removing it, and its disk
  capacity.
* :class:`PartitionModel` - a partition: replicas (for a partition being reassigned, the target
  replicas), ISR, leader, its ``min.insync.replicas`` and its load.
* :class:`PartitionLoad` / :class:`LoadModel` - the measured load. A replica's load is its
  partition's: every replica holds ``size_bytes`` on disk and takes ``bytes_in_per_sec`` (the
  leader from producers, followers by replication); the leader also sends ``bytes_out_per_sec``
  to consumers. Rates are whole bytes per second, so sums are exact.
* :func:`cluster_model` builds a model from a :class:`~zurau.metadata.image.MetadataImage`;
  :func:`apply_plan` gives the model a plan leads to once every move has completed.

Invariants: models are immutable; ``ClusterModel.partitions`` is sorted by (topic, partition) and
``ClusterModel.brokers`` holds every broker a replica names (a replica on a broker the image does
not register is on a broker to drain: ``removing``, not live).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from zurau.metadata.image import MetadataImage

if TYPE_CHECKING:
    from zurau.metadata.controller.balancer.planner import Plan

__all__ = [
    "BrokerModel",
    "ClusterModel",
    "LoadModel",
    "PartitionLoad",
    "PartitionModel",
    "apply_plan",
    "cluster_model",
]


@dataclass(frozen=True, slots=True)
class BrokerModel:
    """One broker. ``down_ms`` is how long a broker that is not live has been fenced (None: live,
    or not known, which never counts as past the failure threshold). ``disk_capacity_bytes``
    None: unknown (the disk limit does not apply to it)."""

    id: int
    rack: str | None = None
    live: bool = True
    down_ms: int | None = None
    removing: bool = False
    disk_capacity_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    """The load of one replica of a partition (see the module docstring)."""

    size_bytes: int = 0
    bytes_in_per_sec: int = 0
    bytes_out_per_sec: int = 0


@dataclass(frozen=True, slots=True)
class PartitionModel:
    """One partition. ``leader`` -1: none. ``reassigning``: a reassignment is under way
    (``replicas`` are then its target); the planner leaves such a partition alone."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    min_isr: int = 1
    reassigning: bool = False
    load: PartitionLoad = field(default_factory=PartitionLoad)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass(frozen=True, slots=True)
class LoadModel:
    """Measured load: disk capacity by broker id, load by (topic, partition). Anything missing
    is unknown capacity and zero load."""

    disk_capacity_bytes: Mapping[int, int] = field(default_factory=dict)
    partitions: Mapping[tuple[str, int], PartitionLoad] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterModel:
    """Brokers by id and partitions sorted by (topic, partition)."""

    brokers: Mapping[int, BrokerModel]
    partitions: tuple[PartitionModel, ...]

    @staticmethod
    def of(brokers: Iterable[BrokerModel], partitions: Iterable[PartitionModel]) -> ClusterModel:
        """A model of these brokers and partitions (sorted; a broker a replica names but not
        given here is added as one to drain)."""
        by_id = {b.id: b for b in brokers}
        parts = tuple(sorted(partitions, key=lambda p: p.key))
        for p in parts:
            for r in (*p.replicas, *p.isr):
                if r not in by_id:
                    by_id[r] = BrokerModel(r, live=False, removing=True)
        return ClusterModel(MappingProxyType(dict(sorted(by_id.items()))), parts)

    def replicas_on(self, broker_id: int) -> int:
        """How many replicas ``broker_id`` hosts."""
        return sum(1 for p in self.partitions if broker_id in p.replicas)


def cluster_model(
    image: MetadataImage,
    load: LoadModel | None = None,
    *,
    removing: Iterable[int] = (),
    fenced_since_ms: Mapping[int, int] | None = None,
    now_ms: int | None = None,
    min_insync_replicas: int = 1,
) -> ClusterModel:
    """The model of ``image``'s registered brokers and topics, with ``load``.

    ``removing``: brokers the operator is removing. ``fenced_since_ms`` / ``now_ms``: when each
    fenced broker was fenced (the controller's clock), giving ``down_ms``. ``min_insync_replicas``
    is the broker default; a topic's ``min.insync.replicas`` override wins. A partition being
    reassigned is modelled at its target replicas, ``reassigning``.
    """
    load = load or LoadModel()
    gone = set(removing)
    since = fenced_since_ms or {}
    brokers = []
    for reg in image.brokers.values():
        down = None
        if not reg.live and reg.fenced and now_ms is not None and reg.id in since:
            down = max(0, now_ms - since[reg.id])
        brokers.append(
            BrokerModel(
                reg.id,
                reg.rack,
                reg.live,
                down,
                reg.id in gone,
                load.disk_capacity_bytes.get(reg.id),
            )
        )
    parts = []
    for topic in image.all():
        raw = topic.configs.get("min.insync.replicas")
        min_isr = int(raw) if raw is not None else min_insync_replicas
        for index in sorted(topic.partitions):
            reg_p = topic.partitions[index]
            parts.append(
                PartitionModel(
                    topic.name,
                    index,
                    reg_p.target_replicas,
                    reg_p.isr,
                    reg_p.leader,
                    min_isr,
                    reg_p.reassigning,
                    load.partitions.get((topic.name, index), PartitionLoad()),
                )
            )
    return ClusterModel.of(brokers, parts)


def apply_plan(model: ClusterModel, plan: Plan) -> ClusterModel:
    """The model once every move of ``plan`` has completed: a reassigned partition has the new
    replicas, its ISR is the kept ISR members plus the added replicas, and its leader is the
    first replica (the preferred leader, elected after the move); a leadership move makes its
    target the first replica and the leader."""
    changed: dict[tuple[str, int], tuple[int, ...]] = {}
    for r in plan.reassignments:
        changed[(r.topic, r.partition)] = r.replicas
    for m in plan.leadership_moves:
        changed[(m.topic, m.partition)] = m.replicas
    parts = []
    for p in model.partitions:
        new = changed.get(p.key)
        if new is None:
            parts.append(p)
            continue
        added = [b for b in new if b not in p.replicas]
        isr = tuple(b for b in new if b in p.isr or b in added)
        parts.append(replace(p, replicas=new, isr=isr, leader=new[0]))
    return ClusterModel(model.brokers, tuple(parts))
