"""``zurau topics ...`` in-process (typer's CliRunner) against the session's embedded broker."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner, Result

from tests.support.cli_results import failed, ok
from zurau.cli.main import app

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

runner = CliRunner()


def cli(broker: EmbeddedBroker, *args: str, input: str | bytes | None = None) -> Result:
    return runner.invoke(app, [*args, "--bootstrap-server", broker.bootstrap_servers], input=input)


def new_name() -> str:
    return f"cli-{uuid.uuid4().hex[:10]}"


def describe_json(broker: EmbeddedBroker, topic: str) -> dict[str, Any]:
    docs = json.loads(ok(cli(broker, "topics", "describe", topic, "--json")))
    assert [d["topic"] for d in docs] == [topic]
    return docs[0]


def test_create_list_describe_delete(zurau_broker: EmbeddedBroker) -> None:
    name = new_name()
    out = ok(
        cli(zurau_broker, "topics", "create", name, "--partitions", "3", "--config", "retention.ms=1234")
    )
    assert out == f"Created topic {name}.\n"
    assert name in ok(cli(zurau_broker, "topics", "list")).splitlines()

    doc = describe_json(zurau_broker, name)
    assert doc["partition_count"] == 3 and doc["replication_factor"] == 1
    assert doc["configs"] == {"retention.ms": "1234"}
    node = zurau_broker.broker.node_id
    for i, p in enumerate(doc["partitions"]):
        assert p == {
            "partition": i,
            "leader": node,
            "leader_epoch": p["leader_epoch"],
            "replicas": [node],
            "isr": [node],
            "elr": [],  # no eligible leader replicas (KIP-966) on one node
            "last_known_elr": [],
            "offline_replicas": [],
            "reassignment": None,  # no reassignment in progress
            "log_start_offset": 0,
            "log_end_offset": 0,
            "error": None,
        }

    text = ok(cli(zurau_broker, "topics", "describe", "--topic", name))
    lines = text.splitlines()
    assert lines[0].startswith(f"Topic: {name}\tTopicId: ")
    assert "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention.ms=1234" in lines[0]
    assert lines[1] == (
        f"\tTopic: {name}\tPartition: 0\tLeader: {node}\tReplicas: {node}\tIsr: {node}\tLogStartOffset: 0\tLogEndOffset: 0"
    )
    assert len(lines) == 4

    assert ok(cli(zurau_broker, "topics", "delete", name)) == f"Deleted topic {name}.\n"
    assert name not in ok(cli(zurau_broker, "topics", "list")).splitlines()


def test_describe_reports_log_start_and_end_offsets(zurau_broker: EmbeddedBroker) -> None:
    from zurau.client import AdminClient, ClientConfig, TopicPartition

    name = new_name()
    ok(cli(zurau_broker, "topics", "create", name, "--partitions", "2"))
    ok(cli(zurau_broker, "produce", name, "--partition", "1", input="".join(f"r{i}\n" for i in range(30))))

    async def delete_below(offset: int) -> None:
        async with AdminClient(ClientConfig.load(bootstrap_servers=zurau_broker.bootstrap_servers)) as admin:
            assert (await admin.delete_records({TopicPartition(name, 1): offset}))[
                TopicPartition(name, 1)
            ] == offset

    asyncio.run(delete_below(12))
    parts = describe_json(zurau_broker, name)["partitions"]
    assert [(p["log_start_offset"], p["log_end_offset"]) for p in parts] == [(0, 0), (12, 30)]
    assert "LogStartOffset: 12\tLogEndOffset: 30" in ok(cli(zurau_broker, "topics", "describe", name))


def test_describe_all_topics(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    names = [d["topic"] for d in json.loads(ok(cli(zurau_broker, "topics", "describe", "--json")))]
    assert zurau_topic in names and names == sorted(names)


def test_format_json_and_its_json_alias_print_the_same_document(zurau_broker: EmbeddedBroker) -> None:
    name = new_name()
    ok(cli(zurau_broker, "topics", "create", name, "--partitions", "2", "--config", "retention.ms=1234"))
    for command in (["topics", "describe", name], ["configs", "describe", "--topic", name]):
        by_format = ok(cli(zurau_broker, *command, "--format", "json"))
        assert ok(cli(zurau_broker, *command, "--json")) == by_format
        assert json.loads(by_format)
        assert ok(cli(zurau_broker, *command, "--format", "table")) == ok(cli(zurau_broker, *command)) != by_format


def test_create_errors(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    failed(
        cli(zurau_broker, "topics", "create", zurau_topic),
        f"Topic '{zurau_topic}' already exists",
        "[TOPIC_ALREADY_EXISTS]",
    )
    assert (
        ok(cli(zurau_broker, "topics", "create", zurau_topic, "--if-not-exists"))
        == f"Topic {zurau_topic} already exists.\n"
    )
    failed(
        cli(zurau_broker, "topics", "create", new_name(), "--config", "no.such.config=1"), "[INVALID_CONFIG]"
    )
    failed(
        cli(zurau_broker, "topics", "create", new_name(), "--config", "retention.ms=soon"),
        "retention.ms",
        "[INVALID_CONFIG]",
    )
    failed(cli(zurau_broker, "topics", "create", "bad name!"), "[INVALID_TOPIC_EXCEPTION]")
    failed(
        cli(zurau_broker, "topics", "create", new_name(), "--replication-factor", "3"),
        "[INVALID_REPLICATION_FACTOR]",
    )
    failed(
        cli(zurau_broker, "topics", "create", new_name(), "--config", "oops"), "--config expects key=value"
    )
    name = new_name()
    assert ok(cli(zurau_broker, "topics", "create", name, "--validate-only")) == f"Topic {name} is valid.\n"
    assert name not in ok(cli(zurau_broker, "topics", "list")).splitlines()


def test_unknown_topic_errors(zurau_broker: EmbeddedBroker) -> None:
    name = new_name()
    for args in (("describe", name), ("delete", name), ("alter", name, "--partitions", "4")):
        failed(
            cli(zurau_broker, "topics", *args),
            f"Topic '{name}' does not exist",
            "[UNKNOWN_TOPIC_OR_PARTITION]",
        )
    assert ok(cli(zurau_broker, "topics", "delete", name, "--if-exists")) == f"Topic {name} does not exist.\n"
    assert (
        ok(cli(zurau_broker, "topics", "alter", name, "--partitions", "4", "--if-exists"))
        == f"Topic {name} does not exist.\n"
    )


@pytest.mark.zurau_topic(partitions=2)
def test_alter_partitions_configs_and_replication_factor(
    zurau_broker: EmbeddedBroker, zurau_topic: str
) -> None:
    t = zurau_topic
    assert (
        ok(cli(zurau_broker, "topics", "alter", t, "--partitions", "5"))
        == f"Topic {t} now has 5 partitions.\n"
    )
    assert describe_json(zurau_broker, t)["partition_count"] == 5
    failed(cli(zurau_broker, "topics", "alter", t, "--partitions", "3"), "[INVALID_PARTITIONS]")

    ok(
        cli(
            zurau_broker,
            "topics",
            "alter",
            t,
            "--config",
            "retention.ms=5000",
            "--config",
            "cleanup.policy=[compact,delete]",
        )
    )
    assert describe_json(zurau_broker, t)["configs"] == {
        "retention.ms": "5000",
        "cleanup.policy": "compact,delete",
    }
    ok(cli(zurau_broker, "topics", "alter", t, "--delete-config", "retention.ms"))
    assert describe_json(zurau_broker, t)["configs"] == {"cleanup.policy": "compact,delete"}
    failed(
        cli(zurau_broker, "topics", "alter", t, "--config", "bad.name=1"),
        "Unknown topic config name: bad.name",
        "[INVALID_CONFIG]",
    )

    assert "already 1" in ok(cli(zurau_broker, "topics", "alter", t, "--replication-factor", "1"))
    failed(
        cli(zurau_broker, "topics", "alter", t, "--replication-factor", "2"),
        "replication factor",
        "from 1 to 2",
    )
    assert cli(zurau_broker, "topics", "alter", t).exit_code == 2  # usage error: nothing to alter


def test_list_excludes_internal_topics_on_request(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    listed = ok(cli(zurau_broker, "topics", "list", "--exclude-internal")).splitlines()
    assert zurau_topic in listed
    assert not any(n.startswith("__") for n in listed)


def test_unreachable_broker_fails_with_one_line(unreachable: str) -> None:
    for args in (
        ("topics", "list"),
        ("topics", "describe"),
        ("topics", "create", "x"),
        ("topics", "delete", "x"),
    ):
        result = runner.invoke(app, [*args, "-b", unreachable])
        line = failed(result, "no broker reachable", unreachable)
        assert "Traceback" not in result.output, line


@pytest.fixture
def unreachable() -> str:
    from tests.support.broker_process import free_port

    return f"127.0.0.1:{free_port()}"


def test_command_config_file(zurau_broker: EmbeddedBroker, zurau_topic: str, tmp_path: Any) -> None:
    props = tmp_path / "client.properties"
    props.write_text(f"bootstrap.servers={zurau_broker.bootstrap_servers}\nclient.id=cli-test\n")
    result = runner.invoke(app, ["topics", "list", "--command-config", str(props)])
    assert zurau_topic in ok(result).splitlines()
    props.write_text(f"bootstrap.servers={zurau_broker.bootstrap_servers}\nsecurity.protocol=SASL_SSL\n")
    failed(
        runner.invoke(app, ["topics", "list", "--command-config", str(props)]),
        "sasl.mechanism=GSSAPI is not supported",
    )
    failed(
        runner.invoke(app, ["topics", "list", "--command-config", str(tmp_path / "absent")]), "cannot read"
    )
