"""Share-group state (KIP-932, ``__share_group_state``) survives a kill -9 and a clean restart of
the broker that coordinates it, exactly.

One broker process on a fixed data dir with ``share.coordinator.snapshot.update.records.per.snapshot``
3, so the log holds snapshots followed by updates. Several share-partitions (two groups, three
partitions of a topic) are initialized and written through Zurau's own client (the
share-partition leaders' requests: InitializeShareGroupState, WriteShareGroupState with
overlapping batches, moving start offsets, a new leader epoch recorded by a read, one state
deleted). Then ``kill -9``, a restart over the same data: ReadShareGroupState and
ReadShareGroupStateSummary answer exactly what they answered before, the deleted state stays
deleted, and the fences still hold. Then one more write, SIGTERM, restart: the same again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zurau.client.connection import BrokerConnection
from zurau.client.typed_api import (
    CREATE_TOPICS,
    DELETE_SHARE_GROUP_STATE,
    INITIALIZE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE_SUMMARY,
    WRITE_SHARE_GROUP_STATE,
)
from zurau.protocol.share_states import RecordState
from zurau.testing.broker_process import HOST, BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "share-restart"
GROUPS = ("sg-a", "sg-b")
PARTITIONS = (0, 1, 2)
RETRIABLE = {14, 15, 16}  # loading, not available, not (yet) the coordinator: after a restart
ACKED, AVAILABLE, ARCHIVED = int(RecordState.ACKNOWLEDGED), int(RecordState.AVAILABLE), int(RecordState.ARCHIVED)
FENCED_LEADER, INVALID_REQUEST = 74, 42


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(
        tmp_path / "data",
        log_level="INFO",
        **{"share.coordinator.snapshot.update.records.per.snapshot": "3"},
    )
    b.start()
    try:
        yield b
    finally:
        b.kill()


def batch(first: int, last: int, state: int, count: int) -> dict[str, int]:
    return {"first_offset": first, "last_offset": last, "delivery_state": state, "delivery_count": count}


def codes(resp: dict[str, Any]) -> list[int]:
    return [p["error_code"] for r in resp["results"] for p in r["partitions"]]


async def call(conn: BrokerConnection, api: Any, body: Any) -> dict[str, Any]:
    """Send, again while the coordinator is being created or loaded; every partition answered 0
    or a non-retriable error."""
    for _ in range(200):
        resp: dict[str, Any] = await conn.call(api(body))
        if not RETRIABLE & set(codes(resp)):
            return resp
        await asyncio.sleep(0.05)
    raise AssertionError(f"never served: {resp}")


def body(group: str, topic_id: uuid.UUID, partitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"group_id": group, "topics": [{"topic_id": topic_id, "partitions": partitions}]}


async def connect(b: BrokerProcess) -> BrokerConnection:
    return await BrokerConnection(HOST, b.port).connect()


async def write(conn: BrokerConnection, group: str, tid: uuid.UUID, p: int, batches: list[Any], start: int = -1) -> None:
    part = {
        "partition": p,
        "state_epoch": 1,
        "leader_epoch": 2,
        "start_offset": start,
        "delivery_complete_count": -1,
        "state_batches": batches,
    }
    assert codes(await call(conn, WRITE_SHARE_GROUP_STATE, body(group, tid, [part]))) == [0]


async def snapshot(conn: BrokerConnection, tid: uuid.UUID) -> dict[tuple[str, int], Any]:
    """Everything the coordinator answers about every share-partition of the test."""
    out: dict[tuple[str, int], Any] = {}
    for g in GROUPS:
        # As the current share-partition leader (epoch 2) reads it: nothing is written.
        read = await call(
            conn, READ_SHARE_GROUP_STATE, body(g, tid, [{"partition": p, "leader_epoch": 2} for p in PARTITIONS])
        )
        summary = await call(
            conn,
            READ_SHARE_GROUP_STATE_SUMMARY,
            body(g, tid, [{"partition": p, "leader_epoch": -1} for p in PARTITIONS]),
        )
        for r, s in zip(read["results"][0]["partitions"], summary["results"][0]["partitions"], strict=True):
            out[(g, r["partition"])] = (r, s)
    return out


async def fill(conn: BrokerConnection, tid: uuid.UUID) -> None:
    for g in GROUPS:
        init = [{"partition": p, "state_epoch": 1, "start_offset": 0} for p in PARTITIONS]
        assert codes(await call(conn, INITIALIZE_SHARE_GROUP_STATE, body(g, tid, init))) == [0, 0, 0]
        # Leader epoch 2 reads first (recording its epoch), then writes: 7 writes per
        # share-partition, so two snapshots and updates after the last one.
        reads = [{"partition": p, "leader_epoch": 2} for p in PARTITIONS]
        assert codes(await call(conn, READ_SHARE_GROUP_STATE, body(g, tid, reads))) == [0, 0, 0]
        for p in PARTITIONS:
            k = p * 100
            await write(conn, g, tid, p, [batch(k, k + 9, AVAILABLE, 1)])
            await write(conn, g, tid, p, [batch(k, k + 4, ACKED, 1)])
            await write(conn, g, tid, p, [batch(k + 5, k + 7, ARCHIVED, 5), batch(k + 8, k + 9, AVAILABLE, 2)])
            await write(conn, g, tid, p, [batch(k + 10, k + 19, AVAILABLE, 1)], start=k + 2)
            await write(conn, g, tid, p, [batch(k + 8, k + 12, ACKED, 2)])
            await write(conn, g, tid, p, [batch(k + 13, k + 13, ARCHIVED, 3)], start=k + 3)
            await write(conn, g, tid, p, [batch(k + 20, k + 24, AVAILABLE, 1)])
    deleted = body(GROUPS[1], tid, [{"partition": 2}])
    assert codes(await call(conn, DELETE_SHARE_GROUP_STATE, deleted)) == [0]


async def check_fences(conn: BrokerConnection, tid: uuid.UUID) -> None:
    stale = {
        "partition": 0,
        "state_epoch": 1,
        "leader_epoch": 1,
        "start_offset": -1,
        "delivery_complete_count": -1,
        "state_batches": [batch(0, 0, ACKED, 1)],
    }
    assert codes(await call(conn, WRITE_SHARE_GROUP_STATE, body(GROUPS[0], tid, [stale]))) == [FENCED_LEADER]


async def test_share_state_survives_kill9_and_clean_restart(broker: BrokerProcess) -> None:
    conn = await connect(broker)
    try:
        created = await conn.call(
            CREATE_TOPICS(
                {"topics": [{"name": TOPIC, "num_partitions": 3, "replication_factor": 1}], "timeout_ms": 10000}
            ),
            version=7,
        )
        assert created["topics"][0]["error_code"] == 0, created
        tid = created["topics"][0]["topic_id"]
        await fill(conn, tid)
        before = await snapshot(conn, tid)
    finally:
        await conn.close()
    # The state is what the writes made it (one share-partition spelled out).
    read, summary = before[(GROUPS[0], 1)]
    assert (read["start_offset"], read["state_epoch"]) == (103, 1)
    assert read["state_batches"] == [
        batch(103, 104, ACKED, 1),
        batch(105, 107, ARCHIVED, 5),
        batch(108, 112, ACKED, 2),
        batch(113, 113, ARCHIVED, 3),
        batch(114, 124, AVAILABLE, 1),  # two contiguous batches of equal state and count, joined
    ]
    assert (summary["leader_epoch"], summary["start_offset"]) == (2, 103)
    assert before[(GROUPS[1], 2)][0]["error_code"] == INVALID_REQUEST  # deleted

    # kill -9: no flush, no checkpoint; the restart replays __share_group_state.
    broker.kill()
    broker.start()
    conn = await connect(broker)
    try:
        assert await snapshot(conn, tid) == before
        await check_fences(conn, tid)
        await write(conn, GROUPS[0], tid, 0, [batch(30, 31, ACKED, 4)], start=4)
        before = await snapshot(conn, tid)
    finally:
        await conn.close()

    # SIGTERM: a clean shutdown, then the same.
    assert broker.stop() == 0
    broker.start()
    conn = await connect(broker)
    try:
        assert await snapshot(conn, tid) == before
        await check_fences(conn, tid)
    finally:
        await conn.close()
    assert "failed to load" not in broker.log_text()
