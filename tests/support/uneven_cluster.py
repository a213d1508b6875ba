"""The uneven cluster the console's Balancer tests look at (the API's component test and the page's
browser test): three in-process nodes with the balancer disabled, so that the controller moves
nothing the test does not ask for, and topic :data:`UNEVEN` (6 partitions, replication factor 2)
on brokers 1 and 2 only, each leading three of them: broker 3 is empty."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from zurau.embedded import EmbeddedCluster

UNEVEN = "uneven"
CONFIGS: dict[str, Any] = {
    "offsets.topic.replication.factor": "2",
    "transaction.state.log.replication.factor": "2",
    "confluent.balancer.enable": "false",
}


@contextmanager
def uneven_cluster() -> Iterator[EmbeddedCluster]:
    """The cluster (see the module docstring), stopped on exit."""
    with EmbeddedCluster(3, **CONFIGS) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        assignment = [[1, 2] if p % 2 == 0 else [2, 1] for p in range(6)]
        admin.create_topics([NewTopic(UNEVEN, 6, replica_assignment=assignment)])[UNEVEN].result(30)
        yield c
