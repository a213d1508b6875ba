"""DescribeTopicPartitions (KIP-966): which topics, pagination by partition limit and cursor,
per-partition fields, errors and authorisation, against a metadata image (no sockets)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any, cast

from zurau.broker.handlers import describe_topic_partitions as dtp
from zurau.broker.handlers._authz import TOPIC_OPERATIONS
from zurau.broker.request_context import RequestContext
from zurau.config import BrokerConfig
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import BrokerEndpoint, PartitionRecord, RegisterBrokerRecord, TopicRecord
from zurau.protocol import errors as E
from zurau.protocol.acl import AclOperation, ResourceType
from zurau.protocol.codec import decode, encode
from zurau.protocol.frame import RequestHeader
from zurau.protocol.schemas.describe_topic_partitions import AUTHORIZED_OPERATIONS_UNSET


def _tid(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


def _image(
    topics: dict[str, int], brokers: tuple[int, ...] = (), fenced: tuple[int, ...] = ()
) -> MetadataImage:
    """Topics with their partition counts; partition i on replicas (1, 2), led by 1."""
    records: list[Any] = [
        RegisterBrokerRecord(
            b, uuid.UUID(int=b), 10 + b, (BrokerEndpoint("PLAINTEXT", "h", 9000 + b, 0),), fenced=b in fenced
        )
        for b in brokers
    ]
    for name, n in topics.items():
        records.append(TopicRecord(name, _tid(name)))
        records += [PartitionRecord(i, _tid(name), (1, 2), (1, 2), 1) for i in range(n)]
    return MetadataImage("c").apply(records)


class _Authorizer:
    """Allows every operation on the topics in ``topics`` (all operations, nothing else)."""

    def __init__(self, topics: set[str]) -> None:
        self.topics = topics
        self.logged: list[tuple[str, bool]] = []

    def authorize(
        self,
        principal: str,
        host: str,
        op: AclOperation,
        rtype: ResourceType,
        name: str,
        api: str,
        log: bool = True,
    ) -> bool:
        ok = rtype == ResourceType.TOPIC and name in self.topics
        if log and op == AclOperation.DESCRIBE:
            self.logged.append((name, ok))
        return ok


def _call(
    image: MetadataImage, req: dict[str, Any], authorizer: Any = None, limit: int = 2000
) -> dict[str, Any]:
    services = SimpleNamespace(
        config=BrokerConfig.from_props({"node.id": "1", "max.request.partition.size.limit": str(limit)}),
        metadata=SimpleNamespace(image=image),
        authorizer=authorizer,
        effective_config=None,
    )
    ctx = RequestContext(RequestHeader(75, 0, 1, "t"), cast(Any, services), "127.0.0.1:1", "PLAINTEXT")
    # through the codec both ways, as on the wire (defaults filled in, every field encodable)
    wire_req = decode(75, 0, "request", memoryview(encode(75, 0, "request", req)))
    resp = dtp.handle(ctx, cast(Any, wire_req))
    return cast(dict[str, Any], decode(75, 0, "response", memoryview(encode(75, 0, "response", resp))))


def _pages(image: MetadataImage, names: list[str], limit: int) -> list[list[tuple[str, list[int]]]]:
    """Every page of a walk with the cursor: per page, (topic, partition indexes) pairs."""
    pages, cursor = [], None
    while True:
        resp = _call(
            image,
            {"topics": [{"name": n} for n in names], "response_partition_limit": limit, "cursor": cursor},
        )
        pages.append([(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in resp["topics"]])
        cursor = resp["next_cursor"]
        if cursor is None:
            return pages


def test_describes_named_topics_in_name_order_with_partition_fields() -> None:
    image = _image({"b": 2, "a": 1}, brokers=(1, 2), fenced=(2,))
    resp = _call(image, {"topics": [{"name": "b"}, {"name": "a"}, {"name": "b"}]})
    assert [t["name"] for t in resp["topics"]] == ["a", "b"] and resp["next_cursor"] is None
    b = resp["topics"][1]
    assert (b["error_code"], b["topic_id"], b["is_internal"]) == (0, _tid("b"), False)
    assert b["topic_authorized_operations"] == TOPIC_OPERATIONS
    assert b["partitions"][1] == {
        "error_code": 0,
        "partition_index": 1,
        "leader_id": 1,
        "leader_epoch": 0,
        "replica_nodes": [1, 2],
        "isr_nodes": [1, 2],
        "eligible_leader_replicas": [],  # no ELR in Zurau yet: empty, not null
        "last_known_elr": [],
        "offline_replicas": [2],  # fenced
    }
    # a leader that is not registered: -1 (the partition itself has no error)
    lost = _image({"t": 1}, brokers=(2,))
    p = _call(lost, {"topics": [{"name": "t"}]})["topics"][0]["partitions"][0]
    assert (p["error_code"], p["leader_id"], p["offline_replicas"]) == (0, -1, [1])


def test_empty_list_is_every_topic_and_unknown_named_topics_get_errors() -> None:
    image = _image({"z": 1, "__consumer_offsets": 1, "m": 1})
    assert [t["name"] for t in _call(image, {"topics": []})["topics"]] == ["__consumer_offsets", "m", "z"]
    assert _call(image, {"topics": []})["topics"][0]["is_internal"] is True
    resp = _call(image, {"topics": [{"name": "nope"}, {"name": "bad/name"}, {"name": "__transaction_state"}]})
    errors = {t["name"]: (t["error_code"], t["partitions"], t["is_internal"]) for t in resp["topics"]}
    assert errors == {
        "nope": (E.UnknownTopicOrPartitionError.code, [], False),
        "bad/name": (E.InvalidTopicError.code, [], False),
        "__transaction_state": (E.UnknownTopicOrPartitionError.code, [], True),
    }
    assert all(t["topic_id"] == uuid.UUID(int=0) for t in resp["topics"])


def test_pages_split_topics_and_partitions_and_cover_everything_once() -> None:
    image = _image({"a": 3, "b": 1, "c": 4})
    assert _pages(image, [], 3) == [[("a", [0, 1, 2])], [("b", [0]), ("c", [0, 1])], [("c", [2, 3])]]
    assert _pages(image, ["c", "a"], 2) == [
        [("a", [0, 1])],
        [("a", [2]), ("c", [0])],
        [("c", [1, 2])],
        [("c", [3])],
    ]
    # the limit used up exactly at a topic's end: the cursor names the next topic at partition 0
    resp = _call(image, {"topics": [], "response_partition_limit": 3})
    assert resp["next_cursor"] == {"topic_name": "b", "partition_index": 0}
    # the broker's cap wins over a larger request limit, and a limit below 1 counts as 1
    resp = _call(image, {"topics": [], "response_partition_limit": 100}, limit=2)
    assert resp["next_cursor"] == {"topic_name": "a", "partition_index": 2}
    resp = _call(image, {"topics": [], "response_partition_limit": 0})
    assert [len(t["partitions"]) for t in resp["topics"]] == [1]
    # a cursor past a topic's last partition: the topic with no partitions, then on
    resp = _call(image, {"topics": [], "cursor": {"topic_name": "a", "partition_index": 9}})
    assert [(t["name"], len(t["partitions"])) for t in resp["topics"]] == [("a", 0), ("b", 1), ("c", 4)]
    # in the list of all topics, the cursor's topic need not exist
    resp = _call(image, {"topics": [], "cursor": {"topic_name": "bb", "partition_index": 0}})
    assert [t["name"] for t in resp["topics"]] == ["c"]


def test_a_cursor_outside_the_named_topics_or_negative_is_an_invalid_request() -> None:
    image = _image({"a": 1, "b": 1})
    resp = _call(image, {"topics": [{"name": "a"}], "cursor": {"topic_name": "b", "partition_index": 0}})
    assert [(t["name"], t["error_code"], t["partitions"]) for t in resp["topics"]] == [
        ("a", E.InvalidRequestError.code, [])
    ]
    resp = _call(
        image,
        {"topics": [{"name": "a"}, {"name": "b"}], "cursor": {"topic_name": "a", "partition_index": -1}},
    )
    assert {t["error_code"] for t in resp["topics"]} == {E.InvalidRequestError.code}
    assert resp["next_cursor"] is None


def test_authorization_hides_listed_topics_and_denies_named_ones() -> None:
    image = _image({"a": 1, "b": 1, "c": 1})
    authz = _Authorizer({"a", "c", "missing"})
    listed = _call(image, {"topics": []}, authz)
    assert [t["name"] for t in listed["topics"]] == ["a", "c"]
    assert all(t["topic_authorized_operations"] == TOPIC_OPERATIONS for t in listed["topics"])
    assert authz.logged == []  # listing all topics logs no denials
    resp = _call(image, {"topics": [{"name": n} for n in ("b", "a", "x", "missing")]}, authz)
    got = [
        (t["name"], t["error_code"], t["topic_id"], t["topic_authorized_operations"]) for t in resp["topics"]
    ]
    assert got == [
        ("a", 0, _tid("a"), TOPIC_OPERATIONS),
        ("missing", E.UnknownTopicOrPartitionError.code, uuid.UUID(int=0), TOPIC_OPERATIONS),
        # denied ones last, existing or not, without their topic id or operations
        ("b", E.TopicAuthorizationFailedError.code, uuid.UUID(int=0), AUTHORIZED_OPERATIONS_UNSET),
        ("x", E.TopicAuthorizationFailedError.code, uuid.UUID(int=0), AUTHORIZED_OPERATIONS_UNSET),
    ]
    assert ("b", False) in authz.logged
    # a page ends before later denied topics are met: they are reported on the page that meets them
    first = _call(
        image, {"topics": [{"name": n} for n in ("a", "b", "c")], "response_partition_limit": 1}, authz
    )
    assert [(t["name"], t["error_code"]) for t in first["topics"]] == [
        ("a", 0),
        ("b", E.TopicAuthorizationFailedError.code),
    ]
    assert first["next_cursor"] == {"topic_name": "c", "partition_index": 0}
