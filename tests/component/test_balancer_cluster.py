"""The self-balancing loop on an in-process three-node cluster (real AdminClient over sockets).

* An empty broker (every replica placed on nodes 1 and 2 by hand) makes the active controller
  rebalance by itself (``confluent.balancer.enable`` is true by default on a cluster): node 3 ends
  with its share of replicas, every partition keeps its replication factor, and the rebalance mark
  (``zurau.balancer.rebalance.requested``) is cleared once a plan proposes nothing.
* ``zurau.balancer.removing=true`` on a broker (what ``zurau balancer remove-broker`` sets) drains
  every replica off it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from zurau.embedded import EmbeddedCluster

TOPIC = "balanced"
PARTITIONS = 6
CONFIGS = {"offsets.topic.replication.factor": "2", "transaction.state.log.replication.factor": "2"}


def _wait(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.2)


def _replicas(admin: AdminClient) -> dict[int, list[int]]:
    md = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p: list(md.partitions[p].replicas) for p in md.partitions}


def _count(assignment: dict[int, list[int]], broker: int) -> int:
    return sum(broker in rs for rs in assignment.values())


def test_an_empty_broker_gets_its_share_and_a_removed_broker_is_drained() -> None:
    with EmbeddedCluster(3, **CONFIGS) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assignment = [[1, 2] if p % 2 == 0 else [2, 1] for p in range(PARTITIONS)]
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, replica_assignment=assignment)])[TOPIC].result(30)

        # 12 replicas on 3 brokers, a mean of 4: the replica-count band is [floor(0.9 * 4),
        # ceil(1.1 * 4)] = [3, 5], and the planner stops once every broker is in it
        _wait("node 3 gets its share", lambda: _count(_replicas(admin), 3) >= 3, 60)
        final = _replicas(admin)
        assert all(len(set(rs)) == 2 for rs in final.values()), final
        assert all(3 <= _count(final, b) <= 5 for b in (1, 2, 3)), final

        def mark_cleared() -> bool:
            res = ConfigResource(ResourceType.BROKER, "1")
            entries = admin.describe_configs([res])[res].result(10)
            return entries["zurau.balancer.rebalance.requested"].value == "false"

        _wait("the rebalance mark cleared", mark_cleared, 30)

        res = ConfigResource(ResourceType.BROKER, "2", incremental_configs=[
            ConfigEntry("zurau.balancer.removing", "true", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result(30)
        _wait("node 2 drained", lambda: _count(_replicas(admin), 2) == 0, 60)
        drained = _replicas(admin)
        assert all(sorted(rs) == [1, 3] for rs in drained.values()), drained
