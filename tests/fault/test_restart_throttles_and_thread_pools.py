"""Replication throttles, dynamic thread pools and the balancer's removal mark across restarts
(SIGTERM and ``kill -9``) of node processes, in one cluster to save CI time.

The cluster: three combined nodes 1..3 and a broker-only node 4 that joins for the last part
(``ClusterProcesses(controllers=3, brokers=1, combined=True, deferred=(4,))``); every node serves
Prometheus metrics on an ephemeral port (read from its log after each start). The balancer is off
(static ``confluent.balancer.enable=false``) until the last part turns it on dynamically, so that
it does not move the partitions of the first parts. Throughout, an idempotent acks=all producer
writes to the partitions of the test's topics (``min.insync.replicas=2``); at the end every
acknowledged record is read back.

a. **A throttled reassignment across a kill -9.** ``moving`` (replicas [1, 2], some MB) is
   reassigned to [1, 2, 3] with ``zurau reassign-partitions --execute --throttle RATE``. Mid-copy
   node 3 (the new replica) is killed with ``kill -9`` and restarted. Afterwards node 3's
   DescribeConfigs still shows both rates (DYNAMIC_BROKER_CONFIG) and the topic its throttled
   replicas; the throttle still acts on the restarted node: its follower quota counts throttled
   bytes (``zurau_follower_replication_throttled_bytes``), and its replica grows no faster than
   about the rate (an upper bound only: a loaded machine is slower, never faster). ``--verify``
   then reports the move complete and removes the rates and the throttled replicas.
b. **Dynamic thread pools across SIGTERM and kill -9.** ``num.replica.fetchers=3`` as the cluster
   default and ``log.cleaner.threads=2`` on brokers 2 and 3 (each set through that broker). After
   node 3's kill -9 (part a) and node 2's SIGTERM, each restarted node describes both with their
   dynamic sources, logs that it runs 3 fetchers per leader and 2 cleaner threads, compacts the
   compacted topic ``table`` (its cleaner removes records after the restart), and every
   partition is back to a full ISR.
c. **The balancer's removal mark across an active-controller kill -9.** Node 4 joins and gets
   ``drain`` (6 partitions led by 4). The balancer is turned on (throttle 1 MB/s, at most 2
   concurrent moves) and ``zurau balancer remove-broker --broker-id 4`` marks 4. Once a move is in
   flight, with partitions still waiting for theirs, the active controller is killed with
   ``kill -9`` (and restarted); the next active controller carries the removal on: broker 4 ends
   with no replica and its ``zurau.balancer.removing`` mark is still true.
   (``test_elastic_cluster`` removes a broker with ``--wait`` and heals a dead one, with no
   controller failover during the moves.)
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from typer.testing import CliRunner, Result

from tests.support.waiting import wait_for
from zurau.cli.main import app
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

MOVING, TABLE, DRAIN = "moving", "table", "drain"
RATE = 1_500_000  # bytes/s: the reassignment's throttle
MOVING_BYTES = 12_000_000  # on "moving" before its reassignment (~8 s at RATE)
DRAIN_PARTITIONS = 6
DRAIN_BYTES = 1_500_000  # per partition of "drain"
BALANCER_THROTTLE = 1_000_000
UNTHROTTLED = str(2**63 - 1)
JOINING = 4
STATIC: dict[str, Any] = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.max.bytes": "262144",  # finer steps than 1 MiB per fetch
    "replica.lag.time.max.ms": "5000",
    "offsets.topic.num.partitions": "1",
    "auto.leader.rebalance.enable": "false",
    "confluent.balancer.enable": "false",  # on in part c only (dynamic)
    "log.cleaner.backoff.ms": "100",
    "metrics.http.listener": "http://127.0.0.1:0",
}
COMPACTED = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.1",
             "min.insync.replicas": "2"}  # fmt: skip
runner = CliRunner()


def cli(c: ClusterProcesses, *args: str) -> Result:
    res = runner.invoke(app, [*args, "--bootstrap-server", c.bootstrap_servers])
    assert res.exit_code == 0, f"zurau {' '.join(args)}: {res.stdout}{res.stderr}"
    return res


# ------------------------------------------------------------------------------------ helpers
class Node:
    """A node's log since its last launch and its metrics."""

    def __init__(self, c: ClusterProcesses, node_id: int) -> None:
        self.c, self.id = c, node_id
        self.log_from = 0

    def launch(self) -> None:
        path = self.c.nodes[self.id].log_path
        self.log_from = path.stat().st_size if path.exists() else 0
        self.c.nodes[self.id].launch()
        self.c.nodes[self.id].wait_ready(90)

    def log(self) -> str:
        with open(self.c.nodes[self.id].log_path, "rb") as f:
            f.seek(self.log_from)
            return f.read().decode("utf-8", "replace")

    def metric(self, name: str) -> float:
        """The sum of ``name``'s samples (its ``_total`` too) in this run's /metrics."""
        urls = re.findall(r"serves metrics on (http://\S+)", self.log())
        if not urls:
            return -1.0
        try:
            text = urllib.request.urlopen(urls[-1], timeout=5).read().decode()
        except OSError:
            return -1.0
        pattern = re.compile(rf"^{re.escape(name)}(?:_total)?(?:\{{[^}}]*\}})? (\S+)$", re.M)
        return sum(float(v) for v in pattern.findall(text))


