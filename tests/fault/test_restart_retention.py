"""Issue 27 (safe restarts): ten restarts of the nodes of a three-node KRaft cluster, each landing
while retention checks and log cleaner passes run, lose nothing a topic's configs say to keep.

The brokers' defaults are aggressive (every node: ``log.retention.ms`` of 4 s checked every
200 ms, ``log.roll.ms`` of 1 s, the cleaner woken every 50 ms), and every topic has replication
factor 3 and one partition. Records are 50 ms apart in CreateTime and go in batches of about 18,
so a segment holds about 36 (two batches: segments roll by record timestamps, as Kafka's do):

* ``keep-forever``: ``retention.ms=-1``. Its first records carry CreateTime timestamps an hour in
  the past and the later ones age past the broker default during the run, so a replica that
  falls back to the broker default deletes its closed segments.
* ``compacted``: ``cleanup.policy=compact`` (cleaned as soon as 1% of it is dirty): many updates
  and a few tombstones over a set of keys, the first ones also an hour old. Under the broker
  default (``delete``) its closed segments would be deleted by age.
* ``control``: no topic configs, the same kind of old records: retention must delete its old
  segments on every replica, which shows that retention did run during the test.

Ten rounds, round-robin over the nodes, alternating SIGTERM (controlled shutdown) and kill -9:
produce a round of records (acks=all) and, without waiting for anything to settle, signal the
node; produce more while it is down, restart it and wait until every partition has three in-sync
replicas again. Then, through the brokers: ``keep-forever`` still has every record from offset 0
(ListOffsets earliest is 0, a consumer from the beginning reads each record at its offset) and
``compacted`` has the latest value of every key (compaction may drop older values, never the
latest; a tombstoned key is absent or a tombstone). And after stopping the cluster, the same in
each node's own segment files and log start offset checkpoint, so a follower that deleted data
locally is caught too.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.waiting import wait_for
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.checkpoint import read_offsets_checkpoint
from zurau.testing.cluster_process import ClusterProcesses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RESTARTS = 10  # the number
KEEP = "keep-forever"
COMPACTED = "compacted"
CONTROL = "control"
TOPICS = {
    KEEP: {"retention.ms": "-1"},
    COMPACTED: {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
    CONTROL: {},
}
DEFAULT_RETENTION_MS = 4000
ROLL_MS = 1000  # segments roll by record timestamps (Kafka's rule); segment.bytes is 1 MiB at least
STEP_MS = 50  # between the timestamps of consecutive records of a topic
BROKER = {
    "log.retention.ms": str(DEFAULT_RETENTION_MS),
    "log.retention.check.interval.ms": "200",
    "log.roll.ms": str(ROLL_MS),
    "log.cleaner.backoff.ms": "50",
    "log.flush.offset.checkpoint.interval.ms": "1000",
    "num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
}
KEYS = 60
OLD_MS = 3_600_000  # the first records' age: far beyond the broker default retention
CLIENT_QUIET: dict[str, Any] = {"logger": logging.getLogger("rdkafka")}
PAD = b"." * 80

Record = tuple[int, bytes | None, bytes | None]  # offset, key, value


class Writer:
    """An idempotent acks=all producer that remembers what every topic must still hold."""

    def __init__(self, bootstrap: str, seed: int) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "batch.size": 2048,  # ~18 records, 0.9 s of timestamps: a segment every two batches
                "message.timeout.ms": 60000,
                **CLIENT_QUIET,
            }
        )
        self.rng = random.Random(seed)
        self.keep: list[bytes] = []  # keep-forever's values, by offset
        self.latest: dict[bytes, bytes | None] = {}  # compacted: key -> latest value (None: tombstone)
        self.compacted_sent = 0
        self.errors: list[str] = []
        self.pending = 0

    def _sent(self, err: KafkaError | None, _msg: object) -> None:
        self.pending -= 1
        if err is not None:
            self.errors.append(str(err))

    def _produce(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        while True:
            try:
                self.producer.produce(
                    topic, key=key, value=value, timestamp=timestamp, on_delivery=self._sent
                )
                self.pending += 1
                return
            except BufferError:
                self.producer.poll(0.05)

    def write(self, tag: str, keep: int, updates: int, control: int, *, old: bool = False) -> None:
        """Queue ``keep`` records for keep-forever, ``updates`` for compacted (about one in
        twenty a tombstone) and ``control`` for control. Their CreateTime timestamps end now
        (``old``: an hour ago; control's always), ``STEP_MS`` apart."""
        now = int(time.time() * 1000)
        end = now - OLD_MS if old else now

        def stamps(n: int, last: int) -> list[int]:
            return [last - (n - 1 - i) * STEP_MS for i in range(n)]

        for ts in stamps(keep, end):
            value = b"%s-%06d-" % (tag.encode(), len(self.keep)) + PAD
            self.keep.append(value)
            self._produce(KEEP, None, value, ts)
        for ts in stamps(updates, end):
            key = b"k%03d" % self.rng.randrange(KEYS)
            tombstone = not old and self.rng.random() < 0.05
            value = None if tombstone else b"%s-%06d-" % (tag.encode(), self.compacted_sent) + PAD
            self.compacted_sent += 1
            self.latest[key] = value
            self._produce(COMPACTED, key, value, ts)
        for i, ts in enumerate(stamps(control, now - OLD_MS)):
            self._produce(CONTROL, None, b"%s-%06d-" % (tag.encode(), i) + PAD, ts)
        self.producer.poll(0)

    def flush(self, timeout: float = 60) -> None:
        """Every queued record acknowledged (acks=all): what is checked later was committed."""
        left = self.producer.flush(timeout)
        assert left == 0 and self.pending == 0, f"{left} records never got a delivery report"
        assert not self.errors, f"produce failed: {self.errors[:3]}"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterProcesses]:
    c = ClusterProcesses(tmp_path, controllers=3, **BROKER)
    try:
        yield c.start()
    finally:
        c.stop()


