"""``zurau share-groups list|describe|reset-offsets|delete-offsets|delete`` (kafka-share-groups.sh)
against a broker with ``group.share.enable=true``.

Share members join with raw ShareGroupHeartbeat requests (Zurau's own client, on a loop of their
own: the embedded broker runs in its thread); the commands run in-process (typer's CliRunner).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import confluent_kafka as ck
import pytest
from typer.testing import CliRunner, Result

from tests.support.cli_results import failed, ok
from zurau.cli.main import app
from zurau.client import typed_api as api
from zurau.client.connection import BrokerConnection
from zurau.embedded import EmbeddedBroker

runner = CliRunner()


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(
        group_share_enable=True,
        **{"group.share.heartbeat.interval.ms": 200, "group.share.min.heartbeat.interval.ms": 100},
    ) as b:
        yield b


def cli(broker: EmbeddedBroker, *args: str) -> Result:
    return runner.invoke(app, ["share-groups", *args, "--bootstrap-server", broker.bootstrap_servers])


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def new_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(broker: EmbeddedBroker, topic: str, counts: dict[int, int]) -> None:
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
    for partition, n in counts.items():
        for i in range(n):
            p.produce(topic, f"v{i}".encode(), partition=partition)
    assert p.flush(20) == 0


async def _member(bootstrap: str, group: str, topic: str, partitions: int, leave: bool) -> str:
    """Join ``group`` and heartbeat until every partition is assigned (their state initialized);
    leave afterwards when ``leave``."""
    host, port = bootstrap.rsplit(":", 1)
    conn = await BrokerConnection(host, int(port)).connect()
    mid, owned, epoch = str(uuid.uuid4()), list[int](), 0
    topics: list[str] | None = [topic]
    try:
        for _ in range(100):
            r = await conn.call(
                api.SHARE_GROUP_HEARTBEAT(
                    {
                        "group_id": group,
                        "member_id": mid,
                        "member_epoch": epoch,
                        "rack_id": None,
                        "subscribed_topic_names": topics,
                    }
                )
            )
            if r["error_code"] == 0:
                epoch, topics = r["member_epoch"], None
                if r["assignment"] is not None:
                    owned = [p for tp in r["assignment"]["topic_partitions"] for p in tp["partitions"]]
                if len(owned) == partitions:
                    break
            await asyncio.sleep(0.1)
        assert len(owned) == partitions, "never assigned"
        if leave:
            await conn.call(
                api.SHARE_GROUP_HEARTBEAT(
                    {
                        "group_id": group,
                        "member_id": mid,
                        "member_epoch": -1,
                        "rack_id": None,
                        "subscribed_topic_names": None,
                    }
                )
            )
    finally:
        await conn.close()
    return mid


def member(broker: EmbeddedBroker, group: str, topic: str, partitions: int, leave: bool = False) -> str:
    return asyncio.run(_member(broker.bootstrap_servers, group, topic, partitions, leave))


def offsets_json(broker: EmbeddedBroker, group: str) -> dict[tuple[str, int], Any]:
    (doc,) = json.loads(ok(cli(broker, "describe", group, "--format", "json")))
    return {(o["topic"], o["partition"]): o for o in doc["offsets"]}


def test_list_describe_members_and_state(broker: EmbeddedBroker) -> None:
    topic, group = new_name("st"), new_name("sg")
    broker.create_topic(topic, 2)
    mid = member(broker, group, topic, 2)
    listed = rows(ok(cli(broker, "list")))
    assert listed[0] == ["GROUP", "STATE"] and [group, "Stable"] in listed
    assert [group, "Stable"] not in rows(ok(cli(broker, "list", "--state", "empty")))
    members = rows(ok(cli(broker, "describe", group, "--members")))
    assert members[0] == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "MEMBER-EPOCH",
        "ASSIGNMENT",
    ]
    assert members[1][0:2] == [group, mid] and members[1][-1] == f"{topic}(0,1)"
    state = rows(ok(cli(broker, "describe", group, "--state")))
    assert state[1][0] == group and state[1][-4:-3] == ["Stable"]
    # Offsets: initialized, not yet started by a share-partition leader.
    offsets = rows(ok(cli(broker, "describe", group)))
    assert offsets[0] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert sorted(r[1:3] for r in offsets[1:]) == [[topic, "0"], [topic, "1"]]
    usage = cli(broker, "list", "--state", "Rebalancing")
    assert usage.exit_code == 2
    missing = cli(broker, "describe", "no-such-share-group")
    failed(missing, "does not exist")


def test_reset_offsets_dry_run_execute_and_refusal(broker: EmbeddedBroker) -> None:
    topic, group = new_name("rt"), new_name("rg")
    broker.create_topic(topic, 2)
    produce(broker, topic, {0: 5, 1: 3})
    member(broker, group, topic, 2)  # still a member: not empty
    refused = cli(broker, "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    failed(refused, f"Share group '{group}' is not empty.")

    other = new_name("rg")  # a group that does not exist yet: created by --execute
    plan = rows(ok(cli(broker, "reset-offsets", "--group", other, "--topic", topic, "--to-latest")))
    assert plan == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        [other, topic, "0", "5"],
        [other, topic, "1", "3"],
    ]
    assert other not in ok(cli(broker, "list"))  # dry run: nothing changed
    ok(
        cli(
            broker,
            "reset-offsets",
            "--group",
            other,
            "--topic",
            f"{topic}:0",
            "--to-offset",
            "2",
            "--execute",
        )
    )
    assert offsets_json(broker, other)[(topic, 0)]["start_offset"] == 2
    assert [other, "Empty"] in rows(ok(cli(broker, "list")))
    # --all-topics: every partition the group has a start offset for; --to-offset is clamped.
    result = cli(broker, "reset-offsets", "--group", other, "--all-topics", "--to-offset", "99", "--execute")
    assert rows(ok(result))[1] == [other, topic, "0", "5"]
    assert "higher than latest offset" in result.stderr
    assert offsets_json(broker, other)[(topic, 0)]["start_offset"] == 5
    usage = cli(broker, "reset-offsets", "--group", other, "--all-topics")
    assert usage.exit_code == 2


def test_delete_offsets_and_delete(broker: EmbeddedBroker) -> None:
    topic, group = new_name("dt"), new_name("dg")
    broker.create_topic(topic, 1)
    mid = member(broker, group, topic, 1)
    failed(cli(broker, "delete", group), "could not be deleted", "not empty")
    failed(cli(broker, "delete-offsets", "--group", group, "--topic", topic), "not empty")
    asyncio.run(_leave(broker, group, mid))
    ok(cli(broker, "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"))
    table = cli(broker, "delete-offsets", "--group", group, "--topic", topic, "--topic", "nope")
    assert table.exit_code == 1
    status = {r[0]: " ".join(r[1:]) for r in rows(table.stdout)[1:]}
    assert status[topic] == "Successful" and status["nope"].startswith("Error:")
    assert offsets_json(broker, group) == {}
    out = ok(cli(broker, "delete", "--group", group))
    assert out.strip() == f"Deletion of requested share groups ('{group}') was successful."
    assert group not in ok(cli(broker, "list"))
    failed(cli(broker, "delete", group), "is not a share group")
    failed(cli(broker, "delete-offsets", "--group", group, "--topic", topic), "not found")


async def _leave(broker: EmbeddedBroker, group: str, mid: str) -> None:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    conn = await BrokerConnection(host, int(port)).connect()
    try:
        await conn.call(
            api.SHARE_GROUP_HEARTBEAT(
                {
                    "group_id": group,
                    "member_id": mid,
                    "member_epoch": -1,
                    "rack_id": None,
                    "subscribed_topic_names": None,
                }
            )
        )
    finally:
        await conn.close()
