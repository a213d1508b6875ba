"""Metadata snapshots (``zurau.metadata.snapshot``): an image as a Kafka ``.checkpoint`` file and back.

Images are built the way the cluster builds them -- QuorumController operations whose records are
applied at consecutive offsets -- and every one of them must come back equal from its snapshot.
The byte layout (header and footer control batches, data batches, offsets) is checked against
Kafka's, and torn or corrupt snapshots must fail loudly.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zurau.config import BrokerConfig
from zurau.metadata.controller.config_control import DELETE, SET
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.kraft_log import KRaftLog
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from zurau.metadata.snapshot import (
    MAX_BATCH_BYTES,
    MAX_BATCH_RECORDS,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    decode_snapshot,
    encode_snapshot,
    image_from_snapshot,
    image_records,
    snapshot_timestamp,
)
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import control_key, parse_control_key
from zurau.protocol.records.record import decode_batch_records
from zurau.raft.messages import OffsetAndEpoch
from zurau.types import ZERO_UUID

CLUSTER = "snapshot-cluster"
TS = 1_700_000_123_456


class Cluster:
    """A controller and the image its committed records lead to, one offset per record."""

    def __init__(self) -> None:
        cfg = BrokerConfig.from_props({"node.id": "1"})
        ids = iter(uuid.UUID(int=i) for i in range(1, 100_000))
        self.controller = QuorumController(cfg, lambda: (1,), rng=random.Random(11), new_topic_id=lambda: next(ids))
        self.image = MetadataImage(CLUSTER)
        self.history: list[MetadataImage] = []

    @property
    def next_offset(self) -> int:
        return self.image.offset + 1

    def commit(self, records: list[MetadataRecord]) -> None:
        assert records, "every step of the scenario changes the image"
        self.image = self.image.apply(records, last_offset=self.image.offset + len(records))
        self.history.append(self.image)

    def run(self, op: Callable[[MetadataImage], ControllerResult[Any]]) -> Any:
        result = op(self.image)
        self.commit(result.records)
        return result.response

    def register(self, broker_id: int, rack: str | None) -> None:
        request = {
            "broker_id": broker_id,
            "cluster_id": CLUSTER,
            "incarnation_id": uuid.UUID(int=0x1000 + broker_id),
            "listeners": [
                {"name": "PLAINTEXT", "host": f"b{broker_id}", "port": 9092, "security_protocol": 0},
                {"name": "CONTROLLER", "host": f"b{broker_id}", "port": 9093, "security_protocol": 0},
            ],
            "features": [{"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 25}],
            "rack": rack,
            "is_migrating_zk_broker": False,
            "log_dirs": [uuid.UUID(int=0x2000 + broker_id)],
            "previous_broker_epoch": -1,
        }
        response = self.run(lambda img: self.controller.register_broker(img, request, self.next_offset))
        assert response["error_code"] == 0

    def heartbeat(self, broker_id: int, **flags: bool) -> None:
        reg = self.image.brokers[broker_id]
        request = {
            "broker_id": broker_id,
            "broker_epoch": reg.epoch,
            "current_metadata_offset": self.image.offset,
            "want_fence": flags.get("fence", False),
            "want_shut_down": flags.get("shut_down", False),
            "offline_log_dirs": [],
        }
        self.run(lambda img: self.controller.broker_heartbeat(img, request, self.next_offset))


def topic(name: str, partitions: int, rf: int, configs: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def build_cluster() -> Cluster:
    """Every kind of change the image knows, through the controller where it has an operation."""
    c = Cluster()
    c.commit([FeatureLevelRecord("metadata.version", 21), FeatureLevelRecord("kraft.version", 1)])
    for broker_id, rack in ((1, "r1"), (2, "r2"), (3, None), (4, "r1")):
        c.register(broker_id, rack)
    for broker_id in (1, 2, 3, 4):
        c.heartbeat(broker_id)  # caught up: unfenced
    ctl = c.controller
    created = c.run(
        lambda img: ctl.create_topics(
            img,
            [
                topic("orders", 3, 2, {"retention.ms": "1000", "cleanup.policy": "compact"}),
                topic("events", 1, 3),
                topic("__consumer_offsets", 2, 1, {"cleanup.policy": "compact"}),
            ],
            False,
        )
    )
    assert [t["error_code"] for t in created["topics"]] == [0, 0, 0]
    c.run(lambda img: ctl.create_partitions(img, [{"name": "events", "count": 4, "assignments": None}], False))
    c.run(
        lambda img: ctl.incremental_alter_configs(
            img,
            [
                {
                    "resource_type": TOPIC_RESOURCE,
                    "resource_name": "orders",
                    "configs": [
                        {"name": "retention.ms", "config_operation": DELETE, "value": None},
                        {"name": "segment.ms", "config_operation": SET, "value": "60000"},
                    ],
                }
            ],
            False,
        )
    )
    c.run(lambda img: ctl.allocate_producer_ids(img, 1, img.brokers[1].epoch))
    c.run(lambda img: ctl.allocate_producer_ids(img, 2, img.brokers[2].epoch))
    # Leadership moved on and a partition changed epochs (no controller operation writes this yet).
    orders = c.image.get("orders")
    assert orders is not None
    p0 = orders.partitions[0]
    c.commit([PartitionRecord(0, orders.topic_id, p0.replicas, p0.replicas[1:], p0.replicas[1], 3, 5)])
    # Dynamic broker configs: the controller refuses them today, a Kafka log may hold them.
    c.commit(
        [
            ConfigRecord(BROKER_RESOURCE, "1", "log.retention.ms", "5000"),
            ConfigRecord(BROKER_RESOURCE, "", "num.io.threads", "16"),
            ConfigRecord(BROKER_RESOURCE, "2", "log.cleaner.threads", "2"),
            ConfigRecord(BROKER_RESOURCE, "2", "log.cleaner.threads", None),  # leaves an empty entry
        ]
    )
    c.run(lambda img: ctl.fence_brokers(img, [3]))
    c.heartbeat(4, shut_down=True)  # controlled shutdown: leaderships move away...
    for b in (1, 2):  # ...the other live brokers have seen that (no change to the image)...
        hb = {"broker_id": b, "broker_epoch": c.image.brokers[b].epoch, "current_metadata_offset": c.image.offset}
        assert ctl.broker_heartbeat(c.image, hb, c.next_offset).records == []
    c.heartbeat(4, shut_down=True)  # ...so it may shut down: fenced and in controlled shutdown
    c.heartbeat(2, fence=True)
    deleted = c.run(lambda img: ctl.delete_topics(img, [("events", ZERO_UUID)], 6))
    assert deleted[0]["error_code"] == 0
    c.run(lambda img: ctl.unregister_broker(img, 3))
    c.register(3, "r3")  # a new incarnation: a new registration at a later epoch
    return c


def round_trip(image: MetadataImage, ts: int = TS) -> MetadataImage:
    return image_from_snapshot(image.cluster_id, encode_snapshot(image, ts), image.offset + 1)


# ------------------------------------------------------------------ round trips


def test_the_scenario_covers_every_kind_of_state() -> None:
    image = build_cluster().image
    assert image.names() == ["__consumer_offsets", "orders"]
    assert dict(image.features) == {"metadata.version": 21, "kraft.version": 1}
    assert image.next_producer_id == 2000
    brokers = image.brokers
    assert [b.id for b in image.live_brokers()] == [1]
    assert brokers[2].fenced and not brokers[2].in_controlled_shutdown
    assert brokers[4].fenced and brokers[4].in_controlled_shutdown
    assert brokers[3].fenced and brokers[3].rack == "r3" and brokers[3].epoch == image.offset
    assert {k: dict(v) for k, v in image.broker_configs.items()} == {
        "1": {"log.retention.ms": "5000"},
        "": {"num.io.threads": "16"},
        "2": {},
    }
    orders = image.get("orders")
    assert orders is not None and dict(orders.configs) == {"cleanup.policy": "compact", "segment.ms": "60000"}
    # Set to epochs (3, 5) above, then moved once by the controller when brokers left it.
    p0 = orders.partitions[0]
    assert (p0.leader_epoch, p0.partition_epoch) == (4, 6)
    assert p0.leader == -1 or image.brokers[p0.leader].live


def test_every_image_of_the_scenario_comes_back_equal() -> None:
    cluster = build_cluster()
    assert len(cluster.history) > 15
    for image in cluster.history:
        again = round_trip(image)
        assert again == image, f"image at offset {image.offset}"
        assert again.offset == image.offset


def test_the_empty_image_comes_back_equal() -> None:
    empty = MetadataImage(CLUSTER)
    assert image_records(empty) == []
    data = encode_snapshot(empty, TS)
    assert decode_snapshot(data) == []
    assert image_from_snapshot(CLUSTER, data, 0) == empty
    assert image_from_snapshot(CLUSTER, data, 0).offset == -1


def test_the_offset_is_the_last_one_the_snapshot_covers() -> None:
    image = build_cluster().image
    data = encode_snapshot(image, TS)
    assert image_from_snapshot(CLUSTER, data, 500).offset == 499
    assert image_from_snapshot("other", data, 1).cluster_id == "other"


def test_snapshots_are_deterministic() -> None:
    a, b = build_cluster().image, build_cluster().image
    assert encode_snapshot(a, TS) == encode_snapshot(b, TS)
    assert encode_snapshot(a, TS) != encode_snapshot(a, TS + 1)
    assert snapshot_timestamp(encode_snapshot(a, TS + 1)) == TS + 1


def test_image_records_order_and_content() -> None:
    image = build_cluster().image
    records = image_records(image)
    assert records[:2] == [FeatureLevelRecord("metadata.version", 21), FeatureLevelRecord("kraft.version", 1)]
    registrations = [r for r in records if isinstance(r, RegisterBrokerRecord)]
    assert [(r.broker_id, r.broker_epoch, r.fenced, r.in_controlled_shutdown) for r in registrations] == [
        (b.id, b.epoch, b.fenced, b.in_controlled_shutdown) for b in (image.brokers[i] for i in (1, 2, 3, 4))
    ]
    kinds = [type(r).__name__ for r in records]
    first_topic = kinds.index("TopicRecord")
    assert set(kinds[2:first_topic]) == {"RegisterBrokerRecord"}
    assert kinds[-1] == "ProducerIdsRecord" and records[-1] == ProducerIdsRecord(-1, -1, 2000)
    topics = [r.name for r in records if isinstance(r, TopicRecord)]
    assert topics == ["__consumer_offsets", "orders"]
    # configs come after every topic they name
    last_topic = max(i for i, r in enumerate(records) if isinstance(r, TopicRecord))
    assert all(i > last_topic for i, r in enumerate(records) if isinstance(r, ConfigRecord))
    assert ConfigRecord(BROKER_RESOURCE, "2", "", None) in records, "the empty broker-config entry"


# ------------------------------------------------------------------ byte layout


def batches(data: bytes) -> list[tuple[Any, list[Any]]]:
    out = []
    for pos, h in iter_batches(data):
        out.append((h, decode_batch_records(data[pos : pos + h.size])))
    assert sum(h.size for h, _ in out) == len(data)
    return out


def test_the_layout_is_kafkas_checkpoint_format() -> None:
    image = build_cluster().image
    data = encode_snapshot(image, TS)
    got = batches(data)
    (h0, (header,)), *middle, (hn, (footer,)) = got
    assert h0.is_control and h0.base_offset == 0 and parse_control_key(header.key) == SNAPSHOT_HEADER
    # SnapshotHeaderRecord v0: Version int16, LastContainedLogTimestamp int64, empty tagged fields
    assert header.value == struct.pack(">hq", 0, TS) + b"\x00"
    assert hn.is_control and parse_control_key(footer.key) == SNAPSHOT_FOOTER
    assert footer.value == struct.pack(">h", 0) + b"\x00"
    assert middle and not any(h.is_control for h, _ in middle)
    offsets = [r.offset for _h, recs in got for r in recs]
    assert offsets == list(range(len(offsets))), "offsets are dense from 0 within the snapshot"
    data_records = [r for _h, recs in middle for r in recs]
    assert all(r.key is None for r in data_records)
    assert [decode_record(r.value) for r in data_records] == image_records(image)
    assert all(r.timestamp == TS for _h, recs in got for r in recs)
    assert all(h.producer_id == -1 and h.compression == 0 for h, _ in got)


def test_big_images_are_split_into_bounded_batches() -> None:
    tid = uuid.UUID(int=7)
    records: list[MetadataRecord] = [TopicRecord("wide", tid)]
    records += [PartitionRecord(p, tid, (1,), (1,), 1) for p in range(2500)]
    records += [ConfigRecord(TOPIC_RESOURCE, "wide", f"x{i:03}", "v" * 20_000) for i in range(150)]
    image = MetadataImage(CLUSTER).apply(records, last_offset=len(records) - 1)
    data = encode_snapshot(image, TS)
    middle = batches(data)[1:-1]
    sizes = [len(recs) for _h, recs in middle]
    assert max(sizes) == MAX_BATCH_RECORDS and sum(sizes) == len(image_records(image))
    assert all(sum(len(r.value) for r in recs) <= MAX_BATCH_BYTES for _h, recs in middle)
    assert len(middle) >= 2 + 3, "2 full batches of partitions, 3 MB of configs in batches of 1 MiB"
    assert round_trip(image) == image


def test_a_single_record_over_the_batch_limit_goes_alone() -> None:
    tid = uuid.UUID(int=8)
    huge = "h" * (MAX_BATCH_BYTES + 10)
    records: list[MetadataRecord] = [TopicRecord("t", tid), ConfigRecord(TOPIC_RESOURCE, "t", "big", huge)]
    image = MetadataImage(CLUSTER).apply(records)
    middle = batches(encode_snapshot(image, TS))[1:-1]
    assert [len(recs) for _h, recs in middle] == [1, 1]
    assert round_trip(image) == image


# ------------------------------------------------------------------ damaged snapshots


def small_snapshot() -> bytes:
    tid = uuid.UUID(int=9)
    image = MetadataImage(CLUSTER).apply(
        [TopicRecord("a", tid), PartitionRecord(0, tid, (1,), (1,), 1), ConfigRecord(TOPIC_RESOURCE, "a", "k", "v")]
    )
    return encode_snapshot(image, TS)


def test_every_truncation_is_a_decode_error() -> None:
    data = small_snapshot()
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode_snapshot(data[:cut])


def test_corruption_is_a_decode_error_or_harmless() -> None:
    """Flipping any byte either fails the decode or touches a field the snapshot does not use
    (a batch's partition leader epoch, outside the CRC): never a silently different image."""
    data = small_snapshot()
    expected = decode_snapshot(data)
    harmless = 0
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x40
        try:
            got = decode_snapshot(bytes(bad))
        except DecodeError:
            continue
        assert got == expected, f"byte {i}"
        harmless += 1
    assert harmless <= 4 * len(batches(data)), "only the 4 leader-epoch bytes of each batch"


def control(control_type: int, value: bytes, offset: int) -> bytes:
    return build_batch([NewRecord(control_key(control_type), value, (), TS)], base_offset=offset, is_control=True)


def data_batch(records: list[MetadataRecord], offset: int) -> bytes:
    return build_batch([NewRecord(None, encode_record(r), (), TS) for r in records], base_offset=offset)


HEADER = struct.pack(">hq", 0, TS) + b"\x00"
FOOTER = struct.pack(">h", 0) + b"\x00"
TOPIC = TopicRecord("a", uuid.UUID(int=1))


@pytest.mark.parametrize(
    ("parts", "why"),
    [
        ([], "empty"),
        ([lambda: data_batch([TOPIC], 0), lambda: control(SNAPSHOT_FOOTER, FOOTER, 1)], "start with a SnapshotHeader"),
        ([lambda: control(SNAPSHOT_HEADER, HEADER, 0), lambda: data_batch([TOPIC], 1)], "no SnapshotFooter"),
        (
            [
                lambda: control(SNAPSHOT_HEADER, HEADER, 0),
                lambda: control(SNAPSHOT_FOOTER, FOOTER, 1),
                lambda: data_batch([TOPIC], 2),
            ],
            "follows the SnapshotFooter",
        ),
        (
            [
                lambda: control(SNAPSHOT_HEADER, HEADER, 0),
                lambda: control(SNAPSHOT_HEADER, HEADER, 1),
                lambda: control(SNAPSHOT_FOOTER, FOOTER, 2),
            ],
            "second SnapshotHeader",
        ),
        (
            [
                lambda: control(SNAPSHOT_HEADER, HEADER, 0),
                lambda: data_batch([TOPIC], 5),
                lambda: control(SNAPSHOT_FOOTER, FOOTER, 6),
            ],
            "expected base offset 1",
        ),
        (
            [lambda: control(SNAPSHOT_HEADER, HEADER[:5], 0), lambda: control(SNAPSHOT_FOOTER, FOOTER, 1)],
            "SnapshotHeaderRecord is missing or truncated",
        ),
        (
            [lambda: control(SNAPSHOT_HEADER, struct.pack(">hq", -1, TS) + b"\x00", 0),
             lambda: control(SNAPSHOT_FOOTER, FOOTER, 1)],
            "negative version",
        ),
        (
            [lambda: control(SNAPSHOT_HEADER, HEADER, 0), lambda: control(SNAPSHOT_FOOTER, FOOTER + b"xx", 1)],
            "trailing bytes",
        ),
        (
            [
                lambda: control(SNAPSHOT_HEADER, HEADER, 0),
                lambda: build_batch([NewRecord(None, b"\x01\x63\x00", (), TS)], base_offset=1),
                lambda: control(SNAPSHOT_FOOTER, FOOTER, 2),
            ],
            "record at offset 1: unknown metadata record type 99",
        ),
    ],
    ids=[
        "empty",
        "no-header",
        "no-footer",
        "after-footer",
        "two-headers",
        "offset-gap",
        "short-header",
        "negative-version",
        "long-footer",
        "unknown-record",
    ],
)
def test_malformed_snapshots_are_refused_with_a_clear_message(parts: list[Callable[[], bytes]], why: str) -> None:
    with pytest.raises(DecodeError, match=why):
        decode_snapshot(b"".join(p() for p in parts))


def test_raft_control_records_between_header_and_footer_are_skipped() -> None:
    """Kafka puts its KRaft version (type 5) and voters (type 6) records after the header."""
    data = (
        control(SNAPSHOT_HEADER, HEADER, 0)
        + control(5, b"\x00\x00\x00\x01\x00", 1)
        + data_batch([TOPIC], 2)
        + control(SNAPSHOT_FOOTER, FOOTER, 3)
    )
    assert decode_snapshot(data) == [TOPIC]


def test_contradicting_records_are_a_decode_error() -> None:
    data = (
        control(SNAPSHOT_HEADER, HEADER, 0)
        + data_batch([TOPIC, TopicRecord("a", uuid.UUID(int=2))], 1)
        + control(SNAPSHOT_FOOTER, FOOTER, 3)
    )
    assert len(decode_snapshot(data)) == 2
    with pytest.raises(DecodeError, match="do not form an image"):
        image_from_snapshot(CLUSTER, data, 10)


# ------------------------------------------------------------------ through the Raft log


def test_a_snapshot_stored_in_the_kraft_log_rebuilds_the_image(tmp_path: Path) -> None:
    cluster = build_cluster()
    image = cluster.image
    leader = KRaftLog(tmp_path / "leader", lambda: TS)
    follower = KRaftLog(tmp_path / "follower", lambda: TS)
    try:
        leader.append_as_leader(1, [encode_record(r) for r in image_records(image)])
        snap = OffsetAndEpoch(leader.end_offset(), 1)
        leader.create_snapshot(snap, encode_snapshot(image, TS))
        leader.delete_before(snap.offset)
        chunks = []
        while (chunk := leader.read_snapshot(snap, sum(map(len, chunks)), 512)) != b"":
            chunks.append(chunk)
        follower.install_snapshot(snap, b"".join(chunks))
        restored = image_from_snapshot(CLUSTER, follower.read_snapshot(snap, 0, 1 << 30), snap.offset)
        assert restored == image.apply([], last_offset=snap.offset - 1)
        assert (follower.start_offset(), follower.end_offset(), follower.last_fetched_epoch()) == (
            snap.offset,
            snap.offset,
            1,
        )
    finally:
        leader.close()
        follower.close()