def _isr(admin: AdminClient) -> dict[str, tuple[int, list[int]]]:
    """topic -> (leader, isr) of its partition 0, as a live broker's metadata says."""
    try:
        md = admin.list_topics(timeout=5)
    except KafkaException:
        return {}
    out: dict[str, tuple[int, list[int]]] = {}
    for name in TOPICS:
        t = md.topics.get(name)
        if t is not None and t.error is None and 0 in t.partitions:
            p = t.partitions[0]
            out[name] = (p.leader, sorted(p.isrs))
    return out


def _wait_full_isr(admin: AdminClient, what: str) -> None:
    def full() -> bool:
        parts = _isr(admin)
        return len(parts) == len(TOPICS) and all(
            leader >= 0 and len(isr) == 3 for leader, isr in parts.values()
        )

    try:
        wait_for(full, timeout=60, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}: {_isr(admin)}") from None


def _consumer(bootstrap: str) -> Consumer:
    # No subscription and no commits: the group id is never used (librdkafka wants one).
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "restart-retention-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            **CLIENT_QUIET,
        }
    )


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    """(earliest, latest) offsets of ``topic``-0 from its leader (ListOffsets)."""
    c = _consumer(bootstrap)
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low), int(high)
    finally:
        c.close()


def _read(bootstrap: str, topic: str) -> list[Record]:
    """Every record of ``topic``-0, from the beginning to the high watermark."""
    c = _consumer(bootstrap)
    try:
        high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[Record] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, f"reading {topic}: {err}"
                if msg.offset() >= high:
                    return out
                continue
            out.append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() + 1 >= high:
                return out
        raise AssertionError(f"{topic} not read up to its high watermark {high} within 60 s")
    finally:
        c.close()


def _replica(node_dir: Path, topic: str) -> list[Record]:
    """The data records of ``topic``-0 in one node's segment files, in offset order."""
    out: list[Record] = []
    for seg in sorted((node_dir / f"{topic}-0").glob("*.log")):
        data = seg.read_bytes()
        for pos, h in iter_batches(data):
            if h.is_control:
                continue
            for r in decode_batch_records(memoryview(data)[pos : pos + h.size]):
                out.append((r.offset, r.key, r.value))
    return out


def _keep_problems(records: list[Record], expected: list[bytes], where: str) -> list[str]:
    """What is wrong with keep-forever's ``records`` (every record produced, from offset 0)."""
    first = records[0][0] if records else len(expected)
    if first != 0:
        return [
            f"{KEEP} (retention.ms=-1) {where} starts at offset {first}: {first} of {len(expected)} records deleted"
        ]
    if [(o, v) for o, _k, v in records] != list(enumerate(expected)):
        return [f"{KEEP} {where} is not what was produced: {len(records)} records for {len(expected)}"]
    return []


def _compacted_problems(records: list[Record], latest: dict[bytes, bytes | None], where: str) -> list[str]:
    """What is wrong with compacted's ``records``: a key not at its latest value (absent or a
    tombstone if that was a tombstone), or a key never written."""
    final: dict[bytes | None, bytes | None] = {}
    for _o, key, value in records:
        final[key] = value
    lost = sorted(k for k, v in latest.items() if v is not None and final.get(k) != v)
    back = sorted(k for k, v in latest.items() if v is None and final.get(k) is not None)
    unknown = sorted(str(k) for k in final if k not in latest)
    problems = []
    if lost:
        first = records[0][0] if records else None
        problems.append(
            f"{COMPACTED} (cleanup.policy=compact) {where} lost the latest value of {len(lost)} of "
            f"{len(latest)} keys (e.g. {lost[:3]}; {len(records)} records left, the first at offset {first})"
        )
    if back:
        problems.append(f"{COMPACTED} {where}: deleted keys are back at an older value: {back[:5]}")
    if unknown:
        problems.append(f"{COMPACTED} {where} holds keys never written: {unknown[:5]}")
    return problems


