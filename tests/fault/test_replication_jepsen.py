"""A Jepsen-style run of replication on three real combined nodes (zurau.testing.ClusterProcesses).

Topic ``jepsen``: 3 partitions, replication factor 3, ``min.insync.replicas=2``; every node's
inter-broker and controller listeners are behind fault proxies (one per directed link), so the
nemesis can cut a node off the cluster while clients still reach it.

* **Workload** (``JEPSEN_SECONDS``, default 60 s): a confluent-kafka idempotent producer with
  ``acks=all`` sends unique values round-robin to the partitions at a bounded rate; each produce and
  its delivery report (offset or error) go into a :class:`zurau.testing.jepsen.History`. Two tail
  consumers (read_uncommitted and read_committed) read every partition from the beginning and
  record what they see; the read_uncommitted one also commits its position for a group
  (non-decreasing offsets) and fetches the committed offsets back.
* **Nemesis** (``test_acks_all_replication_under_kill_pause_and_partition``): one fault at a time
  on the current leader of a partition (round-robin): ``kill -9`` then restart, SIGSTOP then
  SIGCONT (shorter and longer than the broker session timeout), a network partition isolating it
  (every link to and from it blackholed) then heal, or every connection of it reset for a moment.
  Between faults it waits (bounded) for every ISR to be full again.
* **Lone-leader nemesis** (``test_acks_all_lone_leader_after_restarts``, issue 27; 25-40 s of
  workload): every node restarted once (SIGTERM or ``kill -9``), then a partition's two followers
  cut off its leader's replication so that its ISR shrinks to the leader alone, acks=all
  produce to that lone leader, ``kill -9`` of it and an unclean election of a follower (as an
  operator does for a broker that is not coming back), then the old leader restarted.
  With ``min.insync.replicas=2`` honoured the lone leader acknowledges nothing and nothing
  acknowledged is lost; a broker that acknowledges with ISR = {leader} (issue 27: logs opened at
  start-up with the broker's defaults) loses those records, and the checker reports them lost. See
  :class:`LoneLeaderNemesis`.
* **Check**: heal everything, wait for full ISRs, produce a last batch (which must all be
  acknowledged: acks=all works again), read every partition from the beginning with both isolation
  levels, stop the cluster, read each replica's log files, and run the checker: acknowledged
  records at their offsets exactly once, dense offsets never reused, nothing read during the run
  gone or changed at the end, read_committed consistent, replicas identical below the high
  watermark, committed group offsets never going back.

``JEPSEN_SEED`` picks the nemesis schedule; the run prints the history's statistics and the faults.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.testing.cluster_process import REPLICATION, ClusterProcesses
from zurau.testing.jepsen import READ_COMMITTED, READ_UNCOMMITTED, History, Isolation

RUN_SECONDS = float(os.environ.get("JEPSEN_SECONDS", "60"))
SEED = int(os.environ.get("JEPSEN_SEED", "7"))
RATE = 250  # records per second, all partitions together (two cores are shared)
TOPIC = "jepsen"
PARTITIONS = 3
GROUP = "jepsen-tail"
FINAL_BATCH = 30  # per partition, after the heal
LONE_SECONDS = 3.0  # of workload while a partition's ISR is its leader alone (LoneLeaderNemesis)
LONE_MAX_SECONDS = 180.0  # bound on the lone-leader run's workload (its nemesis needs 25-40 s)

pytestmark = pytest.mark.timeout(int(RUN_SECONDS) + 300)

BROKER_CONFIGS: dict[str, Any] = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "100",
    "replica.socket.timeout.ms": "5000",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
}
# librdkafka logs through Python logging (captured by pytest; faults make it chatty).
CLIENT_QUIET: dict[str, Any] = {"logger": logging.getLogger("rdkafka")}


def _record(msg: Any) -> tuple[int, int, bytes]:
    """(partition, offset, value) of a consumed confluent-kafka message."""
    p, o, v = msg.partition(), msg.offset(), msg.value()
    assert p is not None and o is not None
    return p, o, v or b""


def _partitions(admin: AdminClient) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, isr) as a live broker's metadata says; {} when none answers."""
    try:
        md = admin.list_topics(TOPIC, timeout=5)
    except KafkaException:
        return {}
    t = md.topics.get(TOPIC)
    if t is None or t.error is not None:
        return {}
    return {p: (pm.leader, list(pm.isrs)) for p, pm in t.partitions.items()}


