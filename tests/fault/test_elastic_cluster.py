"""What "done" means for the self-balancing (elastic) cluster, on four broker processes.

The cluster: three combined (controller + broker) nodes 1..3 and one broker-only node 4 that
joins later (``ClusterProcesses(controllers=3, brokers=1, combined=True, deferred=(4,))``).
Topic ``elastic``: 8 partitions, replication factor 3, ``min.insync.replicas=2``, 16 MB written
before node 4 joins. The balancer runs with non-default settings: a replication throttle of
2 MB/s and the ``ANY_UNEVEN_LOAD`` trigger (dynamic cluster defaults, set with ``zurau configs``),
at most 3 concurrent moves and a broker failure threshold of 5 s (static configs).

Throughout: an idempotent ``acks=all`` confluent-kafka producer sends ``RATE`` records a second
round-robin to the partitions, recording every produce and delivery report into a
:class:`~zurau.testing.jepsen.History`; a sampler thread reads the topic's metadata every half
second and the brokers' throttle rates every second.

1. **Node 4 joins empty**: within :data:`JOIN_BOUND_S` of serving clients it holds its share:
   24 replicas over 4 brokers is a mean of 6, and every broker (node 4 included) ends within the
   planner's replica-count band [floor(0.9 * 6), ceil(1.1 * 6)] = [5, 7]; 8 leaders over 4
   brokers is a mean of 2, band [1, 3]: every broker leads 1 to 3 partitions (node 4 at least
   one), every partition has 3 replicas (no move left in flight).
2. **Removing a broker**: ``zurau balancer remove-broker --broker-id R --wait`` on the active
   controller's node (a combined node: only its broker side is emptied, it stays the controller
   and drains itself) returns once R hosts no replica; the metadata agrees (no replica, no
   leadership on R). ``zurau balancer cancel`` ends the removal; the balancer gives R replicas
   again (it is an empty live broker).
3. **A broker dies**: a combined node that is not the active controller is killed with
   ``kill -9`` and left down. After the failure threshold (5 s past its fencing) its replicas are
   rebuilt elsewhere: every partition has 3 replicas, all on live brokers, a full ISR and a
   leader, within :data:`HEAL_BOUND_S`.

Then done means settled and quiet: the throttles the balancer set were seen (a broker's
``leader.replication.throttled.rate`` at 2 MB/s) and are all removed (topic throttled-replica
lists empty, ``zurau.balancer.throttled.topics`` empty, broker rates back to the default), the
rebalance mark is cleared, and for :data:`QUIET_S` (more than two load samples) no replica or
leadership moves and no rebalance starts, though the trigger is ``ANY_UNEVEN_LOAD``.

Last: a final read of every partition, each final replica's log files, and
:meth:`History.check`: no acknowledged record lost or duplicated, offsets dense, replicas
identical. The producer saw no delivery error and no fatal error. The sampler never saw a
partition's ISR below ``min.insync.replicas`` (a killed broker's partitions go down to 2 of 3,
still enough).
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.testing.cluster_process import ClusterProcesses
from zurau.testing.jepsen import READ_UNCOMMITTED, History

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]

TOPIC = "elastic"
PARTITIONS = 8
RF = 3
MIN_ISR = 2
JOINING = 4  # the broker-only node, launched in phase 1
PRELOAD_BYTES = 16_000_000
PRELOAD_VALUE = 8_000  # bytes per preloaded record
RATE = 100  # records per second during the phases
THROTTLE = 2_000_000  # confluent.balancer.throttle.bytes.per.second
JOIN_BOUND_S = 60.0
REMOVE_BOUND_S = 60.0
HEAL_BOUND_S = 60.0
UNTHROTTLED = str(2**63 - 1)
QUIET_S = 25.0  # more than two load samples (10 s apart): bytes in and out are measured
REBALANCE_REQUESTED = "zurau.balancer.rebalance.requested"

STATIC: dict[str, Any] = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.max.bytes": "262144",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "3",
    "confluent.balancer.heal.broker.failure.threshold.ms": "5000",
    "confluent.balancer.max.concurrent.moves": "3",
}
DYNAMIC = f"confluent.balancer.throttle.bytes.per.second={THROTTLE},confluent.balancer.heal.uneven.load.trigger=ANY_UNEVEN_LOAD"
QUIET: dict[str, Any] = {"logger": logging.getLogger("rdkafka")}

Partitions = dict[int, tuple[list[int], list[int], int]]  # partition -> (replicas, isr, leader)


def partitions(admin: AdminClient) -> Partitions:
    """The topic's partitions as a broker's metadata says ({} when none answers)."""
    try:
        t = admin.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
    except KafkaException:
        return {}
    if t is None or t.error is not None:
        return {}
    return {p: (list(m.replicas), list(m.isrs), m.leader) for p, m in t.partitions.items()}


def replicas_on(parts: Partitions, broker: int) -> int:
    return sum(broker in rs for rs, _isr, _leader in parts.values())


def leaders_on(parts: Partitions, broker: int) -> int:
    return sum(leader == broker for _rs, _isr, leader in parts.values())


def wait(what: str, check: Callable[[], bool], timeout: float, detail: Callable[[], object] = lambda: "") -> float:
    """Poll ``check`` until true; returns the seconds it took (AssertionError after ``timeout``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout:.0f} s; {detail()}"
        time.sleep(0.5)
    return time.monotonic() - start


