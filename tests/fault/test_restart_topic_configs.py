"""Topic configs survive restarts (issue 27, "Safe restarts"), through confluent-kafka.

A restarted cluster node used to open its partition logs while its metadata image was still
empty, so every topic it hosted fell back to the broker's defaults. Here three combined nodes
(:class:`~zurau.testing.cluster_process.ClusterProcesses`, one cluster for the whole module) run
three restart phases, each with its own topics (replication factor 3, one partition, one
non-default config each) created just before its restart:

* ``sigterm``: node 1 leads the topics and is restarted with SIGTERM (a controlled shutdown
  moves its leaderships away); a preferred-leader election (``AdminClient.elect_leaders``) gives
  them back to it.
* ``kill9``: node 2 leads the topics and is restarted with ``kill -9``; again a preferred
  election gives them back.
* ``promoted``: node 3 is a follower of the topics (node 1 leads) and is restarted with SIGTERM;
  then node 1 is stopped so that node 3, the first live replica in the ISR, takes over, and node 1
  is started again.

After each phase's restart the restarted node leads every topic of the phase, and each test checks
one config through real clients against that leader:

* ``min.insync.replicas=2``: with the other two nodes stopped (controlled shutdowns, so that the
  ISR shrinks to the restarted leader alone) an acks=all produce fails with NOT_ENOUGH_REPLICAS and
  nothing is appended, then or later.
* ``max.message.bytes=3000``: a 5,000-byte record is refused with MESSAGE_TOO_LARGE.
* ``cleanup.policy=compact``: a record without a key is refused with INVALID_RECORD.
* ``message.timestamp.type=LogAppendTime``: a record sent with an hour-old timestamp is read
  back stamped with the broker's time, of type LogAppendTime.
* ``compression.type=zstd``: a record the producer sends uncompressed is stored (in the leader's
  segment files, read with :mod:`zurau.protocol.records`) in a zstd batch.
* ``segment.bytes=1048576`` (the least allowed): the leader's partition directory rolls a segment
  per 600,000-byte record.
* ``retention.bytes`` / ``retention.ms``: the leader deletes old segments (the log start offset
  that ListOffsets answers moves past the records written after the restart).

``unclean.leader.election.enable`` is not here: only the controller acts on it
(``Controller._unclean_allowed``, from the topic configs of the controller's own image, rebuilt
from the metadata log), never a broker's partition log, so the restart bug could not lose it and a
test of it would pass before the fix too.

Tests of one phase share its restart (a module-scoped parametrized fixture, so pytest runs them
phase by phase); the min.insync.replicas test stops two nodes and starts them again itself.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from tests.support.waiting import wait_for
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.compression import ZSTD
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

BROKER_CONFIGS: dict[str, Any] = {
    # kill -9: the restarted node may register again once its old session has expired.
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "replica.fetch.wait.max.ms": "200",
    # Leadership moves only when a test moves it.
    "auto.leader.rebalance.enable": "false",
    "log.retention.check.interval.ms": "500",
    # The consumers' group lookups create __consumer_offsets: one partition is plenty.
    "offsets.topic.num.partitions": "1",
    # No metrics listener: the nodes would all try the default port.
    "metrics.http.listener": "",
}

MIB = 1024 * 1024  # the smallest segment.bytes a topic may have
#: One record per batch, each batch bigger than half of a 1 MiB segment: a segment each.
RECORD = b"x" * 600_000

#: One topic per config under test in each phase: ``<phase>-<case>``.
TOPIC_CONFIGS: dict[str, dict[str, str]] = {
    "min-isr": {"min.insync.replicas": "2"},
    "max-bytes": {"max.message.bytes": "3000"},
    "compact": {"cleanup.policy": "compact"},
    "append-time": {"message.timestamp.type": "LogAppendTime"},
    "zstd": {"compression.type": "zstd"},
    "segments": {"segment.bytes": str(MIB)},
    "retention-bytes": {"segment.bytes": str(MIB), "retention.bytes": str(MIB)},
    "retention-ms": {"segment.bytes": str(MIB), "retention.ms": "1000"},
}

#: phase -> (the node restarted, the replica assignment of the phase's topics). The restarted node
#: leads by preference in ``sigterm`` and ``kill9``; in ``promoted`` it follows node 1.
PHASES: dict[str, tuple[int, list[int]]] = {
    "sigterm": (1, [1, 2, 3]),
    "kill9": (2, [2, 3, 1]),
    "promoted": (3, [1, 3, 2]),
}


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _partition(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    """(leader, ISR) of ``topic``-0 as a broker's Metadata answers; (-1, []) when none answers."""
    try:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
    except KafkaException:
        return -1, []
    if t is None or t.error is not None or 0 not in t.partitions:
        return -1, []
    p = t.partitions[0]
    return p.leader, sorted(p.isrs)


