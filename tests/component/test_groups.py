"""Group coordinator APIs through real sockets: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit/Fetch/Delete, ListGroups, DescribeGroups, DeleteGroups,
ConsumerGroupHeartbeat and ConsumerGroupDescribe, at the versions real clients use (and a
flexible one where it differs), plus a broker restart that keeps offsets and group state.

Each test runs a broker in-process (ephemeral port, temp dir) and one wire client per group member
(a JoinGroup waits for the rebalance, so members need their own connections).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.component.kafka_wire import KafkaWireClient
from zurau.app import Broker
from zurau.config import BrokerConfig

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 8, 9, 10, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE, CGH, CGD = 15, 16, 42, 47, 68, 69
METADATA, CREATE_TOPICS = 3, 19

NONE, UNKNOWN_TOPIC_OR_PARTITION, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 0, 3, 22, 25
REBALANCE_IN_PROGRESS, INVALID_REQUEST, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 27, 42, 68, 69
MEMBER_ID_REQUIRED, GROUP_SUBSCRIBED_TO_TOPIC, FENCED_MEMBER_EPOCH = 79, 86, 110

PROPS = {
    "group.initial.rebalance.delay.ms": "50",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",  # Kafka refuses an interval below the minimum
}


class Env:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.broker: Broker
        self.clients: list[KafkaWireClient] = []

    async def start(self) -> None:
        props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(self.data_dir), **PROPS}
        self.broker = Broker(BrokerConfig.from_props(props))
        await self.broker.start()

    async def stop(self) -> None:
        for c in self.clients:
            await c.close()
        self.clients.clear()
        await self.broker.stop()

    async def client(self) -> KafkaWireClient:
        host, port = self.broker.listen_addresses[0]
        c = await KafkaWireClient.connect(host, port, client_id="wire")
        self.clients.append(c)
        return c

    async def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        c = await self.client()
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout_ms": 5000,
            "validate_only": False,
        }
        r = await c.request(CREATE_TOPICS, 7, body)
        assert r["topics"][0]["error_code"] == NONE
        return r["topics"][0]["topic_id"]


@pytest_asyncio.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    e = Env(tmp_path / "data")
    await e.start()
    try:
        yield e
    finally:
        await e.stop()


def _join_body(
    group: str, member_id: str = "", instance: str | None = None, meta: bytes = b"m"
) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 3_000,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": meta}],
        "reason": None,
    }


async def _join(c: KafkaWireClient, group: str, version: int = 5, meta: bytes = b"m") -> dict[str, Any]:
    r = await c.request(JOIN, version, _join_body(group, meta=meta))
    assert r["error_code"] == MEMBER_ID_REQUIRED and r["member_id"]
    return await c.request(JOIN, version, _join_body(group, r["member_id"], meta=meta), timeout=15)


async def _stable_pair(
    env: Env, group: str, join_version: int = 5, sync_version: int = 3
) -> tuple[KafkaWireClient, KafkaWireClient, str, str, int]:
    a, b = await env.client(), await env.client()
    ra, rb = await asyncio.gather(_join(a, group, join_version, b"ma"), _join(b, group, join_version, b"mb"))
    assert ra["generation_id"] == rb["generation_id"] == 1
    leader, gen = ra["leader"], ra["generation_id"]
    lead_c, lead_r, other_c, other_r = (a, ra, b, rb) if ra["member_id"] == leader else (b, rb, a, ra)
    assert sorted(m["metadata"] for m in lead_r["members"]) == [b"ma", b"mb"] and other_r["members"] == []
    sync = {
        "group_id": group,
        "generation_id": gen,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
    }
    follower = asyncio.ensure_future(
        other_c.request(SYNC, sync_version, {**sync, "member_id": other_r["member_id"], "assignments": []})
    )
    await asyncio.sleep(0.05)
    assert not follower.done(), "a follower's SyncGroup waits for the leader"
    assignments = [
        {"member_id": m["member_id"], "assignment": b"A-" + m["metadata"]} for m in lead_r["members"]
    ]
    r1 = await lead_c.request(SYNC, sync_version, {**sync, "member_id": leader, "assignments": assignments})
    r2 = await follower
    assert r1["error_code"] == r2["error_code"] == NONE
    assert {r1["assignment"], r2["assignment"]} == {b"A-ma", b"A-mb"}
    return lead_c, other_c, leader, other_r["member_id"], gen


# ------------------------------------------------------------------------------ FindCoordinator


async def test_find_coordinator_single_and_batched(env: Env) -> None:
    c = await env.client()
    host, port = env.broker.advertised
    r = await c.request(FIND_COORDINATOR, 2, {"key": "g1", "key_type": 0})
    assert (r["error_code"], r["node_id"], r["host"], r["port"]) == (NONE, 1, host, port)
    r = await c.request(FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": ["g1", "g2"]})
    assert [(x["key"], x["error_code"], x["node_id"], x["port"]) for x in r["coordinators"]] == [
        ("g1", NONE, 1, port),
        ("g2", NONE, 1, port),
    ]
    r = await c.request(FIND_COORDINATOR, 6, {"key_type": 2, "coordinator_keys": ["s:x:0"]})
    assert r["coordinators"][0]["error_code"] == INVALID_REQUEST and r["coordinators"][0]["node_id"] == -1
    # __consumer_offsets now exists, compacted, 50 partitions, internal.
    md = await c.request(
        METADATA,
        12,
        {
            "topics": [{"name": "__consumer_offsets", "topic_id": uuid.UUID(int=0)}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    t = md["topics"][0]
    assert t["error_code"] == NONE and t["is_internal"] is True and len(t["partitions"]) == 50
    assert env.broker.image.get("__consumer_offsets").configs["cleanup.policy"] == "compact"  # type: ignore[union-attr]


# ------------------------------------------------------------------------------ classic protocol


@pytest.mark.parametrize(
    "versions", [(5, 3, 3, 1), (7, 5, 4, 5)], ids=["librdkafka-aiokafka", "kafka-python"]
)
async def test_classic_group_round_trip(env: Env, versions: tuple[int, int, int, int]) -> None:
    join_v, sync_v, hb_v, leave_v = versions
    group = f"g-{join_v}"
    lead, other, leader_id, other_id, gen = await _stable_pair(env, group, join_v, sync_v)
    hb = {"group_id": group, "generation_id": gen, "member_id": other_id, "group_instance_id": None}
    assert (await other.request(HEARTBEAT, hb_v, hb))["error_code"] == NONE
    assert (await other.request(HEARTBEAT, hb_v, {**hb, "generation_id": gen - 1}))[
        "error_code"
    ] == ILLEGAL_GENERATION
    # The follower leaves: the leader is told to rejoin, and alone gets generation 2.
    if leave_v >= 3:
        body: dict[str, Any] = {
            "group_id": group,
            "members": [{"member_id": other_id, "group_instance_id": None, "reason": "bye"}],
        }
    else:
        body = {"group_id": group, "member_id": other_id}
    r = await other.request(LEAVE, leave_v, body)
    assert r["error_code"] == NONE
    if leave_v >= 3:
        assert r["members"] == [{"member_id": other_id, "group_instance_id": None, "error_code": NONE}]
    hb_leader = {**hb, "member_id": leader_id}
    assert (await lead.request(HEARTBEAT, hb_v, hb_leader))["error_code"] == REBALANCE_IN_PROGRESS
    r = await lead.request(JOIN, join_v, _join_body(group, leader_id, meta=b"ma"))
    assert r["generation_id"] == gen + 1 and [m["member_id"] for m in r["members"]] == [leader_id]
    if join_v >= 7:
        assert r["protocol_type"] == "consumer"


async def test_offsets_commit_fetch_delete(env: Env) -> None:
    tid = await env.create_topic("orders", 3)
    c = await env.client()
    commit = {
        "group_id": "og",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 10,
                        "committed_leader_epoch": 0,
                        "committed_metadata": "meta-0",
                    },
                    {
                        "partition_index": 2,
                        "committed_offset": 30,
                        "committed_leader_epoch": 0,
                        "committed_metadata": None,
                    },
                    {
                        "partition_index": 9,
                        "committed_offset": 1,
                        "committed_leader_epoch": 0,
                        "committed_metadata": "",
                    },
                ],
            },
            {
                "name": "nope",
                "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
            },
        ],
    }
    r = await c.request(OFFSET_COMMIT, 3, commit)
    assert [[p["error_code"] for p in t["partitions"]] for t in r["topics"]] == [
        [NONE, NONE, UNKNOWN_TOPIC_OR_PARTITION],
        [UNKNOWN_TOPIC_OR_PARTITION],
    ]
    # v3: one group, explicit partitions (one never committed).
    r = await c.request(
        OFFSET_FETCH, 3, {"group_id": "og", "topics": [{"name": "orders", "partition_indexes": [0, 1, 2]}]}
    )
    assert r["error_code"] == NONE
    assert [
        (p["partition_index"], p["committed_offset"], p["metadata"]) for p in r["topics"][0]["partitions"]
    ] == [(0, 10, "meta-0"), (1, -1, ""), (2, 30, "")]
    # v8: several groups, "all topics" for one of them.
    r = await c.request(
        OFFSET_FETCH,
        8,
        {
            "groups": [
                {"group_id": "og", "topics": None},
                {"group_id": "empty", "topics": [{"name": "orders", "partition_indexes": [0]}]},
            ],
            "require_stable": True,
        },
    )
    og, empty = r["groups"]
    assert og["error_code"] == NONE
    assert [(t["name"], [p["committed_offset"] for p in t["partitions"]]) for t in og["topics"]] == [
        ("orders", [10, 30])
    ]
    assert empty["topics"][0]["partitions"][0]["committed_offset"] == -1
    # v10 names topics by id.
    r = await c.request(
        OFFSET_FETCH,
        10,
        {
            "groups": [
                {
                    "group_id": "og",
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"topic_id": tid, "partition_indexes": [2]}],
                }
            ],
            "require_stable": False,
        },
    )
    assert r["groups"][0]["topics"][0]["topic_id"] == tid
    assert r["groups"][0]["topics"][0]["partitions"][0]["committed_offset"] == 30
    # OffsetDelete on the empty (simple) group.
    r = await c.request(
        OFFSET_DELETE,
        0,
        {"group_id": "og", "topics": [{"name": "orders", "partitions": [{"partition_index": 0}]}]},
    )
    assert r["error_code"] == NONE and r["topics"][0]["partitions"][0]["error_code"] == NONE
    r = await c.request(
        OFFSET_FETCH, 8, {"groups": [{"group_id": "og", "topics": None}], "require_stable": False}
    )
    assert [p["partition_index"] for p in r["groups"][0]["topics"][0]["partitions"]] == [2]
    r = await c.request(OFFSET_DELETE, 0, {"group_id": "ghost", "topics": []})
    assert r["error_code"] == GROUP_ID_NOT_FOUND


async def test_member_commits_are_fenced_by_generation(env: Env) -> None:
    await env.create_topic("t", 2)
    sub = (
        b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
    )  # ConsumerProtocolSubscription ["t"]
    a = await env.client()
    r = await _join(a, "fg", 7, sub)
    mid, gen = r["member_id"], r["generation_id"]
    await a.request(
        SYNC,
        5,
        {
            "group_id": "fg",
            "generation_id": gen,
            "member_id": mid,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": mid, "assignment": b""}],
        },
    )

    def commit(generation: int) -> dict[str, Any]:
        return {
            "group_id": "fg",
            "generation_id_or_member_epoch": generation,
            "member_id": mid,
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 5,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        }

    assert (await a.request(OFFSET_COMMIT, 8, commit(gen)))["topics"][0]["partitions"][0][
        "error_code"
    ] == NONE
    assert (await a.request(OFFSET_COMMIT, 8, commit(gen + 1)))["topics"][0]["partitions"][0][
        "error_code"
    ] == ILLEGAL_GENERATION
    r = await a.request(
        OFFSET_DELETE,
        0,
        {"group_id": "fg", "topics": [{"name": "t", "partitions": [{"partition_index": 0}]}]},
    )
    assert r["topics"][0]["partitions"][0]["error_code"] == GROUP_SUBSCRIBED_TO_TOPIC


async def test_list_describe_delete(env: Env) -> None:
    await env.create_topic("t", 1)
    lead, other, leader_id, other_id, gen = await _stable_pair(env, "dg")
    c = await env.client()
    partition = {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    r = await c.request(
        OFFSET_COMMIT,
        8,
        {
            "group_id": "simple",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": "t", "partitions": [partition]}],
        },
    )
    assert r["topics"][0]["partitions"][0]["error_code"] == NONE
    r = await c.request(LIST_GROUPS, 4, {"states_filter": ["stable"]})
    assert [(g["group_id"], g["group_state"]) for g in r["groups"]] == [("dg", "Stable")]
    r = await c.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]})
    assert [(g["group_id"], g["protocol_type"], g["group_type"]) for g in r["groups"]] == [
        ("dg", "consumer", "classic"),
        ("simple", "", "classic"),
    ]
    r = await c.request(
        DESCRIBE_GROUPS, 5, {"groups": ["dg", "missing"], "include_authorized_operations": True}
    )
    dg, missing = r["groups"]
    assert (dg["group_state"], dg["protocol_type"], dg["protocol_data"]) == ("Stable", "consumer", "range")
    assert sorted(m["member_assignment"] for m in dg["members"]) == [b"A-ma", b"A-mb"]
    assert dg["members"][0]["client_host"] == "/127.0.0.1" and dg["authorized_operations"] > 0
    assert (missing["error_code"], missing["group_state"]) == (NONE, "Dead")
    r = await c.request(DESCRIBE_GROUPS, 6, {"groups": ["missing"], "include_authorized_operations": False})
    assert r["groups"][0]["error_code"] == GROUP_ID_NOT_FOUND and r["groups"][0]["error_message"]
    r = await c.request(DELETE_GROUPS, 2, {"groups_names": ["dg", "missing"]})
    assert r["results"] == [
        {"group_id": "dg", "error_code": NON_EMPTY_GROUP},
        {"group_id": "missing", "error_code": GROUP_ID_NOT_FOUND},
    ]
    body = {
        "group_id": "dg",
        "members": [
            {"member_id": leader_id, "group_instance_id": None, "reason": None},
            {"member_id": other_id, "group_instance_id": None, "reason": None},
        ],
    }
    assert (await c.request(LEAVE, 5, body))["error_code"] == NONE
    r = await c.request(DELETE_GROUPS, 2, {"groups_names": ["dg"]})
    assert r["results"] == [{"group_id": "dg", "error_code": NONE}]
    r = await c.request(LIST_GROUPS, 4, {"states_filter": []})
    assert [g["group_id"] for g in r["groups"]] == ["simple"]


async def test_a_client_that_disconnects_during_a_join_does_not_hurt_the_group(env: Env) -> None:
    a, b = await env.client(), await env.client()
    (lead, other, leader_id, other_id, gen) = await _stable_pair(env, "dc")
    # The leader rejoins and waits for the follower; the follower's connection drops.
    pending = asyncio.ensure_future(
        lead.request(JOIN, 5, _join_body("dc", leader_id, meta=b"ma"), timeout=20)
    )
    await asyncio.sleep(0.05)
    await other.close()
    r = await pending  # completes at the rebalance timeout without the follower
    assert (
        r["error_code"] == NONE
        and r["generation_id"] == gen + 1
        and [m["member_id"] for m in r["members"]] == [leader_id]
    )
    del a, b


# ------------------------------------------------------------------------------ KIP-848


def _cgh(
    group: str, member_id: str, epoch: int, topics: list[str] | None = None, owned: list | None = None
) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 10_000 if epoch == 0 else -1,
        "subscribed_topic_names": topics,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": owned,
    }


async def test_consumer_group_heartbeat_and_describe(env: Env) -> None:
    tid = await env.create_topic("events", 4)
    c = await env.client()
    # v0: the coordinator names the member.
    r0 = await c.request(CGH, 0, _cgh("kg", "", 0, ["events"], []))
    assert r0["error_code"] == NONE and r0["member_id"] and r0["member_epoch"] == 1
    assert r0["assignment"]["topic_partitions"] == [{"topic_id": tid, "partitions": [0, 1, 2, 3]}]
    # v1: the client names it; the first member must give up two partitions.
    r1 = await c.request(CGH, 1, _cgh("kg", "client-made-id", 0, ["events"], []))
    assert r1["member_id"] == "client-made-id" and r1["assignment"]["topic_partitions"] == []
    r0b = await c.request(CGH, 0, _cgh("kg", r0["member_id"], 1))
    kept = r0b["assignment"]["topic_partitions"]
    assert len(kept[0]["partitions"]) == 2 and r0b["member_epoch"] == 1
    r0c = await c.request(CGH, 0, _cgh("kg", r0["member_id"], 1, owned=kept))
    assert r0c["member_epoch"] == 2
    r1b = await c.request(CGH, 1, _cgh("kg", "client-made-id", 2, owned=[]))
    assert len(r1b["assignment"]["topic_partitions"][0]["partitions"]) == 2
    assert (await c.request(CGH, 1, _cgh("kg", "client-made-id", 9)))["error_code"] == FENCED_MEMBER_EPOCH
    assert (await c.request(CGH, 1, _cgh("kg", "", 0, ["events"], [])))["error_code"] == INVALID_REQUEST
    for version in (0, 1):
        d = await c.request(
            CGD, version, {"group_ids": ["kg", "nope"], "include_authorized_operations": False}
        )
        kg, nope = d["groups"]
        assert (kg["error_code"], kg["group_state"], kg["group_epoch"], kg["assignor_name"]) == (
            NONE,
            "Stable",
            2,
            "uniform",
        )
        assert sorted(m["member_id"] for m in kg["members"]) == sorted([r0["member_id"], "client-made-id"])
        assert all(m["assignment"]["topic_partitions"][0]["topic_name"] == "events" for m in kg["members"])
        assert nope["error_code"] == GROUP_ID_NOT_FOUND
    r = await c.request(LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert [(g["group_id"], g["group_state"], g["group_type"]) for g in r["groups"]] == [
        ("kg", "Stable", "consumer")
    ]
    # A member epoch is checked by OffsetCommit v9 and OffsetFetch v9.
    commit = {
        "group_id": "kg",
        "generation_id_or_member_epoch": 2,
        "member_id": "client-made-id",
        "group_instance_id": None,
        "topics": [
            {
                "name": "events",
                "partitions": [
                    {
                        "partition_index": 1,
                        "committed_offset": 3,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    assert (await c.request(OFFSET_COMMIT, 9, commit))["topics"][0]["partitions"][0]["error_code"] == NONE
    stale = {**commit, "generation_id_or_member_epoch": 1}
    assert (await c.request(OFFSET_COMMIT, 9, stale))["topics"][0]["partitions"][0]["error_code"] == 113
    leave = await c.request(CGH, 1, _cgh("kg", "client-made-id", -1))
    assert (leave["error_code"], leave["member_epoch"]) == (NONE, -1)


# ------------------------------------------------------------------------------ restart


async def test_restart_keeps_offsets_and_group_state(tmp_path: Path) -> None:
    env = Env(tmp_path / "data")
    await env.start()
    try:
        await env.create_topic("t", 2)
        lead, other, leader_id, other_id, gen = await _stable_pair(env, "rg")
        commit = {
            "group_id": "rg",
            "generation_id_or_member_epoch": gen,
            "member_id": leader_id,
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "committed_offset": 77,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "x",
                        }
                    ],
                }
            ],
        }
        assert (await lead.request(OFFSET_COMMIT, 8, commit))["topics"][0]["partitions"][0][
            "error_code"
        ] == NONE
        c = await env.client()
        r = await c.request(CGH, 1, _cgh("kg", "m-1", 0, ["t"], []))
        assert r["member_epoch"] == 1
        before = await c.request(
            DESCRIBE_GROUPS, 5, {"groups": ["rg"], "include_authorized_operations": False}
        )
        before_cg = await c.request(CGD, 1, {"group_ids": ["kg"], "include_authorized_operations": False})
    finally:
        await env.stop()
    await env.start()
    try:
        c = await env.client()
        after = await c.request(
            DESCRIBE_GROUPS, 5, {"groups": ["rg"], "include_authorized_operations": False}
        )
        assert after == before
        after_cg = await c.request(CGD, 1, {"group_ids": ["kg"], "include_authorized_operations": False})
        assert after_cg == before_cg
        r = await c.request(
            OFFSET_FETCH, 8, {"groups": [{"group_id": "rg", "topics": None}], "require_stable": False}
        )
        (p,) = r["groups"][0]["topics"][0]["partitions"]
        assert (p["partition_index"], p["committed_offset"], p["metadata"]) == (1, 77, "x")
        hb = {"group_id": "rg", "generation_id": gen, "member_id": other_id, "group_instance_id": None}
        assert (await c.request(HEARTBEAT, 4, hb))["error_code"] == NONE, (
            "members carry on with their generation"
        )
        assert (await c.request(CGH, 1, _cgh("kg", "m-1", 1)))["error_code"] == NONE
        assert (await c.request(HEARTBEAT, 4, {**hb, "member_id": "ghost"}))[
            "error_code"
        ] == UNKNOWN_MEMBER_ID
    finally:
        await env.stop()


async def test_deleting_a_topic_drops_its_committed_offsets(env: Env) -> None:
    await env.create_topic("gone", 1)
    await env.create_topic("kept", 1)
    c = await env.client()
    part = [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": ""}
    ]
    body = {
        "group_id": "tg",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": "gone", "partitions": part}, {"name": "kept", "partitions": part}],
    }
    await c.request(OFFSET_COMMIT, 8, body)
    r = await c.request(20, 4, {"topic_names": ["gone"], "timeout_ms": 5000})
    assert r["responses"][0]["error_code"] == NONE
    r = await c.request(
        OFFSET_FETCH, 8, {"groups": [{"group_id": "tg", "topics": None}], "require_stable": False}
    )
    assert [t["name"] for t in r["groups"][0]["topics"]] == ["kept"]


async def test_metadata_auto_creation_of_the_offsets_topic_uses_coordinator_settings(env: Env) -> None:
    c = await env.client()
    md = await c.request(
        METADATA,
        9,
        {
            "topics": [{"name": "__consumer_offsets"}],
            "allow_auto_topic_creation": True,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )
    t = md["topics"][0]
    assert t["error_code"] == NONE and t["is_internal"] is True and len(t["partitions"]) == 50
