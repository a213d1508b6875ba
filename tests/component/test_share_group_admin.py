"""Share-group administration (KIP-932) through real sockets: DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets, and DeleteGroups / DescribeGroups / ListGroups
for share groups.

An in-process broker with ``group.share.enable=true`` whose share coordinator is real (this
broker leads every ``__share_group_state`` partition): members join with raw ShareGroupHeartbeat
requests, the group coordinator has their partitions' state initialized, and Zurau's own
:class:`~zurau.client.share_groups_admin.ShareGroupAdmin` speaks the admin APIs. Where a test
needs what a share-partition leader would write (a delivery-complete count, for the lag), it
writes it with WriteShareGroupState through the broker's share-state channel.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from zurau.client import typed_api as api
from zurau.client.acl_admin import AclAdmin
from zurau.client.admin import AdminClient
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.groups_admin import GroupAdmin
from zurau.client.producer import Producer
from zurau.client.share_groups_admin import ShareGroupAdmin, SharePartitionOffset
from zurau.client.types import TopicPartition
from zurau.embedded import EmbeddedBroker
from zurau.protocol import errors as E
from zurau.protocol.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from zurau.protocol.api_keys import ApiKey

FAST: dict[str, Any] = {
    "group.share.heartbeat.interval.ms": 200,
    "group.share.min.heartbeat.interval.ms": 100,
}
RETRIABLE = {
    E.CoordinatorLoadInProgressError.code,
    E.CoordinatorNotAvailableError.code,
    E.NotCoordinatorError.code,
}


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(group_share_enable=True, **FAST) as b:
        yield b


@pytest_asyncio.fixture
async def conn(broker: EmbeddedBroker) -> AsyncIterator[BrokerConnection]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    c = await BrokerConnection(host, int(port), client_id="share-admin-test").connect()
    try:
        yield c
    finally:
        await c.close()


@pytest_asyncio.fixture
async def admin(broker: EmbeddedBroker) -> AsyncIterator[ShareGroupAdmin]:
    async with AdminClient(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as a:
        yield ShareGroupAdmin(a)


async def _hb(
    conn: BrokerConnection, group: str, member: str, epoch: int, topics: list[str] | None = None
) -> Any:
    body = api.SHARE_GROUP_HEARTBEAT(
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": topics,
        }
    )
    for _ in range(100):
        r = await conn.call(body)
        if r["error_code"] not in RETRIABLE:
            assert r["error_code"] == 0, r
            return r
        await asyncio.sleep(0.05)
    raise AssertionError("the group coordinator did not become available")


async def _member_until_assigned(
    conn: BrokerConnection, group: str, topic: str, partitions: int
) -> tuple[str, int]:
    """A member of ``group`` subscribed to ``topic`` that heartbeats until it owns every partition
    (so their state is initialized). Returns (member id, epoch)."""
    mid, owned = str(uuid.uuid4()), list[int]()
    r = await _hb(conn, group, mid, 0, [topic])
    for _ in range(60):
        epoch = r["member_epoch"]
        if r["assignment"] is not None:  # None: unchanged
            owned = [p for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"]]
        if len(owned) == partitions:
            return mid, epoch
        await asyncio.sleep(0.1)
        r = await _hb(conn, group, mid, epoch)
    raise AssertionError("the partitions were never assigned")


async def _leave(conn: BrokerConnection, group: str, mid: str) -> None:
    await _hb(conn, group, mid, -1)


def _topic_id(broker: EmbeddedBroker, name: str) -> uuid.UUID:
    t = broker.broker.group_coordinator.core.topics.get(name)
    assert t is not None
    return t.topic_id


async def _summary(broker: EmbeddedBroker, group: str, topic_id: uuid.UUID, partition: int) -> dict[str, Any]:
    channel = broker.broker.share_state_channel
    assert channel is not None
    got = await channel.read_state_summary(
        group, {(topic_id, partition): {"partition": partition, "leader_epoch": 0}}
    )
    return got[(topic_id, partition)]


async def test_apis_are_advertised_only_with_share_groups_on(
    broker: EmbeddedBroker, conn: BrokerConnection
) -> None:
    for key in (
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    ):
        assert conn.supports(key)
    async with EmbeddedBroker(group_share_enable=False) as off:
        host, port = off.bootstrap_servers.rsplit(":", 1)
        c = await BrokerConnection(host, int(port)).connect()
        try:
            assert not c.supports(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
            assert not c.supports(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
            assert not c.supports(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
        finally:
            await c.close()


async def test_describe_alter_and_fence(
    broker: EmbeddedBroker, conn: BrokerConnection, admin: ShareGroupAdmin
) -> None:
    broker.create_topic("jobs", 2)
    async with Producer(ClientConfig.from_props({"bootstrap.servers": broker.bootstrap_servers})) as p:
        for i in range(10):
            await p.send("jobs", b"v%d" % i, partition=0)
        await p.flush()
    mid, _ = await _member_until_assigned(conn, "sg", "jobs", 2)
    # Initialized, but no share-partition leader has written a start offset yet: -1, no lag.
    offsets = await admin.list_offsets("sg")
    assert offsets == {TopicPartition("jobs", p): SharePartitionOffset(None, None, None) for p in (0, 1)}
    # Named topics: an unknown topic is absence of data, not an error.
    named = await admin.list_offsets("sg", [TopicPartition("jobs", 0), TopicPartition("nope", 3)])
    assert named[TopicPartition("nope", 3)] == SharePartitionOffset(None, None, None)

    # A share-partition leader wrote state: start offset 4, 2 records delivered since -> lag 10-4-2.
    tid = _topic_id(broker, "jobs")
    before = await _summary(broker, "sg", tid, 0)
    channel = broker.broker.share_state_channel
    assert channel is not None
    old_epoch = before["state_epoch"]
    written = await channel.write_state(
        "sg",
        {
            (tid, 0): {
                "partition": 0,
                "state_epoch": old_epoch,
                "leader_epoch": 0,
                "start_offset": 4,
                "delivery_complete_count": 2,
                "state_batches": [
                    {"first_offset": 4, "last_offset": 5, "delivery_state": 2, "delivery_count": 1}
                ],
            }
        },
    )
    assert written[(tid, 0)]["error_code"] == 0
    assert (await admin.list_offsets("sg"))[TopicPartition("jobs", 0)] == SharePartitionOffset(4, 0, 4)

    # Altering needs an empty group.
    refused = await admin.alter_offsets("sg", {TopicPartition("jobs", 0): 1})
    assert isinstance(refused[TopicPartition("jobs", 0)], E.NonEmptyGroupError)
    await _leave(conn, "sg", mid)
    result = await admin.alter_offsets(
        "sg", {TopicPartition("jobs", 0): 1, TopicPartition("jobs", 1): 0, TopicPartition("jobs", 7): 0}
    )
    assert result[TopicPartition("jobs", 0)] is None and result[TopicPartition("jobs", 1)] is None
    assert isinstance(result[TopicPartition("jobs", 7)], E.UnknownTopicOrPartitionError)
    after = await _summary(broker, "sg", tid, 0)
    assert after["start_offset"] == 1 and after["state_epoch"] > old_epoch
    offsets = await admin.list_offsets("sg")
    assert offsets[TopicPartition("jobs", 0)].start_offset == 1
    assert offsets[TopicPartition("jobs", 1)].start_offset == 0
    # A leader still holding the old state epoch is fenced on its next write (and reloads).
    stale = await channel.write_state(
        "sg",
        {
            (tid, 0): {
                "partition": 0,
                "state_epoch": old_epoch,
                "leader_epoch": 0,
                "start_offset": 5,
                "state_batches": [],
            }
        },
    )
    assert stale[(tid, 0)]["error_code"] == E.FencedStateEpochError.code
    # An unknown topic is refused per partition.
    missing = await admin.alter_offsets("sg", {TopicPartition("nope", 0): 0})
    assert isinstance(missing[TopicPartition("nope", 0)], E.UnknownTopicOrPartitionError)


async def test_alter_creates_a_missing_group_and_a_member_starts_there(
    broker: EmbeddedBroker, conn: BrokerConnection, admin: ShareGroupAdmin
) -> None:
    broker.create_topic("later", 1)
    assert (await admin.alter_offsets("fresh", {TopicPartition("later", 0): 3}))[
        TopicPartition("later", 0)
    ] is None
    listed = await admin.list_share_groups()
    assert [(g.group_id, g.state, g.group_type) for g in listed] == [("fresh", "Empty", "share")]
    assert (await admin.list_offsets("fresh"))[TopicPartition("later", 0)].start_offset == 3
    # A member joining later is assigned the partition without a new initialization (offset 3 stays).
    await _member_until_assigned(conn, "fresh", "later", 1)
    assert (await _summary(broker, "fresh", _topic_id(broker, "later"), 0))["start_offset"] == 3


async def test_delete_offsets(broker: EmbeddedBroker, conn: BrokerConnection, admin: ShareGroupAdmin) -> None:
    broker.create_topic("a", 1)
    broker.create_topic("b", 1)
    broker.create_topic("c", 1)
    with pytest.raises(E.GroupIdNotFoundError):
        await admin.delete_offsets("nobody", ["a"])
    mid, epoch = await _member_until_assigned(conn, "dg", "a", 1)
    r = await _hb(conn, "dg", mid, epoch, ["a", "b"])
    for _ in range(50):  # until b is initialized too
        if TopicPartition("b", 0) in await admin.list_offsets("dg"):
            break
        r = await _hb(conn, "dg", mid, r["member_epoch"])
        await asyncio.sleep(0.1)
    with pytest.raises(E.NonEmptyGroupError):
        await admin.delete_offsets("dg", ["a"])
    await _leave(conn, "dg", mid)
    await admin.alter_offsets("dg", {TopicPartition("a", 0): 0})
    result = await admin.delete_offsets("dg", ["a", "c", "nope"])
    assert result["a"] is None
    assert isinstance(result["c"], E.UnknownTopicOrPartitionError)  # no state for c in the group
    assert isinstance(result["nope"], E.UnknownTopicOrPartitionError)
    assert set(await admin.list_offsets("dg")) == {TopicPartition("b", 0)}
    assert (await _summary(broker, "dg", _topic_id(broker, "a"), 0))["start_offset"] == -1  # state deleted
    again = await admin.delete_offsets("dg", ["a"])
    assert isinstance(again["a"], E.UnknownTopicOrPartitionError)


async def test_delete_groups_list_and_describe_groups(
    broker: EmbeddedBroker, conn: BrokerConnection, admin: ShareGroupAdmin
) -> None:
    broker.create_topic("jobs", 2)
    mid, _ = await _member_until_assigned(conn, "gone", "jobs", 2)
    groups = GroupAdmin(admin.admin)
    assert [g.group_id for g in await groups.list_groups(types=["share"])] == ["gone"]
    assert await groups.list_groups(types=["consumer"]) == []
    # DescribeGroups answers a share group as Kafka does any non-classic group.
    described = await conn.call(
        api.DESCRIBE_GROUPS({"groups": ["gone"], "include_authorized_operations": False})
    )
    (g,) = described["groups"]
    assert (g["error_code"], g["group_state"]) == (E.GroupIdNotFoundError.code, "Dead")
    assert g["error_message"] == "Group gone is not a classic group."
    # DeleteGroups: not while it has members; then the group and its state go.
    assert isinstance((await admin.delete_share_groups(["gone"]))["gone"], E.NonEmptyGroupError)
    await admin.alter_offsets("gone", {TopicPartition("jobs", 0): 1})  # refused: not empty
    await _leave(conn, "gone", mid)
    await admin.alter_offsets("gone", {TopicPartition("jobs", 0): 1})
    tid = _topic_id(broker, "jobs")
    assert (await _summary(broker, "gone", tid, 0))["start_offset"] == 1
    assert (await admin.delete_share_groups(["gone"])) == {"gone": None}
    assert await admin.list_share_groups() == []
    for p in (0, 1):
        assert (await _summary(broker, "gone", tid, p))["start_offset"] == -1
    assert isinstance((await admin.describe_share_groups(["gone"]))["gone"], E.GroupIdNotFoundError)
    assert isinstance((await admin.delete_share_groups(["gone"]))["gone"], E.GroupIdNotFoundError)


SASL: dict[str, Any] = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'user_admin="admin-secret" user_alice="alice-secret";'
    ),
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "group.share.enable": "true",
}


def _alice(op: AclOperation, rtype: ResourceType, name: str) -> AclBinding:
    return AclBinding(rtype, name, PatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)


async def test_authorization() -> None:
    """Kafka's checks: Describe needs DESCRIBE on the group and hides (or refuses) topics without
    DESCRIBE; Alter needs READ on the group and on each topic; Delete DELETE on the group and
    READ on each topic."""
    async with EmbeddedBroker(**SASL) as b:
        b.create_topic("jobs", 1)
        b.create_topic("secret", 1)
        host, port = b.listener_address("SASL_PLAINTEXT").rsplit(":", 1)

        def cfg(user: str) -> ClientConfig:
            return ClientConfig.from_props(
                {
                    "bootstrap.servers": f"{host}:{port}",
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.username": user,
                    "sasl.password": f"{user}-secret",
                }
            )

        async with AdminClient(cfg("admin")) as root, AdminClient(cfg("alice")) as alice_client:
            sup, alice = ShareGroupAdmin(root), ShareGroupAdmin(alice_client)
            both = {TopicPartition("jobs", 0): 2, TopicPartition("secret", 0): 1}
            assert set((await sup.alter_offsets("ag", both)).values()) == {None}
            with_error = await alice.alter_offsets("ag", {TopicPartition("jobs", 0): 0})
            assert isinstance(with_error[TopicPartition("jobs", 0)], E.GroupAuthorizationFailedError)
            with pytest.raises(E.GroupAuthorizationFailedError):
                await alice.list_offsets("ag")
            with pytest.raises(E.GroupAuthorizationFailedError):
                await alice.delete_offsets("ag", ["jobs"])
            async with AclAdmin(cfg("admin")) as acls:
                await acls.create(
                    [
                        _alice(AclOperation.DESCRIBE, ResourceType.GROUP, "ag"),
                        _alice(AclOperation.READ, ResourceType.GROUP, "ag"),
                        _alice(AclOperation.DELETE, ResourceType.GROUP, "ag"),
                        _alice(AclOperation.READ, ResourceType.TOPIC, "jobs"),  # READ implies DESCRIBE
                    ]
                )
            # All topics: those without DESCRIBE are left out.
            assert set(await alice.list_offsets("ag")) == {TopicPartition("jobs", 0)}
            named = await alice.list_offsets("ag", [TopicPartition("secret", 0)])
            assert isinstance(named[TopicPartition("secret", 0)], E.TopicAuthorizationFailedError)
            altered = await alice.alter_offsets(
                "ag", {TopicPartition("jobs", 0): 0, TopicPartition("secret", 0): 0}
            )
            assert altered[TopicPartition("jobs", 0)] is None
            assert isinstance(altered[TopicPartition("secret", 0)], E.TopicAuthorizationFailedError)
            deleted = await alice.delete_offsets("ag", ["jobs", "secret"])
            assert deleted["jobs"] is None
            assert isinstance(deleted["secret"], E.TopicAuthorizationFailedError)