def describe(admin: AdminClient, kind: ResourceType, name: str) -> dict[str, ConfigEntry]:
    """DescribeConfigs (a broker's is sent to that broker), retried while a node comes back."""
    res = ConfigResource(kind, name)

    def attempt() -> dict[str, ConfigEntry] | None:
        try:
            return admin.describe_configs([res], request_timeout=10)[res].result(15)
        except Exception:  # noqa: BLE001 - a restarted node's connection comes back later
            return None

    return wait_for(attempt, 90, f"DescribeConfigs of {kind.name} {name}")


def set_broker(admin: AdminClient, broker: int, **values: str) -> None:
    res = ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])  # fmt: skip
    admin.incremental_alter_configs([res])[res].result(30)


def metadata(admin: AdminClient) -> dict[tuple[str, int], tuple[list[int], list[int], int]]:
    """(topic, partition) -> (replicas, isr, leader) of the test's topics ({} when none answers)."""
    try:
        topics = admin.list_topics(timeout=5).topics
    except KafkaException:
        return {}
    return {(t, p): (list(m.replicas), list(m.isrs), m.leader)
            for t, tm in topics.items() if t in (MOVING, TABLE, DRAIN) and tm.error is None
            for p, m in tm.partitions.items()}  # fmt: skip


def full_isr(admin: AdminClient) -> bool:
    parts = metadata(admin)
    return bool(parts) and all(sorted(rs) == sorted(isr) for rs, isr, _l in parts.values())


def replica_bytes(c: ClusterProcesses, node: int, topic: str, partition: int = 0) -> int:
    d = c.root / f"node-{node}" / f"{topic}-{partition}"
    try:
        return sum(f.stat().st_size for f in d.glob("*.log")) if d.is_dir() else 0
    except FileNotFoundError:  # a segment deleted while summed
        return 0


