"""The controller's leadership decisions: ElectLeaders (PREFERRED, UNCLEAN), the automatic
leader rebalance, and partition reassignments (start, completion through AlterPartition,
cancel, list, the ISR and leader on completion), on images built by hand."""

from __future__ import annotations

import random
import uuid
from typing import Any

from zurau.config import BrokerConfig
from zurau.metadata.controller.election_control import ELECTION_PREFERRED, ELECTION_UNCLEAN
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import MetadataImage, PartitionRegistration
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from zurau.metadata.snapshot import encode_snapshot, image_from_snapshot
from zurau.protocol import errors as E

TID = uuid.UUID(int=0x7E57)


def _controller(**props: str) -> QuorumController:
    return QuorumController(BrokerConfig.from_props({"node.id": "1", **props}), lambda: (999,), rng=random.Random(3))


def _image(*partitions: tuple[tuple[int, ...], tuple[int, ...], int], configs: dict[str, str] | None = None) -> MetadataImage:
    """Brokers 1-5 registered and live (epoch 100 + id); topic ``t`` with the given partitions."""
    records: list[Any] = [
        RegisterBrokerRecord(b, uuid.UUID(int=b), 100 + b, (BrokerEndpoint("PLAINTEXT", "h", 9000 + b),), fenced=False)
        for b in (1, 2, 3, 4, 5)
    ]
    records.append(TopicRecord("t", TID))
    records += [ConfigRecord(TOPIC_RESOURCE, "t", k, v) for k, v in (configs or {}).items()]
    for i, (replicas, isr, leader) in enumerate(partitions):
        records.append(PartitionRecord(i, TID, replicas, isr, leader, 5, 7))
    return MetadataImage("c").apply(records, last_offset=200)


def _fence(image: MetadataImage, *brokers: int) -> MetadataImage:
    return image.apply([BrokerRegistrationChangeRecord(b, 100 + b, 1) for b in brokers])


def _part(image: MetadataImage, index: int = 0) -> PartitionRegistration:
    t = image.get("t")
    assert t is not None
    return t.partitions[index]


