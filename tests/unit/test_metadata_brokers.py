"""Brokers in the metadata (KRaft): registration records, their replay into the image, the
controller's registration / heartbeat / fencing state machine, rack-striped replica placement,
broker sessions, and the handlers that show brokers to clients.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

import pytest

from zurau.broker.handlers import describe_cluster, find_coordinator, metadata
from zurau.broker.request_context import RequestContext
from zurau.config import BrokerConfig
from zurau.metadata.controller.broker_heartbeat_manager import BrokerHeartbeatManager
from zurau.metadata.controller.quorum_controller import QuorumController
from zurau.metadata.image import BrokerRegistration, MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from zurau.protocol import errors as E
from zurau.protocol.codec import compile_struct
from zurau.protocol.frame import RequestHeader
from zurau.protocol.primitives import DecodeError
from zurau.protocol.schemas.metadata import SCHEMA as METADATA
from zurau.protocol.schemas.metadata import TOPIC

CLUSTER = "test-cluster"
EMPTY = MetadataImage(CLUSTER)
INC = uuid.UUID(int=0xAB)


def _inc(i: int) -> uuid.UUID:
    return uuid.UUID(int=0x1000 + i)


def _controller(seed: int = 7) -> QuorumController:
    cfg = BrokerConfig.from_props({"node.id": "1"})
    ids = iter(uuid.UUID(int=i) for i in range(1, 100_000))
    # brokers() is the single-node fallback: it must not be used once brokers are registered.
    return QuorumController(cfg, lambda: (999,), rng=random.Random(seed), new_topic_id=lambda: next(ids))


def _register(broker_id: int, epoch: int, *, rack: str | None = None, fenced: bool = False,
              listeners: tuple[BrokerEndpoint, ...] | None = None) -> RegisterBrokerRecord:
    eps = listeners if listeners is not None else (
        BrokerEndpoint("PLAINTEXT", f"b{broker_id}", 9000 + broker_id, 0),
        BrokerEndpoint("INTERNAL", f"i{broker_id}", 19000 + broker_id, 0),
    )
    return RegisterBrokerRecord(broker_id, _inc(broker_id), epoch, eps, rack=rack, fenced=fenced)


def _cluster(*brokers: tuple[int, str | None], fenced: tuple[int, ...] = ()) -> MetadataImage:
    """An image with the given (id, rack) brokers registered, unfenced unless listed."""
    return EMPTY.apply(
        [_register(b, 100 + b, rack=rack, fenced=b in fenced) for b, rack in brokers], last_offset=200
    )


def _topic(name: str, partitions: int = -1, rf: int = -1,
           assignments: list[dict[str, object]] | None = None) -> dict[str, object]:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": assignments or [], "configs": []}


def _parts(records: list[MetadataRecord]) -> list[PartitionRecord]:
    return [r for r in records if isinstance(r, PartitionRecord)]


# ---------------------------------------------------------------------------------- records


@pytest.mark.parametrize(
    "record",
    [
        RegisterBrokerRecord(1, uuid.uuid4(), 42),
        RegisterBrokerRecord(
            7,
            uuid.uuid4(),
            2**40,
            (BrokerEndpoint("PLAINTEXT", "host-a", 9092, 0), BrokerEndpoint("SSL", "host-a", 65535, 1)),
            (BrokerFeature("metadata.version", 1, 25), BrokerFeature("kraft.version", 0, 1)),
            "rack-1",
            fenced=False,
            in_controlled_shutdown=True,
            is_migrating_zk_broker=True,
            log_dirs=(uuid.uuid4(), uuid.uuid4()),
        ),
        UnregisterBrokerRecord(3, 99),
        FenceBrokerRecord(3, 99),
        UnfenceBrokerRecord(3, 99),
        BrokerRegistrationChangeRecord(3, 99),
        BrokerRegistrationChangeRecord(3, 99, -1, 0),
        BrokerRegistrationChangeRecord(3, 99, 1, 1, (uuid.uuid4(),)),
    ],
)
def test_broker_records_round_trip(record: MetadataRecord) -> None:
    assert decode_record(encode_record(record)) == record


def test_broker_record_bytes_are_kafkas() -> None:
    # frame 1 | type | version | flexible body | empty tagged-field section
    epoch = "0000000000000007"
    assert encode_record(UnregisterBrokerRecord(3, 7)).hex() == "010100" + "00000003" + epoch + "00"
    assert encode_record(FenceBrokerRecord(3, 7)).hex() == "010700" + "00000003" + epoch + "00"
    assert encode_record(UnfenceBrokerRecord(3, 7)).hex() == "010800" + "00000003" + epoch + "00"
    # BrokerRegistrationChangeRecord v2: fenced (tag 0) and in_controlled_shutdown (tag 1) are
    # tagged int8s, written only when not 0.
    assert encode_record(BrokerRegistrationChangeRecord(3, 7)).hex() == "011102" + "00000003" + epoch + "00"
    assert encode_record(BrokerRegistrationChangeRecord(3, 7, -1)).hex() == (
        "011102" + "00000003" + epoch + "01" + "00" + "01" + "ff"
    )
    assert encode_record(BrokerRegistrationChangeRecord(3, 7, 1, 1)).hex() == (
        "011102" + "00000003" + epoch + "02" + "00" + "01" + "01" + "01" + "01" + "01"
    )
    # RegisterBrokerRecord v3
    inc = uuid.UUID("00112233445566778899aabbccddeeff")
    rec = RegisterBrokerRecord(1, inc, 5, (BrokerEndpoint("PLAINTEXT", "h", 9092, 0),), rack="r")
    assert encode_record(rec).hex() == (
        "010003"
        "00000001"  # broker id
        "00"  # is_migrating_zk_broker (v2+)
        + inc.hex
        + "0000000000000005"  # broker epoch
        "02"  # one endpoint
        "0a" + b"PLAINTEXT".hex() + "0268" + "2384" + "0000" + "00"  # name, host, port, protocol, tags
        + "01"  # no features
        "0272"  # rack "r"
        "01"  # fenced
        "00"  # in_controlled_shutdown (v1+)
        "00"  # no tagged fields (log_dirs empty)
    )


def test_register_broker_record_older_versions_decode_with_defaults() -> None:
    inc = uuid.UUID(int=1)
    # v0: no is_migrating_zk_broker, no in_controlled_shutdown, no log_dirs
    v0 = bytes.fromhex("010000" "00000004" + inc.hex + "0000000000000009" "01" "01" "00" "00" "00")
    assert decode_record(v0) == RegisterBrokerRecord(4, inc, 9, fenced=False)
    newer = bytes.fromhex("010004") + v0[3:]
    with pytest.raises(DecodeError):
        decode_record(newer)


# ---------------------------------------------------------------------------------- image


def test_image_replays_broker_registrations() -> None:
    reg = _register(1, 10, rack="a", fenced=True)
    image = EMPTY.apply([reg], last_offset=10)
    assert EMPTY.brokers == {}
    b = image.brokers[1]
    assert b == BrokerRegistration(1, _inc(1), 10, reg.endpoints, "a", True, False)
    assert image.live_brokers() == [], "a fenced broker is not live"
    assert image.endpoint(1, "INTERNAL") == ("i1", 19001)
    assert image.endpoint(1, "NOPE") is None and image.endpoint(2, "PLAINTEXT") is None

    unfenced = image.apply([BrokerRegistrationChangeRecord(1, 10, -1)])
    assert unfenced.live_brokers() == [replace_fenced(b, False)]
    assert image.brokers[1].fenced, "the older image is unchanged"

    # changes naming another epoch are stale: ignored
    stale = unfenced.apply([FenceBrokerRecord(1, 9), BrokerRegistrationChangeRecord(1, 11, 1), UnregisterBrokerRecord(1, 3)])
    assert stale.brokers == unfenced.brokers
    # ... and so are changes to unknown brokers
    assert unfenced.apply([UnfenceBrokerRecord(5, 1)]).brokers == unfenced.brokers

    fenced = unfenced.apply([FenceBrokerRecord(1, 10)])
    assert fenced.brokers[1].fenced
    assert fenced.apply([UnfenceBrokerRecord(1, 10)]).brokers[1].live

    shutting = unfenced.apply([BrokerRegistrationChangeRecord(1, 10, 0, 1)])
    assert not shutting.brokers[1].fenced and shutting.brokers[1].in_controlled_shutdown
    assert shutting.live_brokers() == []

    # a new registration of the id replaces the old one entirely
    again = shutting.apply([RegisterBrokerRecord(1, _inc(50), 30, (BrokerEndpoint("X", "x", 1, 0),))])
    assert again.brokers[1].epoch == 30 and not again.brokers[1].in_controlled_shutdown
    assert again.brokers[1].incarnation_id == _inc(50) and again.brokers[1].rack is None

    gone = unfenced.apply([UnregisterBrokerRecord(1, 10)])
    assert gone.brokers == {}


def replace_fenced(b: BrokerRegistration, fenced: bool) -> BrokerRegistration:
    from dataclasses import replace

    return replace(b, fenced=fenced)


def test_image_live_brokers_sorted_and_topics_kept() -> None:
    tid = uuid.UUID(int=77)
    image = EMPTY.apply([TopicRecord("t", tid), PartitionRecord(0, tid, (1,), (1,), 1)])
    image = image.apply([_register(3, 5), _register(1, 6), _register(2, 7, fenced=True)])
    assert [b.id for b in image.live_brokers()] == [1, 3]
    assert image.get("t") is not None and image.get("t").partitions[0].leader == 1  # type: ignore[union-attr]


def test_image_rejects_unknown_change_values() -> None:
    image = EMPTY.apply([_register(1, 10)])
    with pytest.raises(ValueError):
        image.apply([BrokerRegistrationChangeRecord(1, 10, 2)])
    with pytest.raises(ValueError):
        image.apply([BrokerRegistrationChangeRecord(1, 10, 0, -1)])


def test_address_for_listener_falls_back_to_first_endpoint() -> None:
    b = EMPTY.apply([_register(1, 1)]).brokers[1]
    assert b.address_for("INTERNAL") == ("i1", 19001)
    assert b.address_for("") == ("b1", 9001)
    assert b.address_for("CONTROLLER") == ("b1", 9001)
    bare = EMPTY.apply([_register(2, 1, listeners=())]).brokers[2]
    assert bare.address_for("PLAINTEXT") is None


# ---------------------------------------------------------------------------------- registration


def _registration(broker_id: int = 1, incarnation: uuid.UUID = INC, **over: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "broker_id": broker_id,
        "cluster_id": CLUSTER,
        "incarnation_id": incarnation,
        "listeners": [{"name": "PLAINTEXT", "host": "h1", "port": 9092, "security_protocol": 0}],
        "features": [{"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 25}],
        "rack": "r1",
        "is_migrating_zk_broker": False,
        "log_dirs": [],
        "previous_broker_epoch": -1,
    }
    req.update(over)
    return req


def test_register_broker_writes_a_fenced_registration_at_the_next_offset() -> None:
    c = _controller()
    res = c.register_broker(EMPTY, _registration(), next_offset=41)
    assert res.response == {"throttle_time_ms": 0, "error_code": 0, "broker_epoch": 41}
    assert res.records == [
        RegisterBrokerRecord(
            1,
            INC,
            41,
            (BrokerEndpoint("PLAINTEXT", "h1", 9092, 0),),
            (BrokerFeature("metadata.version", 1, 25),),
            "r1",
            fenced=True,
        )
    ]
    image = EMPTY.apply(res.records, last_offset=41)
    assert image.brokers[1].epoch == 41 and image.brokers[1].fenced and image.brokers[1].rack == "r1"

    # the same incarnation again (a retried request): the same epoch, nothing written
    again = c.register_broker(image, _registration(), next_offset=50, is_alive=lambda _: True)
    assert again.records == [] and again.response["broker_epoch"] == 41


def test_register_broker_refusals() -> None:
    c = _controller()
    image = EMPTY.apply(c.register_broker(EMPTY, _registration(), 10).records, last_offset=10)
    unfenced = image.apply([BrokerRegistrationChangeRecord(1, 10, -1)])
    other = _registration(incarnation=_inc(9))

    res = c.register_broker(unfenced, other, 20, cluster_id_ok=False)
    assert res.records == [] and res.response == {
        "throttle_time_ms": 0, "error_code": E.InconsistentClusterIdError.code, "broker_epoch": -1,
    }
    dup = c.register_broker(unfenced, other, 20, is_alive=lambda b: b == 1)
    assert dup.records == [] and dup.response["error_code"] == E.DuplicateBrokerRegistrationError.code
    # the old incarnation's session expired: the new one replaces it
    replaced = c.register_broker(unfenced, other, 20, is_alive=lambda _: False)
    assert replaced.response["broker_epoch"] == 20
    after = unfenced.apply(replaced.records)
    assert after.brokers[1].incarnation_id == _inc(9) and after.brokers[1].fenced
    # a fenced registration has no valid session (Kafka): replaced even while heartbeating
    assert c.register_broker(image, other, 20, is_alive=lambda _: True).response["error_code"] == 0

    zk = c.register_broker(EMPTY, _registration(is_migrating_zk_broker=True), 5)
    assert zk.response["error_code"] == E.BrokerIdNotRegisteredError.code and zk.records == []

    finalized = EMPTY.apply([FeatureLevelRecord("metadata.version", 30)])
    old = c.register_broker(finalized, _registration(), 5)
    assert old.response["error_code"] == E.UnsupportedVersionError.code and old.records == []


# ---------------------------------------------------------------------------------- heartbeats


def _hb(broker_id: int = 1, epoch: int = 10, offset: int = 10, *, fence: bool = False,
        shut_down: bool = False) -> dict[str, Any]:
    return {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": offset,
            "want_fence": fence, "want_shut_down": shut_down, "offline_log_dirs": []}


def _registered() -> MetadataImage:
    return EMPTY.apply([_register(1, 10, fenced=True)], last_offset=10)


def test_heartbeat_unfences_a_caught_up_broker() -> None:
    c = _controller()
    image = _registered()
    behind = c.broker_heartbeat(image, _hb(offset=9), 11)
    assert behind.records == []
    assert behind.response == {"throttle_time_ms": 0, "error_code": 0, "is_caught_up": False,
                               "is_fenced": True, "should_shut_down": False}
    wants_fence = c.broker_heartbeat(image, _hb(offset=10, fence=True), 11)
    assert wants_fence.records == [] and wants_fence.response["is_fenced"]

    caught_up = c.broker_heartbeat(image, _hb(offset=10), 11)
    assert caught_up.records == [BrokerRegistrationChangeRecord(1, 10, -1)]
    assert caught_up.response["is_caught_up"] and not caught_up.response["is_fenced"]
    image = image.apply(caught_up.records)
    assert [b.id for b in image.live_brokers()] == [1]

    steady = c.broker_heartbeat(image, _hb(offset=12), 12)
    assert steady.records == [] and not steady.response["is_fenced"]

    fence = c.broker_heartbeat(image, _hb(offset=12, fence=True), 12)
    assert fence.records == [BrokerRegistrationChangeRecord(1, 10, 1)] and fence.response["is_fenced"]
    assert image.apply(fence.records).live_brokers() == []


def test_heartbeat_from_unknown_or_stale_broker() -> None:
    c = _controller()
    image = _registered()
    for req in (_hb(broker_id=2), _hb(epoch=9), _hb(epoch=11)):
        res = c.broker_heartbeat(image, req, 11)
        assert res.records == []
        assert res.response == {"throttle_time_ms": 0, "error_code": E.StaleBrokerEpochError.code,
                                "is_caught_up": False, "is_fenced": True, "should_shut_down": False}


def test_heartbeat_controlled_shutdown_ends_at_once() -> None:
    c = _controller()
    image = _registered().apply([BrokerRegistrationChangeRecord(1, 10, -1)])
    res = c.broker_heartbeat(image, _hb(offset=20, shut_down=True), 21)
    assert res.records == [BrokerRegistrationChangeRecord(1, 10, 1, 1)]
    assert res.response["should_shut_down"] and res.response["is_fenced"]
    image = image.apply(res.records)
    assert image.brokers[1].fenced and image.brokers[1].in_controlled_shutdown
    again = c.broker_heartbeat(image, _hb(offset=21, shut_down=True), 22)
    assert again.records == [] and again.response["should_shut_down"]
    # a registration left in controlled shutdown but unfenced is fenced by its next heartbeat
    stuck = _registered().apply([BrokerRegistrationChangeRecord(1, 10, -1, 1)])
    res = c.broker_heartbeat(stuck, _hb(offset=20), 21)
    assert res.records == [BrokerRegistrationChangeRecord(1, 10, 1, 0)] and res.response["should_shut_down"]


def test_heartbeat_fenced_broker_may_shut_down() -> None:
    c = _controller()
    res = c.broker_heartbeat(_registered(), _hb(offset=3, shut_down=True), 11)
    assert res.records == [BrokerRegistrationChangeRecord(1, 10, 0, 1)]
    assert res.response["should_shut_down"] and not res.response["is_caught_up"]


def test_fence_brokers_fences_only_unfenced_registered_ones() -> None:
    c = _controller()
    image = _cluster((1, None), (2, None), (3, None), fenced=(2,))
    res = c.fence_brokers(image, [3, 2, 9, 1, 3])
    assert res.response is None
    assert res.records == [FenceBrokerRecord(1, 101), FenceBrokerRecord(3, 103)]
    assert image.apply(res.records).live_brokers() == []
    assert c.fence_brokers(image, []).records == []


def test_unregister_broker() -> None:
    c = _controller()
    image = _cluster((1, None), (2, None))
    res = c.unregister_broker(image, 2)
    assert res.records == [UnregisterBrokerRecord(2, 102)] and res.response["error_code"] == 0
    assert list(image.apply(res.records).brokers) == [1]
    missing = c.unregister_broker(image, 5)
    assert missing.records == [] and missing.response["error_code"] == E.BrokerIdNotRegisteredError.code


# ---------------------------------------------------------------------------------- placement


def test_placement_uses_live_brokers_and_spreads_leaders() -> None:
    image = _cluster((1, None), (2, None), (3, None), (4, None), fenced=(4,))
    res = _controller().create_topics(image, [_topic("t", 6, 3)], False)
    assert res.response["topics"][0]["error_code"] == 0
    parts = _parts(res.records)
    assert len(parts) == 6
    for p in parts:
        assert sorted(p.replicas) == [1, 2, 3], "never on the fenced broker"
        assert p.isr == p.replicas and p.leader == p.replicas[0]
    assert Counter(p.leader for p in parts) == {1: 2, 2: 2, 3: 2}


def test_placement_is_rack_aware() -> None:
    image = _cluster((1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c"))
    rack = {b: image.brokers[b].rack for b in image.brokers}
    res = _controller().create_topics(image, [_topic("t", 12, 3)], False)
    parts = _parts(res.records)
    for p in parts:
        assert len({rack[b] for b in p.replicas}) == 3, f"{p.replicas} does not span every rack"
    assert Counter(p.leader for p in parts) == dict.fromkeys(range(1, 7), 2)
    # two replicas over two racks: always one per rack
    two = _cluster((1, "a"), (2, "a"), (3, "a"), (4, "b"))
    for p in _parts(_controller().create_topics(two, [_topic("u", 8, 2)], False).records):
        assert {two.brokers[b].rack for b in p.replicas} == {"a", "b"}


@pytest.mark.parametrize("seed", range(25))
def test_placement_is_always_valid(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    racks = [None] if rng.random() < 0.3 else ["a", "b", "c", None][: rng.randint(1, 4)]
    image = _cluster(*[(b, rng.choice(racks)) for b in range(1, n + 1)])
    rf = rng.randint(1, n)
    partitions = rng.randint(1, 20)
    res = _controller(seed).create_topics(image, [_topic("t", partitions, rf)], False)
    assert res.response["topics"][0]["error_code"] == 0
    n_racks = len({b.rack for b in image.brokers.values()})
    parts = _parts(res.records)
    assert [p.partition_id for p in parts] == list(range(partitions))
    for p in parts:
        assert len(p.replicas) == rf and len(set(p.replicas)) == rf
        assert set(p.replicas) <= set(image.brokers) and p.leader == p.replicas[0]
        assert len({image.brokers[b].rack for b in p.replicas}) == min(rf, n_racks)


def test_replication_factor_larger_than_live_brokers() -> None:
    c = _controller()
    image = _cluster((1, None), (2, None), (3, None), fenced=(3,))
    res = c.create_topics(image, [_topic("a", 1, 4), _topic("b", 1, 3), _topic("c", 1, 2)], False)
    by_name = {t["name"]: t for t in res.response["topics"]}
    assert by_name["a"]["error_code"] == E.InvalidReplicationFactorError.code
    assert by_name["a"]["error_message"] == (
        "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
        "because only 3 broker(s) are registered."
    )
    assert by_name["b"]["error_code"] == E.InvalidReplicationFactorError.code
    assert "only 2 broker(s) are unfenced" in by_name["b"]["error_message"]
    assert by_name["c"]["error_code"] == 0
    all_fenced = _cluster((1, None), fenced=(1,))
    res = c.create_topics(all_fenced, [_topic("d", 1, 1)], False)
    assert res.response["topics"][0]["error_message"] == (
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced."
    )
    # brokers in controlled shutdown do not count at all
    shutting = _cluster((1, None), (2, None)).apply([BrokerRegistrationChangeRecord(2, 102, 0, 1)])
    res = c.create_topics(shutting, [_topic("e", 1, 2)], False)
    assert "only 1 broker(s) are registered" in res.response["topics"][0]["error_message"]


def test_manual_assignments_against_registered_brokers() -> None:
    c = _controller()
    image = _cluster((1, None), (2, None), (3, None), fenced=(2,))
    res = c.create_topics(
        image,
        [
            _topic("ghost", assignments=[{"partition_index": 0, "broker_ids": [1, 999]}]),
            _topic("dark", assignments=[{"partition_index": 0, "broker_ids": [2]}]),
            _topic("ok", assignments=[{"partition_index": 0, "broker_ids": [2, 3]},
                                      {"partition_index": 1, "broker_ids": [1, 2]}]),
        ],
        False,
    )
    by_name = {t["name"]: t for t in res.response["topics"]}
    assert by_name["ghost"]["error_code"] == E.InvalidReplicaAssignmentError.code
    assert "includes broker 999, but no such broker is registered" in by_name["ghost"]["error_message"]
    assert by_name["dark"]["error_code"] == E.InvalidReplicaAssignmentError.code
    assert by_name["dark"]["error_message"] == (
        "All brokers specified in the manual partition assignment for partition 0 are fenced or in controlled "
        "shutdown."
    )
    assert by_name["ok"]["error_code"] == 0
    p0, p1 = _parts(res.records)
    assert (p0.replicas, p0.isr, p0.leader) == ((2, 3), (3,), 3), "the leader is the first live replica"
    assert (p1.replicas, p1.isr, p1.leader) == ((1, 2), (1,), 1)


def test_create_partitions_places_on_live_brokers() -> None:
    c = _controller()
    image = _cluster((1, None), (2, None))
    image = image.apply(c.create_topics(image, [_topic("g", 1, 2)], False).records)
    image = image.apply([FenceBrokerRecord(2, 102), *_register_more(3)])
    res = c.create_partitions(image, [{"name": "g", "count": 3, "assignments": None}], False)
    assert [r["error_code"] for r in res.response] == [0]
    assert all(set(p.replicas) == {1, 3} for p in _parts(res.records))
    bad = c.create_partitions(image, [{"name": "g", "count": 2, "assignments": [{"broker_ids": [2, 7]}]}], False)
    assert bad.response[0]["error_code"] == E.InvalidReplicaAssignmentError.code


def _register_more(*ids: int) -> list[MetadataRecord]:
    return [_register(b, 100 + b) for b in ids]


# ---------------------------------------------------------------------------------- sessions


def test_heartbeat_manager_sessions() -> None:
    m = BrokerHeartbeatManager(9000)
    assert not m.is_alive(1, 0) and m.expired(0, [1]) == []
    m.touch(1, 1000)
    m.touch(2, 5000)
    m.touch(1, 500)  # a late touch never moves the session back
    assert m.last_contact_ms(1) == 1000
    assert m.is_alive(1, 10_000) and not m.is_alive(1, 10_001)
    assert m.expired(10_001, [1, 2, 3]) == [1]
    assert m.expired(20_000, iter([2, 1, 2])) == [1, 2]
    assert m.next_expiry_ms() == 10_001
    m.remove(1)
    assert not m.has_session(1) and m.expired(50_000, [1]) == []
    m.reset([2, 3], 60_000)
    assert m.is_alive(3, 69_000) and m.expired(69_001, [2, 3]) == [2, 3]
    m.reset([], 0)
    assert m.next_expiry_ms() is None
    with pytest.raises(ValueError):
        BrokerHeartbeatManager(0)


# ---------------------------------------------------------------------------------- handlers


class _FakeRuntime:
    """The coordinator runtime surface FindCoordinator uses."""

    def __init__(self, topic: str, partition: int, error: E.KafkaError | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.error = error
        self.asked: list[str] = []

    def partition_for(self, key: str) -> int:
        return self.partition

    def coordinator_error(self, key: str) -> E.KafkaError | None:
        self.asked.append(key)
        return self.error

    def lookup_error(self, key: str) -> E.KafkaError | None:
        return self.coordinator_error(key)


def _ctx(image: MetadataImage, *, listener: str = "INTERNAL", version: int = 12, api_key: int = 3,
         controller_id: int = -1, groups: Any = None, txns: Any = None) -> RequestContext:
    services = SimpleNamespace(
        node_id=1,
        config=BrokerConfig.from_props({"node.id": "1"}),
        metadata=SimpleNamespace(image=image),
        advertised=lambda: ("local", 9092),
        controller_id=lambda: controller_id,
        groups=groups,
        txns=txns,
        authorizer=None,
    )
    return RequestContext(RequestHeader(api_key, version, 1, "test"), cast(Any, services), "127.0.0.1:1", listener)


def _metadata(ctx: RequestContext, req: dict[str, Any]) -> dict[str, Any]:
    """The Metadata handler's answer with topic entries it gave pre-encoded decoded back."""
    resp = metadata.handle(ctx, req)
    dec, _enc = compile_struct(TOPIC.fields, ctx.api_version, METADATA.is_flexible(ctx.api_version))
    resp["topics"] = [dec(memoryview(t), 0)[0] if isinstance(t, bytes) else t for t in resp["topics"]]
    return resp