def zurau(cluster: ClusterProcesses, *args: str, timeout: float = 120) -> str:
    """Run the ``zurau`` CLI as its own process against the running brokers; its stdout."""
    out = subprocess.run(
        [sys.executable, "-m", "zurau.cli.main", *args, "--bootstrap-server", cluster.bootstrap_servers],
        capture_output=True, text=True, timeout=timeout,
    )
    assert out.returncode == 0, f"zurau {' '.join(args)} failed: {out.stdout}{out.stderr}"
    return out.stdout


class Workload(threading.Thread):
    """The idempotent acks=all producer: :meth:`preload` writes fast, :meth:`run` at ``RATE``
    until :attr:`stop`. Every delivery error and fatal error is kept in :attr:`errors`."""

    def __init__(self, bootstrap: str, history: History) -> None:
        super().__init__(name="workload", daemon=True)
        self.h = history
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.sent = 0
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "message.timeout.ms": 60000, "request.timeout.ms": 10000, "error_cb": self._on_error, **QUIET,
        })

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.errors.append(f"fatal: {err}")

    def send(self, partition: int, value: bytes) -> None:
        op = self.h.produce_invoked("producer", partition, value)

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                self.h.produce_acked(op, msg.offset(), msg.partition())
            else:
                self.h.produce_failed(op, str(err))
                self.errors.append(f"partition {partition}: {err}")

        while True:
            try:
                self.producer.produce(TOPIC, value=value, partition=partition, on_delivery=on_delivery)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)
        self.sent += 1

    def preload(self, total: int) -> None:
        pad = os.urandom(PRELOAD_VALUE)
        for i in range(total // PRELOAD_VALUE):
            self.send(i % PARTITIONS, b"pre-%08d-" % i + pad)
        assert self.producer.flush(120) == 0, "the preload was not acknowledged in 120 s"

    def run(self) -> None:
        start, i = time.monotonic(), 0
        while not self.stop.is_set():
            self.send(i % PARTITIONS, b"run-%08d" % i)
            i += 1
            ahead = i / RATE - (time.monotonic() - start)
            if ahead > 0:
                self.producer.poll(ahead)

    def finish(self, timeout: float) -> int:
        self.stop.set()
        self.join(timeout)
        return self.producer.flush(timeout)


@dataclass
class IsrDrop:
    at: float
    partition: int
    replicas: list[int]
    isr: list[int]


class Sampler(threading.Thread):
    """Reads the topic's metadata every half second (ISR drops below ``MIN_ISR`` are kept) and
    each broker's leader throttle rate every second (brokers seen throttled at ``THROTTLE``)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="sampler", daemon=True)
        self.admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        self.stop = threading.Event()
        self.samples = 0
        self.drops: list[IsrDrop] = []
        self.throttled: set[int] = set()
        self.most_replicas = 0  # the largest replica list seen (moves in flight add replicas)
        self.moving_at = 0.0  # when a partition was last seen with more than RF replicas
        self.rebalancing_at: list[float] = []  # when the rebalance mark was seen set
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            next_configs = 0.0
            while not self.stop.wait(0.5):
                parts = partitions(self.admin)
                if parts:
                    self.samples += 1
                for p, (rs, isr, _leader) in parts.items():
                    self.most_replicas = max(self.most_replicas, len(rs))
                    if len(rs) > RF:
                        self.moving_at = time.monotonic()
                    if len(isr) < MIN_ISR:
                        self.drops.append(IsrDrop(time.monotonic(), p, rs, isr))
                if time.monotonic() >= next_configs:
                    next_configs = time.monotonic() + 1.0
                    self._throttles()
        except BaseException as e:  # reported by the test
            self.error = e

    def _throttles(self) -> None:
        """One DescribeConfigs per broker (librdkafka takes one broker resource per call)."""
        try:
            for b in sorted(self.admin.list_topics(timeout=5).brokers):
                res = ConfigResource(ResourceType.BROKER, str(b))
                entries = self.admin.describe_configs([res], request_timeout=5)[res].result(5)
                rate = entries.get("leader.replication.throttled.rate")
                if rate is not None and rate.value == str(THROTTLE):
                    self.throttled.add(b)
                mark = entries.get(REBALANCE_REQUESTED)
                if mark is not None and mark.value == "true":
                    self.rebalancing_at.append(time.monotonic())
        except KafkaException:
            pass  # a broker going away mid-request: next second


def active_controller(admin: AdminClient) -> int:
    return int(admin.describe_cluster(request_timeout=10).result(10).controller.id)


def broker_config(admin: AdminClient, broker: int, name: str) -> str | None:
    res = ConfigResource(ResourceType.BROKER, str(broker))
    entry = admin.describe_configs([res])[res].result(10).get(name)
    return None if entry is None else entry.value


def final_read(bootstrap: str, history: History) -> None:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "elastic-final", "enable.auto.commit": False,
        "enable.partition.eof": True, **QUIET,
    })
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        position = dict.fromkeys(range(PARTITIONS), 0)
        deadline = time.monotonic() + 60
        while any(position[p] < ends[p] for p in range(PARTITIONS)):
            assert time.monotonic() < deadline, f"the final read is stuck at {position} of {ends}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None and err.code() != KafkaError._PARTITION_EOF:
                continue
            p, o = msg.partition(), msg.offset()
            assert p is not None and o is not None
            if err is None:
                records[p].append((o, msg.value() or b""))
                o += 1
            position[p] = max(position[p], o)
        for p in range(PARTITIONS):
            history.final_read(p, READ_UNCOMMITTED, records[p], end_offset=ends[p])
    finally:
        consumer.close()


def replica_records(node_dir: Path, partition: int) -> list[tuple[int, bytes]]:
    """The data records of one replica, read from its log files (the node stopped)."""
    out: list[tuple[int, bytes]] = []
    for seg in sorted((node_dir / f"{TOPIC}-{partition}").glob("*.log")):
        data = seg.read_bytes()
        for pos, h in iter_batches(data):
            if not h.is_control:
                for r in decode_batch_records(memoryview(data)[pos : pos + h.size]):
                    out.append((r.offset, bytes(r.value or b"")))
    return out


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterProcesses]:
    with ClusterProcesses(tmp_path, controllers=3, brokers=1, combined=True, deferred=(JOINING,), **STATIC) as c:
        yield c


def test_join_remove_and_heal_keep_every_acknowledged_record(cluster: ClusterProcesses, tmp_path: Path) -> None:
    c = cluster
    bootstrap = ",".join(c.nodes[i].bootstrap_servers for i in c.broker_ids)  # node 4 too, once up
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, **QUIET})
    zurau(c, "configs", "alter", "--entity-type", "brokers", "--entity-default", "--add-config", DYNAMIC)
    admin.create_topics(
        [NewTopic(TOPIC, PARTITIONS, RF, config={"min.insync.replicas": str(MIN_ISR)})], request_timeout=30
    )[TOPIC].result(30)
    wait("full ISRs", lambda: len(p := partitions(admin)) == PARTITIONS and all(
        len(isr) == RF for _rs, isr, _l in p.values()), 30)

    history = History(TOPIC)
    workload = Workload(c.bootstrap_servers, history)
    sampler = Sampler(c.bootstrap_servers)
    timings: dict[str, float] = {}
    try:
        workload.preload(PRELOAD_BYTES)
        sampler.start()
        workload.start()

        # 1. Node 4 joins empty and gets its share.
        c.nodes[JOINING].launch()
        c.nodes[JOINING].wait_ready(60)
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        mean = PARTITIONS * RF / 4
        low, high = math.floor(0.9 * mean), math.ceil(1.1 * mean)  # [5, 7]
        all_brokers = [*c.controller_ids, JOINING]

        def balanced(brokers: list[int], lo: int, hi: int, lead_lo: int, lead_hi: int) -> Callable[[], bool]:
            """Every broker within the bands, no move in flight and the rebalance over (its mark
            cleared; the bands are only reached once the rebalance has started)."""
            def check() -> bool:
                parts = partitions(admin)
                return (
                    len(parts) == PARTITIONS
                    and all(len(rs) == RF for rs, _i, _l in parts.values())
                    and all(lo <= replicas_on(parts, b) <= hi and lead_lo <= leaders_on(parts, b) <= lead_hi
                            for b in brokers)
                    and broker_config(admin, brokers[0], REBALANCE_REQUESTED) == "false"
                )
            return check

        def shares() -> dict[int, tuple[int, int]]:
            parts = partitions(admin)
            return {b: (replicas_on(parts, b), leaders_on(parts, b)) for b in all_brokers}

        timings["join"] = wait(f"node {JOINING} holds its share (replicas {low}..{high}, leaders 1..3)",
                               balanced(all_brokers, low, high, 1, 3), JOIN_BOUND_S, shares)

        # 2. remove-broker --wait on a combined node, then cancel.
        removed = active_controller(admin)
        assert removed in c.controller_ids
        started = time.monotonic()
        out = zurau(c, "balancer", "remove-broker", "--broker-id", str(removed), "--wait",
                    "--timeout", str(REMOVE_BOUND_S))
        timings["remove"] = time.monotonic() - started
        assert f"Broker {removed} hosts no replica" in out, out
        parts = partitions(admin)
        assert replicas_on(parts, removed) == 0 and leaders_on(parts, removed) == 0, parts
        status = json.loads(zurau(c, "balancer", "status", "--json"))
        assert {b["id"]: b["removing"] for b in status["brokers"]}[removed] is True, status
        assert "removal of broker(s)" in zurau(c, "balancer", "cancel")
        assert broker_config(admin, removed, "zurau.balancer.removing") == "false"
        # 24 replicas over 4 brokers again; the one just emptied needs at least the band's lower end
        timings["back"] = wait(f"node {removed} back in use", balanced(all_brokers, low, high, 0, 8), JOIN_BOUND_S,
                               shares)

        # 3. kill -9 a combined node that is not the active controller; left down.
        controller = active_controller(admin)
        victim = next(b for b in c.controller_ids if b != controller)
        c.kill(victim)
        killed_at = time.monotonic()
        live = [b for b in all_brokers if b != victim]

        def healed() -> bool:
            parts = partitions(admin)
            return len(parts) == PARTITIONS and all(
                len(rs) == RF and victim not in rs and sorted(isr) == sorted(rs) and leader in rs
                for rs, isr, leader in parts.values()
            )

        wait(f"node {victim}'s replicas rebuilt on {live}", healed, HEAL_BOUND_S, lambda: partitions(admin))
        timings["heal"] = time.monotonic() - killed_at

        # The throttles are gone once no move is left.
        def unthrottled() -> bool:
            topic = ConfigResource(ResourceType.TOPIC, TOPIC)
            entries = admin.describe_configs([topic])[topic].result(10)
            if any(entries[n].value for n in ("leader.replication.throttled.replicas",
                                              "follower.replication.throttled.replicas")):
                return False
            return broker_config(admin, live[0], "zurau.balancer.throttled.topics") == "" and all(
                broker_config(admin, b, n) == UNTHROTTLED for b in live
                for n in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"))

        wait("the balancer's throttles removed", unthrottled, 30)
        wait("the rebalance mark cleared", lambda: broker_config(admin, live[0], REBALANCE_REQUESTED) == "false", 30)

        # Done means quiet: no further move (the trigger is ANY_UNEVEN_LOAD, and the load monitor
        # measures bytes in and out meanwhile), the same replica sets and leaders, the mark never
        # set again.
        settled_at = time.monotonic()
        before = {p: (sorted(rs), leader) for p, (rs, _isr, leader) in partitions(admin).items()}
        time.sleep(QUIET_S)
        after = {p: (sorted(rs), leader) for p, (rs, _isr, leader) in partitions(admin).items()}
        assert after == before, f"replicas or leaders moved after the cluster settled: {before} -> {after}"
        assert sampler.moving_at < settled_at, "a reassignment was seen after the cluster settled"
        assert not [t for t in sampler.rebalancing_at if t > settled_at], "a rebalance started after it settled"
    finally:
        sampler.stop.set()
        left = workload.finish(60)
    sampler.join(10)

    final = partitions(admin)
    final_read(bootstrap, history)
    c.stop()
    for p, (rs, _isr, _leader) in final.items():
        for node in rs:
            history.replica_log(p, node, replica_records(tmp_path / f"node-{node}", p))
    result = history.check()
    print(f"\nelastic cluster: {result.stats}; timings {({k: round(v, 1) for k, v in timings.items()})}; "
          f"{sampler.samples} metadata samples, at most {sampler.most_replicas} replicas in a partition, "
          f"throttled brokers seen {sorted(sampler.throttled)}")
    result.assert_ok()
    assert left == 0, f"{left} produces never got a delivery report"
    assert not workload.errors, f"the producer saw errors: {workload.errors[:5]}"
    assert sampler.error is None, f"the sampler failed: {sampler.error!r}"
    assert sampler.samples > 0
    assert not sampler.drops, f"ISR below min.insync.replicas: {sampler.drops[:5]}"
    assert sampler.throttled, f"no broker was ever seen throttled at {THROTTLE} B/s"
    assert sampler.most_replicas > RF, "no reassignment was ever seen in flight"