def _wait_full_isr(admin: AdminClient, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        parts = _partitions(admin)
        if len(parts) == PARTITIONS and all(leader >= 0 and len(isr) == 3 for leader, isr in parts.values()):
            return True
        time.sleep(0.5)
    return False


class NemesisBase(threading.Thread):
    """A nemesis thread: its faults go into the history's notes and :attr:`log`; an exception
    ends it and is kept in :attr:`error` (the test reports it); :attr:`finished` is set once it
    has ended (its schedule done, stopped, or failed); :meth:`heal_all` undoes every fault."""

    def __init__(self, cluster: ClusterProcesses, admin: AdminClient, history: History, seed: int) -> None:
        super().__init__(name="nemesis", daemon=True)
        self.c = cluster
        self.admin = admin
        self.h = history
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.log: list[str] = []
        self.error: BaseException | None = None

    def note(self, text: str) -> None:
        self.h.note(text)
        self.log.append(f"{time.strftime('%H:%M:%S')} {text}")

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:  # reported by the test
            self.error = e
        finally:
            self.finished.set()

    def _run(self) -> None:
        raise NotImplementedError

    def heal_all(self) -> None:
        """Every link back to pass-through, every paused node resumed, every stopped one restarted."""
        assert self.c.network is not None
        self.c.network.heal()
        for node_id, node in self.c.nodes.items():
            node.resume()
            if not node.running:
                self.c.restart(node_id)

    def assert_reached(self) -> None:
        """After the safety check: assert that the run reached the state the nemesis is about
        (so that a clean history is not a vacuous one). Nothing by default."""


class Nemesis(NemesisBase):
    """One fault at a time on a partition leader; every fault is healed before the next one."""

    FAULTS = ("kill", "pause", "partition", "reset")

    def _run(self) -> None:
        net = self.c.network
        assert net is not None
        kinds = list(self.FAULTS)
        n = 0
        while not self.stop.wait(self.rng.uniform(1.5, 3.0)):
            partition = n % PARTITIONS
            leader = _partitions(self.admin).get(partition, (-1, []))[0]
            if leader < 0:
                continue
            if n % len(kinds) == 0:
                self.rng.shuffle(kinds)
            kind = kinds[n % len(kinds)]
            n += 1
            if kind == "kill":
                self.note(f"kill -9 node {leader} (leader of partition {partition})")
                self.c.kill(leader)
                self.stop.wait(self.rng.uniform(1.0, 4.0))
                self.c.restart(leader)
                self.note(f"restarted node {leader}")
            elif kind == "pause":
                seconds = self.rng.uniform(2.0, 8.0)
                self.note(f"SIGSTOP node {leader} (leader of partition {partition}) for {seconds:.1f} s")
                self.c.pause(leader)
                self.stop.wait(seconds)
                self.c.resume(leader)
                self.note(f"SIGCONT node {leader}")
            elif kind == "partition":
                # Mostly past broker.session.timeout.ms (4 s): the controller fences the node and
                # moves its leaderships while it still believes it leads.
                seconds = self.rng.uniform(3.0, 9.0)
                self.note(f"isolate node {leader} (leader of partition {partition}) for {seconds:.1f} s")
                net.isolate(leader, duration=seconds + 30)
                self.stop.wait(seconds)
                net.heal()
                self.note(f"healed node {leader}")
            else:
                seconds = self.rng.uniform(0.5, 2.0)
                self.note(f"reset every link of node {leader} for {seconds:.1f} s")
                net.reset_node(leader, duration=seconds)
                self.stop.wait(seconds)
                net.heal()
            if not _wait_full_isr(self.admin, 20):
                self.note("ISRs not full 20 s after the heal; next fault anyway")
            leaders = {p: leader for p, (leader, _isr) in sorted(_partitions(self.admin).items())}
            self.note(f"partition leaders now {leaders}")


class LoneLeaderNemesis(NemesisBase):
    """Issue 27's schedule: restarts, then a partition whose ISR is its leader alone, that leader
    killed and a follower elected in its place. One pass, then :attr:`finished` is set:

    1. **Restart every node once**, one at a time, SIGTERM (a controlled shutdown) and ``kill -9``
       alternating (the seed picks the order and the first kind), each followed by a wait for full
       ISRs. Every partition log on every node has since been opened at start-up, which is where
       issue 27's broker gave each log the broker's default configs (``min.insync.replicas=1``)
       instead of its topic's.
    2. **Isolate the followers**: pick a partition, its leader L and its two followers; hold the
       workload until nothing is in flight, then blackhole the replication links between L and
       the followers both ways. The controller links stay, so L shrinks the ISR of every
       partition it leads to {L}; wait until the metadata says so, then release the workload
       (after the probe below). The hold keeps the check to acknowledged records: a record
       appended while the ISR was still full is not acknowledged (NOT_ENOUGH_REPLICAS_AFTER_APPEND)
       but the shrink moves the high watermark over it (as Kafka's does), so readers may see it,
       and the unclean election below may legitimately put another record at its offset (the
       idempotent producer's retries usually put the same records back at the same offsets, so
       without the hold the run mostly passes too, but only by that coincidence).
    3. **Produce to the lone leader**: one acks=all probe to the partition without retries (a
       broker honouring ``min.insync.replicas=2`` answers NOT_ENOUGH_REPLICAS), then release the
       workload for :data:`LONE_SECONDS`.
    4. **Kill it and elect a follower**: ``kill -9`` L; once the controller has fenced it, L's
       partitions have no leader (unclean election is off, so they wait for their last ISR member,
       which still holds every acknowledged record: killing it alone loses nothing). Heal the
       network and ask for an unclean election of those partitions (ElectLeaders UNCLEAN, as an
       operator does for a broker that is not coming back). A follower now leads with what it had
       when it was cut off. Wait until both followers are its ISR.
    5. **Restart L**: it truncates what the new leader lacks and catches up; wait for full ISRs.

    With ``min.insync.replicas=2`` honoured nothing is acknowledged by L alone, and every record
    acknowledged before step 2 is on all three replicas, so the election loses no acknowledged
    record. A broker that acknowledges with ISR = {L} loses every record it acknowledged in step 3:
    the checker's ``lost`` (and the readers' ``unstable-read``).
    """

    def __init__(
        self, cluster: ClusterProcesses, admin: AdminClient, history: History, seed: int, workload: Workload
    ) -> None:
        super().__init__(cluster, admin, history, seed)
        self.workload = workload
        self.lone_leader = -1
        self.lone_partitions: list[int] = []
        self.probe_error: str | None = None  # the probe's delivery error ("" once acknowledged)
        self.probe_code: int | None = None
        self.elected: dict[int, str | None] = {}  # partition -> error of its unclean election

    def _wait(self, what: str, timeout: float, done: Callable[[], bool]) -> bool:
        """Poll ``done`` until true (True) or ``timeout`` seconds (False, noted); raises if the
        nemesis is stopped meanwhile."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() >= deadline:
                self.note(f"{what}: not reached in {timeout:.0f} s ({_partitions(self.admin)})")
                return False
            if self.stop.wait(0.3):
                raise RuntimeError(f"stopped while waiting for {what}")
        return True

    def _require(self, what: str, timeout: float, done: Callable[[], bool]) -> None:
        """:meth:`_wait`, and the nemesis fails (AssertionError) when ``done`` never held."""
        if not self._wait(what, timeout, done):
            raise AssertionError(f"{what}: not reached in {timeout:.0f} s: {_partitions(self.admin)}")

    def _sleep(self, seconds: float, what: str) -> None:
        if self.stop.wait(seconds):
            raise RuntimeError(f"stopped {what}")

    def _run(self) -> None:
        net = self.c.network
        assert net is not None
        self._sleep(self.rng.uniform(2.0, 4.0), "before the first fault")  # some data in every log
        # 1. Every node restarted once.
        order = list(self.c.broker_ids)
        self.rng.shuffle(order)
        graceful = self.rng.random() < 0.5
        for node_id in order:
            node = self.c.nodes[node_id]
            if graceful:
                self.note(f"SIGTERM node {node_id}")
                code = node.stop(30)
                self.note(f"node {node_id} exited with {code}")
            else:
                self.note(f"kill -9 node {node_id}")
                self.c.kill(node_id)
            graceful = not graceful
            self._sleep(1.0, "during the restarts")
            self.c.restart(node_id)
            self.note(f"restarted node {node_id}")
            self._require(
                f"full ISRs after restarting node {node_id}", 60, lambda: _wait_full_isr(self.admin, 0.5)
            )
        parts: dict[int, tuple[int, list[int]]] = {}

        def all_led() -> bool:
            nonlocal parts
            parts = _partitions(self.admin)
            return len(parts) == PARTITIONS and all(lead >= 0 for lead, _isr in parts.values())

        self._require("a leader for every partition", 30, all_led)
        self.note(f"every node restarted; partition (leader, ISR) {dict(sorted(parts.items()))}")

        # 2. The followers of one partition cut off its leader's replication.
        partition = self.rng.randrange(PARTITIONS)
        leader = parts[partition][0]
        followers = [n for n in self.c.broker_ids if n != leader]
        self.lone_leader = leader
        self.lone_partitions = sorted(p for p, (lead, _isr) in parts.items() if lead == leader)
        self.workload.hold()
        if not self.workload.idle.wait(30):
            self.note(f"workload still has {len(self.workload.producer)} produce(s) in flight after 30 s")
        self.note(
            f"isolate the replication of node {leader} (leader of {TOPIC} partitions {self.lone_partitions}) "
            f"from its followers {followers}"
        )
        net.partition([[leader], followers], duration=120, kinds=[REPLICATION])

        def lone() -> bool:
            now = _partitions(self.admin)
            return all(now.get(p, (-1, []))[1] == [leader] for p in self.lone_partitions)

        try:
            self._require(f"ISR [{leader}] for partitions {self.lone_partitions}", 30, lone)
            self.note(f"partitions {self.lone_partitions} have ISR [{leader}]")
            # 3. acks=all produce to the lone leader.
            self._probe(partition)
        finally:
            self.workload.release()
        self.note(f"workload produces for {LONE_SECONDS:.0f} s with ISR [{leader}]")
        self._sleep(LONE_SECONDS, "during the lone-leader produce")

        # 4. The lone leader killed; a follower elected uncleanly.
        self.note(f"kill -9 node {leader} (lone leader of partitions {self.lone_partitions})")
        self.c.kill(leader)

        leaderless: list[int] = []

        def fenced() -> bool:
            nonlocal leaderless
            now = _partitions(self.admin)
            leaderless = sorted(p for p, (lead, _isr) in now.items() if lead < 0)
            return all(p in now and now[p][0] != leader for p in self.lone_partitions)

        self._require(f"node {leader} fenced and partitions {self.lone_partitions} leaderless", 45, fenced)
        self.note(f"partitions {leaderless} have no leader; heal and elect uncleanly")
        net.heal()
        result = self.admin.elect_leaders(
            ElectionType.UNCLEAN, [TopicPartition(TOPIC, p) for p in leaderless]
        ).result(30)
        self.elected = {tp.partition: None if err is None else str(err) for tp, err in result.items()}
        self.note(f"unclean election: {self.elected}")

        def followers_in_sync() -> bool:
            now = _partitions(self.admin)
            return len(now) == PARTITIONS and all(
                lead in followers and sorted(isr) == sorted(followers) for lead, isr in now.values()
            )

        self._wait(f"partitions led by {followers} with ISR {followers}", 30, followers_in_sync)
        self.note(f"partition (leader, ISR) {dict(sorted(_partitions(self.admin).items()))}")

        # 5. The old leader back.
        self.c.restart(leader)
        self.note(f"restarted node {leader}")
        self._wait("full ISRs after restarting the old leader", 60, lambda: _wait_full_isr(self.admin, 0.5))
        self.note(f"partition (leader, ISR) {dict(sorted(_partitions(self.admin).items()))}")

    def _probe(self, partition: int) -> None:
        """One acks=all produce to the lone leader, no retries: the broker's own answer."""
        producer = Producer(
            {
                "bootstrap.servers": self.c.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": False,
                "retries": 0,
                "message.timeout.ms": 10000,
                "request.timeout.ms": 5000,
                **CLIENT_QUIET,
            }
        )
        value = b"probe-%d" % partition
        op = self.h.produce_invoked("probe", partition, value)

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                self.h.produce_acked(op, msg.offset(), msg.partition())
                self.probe_error = ""
            else:
                # NOT_ENOUGH_REPLICAS is refused before the append: definitely not in the log.
                self.probe_code = err.code()
                self.h.produce_failed(op, str(err), definite=err.code() == KafkaError.NOT_ENOUGH_REPLICAS)
                self.probe_error = str(err)

        producer.produce(TOPIC, value=value, partition=partition, on_delivery=on_delivery)
        left = producer.flush(15)
        self.note(
            f"acks=all probe to partition {partition}: "
            + ("no answer" if left else "acknowledged" if self.probe_error == "" else str(self.probe_error))
        )

    def assert_reached(self) -> None:
        """The lone leader answered the probe NOT_ENOUGH_REPLICAS, and a follower was elected."""
        assert self.probe_code == KafkaError.NOT_ENOUGH_REPLICAS, (
            f"the lone leader {self.lone_leader} answered an acks=all produce with ISR [{self.lone_leader}] "
            f"and min.insync.replicas=2 with {self.probe_error!r}, not NOT_ENOUGH_REPLICAS"
        )
        assert self.elected and all(err is None for err in self.elected.values()), (
            f"the unclean election of partitions {self.lone_partitions} failed: {self.elected}"
        )


class TailReader(threading.Thread):
    """Reads every partition from the beginning for the whole run and records each record; the
    read_uncommitted one also commits its (non-decreasing) positions for GROUP every second (one
    asynchronous OffsetCommit at a time, so a commit the coordinator never answers does not stop
    the reading; it is noted) and fetches the committed offsets back (OffsetFetch)."""

    COMMIT_UNANSWERED_S = 15.0

    def __init__(self, bootstrap: str, history: History, isolation: Isolation) -> None:
        super().__init__(name=f"tail-{isolation}", daemon=True)
        self.h = history
        self.isolation = isolation
        self.stop = threading.Event()
        self.commits = isolation == READ_UNCOMMITTED
        self.pending: tuple[int, float] | None = None  # (logical, monotonic) time of the commit in flight
        self.unanswered_commits = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP if self.commits else f"{GROUP}-rc",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": isolation,
                "fetch.wait.max.ms": 100,
                "on_commit": self._on_commit,
                **CLIENT_QUIET,
            }
        )
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as e:
            self.error = e
        finally:
            self.consumer.close()

    def _run(self) -> None:
        self.consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        position = [0] * PARTITIONS
        next_commit = time.monotonic() + 1.0
        while not self.stop.is_set():
            msg = self.consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                p, o, v = _record(msg)
                self.h.read(p, o, v, self.isolation, reader=self.name)
                position[p] = max(position[p], o + 1)
            if self.commits and time.monotonic() >= next_commit:
                next_commit = time.monotonic() + 1.0
                self._commit(position)
                self._fetch_committed()

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """Served by poll(): the answer to the commit in flight."""
        if self.pending is None:
            return  # given up on (noted), its answer arrives late: unknown which commit it was
        invoked_at, _ = self.pending
        self.pending = None
        if err is not None:
            return
        for tp in partitions:
            if tp.error is None and tp.offset >= 0:
                self.h.offset_committed(GROUP, tp.partition, tp.offset, invoked_at=invoked_at)

    def _commit(self, position: list[int]) -> None:
        if self.pending is not None:
            if time.monotonic() - self.pending[1] < self.COMMIT_UNANSWERED_S:
                return
            self.unanswered_commits += 1
            self.h.note(f"an OffsetCommit got no answer in {self.COMMIT_UNANSWERED_S:.0f} s")
            self.pending = None
        offsets = [TopicPartition(TOPIC, p, position[p]) for p in range(PARTITIONS) if position[p] > 0]
        if not offsets:
            return
        self.pending = (self.h.now(), time.monotonic())
        try:
            self.consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException:
            self.pending = None

    def _fetch_committed(self) -> None:
        t = self.h.now()
        try:
            fetched = self.consumer.committed(
                [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=5
            )
        except KafkaException:
            return
        for tp in fetched:
            if tp.error is None:
                self.h.offset_fetched(GROUP, tp.partition, tp.offset if tp.offset >= 0 else -1, invoked_at=t)


class Workload:
    """The idempotent acks=all producer; a fatal producer error replaces the producer (noted).

    A nemesis may :meth:`hold` it (no new sends; :attr:`idle` is set once nothing is in flight)
    and :meth:`release` it again."""

    def __init__(self, bootstrap: str, history: History) -> None:
        self.bootstrap = bootstrap
        self.h = history
        self.generation = 0
        self.fatal: list[str] = []
        self.producer = self._new_producer()
        self.sent = 0
        self.held = threading.Event()
        self.idle = threading.Event()

    def hold(self) -> None:
        """From another thread: :meth:`run` sends nothing until :meth:`release`; wait for
        :attr:`idle` to know that every produce sent so far has its delivery report."""
        self.idle.clear()
        self.held.set()

    def release(self) -> None:
        self.held.clear()
        self.idle.clear()

    def _new_producer(self) -> Producer:
        self.generation += 1
        name = f"producer-{self.generation}"

        def on_error(err: KafkaError) -> None:
            if err.fatal() and not (self.fatal and self.fatal[-1].startswith(f"{name}:")):
                self.fatal.append(f"{name}: {err}")
                self.h.note(f"{name} fatal error: {err}")

        self.name = name
        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 15000,
                "request.timeout.ms": 5000,
                "error_cb": on_error,
                **CLIENT_QUIET,
            }
        )

    def report(self, op: int) -> Callable[[KafkaError | None, Any], None]:
        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                self.h.produce_acked(op, msg.offset(), msg.partition())
            else:
                self.h.produce_failed(op, str(err))

        return on_delivery

    def send(self, partition: int, value: bytes) -> None:
        """Produce one record; a producer in a fatal state is drained (its queued records get
        their failure reports) and replaced."""
        if self.fatal and self.fatal[-1].startswith(f"{self.name}:"):
            self._replace()
        op = self.h.produce_invoked(self.name, partition, value)
        while True:
            try:
                self.producer.produce(TOPIC, value=value, partition=partition, on_delivery=self.report(op))
                break
            except BufferError:
                self.poll(0.1)
            except KafkaException as e:  # fatal: the record was never enqueued
                self.h.produce_failed(op, str(e), definite=True)
                self._fatal(e)
                self._replace()
                return
        self.poll(0)
        self.sent += 1

    def poll(self, timeout: float) -> None:
        """Serve delivery reports (a fatal producer error surfaces here too)."""
        try:
            self.producer.poll(timeout)
        except KafkaException as e:
            self._fatal(e)

    def _fatal(self, e: KafkaException) -> None:
        if not (self.fatal and self.fatal[-1].startswith(f"{self.name}:")):
            self.fatal.append(f"{self.name}: {e}")
            self.h.note(f"{self.name} fatal error: {e}")

    def _replace(self) -> None:
        old = self.producer
        with contextlib.suppress(KafkaException):
            old.flush(10)  # the queued records get their (failure) reports
        self.h.note(f"{self.name} replaced after a fatal error")
        self.producer = self._new_producer()

    def run(self, seconds: float, tag: str, until: threading.Event | None = None) -> None:
        """Send ``RATE`` records a second round-robin for ``seconds`` (or until ``until`` is set).
        While held, only delivery reports are served; the rate does not make up for that time."""
        start = time.monotonic()
        held_for = 0.0
        i = 0
        while (elapsed := time.monotonic() - start) < seconds and not (until is not None and until.is_set()):
            if self.held.is_set():
                began = time.monotonic()
                self.poll(0.05)
                if len(self.producer) == 0:
                    self.idle.set()
                held_for += time.monotonic() - began
                continue
            self.send(i % PARTITIONS, b"%s-%08d" % (tag.encode(), i))
            i += 1
            ahead = i / RATE - (elapsed - held_for)
            if ahead > 0:
                self.poll(ahead)

    def flush(self, timeout: float) -> int:
        """Wait for every delivery report; returns how many are still missing."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.producer.flush(max(0.0, deadline - time.monotonic()))
            except KafkaException as e:
                self._fatal(e)
                if time.monotonic() >= deadline:
                    return len(self.producer)
                time.sleep(0.05)


def _final_read(bootstrap: str, history: History, isolation: Isolation, timeout: float = 60) -> None:
    """Read every partition from the beginning up to its end offset (high watermark, or last
    stable offset for read_committed) and record it as the final log."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"jepsen-final-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            **CLIENT_QUIET,
        }
    )
    try:
        ends = {}
        for p in range(PARTITIONS):
            _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)
            ends[p] = high
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        position = {p: 0 for p in range(PARTITIONS)}
        deadline = time.monotonic() + timeout
        while any(position[p] < ends[p] for p in range(PARTITIONS)):
            assert time.monotonic() < deadline, f"final {isolation} read stuck at {position} of {ends}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    p, o, _ = _record(msg)
                    position[p] = max(position[p], o)
                continue
            p, o, v = _record(msg)
            records[p].append((o, v))
            position[p] = max(position[p], o + 1)
        for p in range(PARTITIONS):
            history.final_read(p, isolation, records[p], end_offset=ends[p])
    finally:
        consumer.close()