def _with_topic(image: MetadataImage, name: str, leaders: list[tuple[tuple[int, ...], int]]) -> MetadataImage:
    tid = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    return image.apply(
        [TopicRecord(name, tid)]
        + [PartitionRecord(i, tid, replicas, replicas, leader) for i, (replicas, leader) in enumerate(leaders)]
    )


def test_metadata_lists_live_brokers_on_the_clients_listener() -> None:
    image = _cluster((1, "a"), (2, "b"), (3, None), fenced=(3,))
    image = _with_topic(image, "t", [((1, 2), 1), ((3, 1), 3), ((4, 2), 4)])
    resp = _metadata(_ctx(image, controller_id=2), {"topics": None})
    assert resp["brokers"] == [
        {"node_id": 1, "host": "i1", "port": 19001, "rack": "a"},
        {"node_id": 2, "host": "i2", "port": 19002, "rack": "b"},
    ]
    assert resp["controller_id"] == 2 and resp["cluster_id"] == CLUSTER
    p0, p1, p2 = resp["topics"][0]["partitions"]
    assert (p0["error_code"], p0["leader_id"], p0["offline_replicas"]) == (0, 1, [])
    assert (p1["error_code"], p1["leader_id"], p1["offline_replicas"]) == (E.LeaderNotAvailableError.code, -1, [3])
    assert p1["replica_nodes"] == [3, 1] and p1["isr_nodes"] == [3, 1]
    assert (p2["error_code"], p2["leader_id"], p2["offline_replicas"]) == (E.LeaderNotAvailableError.code, -1, [4])
    # an unknown listener name (or none): each broker's first endpoint; no controller known: -1
    resp = _metadata(_ctx(image, listener=""), {"topics": None})
    assert [(b["host"], b["port"]) for b in resp["brokers"]] == [("b1", 9001), ("b2", 9002)]
    assert resp["controller_id"] == -1


