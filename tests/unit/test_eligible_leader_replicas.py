"""Eligible leader replicas (KIP-966): the partition change rules (a table of cases modelled on
Kafka's PartitionChangeBuilderTest), the records' bytes, the image, and the controller flows that
use them (fencing, unfencing, an unclean restart, AlterPartition, min.insync.replicas changes,
ElectLeaders), with ``eligible.leader.replicas.version`` finalized at 1 by a FeatureLevelRecord."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from zurau.config import BrokerConfig
from zurau.metadata.controller.partition_change import (
    ELR_FEATURE,
    ONLINE,
    PREFERRED,
    UNCLEAN,
    build_change,
    elr_enabled,
)
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import MetadataImage, PartitionRegistration
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    BROKER_RESOURCE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from zurau.metadata.snapshot import decode_snapshot, encode_snapshot

TID = uuid.UUID(int=0xE1E)


def _p(
    isr: tuple[int, ...],
    leader: int,
    elr: tuple[int, ...] = (),
    lke: tuple[int, ...] = (),
    replicas: tuple[int, ...] = (1, 2, 3),
) -> PartitionRegistration:
    return PartitionRegistration(replicas, isr, leader, 5, 7, elr=elr, last_known_elr=lke)


# ------------------------------------------------------------------ the rules, case by case

# (name, partition, target ISR (None: unchanged), acceptable brokers, min ISR, election, unclean
#  shutdown, expected record fields (None: no record))
CASES: list[
    tuple[
        str,
        PartitionRegistration,
        tuple[int, ...] | None,
        set[int],
        int,
        str,
        tuple[int, ...],
        dict[str, Any] | None,
    ]
] = [
    ("shrink at min ISR: no ELR", _p((1, 2, 3), 1), (1, 2), {1, 2}, 2, ONLINE, (), {"isr": (1, 2)}),
    (
        "shrink below min ISR: the leaver joins the ELR",
        _p((1, 2), 1),
        (1,),
        {1},
        2,
        ONLINE,
        (),
        {"isr": (1,), "eligible_leader_replicas": (2,)},
    ),
    (
        "two leave at once below min ISR: both eligible",
        _p((1, 2, 3), 1),
        (1,),
        {1},
        2,
        ONLINE,
        (),
        {"isr": (1,), "eligible_leader_replicas": (2, 3)},
    ),
    (
        "the last ISR member goes: empty ISR, ELR of both, last known leader",
        _p((1,), 1, elr=(2,)),
        (),
        set(),
        2,
        ONLINE,
        (),
        {"isr": (), "leader": NO_LEADER, "eligible_leader_replicas": (1, 2), "last_known_elr": (1,)},
    ),
    (
        "an ELR member comes back with the ISR empty: it leads and is the whole ISR",
        _p((), NO_LEADER, elr=(1, 2), lke=(1,)),
        None,
        {2},
        2,
        ONLINE,
        (),
        {"isr": (2,), "leader": 2, "eligible_leader_replicas": (1,), "last_known_elr": ()},
    ),
    (
        "an ELR member is not elected while the ISR is not empty",
        _p((1,), NO_LEADER, elr=(2,)),
        None,
        {2},
        2,
        ONLINE,
        (),
        None,
    ),
    (
        "ISR back at min ISR: ELR and last known ELR cleared",
        _p((2,), 2, elr=(1,), lke=(3,)),
        (2, 1),
        {1, 2},
        2,
        ONLINE,
        (),
        {"isr": (2, 1), "eligible_leader_replicas": (), "last_known_elr": ()},
    ),
    (
        "an unclean restart leaves the ELR",
        _p((), NO_LEADER, elr=(1, 2), lke=(1,)),
        (),
        {2},
        2,
        ONLINE,
        (1,),
        {"leader": 2, "isr": (2,), "eligible_leader_replicas": (), "last_known_elr": ()},
    ),
    (
        "an unclean restart of the only ELR member: nobody left, the last known leader waits",
        _p((), NO_LEADER, elr=(1,), lke=(1,)),
        (),
        set(),
        2,
        ONLINE,
        (1,),
        {"eligible_leader_replicas": ()},
    ),
    (
        "ISR and ELR empty: the live last known leader is elected, uncleanly",
        _p((), NO_LEADER, lke=(1,)),
        None,
        {1},
        2,
        ONLINE,
        (),
        {"isr": (1,), "leader": 1, "last_known_elr": ()},
    ),
    (
        "ISR and ELR empty, last known leader down: nobody",
        _p((), NO_LEADER, lke=(1,)),
        None,
        {2},
        2,
        ONLINE,
        (),
        None,
    ),
    (
        "unclean election when allowed, ELR empty: a live replica, ISR reset",
        _p((), NO_LEADER, lke=(1,)),
        None,
        {3},
        2,
        UNCLEAN,
        (),
        {"isr": (3,), "leader": 3, "last_known_elr": ()},
    ),
    (
        "unclean election prefers the ELR (a clean choice)",
        _p((), NO_LEADER, elr=(2,), lke=(1,)),
        None,
        {2, 3},
        2,
        UNCLEAN,
        (),
        {"isr": (2,), "leader": 2, "eligible_leader_replicas": (), "last_known_elr": ()},
    ),
    (
        "preferred election picks the first replica when valid",
        _p((1, 2, 3), 2),
        None,
        {1, 2, 3},
        2,
        PREFERRED,
        (),
        {"leader": 1},
    ),
    (
        "the leader leaves, another ISR member leads; ELR below min",
        _p((1, 2), 1),
        (2,),
        {2},
        2,
        ONLINE,
        (),
        {"isr": (2,), "leader": 2, "eligible_leader_replicas": (1,)},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_partition_change_rules(case: tuple[Any, ...]) -> None:
    _name, p, target_isr, acceptable, min_isr, election, unclean, expected = case
    change = build_change(
        p,
        TID,
        0,
        acceptable.__contains__,
        target_isr=target_isr,
        min_isr=min_isr,
        elr=True,
        election=election,
        unclean_shutdown=unclean,
    )
    if expected is None:
        assert change is None
        return
    assert change == PartitionChangeRecord(0, TID, **expected)
    after = p.merge(change)
    assert not set(after.isr) & set(after.elr), "ISR and ELR never overlap"
    assert after.leader == NO_LEADER or after.leader in after.isr


def test_without_elr_the_isr_never_empties_and_no_elr_is_written() -> None:
    p = _p((1,), 1)
    change = build_change(p, TID, 0, lambda b: False, target_isr=(), min_isr=2, elr=False)
    assert change == PartitionChangeRecord(0, TID, leader=NO_LEADER)  # 1 stays the ISR
    shrink = build_change(_p((1, 2), 1), TID, 0, lambda b: b == 1, target_isr=(1,), min_isr=2, elr=False)
    assert shrink == PartitionChangeRecord(0, TID, isr=(1,))


def test_a_partition_change_that_changes_nothing_is_no_record() -> None:
    assert build_change(_p((1, 2), 1), TID, 0, lambda b: True, min_isr=2, elr=True) is None
    assert build_change(_p((1,), 1, elr=(2,)), TID, 0, lambda b: b == 1, min_isr=2, elr=True) is None
    assert build_change(_p((1, 2), 1), TID, 0, lambda b: True, min_isr=2, elr=False) is None
    assert NO_LEADER_CHANGE == -2


# ------------------------------------------------------------------ records and image


@pytest.mark.parametrize(
    "record",
    [
        PartitionRecord(0, TID, (1, 2, 3), (1,), 1, 3, 4),
        PartitionRecord(
            2, TID, (1, 2, 3), (1,), 1, 3, 4, eligible_leader_replicas=(2, 3), last_known_elr=(3,)
        ),
        PartitionRecord(2, TID, (1, 2, 3), (), -1, 3, 4, last_known_elr=(1,)),
        PartitionChangeRecord(
            0, TID, isr=(), leader=NO_LEADER, eligible_leader_replicas=(1, 2), last_known_elr=(1,)
        ),
        PartitionChangeRecord(0, TID, eligible_leader_replicas=()),
        PartitionChangeRecord(0, TID, last_known_elr=()),
        ClearElrRecord(""),
        ClearElrRecord("orders"),
    ],
)
def test_records_round_trip(record: Any) -> None:
    assert decode_record(encode_record(record)) == record


def test_records_without_elr_keep_their_version_0_bytes() -> None:
    plain = encode_record(PartitionRecord(0, TID, (1, 2), (1, 2), 1))
    change = encode_record(PartitionChangeRecord(0, TID, isr=(1,)))
    assert plain[:3] == bytes([1, 3, 0]) and change[:3] == bytes([1, 5, 0])
    with_elr = encode_record(PartitionChangeRecord(0, TID, isr=(1,), eligible_leader_replicas=(2,)))
    assert with_elr[:3] == bytes([1, 5, 2])


def _brokers_image(min_isr: str = "2", elr: bool = True, extra: list[Any] | None = None) -> MetadataImage:
    """Brokers 1-3 live (epoch 100 + id); topic ``t`` (RF 3, min ISR ``min_isr``) with partition
    0 led by 1, ISR {1,2,3}; ELR finalized at 1 unless ``elr`` is False."""
    records: list[Any] = [FeatureLevelRecord(ELR_FEATURE, 1 if elr else 0)]
    records += [
        RegisterBrokerRecord(
            b, uuid.UUID(int=b), 100 + b, (BrokerEndpoint("PLAINTEXT", "h", 9000 + b),), fenced=False
        )
        for b in (1, 2, 3)
    ]
    records += [TopicRecord("t", TID), ConfigRecord(TOPIC_RESOURCE, "t", "min.insync.replicas", min_isr)]
    records.append(PartitionRecord(0, TID, (1, 2, 3), (1, 2, 3), 1, 5, 7))
    return MetadataImage("c").apply(records + (extra or []), last_offset=200)


def _part(image: MetadataImage) -> PartitionRegistration:
    t = image.get("t")
    assert t is not None
    return t.partitions[0]


def test_image_and_snapshot_keep_elr_and_clear_elr_record_empties_it() -> None:
    image = _brokers_image(
        extra=[PartitionChangeRecord(0, TID, isr=(1,), eligible_leader_replicas=(2, 3), last_known_elr=(3,))]
    )
    p = _part(image)
    assert (p.isr, p.elr, p.last_known_elr, p.partition_epoch) == ((1,), (2, 3), (3,), 8)
    snapshot = decode_snapshot(encode_snapshot(image, 0))
    restored = MetadataImage("c").apply(snapshot, last_offset=image.offset)
    assert _part(restored) == p
    cleared = image.apply([ClearElrRecord("")])
    assert (_part(cleared).elr, _part(cleared).last_known_elr, _part(cleared).partition_epoch) == ((), (), 9)
    assert _part(image.apply([ClearElrRecord("t")])).elr == ()
    assert (
        image.apply([ClearElrRecord("")]).apply([ClearElrRecord("")]).get("t").partitions[0].partition_epoch
        == 9
    )  # type: ignore[union-attr]


def test_elr_enabled_follows_the_finalized_feature() -> None:
    assert elr_enabled(_brokers_image())
    assert not elr_enabled(_brokers_image(elr=False))
    assert not elr_enabled(MetadataImage("c"))


# ------------------------------------------------------------------ controller flows


def _controller() -> QuorumController:
    return QuorumController(BrokerConfig.from_props({"node.id": "1"}), lambda: (999,), rng=random.Random(5))


def _hb(broker: int, epoch: int, **flags: Any) -> dict[str, Any]:
    return {"broker_id": broker, "broker_epoch": epoch, "current_metadata_offset": 10_000, **flags}


def test_the_kafka_sequence_a_clean_elr_member_is_elected_after_the_whole_isr_is_lost() -> None:
    """ISR {1,2,3}, min ISR 2: 3 and 2 shut down (fenced), leader 1 fenced; 2 restarts cleanly
    and is elected from the ELR with no unclean election; 3 coming back clears the ELR."""
    c = _controller()
    image = _brokers_image()
    image = image.apply(c.fence_brokers(image, [3]).records)
    assert (_part(image).isr, _part(image).elr) == ((1, 2), ())
    image = image.apply(c.fence_brokers(image, [2]).records)
    assert (_part(image).isr, _part(image).elr) == ((1,), (2,))
    image = image.apply(c.fence_brokers(image, [1]).records)
    p = _part(image)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (NO_LEADER, (), (1, 2), (1,))
    # 2 restarts after a clean shutdown: its marker names its last epoch (102).
    reg = c.register_broker(
        image,
        {
            "broker_id": 2,
            "incarnation_id": uuid.UUID(int=22),
            "cluster_id": "c",
            "listeners": [],
            "previous_broker_epoch": 102,
        },
        300,
    )
    image = image.apply(reg.records, last_offset=300)
    assert _part(image).elr == (1, 2), "a clean restart keeps its ELR place"
    image = image.apply(c.broker_heartbeat(image, _hb(2, 300), 301).records, last_offset=301)
    p = _part(image)
    assert (p.leader, p.isr, p.elr, p.last_known_elr, p.leader_epoch) == (2, (2,), (1,), (), 7)
    # 3 comes back and its leader adds it to the ISR: back at min ISR, the ELR is cleared.
    reg = c.register_broker(
        image,
        {
            "broker_id": 3,
            "incarnation_id": uuid.UUID(int=33),
            "cluster_id": "c",
            "listeners": [],
            "previous_broker_epoch": 103,
        },
        400,
    )
    image = image.apply(reg.records, last_offset=400)
    image = image.apply(c.broker_heartbeat(image, _hb(3, 400), 401).records, last_offset=401)
    p = _part(image)
    alter = c.alter_partition(
        image,
        {
            "broker_id": 2,
            "broker_epoch": 300,
            "topics": [
                {
                    "topic_id": TID,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": p.leader_epoch,
                            "partition_epoch": p.partition_epoch,
                            "new_isr_with_epochs": [
                                {"broker_id": 2, "broker_epoch": 300},
                                {"broker_id": 3, "broker_epoch": 400},
                            ],
                        }
                    ],
                }
            ],
        },
    )
    image = image.apply(alter.records, last_offset=402)
    assert (_part(image).isr, _part(image).elr, _part(image).leader) == ((2, 3), (), 2)


def test_an_unclean_restart_is_not_elected_from_the_elr() -> None:
    c = _controller()
    image = _brokers_image()
    for b in (3, 2, 1):
        image = image.apply(c.fence_brokers(image, [b]).records)
    assert _part(image).elr == (1, 2)
    # 2 was killed -9: no marker, previous_broker_epoch -1.
    reg = c.register_broker(
        image,
        {
            "broker_id": 2,
            "incarnation_id": uuid.UUID(int=22),
            "cluster_id": "c",
            "listeners": [],
            "previous_broker_epoch": -1,
        },
        300,
    )
    image = image.apply(reg.records, last_offset=300)
    assert (_part(image).elr, _part(image).leader) == ((1,), NO_LEADER)
    image = image.apply(c.broker_heartbeat(image, _hb(2, 300), 301).records, last_offset=301)
    assert (_part(image).leader, _part(image).isr) == (NO_LEADER, ()), "2 is live but not eligible"
    # 1 restarts cleanly: elected from the ELR.
    reg = c.register_broker(
        image,
        {
            "broker_id": 1,
            "incarnation_id": uuid.UUID(int=11),
            "cluster_id": "c",
            "listeners": [],
            "previous_broker_epoch": 101,
        },
        400,
    )
    image = image.apply(reg.records, last_offset=400)
    image = image.apply(c.broker_heartbeat(image, _hb(1, 400), 401).records, last_offset=401)
    assert (_part(image).leader, _part(image).isr, _part(image).elr) == (1, (1,), ())


def test_a_wrong_previous_epoch_is_an_unclean_restart_only_with_elr() -> None:
    c = _controller()
    image = _brokers_image(elr=False)
    for b in (3, 2, 1):
        image = image.apply(c.fence_brokers(image, [b]).records)
    assert (_part(image).isr, _part(image).elr) == ((1,), ()), "without ELR the last ISR member stays"
    reg = c.register_broker(
        image,
        {
            "broker_id": 1,
            "incarnation_id": uuid.UUID(int=11),
            "cluster_id": "c",
            "listeners": [],
            "previous_broker_epoch": -1,
        },
        300,
    )
    image = image.apply(reg.records, last_offset=300)
    image = image.apply(c.broker_heartbeat(image, _hb(1, 300), 301).records, last_offset=301)
    assert (_part(image).leader, _part(image).isr) == (1, (1,))


def test_a_min_isr_change_clears_the_elrs() -> None:
    c = _controller()
    image = _brokers_image()
    image = image.apply(c.fence_brokers(image, [3]).records)
    image = image.apply(c.fence_brokers(image, [2]).records)
    assert _part(image).elr == (2,)
    topic = c.incremental_alter_configs(
        image,
        [
            {
                "resource_type": TOPIC_RESOURCE,
                "resource_name": "t",
                "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "3"}],
            }
        ],
        False,
    )
    assert topic.records[-1] == ClearElrRecord("t")
    assert _part(image.apply(topic.records)).elr == ()
    cluster = c.incremental_alter_configs(
        image,
        [
            {
                "resource_type": BROKER_RESOURCE,
                "resource_name": "",
                "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "1"}],
            }
        ],
        False,
    )
    assert cluster.records[-1] == ClearElrRecord("")
    other = c.incremental_alter_configs(
        image,
        [
            {
                "resource_type": TOPIC_RESOURCE,
                "resource_name": "t",
                "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
            }
        ],
        False,
    )
    assert not any(isinstance(r, ClearElrRecord) for r in other.records)
    off = _brokers_image(elr=False)
    plain = c.incremental_alter_configs(
        off,
        [
            {
                "resource_type": TOPIC_RESOURCE,
                "resource_name": "t",
                "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "3"}],
            }
        ],
        False,
    )
    assert not any(isinstance(r, ClearElrRecord) for r in plain.records)


def test_unclean_election_request_prefers_an_elr_member() -> None:
    c = _controller()
    image = _brokers_image()
    for b in (3, 2, 1):
        image = image.apply(c.fence_brokers(image, [b]).records)
    image = image.apply([BrokerRegistrationChangeRecord(3, 103, -1)])  # 3 unfenced, not eligible
    image = image.apply([BrokerRegistrationChangeRecord(2, 102, -1)])  # 2 unfenced and in the ELR
    result = c.elect_leaders(image, 1, [{"topic": "t", "partitions": [0]}])
    image = image.apply(result.records)
    assert (_part(image).leader, _part(image).isr) == (2, (2,))


def test_describe_topic_partitions_answers_the_elr_of_the_image() -> None:
    from zurau.broker.handlers.describe_topic_partitions import _partition_entry

    image = _brokers_image(
        extra=[
            PartitionChangeRecord(
                0, TID, isr=(), leader=NO_LEADER, eligible_leader_replicas=(2,), last_known_elr=(1,)
            )
        ]
    )
    entry = _partition_entry(image, 0, _part(image))
    assert (entry["isr_nodes"], entry["eligible_leader_replicas"], entry["last_known_elr"]) == ([], [2], [1])
    plain = _partition_entry(_brokers_image(), 0, _part(_brokers_image()))
    assert (plain["eligible_leader_replicas"], plain["last_known_elr"]) == ([], [])


def test_the_clean_shutdown_marker_names_the_broker_epoch(tmp_path: Any) -> None:
    from zurau.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager, read_clean_shutdown_epoch

    dirs = [tmp_path / "a", tmp_path / "b"]
    assert read_clean_shutdown_epoch(dirs) == -1  # never shut down cleanly
    manager = LogManager(dirs, lambda: 0)
    manager.broker_epoch = 42
    manager.close()
    assert (dirs[0] / CLEAN_SHUTDOWN_FILE).read_text() == '{"version": 0, "brokerEpoch": 42}'
    assert read_clean_shutdown_epoch(dirs) == 42
    (dirs[1] / CLEAN_SHUTDOWN_FILE).write_text('{"version": 0, "brokerEpoch": 41}')
    assert read_clean_shutdown_epoch(dirs) == -1, "dirs that disagree prove nothing"
    LogManager(dirs, lambda: 0)  # loading removes the markers: a kill -9 from now on is unclean
    assert read_clean_shutdown_epoch(dirs) == -1


# ------------------------------------------------------------------ turning ELR on and off


def _update_elr(image: MetadataImage, level: int) -> list[Any]:
    """The records of an UpdateFeatures setting the ELR level, as the controller writes them (its
    own ``min.insync.replicas`` is 2)."""
    from zurau.metadata.controller.config_control import elr_transition_records

    feature = [FeatureLevelRecord(ELR_FEATURE, level)] if image.features.get(ELR_FEATURE, 0) != level else []
    return feature + elr_transition_records(image, feature, 2)


def test_turning_elr_off_clears_every_elr_and_on_moves_min_isr_to_the_cluster_level() -> None:
    image = _brokers_image(extra=[PartitionChangeRecord(0, TID, isr=(1,), eligible_leader_replicas=(2, 3))])
    assert _update_elr(image, 0) == [FeatureLevelRecord(ELR_FEATURE, 0), ClearElrRecord("")]

    off = _brokers_image(
        elr=False,
        extra=[
            ConfigRecord(BROKER_RESOURCE, "2", "min.insync.replicas", "3"),
            ConfigRecord(BROKER_RESOURCE, "2", "log.retention.ms", "1000"),
        ],
    )
    assert _update_elr(off, 1) == [
        FeatureLevelRecord(ELR_FEATURE, 1),
        ConfigRecord(BROKER_RESOURCE, "2", "min.insync.replicas", None),  # the other override stays
        ConfigRecord(BROKER_RESOURCE, "", "min.insync.replicas", "2"),  # this controller's value
    ]
    with_default = off.apply([ConfigRecord(BROKER_RESOURCE, "", "min.insync.replicas", "3")])
    assert _update_elr(with_default, 1)[-1] == ConfigRecord(BROKER_RESOURCE, "2", "min.insync.replicas", None)
    assert _update_elr(_brokers_image(), 1) == []  # already on: nothing to write
