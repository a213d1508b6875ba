"""``zurau configs describe|alter`` in-process against the session's embedded broker."""

from __future__ import annotations

import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from typer.testing import CliRunner, Result

from tests.support.cli_results import failed, ok
from zurau.cli.main import app

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

runner = CliRunner()


def cli(broker: EmbeddedBroker, *args: str) -> Result:
    return runner.invoke(app, [*args, "--bootstrap-server", broker.bootstrap_servers])


def configs_json(broker: EmbeddedBroker, *args: str) -> dict[str, dict[str, Any]]:
    docs = json.loads(ok(cli(broker, "configs", "describe", *args, "--json")))
    assert len(docs) == 1
    return {c["name"]: c for c in docs[0]["configs"]}


def test_topic_configs_describe_and_alter(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    t = zurau_topic
    assert (
        ok(cli(zurau_broker, "configs", "describe", "--topic", t)) == f"Dynamic configs for topic {t} are:\n"
    )

    out = ok(cli(zurau_broker, "configs", "alter", "--entity-type", "topics", "--entity-name", t,
                 "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]"))  # fmt: skip
    assert out == f"Completed updating config for topic {t}.\n"
    assert ok(cli(zurau_broker, "configs", "describe", "--topic", t)).splitlines() == [
        f"Dynamic configs for topic {t} are:",
        "  cleanup.policy=compact,delete sensitive=false source=DYNAMIC_TOPIC_CONFIG",
        "  retention.ms=5000 sensitive=false source=DYNAMIC_TOPIC_CONFIG",
    ]

    every = configs_json(zurau_broker, "--entity-type", "topics", "--entity-name", t, "--all")
    assert (
        every["retention.ms"]["value"] == "5000" and every["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    )
    assert every["segment.bytes"]["source"] in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG")
    assert "max.message.bytes" in every

    ok(cli(zurau_broker, "configs", "alter", "--topic", t, "--delete-config", "retention.ms"))
    assert set(configs_json(zurau_broker, "--topic", t)) == {"cleanup.policy"}


def test_config_errors(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    t = zurau_topic
    failed(cli(zurau_broker, "configs", "alter", "--topic", t, "--add-config", "no.such.config=1"),
           "Unknown topic config name: no.such.config", "[INVALID_CONFIG]")  # fmt: skip
    failed(
        cli(zurau_broker, "configs", "alter", "--topic", t, "--add-config", "retention.ms=soon"),
        "[INVALID_CONFIG]",
    )
    failed(cli(zurau_broker, "configs", "alter", "--topic", t, "--add-config", "a=1", "--delete-config", "a"),
           "a is both added and deleted")  # fmt: skip
    unknown = f"cfg-{uuid.uuid4().hex[:8]}"
    failed(cli(zurau_broker, "configs", "describe", "--topic", unknown), "[UNKNOWN_TOPIC_OR_PARTITION]")
    failed(cli(zurau_broker, "configs", "alter", "--topic", unknown, "--add-config", "retention.ms=1"),
           "[UNKNOWN_TOPIC_OR_PARTITION]")  # fmt: skip
    assert cli(zurau_broker, "configs", "describe", "--entity-type", "clients").exit_code == 2
    assert cli(zurau_broker, "configs", "alter", "--topic", t).exit_code == 2


def test_broker_configs(zurau_broker: EmbeddedBroker) -> None:
    node = str(zurau_broker.broker.node_id)
    every = configs_json(zurau_broker, "--broker", node, "--all")
    assert every["log.segment.bytes"]["value"] == str(zurau_broker.config.get("log.segment.bytes"))
    assert every["num.partitions"]["source"] in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG")
    listed = json.loads(ok(cli(zurau_broker, "configs", "describe", "--entity-type", "brokers", "--json")))
    assert [d["entity_name"] for d in listed] == [node]
    assert ok(cli(zurau_broker, "configs", "describe", "--entity-type", "brokers", "--entity-default")) == (
        "Dynamic configs for the default broker are:\n"
    )
    # A read-only broker config is refused; the CLI reports it in one line.
    failed(
        cli(zurau_broker, "configs", "alter", "--broker", node, "--add-config", "num.partitions=3"),
        "Cannot update these configs dynamically: Set(num.partitions)",
        "[INVALID_REQUEST]",
    )
    failed(
        cli(zurau_broker, "configs", "describe", "--broker", "77"),
        "Unexpected broker id",
        "[INVALID_REQUEST]",
    )


def test_broker_logger_levels(zurau_broker: EmbeddedBroker) -> None:
    node = str(zurau_broker.broker.node_id)
    logger = logging.getLogger("zurau.client")
    before = logger.level
    try:
        ok(cli(zurau_broker, "configs", "alter", "--entity-type", "broker-loggers", "--entity-name", node,
               "--add-config", "zurau.client=WARN"))  # fmt: skip
        levels = configs_json(zurau_broker, "--entity-type", "broker-loggers", "--entity-name", node)
        assert levels["zurau.client"]["value"] == "WARN"
        assert "root" in levels
        failed(cli(zurau_broker, "configs", "alter", "--entity-type", "broker-loggers", "--entity-name", node,
                   "--add-config", "zurau.client=LOUD"), "[INVALID_CONFIG]")  # fmt: skip
    finally:
        logger.setLevel(before)


def test_group_configs_describe_and_alter(zurau_broker: EmbeddedBroker) -> None:
    g = f"cfg-group-{uuid.uuid4().hex[:8]}"
    entity = ("--entity-type", "groups", "--entity-name", g)
    assert ok(cli(zurau_broker, "configs", "describe", *entity)) == f"Dynamic configs for group {g} are:\n"
    out = ok(cli(zurau_broker, "configs", "alter", *entity,
                 "--add-config", "share.auto.offset.reset=earliest,share.record.lock.duration.ms=20000"))  # fmt: skip
    assert out == f"Completed updating config for group {g}.\n"
    assert ok(cli(zurau_broker, "configs", "describe", *entity)).splitlines() == [
        f"Dynamic configs for group {g} are:",
        "  share.auto.offset.reset=earliest sensitive=false source=DYNAMIC_GROUP_CONFIG",
        "  share.record.lock.duration.ms=20000 sensitive=false source=DYNAMIC_GROUP_CONFIG",
    ]
    every = configs_json(zurau_broker, *entity, "--all")
    assert every["share.isolation.level"] == {
        "name": "share.isolation.level", "value": "read_uncommitted", "source": "DEFAULT_CONFIG",
        "sensitive": False, "read_only": False,
    }  # fmt: skip
    ok(cli(zurau_broker, "configs", "alter", *entity, "--delete-config", "share.record.lock.duration.ms"))
    assert set(configs_json(zurau_broker, *entity)) == {"share.auto.offset.reset"}
    failed(cli(zurau_broker, "configs", "alter", *entity, "--add-config", "share.record.lock.duration.ms=5000"),
           "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms",
           "[INVALID_CONFIG]")  # fmt: skip
    failed(cli(zurau_broker, "configs", "alter", *entity, "--add-config", "retention.ms=1"),
           "Unknown group config name: retention.ms", "[INVALID_CONFIG]")  # fmt: skip