def test_metadata_without_registrations_answers_as_a_single_node() -> None:
    image = _with_topic(EMPTY, "t", [((1,), 1)])
    resp = _metadata(_ctx(image), {"topics": None})
    assert resp["brokers"] == [{"node_id": 1, "host": "local", "port": 9092, "rack": None}]
    assert resp["controller_id"] == 1
    assert resp["topics"][0]["partitions"][0]["leader_id"] == 1
    assert resp["topics"][0]["partitions"][0]["error_code"] == 0


def test_describe_cluster_lists_live_or_all_brokers() -> None:
    image = _cluster((1, "a"), (2, None), fenced=(2,))
    resp = describe_cluster.handle(_ctx(image, api_key=60, version=2, controller_id=1), {"endpoint_type": 1})
    assert resp["brokers"] == [{"broker_id": 1, "host": "i1", "port": 19001, "rack": "a", "is_fenced": False}]
    assert resp["controller_id"] == 1
    resp = describe_cluster.handle(
        _ctx(image, api_key=60, version=2, listener="PLAINTEXT"), {"endpoint_type": 1, "include_fenced_brokers": True}
    )
    assert [(b["broker_id"], b["host"], b["is_fenced"]) for b in resp["brokers"]] == [(1, "b1", False), (2, "b2", True)]
    single = describe_cluster.handle(_ctx(EMPTY, api_key=60, version=2), {"endpoint_type": 1})
    assert single["brokers"] == [{"broker_id": 1, "host": "local", "port": 9092, "rack": None, "is_fenced": False}]
    assert single["controller_id"] == 1


