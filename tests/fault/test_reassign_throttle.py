"""A throttled reassignment on three node processes, and ``zurau cluster unregister``.

* A partition with some MB on broker 1 is reassigned onto brokers 1 and 2 with
  ``zurau reassign-partitions --execute --throttle RATE``, which sets everything: the rates as
  dynamic broker configs (``leader/follower.replication.throttled.rate``) on the brokers involved,
  and the throttled replicas as topic configs. The new replica's log grows at RATE (within 20 %, measured from its
  segment files' sizes over the middle of the catch-up), while acks=all produces keep being
  acknowledged (the new replica is not in the ISR, so nothing waits for it). ``--verify`` then
  reports the reassignment complete and removes the topic throttles and the broker rates.
* ``zurau cluster unregister``: an unknown id is BROKER_ID_NOT_REGISTERED; a killed broker's
  registration is removed and it leaves the cluster's metadata.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from typer.testing import CliRunner, Result

from zurau.cli.main import app
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

RATE = 2_000_000  # bytes/s
DATA = 16_000_000  # bytes on the partition before the move (~8 s at RATE)
TOPIC = "throttled-move"
OVERRIDES = {
    "replica.fetch.max.bytes": "262144",  # finer steps than 1 MiB per fetch
    "replica.fetch.wait.max.ms": "200",
    "offsets.topic.num.partitions": "1",
    "auto.leader.rebalance.enable": "false",
}
runner = CliRunner()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    with ClusterProcesses(tmp_path_factory.mktemp("throttle"), 3, **OVERRIDES) as c:
        yield c


def cli(c: ClusterProcesses, *args: str) -> Result:
    return runner.invoke(app, [*args, "--bootstrap-server", c.bootstrap_servers])


def replica_bytes(c: ClusterProcesses, node: int) -> int:
    d = c.root / f"node-{node}" / f"{TOPIC}-0"
    return sum(f.stat().st_size for f in d.glob("*.log")) if d.is_dir() else 0


def wait(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.1)


def test_a_throttled_reassignment_catches_up_at_the_throttle_rate(cluster: ClusterProcesses, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1]])])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "batch.size": 65536,
                         "linger.ms": 5})
    value = os.urandom(10_000)
    for i in range(DATA // len(value)):
        producer.produce(TOPIC, value, key=b"%d" % i, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    total = replica_bytes(cluster, 1)
    assert total >= DATA

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [1, 2]}]}))
    res = cli(cluster, "reassign-partitions", "--execute", "--throttle", str(RATE), "--reassignment-json-file", str(plan))
    assert res.exit_code == 0, res.stdout + res.stderr
    assert f"The inter-broker throttle limit was set to {RATE} B/s" in res.stdout
    assert "cannot set" not in res.stdout + res.stderr, res.stdout + res.stderr
    rates = admin.describe_configs([ConfigResource("BROKER", "1")])
    broker1 = next(iter(rates.values())).result(10)
    assert broker1["leader.replication.throttled.rate"].value == str(RATE)

    samples: list[tuple[float, int]] = []
    acked: list[object] = []
    start = time.monotonic()
    sent = 0
    while True:
        now, size = time.monotonic(), replica_bytes(cluster, 2)
        samples.append((now, size))
        if size >= total:
            break
        assert now - start < 60, f"the new replica has {size} of {total} bytes after 60 s"
        if sent < 10:  # acks=all keeps working while the new replica catches up
            producer.produce(TOPIC, b"during-%d" % sent, partition=0,
                             on_delivery=lambda err, _m: acked.append(err))
            sent += 1
            assert producer.flush(10) == 0
        time.sleep(0.2)
    assert len(acked) == sent and all(err is None for err in acked)

    def at(fraction: float) -> tuple[float, int]:
        return next((t, s) for t, s in samples if s >= fraction * total)

    (t1, s1), (t2, s2) = at(0.2), at(0.8)
    rate = (s2 - s1) / (t2 - t1)
    print(f"catch-up rate {rate:.0f} B/s over {t2 - t1:.1f} s; whole catch-up {samples[-1][0] - start:.1f} s, {len(samples)} samples")
    assert abs(rate - RATE) <= 0.2 * RATE, f"caught up at {rate:.0f} B/s, throttle {RATE} B/s"

    def done() -> bool:
        out = cli(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", str(plan)).stdout
        return "is completed" in out

    wait("the reassignment completes", done, 30)
    configs = admin.describe_configs([ConfigResource("TOPIC", TOPIC)])
    entries = next(iter(configs.values())).result(10)
    assert entries["leader.replication.throttled.replicas"].value == ""
    assert entries["follower.replication.throttled.replicas"].value == ""
    for node in (1, 2):
        rates = admin.describe_configs([ConfigResource("BROKER", str(node))])
        cfg = next(iter(rates.values())).result(10)
        assert cfg["follower.replication.throttled.rate"].value == str(2**63 - 1), f"broker {node}"


def test_cluster_unregister(cluster: ClusterProcesses) -> None:
    res = cli(cluster, "cluster", "unregister", "--id", "9")
    assert res.exit_code == 1 and "BROKER_ID_NOT_REGISTERED" in res.stderr
    cluster.kill(3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def brokers() -> set[int]:
        return set(admin.list_topics(timeout=5).brokers)

    wait("broker 3 fenced", lambda: 3 not in brokers(), 30)
    res = cli(cluster, "cluster", "unregister", "--id", "3")
    assert res.exit_code == 0 and res.stdout == "Broker 3 is no longer registered.\n", res.stdout + res.stderr
    res = cli(cluster, "cluster", "unregister", "--id", "3")
    assert res.exit_code == 1 and "BROKER_ID_NOT_REGISTERED" in res.stderr
