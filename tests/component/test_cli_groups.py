"""``zurau groups list|describe|delete|reset-offsets`` against groups with real members.

Members are confluent-kafka (librdkafka) consumers: classic (JoinGroup/SyncGroup, range assignor)
and KIP-848 (``group.protocol=consumer``). The commands run in-process (typer's CliRunner) against
a module-scoped embedded broker with a 0 ms initial rebalance delay, and ``list``/``describe`` also
run as the ``zurau`` executable against a broker in its own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import pytest
from typer.testing import CliRunner, Result

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.cli_results import failed, ok
from zurau.cli.main import app
from zurau.embedded import EmbeddedBroker

runner = CliRunner()
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",  # Kafka refuses an interval below the minimum
}


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(**GROUP_SETTINGS) as b:
        yield b


# ---------------------------------------------------------------------------- helpers
def cli(broker: EmbeddedBroker | str, *args: str) -> Result:
    bootstrap = broker if isinstance(broker, str) else broker.bootstrap_servers
    return runner.invoke(app, ["groups", *args, "--bootstrap-server", bootstrap])


def usage_error(result: Result, fragment: str) -> None:
    assert result.exit_code == 2, f"exit {result.exit_code}: {result.stdout} {result.stderr}"
    assert fragment in " ".join(result.stderr.replace("│", " ").split()), result.stderr


def rows(text: str) -> list[list[str]]:
    """A plain (non-terminal) table: header first, whitespace-separated cells."""
    return [line.split() for line in text.splitlines() if line.strip()]


def new_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def make_topic(broker: EmbeddedBroker, partitions: int, counts: dict[int, int]) -> str:
    name = new_name("gt")
    broker.create_topic(name, partitions)
    produce(broker, name, counts)
    return name


def produce(broker: EmbeddedBroker | str, topic: str, counts: dict[int, int]) -> None:
    bootstrap = broker if isinstance(broker, str) else broker.bootstrap_servers
    p = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for partition, n in counts.items():
        for i in range(n):
            p.produce(topic, f"v{i}".encode(), partition=partition)
    assert p.flush(20) == 0


def member(bootstrap: str, group: str, topic: str, protocol: str = "classic", **conf: Any) -> Any:
    """A subscribed consumer that has received its assignment."""
    c = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "log_level": 0,
            **conf,
        }
    )
    c.subscribe([topic])
    deadline = time.monotonic() + 20
    while not c.assignment():
        assert time.monotonic() < deadline, f"{group}: no assignment"
        c.poll(0.05)
    return c


def commit(c: Any, topic: str, offsets: dict[int, int]) -> None:
    c.commit(offsets=[ck.TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def describe_json(broker: EmbeddedBroker | str, group: str, *args: str) -> dict[str, Any]:
    docs = json.loads(ok(cli(broker, "describe", group, "--format", "json", *args)))
    assert [d["group"] for d in docs] == [group]
    return docs[0]


def committed(broker: EmbeddedBroker, group: str) -> dict[int, int | None]:
    return {o["partition"]: o["current_offset"] for o in describe_json(broker, group)["offsets"]}


def wait_state(broker: EmbeddedBroker, group: str, state: str) -> None:
    deadline = time.monotonic() + 20
    while (now := describe_json(broker, group, "--state")["state"]) != state:
        assert time.monotonic() < deadline, f"{group} stays {now}, expected {state}"
        time.sleep(0.05)


def listed(broker: EmbeddedBroker, *args: str) -> dict[str, dict[str, Any]]:
    return {g["group"]: g for g in json.loads(ok(cli(broker, "list", "--format", "json", *args)))}


# ---------------------------------------------------------------------------- classic groups
def test_list_and_describe_a_classic_group_with_members(broker: EmbeddedBroker) -> None:
    topic = make_topic(broker, 3, {0: 10, 1: 5})
    group = new_name("classic")
    bs = broker.bootstrap_servers
    static = member(bs, group, topic, **{"client.id": "static-client", "group.instance.id": "inst-1"})
    dynamic = ck.Consumer({"bootstrap.servers": bs, "group.id": group, "client.id": "dyn-client",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0})  # fmt: skip
    dynamic.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while len(static.assignment()) + len(dynamic.assignment()) != 3 or not dynamic.assignment():
            assert time.monotonic() < deadline, "the second member never got partitions"
            static.poll(0.05)
            dynamic.poll(0.05)
        owned = {tp.partition: "static" for tp in static.assignment()}
        owned |= {tp.partition: "dynamic" for tp in dynamic.assignment()}
        wait_state(broker, group, "Stable")
        commit(static if owned[0] == "static" else dynamic, topic, {0: 10})
        commit(static if owned[1] == "static" else dynamic, topic, {1: 3})

        # list: table, JSON, filters
        table = rows(ok(cli(broker, "list")))
        assert table[0] == ["GROUP", "TYPE", "STATE"]
        assert [group, "classic", "Stable"] in table[1:]
        assert listed(broker)[group] == {
            "group": group,
            "type": "classic",
            "state": "Stable",
            "protocol_type": "consumer",
        }
        assert group in listed(broker, "--state", "stable,empty")
        assert group in listed(broker, "--type", "classic", "--state", "Stable")
        assert group not in listed(broker, "--state", "Empty")
        assert group not in listed(broker, "--type", "consumer")
        usage_error(cli(broker, "list", "--state", "sleepy"), "unknown group state 'sleepy'")
        usage_error(cli(broker, "list", "--type", "share"), "unknown group type 'share'")

        # describe (offsets, the default view): committed, log end offset, lag, owner
        doc = describe_json(broker, group)
        assert (doc["type"], doc["state"], doc["protocol_type"], doc["assignor"]) == (
            "classic", "Stable", "consumer", "range",
        )  # fmt: skip
        by_client = {m["client_id"]: m for m in doc["members"]}
        assert set(by_client) == {"static-client", "dyn-client"}
        assert by_client["static-client"]["instance_id"] == "inst-1"
        assert by_client["dyn-client"]["instance_id"] is None
        for who, m in (("static", by_client["static-client"]), ("dynamic", by_client["dyn-client"])):
            assert m["assignment"] == [
                {"topic": topic, "partition": p} for p in sorted(owned) if owned[p] == who
            ]
            assert m["subscribed_topics"] == [topic] and "127.0.0.1" in m["host"]
        owner = {p: by_client["static-client" if w == "static" else "dyn-client"] for p, w in owned.items()}
        assert doc["offsets"] == [
            {"topic": topic, "partition": p, "current_offset": cur, "log_end_offset": end, "lag": lag,
             "member_id": owner[p]["member_id"], "host": owner[p]["host"], "client_id": owner[p]["client_id"]}
            for p, cur, end, lag in ((0, 10, 10, 0), (1, 3, 5, 2), (2, None, 0, None))
        ]  # fmt: skip

        table = rows(ok(cli(broker, "describe", group)))
        assert table[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                            "CONSUMER-ID", "HOST", "CLIENT-ID"]  # fmt: skip
        assert [r[:6] for r in table[1:]] == [
            [group, topic, "0", "10", "10", "0"],
            [group, topic, "1", "3", "5", "2"],
            [group, topic, "2", "-", "0", "-"],
        ]
        assert all(r[6] == owner[int(r[2])]["member_id"] for r in table[1:])

        members = rows(ok(cli(broker, "describe", "--group", group, "--members")))
        assert members[0] == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                              "ASSIGNMENT"]  # fmt: skip
        static_row = next(r for r in members[1:] if r[4] == "static-client")
        static_parts = sorted(p for p, w in owned.items() if w == "static")
        assert static_row[2] == "inst-1"
        assert static_row[5:] == [str(len(static_parts)), f"{topic}({','.join(map(str, static_parts))})"]

        state = rows(ok(cli(broker, "describe", group, "--state")))
        assert state[0] == [
            "GROUP",
            "TYPE",
            "COORDINATOR",
            "(ID)",
            "ASSIGNMENT-STRATEGY",
            "STATE",
            "#MEMBERS",
        ]
        assert state[1] == [group, "classic", f"{broker.bootstrap_servers}", "(1)", "range", "Stable", "2"]

        # a group with members can be neither deleted nor reset
        failed(
            cli(broker, "delete", group),
            f"Group '{group}' could not be deleted due to: The group is not empty. [NON_EMPTY_GROUP]",
        )
        line = failed(cli(broker, "reset-offsets", "-g", group, "--all-topics", "--to-earliest", "--execute"))
        assert line == (
            f"error: Assignments can only be reset if the group '{group}' is inactive, "
            "but the current state is Stable."
        )
        dry = cli(broker, "reset-offsets", "-g", group, "--all-topics", "--to-earliest", "--dry-run")
        assert rows(ok(dry))[1:] == [[group, topic, "0", "0"], [group, topic, "1", "0"]]
        assert f"group '{group}' is Stable" in dry.stderr
        assert committed(broker, group) == {0: 10, 1: 3, 2: None}, "a dry run commits nothing"
    finally:
        static.close()
        dynamic.close()


def test_reset_offsets_modes(broker: EmbeddedBroker) -> None:
    topic = make_topic(broker, 2, {0: 6, 1: 4})
    time.sleep(0.05)
    now = datetime.now(UTC)
    cut = now.replace(microsecond=now.microsecond // 1000 * 1000)  # whole milliseconds
    time.sleep(0.05)
    produce(broker, topic, {0: 4})  # p0: offsets 6-9 written after `cut`; p1 has nothing after it
    group = new_name("reset")
    c = member(broker.bootstrap_servers, group, topic)
    commit(c, topic, {0: 8, 1: 2})
    c.close()
    wait_state(broker, group, "Empty")

    empty = cli(broker, "describe", group)
    assert [r[6:] for r in rows(ok(empty))[1:]] == [["-", "-", "-"]] * 2, "no owner once the member left"
    assert empty.stderr == f"Consumer group '{group}' has no active members.\n"

    def reset(*args: str, execute: bool = True) -> list[list[str]]:
        result = cli(broker, "reset-offsets", "--group", group, *args, *(["--execute"] if execute else []))
        table = rows(ok(result))
        assert table[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
        return [r[2:] for r in table[1:]]

    # dry runs: explicit, and the default (which says so on stderr); JSON plan with current offsets
    assert reset("--topic", topic, "--to-earliest", "--dry-run", execute=False) == [["0", "0"], ["1", "0"]]
    default = cli(broker, "reset-offsets", "-g", group, "-t", topic, "--to-latest")
    assert rows(ok(default))[1:] == [[group, topic, "0", "10"], [group, topic, "1", "4"]]
    assert "Dry run" in default.stderr and "--execute" in default.stderr
    plan = json.loads(ok(cli(broker, "reset-offsets", "-g", group, "-t", f"{topic}:1", "--to-earliest",
                             "--format", "json")))  # fmt: skip
    assert plan == [{"group": group, "topic": topic, "partition": 1, "current_offset": 2, "new_offset": 0}]
    assert committed(broker, group) == {0: 8, 1: 2}

    assert reset("--topic", topic, "--to-earliest") == [["0", "0"], ["1", "0"]]
    assert committed(broker, group) == {0: 0, 1: 0}
    assert reset("--topic", topic, "--to-latest") == [["0", "10"], ["1", "4"]]
    assert committed(broker, group) == {0: 10, 1: 4}
    assert reset("--topic", topic, "--shift-by", "-3") == [["0", "7"], ["1", "1"]]
    assert committed(broker, group) == {0: 7, 1: 1}

    # --shift-by and --to-offset are clamped to [earliest, latest], with Kafka's warning
    result = cli(broker, "reset-offsets", "-g", group, "-t", f"{topic}:1", "--shift-by", "-5", "--execute")
    assert rows(ok(result))[1:] == [[group, topic, "1", "0"]]
    assert (
        f"New offset (-4) is lower than earliest offset for topic partition {topic}-1. Value will be set to 0"
        in result.stderr
    )
    assert committed(broker, group) == {0: 7, 1: 0}
    result = cli(broker, "reset-offsets", "-g", group, "-t", f"{topic}:0,1", "--to-offset", "5", "--execute")
    assert rows(ok(result))[1:] == [[group, topic, "0", "5"], [group, topic, "1", "4"]]
    assert f"New offset (5) is higher than latest offset for topic partition {topic}-1" in result.stderr
    assert committed(broker, group) == {0: 5, 1: 4}

    # --to-datetime: the first offset at or after the time; the end where no record is that late
    naive_local = cut.astimezone().replace(tzinfo=None).isoformat(timespec="milliseconds")
    for when in (cut.isoformat(timespec="milliseconds"), cut.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                 naive_local):  # fmt: skip
        reset("--all-topics", "--to-earliest")
        assert reset("--topic", topic, "--to-datetime", when) == [["0", "6"], ["1", "4"]], when
        assert committed(broker, group) == {0: 6, 1: 4}
    assert reset("--topic", topic, "--to-datetime", "2000-01-01T00:00:00.000") == [["0", "0"], ["1", "0"]]

    # --all-topics: every partition the group has an offset for
    assert reset("--all-topics", "--to-latest") == [["0", "10"], ["1", "4"]]
    assert committed(broker, group) == {0: 10, 1: 4}


def test_reset_offsets_errors_and_a_new_group(broker: EmbeddedBroker) -> None:
    topic = make_topic(broker, 2, {0: 3})
    group = new_name("fresh")
    base = ("reset-offsets", "-g", group)
    usage_error(cli(broker, *base, "--topic", topic), "give exactly one of --to-earliest")
    usage_error(cli(broker, *base, "--topic", topic, "--to-earliest", "--to-offset", "1"),
                "(got --to-earliest, --to-offset)")  # fmt: skip
    usage_error(cli(broker, *base, "--to-earliest"), "give --topic (repeatable) or --all-topics")
    usage_error(cli(broker, *base, "--all-topics", "--topic", topic, "--to-earliest"), "or --all-topics")
    usage_error(cli(broker, *base, "-t", topic, "--to-earliest", "--dry-run", "--execute"), "exclusive")
    usage_error(cli(broker, *base, "-t", topic, "--to-datetime", "yesterday"), "ISO 8601")
    usage_error(cli(broker, *base, "-t", f"{topic}:x", "--to-earliest"), "TOPIC:P,P")
    usage_error(cli(broker, *base, "-t", topic, "--to-offset", "-1"), "must not be negative")

    failed(cli(broker, *base, "-t", "no-such-topic", "--to-earliest"),
           "Topic 'no-such-topic' does not exist", "[UNKNOWN_TOPIC_OR_PARTITION]")  # fmt: skip
    failed(cli(broker, *base, "-t", f"{topic}:7", "--to-earliest"), f"Topic '{topic}' has no partition 7")
    failed(cli(broker, *base, "--all-topics", "--to-earliest"), f"group '{group}' has no committed offsets")
    failed(cli(broker, *base, "-t", topic, "--shift-by", "1"),
           f"Cannot shift offset for partition {topic}-0 since there is no current committed offset")  # fmt: skip
    failed(cli(broker, "describe", group), f"Consumer group '{group}' does not exist. [GROUP_ID_NOT_FOUND]")

    # A group that does not exist yet is created by --execute (offsets only, no members).
    assert rows(ok(cli(broker, *base, "-t", topic, "--to-latest", "--execute")))[1:] == [
        [group, topic, "0", "3"],
        [group, topic, "1", "0"],
    ]
    assert listed(broker)[group] == {"group": group, "type": "classic", "state": "Empty", "protocol_type": ""}
    assert committed(broker, group) == {0: 3, 1: 0}
    assert rows(ok(cli(broker, *base, "-t", topic, "--shift-by", "-1", "--execute")))[1] == [
        group,
        topic,
        "0",
        "2",
    ]


def test_delete_groups(broker: EmbeddedBroker) -> None:
    topic = make_topic(broker, 1, {0: 2})
    a, b, missing = new_name("del-a"), new_name("del-b"), new_name("del-missing")
    for g in (a, b):
        ok(cli(broker, "reset-offsets", "-g", g, "-t", topic, "--to-latest", "--execute"))
    c = member(broker.bootstrap_servers, b, topic)
    try:
        result = cli(broker, "delete", a, "--group", b, "-g", missing)
        assert result.exit_code == 1
        assert result.stdout == f"These consumer groups were deleted successfully: '{a}'\n"
        assert result.stderr.splitlines() == [
            f"error: Group '{b}' could not be deleted due to: The group is not empty. [NON_EMPTY_GROUP]",
            f"error: Group '{missing}' could not be deleted due to: The group id does not exist. "
            "[GROUP_ID_NOT_FOUND]",
        ]
    finally:
        c.close()
    wait_state(broker, b, "Empty")
    assert ok(cli(broker, "delete", b)) == f"Deletion of requested consumer groups ('{b}') was successful.\n"
    for g in (a, b):
        assert g not in listed(broker)
        failed(cli(broker, "describe", g), f"Consumer group '{g}' does not exist.")
    failed(cli(broker, "delete", a), f"Group '{a}' could not be deleted due to: The group id does not exist.")
    usage_error(cli(broker, "delete"), "a group is required")


# ---------------------------------------------------------------------------- KIP-848 groups
def test_consumer_protocol_group(broker: EmbeddedBroker) -> None:
    topic = make_topic(broker, 2, {0: 4, 1: 1})
    group = new_name("kip848")
    c = member(broker.bootstrap_servers, group, topic, protocol="consumer", **{"client.id": "new-protocol"})
    try:
        commit(c, topic, {0: 1})
        wait_state(broker, group, "Stable")
        assert listed(broker, "--type", "consumer")[group]["state"] == "Stable"
        assert group not in listed(broker, "--type", "classic")
        doc = describe_json(broker, group)
        assert (doc["type"], doc["protocol_type"]) == ("consumer", "consumer")
        assert doc["assignor"] and doc["group_epoch"] >= 1 and doc["assignment_epoch"] >= 1
        [m] = doc["members"]
        assert m["client_id"] == "new-protocol" and m["member_epoch"] >= 1
        everything = [{"topic": topic, "partition": p} for p in (0, 1)]
        assert m["assignment"] == everything and m["target_assignment"] == everything
        assert m["subscribed_topics"] == [topic]
        assert [(o["partition"], o["current_offset"], o["log_end_offset"], o["lag"], o["member_id"])
                for o in doc["offsets"]] == [(0, 1, 4, 3, m["member_id"]), (1, None, 1, None, m["member_id"])]  # fmt: skip
        state = rows(ok(cli(broker, "describe", group, "--state")))[1]
        assert state[:2] == [group, "consumer"] and state[-2:] == ["Stable", "1"]
        members = rows(ok(cli(broker, "describe", group, "--members")))[1]
        assert members[1] == m["member_id"] and members[-2:] == ["2", f"{topic}(0,1)"]
        failed(cli(broker, "reset-offsets", "-g", group, "--all-topics", "--to-earliest", "--execute"),
               "the current state is Stable.")  # fmt: skip
        failed(cli(broker, "delete", group), "[NON_EMPTY_GROUP]")
    finally:
        c.close()
    wait_state(broker, group, "Empty")
    assert rows(ok(cli(broker, "reset-offsets", "-g", group, "--all-topics", "--to-earliest", "--execute")))[
        1:
    ] == [[group, topic, "0", "0"]]
    assert committed(broker, group) == {0: 0}
    assert ok(cli(broker, "delete", group)).startswith("Deletion of requested consumer groups")


def test_describe_all_groups_and_usage_errors(broker: EmbeddedBroker) -> None:
    topic = make_topic(broker, 1, {0: 1})
    groups = [new_name("all") for _ in range(2)]
    for g in groups:
        ok(cli(broker, "reset-offsets", "-g", g, "-t", topic, "--to-latest", "--execute"))
    docs = json.loads(ok(cli(broker, "describe", "--all-groups", "--format", "json")))
    names = [d["group"] for d in docs]
    assert set(groups) <= set(names) and names == sorted(names)
    assert rows(ok(cli(broker, "describe", "--all-groups", "--state")))[0][0] == "GROUP"

    # some groups found, some not: the found ones print, each missing one is an error line, exit 1
    result = cli(broker, "describe", groups[0], "nope-1", groups[1], "nope-2")
    assert result.exit_code == 1
    assert [r[0] for r in rows(result.stdout)[1:]] == groups
    assert [ln for ln in result.stderr.splitlines() if ln.startswith("error:")] == [
        "error: Consumer group 'nope-1' does not exist. [GROUP_ID_NOT_FOUND]",
        "error: Consumer group 'nope-2' does not exist. [GROUP_ID_NOT_FOUND]",
    ]
    usage_error(cli(broker, "describe"), "a group is required")
    usage_error(cli(broker, "describe", groups[0], "--all-groups"), "not both")
    usage_error(cli(broker, "describe", groups[0], "--members", "--state"), "exclusive")


def test_unreachable_broker() -> None:
    dead = f"127.0.0.1:{free_port()}"
    for args in (
        ("list",),
        ("describe", "g"),
        ("delete", "g"),
        ("reset-offsets", "-g", "g", "-t", "t", "--to-earliest"),
    ):
        failed(cli(dead, *args), f"no broker reachable at {dead}")


# ---------------------------------------------------------------------------- as a subprocess
ZURAU = [sys.executable, "-m", "zurau.cli.main"]


def zurau(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ZURAU, *args, "--bootstrap-server", bootstrap],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )


def test_list_and_describe_as_a_process(tmp_path: Path) -> None:
    bp = BrokerProcess(tmp_path / "data", **GROUP_SETTINGS)
    bp.start()
    c = None
    try:
        bs = bp.bootstrap_servers
        topic, group = "proc-groups", "proc-group"
        assert zurau(bs, "topics", "create", topic, "--partitions", "2").returncode == 0
        produce(bs, topic, {0: 5, 1: 2})
        c = member(bs, group, topic, **{"client.id": "proc-client"})
        commit(c, topic, {0: 4, 1: 2})

        p = zurau(bs, "groups", "list")
        assert p.returncode == 0, p.stderr
        assert rows(p.stdout) == [["GROUP", "TYPE", "STATE"], [group, "classic", "Stable"]]

        p = zurau(bs, "groups", "describe", group)
        assert p.returncode == 0, p.stderr
        table = rows(p.stdout)
        assert len(table[1][6]) > 40, "long member ids are neither wrapped nor cut at 80 columns"
        assert [r[:6] + r[8:] for r in table[1:]] == [
            [group, topic, "0", "4", "5", "1", "proc-client"],
            [group, topic, "1", "2", "2", "0", "proc-client"],
        ]
        doc = json.loads(zurau(bs, "groups", "describe", group, "--members", "--format", "json").stdout)[0]
        assert [m["assignment"] for m in doc["members"]] == [
            [{"topic": topic, "partition": p} for p in (0, 1)]
        ]

        p = zurau(bs, "groups", "describe", "nope")
        assert (p.returncode, p.stderr) == (
            1,
            "error: Consumer group 'nope' does not exist. [GROUP_ID_NOT_FOUND]\n",
        )
        dead = f"127.0.0.1:{free_port()}"
        p = zurau(dead, "groups", "list")
        assert p.returncode == 1 and p.stderr.startswith(f"error: no broker reachable at {dead}"), p.stderr
        assert len(p.stderr.splitlines()) == 1
    finally:
        if c is not None:
            c.close()
        bp.stop()


# ---------------------------------------------------------------------------- pure helpers
def test_classic_assignments_are_decoded_as_consumer_protocol_assignments() -> None:
    import struct

    from zurau.client.groups_admin import _decode_classic_member
    from zurau.client.types import TopicPartition

    def assignment(version: int, topics: dict[str, list[int]], user_data: bytes | None) -> bytes:
        out = struct.pack(">hi", version, len(topics))
        for t, ps in topics.items():
            out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps))
            out += b"".join(struct.pack(">i", p) for p in ps)
        return out + (
            struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
        )

    raw = {"member_id": "m", "client_id": "c", "client_host": "/h", "member_metadata": b""}
    m = _decode_classic_member(
        {**raw, "member_assignment": assignment(3, {"b": [2, 0], "a": [1]}, b"xyz")}, "consumer"
    )
    assert m.assignment == (TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("b", 2))
    assert m.assignment_error is None and m.instance_id is None
    assert _decode_classic_member({**raw, "member_assignment": b""}, "consumer").assignment == ()
    broken = _decode_classic_member({**raw, "member_assignment": b"\x00\x00\x00\x00\x00\x05"}, "consumer")
    assert broken.assignment == () and broken.assignment_error is not None
    # other protocol types (Kafka Connect ...) keep their bytes opaque
    opaque = _decode_classic_member({**raw, "member_assignment": b"\x00\x01junk"}, "connect")
    assert opaque.assignment == () and opaque.assignment_error is None


def test_datetime_and_topic_spec_parsing() -> None:
    import typer

    from zurau.cli.groups import parse_datetime_ms, parse_topic_spec

    assert parse_datetime_ms("2026-11-21T10:00:00.000Z") == 1_795_255_200_000
    assert parse_datetime_ms("2026-11-21T11:00:00.123+01:00") == 1_795_255_200_123
    local = datetime(2026, 11, 21, 10, 0, 0, 7000).astimezone()
    assert parse_datetime_ms("2026-11-21T10:00:00.007") == int(local.timestamp() * 1000 + 0.5)
    assert parse_topic_spec("orders") == ("orders", None)
    assert parse_topic_spec("orders:2,0,2") == ("orders", [0, 2])
    for bad in ("orders:", ":1", "orders:-1", "orders:a"):
        with pytest.raises(typer.BadParameter):
            parse_topic_spec(bad)