class Writer(threading.Thread):
    """An idempotent acks=all producer writing to ``targets`` round-robin (about 20 records/s)
    until :attr:`stop`; :attr:`acked` holds every acknowledged (topic, partition, value)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="writer", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120000})  # fmt: skip
        self.targets: list[tuple[str, int]] = [(MOVING, 0)]
        self.acked: set[tuple[str, int, bytes]] = set()
        self.failed: list[str] = []
        self.stop = threading.Event()

    def _report(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.acked.add((msg.topic(), msg.partition(), msg.value()))
        else:
            self.failed.append(str(err))

    def run(self) -> None:
        i = 0
        while not self.stop.wait(0.05):
            topic, partition = self.targets[i % len(self.targets)]
            self.producer.produce(topic, b"w-%06d" % i, partition=partition, on_delivery=self._report)
            self.producer.poll(0)
            i += 1

    def finish(self) -> int:
        self.stop.set()
        self.join(10)
        return self.producer.flush(120)


def preload(bootstrap: str, topic: str, partitions: list[int], nbytes: int, value_size: int = 10_000) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "batch.size": 65536, "linger.ms": 5})
    value = os.urandom(value_size)
    for p in partitions:
        for _ in range(nbytes // value_size):
            while True:
                try:
                    producer.produce(topic, value, partition=p)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
    assert producer.flush(120) == 0, f"the preload of {topic} was not acknowledged"


def produce_table_rounds(bootstrap: str, rounds: int) -> None:
    """Rounds of 15 keys overwritten; a round a segment (``segment.ms=100``)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1})
    for r in range(rounds):
        for i in range(100):
            producer.produce(TABLE, b"v-%d-%d" % (r, i), key=b"k-%02d" % (i % 15), partition=0)
        assert producer.flush(30) == 0
        time.sleep(0.15)
    producer.produce(TABLE, b"roll", key=b"last", partition=0)
    assert producer.flush(30) == 0


def read_all(bootstrap: str, parts: list[tuple[str, int]]) -> set[tuple[str, int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "final-read", "enable.auto.commit": False,
                         "enable.partition.eof": True})  # fmt: skip
    try:
        ends = {tp: consumer.get_watermark_offsets(TopicPartition(*tp), timeout=15)[1] for tp in parts}
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in parts])
        position = dict.fromkeys(parts, 0)
        seen: set[tuple[str, int, bytes]] = set()
        deadline = time.monotonic() + 90
        while any(position[tp] < ends[tp] for tp in parts):
            assert time.monotonic() < deadline, f"the final read is stuck at {position} of {ends}"
            msg = consumer.poll(0.5)
            if msg is None or (msg.error() is not None and msg.error().code() != KafkaError._PARTITION_EOF):
                continue
            tp, offset = (msg.topic(), msg.partition()), msg.offset()
            if msg.error() is None:
                seen.add((*tp, msg.value() or b""))
                offset += 1
            position[tp] = max(position[tp], offset)
        return seen
    finally:
        consumer.close()


def check_thread_pools(admin: AdminClient, node: Node, when: str) -> None:
    """DescribeConfigs of the restarted node shows both pools' dynamic values, and its log says it
    runs them (fetchers resized from the static 1 as the image is applied; the cleaner started
    with 2 threads)."""
    configs = describe(admin, ResourceType.BROKER, str(node.id))
    fetchers, threads = configs["num.replica.fetchers"], configs["log.cleaner.threads"]
    assert (fetchers.value, fetchers.source) == ("3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value), when
    assert (threads.value, threads.source) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG.value), when
    wait_for(lambda: f"broker {node.id}: replica fetchers per leader 1 -> 3" in node.log(), 60,
             f"{when}: node {node.id} logs its 3 fetchers per leader")
    assert "log cleaner: 2 thread(s)" in node.log(), f"{when}: node {node.id} did not start 2 cleaner threads"


# ------------------------------------------------------------------------------------ the test
@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterProcesses]:
    with ClusterProcesses(tmp_path, controllers=3, brokers=1, combined=True, deferred=(JOINING,), **STATIC) as c:
        yield c