def _wait_partitions(
    admin: AdminClient, topics: list[str], leader: int | None, what: str, timeout: float = 40
) -> None:
    """Until every topic's partition has all three replicas in its ISR and ``leader`` (None:
    any) as its leader."""

    def check() -> bool:
        for t in topics:
            current, isr = _partition(admin, t)
            if isr != [1, 2, 3] or current < 0 or (leader is not None and current != leader):
                return False
        return True

    try:
        wait_for(check, timeout, what)
    except AssertionError as e:
        seen = {t: _partition(admin, t) for t in topics}
        raise AssertionError(f"{e}; (leader, ISR) now {seen}") from None


def _elect_preferred(admin: AdminClient, topics: list[str]) -> None:
    """A preferred-leader election (ElectLeaders) of every topic's partition, repeated until no
    partition answers an error (ELECTION_NOT_NEEDED: already led by its preferred replica)."""
    last: list[Any] = []

    def elect() -> bool:
        partitions = [TopicPartition(t, 0) for t in topics]
        try:
            # No request_timeout: confluent-kafka 2.16's elect_leaders raises SystemError with one.
            result = admin.elect_leaders(ElectionType.PREFERRED, partitions).result(30)
        except KafkaException as e:
            last[:] = [e]
            return False
        last[:] = [
            (tp.topic, err)
            for tp, err in result.items()
            if err is not None and err.code() != KafkaError.ELECTION_NOT_NEEDED
        ]
        return not last

    try:
        wait_for(elect, 30, "a preferred-leader election of every topic")
    except AssertionError as e:
        raise AssertionError(f"{e}; last errors: {last}") from None


def _watermarks(admin: AdminClient, topic: str) -> tuple[int, int]:
    """(log start offset, high watermark) of ``topic``-0, from its leader (ListOffsets)."""
    tp = TopicPartition(topic, 0)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=10)[tp].result(15)
    latest = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=10)[tp].result(15)
    return int(earliest.offset), int(latest.offset)


def _offset(msg: Message) -> int:
    offset = msg.offset()
    assert offset is not None and offset >= 0, f"no offset in {msg}"
    return offset


