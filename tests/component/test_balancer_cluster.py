"""The self-balancing loop on an in-process three-node cluster (real AdminClient over sockets).

* An empty broker (every replica placed on nodes 1 and 2 by hand) makes the active controller
  rebalance by itself (``confluent.balancer.enable`` is true by default on a cluster): node 3 ends
  with its share of replicas, every partition keeps its replication factor, and the rebalance mark
  (``zurau.balancer.rebalance.requested``) is cleared once a plan proposes nothing.
* ``zurau balancer remove-broker --wait`` drains every replica off a broker (the command returns
  once it hosts none); ``status`` shows it removing; ``plan`` then proposes nothing; ``cancel``
  ends the removal, and a ``rebalance`` brings the broker back into use.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from typer.testing import CliRunner

from zurau.cli.main import app
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
        # a reassignment in flight lists the adding replica too ([3, 2, 1]): wait for the moves to
        # finish, every partition back at 2 replicas, with node 3 holding its share
        def settled() -> bool:
            now = _replicas(admin)
            in_band = all(3 <= _count(now, b) <= 5 for b in (1, 2, 3))
            return in_band and all(len(set(rs)) == 2 for rs in now.values())

        _wait("node 3 gets its share and the moves finish", settled, 60)
        final = _replicas(admin)
        assert all(len(set(rs)) == 2 for rs in final.values()), final
        assert all(3 <= _count(final, b) <= 5 for b in (1, 2, 3)), final

        def mark_cleared() -> bool:
            res = ConfigResource(ResourceType.BROKER, "1")
            entries = admin.describe_configs([res])[res].result(10)
            return entries["zurau.balancer.rebalance.requested"].value == "false"

        _wait("the rebalance mark cleared", mark_cleared, 30)

        bs = cluster.bootstrap_servers

        def cli(*args: str) -> str:
            out = CliRunner().invoke(app, ["balancer", *args, "--bootstrap-server", bs])
            assert out.exit_code == 0, out.stdout + out.stderr
            return out.stdout

        assert "hosts no replica" in cli("remove-broker", "--broker-id", "2", "--wait", "--timeout", "60")
        drained = _replicas(admin)
        assert all(sorted(rs) == [1, 3] for rs in drained.values()), drained
        status = json.loads(cli("status", "--json"))
        by_id = {b["id"]: b for b in status["brokers"]}
        assert by_id[2]["removing"] and by_id[2]["replicas"] == 0 and by_id[1]["replicas"] == PARTITIONS
        assert json.loads(cli("plan", "--json"))["reassignments"] == []

        assert "removal of broker(s) 2 ended" in cli("cancel")
        res = ConfigResource(ResourceType.BROKER, "2")
        assert admin.describe_configs([res])[res].result(10)["zurau.balancer.removing"].value == "false"
        assert "Rebalance requested" in cli("rebalance")
        _wait("node 2 back in use", lambda: _count(_replicas(admin), 2) >= 3, 60)
