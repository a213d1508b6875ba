"""Tiered storage (issue 33) across leader failover, follower restarts and clean restarts, on three
combined node processes (:class:`~zurau.testing.cluster_process.ClusterProcesses`), in one cluster
start to save CI time.

Every node runs the remote tier on one shared directory (``rsm.config.dir``, as an NFS mount would
be) through :class:`tests.support.slow_remote_storage.SlowFileRemoteStorage`: the ``file`` plugin
with a pause before each segment's ``.log`` is written, so that an upload is visibly in flight (its
index files there, its ``.log`` not yet) when a test kills its broker. The node processes import it
from the repository root, which the test puts on their ``PYTHONPATH``.

Topic ``tiered``: one partition on nodes [1, 2, 3] (replication factor 3,
``min.insync.replicas=2``), ``remote.storage.enable=true``, segments rolled every
``segment.ms`` (a few records each) and deleted locally ``local.retention.ms`` after they are copied
(``retention.ms=-1``: the remote tier keeps everything), with non-default broker settings (task
interval, copier threads, metadata topic of 3 partitions and replication factor 3). Throughout, an
idempotent acks=all producer writes unique values at a steady rate, each send and acknowledgement
recorded in a :class:`~zurau.testing.jepsen.History`.

1. **Leader kill -9 mid-upload.** Once segments are tiered and an upload of the leader (node 1) is
   in flight, node 1 is killed. Node 2 takes over and copies on (the highest tiered offset passes
   what it was at the kill); node 1 restarts and rejoins the ISR.
2. **Follower kill -9, bootstrap from remote.** Node 1, now a follower, is killed; its log end
   (read from its files) falls below the leader's local log start as local retention deletes tiered
   segments. Restarted, node 1 logs that its log restarts from remote storage at an offset above its
   old log end (it never replicates from 0), its local segments start there, and it rejoins the ISR.
3. **SIGTERM mid-upload.** The leader (node 2) is stopped with SIGTERM while an upload is in flight
   (a clean exit, status 0) and restarted; node 1, the bootstrapped replica, leads now: its
   ListOffsets answers log start 0 (EARLIEST), a local log start at or above its restart offset
   (EARLIEST_LOCAL, -4) and a highest tiered offset (LATEST_TIERED, -5) no lower than that minus
   one; tiering goes on under it.
4. **Check.** The workload stops (every record acknowledged). A confluent-kafka consumer reads the
   partition from offset 0 through node 1 (remote reads for the tiered part) and the history checker
   finds every acknowledged record at its offset exactly once, byte-exact, offsets dense up to the
   high watermark. The shared directory holds no leftover of the interrupted uploads: every
   ``.log`` belongs to a segment whose state, folded from ``__remote_log_metadata`` (read with a
   consumer and :func:`~zurau.storage.remote.remote_log_metadata_records.decode`, invalid
   transitions dropped as the brokers' readers drop them), is COPY_SEGMENT_FINISHED, every finished
   segment has its ``.log``, no temporary or partial upload is left, and the finished segments cover
   [0, LATEST_TIERED] without a gap. Last, with the cluster stopped, every replica's local records
   are the final log's at the same offsets, without gaps up to the high watermark.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.slow_remote_storage import uploads_in_flight
from tests.support.waiting import wait_for
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.remote.remote_log_metadata_records import (
    REMOTE_LOG_METADATA_TOPIC,
    RemoteLogSegmentMetadataUpdate,
    decode,
)
from zurau.storage.remote.remote_log_segment import RemoteLogSegmentMetadata, RemoteLogSegmentState
from zurau.testing.cluster_process import ClusterProcesses
from zurau.testing.jepsen import READ_UNCOMMITTED, History
from zurau.types import kafka_uuid, parse_kafka_uuid

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REPO_ROOT = Path(__file__).resolve().parents[2]
TOPIC = "tiered"
METADATA_PARTITIONS = 3
RATE = 150  # records per second
EARLIEST, LATEST, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -4, -5
QUIET: dict[str, Any] = {"logger": logging.getLogger("rdkafka")}
_S = RemoteLogSegmentState


def broker_configs(remote_dir: Path) -> dict[str, str]:
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "tests.support.slow_remote_storage:SlowFileRemoteStorage",
        "rsm.config.dir": str(remote_dir),
        "rsm.config.copy.delay.ms": "300",
        "remote.log.manager.task.interval.ms": "150",
        "remote.log.manager.copier.thread.pool.size": "2",
        "remote.log.manager.expiration.thread.pool.size": "2",
        "rlmm.config.remote.log.metadata.topic.num.partitions": str(METADATA_PARTITIONS),
        "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
        "log.retention.check.interval.ms": "300",
        # kill -9: the restarted node may register again once its old session has expired.
        "broker.session.timeout.ms": "4000",
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "3000",
        "replica.fetch.wait.max.ms": "200",
        "replica.fetch.backoff.ms": "100",
        "auto.leader.rebalance.enable": "false",
        "offsets.topic.num.partitions": "1",
        "metrics.http.listener": "",
    }


TOPIC_CONFIGS = {
    "min.insync.replicas": "2",
    "remote.storage.enable": "true",
    "segment.bytes": str(1024 * 1024),
    "segment.ms": "400",
    "local.retention.ms": "1500",
    "retention.ms": "-1",
}


class Workload(threading.Thread):
    """The idempotent acks=all producer at ``RATE`` until :attr:`stop`; delivery errors and
    fatal errors in :attr:`errors`."""

    def __init__(self, bootstrap: str, history: History) -> None:
        super().__init__(name="workload", daemon=True)
        self.h = history
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.pad = os.urandom(300)
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "compression.type": "lz4",
                "message.timeout.ms": 60000,
                "request.timeout.ms": 10000,
                "error_cb": self._on_error,
                **QUIET,
            }
        )

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.errors.append(f"fatal: {err}")

    def _send(self, value: bytes) -> None:
        op = self.h.produce_invoked("producer", 0, value)

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                self.h.produce_acked(op, msg.offset(), 0)
            else:
                self.h.produce_failed(op, str(err))
                self.errors.append(str(err))

        while True:
            try:
                self.producer.produce(TOPIC, value=value, partition=0, on_delivery=on_delivery)
                return
            except BufferError:
                self.producer.poll(0.1)

    def run(self) -> None:
        start, i = time.monotonic(), 0
        while not self.stop.is_set():
            self._send(b"v-%08d-" % i + self.pad[: i % 300])
            i += 1
            ahead = i / RATE - (time.monotonic() - start)
            self.producer.poll(max(0.0, ahead))

    def finish(self, timeout: float) -> int:
        self.stop.set()
        self.join(timeout)
        return self.producer.flush(timeout)


class Probe:
    """Leadership and ListOffsets of the partition through the running brokers."""

    def __init__(self, cluster: ClusterProcesses) -> None:
        self.c = cluster
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **QUIET})
        self.consumer = Consumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "probe", **QUIET}
        )

    def _consumer(self) -> Consumer:
        return Consumer({"bootstrap.servers": self.c.bootstrap_servers, "group.id": "probe", **QUIET})

    def partition(self) -> tuple[int, list[int]]:
        """(leader, sorted ISR); (-1, []) when no broker answers."""
        try:
            t = self.admin.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
        except KafkaException:
            return -1, []
        if t is None or t.error is not None or 0 not in t.partitions:
            return -1, []
        p = t.partitions[0]
        return p.leader, sorted(p.isrs)

    def offset(self, spec: int) -> int | None:
        """ListOffsets ``spec`` (-1, -2, -4, -5) from the leader; None on an error."""
        try:
            self.last = int(self.consumer.offsets_for_times([TopicPartition(TOPIC, 0, spec)], 5)[0].offset)
        except KafkaException as e:
            # librdkafka may keep a partition it saw without a leader unknown: a fresh consumer.
            self.last = e
            self.consumer.close()
            self.consumer = self._consumer()
            return None
        return self.last

    def wait_offset_above(self, spec: int, floor: int, what: str, timeout: float = 40) -> int:
        try:
            return int(
                wait_for(lambda: (o := self.offset(spec)) is not None and o > floor and o, timeout, what)
            )
        except AssertionError as e:
            raise AssertionError(f"{e}; ListOffsets {spec} last answered {self.last!r}") from None

    def wait_full_isr(self, what: str, leader: int | None = None, timeout: float = 40) -> int:
        def check() -> int | None:
            current, isr = self.partition()
            ok = isr == [1, 2, 3] and current > 0 and (leader is None or current == leader)
            return current if ok else None

        try:
            return int(wait_for(check, timeout, what))
        except AssertionError as e:
            raise AssertionError(f"{e}; (leader, ISR) now {self.partition()}") from None

    def close(self) -> None:
        self.consumer.close()


def log_end_from_files(partition_dir: Path) -> int:
    """The log end offset of a stopped replica, from its segment files (a torn tail ignored)."""
    end = 0
    for seg in sorted(partition_dir.glob("*.log")):
        for _pos, h in iter_batches(seg.read_bytes()):
            end = max(end, h.last_offset + 1)
    return end


def replica_records(partition_dir: Path) -> list[tuple[int, bytes]]:
    """The data records of one replica's local log (its node stopped)."""
    out: list[tuple[int, bytes]] = []
    for seg in sorted(partition_dir.glob("*.log")):
        data = seg.read_bytes()
        for pos, h in iter_batches(data):
            if not h.is_control:
                out += [
                    (r.offset, bytes(r.value or b""))
                    for r in decode_batch_records(memoryview(data)[pos : pos + h.size])
                ]
    return out


