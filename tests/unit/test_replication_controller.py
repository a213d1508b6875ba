"""The controller's side of replication: PartitionChangeRecord (bytes and replay), AlterPartition
checks, and leadership moving when brokers stop being live (fenced, controlled shutdown,
re-registered) or come back (unfenced), with and without unclean leader election."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from zurau.config import BrokerConfig
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import MetadataImage, PartitionRegistration
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from zurau.protocol import errors as E

TID = uuid.UUID(int=0x7E57)
OTHER_TID = uuid.UUID(int=0x07E4)


def _controller(**props: str) -> QuorumController:
    cfg = BrokerConfig.from_props({"node.id": "1", **props})
    return QuorumController(cfg, lambda: (999,), rng=random.Random(3))


def _register(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id, uuid.UUID(int=broker_id), epoch, (BrokerEndpoint("PLAINTEXT", "h", 9000 + broker_id),), fenced=False
    )


def _image(*partitions: tuple[tuple[int, ...], tuple[int, ...], int], configs: dict[str, str] | None = None) -> MetadataImage:
    """Brokers 1-4 registered and live (epoch 100 + id); topic ``t`` with the given
    (replicas, isr, leader) partitions, each at leader epoch 5 and partition epoch 7."""
    from zurau.metadata.records import TOPIC_RESOURCE, ConfigRecord

    records: list[Any] = [_register(b, 100 + b) for b in (1, 2, 3, 4)]
    records.append(TopicRecord("t", TID))
    records += [ConfigRecord(TOPIC_RESOURCE, "t", k, v) for k, v in (configs or {}).items()]
    for i, (replicas, isr, leader) in enumerate(partitions):
        records.append(PartitionRecord(i, TID, replicas, isr, leader, 5, 7))
    return MetadataImage("c").apply(records, last_offset=200)


def _part(image: MetadataImage, index: int = 0) -> PartitionRegistration:
    t = image.get("t")
    assert t is not None
    return t.partitions[index]


# ------------------------------------------------------------------ PartitionChangeRecord


@pytest.mark.parametrize(
    "record",
    [
        PartitionChangeRecord(0, TID),
        PartitionChangeRecord(3, TID, isr=(1, 2)),
        PartitionChangeRecord(3, TID, leader=NO_LEADER),
        PartitionChangeRecord(1, TID, isr=(), leader=4, replicas=(4, 5), removing_replicas=(5,), adding_replicas=()),
        PartitionChangeRecord(1, TID, leader_recovery_state=1),
    ],
)
def test_partition_change_record_round_trips(record: PartitionChangeRecord) -> None:
    assert decode_record(encode_record(record)) == record


def test_partition_change_record_bytes_are_kafkas() -> None:
    # frame 1, type 5, version 0, partition id, topic id, then only the fields that changed as
    # tagged fields: 2 tags, ISR (tag 0: compact array [1, 2]) and leader (tag 1: int32 2).
    data = encode_record(PartitionChangeRecord(4, TID, isr=(1, 2), leader=2))
    expected = bytes([1, 5, 0]) + (4).to_bytes(4, "big") + TID.bytes
    expected += bytes([2, 0, 9, 3]) + (1).to_bytes(4, "big") + (2).to_bytes(4, "big")
    expected += bytes([1, 4]) + (2).to_bytes(4, "big")
    assert data == expected
    assert encode_record(PartitionChangeRecord(4, TID)) == bytes([1, 5, 0]) + (4).to_bytes(4, "big") + TID.bytes + b"\x00"


def test_replaying_a_change_bumps_the_epochs() -> None:
    image = _image(((1, 2, 3), (1, 2, 3), 1))
    shrunk = image.apply([PartitionChangeRecord(0, TID, isr=(1, 3))])
    assert _part(shrunk) == PartitionRegistration((1, 2, 3), (1, 3), 1, 5, 8), "ISR change: partition epoch only"
    moved = shrunk.apply([PartitionChangeRecord(0, TID, leader=3)])
    assert _part(moved) == PartitionRegistration((1, 2, 3), (1, 3), 3, 6, 9)
    again = moved.apply([PartitionChangeRecord(0, TID, leader=3)])
    assert (_part(again).leader, _part(again).leader_epoch) == (3, 7), "naming the same leader bumps its epoch"
    assert _part(image) == PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 5, 7), "the old image is unchanged"
    with pytest.raises(ValueError):
        image.apply([PartitionChangeRecord(9, TID, isr=(1,))])
    with pytest.raises(ValueError):
        image.apply([PartitionChangeRecord(0, OTHER_TID, isr=(1,))])


# ------------------------------------------------------------------ AlterPartition


def _alter(new_isr: list[int], *, broker: int = 1, broker_epoch: int = 101, leader_epoch: int = 5,
           partition_epoch: int = 7, topic_id: uuid.UUID = TID, index: int = 0,
           member_epochs: dict[int, int] | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"partition_index": index, "leader_epoch": leader_epoch, "partition_epoch": partition_epoch}
    if member_epochs is None:
        part["new_isr"] = new_isr
    else:
        part["new_isr_with_epochs"] = [{"broker_id": b, "broker_epoch": member_epochs.get(b, -1)} for b in new_isr]
    return {"broker_id": broker, "broker_epoch": broker_epoch, "topics": [{"topic_id": topic_id, "partitions": [part]}]}


def _code(result: Any) -> int:
    code: int = result.response["topics"][0]["partitions"][0]["error_code"]
    return code


def test_alter_partition_shrinks_and_expands_the_isr() -> None:
    c = _controller()
    image = _image(((1, 2, 3), (1, 2, 3), 1))
    res = c.alter_partition(image, _alter([1, 3]))
    assert res.records == [PartitionChangeRecord(0, TID, isr=(1, 3))]
    assert res.response == {
        "throttle_time_ms": 0,
        "error_code": 0,
        "topics": [
            {
                "topic_id": TID,
                "partitions": [
                    {"partition_index": 0, "error_code": 0, "leader_id": 1, "leader_epoch": 5, "isr": [1, 3],
                     "leader_recovery_state": 0, "partition_epoch": 8}
                ],
            }
        ],
    }
    image = image.apply(res.records)
    grow = c.alter_partition(image, _alter([1, 3, 2], partition_epoch=8, member_epochs={1: 101, 2: 102, 3: 103}))
    assert grow.records == [PartitionChangeRecord(0, TID, isr=(1, 3, 2))]
    same = c.alter_partition(image, _alter([1, 3], partition_epoch=8))
    assert same.records == [] and _code(same) == 0 and same.response["topics"][0]["partitions"][0]["isr"] == [1, 3]


def test_alter_partition_refusals_in_kafkas_order() -> None:
    c = _controller()
    image = _image(((1, 2, 3), (1, 2), 1)).apply([BrokerRegistrationChangeRecord(3, 103, 1)])  # 3 fenced
    stale = c.alter_partition(image, _alter([1], broker_epoch=99))
    assert stale.records == [] and stale.response["error_code"] == E.StaleBrokerEpochError.code
    cases = [
        (_alter([1], topic_id=OTHER_TID), E.UnknownTopicIdError),
        (_alter([1], index=4), E.UnknownTopicOrPartitionError),
        (_alter([1], leader_epoch=6), E.NotControllerError),
        (_alter([1], partition_epoch=8), E.NotControllerError),
        (_alter([1], leader_epoch=4), E.FencedLeaderEpochError),
        (_alter([2], broker=2, broker_epoch=102), E.InvalidRequestError),
        (_alter([1], partition_epoch=6), E.InvalidUpdateVersionError),
        (_alter([1, 4]), E.InvalidRequestError),  # 4 is not a replica
        (_alter([2]), E.InvalidRequestError),  # without the leader
        (_alter([1, 1]), E.InvalidRequestError),
        (_alter([1, 2, 3]), E.IneligibleReplicaError),  # 3 is fenced
        (_alter([1, 2], member_epochs={1: 101, 2: 7}), E.IneligibleReplicaError),  # 2 restarted since
    ]
    for request, error in cases:
        res = c.alter_partition(image, request)
        assert res.records == [] and _code(res) == error.code, (request, error)


# ------------------------------------------------------------------ leadership


def test_fencing_moves_leadership_to_the_first_live_isr_replica() -> None:
    c = _controller()
    image = _image(
        ((1, 2, 3), (1, 2, 3), 1),  # led by 1: 2 is next in replica order
        ((2, 1, 3), (1, 3), 1),  # led by 1, 2 not in the ISR: 3
        ((2, 3, 1), (2, 3, 1), 2),  # follower on 1: leaves the ISR only
        ((1, 4), (1,), 1),  # 1 is the whole ISR: no leader, ISR kept
        ((3, 4), (3, 4), 3),  # untouched
    )
    res = c.fence_brokers(image, [1])
    assert res.records == [
        FenceBrokerRecord(1, 101),
        PartitionChangeRecord(0, TID, isr=(2, 3), leader=2),
        PartitionChangeRecord(1, TID, isr=(3,), leader=3),
        PartitionChangeRecord(2, TID, isr=(2, 3)),
        PartitionChangeRecord(3, TID, leader=NO_LEADER),
    ]
    after = image.apply(res.records)
    assert [(p.leader, p.isr, p.leader_epoch) for p in (_part(after, i) for i in range(5))] == [
        (2, (2, 3), 6),
        (3, (3,), 6),
        (2, (2, 3), 5),
        (-1, (1,), 6),
        (3, (3, 4), 5),
    ]
    # Fencing two brokers at once: the second sees the first's changes.
    both = c.fence_brokers(image, [2, 1])
    after = image.apply(both.records)
    assert (_part(after, 0).leader, _part(after, 0).isr) == (3, (3,))


def test_an_unfenced_broker_is_elected_where_it_is_the_last_isr_member() -> None:
    c = _controller()
    image = _image(((1, 4), (1,), 1), ((4, 1), (4, 1), 4))
    image = image.apply(c.fence_brokers(image, [1]).records)
    assert _part(image, 0).leader == NO_LEADER
    # broker 1 comes back (a new registration, then caught up)
    image = image.apply(c.register_broker(image, {"broker_id": 1, "incarnation_id": uuid.UUID(int=9),
                                                 "cluster_id": "c", "listeners": []}, 300).records)
    res = c.broker_heartbeat(image, {"broker_id": 1, "broker_epoch": 300, "current_metadata_offset": 300}, 301)
    assert res.records == [BrokerRegistrationChangeRecord(1, 300, -1), PartitionChangeRecord(0, TID, leader=1)]
    assert _part(image.apply(res.records), 0).leader == 1
    assert _part(image.apply(res.records), 1).isr == (4,), "partition 1 lost 1 from its ISR when it was fenced"


def test_unclean_election_only_when_enabled() -> None:
    c = _controller()
    clean = _image(((1, 2), (1,), 1))
    assert c.fence_brokers(clean, [1]).records[1:] == [PartitionChangeRecord(0, TID, leader=NO_LEADER)]
    unclean = _image(((1, 2), (1,), 1), configs={"unclean.leader.election.enable": "true"})
    assert c.fence_brokers(unclean, [1]).records[1:] == [PartitionChangeRecord(0, TID, isr=(2,), leader=2)]
    by_broker = _controller(**{"unclean.leader.election.enable": "true"})
    assert by_broker.fence_brokers(clean, [1]).records[1:] == [PartitionChangeRecord(0, TID, isr=(2,), leader=2)]
    # With no leader and unclean election enabled, a returning replica outside the ISR may lead.
    offline = _image(((1, 2), (1,), NO_LEADER), configs={"unclean.leader.election.enable": "true"})
    offline = offline.apply([BrokerRegistrationChangeRecord(2, 102, 1)])
    res = c.broker_heartbeat(offline, {"broker_id": 2, "broker_epoch": 102, "current_metadata_offset": 300}, 301)
    assert res.records[1:] == [PartitionChangeRecord(0, TID, isr=(2,), leader=2)]


def _hb(broker: int, offset: int, **flags: bool) -> dict[str, Any]:
    return {"broker_id": broker, "broker_epoch": 100 + broker, "current_metadata_offset": offset,
            "want_shut_down": flags.get("shut_down", False), "want_fence": flags.get("fence", False)}


def test_controlled_shutdown_moves_leadership_then_waits_for_the_other_brokers() -> None:
    c = _controller()
    image = _image(((1, 2, 3), (1, 2, 3), 1), ((2, 1), (2, 1), 2))
    for b in (2, 3, 4):  # the other live brokers have applied the image (offset 200)
        image = image.apply(c.broker_heartbeat(image, _hb(b, 200), 201).records)
    res = c.broker_heartbeat(image, _hb(1, 200, shut_down=True), 301)
    # Controlled shutdown, not fenced yet: leadership moves and broker 1 leaves every ISR in the
    # same batch (offsets 301-303)...
    assert res.records == [
        BrokerRegistrationChangeRecord(1, 101, 0, 1),
        PartitionChangeRecord(0, TID, isr=(2, 3), leader=2),
        PartitionChangeRecord(1, TID, isr=(2,)),
    ]
    assert not res.response["should_shut_down"] and not res.response["is_fenced"]
    image = image.apply(res.records, last_offset=303)
    assert image.brokers[1].in_controlled_shutdown and not image.brokers[1].fenced
    # ...and the shutdown is granted only once every other live broker has applied offset 303.
    assert not c.broker_heartbeat(image, _hb(1, 303, shut_down=True), 304).response["should_shut_down"]
    for b, offset in ((2, 303), (3, 310), (4, 302)):
        assert c.broker_heartbeat(image, _hb(b, offset), 304).records == []
    waiting = c.broker_heartbeat(image, _hb(1, 303, shut_down=True), 304)
    assert waiting.records == [] and not waiting.response["should_shut_down"], "broker 4 is behind"
    c.broker_heartbeat(image, _hb(4, 303), 304)
    granted = c.broker_heartbeat(image, _hb(1, 303, shut_down=True), 304)
    assert granted.records == [BrokerRegistrationChangeRecord(1, 101, 1, 0)]
    assert granted.response["should_shut_down"] and granted.response["is_fenced"]
    assert NO_LEADER_CHANGE == PartitionChangeRecord(1, TID).leader


def test_controlled_shutdown_of_the_last_live_broker_ends_at_once() -> None:
    c = _controller()
    image = _image(((1, 2), (1, 2), 1))
    image = image.apply([BrokerRegistrationChangeRecord(b, 100 + b, 1) for b in (2, 3, 4)])
    res = c.broker_heartbeat(image, _hb(1, 200, shut_down=True), 301)
    assert res.response["should_shut_down"]
    # No other live broker has to learn of it first: fenced in the batch that enters it.
    assert res.records == [
        BrokerRegistrationChangeRecord(1, 101, 1, 1),
        PartitionChangeRecord(0, TID, isr=(2,), leader=NO_LEADER),
    ]


def test_controlled_shutdown_after_a_controller_failover_waits_from_the_current_offset() -> None:
    image = _image(((2, 1), (2, 1), 2)).apply([BrokerRegistrationChangeRecord(1, 101, 0, 1)], last_offset=250)
    fresh = _controller()  # became active after broker 1 entered controlled shutdown
    for b in (2, 3, 4):
        fresh.broker_heartbeat(image, _hb(b, 250), 260)
    first = fresh.broker_heartbeat(image, _hb(1, 250, shut_down=True), 260)
    assert not first.response["should_shut_down"], "waits for offset 259, the end of the log it knows"
    for b in (2, 3, 4):
        fresh.broker_heartbeat(image, _hb(b, 259), 260)
    assert fresh.broker_heartbeat(image, _hb(1, 259, shut_down=True), 260).response["should_shut_down"]
    # A broker in controlled shutdown that asks to be fenced is shut down at once.
    other = _controller()
    assert other.broker_heartbeat(image, _hb(1, 250, fence=True), 260).response["should_shut_down"]
