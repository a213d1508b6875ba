"""Share-group membership (KIP-932) survives a broker's SIGTERM and kill -9.

A broker process with ``group.share.enable=true`` and a non-default
``group.share.session.timeout.ms`` keeps its share groups only in ``__consumer_offsets``
(records 10-15): after each restart on the same data dir the group's members, member epochs and
group epoch are replayed as they were, the members keep heartbeating with their epochs (their
session timers re-armed with the configured timeout, so none is fenced at load), and a new
member bumps the epoch from the replayed one.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from zurau.client import typed_api as api
from zurau.client.connection import BrokerConnection
from zurau.protocol import errors as E
from zurau.testing.broker_process import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

CONFIGS: dict[str, Any] = {"group.share.enable": "true", "group.share.session.timeout.ms": "50000"}
RETRIABLE = {E.CoordinatorLoadInProgressError.code, E.CoordinatorNotAvailableError.code, E.NotCoordinatorError.code}


async def _connect(bp: BrokerProcess) -> BrokerConnection:
    host, port = bp.bootstrap_servers.rsplit(":", 1)
    return await BrokerConnection(host, int(port), client_id="share-restart").connect()


async def _hb(conn: BrokerConnection, member: str, epoch: int, topics: list[str] | None = None) -> Any:
    call = api.SHARE_GROUP_HEARTBEAT(
        {"group_id": "sg", "member_id": member, "member_epoch": epoch, "rack_id": None, "subscribed_topic_names": topics}
    )
    for _ in range(300):
        r = await conn.call(call)
        if r["error_code"] not in RETRIABLE:
            return r
        await asyncio.sleep(0.1)
    raise AssertionError("the group coordinator did not load")


async def _describe(conn: BrokerConnection) -> Any:
    for _ in range(300):
        (g,) = (await conn.call(api.SHARE_GROUP_DESCRIBE({"group_ids": ["sg"], "include_authorized_operations": False})))[
            "groups"
        ]
        if g["error_code"] not in RETRIABLE:
            return g
        await asyncio.sleep(0.1)
    raise AssertionError("the group coordinator did not load")


def _membership(g: Any) -> tuple[int, int, dict[str, int]]:
    assert g["error_code"] == 0, g
    return g["group_epoch"], g["assignment_epoch"], {m["member_id"]: m["member_epoch"] for m in g["members"]}


async def _session(bp: BrokerProcess, step: Any) -> Any:
    conn = await _connect(bp)
    try:
        return await step(conn)
    finally:
        await conn.close()


def test_share_group_members_survive_sigterm_and_kill9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    a, b, c = (str(uuid.uuid4()) for _ in range(3))

    async def join_two(conn: BrokerConnection) -> Any:
        assert (await _hb(conn, a, 0, ["jobs"]))["member_epoch"] == 1
        assert (await _hb(conn, b, 0, ["jobs", "more"]))["member_epoch"] == 2
        assert (await _hb(conn, a, 1))["member_epoch"] == 2
        return _membership(await _describe(conn))

    async def after_sigterm(conn: BrokerConnection) -> Any:
        state = _membership(await _describe(conn))
        ra, rb = await _hb(conn, a, 2), await _hb(conn, b, 2)
        assert (ra["error_code"], ra["member_epoch"], rb["error_code"], rb["member_epoch"]) == (0, 2, 0, 2)
        assert (await _hb(conn, c, 0, ["jobs"]))["member_epoch"] == 3
        g = await _describe(conn)
        assert {m["member_id"]: m["subscribed_topic_names"] for m in g["members"]} == {
            a: ["jobs"],
            b: ["jobs", "more"],
            c: ["jobs"],
        }
        return state, _membership(g)

    async def after_kill9(conn: BrokerConnection) -> Any:
        state = _membership(await _describe(conn))
        rc = await _hb(conn, c, 3)
        assert (rc["error_code"], rc["member_epoch"]) == (0, 3)
        assert (await _hb(conn, a, 2))["member_epoch"] == 3  # catches up with the replayed epoch
        assert (await _hb(conn, "stranger", 3))["error_code"] == E.UnknownMemberIdError.code
        return state

    bp = BrokerProcess(data, **CONFIGS).start()
    try:
        before = asyncio.run(_session(bp, join_two))
        assert before == (2, 2, {a: 2, b: 2})
        assert bp.stop() == 0
        bp = BrokerProcess(data, **CONFIGS).start()
        replayed, grown = asyncio.run(_session(bp, after_sigterm))
        assert replayed == before
        assert grown == (3, 3, {a: 2, b: 2, c: 3})
        bp.kill()
        bp = BrokerProcess(data, **CONFIGS).start()
        assert asyncio.run(_session(bp, after_kill9)) == grown
    finally:
        bp.kill()