def _produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    *,
    key: bytes | None = b"key",
    timestamp_ms: int = 0,
    **config: Any,
) -> list[tuple[KafkaError | None, Message]]:
    """Produce ``values`` to ``topic``-0 with acks=all, one batch each (each is flushed before
    the next is sent); the delivery report of each, in order."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "compression.type": "none",
            "message.timeout.ms": 20000,
            **config,
        }
    )
    reports: list[tuple[KafkaError | None, Message]] = []
    for value in values:
        producer.produce(
            topic,
            value,
            key,
            partition=0,
            timestamp=timestamp_ms,
            on_delivery=lambda err, msg: reports.append((err, msg)),
        )
        assert producer.flush(30) == 0, f"no delivery report for a record to {topic} in 30 s"
    return reports


def _produce_ok(bootstrap: str, topic: str, values: list[bytes], **kwargs: Any) -> list[int]:
    """Like :func:`_produce`, every record must be acknowledged: their offsets."""
    reports = _produce(bootstrap, topic, values, **kwargs)
    errors = [err for err, _msg in reports if err is not None]
    assert not errors, f"produce to {topic} failed: {errors}"
    return [_offset(msg) for _err, msg in reports]


def _produce_refused(bootstrap: str, topic: str, value: bytes, **kwargs: Any) -> KafkaError:
    """Produce one record that the leader must refuse (no retries): its error."""
    ((err, msg),) = _produce(bootstrap, topic, [value], retries=0, **kwargs)
    assert err is not None, f"{topic}: the record was acknowledged at offset {msg.offset()}"
    return err


def _read(bootstrap: str, topic: str, start: int, end: int, timeout: float = 30) -> list[Message]:
    """The records of ``topic``-0 in [start, end), read with a consumer of no group."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"restart-check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    out: list[Message] = []
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        deadline = time.monotonic() + timeout
        position = start
        while position < end:
            assert time.monotonic() < deadline, (
                f"{topic}: read up to {position} of [{start}, {end}) in {timeout} s"
            )
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            out.append(msg)
            position = _offset(msg) + 1
    finally:
        consumer.close()
    return out


def _segment_bases(partition_dir: Path) -> list[int]:
    return sorted(int(p.stem) for p in partition_dir.glob("*.log"))