def test_find_coordinator_answers_the_partition_leader() -> None:
    image = _cluster((1, None), (2, None), (3, None), fenced=(3,))
    image = _with_topic(image, "__consumer_offsets", [((1,), 1), ((2,), 2), ((3,), 3)])
    image = _with_topic(image, "__transaction_state", [((2,), 2)])

    def find(rt: _FakeRuntime, key_type: int = 0, img: MetadataImage = image) -> dict[str, Any]:
        ctx = _ctx(img, api_key=10, version=3, groups=rt, txns=rt)
        return find_coordinator.handle(ctx, {"key": "k", "key_type": key_type})

    remote = find(_FakeRuntime("__consumer_offsets", 1))
    assert (remote["error_code"], remote["node_id"], remote["host"], remote["port"]) == (0, 2, "i2", 19002)
    txn = find(_FakeRuntime("__transaction_state", 0), key_type=1)
    assert (txn["error_code"], txn["node_id"]) == (0, 2)
    fenced = find(_FakeRuntime("__consumer_offsets", 2))
    assert (fenced["error_code"], fenced["node_id"]) == (E.CoordinatorNotAvailableError.code, -1)

    # this broker leads the partition: its own coordinator must serve it
    local = _FakeRuntime("__consumer_offsets", 0)
    assert find(local)["node_id"] == 1 and local.asked == ["k"]
    loading = find(_FakeRuntime("__consumer_offsets", 0, E.CoordinatorLoadInProgressError("loading")))
    assert loading["error_code"] == E.CoordinatorLoadInProgressError.code
    unloaded = find(_FakeRuntime("__consumer_offsets", 0, E.NotCoordinatorError("not yet")))
    assert unloaded["error_code"] == E.CoordinatorNotAvailableError.code

    # the internal topic does not exist yet: its creation starts, the client retries
    creating = _FakeRuntime("__consumer_offsets", 0, E.CoordinatorNotAvailableError("creating"))
    resp = find(creating, img=_cluster((1, None)))
    assert resp["error_code"] == E.CoordinatorNotAvailableError.code and creating.asked == ["k"]


