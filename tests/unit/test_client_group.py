"""Consumer-group pieces without a broker: ConsumerProtocol bytes and the range assignor.

kafka-python's own ConsumerProtocol structs and RangePartitionAssignor serve as an independent
oracle for the wire format and the assignment.
"""

from __future__ import annotations

import random
import struct

import kafka.protocol.old.consumer_protocol as old  # noqa: E402
import pytest

from zurau.client.group import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from zurau.client.types import TopicPartition


def test_subscription_round_trips_and_is_read_by_kafka_python() -> None:
    data = encode_subscription(["orders", "audit", "orders"])
    assert decode_subscription(data) == ["audit", "orders"]
    theirs = old.ConsumerProtocolMemberMetadata_v0.decode(data)
    assert theirs.version == 0 and list(theirs.topics) == ["audit", "orders"]


def test_subscriptions_written_by_kafka_python_are_read() -> None:
    data = old.ConsumerProtocolMemberMetadata_v0(0, ["x", "y"], b"user").encode()
    assert decode_subscription(data) == ["x", "y"]
    # A later version with extra trailing fields (owned partitions ...) still reads.
    v1 = struct.pack(">h", 1) + data[2:] + struct.pack(">i", 0)
    assert decode_subscription(v1) == ["x", "y"]


def test_assignment_round_trips_both_ways() -> None:
    tps = [TopicPartition("b", 2), TopicPartition("a", 0), TopicPartition("b", 0)]
    data = encode_assignment(tps)
    assert sorted(decode_assignment(data)) == sorted(tps)
    theirs = old.ConsumerProtocolMemberAssignment_v0.decode(data)
    assert sorted((t, p) for t, ps in theirs.assigned_partitions for p in ps) == sorted(tps)
    back = old.ConsumerProtocolMemberAssignment_v0(0, [("t", [3, 1])], b"").encode()
    assert decode_assignment(back) == [TopicPartition("t", 3), TopicPartition("t", 1)]
    assert decode_assignment(b"") == []


def test_bad_subscription_bytes_raise() -> None:
    with pytest.raises((ValueError, struct.error)):
        decode_subscription(b"\x00\x00\x00\x00\x00\x01\x00\x09ab")


def test_range_assignment_follows_kafkas_rule() -> None:
    plan = range_assign({"c1": ["t0", "t1"], "c0": ["t0", "t1"]}, {"t0": 3, "t1": 3})
    # The example of Kafka's RangeAssignor javadoc.
    expected_c0 = [
        TopicPartition("t0", 0),
        TopicPartition("t0", 1),
        TopicPartition("t1", 0),
        TopicPartition("t1", 1),
    ]
    assert sorted(plan["c0"]) == expected_c0
    assert sorted(plan["c1"]) == [TopicPartition("t0", 2), TopicPartition("t1", 2)]


def test_range_assignment_matches_kafka_python_on_random_groups() -> None:
    import kafka.coordinator.assignors.range as range_mod

    class Cluster:
        def __init__(self, counts: dict[str, int]) -> None:
            self.counts = counts

        def partitions_for_topic(self, topic: str) -> set[int] | None:
            n = self.counts.get(topic)
            return None if n is None else set(range(n))

    class Meta:
        def __init__(self, topics: list[str]) -> None:
            self.topics = topics

    class Member:
        def __init__(self, member_id: str, topics: list[str]) -> None:
            self.member_id = member_id
            self.group_instance_id = None
            self.metadata = Meta(topics)

    rnd = random.Random(11)
    for _ in range(200):
        topics = [f"t{i}" for i in range(rnd.randint(1, 4))]
        counts = {t: rnd.randint(1, 9) for t in topics}
        subs = {
            f"m-{rnd.randrange(10**6):06d}": rnd.sample(topics, rnd.randint(1, len(topics)))
            for _ in range(rnd.randint(1, 5))
        }
        ours = range_assign(subs, counts)
        theirs = range_mod.RangePartitionAssignor.assign(
            Cluster(counts), [Member(m, t) for m, t in subs.items()]
        )
        for m in subs:
            expected = sorted(TopicPartition(t, p) for t, ps in theirs[m].assigned_partitions for p in ps)
            assert sorted(ours[m]) == expected, (subs, counts, m)


def test_every_partition_is_assigned_exactly_once() -> None:
    plan = range_assign({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 7})
    got = sorted(tp for tps in plan.values() for tp in tps)
    assert got == [TopicPartition("t", p) for p in range(7)]
    assert sorted(len(v) for v in plan.values()) == [2, 2, 3]