def _codes(results: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    return {(t["topic"], r["partition_id"]): r["error_code"] for t in results for r in t["partition_result"]}


# ------------------------------------------------------------------ ElectLeaders


def test_preferred_election_per_partition() -> None:
    c = _controller()
    image = _fence(
        _image(
            ((1, 2, 3), (1, 2, 3), 2),  # 0: preferred 1 is live and in the ISR -> elected
            ((1, 2, 3), (1, 2, 3), 1),  # 1: already led by its preferred replica
            ((3, 1, 2), (1, 2), 1),  # 2: preferred 3 is not in the ISR
            ((4, 1), (4, 1), 1),  # 3: preferred 4 is fenced
            ((4, 1, 2), (4, 1, 2), NO_LEADER),  # 4: leaderless, 4 fenced: the first live ISR member
        ),
        4,
    )
    res = c.elect_leaders(image, ELECTION_PREFERRED, [{"topic": "t", "partitions": [0, 1, 2, 3, 4, 9]}, {"topic": "nope", "partitions": [0]}])
    assert _codes(res.response) == {
        ("t", 0): 0,
        ("t", 1): E.ElectionNotNeededError.code,
        ("t", 2): E.PreferredLeaderNotAvailableError.code,
        ("t", 3): E.PreferredLeaderNotAvailableError.code,
        ("t", 4): 0,
        ("t", 9): E.UnknownTopicOrPartitionError.code,
        ("nope", 0): E.UnknownTopicOrPartitionError.code,
    }
    assert res.records == [PartitionChangeRecord(0, TID, leader=1), PartitionChangeRecord(4, TID, leader=1)]
    after = image.apply(res.records)
    assert (_part(after, 0).leader, _part(after, 0).leader_epoch) == (1, 6)
    messages = {r["partition_id"]: r["error_message"] for r in res.response[0]["partition_result"]}
    assert messages[0] is None and messages[1] == "Leader election not needed for topic partition."


def test_preferred_election_of_all_partitions_leaves_out_those_not_needed() -> None:
    c = _controller()
    image = _image(((1, 2), (1, 2), 2), ((1, 2), (1, 2), 1), ((3, 2), (2,), 2))
    res = c.elect_leaders(image, ELECTION_PREFERRED, None)
    assert res.response == [
        {
            "topic": "t",
            "partition_result": [
                {"partition_id": 0, "error_code": 0, "error_message": None},
                {"partition_id": 2, "error_code": E.PreferredLeaderNotAvailableError.code,
                 "error_message": "The preferred leader was not available."},
            ],
        }
    ]
    assert res.records == [PartitionChangeRecord(0, TID, leader=1)]


def test_unclean_election_only_for_leaderless_partitions() -> None:
    c = _controller()
    image = _fence(
        _image(
            ((1, 2), (1, 2), 1),  # 0: has a leader
            ((1, 2, 3), (1,), NO_LEADER),  # 1: the ISR member 1 is fenced: 2, the first live replica
            ((2, 3), (3, 2), NO_LEADER),  # 2: a live ISR member: clean, in replica order
            ((1, 4), (1,), NO_LEADER),  # 3: no live replica
        ),
        1,
        4,
    )
    res = c.elect_leaders(image, ELECTION_UNCLEAN, [{"topic": "t", "partitions": [0, 1, 2, 3]}])
    assert _codes(res.response) == {
        ("t", 0): E.ElectionNotNeededError.code,
        ("t", 1): 0,
        ("t", 2): 0,
        ("t", 3): E.EligibleLeadersNotAvailableError.code,
    }
    assert res.records == [
        PartitionChangeRecord(1, TID, isr=(2,), leader=2),
        PartitionChangeRecord(2, TID, leader=2),
    ]
    bad = c.elect_leaders(image, 7, [{"topic": "t", "partitions": [0]}])
    assert _codes(bad.response) == {("t", 0): E.InvalidRequestError.code} and bad.records == []


# ------------------------------------------------------------------ auto rebalance


def test_auto_rebalance_moves_leaders_back_above_the_imbalance_percentage() -> None:
    image = _fence(
        _image(
            ((1, 2), (1, 2), 2),  # preferred 1, led by 2
            ((1, 2), (1, 2), 1),
            ((1, 3), (3,), 3),  # preferred 1, not in the ISR: stays
            ((2, 1), (2, 1), 2),
            ((4, 1), (4, 1), 1),  # preferred 4 is fenced
        ),
        4,
    )
    res = _controller().balance_leaders(image)
    assert res.records == [PartitionChangeRecord(0, TID, leader=1)]
    # 2 of broker 1's 3 partitions are led elsewhere (67%): above 50%, so it rebalances.
    assert _controller(**{"leader.imbalance.per.broker.percentage": "50"}).balance_leaders(image).records == res.records
    assert _controller(**{"leader.imbalance.per.broker.percentage": "70"}).balance_leaders(image).records == []
    assert _controller(**{"auto.leader.rebalance.enable": "false"}).balance_leaders(image).records == []
    balanced = image.apply(res.records)
    assert _controller().balance_leaders(balanced).records == []


# ------------------------------------------------------------------ reassignments


def _reassign(topic: str, index: int, replicas: list[int] | None) -> list[dict[str, Any]]:
    return [{"name": topic, "partitions": [{"partition_index": index, "replicas": replicas}]}]


def _alter(isr: list[int], p: PartitionRegistration, leader: int = 1) -> dict[str, Any]:
    return {
        "broker_id": leader,
        "broker_epoch": 100 + leader,
        "topics": [{"topic_id": TID, "partitions": [
            {"partition_index": 0, "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch, "new_isr": isr}
        ]}],
    }


def _errors(res: Any) -> list[int]:
    return [p["error_code"] for t in res.response for p in t["partitions"]]


def test_growing_the_replication_factor_completes_when_the_new_replicas_join_the_isr() -> None:
    c = _controller()
    image = _image(((1,), (1,), 1))
    res = c.alter_partition_reassignments(image, _reassign("t", 0, [1, 2, 3]))
    assert _errors(res) == [0]
    assert res.records == [PartitionChangeRecord(0, TID, replicas=(1, 2, 3), removing_replicas=(), adding_replicas=(2, 3))]
    image = image.apply(res.records)
    p = _part(image)
    assert p.reassigning and p.replicas == (1, 2, 3) and p.isr == (1,) and p.leader_epoch == 5
    listed = c.list_partition_reassignments(image, None)
    assert listed == [{"name": "t", "partitions": [
        {"partition_index": 0, "replicas": [1, 2, 3], "adding_replicas": [2, 3], "removing_replicas": []}
    ]}]
    # 2 catches up first: an ISR change only.
    step = c.alter_partition(image, _alter([1, 2], p))
    assert step.records == [PartitionChangeRecord(0, TID, isr=(1, 2))]
    image = image.apply(step.records)
    # 3 joins: the reassignment completes in the same record (no replica removed: same leader epoch).
    done = c.alter_partition(image, _alter([1, 2, 3], _part(image)))
    assert done.records == [
        PartitionChangeRecord(0, TID, isr=(1, 2, 3), replicas=(1, 2, 3), removing_replicas=(), adding_replicas=())
    ]
    image = image.apply(done.records)
    assert _part(image) == PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 5, 10)
    assert c.list_partition_reassignments(image, None) == []


def test_shrinking_completes_at_once_and_moves_a_removed_leader() -> None:
    c = _controller()
    image = _image(((1, 2, 3), (1, 2, 3), 1), ((1, 2, 3), (1, 2, 3), 2))
    res = c.alter_partition_reassignments(
        image, [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [3, 2]}, {"partition_index": 1, "replicas": [2, 3]}]}]
    )
    assert _errors(res) == [0, 0]
    assert res.records == [
        PartitionChangeRecord(0, TID, isr=(2, 3), leader=3, replicas=(3, 2), removing_replicas=(), adding_replicas=()),
        PartitionChangeRecord(1, TID, isr=(2, 3), leader=2, replicas=(2, 3), removing_replicas=(), adding_replicas=()),
    ]
    after = image.apply(res.records)
    assert (_part(after, 0).leader, _part(after, 0).leader_epoch) == (3, 6)
    assert (_part(after, 1).leader, _part(after, 1).leader_epoch) == (2, 6), "a removed replica: epoch bump"
    assert not _part(after, 0).reassigning


