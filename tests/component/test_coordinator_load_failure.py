"""A __consumer_offsets partition that cannot be replayed is not served, loudly.

A broker starts on a ``__consumer_offsets`` partition holding a record its parser refuses (an
offset commit whose value version does not exist). As Kafka's coordinator runtime does, the load
fails (an ERROR names the partition), the partition is left unloaded, and the groups it holds are
answered NOT_COORDINATOR rather than from the records read before the bad one; FindCoordinator
still names the partition's leader (clients look up, retry, and keep getting NOT_COORDINATOR).
"""

from __future__ import annotations

import logging
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from tests.component.test_transactions import FIND_COORDINATOR, OFFSET_FETCH, TOPIC, Env
from zurau.coordinator.group.group_runtime import OFFSETS_TOPIC
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.protocol import errors as E
from zurau.protocol.records.builder import build_batch
from zurau.storage.log_manager import LogManager

OFFSET_COMMIT, JOIN_GROUP = 8, 11
GROUP = "payments"


def commit_body(offset: int) -> dict[str, Any]:
    return {
        "group_id": GROUP,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }


async def fetch_offsets(env: Env) -> dict[str, Any]:
    body = {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}], "require_stable": True}
    return await env.c.request(OFFSET_FETCH, 7, body)


def unparseable_commit() -> bytes:
    key = CoordinatorRecord(1, {"group": GROUP, "topic": TOPIC, "partition": 0}).key_bytes()
    return build_batch([(key, struct.pack(">h", 99) + b"\x00" * 16, [], int(time.time() * 1000))])


async def test_a_partition_with_an_unreadable_record_is_not_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = Env(tmp_path, **{"offsets.topic.num.partitions": "1"})
    await env.start()
    try:
        await env.create(TOPIC, 1)
        r = await env.c.request(OFFSET_COMMIT, 8, commit_body(5))
        assert r["topics"][0]["partitions"][0]["error_code"] == 0
        assert (await env.c.request(OFFSET_COMMIT, 8, commit_body(7)))["topics"][0]["partitions"][0][
            "error_code"
        ] == 0
    finally:
        await env.stop()

    # Straight into the log while the broker is down, after the two good commits.
    mgr = LogManager([tmp_path], lambda: int(time.time() * 1000))
    log = mgr.get(OFFSETS_TOPIC, 0)
    assert log is not None and log.log_end_offset == 2
    log.append(unparseable_commit(), leader_epoch=0, now_ms=int(time.time() * 1000))
    log.update_high_watermark(log.log_end_offset)
    mgr.close()

    with caplog.at_level(logging.ERROR, logger="zurau.coordinator"):
        await env.start()
    try:
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert any(f"{OFFSETS_TOPIC}-0" in m and "offset 2" in m for m in errors), errors

        fetched = await fetch_offsets(env)
        assert fetched["error_code"] == E.NotCoordinatorError.code, fetched
        r = await env.c.request(OFFSET_COMMIT, 8, commit_body(9))
        assert r["topics"][0]["partitions"][0]["error_code"] == E.NotCoordinatorError.code
        join = {
            "group_id": GROUP,
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 3_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"m"}],
            "reason": None,
        }
        assert (await env.c.request(JOIN_GROUP, 5, join))["error_code"] == E.NotCoordinatorError.code
        found = await env.c.request(FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0})
        assert found["error_code"] == 0 and found["node_id"] == env.broker.node_id
        # The broker itself serves on: data partitions take produces.
        assert await env.produce(-1, -1, -1, [b"still-up"], tid=None, txn=False) == 0
    finally:
        await env.stop()
