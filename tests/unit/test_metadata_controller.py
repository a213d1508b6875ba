"""The controller as a pure state machine: image + request -> records + response.

Only applying records changes an image; these tests apply the controller's records themselves
and check both the records (Kafka's record types) and the image they lead to.
"""

from __future__ import annotations

import random
import uuid

import pytest

from zurau.config import BrokerConfig
from zurau.metadata.controller.config_control import APPEND, DELETE, SET, SUBTRACT
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    ConfigRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from zurau.protocol import errors as E
from zurau.types import ZERO_UUID


def _controller(brokers: tuple[int, ...] = (1,), **props: str) -> QuorumController:
    cfg = BrokerConfig.from_props({"node.id": "1", **props})
    ids = iter(uuid.UUID(int=i) for i in range(1, 10_000))
    return QuorumController(cfg, lambda: brokers, rng=random.Random(7), new_topic_id=lambda: next(ids))


def _topic(name: str, partitions: int = -1, rf: int = -1, configs: dict[str, str | None] | None = None,
           assignments: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": assignments or [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def _commit(image: MetadataImage, result: object) -> MetadataImage:
    return image.apply(result.records)  # type: ignore[attr-defined]


EMPTY = MetadataImage("test-cluster")


def test_create_topic_writes_kafka_records_and_only_apply_changes_the_image() -> None:
    c = _controller()
    res = c.create_topics(EMPTY, [_topic("orders", 3, 1, {"retention.ms": "1000"})], False)
    assert EMPTY.get("orders") is None, "the controller never changes the image it is given"
    tid = uuid.UUID(int=1)
    assert res.records == [
        TopicRecord("orders", tid),
        ConfigRecord(2, "orders", "retention.ms", "1000"),
        PartitionRecord(0, tid, (1,), (1,), 1, 0, 0),
        PartitionRecord(1, tid, (1,), (1,), 1, 0, 0),
        PartitionRecord(2, tid, (1,), (1,), 1, 0, 0),
    ]
    topic = res.response["topics"][0]
    assert topic["error_code"] == 0 and topic["topic_id"] == tid and topic["num_partitions"] == 3
    image = _commit(EMPTY, res)
    t = image.get("orders")
    assert t is not None and t.num_partitions == 3 and dict(t.configs) == {"retention.ms": "1000"}
    assert image.by_id(tid) is t and t.partitions[2].leader == 1


def test_create_topic_errors_in_kafkas_order() -> None:
    c = _controller()
    image = _commit(EMPTY, c.create_topics(EMPTY, [_topic("exists", 1)], False))
    res = c.create_topics(
        image,
        [
            _topic("dup"),
            _topic("dup"),
            _topic("__cluster_metadata"),
            _topic("bad name"),
            _topic("exists"),
            _topic("cfg", configs={"retention.ms": "soon"}),
            _topic("zero", 0),
            _topic("rf0", 1, 0),
            _topic("rf2", 1, 2),
            _topic("manual", 3, assignments=[{"partition_index": 0, "broker_ids": [1]}]),
            _topic("gap", assignments=[{"partition_index": 1, "broker_ids": [1]}]),
            _topic("ghost", assignments=[{"partition_index": 0, "broker_ids": [9]}]),
        ],
        False,
    )
    codes = {t["name"]: t["error_code"] for t in res.response["topics"]}
    assert codes == {
        "dup": E.InvalidRequestError.code,
        "__cluster_metadata": E.TopicAuthorizationFailedError.code,
        "bad name": E.InvalidTopicError.code,
        "exists": E.TopicAlreadyExistsError.code,
        "cfg": E.InvalidConfigError.code,
        "zero": E.InvalidPartitionsError.code,
        "rf0": E.InvalidReplicationFactorError.code,
        "rf2": E.InvalidReplicationFactorError.code,
        "manual": E.InvalidRequestError.code,
        "gap": E.InvalidReplicaAssignmentError.code,
        "ghost": E.InvalidReplicaAssignmentError.code,
    }
    assert res.records == []


def test_validate_only_writes_nothing() -> None:
    res = _controller().create_topics(EMPTY, [_topic("vo", 2)], True)
    assert res.records == [] and res.response["topics"][0]["topic_id"] == ZERO_UUID


def test_placement_spreads_replicas_over_brokers() -> None:
    c = _controller(brokers=(1, 2, 3))
    res = c.create_topics(EMPTY, [_topic("r3", 6, 3)], False)
    parts = [r for r in res.records if isinstance(r, PartitionRecord)]
    assert all(len(set(p.replicas)) == 3 and p.leader == p.replicas[0] for p in parts)
    assert {p.leader for p in parts} == {1, 2, 3}, "leaders are spread"


def test_delete_topics_and_internal_topics() -> None:
    c = _controller()
    image = _commit(EMPTY, c.create_topics(EMPTY, [_topic("a"), _topic("b"), _topic("__consumer_offsets")], False))
    a = image.get("a")
    assert a is not None
    res = c.delete_topics(image, [("a", ZERO_UUID), ("__consumer_offsets", ZERO_UUID), ("nope", ZERO_UUID)], 6)
    assert res.records == [RemoveTopicRecord(a.topic_id)]
    assert [r["error_code"] for r in res.response] == [
        0,
        E.InvalidTopicError.code,
        E.UnknownTopicOrPartitionError.code,
    ]
    after = _commit(image, res)
    assert after.get("a") is None and after.by_id(a.topic_id) is None and after.get("b") is not None


def test_delete_disabled() -> None:
    c = _controller(**{"delete.topic.enable": "false"})
    res = c.delete_topics(EMPTY, [("a", ZERO_UUID)], 6)
    assert res.records == [] and res.response[0]["error_code"] == E.TopicDeletionDisabledError.code
    assert c.delete_topics(EMPTY, [("a", ZERO_UUID)], 2).response[0]["error_code"] == E.InvalidRequestError.code


def test_create_partitions() -> None:
    c = _controller()
    image = _commit(EMPTY, c.create_topics(EMPTY, [_topic("g", 2)], False))
    res = c.create_partitions(image, [{"name": "g", "count": 4, "assignments": None}], False)
    assert [r.partition_id for r in res.records if isinstance(r, PartitionRecord)] == [2, 3]
    assert _commit(image, res).get("g").num_partitions == 4  # type: ignore[union-attr]
    bad = c.create_partitions(
        image,
        [
            {"name": "g", "count": 2, "assignments": None},
            {"name": "missing", "count": 3, "assignments": None},
        ],
        False,
    )
    assert [r["error_code"] for r in bad.response] == [E.InvalidPartitionsError.code, E.UnknownTopicOrPartitionError.code]


def test_incremental_alter_configs_set_delete_append_subtract() -> None:
    c = _controller()
    image = _commit(EMPTY, c.create_topics(EMPTY, [_topic("t", configs={"retention.ms": "5"})], False))

    def alter(img: MetadataImage, *ops: tuple[str, int, str | None]) -> tuple[MetadataImage, list[dict[str, object]]]:
        res = c.incremental_alter_configs(
            img,
            [{"resource_type": 2, "resource_name": "t",
              "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in ops]}],
            False,
        )
        return img.apply(res.records), res.response

    image, resp = alter(image, ("retention.ms", DELETE, None), ("cleanup.policy", APPEND, "compact"))
    assert resp[0]["error_code"] == 0
    assert dict(image.get("t").configs) == {"cleanup.policy": "delete,compact"}  # type: ignore[union-attr]
    image, _ = alter(image, ("cleanup.policy", SUBTRACT, "delete"), ("segment.ms", SET, "60000"))
    assert dict(image.get("t").configs) == {"cleanup.policy": "compact", "segment.ms": "60000"}  # type: ignore[union-attr]
    _, resp = alter(image, ("segment.ms", APPEND, "1"))
    assert resp[0]["error_code"] == E.InvalidConfigError.code
    _, resp = alter(image, ("x", SET, "1"), ("x", DELETE, None))
    assert resp[0]["error_code"] == E.InvalidRequestError.code


def test_broker_resources_are_refused_with_kafkas_message() -> None:
    res = _controller().alter_configs(EMPTY, [{"resource_type": 4, "resource_name": "7", "configs": []}], False)
    assert res.response[0]["error_code"] == E.InvalidRequestError.code
    assert "expected one of the registered brokers (1) or empty string" in res.response[0]["error_message"]


def test_producer_id_blocks_never_repeat() -> None:
    c = _controller()
    image = EMPTY
    seen: set[int] = set()
    for _ in range(3):
        res = c.allocate_producer_ids(image, 1, -1)
        first, size = res.response
        block = set(range(first, first + size))
        assert not block & seen
        seen |= block
        assert isinstance(res.records[0], ProducerIdsRecord)
        image = image.apply(res.records)
    assert image.next_producer_id == 3000


def test_image_rejects_contradicting_records() -> None:
    tid = uuid.uuid4()
    image = EMPTY.apply([TopicRecord("a", tid)])
    with pytest.raises(ValueError):
        image.apply([TopicRecord("a", uuid.uuid4())])
    with pytest.raises(ValueError):
        image.apply([PartitionRecord(0, uuid.uuid4(), (1,), (1,), 1)])
    with pytest.raises(ValueError):
        image.apply([ProducerIdsRecord(1, -1, 5), ProducerIdsRecord(1, -1, 4)])


@pytest.mark.parametrize(
    "record",
    [
        TopicRecord("orders", uuid.uuid4()),
        PartitionRecord(3, uuid.uuid4(), (1, 2, 3), (1, 2), 2, 7, 9, (3,), (), 1),
        ConfigRecord(2, "orders", "retention.ms", "100"),
        ConfigRecord(2, "orders", "retention.ms", None),
        RemoveTopicRecord(uuid.uuid4()),
        ProducerIdsRecord(1, 5, 2000),
    ],
)
def test_records_round_trip(record: object) -> None:
    assert decode_record(encode_record(record)) == record  # type: ignore[arg-type]


def test_record_bytes_are_kafkas() -> None:
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    # frame version 1, type 2 (TopicRecord), version 0, compact string "a", uuid, no tagged fields
    assert encode_record(TopicRecord("a", tid)) == bytes.fromhex("010200" "0261" + tid.hex + "00")
    # ConfigRecord with a null value: compact nullable string length 0
    assert encode_record(ConfigRecord(2, "t", "k", None)) == bytes.fromhex("010400" "02" "0274" "026b" "00" "00")