def _start_stopped(cluster: ClusterProcesses) -> None:
    """Start every node that is not running (all launched before any is waited for: two stopped
    nodes of three need each other for a quorum)."""
    stopped = [n for n in cluster.nodes.values() if not n.running]
    for node in stopped:
        node.launch()
    for node in stopped:
        node.wait_ready(60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    c = ClusterProcesses(tmp_path_factory.mktemp("restart-configs"), controllers=3, **BROKER_CONFIGS).start()
    try:
        yield c
    finally:
        c.close()


@dataclass
class Restarted:
    """A phase after its restart: ``leader`` (restarted) leads every topic of the phase."""

    cluster: ClusterProcesses
    phase: str
    leader: int
    admin: AdminClient

    def topic(self, case: str) -> str:
        return f"{self.phase}-{case}"

    def leading(self, case: str) -> str:
        """``case``'s topic, once checked to be led by the restarted node."""
        topic = self.topic(case)
        current, isr = _partition(self.admin, topic)
        assert current == self.leader, f"{topic} is led by {current} (ISR {isr}), not by node {self.leader}"
        return topic

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def partition_dir(self, case: str) -> Path:
        """The restarted leader's directory of ``case``'s partition."""
        return self.cluster.root / f"node-{self.leader}" / f"{self.topic(case)}-0"


@pytest.fixture(scope="module", params=list(PHASES))
def restarted(request: pytest.FixtureRequest, cluster: ClusterProcesses) -> Iterator[Restarted]:
    phase: str = request.param
    target, replicas = PHASES[phase]
    c = cluster
    _start_stopped(c)  # after a failed phase
    admin = _admin(c.bootstrap_servers)
    state = Restarted(c, phase, target, admin)
    topics = [state.topic(case) for case in TOPIC_CONFIGS]
    futures = admin.create_topics(
        [
            NewTopic(state.topic(case), 1, replica_assignment=[replicas], config=cfg)
            for case, cfg in TOPIC_CONFIGS.items()
        ],
        request_timeout=30,
    )
    for future in futures.values():
        future.result(30)
    _wait_partitions(admin, topics, replicas[0], f"{phase}: topics created with full ISRs")
    for topic in topics:  # the logs hold data when the node goes down
        _produce_ok(c.bootstrap_servers, topic, [b"before-restart"] * 3)

    node = c.nodes[target]
    if phase == "kill9":
        c.restart(target)  # kill -9, then start over the same data
    else:
        assert node.stop() == 0, f"node {target} did not exit cleanly on SIGTERM"
        node.launch()
        node.wait_ready(60)
    _wait_partitions(admin, topics, None, f"{phase}: node {target} back in every ISR after its restart")
    # No write while the restarted node follows: the interim leader led an epoch in which
    # nothing was written, and must still catch up with the leader it hands back to (a follower
    # whose leader-epoch cache ends with that empty epoch diverged on every Fetch until
    # ``PartitionLog.truncate_to`` learnt to drop it at the log end, as Kafka's ``truncateTo``).
    if phase == "promoted":
        # The leader goes (a controlled shutdown): the restarted follower is the first live
        # replica of the ISR. The old leader comes back as a follower.
        first = c.nodes[replicas[0]]
        assert first.stop() == 0, f"node {replicas[0]} did not exit cleanly on SIGTERM"
        try:
            wait_for(
                lambda: all(_partition(admin, t)[0] == target for t in topics),
                30,
                f"node {target} leading every {phase} topic once node {replicas[0]} stopped",
            )
        finally:
            _start_stopped(c)
    else:
        _elect_preferred(admin, topics)
    _wait_partitions(admin, topics, target, f"{phase}: node {target} leading with full ISRs")
    for topic in topics:  # the restarted leader serves produce requests
        _produce_ok(c.bootstrap_servers, topic, [b"after-restart"])
    try:
        yield state
    finally:
        _start_stopped(c)


def test_max_message_bytes(restarted: Restarted) -> None:
    topic, admin = restarted.leading("max-bytes"), restarted.admin
    _produce_ok(restarted.bootstrap, topic, [b"y" * 1000])
    before = _watermarks(admin, topic)
    err = _produce_refused(restarted.bootstrap, topic, b"y" * 5000)
    assert err.code() == KafkaError.MSG_SIZE_TOO_LARGE, (
        f"a 5,000-byte record with max.message.bytes=3000: {err}"
    )
    assert _watermarks(admin, topic) == before


def test_compacted_topic_refuses_records_without_a_key(restarted: Restarted) -> None:
    topic, admin = restarted.leading("compact"), restarted.admin
    _produce_ok(restarted.bootstrap, topic, [b"keyed"])
    before = _watermarks(admin, topic)
    err = _produce_refused(restarted.bootstrap, topic, b"keyless", key=None)
    assert err.code() == KafkaError.INVALID_RECORD, f"a keyless record with cleanup.policy=compact: {err}"
    assert _watermarks(admin, topic) == before


def test_log_append_time_replaces_the_producers_timestamp(restarted: Restarted) -> None:
    topic = restarted.leading("append-time")
    sent_at = int(time.time() * 1000)
    (offset,) = _produce_ok(restarted.bootstrap, topic, [b"stamped"], timestamp_ms=sent_at - 3_600_000)
    (msg,) = _read(restarted.bootstrap, topic, offset, offset + 1)
    read_at = int(time.time() * 1000)
    kind, timestamp = msg.timestamp()
    assert kind == TIMESTAMP_LOG_APPEND_TIME, (
        f"timestamp {timestamp} ({sent_at - timestamp} ms before the send) of type "
        f"{'CreateTime' if kind == TIMESTAMP_CREATE_TIME else kind}, not LogAppendTime"
    )
    # The broker's clock is this machine's: the append happened between the send and the read.
    assert sent_at - 1000 <= timestamp <= read_at + 1000, (
        f"timestamp {timestamp} not in [{sent_at}, {read_at}]"
    )


def _batch_at(partition_dir: Path, offset: int) -> Any:
    """The header of the stored batch holding ``offset`` (None: not in the files yet)."""
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        for _pos, h in iter_batches(data):
            if h.base_offset <= offset <= h.last_offset:
                return h
    return None


def test_topic_compression_type_recompresses_uncompressed_batches(restarted: Restarted) -> None:
    topic = restarted.leading("zstd")
    value = b"zurau restart safety " * 100
    (offset,) = _produce_ok(restarted.bootstrap, topic, [value])  # compression.type=none
    header = wait_for(
        lambda: _batch_at(restarted.partition_dir("zstd"), offset),
        10,
        f"offset {offset} in node {restarted.leader}'s files",
    )
    assert header.compression == ZSTD, f"stored with codec {header.compression}, not zstd ({ZSTD}): {header}"
    (msg,) = _read(restarted.bootstrap, topic, offset, offset + 1)
    assert msg.value() == value


def test_segment_bytes_rolls_small_segments(restarted: Restarted) -> None:
    topic = restarted.leading("segments")
    offsets = _produce_ok(restarted.bootstrap, topic, [RECORD] * 4)
    bases = _segment_bases(restarted.partition_dir("segments"))
    rolled = [b for b in bases if b >= offsets[0]]
    # Each record fills more than half of a segment: one segment each (the first may still fit in
    # the segment that was active before).
    assert len(rolled) >= len(offsets) - 1, (
        f"node {restarted.leader} rolled segments at {rolled} for records at {offsets} (all segments: {bases})"
    )


def test_retention_bytes_deletes_old_segments(restarted: Restarted) -> None:
    topic, admin = restarted.leading("retention-bytes"), restarted.admin
    offsets = _produce_ok(restarted.bootstrap, topic, [RECORD] * 4)
    # A segment per record (the first may share the one active before) and retention.bytes of
    # 1 MiB: the segments up to the second record's go, the last two records' stay.
    wait_for(
        lambda: _watermarks(admin, topic)[0] >= offsets[2],
        15,
        f"log start offset of {topic} at {offsets[2]} (records at {offsets})",
    )


def test_retention_ms_deletes_old_segments(restarted: Restarted) -> None:
    topic, admin = restarted.leading("retention-ms"), restarted.admin
    offsets = _produce_ok(restarted.bootstrap, topic, [RECORD] * 3)
    # retention.ms=1000: a second later every segment but the active one (the last record's) goes.
    wait_for(
        lambda: _watermarks(admin, topic)[0] >= offsets[-1],
        15,
        f"log start offset of {topic} at {offsets[-1]} (records at {offsets})",
    )


def test_min_insync_replicas_with_only_the_restarted_leader_in_sync(restarted: Restarted) -> None:
    """Last of each phase: stops the two other nodes, then starts them again."""
    c, leader, topic = restarted.cluster, restarted.leader, restarted.leading("min-isr")
    _produce_ok(restarted.bootstrap, topic, [b"in-sync"])
    own = c.nodes[leader].bootstrap_servers
    alone = _admin(own)
    try:
        for node_id in c.broker_ids:
            if node_id != leader:  # a controlled shutdown: it leaves every ISR before it exits
                assert c.nodes[node_id].stop() == 0, f"node {node_id} did not exit cleanly on SIGTERM"
        wait_for(
            lambda: _partition(alone, topic) == (leader, [leader]), 30, f"ISR of {topic} down to [{leader}]"
        )
        before = _watermarks(alone, topic)
        err = _produce_refused(own, topic, b"refused")
        assert err.code() == KafkaError.NOT_ENOUGH_REPLICAS, (
            f"acks=all with ISR [{leader}], min.insync.replicas=2: {err}"
        )
        assert _watermarks(alone, topic) == before
    finally:
        _start_stopped(c)
    admin = restarted.admin
    _wait_partitions(admin, [topic], leader, f"{topic}: the stopped nodes back in its ISR")
    start, end = _watermarks(admin, topic)
    assert end == before[1], f"{topic} grew from {before} to {(start, end)} after a refused produce"
    values = [m.value() for m in _read(restarted.bootstrap, topic, start, end)]
    assert b"refused" not in values
