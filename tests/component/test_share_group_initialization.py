"""Share-partition state initialization after ShareGroupHeartbeat (KIP-932), end to end.

An in-process broker with ``group.share.enable=true``: a member's heartbeat makes the group
coordinator ask the share coordinator (in-process here: this broker leads every
``__share_group_state`` partition) to initialize the subscribed partitions' state
(InitializeShareGroupState, start offset -1, the group's epoch as state epoch), in the
background; once that is recorded, a later heartbeat assigns them. The share coordinator then
holds the initialized state (ReadShareGroupStateSummary), and two members split the partitions
(the ``simple`` assignor). A failed initialization is forgotten, so the next heartbeat asks again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import pytest_asyncio

from zurau.client import typed_api as api
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedBroker
from zurau.protocol import errors as E

FAST: dict[str, Any] = {
    "group.share.heartbeat.interval.ms": 200,
    "group.share.min.heartbeat.interval.ms": 100,
}
RETRIABLE = {E.CoordinatorLoadInProgressError.code, E.CoordinatorNotAvailableError.code, E.NotCoordinatorError.code}


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(group_share_enable=True, **FAST) as b:
        yield b


@pytest_asyncio.fixture
async def conn(broker: EmbeddedBroker) -> AsyncIterator[BrokerConnection]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    c = await BrokerConnection(host, int(port), client_id="share-init-test").connect()
    try:
        yield c
    finally:
        await c.close()


async def _hb(conn: BrokerConnection, member: str, epoch: int, topics: list[str] | None = None) -> Any:
    body = api.SHARE_GROUP_HEARTBEAT(
        {"group_id": "sg", "member_id": member, "member_epoch": epoch, "rack_id": None, "subscribed_topic_names": topics}
    )
    for _ in range(100):
        r = await conn.call(body)
        if r["error_code"] not in RETRIABLE:
            assert r["error_code"] == 0, r
            return r
        await asyncio.sleep(0.05)
    raise AssertionError("the group coordinator did not become available")


class Member:
    """A share consumer's view: its epoch and the partitions its latest assignment gave it."""

    def __init__(self, conn: BrokerConnection) -> None:
        self.conn, self.id, self.epoch, self.owned = conn, str(uuid.uuid4()), 0, list[int]()

    async def heartbeat(self, topics: list[str] | None = None) -> None:
        r = await _hb(self.conn, self.id, self.epoch, topics)
        self.epoch = r["member_epoch"]
        if r["assignment"] is not None:  # None: unchanged
            self.owned = sorted(p for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"])


async def _until_assigned(members: list[Member], want: int) -> None:
    """Heartbeat every member until ``want`` partitions are assigned in all and each has some."""
    for _ in range(40):
        if sum(len(m.owned) for m in members) == want and all(m.owned for m in members):
            return
        await asyncio.sleep(0.1)
        for m in members:
            await m.heartbeat()
    raise AssertionError(f"not assigned: {[m.owned for m in members]}")


async def test_heartbeat_initializes_share_state_then_assigns(broker: EmbeddedBroker, conn: BrokerConnection) -> None:
    broker.create_topic("jobs", 3)
    topic = broker.broker.controller.image.get("jobs")
    assert topic is not None
    a = Member(conn)
    await a.heartbeat(["jobs"])
    assert a.epoch >= 1 and a.owned == []  # answered at once: the state is initialized meanwhile
    await _until_assigned([a], 3)
    assert a.owned == [0, 1, 2]

    # The share coordinator holds the initialized state: start offset -1 (from the auto offset
    # reset), the initial leader epoch 0, the group's epoch as state epoch.
    body = {
        "group_id": "sg",
        "topics": [{"topic_id": topic.topic_id, "partitions": [{"partition": p, "leader_epoch": -1} for p in range(3)]}],
    }
    resp = await conn.call(api.READ_SHARE_GROUP_STATE_SUMMARY(body))
    parts = sorted(resp["results"][0]["partitions"], key=lambda p: p["partition"])
    assert [(p["partition"], p["error_code"], p["start_offset"], p["leader_epoch"]) for p in parts] == [
        (0, 0, -1, 0),
        (1, 0, -1, 0),
        (2, 0, -1, 0),
    ]
    assert all(p["state_epoch"] >= 1 for p in parts)

    # A second member: the simple assignor splits the three partitions between the two.
    b = Member(conn)
    await b.heartbeat(["jobs"])
    await _until_assigned([a, b], 3)
    assert sorted(a.owned + b.owned) == [0, 1, 2]
    assert {len(a.owned), len(b.owned)} == {1, 2}


class Failing:
    """A share coordinator that cannot initialize anything (COORDINATOR_NOT_AVAILABLE)."""

    def __init__(self) -> None:
        self.calls = 0

    async def initialize_state(
        self, group_id: str, state_epoch: int, topics: Mapping[uuid.UUID, Iterable[int]]
    ) -> dict[uuid.UUID, dict[int, int]]:
        self.calls += 1
        return {t: dict.fromkeys(ps, E.CoordinatorNotAvailableError.code) for t, ps in topics.items()}


async def test_a_failed_initialization_is_forgotten_and_asked_again(broker: EmbeddedBroker, conn: BrokerConnection) -> None:
    broker.create_topic("jobs", 2)
    service = broker.broker.group_service
    assert service is not None
    real, failing = service.share_state, Failing()
    service.share_state = failing
    a = Member(conn)
    await a.heartbeat(["jobs"])
    for _ in range(50):  # the failure is recorded: nothing initializing, nothing initialized
        g = broker.broker.group_coordinator.core.groups["sg"]
        if failing.calls and not g.initializing:
            break
        await asyncio.sleep(0.02)
    assert failing.calls == 1 and not g.initializing and not g.initialized
    await a.heartbeat()  # asks again at once (the partitions are no longer initializing)
    for _ in range(50):
        if failing.calls == 2:
            break
        await asyncio.sleep(0.02)
    assert failing.calls == 2 and a.owned == []
    service.share_state = real
    for _ in range(50):
        if not broker.broker.group_coordinator.core.groups["sg"].initializing:
            break
        await asyncio.sleep(0.02)
    await _until_assigned([a], 2)
    assert a.owned == [0, 1]