def test_ten_restarts_during_retention_and_cleaning_lose_nothing(
    cluster: ClusterProcesses, tmp_path: Path
) -> None:
    c = cluster
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, **CLIENT_QUIET})
    futures = admin.create_topics(
        [NewTopic(name, 1, 3, config=configs) for name, configs in TOPICS.items()], request_timeout=30
    )
    for f in futures.values():
        f.result(30)
    _wait_full_isr(admin, "three in-sync replicas of every new topic")
    writer = Writer(c.bootstrap_servers, seed=27)
    writer.write("old", keep=400, updates=480, control=200, old=True)
    writer.flush()
    problems: list[str] = []  # every one found, so that a failure tells the whole story
    leftovers: list[str] = []  # cleaner files a signal left behind (information only)
    signals: list[str] = []
    for round_ in range(RESTARTS):
        node_id = c.broker_ids[round_ % len(c.broker_ids)]
        node = c.nodes[node_id]
        writer.write(f"r{round_}", keep=40, updates=120, control=20)
        writer.flush()
        # At once, while the leaders clean the segments just closed and retention checks run.
        if round_ % 2 == 0:
            node.stop(30)
            signals.append(f"SIGTERM to node {node_id}")
        else:
            c.kill(node_id)
            signals.append(f"kill -9 of node {node_id}")
        partitions = tmp_path / f"node-{node_id}"
        names = [
            p.name
            for t in TOPICS
            for p in (partitions / f"{t}-0").iterdir()
            if p.name.endswith((".cleaned", ".swap", ".deleted"))
        ]
        if names:
            leftovers.append(f"{signals[-1]}: {', '.join(sorted(names))}")
        writer.write(f"r{round_}-down", keep=20, updates=60, control=10)
        writer.flush()
        c.restart(node_id)
        after = f"after restart {round_ + 1} ({signals[-1]})"
        _wait_full_isr(admin, f"three in-sync replicas {after}")
        low, high = _watermarks(c.bootstrap_servers, KEEP)
        if low != 0:
            problems.append(f"{after}: ListOffsets earliest of {KEEP} is {low} of {high}, not 0")
        problems += _compacted_problems(_read(c.bootstrap_servers, COMPACTED), writer.latest, after)

    # At the end, through the brokers (the partitions' current leaders)...
    bootstrap = c.bootstrap_servers
    low, high = _watermarks(bootstrap, KEEP)
    if (low, high) != (0, len(writer.keep)):
        problems.append(f"at the end: ListOffsets of {KEEP} give {low}..{high}, not 0..{len(writer.keep)}")
    problems += _keep_problems(_read(bootstrap, KEEP), writer.keep, "read by a consumer at the end")
    compacted = _read(bootstrap, COMPACTED)
    problems += _compacted_problems(compacted, writer.latest, "read by a consumer at the end")
    control_low, control_high = _watermarks(bootstrap, CONTROL)

    # ...and on every replica, from its own files (nothing runs on them once the cluster stopped).
    c.stop()
    control_starts = {}
    for node_id in c.broker_ids:
        node_dir = tmp_path / f"node-{node_id}"
        where = f"on node {node_id}'s disk"
        problems += _keep_problems(_replica(node_dir, KEEP), writer.keep, where)
        problems += _compacted_problems(_replica(node_dir, COMPACTED), writer.latest, where)
        starts = read_offsets_checkpoint(node_dir / "log-start-offset-checkpoint")
        for topic in (KEEP, COMPACTED):
            if starts.get((topic, 0), 0) != 0:
                problems.append(
                    f"node {node_id} checkpointed log start offset {starts[(topic, 0)]} for {topic}-0"
                )
        control = _replica(node_dir, CONTROL)
        control_starts[node_id] = control[0][0] if control else None
    if problems:
        pytest.fail(
            f"{len(problems)} problems over {RESTARTS} restarts:\n" + "\n".join(problems), pytrace=False
        )

    # The positive controls: retention and the cleaner did run while the nodes restarted.
    assert control_low > 0, (
        f"retention never ran on {CONTROL} (earliest offset {control_low} of {control_high})"
    )
    assert all(s is not None and s > 0 for s in control_starts.values()), (
        f"retention did not delete {CONTROL}'s old segments on every replica: first offsets {control_starts}"
    )
    assert len(compacted) < writer.compacted_sent, "the cleaner never removed a record of the compacted topic"
    cleaned = sum(c.nodes[i].log_text().count(f"cleaned {COMPACTED}-0") for i in c.broker_ids)
    assert cleaned >= RESTARTS, f"only {cleaned} cleaner passes over {COMPACTED}-0: the test proves little"
    print(
        f"\n{'; '.join(signals)}; {len(leftovers)} of them left cleaner files behind {leftovers}; {cleaned} cleaner "
        f"passes over {COMPACTED}-0; {len(compacted)} of {writer.compacted_sent} compacted records left; "
        f"{CONTROL} starts at {control_low} of {control_high} (replicas: {control_starts})"
    )