def _replica_records(node_dir: Path, partition: int) -> list[tuple[int, bytes]]:
    """The data records of ``TOPIC``-``partition`` in one node's log files, in offset order."""
    out: list[tuple[int, bytes]] = []
    for seg in sorted((node_dir / f"{TOPIC}-{partition}").glob("*.log")):
        data = seg.read_bytes()
        for pos, h in iter_batches(data):
            if h.is_control:
                continue
            for r in decode_batch_records(memoryview(data)[pos : pos + h.size]):
                out.append((r.offset, bytes(r.value or b"")))
    return out


NemesisFactory = Callable[[ClusterProcesses, AdminClient, History, "Workload"], NemesisBase]


def _jepsen(
    tmp_path: Path,
    make_nemesis: NemesisFactory,
    seconds: float,
    label: str,
    format_args: Sequence[str] = (),
) -> None:
    """The whole run: cluster, topic, workload and tail readers for ``seconds`` (or until the
    nemesis has finished), the nemesis ``make_nemesis`` builds, then heal, liveness, final reads,
    replica logs and the checker (see the module docstring). ``format_args`` go to every node's
    ``zurau storage format``."""
    c = ClusterProcesses(
        tmp_path,
        controllers=3,
        proxy_inter_broker=True,
        proxy_controller=True,
        format_args=format_args,
        **BROKER_CONFIGS,
    )
    history = History(TOPIC)
    nemesis: NemesisBase | None = None
    readers: list[TailReader] = []
    try:
        c.start()
        bootstrap = c.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap, **CLIENT_QUIET})
        futures = admin.create_topics(
            [NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})], request_timeout=30
        )
        futures[TOPIC].result(30)
        assert _wait_full_isr(admin, 30), f"{TOPIC} never had three in-sync replicas: {_partitions(admin)}"

        workload = Workload(bootstrap, history)
        readers = [
            TailReader(bootstrap, history, READ_UNCOMMITTED),
            TailReader(bootstrap, history, READ_COMMITTED),
        ]
        for r in readers:
            r.start()
        nemesis = make_nemesis(c, admin, history, workload)
        nemesis.start()
        started = time.monotonic()
        workload.run(seconds, "run", until=nemesis.finished)
        workload_seconds = time.monotonic() - started
        during = history.check().stats  # progress so far (acked before the heal)
        nemesis.stop.set()
        nemesis.join(120)
        assert not nemesis.is_alive(), "the nemesis did not finish its last fault"
        nemesis.heal_all()
        left = workload.flush(30)

        full_isr = _wait_full_isr(admin, 90)
        final_partitions = _partitions(admin)
        # Liveness after the heal: a last batch must all be acknowledged.
        final_ops_before = len(history.ops)
        for i in range(FINAL_BATCH * PARTITIONS):
            workload.send(i % PARTITIONS, b"final-%08d" % i)
        left_final = workload.flush(60)
        final_ops = history.ops[final_ops_before:]
        time.sleep(2)  # the tail readers catch up
        for r in readers:
            r.stop.set()
        for r in readers:
            r.join(30)

        _final_read(bootstrap, history, READ_UNCOMMITTED)
        _final_read(bootstrap, history, READ_COMMITTED)
        c.stop()
        for node_id in c.broker_ids:
            for p in range(PARTITIONS):
                history.replica_log(p, node_id, _replica_records(tmp_path / f"node-{node_id}", p))

        result = history.check()
        print(
            f"\n{label}, seed {SEED}, {workload_seconds:.0f} s of workload; before the heal: {during}\n"
            f"after: {result.stats}"
        )
        print("\n".join(nemesis.log))
        if workload.fatal:
            print("fatal producer errors:", workload.fatal)
        print(
            f"OffsetCommits unanswered for {TailReader.COMMIT_UNANSWERED_S:.0f} s: {readers[0].unanswered_commits}"
        )
        assert nemesis.error is None, f"the nemesis failed: {nemesis.error!r}"
        for r in readers:
            assert r.error is None, f"{r.name} failed: {r.error!r}"
        # Safety first: the history must be consistent.
        result.assert_ok()
        nemesis.assert_reached()
        # Then liveness: acks=all worked during the run and works again after the heal.
        assert during["acked"] > 0, f"no acks=all produce was acknowledged during the run: {during}"
        assert full_isr, f"ISRs not full 90 s after the heal: {final_partitions}"
        assert left == 0 and left_final == 0, f"{left} / {left_final} produces never got a delivery report"
        unacked = [(op.partition, op.error) for op in final_ops if not op.acked]
        assert not unacked, (
            f"{len(unacked)} of {len(final_ops)} produces after the heal failed: {unacked[:5]}"
        )
        assert not workload.fatal, f"the idempotent producer hit fatal errors: {workload.fatal}"
    finally:
        if nemesis is not None:
            nemesis.stop.set()
        for r in readers:
            r.stop.set()
        c.close()


