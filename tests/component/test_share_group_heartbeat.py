"""ShareGroupHeartbeat and ShareGroupDescribe (KIP-932 membership) through real sockets.

An in-process broker with ``group.share.enable=true``, and Zurau's own client sending typed
requests (:mod:`zurau.client.typed_api`): join with epoch 0 and a client-made member id,
heartbeat, leave, describe, the errors, session expiry, ListGroups' view and Kafka's
authorization (READ on the group and DESCRIBE on the subscribed topics for a heartbeat; DESCRIBE
on the group for a describe, whose groups with assigned topics the principal may not describe
are answered TOPIC_AUTHORIZATION_FAILED). Share-partition
state initialization (InitializeShareGroupState to the share coordinator) is switched off here
(:func:`_manual_initialization`), so that epochs and assignments are deterministic: the test
tells the group coordinator directly which partitions are initialized, as that round trip does
(tested in test_share_group_initialization.py). Without the switch, ApiVersions advertises
neither API.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from zurau.client import typed_api as api
from zurau.client.acl_admin import AclAdmin
from zurau.client.config import ClientConfig
from zurau.client.connection import BrokerConnection
from zurau.client.security import ClientSecurity
from zurau.embedded import EmbeddedBroker
from zurau.protocol import errors as E
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.protocol.api_keys import ApiKey

SHORT_SESSION: dict[str, Any] = {
    "group.share.session.timeout.ms": 1500,
    "group.share.min.session.timeout.ms": 1000,
    "group.share.heartbeat.interval.ms": 400,
    "group.share.min.heartbeat.interval.ms": 100,
}
RETRIABLE = {E.CoordinatorLoadInProgressError.code, E.CoordinatorNotAvailableError.code, E.NotCoordinatorError.code}

T = TypeVar("T")


def _manual_initialization(b: EmbeddedBroker) -> EmbeddedBroker:
    """No InitializeShareGroupState after a heartbeat: partitions are initialized by the test."""
    assert b.broker.group_service is not None
    b.broker.group_service.share_state = None
    return b


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(group_share_enable=True, **SHORT_SESSION) as b:
        yield _manual_initialization(b)


@pytest_asyncio.fixture
async def conn(broker: EmbeddedBroker) -> AsyncIterator[BrokerConnection]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    c = await BrokerConnection(host, int(port), client_id="share-test").connect()
    try:
        yield c
    finally:
        await c.close()


async def _retrying(send: Callable[[], Awaitable[T]], code: Callable[[T], int]) -> T:
    """Until ``__consumer_offsets`` is created and loaded (the coordinator's retriable errors)."""
    for _ in range(100):
        r = await send()
        if code(r) not in RETRIABLE:
            return r
        await asyncio.sleep(0.05)
    raise AssertionError("the group coordinator did not become available")


async def _hb(
    conn: BrokerConnection,
    group: str,
    member: str,
    epoch: int,
    topics: list[str] | None = None,
) -> Any:
    body = api.SHARE_GROUP_HEARTBEAT(
        {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None, "subscribed_topic_names": topics}
    )
    return await _retrying(lambda: conn.call(body), lambda r: r["error_code"])


async def _describe(conn: BrokerConnection, *groups: str) -> list[Any]:
    r = await conn.call(api.SHARE_GROUP_DESCRIBE({"group_ids": list(groups), "include_authorized_operations": True}))
    return list(r["groups"])


def _initialized(broker: EmbeddedBroker, group: str, topic_id: uuid.UUID, partitions: list[int]) -> None:
    """What a successful InitializeShareGroupState reports to the group coordinator."""
    rt = broker.broker.group_coordinator
    rt.request(group, lambda token, now: rt.core.share_group_initialized(group, {topic_id: partitions}), lambda r, e: None)


async def test_join_heartbeat_describe_leave(broker: EmbeddedBroker, conn: BrokerConnection) -> None:
    broker.create_topic("jobs", 3)
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    ra = await _hb(conn, "sg", a, 0, ["jobs"])
    assert (ra["error_code"], ra["member_id"], ra["member_epoch"]) == (0, a, 1)
    assert ra["heartbeat_interval_ms"] == 400
    assert ra["assignment"] == {"topic_partitions": []}  # nothing initialized yet
    rb = await _hb(conn, "sg", b, 0, ["jobs"])
    assert (rb["error_code"], rb["member_epoch"]) == (0, 2)
    # The share coordinator initialized the partitions: the next heartbeat assigns them.
    topic = broker.broker.group_coordinator.core.topics.get("jobs")
    assert topic is not None
    _initialized(broker, "sg", topic.topic_id, [0, 1, 2])
    await asyncio.sleep(0.2)
    ra2 = await _hb(conn, "sg", a, 1)
    assert ra2["error_code"] == 0 and ra2["member_epoch"] == 3
    rb2 = await _hb(conn, "sg", b, 2)
    assert rb2["member_epoch"] == 3
    got = sorted(p for r in (ra2, rb2) for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"])
    assert got == [0, 1, 2]  # every initialized partition to exactly one member (simple assignor)
    (g,) = await _describe(conn, "sg")
    assert (g["error_code"], g["group_state"], g["group_epoch"], g["assignment_epoch"], g["assignor_name"]) == (
        0,
        "Stable",
        3,
        3,
        "simple",
    )
    assert sorted(m["member_id"] for m in g["members"]) == sorted([a, b])
    assert all(m["subscribed_topic_names"] == ["jobs"] and m["client_id"] == "share-test" for m in g["members"])
    assert all(tp["topic_name"] == "jobs" for m in g["members"] for tp in m["assignment"]["topic_partitions"])
    assert g["authorized_operations"] > 0
    listed = await conn.call(api.LIST_GROUPS({"states_filter": [], "types_filter": ["share"]}))
    assert [(x["group_id"], x["protocol_type"], x["group_state"], x["group_type"]) for x in listed["groups"]] == [
        ("sg", "share", "Stable", "share")
    ]
    # Leave: -1 echoed, the group epoch bumped; the other member takes every partition (its
    # heartbeat finds the leaver's partitions outside the target: one more epoch, as Kafka).
    left = await _hb(conn, "sg", a, -1)
    assert (left["error_code"], left["member_epoch"]) == (0, -1)
    assert (await _describe(conn, "sg"))[0]["group_epoch"] == 4
    rb3 = await _hb(conn, "sg", b, 3)
    assert rb3["member_epoch"] == 5 and rb3["assignment"]["topic_partitions"][0]["partitions"] == [0, 1, 2]
    await _hb(conn, "sg", b, 5)
    await _hb(conn, "sg", b, -1)
    (g,) = await _describe(conn, "sg")
    assert (g["group_state"], g["members"]) == ("Empty", [])


async def test_errors(broker: EmbeddedBroker, conn: BrokerConnection) -> None:
    broker.create_topic("jobs", 1)
    m = str(uuid.uuid4())
    assert (await _hb(conn, "sg", m, 0, ["jobs"]))["member_epoch"] == 1
    assert (await _hb(conn, "sg", "stranger", 1))["error_code"] == E.UnknownMemberIdError.code
    assert (await _hb(conn, "sg", m, 7))["error_code"] == E.FencedMemberEpochError.code
    assert (await _hb(conn, "sg", "", 0, ["jobs"]))["error_code"] == E.InvalidRequestError.code
    assert (await _hb(conn, "sg", str(uuid.uuid4()), 0, []))["error_code"] == E.InvalidRequestError.code
    assert (await _hb(conn, "nope", m, 1))["error_code"] == E.GroupIdNotFoundError.code
    # A consumer group (KIP-848) holds the id: not a share group, either way.
    def cgh(group: str) -> api.Call[Any]:
        return api.CONSUMER_GROUP_HEARTBEAT(
            {
                "group_id": group,
                "member_id": str(uuid.uuid4()),
                "member_epoch": 0,
                "instance_id": None,
                "rack_id": None,
                "rebalance_timeout_ms": 30_000,
                "subscribed_topic_names": ["jobs"],
                "subscribed_topic_regex": None,
                "server_assignor": None,
                "topic_partitions": [],
            }
        )

    assert (await _retrying(lambda: conn.call(cgh("cg")), lambda r: r["error_code"]))["error_code"] == 0
    assert (await _hb(conn, "cg", str(uuid.uuid4()), 0, ["jobs"]))["error_code"] == E.GroupIdNotFoundError.code
    assert (await conn.call(cgh("sg")))["error_code"] == E.GroupIdNotFoundError.code
    cg, missing = await _describe(conn, "cg", "missing")
    assert cg["error_code"] == missing["error_code"] == E.GroupIdNotFoundError.code


async def test_session_expiry_fences_the_member(broker: EmbeddedBroker, conn: BrokerConnection) -> None:
    broker.create_topic("jobs", 1)
    quiet, alive = str(uuid.uuid4()), str(uuid.uuid4())
    await _hb(conn, "sg", quiet, 0, ["jobs"])
    epoch = (await _hb(conn, "sg", alive, 0, ["jobs"]))["member_epoch"]
    for _ in range(8):  # 2.4 s: beyond the 1.5 s session of the member that stays quiet
        await asyncio.sleep(0.3)
        epoch = (await _hb(conn, "sg", alive, epoch))["member_epoch"]
    (g,) = await _describe(conn, "sg")
    assert [m["member_id"] for m in g["members"]] == [alive]
    assert (await _hb(conn, "sg", quiet, 1))["error_code"] == E.UnknownMemberIdError.code


@pytest.mark.parametrize("enabled", [False, True])
async def test_api_versions_advertise_share_apis_only_when_enabled(enabled: bool) -> None:
    async with EmbeddedBroker(group_share_enable=enabled) as b:
        host, port = b.bootstrap_servers.rsplit(":", 1)
        c = await BrokerConnection(host, int(port)).connect()
        try:
            share = {ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE}
            assert (share <= set(c.api_versions)) is enabled and (share & set(c.api_versions) == set()) is not enabled
            if enabled:
                assert c.api_versions[ApiKey.SHARE_GROUP_HEARTBEAT] == (1, 1)
                assert c.api_versions[ApiKey.SHARE_GROUP_DESCRIBE] == (1, 1)
        finally:
            await c.close()


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
    async with EmbeddedBroker(**SASL) as b:
        _manual_initialization(b)
        b.create_topic("jobs", 2)
        host, port = b.listener_address("SASL_PLAINTEXT").rsplit(":", 1)
        security = ClientSecurity(
            protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="alice", sasl_password="alice-secret"
        )
        admin_cfg = ClientConfig.from_props(
            {
                "bootstrap.servers": f"{host}:{port}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": "admin-secret",
            }
        )
        alice = await BrokerConnection(host, int(port), security=security).connect()
        try:
            async with AclAdmin(admin_cfg) as acls:
                m = str(uuid.uuid4())
                denied = await _hb(alice, "ag", m, 0, ["jobs"])
                assert denied["error_code"] == E.GroupAuthorizationFailedError.code
                (g,) = await _describe(alice, "ag")
                assert g["error_code"] == E.GroupAuthorizationFailedError.code
                await acls.create([_alice(AclOperation.READ, ResourceType.GROUP, "ag")])
                assert (await _hb(alice, "ag", m, 0, ["jobs"]))["error_code"] == E.TopicAuthorizationFailedError.code
                await acls.create(
                    [
                        _alice(AclOperation.DESCRIBE, ResourceType.TOPIC, "jobs"),
                        _alice(AclOperation.DESCRIBE, ResourceType.GROUP, "ag"),
                    ]
                )
                epoch = (await _hb(alice, "ag", m, 0, ["jobs"]))["member_epoch"]
                topic = b.broker.group_coordinator.core.topics.get("jobs")
                assert topic is not None
                _initialized(b, "ag", topic.topic_id, [0, 1])
                await asyncio.sleep(0.2)
                assigned = await _hb(alice, "ag", m, epoch)
                assert assigned["assignment"]["topic_partitions"][0]["partitions"] == [0, 1]
                (g,) = await _describe(alice, "ag")
                assert g["error_code"] == 0 and len(g["members"]) == 1
                # Without DESCRIBE on the assigned topic the group is not shown.
                await acls.delete([AclBindingFilter(principal="User:alice", resource_type=ResourceType.TOPIC)])
                (g,) = await _describe(alice, "ag")
                assert (g["error_code"], g["members"]) == (E.TopicAuthorizationFailedError.code, [])
                assert g["error_message"] == "The group has described topic(s) that the client is not authorized to describe."
        finally:
            await alice.close()
