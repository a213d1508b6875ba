"""The controller's bounds on one user request, as Kafka's (KAFKA-14996, KAFKA-17870): CreateTopics
may ask for 10,000 partitions and generate 10,000 records in all, else the whole request is refused
with POLICY_VIOLATION; CreatePartitions refuses, per topic, partitions that would take the request
above 10,000. Refusals are decided from the request's numbers: nothing is placed or built."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from zurau.config import BrokerConfig
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.controller.replication_control import MAX_PARTITIONS_PER_BATCH
from zurau.metadata.controller.result import MAX_RECORDS_PER_USER_OP
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import PartitionRecord, TopicRecord
from zurau.protocol.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
)

POLICY = PolicyViolationError.code
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def _controller(**props: str) -> QuorumController:
    cfg = BrokerConfig.from_props({"node.id": "1", **props})
    return QuorumController(cfg, lambda: (1,), rng=random.Random(7), new_topic_id=uuid.uuid4)


def _topic(name: str, partitions: int = 1, rf: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [], "configs": [], **extra}


class _PlacementForbidden:
    """A placer stand-in that fails the test if asked to place anything."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls: list[int] = []

    def place(self, image: MetadataImage, partitions: int, rf: int, first: int = 0) -> list[tuple[int, ...]]:
        self.calls.append(partitions)
        if partitions > MAX_RECORDS_PER_USER_OP:
            raise AssertionError(f"asked to place {partitions} partitions")
        return self.real.place(image, partitions, rf, first)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _guarded(c: QuorumController) -> _PlacementForbidden:
    spy = _PlacementForbidden(c.replication.placer)
    c.replication.placer = spy  # type: ignore[assignment]
    return spy


def _codes(response: Any) -> dict[str, tuple[int, str | None]]:
    return {t["name"]: (t["error_code"], t["error_message"]) for t in response["topics"]}


# ------------------------------------------------------------------ CreateTopics: partitions asked


@pytest.mark.parametrize("validate_only", [False, True])
def test_a_huge_topic_is_refused_before_anything_is_placed(validate_only: bool) -> None:
    c = _controller()
    spy = _guarded(c)
    r = c.create_topics(MetadataImage("c"), [_topic("huge", 16_777_215)], validate_only)
    assert r.records == []
    assert _codes(r.response) == {"huge": (POLICY, TOO_MANY_PARTITIONS)}
    assert spy.calls == []


def test_the_partition_bound_is_on_the_whole_request_which_is_refused_whole() -> None:
    c = _controller()
    spy = _guarded(c)
    # Kafka's own example: 5,000 + 5,000 + 1.
    topics = [_topic("foo", 5000), _topic("bar", 5000), _topic("baz", 1)]
    r = c.create_topics(MetadataImage("c"), topics, False)
    assert r.records == [] and spy.calls == []
    assert set(_codes(r.response).values()) == {(POLICY, TOO_MANY_PARTITIONS)}
    # A name given twice counts nothing (Kafka drops duplicates before counting) ...
    r = c.create_topics(MetadataImage("c"), [_topic("baz", 1), _topic("foo", 6000), _topic("foo", 6000)], True)
    assert _codes(r.response) == {"baz": (0, None), "foo": (InvalidRequestError.code, "Duplicate topic name.")}
    # ... and a refused request names every topic once, with Kafka's error and message.
    topics = [_topic("foo", 6000), _topic("bar", 5000), _topic("bar", 5000), _topic("baz", 4001), _topic("qux", 1)]
    r = c.create_topics(MetadataImage("c"), topics, False)
    assert r.records == [] and spy.calls == [1]  # (the earlier baz of the duplicate check)
    assert [t["name"] for t in r.response["topics"]] == ["foo", "bar", "baz", "qux"]
    assert set(_codes(r.response).values()) == {(POLICY, TOO_MANY_PARTITIONS)}
    assert all(t["topic_id"] == uuid.UUID(int=0) for t in r.response["topics"])


def test_how_partitions_are_counted() -> None:
    c = _controller(**{"num.partitions": "4000"})
    # -1 counts num.partitions: 3 x 4000 > 10,000.
    r = c.create_topics(MetadataImage("c"), [_topic(n, -1) for n in "abc"], True)
    assert set(_codes(r.response).values()) == {(POLICY, TOO_MANY_PARTITIONS)}
    # Manual assignments count their length, whatever num_partitions says.
    assigned = _topic("m", -1, -1, assignments=[{"partition_index": i, "broker_ids": [1]} for i in range(7000)])
    r = c.create_topics(MetadataImage("c"), [assigned, _topic("n", 3001)], True)
    assert set(_codes(r.response).values()) == {(POLICY, TOO_MANY_PARTITIONS)}
    # Invalid counts count nothing, and keep their own errors; duplicated names count nothing.
    r = c.create_topics(
        MetadataImage("c"),
        [_topic("zero", 0), _topic("neg", -7), _topic("dup", 9000), _topic("dup", 9000), _topic("ok", 2)],
        True,
    )
    assert _codes(r.response) == {
        "zero": (InvalidPartitionsError.code, "Number of partitions was set to an invalid non-positive value."),
        "neg": (InvalidPartitionsError.code, "Number of partitions was set to an invalid non-positive value."),
        "dup": (InvalidRequestError.code, "Duplicate topic name."),
        "ok": (0, None),
    }
    assert c.replication.requested_partitions([_topic("x", 2**31 - 1)] * 3) == 3 * (2**31 - 1)