def test_a_move_keeps_the_old_replicas_until_the_new_ones_are_in_sync() -> None:
    c = _controller()
    image = _image(((1, 2), (1, 2), 1))
    res = c.alter_partition_reassignments(image, _reassign("t", 0, [3, 4]))
    assert res.records == [PartitionChangeRecord(0, TID, replicas=(3, 4, 1, 2), removing_replicas=(1, 2), adding_replicas=(3, 4))]
    image = image.apply(res.records)
    p = _part(image)
    assert p.target_replicas == (3, 4) and p.original_replicas == (1, 2) and p.leader == 1
    done = c.alter_partition(image, _alter([1, 2, 3, 4], p))
    assert done.records == [
        PartitionChangeRecord(0, TID, isr=(3, 4), leader=3, replicas=(3, 4), removing_replicas=(), adding_replicas=())
    ]
    answer = done.response["topics"][0]["partitions"][0]
    assert (answer["leader_id"], answer["isr"]) == (3, [3, 4])


def test_cancel_reverts_and_errors() -> None:
    c = _controller()
    image = _image(((1, 2), (1, 2), 1), ((1,), (1,), 1))
    image = image.apply(c.alter_partition_reassignments(image, _reassign("t", 0, [3, 2])).records)
    assert _part(image).replicas == (3, 2, 1)
    # 3 has joined the ISR and even leads (a preferred election): the cancel moves leadership back.
    image = image.apply([PartitionChangeRecord(0, TID, isr=(1, 2, 3), leader=3)])
    res = c.alter_partition_reassignments(image, _reassign("t", 0, None))
    assert _errors(res) == [0]
    # As Kafka's revert: the replicas without the added ones, in the order of the reassignment.
    assert res.records == [PartitionChangeRecord(0, TID, isr=(1, 2), leader=2, replicas=(2, 1), removing_replicas=(), adding_replicas=())]
    reverted = image.apply(res.records)
    assert not _part(reverted).reassigning and _part(reverted).replicas == (2, 1)
    cases = [
        (_reassign("t", 1, None), E.NoReassignmentInProgressError),
        (_reassign("t", 5, [1]), E.UnknownTopicOrPartitionError),
        (_reassign("x", 0, [1]), E.UnknownTopicOrPartitionError),
        (_reassign("t", 1, []), E.InvalidReplicaAssignmentError),
        (_reassign("t", 1, [1, 1]), E.InvalidReplicaAssignmentError),
        (_reassign("t", 1, [1, 9]), E.InvalidReplicaAssignmentError),
    ]
    for request, error in cases:
        out = c.alter_partition_reassignments(reverted, request)
        assert out.records == [] and _errors(out) == [error.code], (request, error)
    no_rf = c.alter_partition_reassignments(reverted, _reassign("t", 1, [1, 2]), allow_replication_factor_change=False)
    assert _errors(no_rf) == [E.InvalidReplicationFactorError.code]
    same_rf = c.alter_partition_reassignments(reverted, _reassign("t", 1, [2]), allow_replication_factor_change=False)
    assert _errors(same_rf) == [0] and same_rf.records
    unchanged = c.alter_partition_reassignments(reverted, _reassign("t", 1, [1]))
    assert _errors(unchanged) == [0] and unchanged.records == []


def test_cancel_that_needs_an_unclean_election() -> None:
    c = _controller()
    image = _image(((1,), (1,), 1))
    image = image.apply(c.alter_partition_reassignments(image, _reassign("t", 0, [2])).records)
    image = image.apply([PartitionChangeRecord(0, TID, isr=(2,), leader=2)])  # 1 dropped out
    refused = c.alter_partition_reassignments(image, _reassign("t", 0, None))
    assert _errors(refused) == [E.InvalidReplicaAssignmentError.code] and refused.records == []


def test_reassignment_state_survives_records_and_snapshots() -> None:
    record = PartitionChangeRecord(0, TID, replicas=(3, 4, 1), removing_replicas=(1,), adding_replicas=(3, 4))
    assert decode_record(encode_record(record)) == record
    image = _image(((1,), (1,), 1)).apply([record], last_offset=201)
    again = image_from_snapshot("c", encode_snapshot(image, 0), image.offset + 1)
    assert _part(again) == _part(image) and _part(again).adding_replicas == (3, 4)
    assert NO_LEADER_CHANGE == record.leader