def test_throttles_thread_pools_and_removal_marks_survive_restarts(cluster: ClusterProcesses, tmp_path: Path) -> None:
    c = cluster
    nodes = {i: Node(c, i) for i in c.nodes}
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    timings: dict[str, float] = {}
    started = time.monotonic()
    futures = admin.create_topics([
        NewTopic(MOVING, 1, replica_assignment=[[1, 2]], config={"min.insync.replicas": "2"}),
        NewTopic(TABLE, 1, replica_assignment=[[1, 2, 3]], config=COMPACTED),
    ], request_timeout=30)  # fmt: skip
    for f in futures.values():
        f.result(30)
    # b: the thread pools, as the cluster default and per broker (each through its broker).
    cli(c, "configs", "alter", "--entity-type", "brokers", "--entity-default", "--add-config", "num.replica.fetchers=3")
    for b in (2, 3):
        set_broker(admin, b, log_cleaner_threads="2")
    wait_for(lambda: full_isr(admin), 60, "full ISRs")

    writer = Writer(c.bootstrap_servers)
    try:
        preload(c.bootstrap_servers, MOVING, [0], MOVING_BYTES)
        produce_table_rounds(c.bootstrap_servers, 3)
        writer.start()

        # a. A throttled reassignment; node 3, the new replica, killed mid-copy and restarted.
        total = replica_bytes(c, 1, MOVING)
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": MOVING, "partition": 0,
                                                                   "replicas": [1, 2, 3]}]}))  # fmt: skip
        out = cli(c, "reassign-partitions", "--execute", "--throttle", str(RATE), "--reassignment-json-file",
                  str(plan)).stdout  # fmt: skip
        assert f"The inter-broker throttle limit was set to {RATE} B/s" in out, out
        topic_throttle = describe(admin, ResourceType.TOPIC, MOVING)
        throttled = {n: topic_throttle[n].value for n in ("leader.replication.throttled.replicas",
                                                           "follower.replication.throttled.replicas")}  # fmt: skip
        assert throttled == {"leader.replication.throttled.replicas": "0:1,0:2",
                             "follower.replication.throttled.replicas": "0:3"}, throttled  # fmt: skip
        wait_for(lambda: replica_bytes(c, 3, MOVING) >= total // 5, 60, "node 3 copied a fifth of the partition")
        # (That the throttle acts is asserted after the restart: its metric and the copy rate.)
        c.kill(3)
        nodes[3].launch()

        samples: list[tuple[float, int]] = []

        def copied() -> bool:
            samples.append((time.monotonic(), replica_bytes(c, 3, MOVING)))
            return samples[-1][1] >= total

        configs = describe(admin, ResourceType.BROKER, "3")
        for n in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
            assert (configs[n].value, configs[n].source) == (str(RATE), ConfigSource.DYNAMIC_BROKER_CONFIG.value), n
        after = describe(admin, ResourceType.TOPIC, MOVING)
        assert {n: after[n].value for n in throttled} == throttled, "the throttled replicas after the restart"
        wait_for(lambda: nodes[3].metric("zurau_follower_replication_throttled_bytes") > 0, 60,
                 "the restarted node 3 counts throttled follower bytes")
        wait_for(copied, 120, "node 3 caught up with the partition")
        # The throttle still bounds the copy after the restart: from the first sample, no more
        # than twice the rate plus one quota window of burst (a slow machine only copies slower).
        (t0, s0), (t1, s1) = samples[0], samples[-1]
        assert s1 - s0 <= 2 * RATE * (t1 - t0) + RATE, f"{s1 - s0} bytes in {t1 - t0:.1f} s at a {RATE} B/s throttle"
        print(f"\nafter the restart: {s1 - s0} bytes in {t1 - t0:.1f} s (throttle {RATE} B/s)")

        def verified() -> bool:
            res = runner.invoke(app, ["reassign-partitions", "--verify", "--reassignment-json-file", str(plan),
                                      "--bootstrap-server", c.bootstrap_servers])  # fmt: skip
            return res.exit_code == 0 and "is completed" in res.stdout

        wait_for(verified, 60, "--verify reports the reassignment complete")
        gone = describe(admin, ResourceType.TOPIC, MOVING)
        assert all(gone[n].value == "" for n in throttled), {n: gone[n].value for n in throttled}
        for b in (1, 2, 3):
            cfg = describe(admin, ResourceType.BROKER, str(b))
            assert cfg["leader.replication.throttled.rate"].value == UNTHROTTLED, b
            assert cfg["follower.replication.throttled.rate"].value == UNTHROTTLED, b
        timings["a"] = time.monotonic() - started

        # b. Thread pools on node 3 (after its kill -9) and node 2 (after SIGTERM).
        check_thread_pools(admin, nodes[3], "after kill -9")
        assert c.nodes[2].stop() == 0, "node 2 did not exit cleanly on SIGTERM"
        nodes[2].launch()
        check_thread_pools(admin, nodes[2], "after SIGTERM")
        wait_for(lambda: full_isr(admin), 90, "every partition back to a full ISR")
        produce_table_rounds(c.bootstrap_servers, 3)
        for b in (2, 3):
            wait_for(lambda b=b: nodes[b].metric("zurau_log_cleaner_removed_records") > 0, 90,
                     f"the restarted node {b} compacts {TABLE}")
        timings["b"] = time.monotonic() - started - timings["a"]

        # c. Node 4 joins with "drain"; removing it goes on across an active-controller kill -9.
        nodes[JOINING].launch()
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        assignment = [[JOINING, 1 + p % 3, 1 + (p + 1) % 3] for p in range(DRAIN_PARTITIONS)]
        admin.create_topics([NewTopic(DRAIN, DRAIN_PARTITIONS, replica_assignment=assignment,
                                      config={"min.insync.replicas": "2"})], request_timeout=30)[DRAIN].result(30)  # fmt: skip
        wait_for(lambda: len(metadata(admin)) == 2 + DRAIN_PARTITIONS and full_isr(admin), 60, f"{DRAIN} in sync")
        preload(c.bootstrap_servers, DRAIN, list(range(DRAIN_PARTITIONS)), DRAIN_BYTES)
        writer.targets = [(MOVING, 0), *((DRAIN, p) for p in range(DRAIN_PARTITIONS))]
        cli(c, "configs", "alter", "--entity-type", "brokers", "--entity-default", "--add-config",
            f"confluent.balancer.enable=true,confluent.balancer.throttle.bytes.per.second={BALANCER_THROTTLE},"
            "confluent.balancer.max.concurrent.moves=2")  # fmt: skip
        cli(c, "balancer", "remove-broker", "--broker-id", str(JOINING))

        def on_4() -> list[tuple[int, bool]]:
            """The partitions with a replica on node 4: (partition, moving)."""
            return [(p, len(rs) > 3) for (t, p), (rs, _i, _l) in metadata(admin).items() if JOINING in rs]

        wait_for(lambda: any(moving for _p, moving in on_4()), 60, "a move off node 4 in flight")
        # Usually some moves have not started yet, so the next controller must start them; on a
        # slow machine they may all be under way already, which still tests the durable mark.
        waiting = [p for p, moving in on_4() if not moving]
        print(f"partitions of node {JOINING} not yet moving when the controller is killed: {waiting}")
        controller = int(admin.describe_cluster(request_timeout=10).result(15).controller.id)
        assert controller in c.controller_ids
        c.kill(controller)

        def new_controller() -> bool:
            # A fresh client of the surviving nodes each time: a long-lived librdkafka client may
            # keep asking the killed node until its own metadata refresh (a CI run timed out so).
            fresh = AdminClient({"bootstrap.servers": c.bootstrap_servers})
            try:
                return int(fresh.describe_cluster(request_timeout=5).result(10).controller.id) not in (-1, controller)
            except KafkaException:
                return False

        wait_for(new_controller, 120, "a new active controller")
        nodes[controller].launch()
        wait_for(lambda: metadata(admin) and not on_4(), 180, f"node {JOINING} emptied")
        mark = describe(admin, ResourceType.BROKER, str(JOINING))["zurau.balancer.removing"]
        assert mark.value == "true", mark
        wait_for(lambda: full_isr(admin), 90, "full ISRs after the removal")
        timings["c"] = time.monotonic() - started - timings["a"] - timings["b"]
    finally:
        left = writer.finish()

    parts = sorted(metadata(admin))
    seen = read_all(c.bootstrap_servers, [tp for tp in parts if tp[0] != TABLE])
    lost = writer.acked - seen
    print(f"timings {({k: round(v, 1) for k, v in timings.items()})}; {len(writer.acked)} records acknowledged, "
          f"{len(writer.failed)} failed")
    assert left == 0, f"{left} records never got a delivery report"
    assert writer.acked, "no record was acknowledged"
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