def test_a_huge_replication_factor_is_refused_without_placing() -> None:
    c = _controller()
    spy = _guarded(c)
    r = c.create_topics(MetadataImage("c"), [_topic("rf", 100, 32767)], False)
    assert r.records == [] and spy.calls == [100]
    code, message = _codes(r.response)["rf"]
    assert code == InvalidReplicationFactorError.code and message is not None and "32767" in message
    # Partitions times replicas beyond the bound: the partition count decides first, as in Kafka.
    r = c.create_topics(MetadataImage("c"), [_topic("both", 100_000, 32767)], False)
    assert _codes(r.response) == {"both": (POLICY, TOO_MANY_PARTITIONS)}


# ------------------------------------------------------------------ CreateTopics: records generated


def test_ten_thousand_partitions_in_one_topic_are_one_record_too_many_as_in_kafka() -> None:
    c = _controller()
    image = MetadataImage("c")
    assert MAX_PARTITIONS_PER_BATCH == MAX_RECORDS_PER_USER_OP == 10_000
    # TopicRecord + 10,000 PartitionRecords = 10,001 records: refused whole, also validate_only.
    for validate_only in (False, True):
        r = c.create_topics(image, [_topic("ten-k", 10_000)], validate_only)
        assert r.records == []
        assert _codes(r.response) == {"ten-k": (POLICY, TOO_MANY_RECORDS)}
    # 9,999 partitions: 10,000 records, created.
    r = c.create_topics(image, [_topic("just-fits", 9_999)], False)
    assert _codes(r.response) == {"just-fits": (0, None)}
    assert len(r.records) == MAX_RECORDS_PER_USER_OP
    assert isinstance(r.records[0], TopicRecord)
    assert sum(isinstance(x, PartitionRecord) for x in r.records) == 9_999


def test_config_records_and_earlier_topics_count_towards_the_record_bound() -> None:
    c = _controller()
    image = MetadataImage("c")
    configs = [{"name": "cleanup.policy", "value": "compact"}, {"name": "retention.ms", "value": "1000"}]
    # 1 + 2 configs + 9,998 partitions = 10,001.
    r = c.create_topics(image, [_topic("cfg", 9_998, configs=configs)], False)
    assert r.records == [] and _codes(r.response) == {"cfg": (POLICY, TOO_MANY_RECORDS)}
    # 5,000 topics of one partition: 10,000 records; one more topic is too many (the earlier
    # topics' records are dropped with the request).
    many = [_topic(f"t{i}", 1) for i in range(5_000)]
    assert len(c.create_topics(image, many, False).records) == 10_000
    r = c.create_topics(image, [*many, _topic("straw", 1)], False)
    assert r.records == []
    assert len(r.response["topics"]) == 5_001
    assert set(_codes(r.response).values()) == {(POLICY, TOO_MANY_RECORDS)}


# ------------------------------------------------------------------ CreatePartitions


def _image_with(*topics: tuple[str, int]) -> MetadataImage:
    records: list[Any] = []
    for n, (name, partitions) in enumerate(topics, start=1):
        tid = uuid.UUID(int=n)
        records.append(TopicRecord(name, tid))
        records += [PartitionRecord(i, tid, (1,), (1,), 1, 0, 0) for i in range(partitions)]
    return MetadataImage("c").apply(records, last_offset=len(records) - 1)


def _grow(name: str, count: int, assignments: Any = None) -> dict[str, Any]:
    return {"name": name, "count": count, "assignments": assignments}


def _results(r: Any) -> dict[str, tuple[int, str | None]]:
    return {x["name"]: (x["error_code"], x["error_message"]) for x in r.response}


@pytest.mark.parametrize("validate_only", [False, True])
def test_a_huge_partition_count_fails_its_topic_only(validate_only: bool) -> None:
    c = _controller()
    spy = _guarded(c)
    image = _image_with(("a", 1), ("b", 1))
    r = c.create_partitions(image, [_grow("a", 16_777_215), _grow("b", 3)], validate_only)
    res = _results(r)
    assert res["b"] == (0, None)
    code, message = res["a"]
    assert code == POLICY
    assert message == (
        "Excessively large number of partitions per request: adding 16777214 partition(s) to a would make "
        "16777214 new partitions in this request, above the limit of 10000."
    )
    assert spy.calls == [2]  # only b was placed
    assert len(r.records) == (0 if validate_only else 2)
    assert all(p.partition_id in (1, 2) for p in r.records if isinstance(p, PartitionRecord))


def test_partitions_added_by_earlier_topics_count() -> None:
    c = _controller()
    image = _image_with(("a", 1), ("b", 1), ("c", 1))
    r = c.create_partitions(image, [_grow("a", 6_001), _grow("b", 4_002), _grow("c", 4_001)], False)
    res = _results(r)
    assert res["a"] == (0, None) and res["c"] == (0, None)
    assert res["b"][0] == POLICY and "would make 10001 new partitions" in (res["b"][1] or "")
    assert len(r.records) == MAX_RECORDS_PER_USER_OP  # 6,000 + 4,000: exactly the bound


def test_other_create_partitions_errors_come_first() -> None:
    c = _controller()
    image = _image_with(("a", 5))
    r = c.create_partitions(
        image, [_grow("nope", 2**31 - 1), _grow("a", 3), _grow("a2", 1), _grow("a", 2**31 - 1)], False
    )
    res = _results(r)
    assert res["a"] == (InvalidRequestError.code, "Duplicate topic name.")
    assert res["nope"][0] == UnknownTopicOrPartitionError.code
    assert res["a2"][0] == UnknownTopicOrPartitionError.code
    r = c.create_partitions(image, [_grow("a", 3)], False)
    assert _results(r)["a"][0] == InvalidPartitionsError.code
    # A manual assignment of the wrong length is named as such, even for a huge count.
    r = c.create_partitions(image, [_grow("a", 2**31 - 1, [{"broker_ids": [1]}])], False)
    assert "assignment(s) were specified" in (_results(r)["a"][1] or "")