def wait_upload_in_flight(remote: Path, before: set[Path], what: str) -> Path:
    """A segment upload in flight that was not in ``before`` (its index files written, its
    ``.log`` not yet)."""
    return Path(
        wait_for(lambda: next((p for p in uploads_in_flight(remote) if p not in before), None), 40, what)
    )


def upload_id(stem: Path) -> uuid.UUID:
    """The segment id in a remote file stem ``<start offset>-<segment id>``."""
    return parse_kafka_uuid(stem.name.split("-", 1)[1])


def final_read(bootstrap: str, history: History) -> int:
    """Read the whole partition from offset 0 into the history; the high watermark read up to."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"final-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            **QUIET,
        }
    )
    try:
        end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)[1]
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        records: list[tuple[int, bytes]] = []
        position, deadline = 0, time.monotonic() + 60
        while position < end:
            assert time.monotonic() < deadline, f"the final read is stuck at {position} of {end}"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err, o = msg.error(), msg.offset()
            if err is not None and err.code() != KafkaError._PARTITION_EOF:
                continue
            assert o is not None
            if err is None:
                records.append((o, msg.value() or b""))
                o += 1
            position = max(position, o)
        history.final_read(0, READ_UNCOMMITTED, records, end_offset=end)
        assert records and records[0][0] == 0, f"the final read starts at {records[:1]}, not at offset 0"
        return end
    finally:
        consumer.close()


def remote_segments(bootstrap: str) -> dict[uuid.UUID, RemoteLogSegmentMetadata]:
    """Every upload of the topic, in its state folded from ``__remote_log_metadata`` (events in
    each metadata partition's order; a transition the state does not allow is dropped, as the
    brokers' readers drop it)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rlmm-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    segments: dict[uuid.UUID, RemoteLogSegmentMetadata] = {}
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(REMOTE_LOG_METADATA_TOPIC, p), timeout=10)[1]
            for p in range(METADATA_PARTITIONS)
        }
        consumer.assign([TopicPartition(REMOTE_LOG_METADATA_TOPIC, p, OFFSET_BEGINNING) for p in ends])
        position = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + 30
        while any(position[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, (
                f"reading {REMOTE_LOG_METADATA_TOPIC} stuck at {position} of {ends}"
            )
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            p, o = msg.partition(), msg.offset()
            assert p is not None and o is not None
            position[p] = o + 1
            event = decode(msg.value() or b"")
            if isinstance(event, RemoteLogSegmentMetadata) and event.topic_id_partition.topic == TOPIC:
                segments.setdefault(event.segment_id.id, event)
            elif (
                isinstance(event, RemoteLogSegmentMetadataUpdate) and event.topic_id_partition.topic == TOPIC
            ):
                seg = segments.get(event.segment_id.id)
                if seg is not None and seg.state.may_become(event.state):
                    segments[event.segment_id.id] = seg.with_state(
                        event.state, event_timestamp_ms=event.event_timestamp_ms, broker_id=event.broker_id
                    )
    finally:
        consumer.close()
    return segments


def remote_leftovers(remote: Path, segments: dict[uuid.UUID, RemoteLogSegmentMetadata]) -> list[str]:
    """What the shared directory holds beyond the finished uploads' files: each a message."""
    finished = {
        kafka_uuid(s.segment_id.id): s for s in segments.values() if s.state is _S.COPY_SEGMENT_FINISHED
    }
    problems = []
    logs = {p.stem.split("-", 1)[1]: p for p in remote.rglob("*.log")}
    for sid, path in logs.items():
        if sid not in finished:
            seg = next((s for s in segments.values() if kafka_uuid(s.segment_id.id) == sid), None)
            problems.append(f"{path.name}: upload in state {seg.state.name if seg else 'unknown'}")
    problems += [f"{sid}: finished, no .log" for sid in finished if sid not in logs]
    problems += [f"{p.name}: temporary file" for p in remote.rglob("*.tmp")]
    problems += [f"{p.name}: partial upload" for p in uploads_in_flight(remote)]
    return problems


def test_tiered_storage_survives_failover_and_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The nodes load the slow plugin from tests.support: the repository root on their path.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    )
    remote = tmp_path / "remote"
    history = History(TOPIC)
    notes: list[str] = []

    def note(text: str) -> None:
        history.note(text)
        notes.append(f"{time.strftime('%H:%M:%S')} {text}")

    with ClusterProcesses(tmp_path / "cluster", controllers=3, **broker_configs(remote)) as c:
        probe = Probe(c)
        probe.admin.create_topics(
            [NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 3]], config=TOPIC_CONFIGS)], request_timeout=30
        )[TOPIC].result(30)
        probe.wait_full_isr("the topic created with a full ISR, led by node 1", leader=1)
        workload = Workload(c.bootstrap_servers, history)
        workload.start()
        try:
            # 1. kill -9 of the leader during an upload; the new leader copies on.
            probe.wait_offset_above(LATEST_TIERED, 0, "segments tiered by node 1")
            probe.wait_offset_above(EARLIEST_LOCAL, 0, "local segments deleted after their copy")
            in_flight = wait_upload_in_flight(remote, set(), "an upload of node 1 in flight")
            killed_upload = upload_id(in_flight)
            tiered_at_kill = probe.offset(LATEST_TIERED) or 0
            c.kill(1)
            note(f"kill -9 node 1 (leader) during the upload {in_flight.name}; tiered up to {tiered_at_kill}")
            leader = int(
                wait_for(lambda: (lead := probe.partition()[0]) in (2, 3) and lead, 30, "a new leader")
            )
            probe.wait_offset_above(
                LATEST_TIERED, tiered_at_kill, f"node {leader} copying past {tiered_at_kill}"
            )
            c.nodes[1].launch()
            c.nodes[1].wait_ready(60)
            leader = probe.wait_full_isr("node 1 back in the ISR after its kill -9")
            note(f"node 1 restarted; node {leader} leads")
            assert leader != 1

            # 2. kill -9 of a follower until the leader's local log starts above its log end.
            c.kill(1)
            follower_end = log_end_from_files(c.root / "node-1" / f"{TOPIC}-0")
            note(f"kill -9 node 1 (follower) at log end {follower_end}")
            probe.wait_offset_above(
                EARLIEST_LOCAL, follower_end, f"node {leader}'s local log start past {follower_end}"
            )
            mark = len(c.nodes[1].log_text())
            c.nodes[1].launch()
            c.nodes[1].wait_ready(60)
            probe.wait_full_isr("node 1 back in the ISR after catching up from the remote tier")
            restarts = re.findall(
                r"log restarts at (\d+) from remote storage \(log start (\d+)\)", c.nodes[1].log_text()[mark:]
            )
            assert restarts, (
                f"node 1 logged no restart from remote storage after its restart (log end {follower_end})"
            )
            restart_at, restart_start = int(restarts[0][0]), int(restarts[0][1])
            assert restart_at > follower_end and restart_start == 0, (
                f"node 1 restarted at {restart_at} (log start {restart_start}) with its old log end {follower_end}"
            )
            bases = sorted(int(p.stem) for p in (c.root / "node-1" / f"{TOPIC}-0").glob("*.log"))
            assert bases and bases[0] >= restart_at, (
                f"node 1's segments {bases} start below its restart at {restart_at}"
            )
            note(f"node 1 restarted from remote storage at {restart_at}")

            # 3. SIGTERM of the leader during an upload: a clean restart; node 1 leads.
            in_flight = wait_upload_in_flight(
                remote, set(uploads_in_flight(remote)), f"an upload of node {leader} in flight"
            )
            stopped_upload = upload_id(in_flight)
            tiered_at_stop = probe.offset(LATEST_TIERED) or 0
            assert c.nodes[leader].stop(60) == 0, f"node {leader} did not exit cleanly on SIGTERM"
            note(f"SIGTERM node {leader} (leader) during the upload {in_flight.name}")
            new_leader = int(
                wait_for(
                    lambda: (lead := probe.partition()[0]) > 0 and lead != leader and lead, 30, "a new leader"
                )
            )
            c.nodes[leader].launch()
            c.nodes[leader].wait_ready(60)
            probe.wait_full_isr(f"node {leader} back in the ISR after its SIGTERM")
            note(f"node {leader} restarted; node {new_leader} leads")
            probe.wait_offset_above(
                LATEST_TIERED, tiered_at_stop, f"node {new_leader} copying past {tiered_at_stop}"
            )
            # The controller elects the first live replica of the assignment in the ISR: node 1,
            # whose log came from the remote tier.
            assert new_leader == 1, f"node {new_leader} leads after node {leader}'s SIGTERM, not node 1"
            earliest, local, tiered = (
                probe.offset(EARLIEST),
                probe.offset(EARLIEST_LOCAL),
                probe.offset(LATEST_TIERED),
            )
            assert earliest == 0, f"node 1 (bootstrapped from remote) answers log start {earliest}"
            assert local is not None and tiered is not None
            assert restart_at <= local <= tiered + 1, (
                f"node 1: local log start {local}, restart at {restart_at}, tiered up to {tiered}"
            )
        finally:
            unacked = workload.finish(60)
        assert unacked == 0, f"{unacked} records not acknowledged 60 s after the workload stopped"
        assert not workload.errors, f"produce errors: {workload.errors[:5]}"

        # 4. Everything acknowledged is read back from offset 0; no leftover upload remains.
        end = final_read(c.bootstrap_servers, history)
        tiered = probe.offset(LATEST_TIERED)
        assert tiered is not None and tiered > 0, f"LATEST_TIERED {tiered}"
        segments: dict[uuid.UUID, RemoteLogSegmentMetadata] = {}

        def clean() -> bool:
            segments.clear()
            segments.update(remote_segments(c.bootstrap_servers))
            return not remote_leftovers(remote, segments)

        try:
            wait_for(clean, 30, "the interrupted uploads deleted")
        except AssertionError as e:
            raise AssertionError(f"{e}: {remote_leftovers(remote, segments)}") from None
        finished = sorted(
            (s.start_offset, s.end_offset) for s in segments.values() if s.state is _S.COPY_SEGMENT_FINISHED
        )
        # The upload killed with its broker was deleted by the next leader; the one of the
        # SIGTERM either finished before leadership moved or was deleted likewise.
        assert segments[killed_upload].state is _S.DELETE_SEGMENT_FINISHED, segments[killed_upload]
        assert segments[stopped_upload].state in (_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_FINISHED), (
            segments[stopped_upload]
        )
        covered = -1
        for start, stop in finished:
            assert start <= covered + 1, (
                f"no finished remote segment holds [{covered + 1}, {start}): {finished}"
            )
            covered = max(covered, stop)
        assert covered >= tiered, f"finished remote segments end at {covered}, LATEST_TIERED is {tiered}"
        probe.close()

    result = history.check()
    assert result.ok, result.report() + "\n" + "\n".join(notes)
    final = dict(history.finals[(0, READ_UNCOMMITTED)].records)
    for node_id in c.nodes:
        mine = [(o, v) for o, v in replica_records(c.root / f"node-{node_id}" / f"{TOPIC}-0") if o < end]
        offsets = [o for o, _v in mine]
        assert offsets == list(range(offsets[0], end)) if offsets else True, (
            f"node {node_id}'s local log has gaps below the high watermark {end}"
        )
        wrong = [o for o, v in mine if final.get(o) != v]
        assert not wrong, f"node {node_id} holds records at {wrong[:5]}... that differ from the final log"
