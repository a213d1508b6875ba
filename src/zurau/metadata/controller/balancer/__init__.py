"""The planner of a self-balancing cluster (Confluent's Self-Balancing Clusters): a pure function
from a cluster model to a plan of partition reassignments and leadership moves.

:func:`~zurau.metadata.controller.balancer.model.cluster_model` builds the model (brokers, racks,
liveness, partitions, ISR, leaders, and their measured load) from a
:class:`~zurau.metadata.image.MetadataImage`; :func:`~zurau.metadata.controller.balancer.planner.plan`
plans; :func:`~zurau.metadata.controller.balancer.planner.should_rebalance` tells whether uneven
load should trigger a rebalance. Nothing here does I/O or keeps state: the active controller
feeds it and carries the plan out (AlterPartitionReassignments, then preferred leader elections).

Brokers. The brokers to *drain* are those the operator is removing and those fenced for at least
``heal_broker_failure_threshold_ms`` (-1: never). The *destination* brokers, the only ones that
ever receive a replica or leadership, are the live ones (unfenced, not in controlled shutdown)
not being drained. A broker fenced for less than the threshold keeps its replicas and receives
none. Balance is measured over the destination brokers, against the load they will share (theirs
plus what the drained brokers hold).

Goals, in priority order (hard first):

1. drain - removed and dead brokers end with no replicas. Excluded topics are drained too
   (Confluent drains them as well): exclusion only keeps a topic from being *balanced*.
2. rack - a partition's replicas span ``min(RF, racks of the destination brokers)`` racks
   (brokers without a rack form one rack); no move ever makes a partition span fewer racks.
3. replica capacity - at most ``max_replicas_per_broker`` replicas on a broker.
4. disk capacity - a broker's disk at most ``disk_max_load`` full (brokers whose capacity is
   known).
5. replica count, 6. leader count, 7. disk, 8. network in, 9. network out - soft goals: each
   destination broker within a band of ``balance_threshold`` (10%) around the mean
   (counts: [floor(mean * 0.9), ceil(mean * 1.1)]; disk as utilisation when every capacity is
   known). A replica's load is its partition's: size and bytes-in on every replica, bytes-out
   on the leader.

Fewest moves: a move is taken only when it improves a goal without making any higher goal worse
(the goals' measures, as a vector in this order, go down lexicographically), so a cluster that
meets every goal gets an empty plan, and the plan stops when no goal has a single move left that
improves it that way (replica moves for the replica, disk and network-in goals, leadership moves
for leader count and network-out; :mod:`~zurau.metadata.controller.balancer.goals`). Each step
works on the first goal, in order, that has such a move, so hard goals are met before soft ones.
Which of several such moves is taken is a cheap heuristic (most loaded broker to least loaded,
the best of a few), not the best of all: the plan is a good one, not the shortest possible.
A gain on a resource goal (disk, network in, network out) of less than ``balance_threshold`` of
the mean counts as none (a loss, however small, stays a loss): measured rates and sizes move a
little from sample to sample, and
where whole partitions cannot even a resource out (say three brokers leading eight partitions)
such small gains would only pass a leadership from one broker to another at every sample.

Which partitions move:

* a partition being reassigned, or without a live leader (nothing to copy from), never moves
  (a replica of it on a broker to drain is reported in ``Plan.unresolved``);
* a *healthy* partition (not excluded, ISR at least its ``min.insync.replicas``, every replica on
  a live broker) may move any replica and its leadership;
* any other partition (excluded topic, ISR below min ISR, a replica on a broker that is down)
  only has its replicas on brokers to drain replaced - the move heals it, it is not balanced.

Move semantics (Kafka's reassignment, KIP-455): a reassignment first adds the new replicas, which
copy from the leader, and removes the old ones only once every new one has joined the ISR. So
the ISR of a moved partition never drops below its size before the move (it only loses a removed
replica when a new one has joined), and a partition below min ISR is touched only to heal it.
A moved replica takes the place of the one it replaces in the replica list, so moving the leader's
replica makes the new broker the preferred leader (Kafka's completion elects it); every proposed
replica list starts with its preferred leader, which is in the ISR once the move completes. A
leadership move reorders an unchanged replica set so that an in-sync replica on a destination
broker comes first, to be followed by a preferred leader election. ``max_moves`` bounds the
partitions one plan reassigns (hard goals go first, so drains are planned before balance).

Invariants of a plan (tests/unit/test_balancer_planner.py checks them on random clusters):

* every proposed replica list has the partition's replication factor, distinct brokers, and adds
  only destination brokers; it spans no fewer racks than before;
* with enough destination brokers (at least the replication factor) and no ``max_moves``,
  removed and dead brokers end with no replicas of partitions that may move;
* deterministic: the same model and options give the same plan;
* convergence: without ``max_moves``, planning again on the model the plan leads to
  (:func:`~zurau.metadata.controller.balancer.model.apply_plan`) proposes nothing;
* an empty broker that joins a balanced cluster (no racks, caps or disk limits in the way) ends
  with a replica count within the count band, at least floor(mean * 0.9);
* complete: without ``max_moves``, once the plan is applied no goal has a move left (above);
* the goals' measures, as a vector in goal order, never get worse.

Cost: the search keeps every aggregate up to date move by move
(:mod:`~zurau.metadata.controller.balancer.state`) and a step looks only at moves that can help,
so planning 10,000 partitions on 50 brokers takes seconds in pure Python (BENCHMARKS.md,
"Balancer planner"; ``bench/balancer_planner.py``).
"""

from zurau.metadata.controller.balancer.model import (
    BrokerModel,
    ClusterModel,
    LoadModel,
    PartitionLoad,
    PartitionModel,
    apply_plan,
    cluster_model,
)
from zurau.metadata.controller.balancer.options import BalancerOptions, Trigger, options_from_config
from zurau.metadata.controller.balancer.planner import (
    GOALS,
    LeadershipMove,
    Plan,
    Reassignment,
    brokers_to_drain,
    destination_brokers,
    plan,
    rack_deficit,
    should_rebalance,
)

__all__ = [
    "GOALS",
    "BalancerOptions",
    "BrokerModel",
    "ClusterModel",
    "LeadershipMove",
    "LoadModel",
    "PartitionLoad",
    "PartitionModel",
    "Plan",
    "Reassignment",
    "Trigger",
    "apply_plan",
    "brokers_to_drain",
    "cluster_model",
    "destination_brokers",
    "options_from_config",
    "plan",
    "rack_deficit",
    "should_rebalance",
]