def test_acks_all_replication_under_kill_pause_and_partition(tmp_path: Path) -> None:
    """``RUN_SECONDS`` of workload under :class:`Nemesis` (kill, pause, partition, reset)."""
    _jepsen(
        tmp_path,
        lambda c, admin, h, _w: Nemesis(c, admin, h, SEED),
        RUN_SECONDS,
        "kill/pause/partition/reset",
    )


@pytest.mark.timeout(int(LONE_MAX_SECONDS) + 300)
def test_acks_all_lone_leader_after_restarts(tmp_path: Path) -> None:
    """Issue 27: :class:`LoneLeaderNemesis` (every node restarted, then a lone leader's acks=all
    writes, its ``kill -9`` and an unclean election of a follower); no acknowledged record may be
    lost, and the lone leader must have answered NOT_ENOUGH_REPLICAS.

    Eligible leader replicas are off (``eligible.leader.replicas.version=0`` at format): this
    schedule is about a follower cut off from the lone leader and then elected *uncleanly*, as
    in a cluster without KIP-966. With ELR on (a new cluster's default) the cut-off followers are
    in the ELR, the lone leader's high watermark stays put, and one of them is elected cleanly
    when it is killed: tests/fault/test_eligible_leader_replicas.py covers that path."""
    _jepsen(
        tmp_path,
        lambda c, admin, h, w: LoneLeaderNemesis(c, admin, h, SEED, w),
        LONE_MAX_SECONDS,
        "restarts, then a lone leader killed",
        format_args=["--feature", "eligible.leader.replicas.version=0"],
    )
