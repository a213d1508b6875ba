"""A killed broker is fenced before its session expires; a paused one never is (three node processes).

The active controller watches every unfenced broker's port (zurau.metadata.broker_liveness_watch):
a process killed on a host that stays up closes its connections and its port refuses new ones,
and the controller fences it at once instead of after ``broker.session.timeout.ms``. The session
here is 30 s, far longer than anything the test waits for, so every fence it sees is the watch's,
and every broker it sees unfenced after a pause kept its session:

* kill -9 of a partition leader that is not the active controller: it drops out of Metadata,
  another replica leads, and acks=all records (``min.insync.replicas=2``) are acknowledged again,
  all well within the session; restarted at once, the new incarnation is not refused for the old
  one's session (which the fence ended) and the node serves and rejoins the ISR;
* kill -9 of the active controller (also a broker): after the quorum elects a new controller, the
  new one fences the dead node at once too (it was unfenced before the new controller took over);
* SIGSTOP of a broker for several seconds: nothing refuses a connection, so nothing is fenced;
* every acknowledged record is read back at the end.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SESSION_S = 30.0
OVERRIDES = {
    "broker.session.timeout.ms": str(int(SESSION_S * 1000)),
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "30000",
    "replica.fetch.wait.max.ms": "200",
    "offsets.topic.num.partitions": "1",
}
TOPIC = "fenced-fast"
WITHIN_S = SESSION_S / 2  # "before the session expires", with room for a slow machine


def _admin(cluster: ClusterProcesses) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _live_brokers_and_leader(cluster: ClusterProcesses) -> tuple[set[int], int, list[int]]:
    md = _admin(cluster).list_topics(TOPIC, timeout=5)
    part = md.topics[TOPIC].partitions[0]
    return set(md.brokers), part.leader, list(part.isrs)


def _wait(what: str, check, timeout: float) -> float:  # type: ignore[no-untyped-def]
    """Seconds until ``check()`` is true (fails the test after ``timeout``)."""
    start = time.monotonic()
    last: object = None
    while time.monotonic() - start < timeout:
        try:
            if check():
                return time.monotonic() - start
        except Exception as e:  # a node that just died, a metadata request timing out
            last = e
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {timeout:.0f} s (last error: {last})")


def _produce(cluster: ClusterProcesses, values: list[bytes], timeout: float) -> None:
    """Produce ``values`` with acks=all; every one must be acknowledged within ``timeout``."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": int(timeout * 1000)})
    errors: list[object] = []
    for v in values:
        p.produce(TOPIC, v, partition=0, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(timeout + 5) == 0
    assert errors == []


def _controller(cluster: ClusterProcesses) -> int:
    admin = _admin(cluster)  # (kept alive until its future is done)
    md = admin.describe_cluster(request_timeout=5).result()
    return int(md.controller.id)


def test_killed_brokers_are_fenced_before_their_session_and_paused_ones_are_not(tmp_path: Path) -> None:
    with ClusterProcesses(tmp_path, 3, **OVERRIDES) as cluster:
        admin = _admin(cluster)
        futures = admin.create_topics(
            [NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2", "cleanup.policy": "delete"})]
        )
        futures[TOPIC].result(30)
        _wait("full ISR", lambda: len(_live_brokers_and_leader(cluster)[2]) == 3, 30)
        acked = [f"before-{i}".encode() for i in range(20)]
        _produce(cluster, acked, 30)

        # 1. A broker that is not the active controller (the partition's leader when it can be).
        controller = _controller(cluster)
        _, leader, _ = _live_brokers_and_leader(cluster)
        # (When the controller leads the partition, a follower goes: it must leave the ISR.)
        victim = leader if leader != controller else next(b for b in cluster.broker_ids if b != controller)
        cluster.kill(victim)
        _wait(
            f"node {victim} fenced (gone from Metadata, out of the ISR)",
            lambda: (lambda live, ldr, isr: victim not in live and ldr not in (victim, -1) and victim not in isr)(
                *_live_brokers_and_leader(cluster)
            ),
            WITHIN_S,
        )
        more = [f"after-kill-{i}".encode() for i in range(20)]
        _produce(cluster, more, WITHIN_S)  # ISR of two >= min.insync.replicas
        acked += more

        # Restarted at once: its old session ended with the fence, so it registers and serves.
        cluster.nodes[victim].launch()
        cluster.nodes[victim].wait_ready(WITHIN_S)
        _wait(f"node {victim} back in the ISR", lambda: victim in _live_brokers_and_leader(cluster)[2], 60)

        # 2. The active controller itself.
        controller = _controller(cluster)
        cluster.kill(controller)
        _wait(
            f"the old controller {controller} fenced by the new one",
            lambda: controller not in _live_brokers_and_leader(cluster)[0]
            and _controller(cluster) not in (controller, -1),
            WITHIN_S,
        )
        more = [f"after-controller-kill-{i}".encode() for i in range(20)]
        _produce(cluster, more, WITHIN_S)
        acked += more
        cluster.nodes[controller].launch()
        cluster.nodes[controller].wait_ready(WITHIN_S)
        _wait("full ISR again", lambda: len(_live_brokers_and_leader(cluster)[2]) == 3, 60)

        # 3. A paused broker keeps its session: nothing refuses a connection.
        paused = next(b for b in cluster.broker_ids if b != _controller(cluster))
        cluster.pause(paused)
        try:
            time.sleep(5)
            live, _, _ = _live_brokers_and_leader(cluster)
            assert paused in live, f"node {paused} was fenced while paused (live: {sorted(live)})"
        finally:
            cluster.resume(paused)

        # Every acknowledged record is there, in order.
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ff-check",
                      "enable.auto.commit": False})
        try:
            c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
            seen: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(seen) < len(acked) and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    seen.append(m.value())
            assert seen == acked
        finally:
            c.close()