def test_find_coordinator_batch_and_single_node() -> None:
    image = _cluster((1, None), (2, None))
    image = _with_topic(image, "__consumer_offsets", [((2,), 2)])
    rt = _FakeRuntime("__consumer_offsets", 0)
    ctx = _ctx(image, api_key=10, version=4, listener="PLAINTEXT", groups=rt, txns=rt)
    resp = find_coordinator.handle(ctx, {"key_type": 0, "coordinator_keys": ["a", "b"]})
    assert [(c["key"], c["node_id"], c["host"], c["port"]) for c in resp["coordinators"]] == [
        ("a", 2, "b2", 9002),
        ("b", 2, "b2", 9002),
    ]
    single = _ctx(EMPTY, api_key=10, version=3, groups=rt, txns=rt)
    resp = find_coordinator.handle(single, {"key": "g", "key_type": 0})
    assert (resp["error_code"], resp["node_id"], resp["host"], resp["port"]) == (0, 1, "local", 9092)
    bad = find_coordinator.handle(single, {"key": "g", "key_type": 2})
    assert bad["error_code"] == E.InvalidRequestError.code


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata_topic_entries_are_encoded_once_per_topic_image(version: int) -> None:
    """The cached encoding of a topic entry is the codec's encoding of the entry's dict, reused
    while the topic and the broker registrations are unchanged and redone when either changes."""
    image = _with_topic(_cluster((1, "a"), (2, "b")), "cached", [((1, 2), 1), ((2, 1), 2)])
    first = metadata.handle(_ctx(image, version=version), {"topics": None})["topics"]
    again = metadata.handle(_ctx(image, version=version), {"topics": None})["topics"]
    assert isinstance(first[0], bytes) and again[0] is first[0]
    _dec, enc = compile_struct(TOPIC.fields, version, METADATA.is_flexible(version))
    t = image.get("cached")
    assert t is not None
    out = bytearray()
    enc(out, metadata._topic_entry(_ctx(image, version=version), image, t, False), [])
    assert first[0] == bytes(out)
    # Broker 2 fenced: the same topic image, other registrations -> partition 1 loses its leader.
    fenced = image.apply([FenceBrokerRecord(2, 102)])
    p1 = _metadata(_ctx(fenced, version=version), {"topics": None})["topics"][0]["partitions"][1]
    assert (p1["error_code"], p1["leader_id"]) == (E.LeaderNotAvailableError.code, -1)
    # A new partition: a new topic image, a new entry.
    grown = fenced.apply([PartitionRecord(2, uuid.uuid5(uuid.NAMESPACE_DNS, "cached"), (1,), (1,), 1)])
    assert len(_metadata(_ctx(grown, version=version), {"topics": None})["topics"][0]["partitions"]) == 3
